// Rotary position embedding on CPU: rows in parallel (at::parallel_for), each
// head in float vectors (at::vec), a scalar loop for what is left. Same
// contract as the CUDA kernel (see rope_cuda/rope.cu); `out` may be `x`.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/all.h>

#include <algorithm>

#include "vec_io.h"

namespace {

using rope_cpu::fVec;

template <typename T, typename TC>
void rope_head_interleaved(T* o, const T* x, const TC* c, const TC* s, int64_t D) {
  // Only x's step matters for the loop: tables are widened to float the same way.
  constexpr int64_t step = rope_cpu::kStep<T>;
  static_assert(rope_cpu::kStep<TC> == step, "one step for x and the tables");
  int64_t j = 0;
  for (; j + step <= D; j += step) {
    fVec x0, x1, c0, c1, s0, s1;
    rope_cpu::load(x + j, x0, x1);
    rope_cpu::load(c + j, c0, c1);
    rope_cpu::load(s + j, s0, s1);
    // Split into even (first of a pair) and odd (second) channels.
    auto [xe, xo] = at::vec::deinterleave2(x0, x1);
    auto [ce, co] = at::vec::deinterleave2(c0, c1);
    auto [se, so] = at::vec::deinterleave2(s0, s1);
    const fVec oe = xe * ce - xo * se;
    const fVec oo = xo * co + xe * so;
    auto [r0, r1] = at::vec::interleave2(oe, oo);
    rope_cpu::store(o + j, r0, r1);
  }
  for (; j < D; j += 2) {
    const float a = static_cast<float>(x[j]), b = static_cast<float>(x[j + 1]);
    o[j] = static_cast<T>(a * static_cast<float>(c[j]) - b * static_cast<float>(s[j]));
    o[j + 1] = static_cast<T>(b * static_cast<float>(c[j + 1]) + a * static_cast<float>(s[j + 1]));
  }
}

template <typename T, typename TC>
void rope_head_half(T* o, const T* x, const TC* c, const TC* s, int64_t D) {
  constexpr int64_t step = rope_cpu::kStep<T>;
  const int64_t half = D / 2;
  int64_t j = 0;
  for (; j + step <= half; j += step) {
    fVec a0, a1, b0, b1, ca0, ca1, cb0, cb1, sa0, sa1, sb0, sb1;
    rope_cpu::load(x + j, a0, a1);
    rope_cpu::load(x + j + half, b0, b1);
    rope_cpu::load(c + j, ca0, ca1);
    rope_cpu::load(c + j + half, cb0, cb1);
    rope_cpu::load(s + j, sa0, sa1);
    rope_cpu::load(s + j + half, sb0, sb1);
    rope_cpu::store(o + j, a0 * ca0 - b0 * sa0, a1 * ca1 - b1 * sa1);
    rope_cpu::store(o + j + half, b0 * cb0 + a0 * sb0, b1 * cb1 + a1 * sb1);
  }
  for (; j < half; ++j) {
    const float a = static_cast<float>(x[j]), b = static_cast<float>(x[j + half]);
    o[j] = static_cast<T>(a * static_cast<float>(c[j]) - b * static_cast<float>(s[j]));
    o[j + half] = static_cast<T>(b * static_cast<float>(c[j + half]) + a * static_cast<float>(s[j + half]));
  }
}

template <typename T, typename TC>
void rope_rows(T* out, const T* x, const TC* cos, const TC* sin, int64_t rows, int64_t C, int64_t D, int64_t R,
               int64_t inner, int64_t mid, bool interleaved) {
  const int64_t grain = std::max<int64_t>(1, 16384 / C);
  at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t trow = ((t / (inner * mid)) * inner + t % inner) % R;
      const TC* c = cos + trow * D;
      const TC* s = sin + trow * D;
      for (int64_t h = 0; h < C; h += D) {
        if (interleaved) {
          rope_head_interleaved<T, TC>(out + t * C + h, x + t * C + h, c, s, D);
        } else {
          rope_head_half<T, TC>(out + t * C + h, x + t * C + h, c, s, D);
        }
      }
    }
  });
}

}  // namespace

void rope(torch::Tensor& out, torch::Tensor const& x, torch::Tensor const& cos, torch::Tensor const& sin,
          bool interleaved, int64_t inner, int64_t mid) {
  TORCH_CHECK(x.device().is_cpu() && out.device().is_cpu() && cos.device().is_cpu() && sin.device().is_cpu(),
              "rope: tensors must be on the CPU");
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
  const int64_t rows = x.numel() / C;
  const int64_t R = cos.numel() / D;
  TORCH_CHECK(R >= 1, "rope: empty cos/sin table");
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::BFloat16, at::ScalarType::Half, x.scalar_type(), "rope", [&] {
    if constexpr (std::is_same_v<scalar_t, double>) {
      TORCH_CHECK(false, "rope: float64 is not supported (float32, float16, bfloat16)");
    } else if (cos.scalar_type() == at::ScalarType::Float) {
      rope_rows<scalar_t, float>(out.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), cos.data_ptr<float>(),
                                 sin.data_ptr<float>(), rows, C, D, R, inner, mid, interleaved);
    } else {
      rope_rows<scalar_t, scalar_t>(out.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), cos.data_ptr<scalar_t>(),
                                    sin.data_ptr<scalar_t>(), rows, C, D, R, inner, mid, interleaved);
    }
  });
}
