// CPU RMSNorm and fused residual-add RMSNorm: rows in parallel
// (at::parallel_for), each row converted once to float in a per-thread
// buffer, reduced and scaled with at::vec::Vectorized<float>, converted back.
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>
#include <torch/all.h>

#include <cmath>
#include <vector>

namespace {

using fVec = at::vec::Vectorized<float>;

// Sum of squares of buf[0, n).
float sum_squares(const float* buf, int64_t n) {
  fVec acc(0.f);
  int64_t d = 0;
  for (; d + fVec::size() <= n; d += fVec::size()) {
    fVec v = fVec::loadu(buf + d);
    acc = at::vec::fmadd(v, v, acc);
  }
  float s = at::vec::vec_reduce_all<float>([](fVec& a, fVec& b) { return a + b; }, acc);
  for (; d < n; ++d) s += buf[d] * buf[d];
  return s;
}

// buf[i] = buf[i] * inv * w[i], the last partial vector through a masked load.
void scale_row(float* buf, const float* w, float inv, int64_t n) {
  const fVec vinv(inv);
  int64_t d = 0;
  for (; d + fVec::size() <= n; d += fVec::size()) {
    (fVec::loadu(buf + d) * vinv * fVec::loadu(w + d)).store(buf + d);
  }
  if (d < n) {
    const int64_t rest = n - d;
    (fVec::loadu(buf + d, rest) * vinv * fVec::loadu(w + d, rest)).store(buf + d, rest);
  }
}

template <typename scalar_t>
void to_float(const scalar_t* src, float* dst, int64_t n) {
  at::vec::convert(src, dst, n);
}
template <typename scalar_t>
void from_float(const float* src, scalar_t* dst, int64_t n) {
  at::vec::convert(src, dst, n);
}

template <typename scalar_t>
void run_rows(scalar_t* out, scalar_t* residual_out, const scalar_t* x, const scalar_t* residual, const scalar_t* weight,
              int64_t rows, int64_t hidden, int64_t x_stride, int64_t res_stride, float eps) {
  std::vector<float> wf(hidden);
  to_float(weight, wf.data(), hidden);
  // Enough rows per task that a task moves at least ~32 KiB.
  const int64_t grain = std::max<int64_t>(1, 8192 / std::max<int64_t>(hidden, 1));
  at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> buf(hidden), tmp(residual ? hidden : 0);
    for (int64_t r = begin; r < end; ++r) {
      to_float(x + r * x_stride, buf.data(), hidden);
      if (residual) {
        to_float(residual + r * res_stride, tmp.data(), hidden);
        at::vec::map2<float>([](fVec a, fVec b) { return a + b; }, buf.data(), buf.data(), tmp.data(), hidden);
        // Round the sum to scalar_t first so out == rms_norm(residual_out).
        from_float(buf.data(), residual_out + r * hidden, hidden);
        to_float(residual_out + r * hidden, buf.data(), hidden);
      }
      const float inv = 1.f / std::sqrt(sum_squares(buf.data(), hidden) / (float)hidden + eps);
      scale_row(buf.data(), wf.data(), inv, hidden);
      from_float(buf.data(), out + r * hidden, hidden);
    }
  });
}

at::Tensor as_rows(const at::Tensor& t, int64_t hidden) {
  at::Tensor v = t.reshape({-1, hidden});
  if (v.stride(1) != 1 || (v.size(0) > 1 && v.stride(0) < hidden)) v = v.contiguous();
  return v;
}

void check_common(const at::Tensor& out, const at::Tensor& input, const at::Tensor& weight) {
  TORCH_CHECK(input.device().is_cpu(), "rmsnorm: input must be a CPU tensor");
  TORCH_CHECK(input.dim() >= 1, "rmsnorm: input must have at least one dimension");
  const auto st = input.scalar_type();
  TORCH_CHECK(st == at::kFloat || st == at::kHalf || st == at::kBFloat16, "rmsnorm: unsupported dtype ", st,
              " (float32, float16, bfloat16)");
  const int64_t hidden = input.size(-1);
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == hidden, "rmsnorm: weight must have shape [", hidden, "], got ",
              weight.sizes());
  TORCH_CHECK(weight.scalar_type() == input.scalar_type() && out.scalar_type() == input.scalar_type(),
              "rmsnorm: input, weight and out must have the same dtype");
  TORCH_CHECK(weight.device() == input.device() && out.device() == input.device(),
              "rmsnorm: all tensors must be on the same device");
  TORCH_CHECK(out.sizes() == input.sizes(), "rmsnorm: out must have the input's shape ", input.sizes(), ", got ",
              out.sizes());
  TORCH_CHECK(out.is_contiguous(), "rmsnorm: out must be contiguous");
}

}  // namespace

void rms_norm(torch::Tensor& out, torch::Tensor const& input, torch::Tensor const& weight, double eps) {
  check_common(out, input, weight);
  if (input.numel() == 0) return;
  const int64_t hidden = input.size(-1);
  at::Tensor x = as_rows(input, hidden);
  at::Tensor w = weight.contiguous();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "rms_norm_cpu", [&] {
    run_rows<scalar_t>(out.data_ptr<scalar_t>(), nullptr, x.data_ptr<scalar_t>(), nullptr, w.data_ptr<scalar_t>(),
                       x.size(0), hidden, x.stride(0), 0, (float)eps);
  });
}

void fused_add_rms_norm(torch::Tensor& out, torch::Tensor& residual_out, torch::Tensor const& input,
                        torch::Tensor const& residual, torch::Tensor const& weight, double eps) {
  check_common(out, input, weight);
  TORCH_CHECK(residual.sizes() == input.sizes() && residual_out.sizes() == input.sizes(),
              "fused_add_rms_norm: residual and residual_out must have the input's shape");
  TORCH_CHECK(residual.scalar_type() == input.scalar_type() && residual_out.scalar_type() == input.scalar_type(),
              "fused_add_rms_norm: residual and residual_out must have the input's dtype");
  TORCH_CHECK(residual.device() == input.device() && residual_out.device() == input.device(),
              "fused_add_rms_norm: all tensors must be on the same device");
  TORCH_CHECK(residual_out.is_contiguous(), "fused_add_rms_norm: residual_out must be contiguous");
  if (input.numel() == 0) return;
  const int64_t hidden = input.size(-1);
  at::Tensor x = as_rows(input, hidden);
  at::Tensor r = as_rows(residual, hidden);
  at::Tensor w = weight.contiguous();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "fused_add_rms_norm_cpu", [&] {
    run_rows<scalar_t>(out.data_ptr<scalar_t>(), residual_out.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(),
                       r.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(), x.size(0), hidden, x.stride(0), r.stride(0),
                       (float)eps);
  });
}
