// Torch glue for the adaln kernels (adaln_kernels.cuh): argument checks,
// dtype dispatch, the launch shape from choose_config.
//
//   x:            [rows, D]
//   scale, shift: [M, D], float32 or x's dtype; row r of x uses modulation
//                 row r when M == rows, else (r / seq) % M (one per sample
//                 of `seq` tokens, or one for everything when M == 1)
//   norm:         LayerNorm without affine (rms=false) or RMSNorm (rms=true)
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/DeviceGuard.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>

#include <mutex>
#include <unordered_map>

#include "adaln_kernels.cuh"

namespace {

using adaln_cuda::is_aligned16;

// Blocks of adaln_rows<T, TC, RMS, vpt, false> of `threads` threads resident on the
// whole device at once; cached, because cudaOccupancy* is not free and the answer
// never changes for a device.
template <typename T, typename TC, bool RMS>
int64_t resident_blocks(int vpt, int threads) {
  static std::mutex mu;
  static std::unordered_map<int64_t, int64_t> cache;
  int dev = 0;
  C10_CUDA_CHECK(cudaGetDevice(&dev));
  const int64_t key = ((int64_t)dev << 32) | (vpt << 16) | threads;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const void* fn = vpt == 1 ? reinterpret_cast<const void*>(adaln_cuda::adaln_rows<T, TC, RMS, 1, false>)
                            : reinterpret_cast<const void*>(adaln_cuda::adaln_rows<T, TC, RMS, 2, false>);
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, threads, 0));
  const int64_t n = (int64_t)per_sm * at::cuda::getDeviceProperties(dev)->multiProcessorCount;
  cache[key] = n;
  return n;
}

template <typename T, typename TC, bool RMS>
void launch(T* out, const T* x, const TC* scale, const TC* shift, const adaln_cuda::Params& p,
            cudaStream_t stream) {
  constexpr int N = adaln_cuda::Pack16<T>::N;
  const bool aligned = p.D % N == 0 && is_aligned16(out) && is_aligned16(x) && is_aligned16(scale) &&
                       is_aligned16(shift);
  auto resident = [](int vpt, int threads) { return resident_blocks<T, TC, RMS>(vpt, threads); };
  auto c = adaln_cuda::choose_config(p.rows, p.D, (int)sizeof(T), aligned, resident);
  // Modulation rows loaded early (adaln_rows' EARLY) only for launches of at
  // most 256 threads per multiprocessor (8 warps): with fewer warps than that
  // nothing hides the second round trip, and the extra registers cost an
  // occupancy such a launch does not use. H200 (NOTES.md): 2x256x1152
  // (16 K threads) 7.84 -> 6.46 us early; 8x256x1152 (64 K, 16 warps per
  // multiprocessor) 8.59 late, 9.89 early.
  const int64_t sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  c.early = c.kind == 0 && c.grid * c.tx * c.ty <= sms * 256;
  C10_CUDA_CHECK((adaln_cuda::launch<T, TC, RMS>(out, x, scale, shift, p, c, stream)));
}

template <typename T, typename TC>
void dispatch_norm(T* out, const T* x, const TC* scale, const TC* shift, const adaln_cuda::Params& p, bool rms,
                   cudaStream_t stream) {
  if (rms) launch<T, TC, true>(out, x, scale, shift, p, stream);
  else launch<T, TC, false>(out, x, scale, shift, p, stream);
}

template <typename T, typename AtT>
void dispatch_mod(at::Tensor& out, const at::Tensor& x, const at::Tensor& scale, const at::Tensor& shift,
                  const adaln_cuda::Params& p, bool rms, cudaStream_t stream) {
  T* o = reinterpret_cast<T*>(out.data_ptr<AtT>());
  const T* xi = reinterpret_cast<const T*>(x.data_ptr<AtT>());
  if (scale.scalar_type() == at::ScalarType::Float) {
    dispatch_norm<T, float>(o, xi, scale.data_ptr<float>(), shift.data_ptr<float>(), p, rms, stream);
  } else {
    dispatch_norm<T, T>(o, xi, reinterpret_cast<const T*>(scale.data_ptr<AtT>()),
                        reinterpret_cast<const T*>(shift.data_ptr<AtT>()), p, rms, stream);
  }
}

}  // namespace

void adaln(at::Tensor& out, at::Tensor const& x, at::Tensor const& scale, at::Tensor const& shift,
           double eps, bool rms, int64_t seq) {
  TORCH_CHECK(x.is_cuda() && out.is_cuda() && scale.is_cuda() && shift.is_cuda(),
              "adaln: tensors must be on a CUDA device");
  TORCH_CHECK(x.device() == out.device() && x.device() == scale.device() && x.device() == shift.device(),
              "adaln: tensors must be on the same device");
  TORCH_CHECK(x.is_contiguous() && out.is_contiguous() && scale.is_contiguous() && shift.is_contiguous(),
              "adaln: tensors must be contiguous");
  TORCH_CHECK(out.scalar_type() == x.scalar_type() && out.sizes() == x.sizes(),
              "adaln: out must match x in shape and dtype");
  TORCH_CHECK(scale.scalar_type() == shift.scalar_type() && scale.sizes() == shift.sizes(),
              "adaln: scale and shift must match in shape and dtype");
  TORCH_CHECK(scale.scalar_type() == at::ScalarType::Float || scale.scalar_type() == x.scalar_type(),
              "adaln: scale/shift must be float32 or x's dtype, got ", scale.scalar_type());
  TORCH_CHECK(x.dim() >= 1 && scale.dim() >= 1 && scale.size(-1) == x.size(-1),
              "adaln: scale/shift must have x's last dimension");
  TORCH_CHECK(seq >= 1, "adaln: seq must be positive");
  if (x.numel() == 0) return;
  const int64_t D = x.size(-1);
  const int64_t rows = x.numel() / D;
  const int64_t M = scale.numel() / D;
  TORCH_CHECK(M >= 1, "adaln: empty scale/shift");
  TORCH_CHECK(rows <= 0x7fffffff, "adaln: too many rows");
  const c10::cuda::OptionalCUDAGuard guard(device_of(x));
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const adaln_cuda::Params p{rows, D, M, seq, static_cast<float>(eps)};
  switch (x.scalar_type()) {
    case at::ScalarType::Float:
      dispatch_norm<float, float>(out.data_ptr<float>(), x.data_ptr<float>(), scale.data_ptr<float>(),
                                  shift.data_ptr<float>(), p, rms, stream);
      break;
    case at::ScalarType::Half:
      dispatch_mod<__half, at::Half>(out, x, scale, shift, p, rms, stream);
      break;
    case at::ScalarType::BFloat16:
      dispatch_mod<__nv_bfloat16, at::BFloat16>(out, x, scale, shift, p, rms, stream);
      break;
    default:
      TORCH_CHECK(false, "adaln: unsupported dtype ", x.scalar_type(), " (float32, float16, bfloat16)");
  }
}
