// Adaptive layer norm on CUDA: out = norm(x) * (1 + scale) + shift, with the
// modulation per sample (DiT, PixArt, LTX-Video), fused into one kernel.
//
//   x:            [rows, D]
//   scale, shift: [M, D], float32 or x's dtype; row r of x uses modulation
//                 row r when M == rows, else (r / seq) % M (one per sample
//                 of `seq` tokens, or one for everything when M == 1)
//   norm:         LayerNorm without affine (rms=false) or RMSNorm (rms=true)
//
// One block per row. Each thread keeps its part of the row in registers
// (K 16-byte packs), so x is read from memory once; rows too long for that,
// or unaligned, take a scalar path that reads x three times.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/DeviceGuard.h>
#include <ATen/core/Tensor.h>

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_pack.cuh"

namespace {

using adaln_cuda::Pack16;
using adaln_cuda::from_float;
using adaln_cuda::is_aligned16;
using adaln_cuda::load_float;
using adaln_cuda::store_float;
using adaln_cuda::to_float;

constexpr int kMaxThreads = 256;

// Sum over the block; every thread gets the result. `smem` holds 32 floats.
__device__ __forceinline__ float block_sum(float v, float* smem) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // smem may still be read from the previous reduction
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? smem[lane] : 0.0f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ int64_t mod_row(int64_t row, int64_t rows, int64_t M, int64_t seq) {
  return M == rows ? row : (row / seq) % M;
}

template <typename T, typename TC, bool RMS, int K>
__global__ void __launch_bounds__(kMaxThreads) adaln_vec_kernel(T* __restrict__ out, const T* __restrict__ x,
                                                                const TC* __restrict__ scale,
                                                                const TC* __restrict__ shift, int64_t rows,
                                                                int64_t D, int64_t M, int64_t seq, float eps) {
  constexpr int N = Pack16<T>::N;
  __shared__ float smem[32];
  const int64_t packs = D / N;
  const int64_t row = blockIdx.x;
  const T* xr = x + row * D;
  float v[K][N];
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t p = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
    if (p < packs) {
      load_float<N>(xr + p * N, v[k]);
#pragma unroll
      for (int i = 0; i < N; ++i) sum += v[k][i];
    }
  }
  const float mean = RMS ? 0.0f : block_sum(sum, smem) / static_cast<float>(D);
  float sq = 0.0f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t p = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
    if (p < packs) {
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const float d = v[k][i] - mean;
        sq += d * d;
      }
    }
  }
  const float rstd = rsqrtf(block_sum(sq, smem) / static_cast<float>(D) + eps);
  const int64_t m = mod_row(row, rows, M, seq);
  const TC* sc = scale + m * D;
  const TC* sh = shift + m * D;
  T* orow = out + row * D;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t p = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
    if (p < packs) {
      float s[N], b[N], o[N];
      load_float<N>(sc + p * N, s);
      load_float<N>(sh + p * N, b);
#pragma unroll
      for (int i = 0; i < N; ++i) o[i] = (v[k][i] - mean) * rstd * (1.0f + s[i]) + b[i];
      store_float<N>(orow + p * N, o);
    }
  }
}

template <typename T, typename TC, bool RMS>
__global__ void __launch_bounds__(kMaxThreads) adaln_scalar_kernel(T* __restrict__ out, const T* __restrict__ x,
                                                                   const TC* __restrict__ scale,
                                                                   const TC* __restrict__ shift, int64_t rows,
                                                                   int64_t D, int64_t M, int64_t seq, float eps) {
  __shared__ float smem[32];
  const int64_t row = blockIdx.x;
  const T* xr = x + row * D;
  float sum = 0.0f;
  if (!RMS) {
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) sum += to_float(xr[i]);
  }
  const float mean = RMS ? 0.0f : block_sum(sum, smem) / static_cast<float>(D);
  float sq = 0.0f;
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
    const float d = to_float(xr[i]) - mean;
    sq += d * d;
  }
  const float rstd = rsqrtf(block_sum(sq, smem) / static_cast<float>(D) + eps);
  const int64_t m = mod_row(row, rows, M, seq);
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
    const float y = (to_float(xr[i]) - mean) * rstd;
    out[row * D + i] = from_float<T>(y * (1.0f + to_float(scale[m * D + i])) + to_float(shift[m * D + i]));
  }
}

