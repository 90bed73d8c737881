// 16-byte packs and float conversions shared by this kernel's CUDA code.
// PyTorch builds with __CUDA_NO_HALF_OPERATORS__, so conversions are explicit.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace rope_cuda {

// One 16-byte access: 8 bf16/fp16 or 4 fp32 values.
template <typename T>
struct alignas(16) Pack16 {
  static constexpr int N = 16 / sizeof(T);
  T v[N];
};

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

inline bool is_aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace rope_cuda

namespace rope_cuda {

// N consecutive values of type T (N a multiple of T's pack width), read with
// 16-byte loads and widened to float.
template <int N, typename T>
__device__ __forceinline__ void load_float(const T* p, float (&dst)[N]) {
  constexpr int P = Pack16<T>::N;
  static_assert(N % P == 0, "N must be a multiple of the pack width");
#pragma unroll
  for (int i = 0; i < N / P; ++i) {
    const Pack16<T> pk = reinterpret_cast<const Pack16<T>*>(p)[i];
#pragma unroll
    for (int k = 0; k < P; ++k) dst[i * P + k] = to_float(pk.v[k]);
  }
}

template <int N, typename T>
__device__ __forceinline__ void store_float(T* p, const float (&src)[N]) {
  constexpr int P = Pack16<T>::N;
  static_assert(N % P == 0, "N must be a multiple of the pack width");
#pragma unroll
  for (int i = 0; i < N / P; ++i) {
    Pack16<T> pk;
#pragma unroll
    for (int k = 0; k < P; ++k) pk.v[k] = from_float<T>(src[i * P + k]);
    reinterpret_cast<Pack16<T>*>(p)[i] = pk;
  }
}

}  // namespace rope_cuda
