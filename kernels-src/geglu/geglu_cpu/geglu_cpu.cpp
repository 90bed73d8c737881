// GEGLU on CPU: rows in parallel (at::parallel_for), each row in float
// vectors (at::vec), a scalar loop for the row's tail.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/all.h>

#include <algorithm>
#include <cmath>

#include "vec_io.h"

namespace {

using geglu_cpu::fVec;

template <bool TANH>
inline fVec gelu(const fVec& x) {
  const fVec half(0.5f), one(1.0f);
  if constexpr (TANH) {
    const fVec beta(0.7978845608028654f), kappa(0.044715f);
    const fVec inner = beta * (x + kappa * x * x * x);
    return half * x * (one + inner.tanh());
  } else {
    return half * x * (one + (x * fVec(0.7071067811865476f)).erf());
  }
}

template <bool TANH>
inline float gelu(float x) {
  if constexpr (TANH) {
    return 0.5f * x * (1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  } else {
    return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
  }
}

template <typename T, bool TANH>
void geglu_rows(T* out, const T* in, int64_t rows, int64_t d, bool gate_first) {
  constexpr int64_t step = geglu_cpu::kStep<T>;
  // About 32k elements per task keeps threads busy without tiny tasks.
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(d, 1));
  at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const T* value = in + row * 2 * d + (gate_first ? d : 0);
      const T* gate = in + row * 2 * d + (gate_first ? 0 : d);
      T* dst = out + row * d;
      int64_t col = 0;
      for (; col + step <= d; col += step) {
        fVec v_lo, v_hi, g_lo, g_hi;
        geglu_cpu::load(value + col, v_lo, v_hi);
        geglu_cpu::load(gate + col, g_lo, g_hi);
        geglu_cpu::store(dst + col, gelu<TANH>(g_lo) * v_lo, gelu<TANH>(g_hi) * v_hi);
      }
      for (; col < d; ++col) {
        dst[col] = static_cast<T>(gelu<TANH>(static_cast<float>(gate[col])) * static_cast<float>(value[col]));
      }
    }
  });
}

}  // namespace

void geglu(torch::Tensor& out, torch::Tensor const& input, bool approximate_tanh, bool gate_first) {
  TORCH_CHECK(input.device().is_cpu() && out.device().is_cpu(), "geglu: tensors must be on the CPU");
  TORCH_CHECK(input.is_contiguous() && out.is_contiguous(), "geglu: tensors must be contiguous");
  TORCH_CHECK(input.scalar_type() == out.scalar_type(), "geglu: input and out must have the same dtype");
  TORCH_CHECK(input.dim() >= 1 && input.size(-1) % 2 == 0, "geglu: the last dimension must be even, got ",
              input.sizes());
  const int64_t d = input.size(-1) / 2;
  TORCH_CHECK(out.numel() == input.numel() / 2 && out.size(-1) == d,
              "geglu: out must have the input's shape with the last dimension halved, got ", out.sizes());
  if (input.numel() == 0) return;
  const int64_t rows = input.numel() / input.size(-1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::BFloat16, at::ScalarType::Half, input.scalar_type(), "geglu", [&] {
    if constexpr (std::is_same_v<scalar_t, double>) {
      TORCH_CHECK(false, "geglu: float64 is not supported (float32, float16, bfloat16)");
    } else if (approximate_tanh) {
      geglu_rows<scalar_t, true>(out.data_ptr<scalar_t>(), input.data_ptr<scalar_t>(), rows, d, gate_first);
    } else {
      geglu_rows<scalar_t, false>(out.data_ptr<scalar_t>(), input.data_ptr<scalar_t>(), rows, d, gate_first);
    }
  });
}
