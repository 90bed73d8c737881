// Adaptive layer norm on CPU: rows in parallel (at::parallel_for), each row
// in float vectors (at::vec) over three passes (mean, variance, write), a
// scalar loop for the row's tail. Same contract as adaln_cuda/adaln.cu.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/all.h>

#include <algorithm>
#include <cmath>

#include "vec_io.h"

namespace {

using adaln_cpu::fVec;

template <typename T, typename TC>
void adaln_rows(T* out, const T* x, const TC* scale, const TC* shift, int64_t rows, int64_t D, int64_t M,
                int64_t seq, float eps, bool rms) {
  constexpr int64_t step = adaln_cpu::kStep<T>;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(D, 1));
  at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = x + r * D;
      float mean = 0.0f;
      if (!rms) {
        fVec acc(0.0f);
        int64_t i = 0;
        for (; i + step <= D; i += step) {
          fVec a, b;
          adaln_cpu::load(xr + i, a, b);
          acc = acc + a + b;
        }
        float sum = at::vec::vec_reduce_all<float>([](fVec& p, fVec& q) { return p + q; }, acc);
        for (; i < D; ++i) sum += static_cast<float>(xr[i]);
        mean = sum / static_cast<float>(D);
      }
      const fVec vmean(mean);
      fVec acc(0.0f);
      int64_t i = 0;
      for (; i + step <= D; i += step) {
        fVec a, b;
        adaln_cpu::load(xr + i, a, b);
        a = a - vmean;
        b = b - vmean;
        acc = acc + a * a + b * b;
      }
      float sq = at::vec::vec_reduce_all<float>([](fVec& p, fVec& q) { return p + q; }, acc);
      for (; i < D; ++i) {
        const float d = static_cast<float>(xr[i]) - mean;
        sq += d * d;
      }
      const float rstd = 1.0f / std::sqrt(sq / static_cast<float>(D) + eps);
      const int64_t m = M == rows ? r : (r / seq) % M;
      const TC* sc = scale + m * D;
      const TC* sh = shift + m * D;
      T* o = out + r * D;
      const fVec vrstd(rstd), one(1.0f);
      for (i = 0; i + step <= D; i += step) {
        fVec a, b, s0, s1, h0, h1;
        adaln_cpu::load(xr + i, a, b);
        adaln_cpu::load(sc + i, s0, s1);
        adaln_cpu::load(sh + i, h0, h1);
        adaln_cpu::store(o + i, (a - vmean) * vrstd * (one + s0) + h0, (b - vmean) * vrstd * (one + s1) + h1);
      }
      for (; i < D; ++i) {
        const float y = (static_cast<float>(xr[i]) - mean) * rstd;
        o[i] = static_cast<T>(y * (1.0f + static_cast<float>(sc[i])) + static_cast<float>(sh[i]));
      }
    }
  });
}

}  // namespace

void adaln(torch::Tensor& out, torch::Tensor const& x, torch::Tensor const& scale, torch::Tensor const& shift,
           double eps, bool rms, int64_t seq) {
  TORCH_CHECK(x.device().is_cpu() && out.device().is_cpu() && scale.device().is_cpu() && shift.device().is_cpu(),
              "adaln: tensors must be on the CPU");
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
  const float e = static_cast<float>(eps);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::BFloat16, at::ScalarType::Half, x.scalar_type(), "adaln", [&] {
    if constexpr (std::is_same_v<scalar_t, double>) {
      TORCH_CHECK(false, "adaln: float64 is not supported (float32, float16, bfloat16)");
    } else if (scale.scalar_type() == at::ScalarType::Float) {
      adaln_rows<scalar_t, float>(out.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), scale.data_ptr<float>(),
                                  shift.data_ptr<float>(), rows, D, M, seq, e, rms);
    } else {
      adaln_rows<scalar_t, scalar_t>(out.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), scale.data_ptr<scalar_t>(),
                                     shift.data_ptr<scalar_t>(), rows, D, M, seq, e, rms);
    }
  });
}
