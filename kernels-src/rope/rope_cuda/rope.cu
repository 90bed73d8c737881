// Rotary position embedding on CUDA, applied with precomputed full-width
// cos/sin tables (the diffusers/LTX-Video and transformers convention: one
// cos and one sin value per channel, pairs sharing an angle repeat it).
//
//   x:   [T, C] rows (any leading dims flattened), C = G * D (G heads of D,
//        or G = 1 when the table spans all channels, as LTX-Video's does)
//   cos, sin: [R, D], float32 or x's dtype
//   row t of x uses table row ((t / (inner * mid)) * inner + t % inner) % R,
//   which covers tables shared over a batch ([S, D]), per sample ([B, S, D]),
//   and broadcast over heads in between ([B, 1, S, D] against [B, H, S, D]).
//
// interleaved (LTX-Video, GPT-J): channel pairs (2i, 2i+1) rotate together.
// otherwise (rotate_half, GPT-NeoX/Llama): channels j and j + D/2 do.
// `out` may be `x` (in place): each thread reads both members of a pair
// before it writes either.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/DeviceGuard.h>
#include <ATen/core/Tensor.h>

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "rope_kernels.cuh"

namespace {

struct Shape {
  int64_t rows, C, D, R, inner, mid;
};

int multiprocessors() {
  int sms = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, c10::cuda::current_device()));
  return sms;
}

template <typename T, typename TC>
void launch(T* out, const T* x, const TC* cos, const TC* sin, const Shape& s, bool interleaved,
            cudaStream_t stream) {
  C10_CUDA_CHECK((rope_cuda::launch<T, TC>(out, x, cos, sin, s.rows, s.C, s.D, s.R, s.inner, s.mid, interleaved,
                                           multiprocessors(), stream)));
}

template <typename T, typename AtT>
void dispatch_table(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                    const Shape& s, bool interleaved, cudaStream_t stream) {
  T* o = reinterpret_cast<T*>(out.data_ptr<AtT>());
  const T* xi = reinterpret_cast<const T*>(x.data_ptr<AtT>());
  if (cos.scalar_type() == at::ScalarType::Float) {
    launch<T, float>(o, xi, cos.data_ptr<float>(), sin.data_ptr<float>(), s, interleaved, stream);
  } else {
    launch<T, T>(o, xi, reinterpret_cast<const T*>(cos.data_ptr<AtT>()),
                 reinterpret_cast<const T*>(sin.data_ptr<AtT>()), s, interleaved, stream);
  }
}

}  // namespace

void rope(at::Tensor& out, at::Tensor const& x, at::Tensor const& cos, at::Tensor const& sin,
          bool interleaved, int64_t inner, int64_t mid) {
  TORCH_CHECK(x.is_cuda() && out.is_cuda() && cos.is_cuda() && sin.is_cuda(),
              "rope: tensors must be on a CUDA device");
  TORCH_CHECK(x.device() == out.device() && x.device() == cos.device() && x.device() == sin.device(),
              "rope: tensors must be on the same device");
  TORCH_CHECK(x.is_contiguous() && out.is_contiguous() && cos.is_contiguous() && sin.is_contiguous(),
              "rope: tensors must be contiguous");
  TORCH_CHECK(out.scalar_type() == x.scalar_type() && out.sizes() == x.sizes(),
              "rope: out must match x in shape and dtype");
  TORCH_CHECK(cos.scalar_type() == sin.scalar_type() && cos.sizes() == sin.sizes(),
              "rope: cos and sin must match in shape and dtype");
  TORCH_CHECK(cos.scalar_type() == at::ScalarType::Float || cos.scalar_type() == x.scalar_type(),
              "rope: cos/sin must be float32 or x's dtype, got ", cos.scalar_type());
  TORCH_CHECK(x.dim() >= 1 && cos.dim() >= 1, "rope: x and cos need a channel dimension");
  const int64_t C = x.size(-1);
  const int64_t D = cos.size(-1);
  TORCH_CHECK(D > 0 && D % 2 == 0 && C % D == 0, "rope: the table width (", D,
              ") must be even and divide x's last dimension (", C, ")");
  TORCH_CHECK(inner >= 1 && mid >= 1, "rope: inner and mid must be positive");
  if (x.numel() == 0) return;
  const Shape s{x.numel() / C, C, D, cos.numel() / D, inner, mid};
  TORCH_CHECK(s.R >= 1, "rope: empty cos/sin table");
  const c10::cuda::OptionalCUDAGuard guard(device_of(x));
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  switch (x.scalar_type()) {
    case at::ScalarType::Float:
      launch<float, float>(out.data_ptr<float>(), x.data_ptr<float>(), cos.data_ptr<float>(),
                           sin.data_ptr<float>(), s, interleaved, stream);
      break;
    case at::ScalarType::Half:
      dispatch_table<__half, at::Half>(out, x, cos, sin, s, interleaved, stream);
      break;
    case at::ScalarType::BFloat16:
      dispatch_table<__nv_bfloat16, at::BFloat16>(out, x, cos, sin, s, interleaved, stream);
      break;
    default:
      TORCH_CHECK(false, "rope: unsupported dtype ", x.scalar_type(), " (float32, float16, bfloat16)");
  }
}