template <typename T, typename TC, bool RMS>
void launch(T* out, const T* x, const TC* scale, const TC* shift, int64_t rows, int64_t D, int64_t M, int64_t seq,
            float eps, cudaStream_t stream) {
  constexpr int N = Pack16<T>::N;
  const bool aligned = D % N == 0 && is_aligned16(out) && is_aligned16(x) && is_aligned16(scale) &&
                       is_aligned16(shift);
  const int64_t packs = D / N;
  const int threads = static_cast<int>(std::min<int64_t>(kMaxThreads, std::max<int64_t>(32, (packs + 31) / 32 * 32)));
  const int64_t k_needed = (packs + threads - 1) / threads;
  const dim3 grid(static_cast<unsigned>(rows));
#define ADALN_VEC(K) adaln_vec_kernel<T, TC, RMS, K><<<grid, threads, 0, stream>>>(out, x, scale, shift, rows, D, M, seq, eps)
  if (aligned && k_needed <= 1) ADALN_VEC(1);
  else if (aligned && k_needed <= 2) ADALN_VEC(2);
  else if (aligned && k_needed <= 4) ADALN_VEC(4);
  else if (aligned && k_needed <= 8) ADALN_VEC(8);
  else adaln_scalar_kernel<T, TC, RMS><<<grid, kMaxThreads, 0, stream>>>(out, x, scale, shift, rows, D, M, seq, eps);
#undef ADALN_VEC
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, typename TC>
void dispatch_norm(T* out, const T* x, const TC* scale, const TC* shift, int64_t rows, int64_t D, int64_t M,
                   int64_t seq, float eps, bool rms, cudaStream_t stream) {
  if (rms) launch<T, TC, true>(out, x, scale, shift, rows, D, M, seq, eps, stream);
  else launch<T, TC, false>(out, x, scale, shift, rows, D, M, seq, eps, stream);
}

template <typename T, typename AtT>
void dispatch_mod(at::Tensor& out, const at::Tensor& x, const at::Tensor& scale, const at::Tensor& shift,
                  int64_t rows, int64_t D, int64_t M, int64_t seq, float eps, bool rms, cudaStream_t stream) {
  T* o = reinterpret_cast<T*>(out.data_ptr<AtT>());
  const T* xi = reinterpret_cast<const T*>(x.data_ptr<AtT>());
  if (scale.scalar_type() == at::ScalarType::Float) {
    dispatch_norm<T, float>(o, xi, scale.data_ptr<float>(), shift.data_ptr<float>(), rows, D, M, seq, eps, rms,
                            stream);
  } else {
    dispatch_norm<T, T>(o, xi, reinterpret_cast<const T*>(scale.data_ptr<AtT>()),
                        reinterpret_cast<const T*>(shift.data_ptr<AtT>()), rows, D, M, seq, eps, rms, stream);
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
  const float e = static_cast<float>(eps);
  switch (x.scalar_type()) {
    case at::ScalarType::Float:
      dispatch_norm<float, float>(out.data_ptr<float>(), x.data_ptr<float>(), scale.data_ptr<float>(),
                                  shift.data_ptr<float>(), rows, D, M, seq, e, rms, stream);
      break;
    case at::ScalarType::Half:
      dispatch_mod<__half, at::Half>(out, x, scale, shift, rows, D, M, seq, e, rms, stream);
      break;
    case at::ScalarType::BFloat16:
      dispatch_mod<__nv_bfloat16, at::BFloat16>(out, x, scale, shift, rows, D, M, seq, e, rms, stream);
      break;
    default:
      TORCH_CHECK(false, "adaln: unsupported dtype ", x.scalar_type(), " (float32, float16, bfloat16)");
  }
}
