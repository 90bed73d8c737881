// Torch glue for the CUDA kernels in rmsnorm_kernels.cuh: argument checks,
// views of any leading shape as [rows, hidden], launch-configuration choice.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/all.h>

#include <mutex>
#include <unordered_map>

#include "rmsnorm_kernels.cuh"

namespace {

// The input as [rows, hidden] with unit stride along hidden. Leading
// dimensions that cannot be folded into one row stride (e.g. a transpose) are
// made contiguous; a row-strided view (a slice of a wider tensor) is kept.
at::Tensor as_rows(const at::Tensor& t, int64_t hidden) {
  at::Tensor v = t.reshape({-1, hidden});
  if (v.stride(1) != 1 || (v.size(0) > 1 && v.stride(0) < hidden)) v = v.contiguous();
  return v;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Blocks resident on the whole device for a kernel and block size; cached
// because cudaOccupancy* is not free and the answer never changes.
template <typename T, bool FUSED>
int64_t resident_blocks(int kind, int vpt, int threads) {
  static std::mutex mu;
  static std::unordered_map<int64_t, int64_t> cache;
  int dev = 0;
  C10_CUDA_CHECK(cudaGetDevice(&dev));
  const int64_t key = ((int64_t)dev << 32) | (kind << 24) | (vpt << 16) | threads;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  rmsnorm::Config c{kind, vpt, threads, 1, 1};
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rmsnorm::kernel_ptr<T, FUSED>(c), threads, 0));
  const int64_t n = (int64_t)per_sm * at::cuda::getDeviceProperties(dev)->multiProcessorCount;
  cache[key] = n;
  return n;
}

// Thread-block clusters (rows_cluster) need compute capability 9.0 (ATen
// caches the device properties).
bool clusters_supported() {
  int dev = 0;
  C10_CUDA_CHECK(cudaGetDevice(&dev));
  return at::cuda::getDeviceProperties(dev)->major >= 9;
}

template <typename T, bool FUSED>
void run(rmsnorm::Params<T> p, bool aligned) {
  // See benchmarks/NOTES.md: the grid is capped at this many device-fulls of
  // resident blocks; the grid-stride loop covers the remaining rows.
  constexpr int kMaxWaves = 0;
  auto resident = [](int kind, int vpt, int threads) { return resident_blocks<T, FUSED>(kind, vpt, threads); };
  auto cfg = rmsnorm::choose_config(p.rows, p.hidden, (int)sizeof(T), aligned, resident, kMaxWaves, 0, 0, 0, FUSED,
                                    -1, 0, 0, clusters_supported());
  // rows_async's L1/shared split is left to the driver, which sizes it for
  // the launch's occupancy: forcing the largest shared memory cost ~0.5 us
  // per call on the H200 and gained nothing (benchmarks/NOTES.md, version 3).
  C10_CUDA_CHECK((rmsnorm::launch<T, FUSED>(p, cfg, at::cuda::getCurrentCUDAStream())));
}

template <typename F>
void dispatch(at::ScalarType st, F&& f) {
  switch (st) {
    case at::kFloat: f(float{}); break;
    case at::kHalf: f(__half{}); break;
    case at::kBFloat16: f(__nv_bfloat16{}); break;
    default: TORCH_CHECK(false, "rmsnorm: unsupported dtype ", st, " (float32, float16, bfloat16)");
  }
}

void check_common(const at::Tensor& out, const at::Tensor& input, const at::Tensor& weight) {
  TORCH_CHECK(input.is_cuda(), "rmsnorm: input must be a CUDA tensor");
  TORCH_CHECK(input.dim() >= 1, "rmsnorm: input must have at least one dimension");
  const int64_t hidden = input.size(-1);
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == hidden, "rmsnorm: weight must have shape [", hidden, "], got ",
              weight.sizes());
  TORCH_CHECK(hidden <= std::numeric_limits<int>::max(), "rmsnorm: hidden size too large");
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
  const at::cuda::OptionalCUDAGuard guard(device_of(input));
  const int64_t hidden = input.size(-1);
  at::Tensor x = as_rows(input, hidden);
  at::Tensor w = weight.contiguous();
  dispatch(input.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    constexpr int N = 16 / sizeof(T);
    rmsnorm::Params<T> p{};
    p.out = reinterpret_cast<T*>(out.data_ptr());
    p.x = reinterpret_cast<const T*>(x.data_ptr());
    p.weight = reinterpret_cast<const T*>(w.data_ptr());
    p.rows = x.size(0);
    p.hidden = (int)hidden;
    p.x_stride = x.stride(0);
    p.eps = (float)eps;
    p.inv_hidden = 1.f / (float)p.hidden;
    const bool aligned = aligned16(p.out) && aligned16(p.x) && aligned16(p.weight) && p.x_stride % N == 0;
    run<T, false>(p, aligned);
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
  const at::cuda::OptionalCUDAGuard guard(device_of(input));
  const int64_t hidden = input.size(-1);
  at::Tensor x = as_rows(input, hidden);
  at::Tensor r = as_rows(residual, hidden);
  at::Tensor w = weight.contiguous();
  dispatch(input.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    constexpr int N = 16 / sizeof(T);
    rmsnorm::Params<T> p{};
    p.out = reinterpret_cast<T*>(out.data_ptr());
    p.residual_out = reinterpret_cast<T*>(residual_out.data_ptr());
    p.x = reinterpret_cast<const T*>(x.data_ptr());
    p.residual = reinterpret_cast<const T*>(r.data_ptr());
    p.weight = reinterpret_cast<const T*>(w.data_ptr());
    p.rows = x.size(0);
    p.hidden = (int)hidden;
    p.x_stride = x.stride(0);
    p.res_stride = r.stride(0);
    p.eps = (float)eps;
    p.inv_hidden = 1.f / (float)p.hidden;
    const bool aligned = aligned16(p.out) && aligned16(p.residual_out) && aligned16(p.x) && aligned16(p.residual) &&
                         aligned16(p.weight) && p.x_stride % N == 0 && p.res_stride % N == 0;
    run<T, true>(p, aligned);
  });
}
