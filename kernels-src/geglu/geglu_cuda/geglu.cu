// GEGLU on CUDA: out[..., i] = gelu(gate[..., i]) * value[..., i], where the
// input's last dimension holds [value | gate] (diffusers' GEGLU, the default)
// or [gate | value] (vLLM's gelu_and_mul, gate_first=true).
//
// Memory-bound: each thread moves 16 bytes per load (8 bf16/fp16 or 4 fp32)
// from each half and stores 16 bytes. Rows whose length is not a multiple of
// the pack width, or tensors not 16-byte aligned, take the scalar path.
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

using geglu_cuda::Pack16;
using geglu_cuda::from_float;
using geglu_cuda::to_float;

template <bool TANH>
__device__ __forceinline__ float gelu(float x) {
  if constexpr (TANH) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    const float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
  } else {
    return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
  }
}

template <typename T, bool TANH, bool GATE_FIRST>
__global__ void geglu_vec_kernel(T* __restrict__ out, const T* __restrict__ in,
                                 int64_t rows, int64_t d) {
  constexpr int N = Pack16<T>::N;
  const int64_t d_vec = d / N;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= d_vec) return;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const T* row_in = in + row * 2 * d;
    const T* value_ptr = row_in + (GATE_FIRST ? d : 0);
    const T* gate_ptr = row_in + (GATE_FIRST ? 0 : d);
    // Both loads are issued before either is used.
    const Pack16<T> value = reinterpret_cast<const Pack16<T>*>(value_ptr)[col];
    const Pack16<T> gate = reinterpret_cast<const Pack16<T>*>(gate_ptr)[col];
    Pack16<T> result;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      result.v[k] = from_float<T>(gelu<TANH>(to_float(gate.v[k])) * to_float(value.v[k]));
    }
    reinterpret_cast<Pack16<T>*>(out + row * d)[col] = result;
  }
}

template <typename T, bool TANH, bool GATE_FIRST>
__global__ void geglu_scalar_kernel(T* __restrict__ out, const T* __restrict__ in,
                                    int64_t rows, int64_t d) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= d) return;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const T* row_in = in + row * 2 * d;
    const float value = to_float(row_in[(GATE_FIRST ? d : 0) + col]);
    const float gate = to_float(row_in[(GATE_FIRST ? 0 : d) + col]);
    out[row * d + col] = from_float<T>(gelu<TANH>(gate) * value);
  }
}

template <typename T, bool TANH, bool GATE_FIRST>
void launch(T* out, const T* in, int64_t rows, int64_t d, cudaStream_t stream) {
  constexpr int kThreads = 256;
  constexpr int N = Pack16<T>::N;
  const bool vec = d % N == 0 && geglu_cuda::is_aligned16(out) && geglu_cuda::is_aligned16(in);
  const int64_t cols = vec ? d / N : d;
  const dim3 grid(static_cast<unsigned>((cols + kThreads - 1) / kThreads),
                  static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
  if (vec) {
    geglu_vec_kernel<T, TANH, GATE_FIRST><<<grid, kThreads, 0, stream>>>(out, in, rows, d);
  } else {
    geglu_scalar_kernel<T, TANH, GATE_FIRST><<<grid, kThreads, 0, stream>>>(out, in, rows, d);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
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
