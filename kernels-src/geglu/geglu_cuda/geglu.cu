// GEGLU on CUDA: out[..., i] = gelu(gate[..., i]) * value[..., i], where the
// input's last dimension holds [value | gate] (diffusers' GEGLU, the default)
// or [gate | value] (vLLM's gelu_and_mul, gate_first=true).
//
// The kernels and their launch shape are in geglu_kernels.cuh; rows whose
// length is not a multiple of the 16-byte pack, or tensors not 16-byte
// aligned, take the scalar path.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/DeviceGuard.h>
#include <ATen/core/Tensor.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "geglu_kernels.cuh"

namespace {

int multiprocessors() {
  int sms = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, c10::cuda::current_device()));
  return sms;
}

template <typename T, bool TANH, bool GATE_FIRST>
void launch(T* out, const T* in, int64_t rows, int64_t d, cudaStream_t stream) {
  constexpr int N = geglu_cuda::Pack16<T>::N;
  const bool vec = d % N == 0 && geglu_cuda::is_aligned16(out) && geglu_cuda::is_aligned16(in);
  const auto c = geglu_cuda::choose_config(rows, d / N, multiprocessors());
  C10_CUDA_CHECK((geglu_cuda::launch<T, TANH, GATE_FIRST>(out, in, rows, d, c, vec, stream)));
}

template <typename T>
void dispatch(T* out, const T* in, int64_t rows, int64_t d, bool tanh, bool gate_first,
              cudaStream_t stream) {
  if (tanh) {
    gate_first ? launch<T, true, true>(out, in, rows, d, stream)
               : launch<T, true, false>(out, in, rows, d, stream);
  } else {
    gate_first ? launch<T, false, true>(out, in, rows, d, stream)
               : launch<T, false, false>(out, in, rows, d, stream);
  }
}

}  // namespace

void geglu(at::Tensor& out, at::Tensor const& input, bool approximate_tanh, bool gate_first) {
  TORCH_CHECK(input.is_cuda() && out.is_cuda(), "geglu: tensors must be on a CUDA device");
  TORCH_CHECK(input.device() == out.device(), "geglu: input and out must be on the same device");
  TORCH_CHECK(input.is_contiguous() && out.is_contiguous(), "geglu: tensors must be contiguous");
  TORCH_CHECK(input.scalar_type() == out.scalar_type(), "geglu: input and out must have the same dtype");
  TORCH_CHECK(input.dim() >= 1 && input.size(-1) % 2 == 0, "geglu: the last dimension must be even, got ",
              input.sizes());
  const int64_t d = input.size(-1) / 2;
  TORCH_CHECK(out.numel() == input.numel() / 2 && out.size(-1) == d,
              "geglu: out must have the input's shape with the last dimension halved, got ", out.sizes());
  if (input.numel() == 0) return;
  const int64_t rows = input.numel() / input.size(-1);
  const c10::cuda::OptionalCUDAGuard guard(device_of(input));
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  switch (input.scalar_type()) {
    case at::ScalarType::Float:
      dispatch(out.data_ptr<float>(), input.data_ptr<float>(), rows, d, approximate_tanh, gate_first, stream);
      break;
    case at::ScalarType::Half:
      dispatch(reinterpret_cast<__half*>(out.data_ptr<at::Half>()),
               reinterpret_cast<const __half*>(input.data_ptr<at::Half>()), rows, d, approximate_tanh,
               gate_first, stream);
      break;
    case at::ScalarType::BFloat16:
      dispatch(reinterpret_cast<__nv_bfloat16*>(out.data_ptr<at::BFloat16>()),
               reinterpret_cast<const __nv_bfloat16*>(input.data_ptr<at::BFloat16>()), rows, d,
               approximate_tanh, gate_first, stream);
      break;
    default:
      TORCH_CHECK(false, "geglu: unsupported dtype ", input.scalar_type(), " (float32, float16, bfloat16)");
  }
}
