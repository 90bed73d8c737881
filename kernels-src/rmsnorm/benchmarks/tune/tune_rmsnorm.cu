// Standalone launch-configuration sweep for the rmsnorm CUDA kernels (no
// torch): times every candidate configuration per shape with CUDA events, the
// L2 flushed before each repetition, median of REPS, against a device-to-device
// copy measured in the same process. Used to pick choose_config's defaults;
// the figures that count come from `python -m pipeline bench`.
//
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I../../rmsnorm_cuda tune_rmsnorm.cu -o tune
//   ./tune            (prints one line per shape and configuration, best last)
//   TUNE_FOCUS=1 ./tune   (each design beside a copy of the same bytes, interleaved
//                          rounds; TUNE_ROUNDS, TUNE_SHAPES, TUNE_WARM_CODE: see focus())
// scripts/gpu/diag_h200.sh's "tune" phase builds one binary per knob set and runs them.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "rmsnorm_experimental.cuh"

#define CK(...)                                                                        \
  do {                                                                                 \
    cudaError_t e_ = (__VA_ARGS__);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #__VA_ARGS__, cudaGetErrorString(e_)); \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

using T = __nv_bfloat16;
static const int REPS = 100;
static char* g_flush;
static size_t g_flush_bytes = size_t(512) << 20;

// 0: write flush (cudaMemset of the buffer: L2 left full of dirty lines, as
// triton's do_bench leaves it), 1: read flush (a kernel reads the buffer: L2
// left full of clean lines; what `pipeline bench` does), 2: no flush (hot L2).
static int g_flush_mode = 1;  // the read flush `pipeline bench` uses
static unsigned long long* g_sink;

__global__ void read_flush(const uint4* p, size_t n, unsigned long long* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) *sink = acc;  // keeps the loads alive
}

static void flush(int i) {
  if (g_flush_mode == 0) CK(cudaMemsetAsync(g_flush, i & 0xff, g_flush_bytes));
  else if (g_flush_mode == 1) read_flush<<<132 * 8, 512>>>((const uint4*)g_flush, g_flush_bytes / 16, g_sink);
  else cudaMemsetAsync(g_sink, 0, 8);
}

// Diagnostic (TUNE_WARM_CODE=1): run between the flush and the start event,
// e.g. the same kernel on one row, so that its code is back in the L2 and the
// instruction caches when the timed call starts.
static std::function<void()> g_warm;

template <typename F>
float median_us(F&& fn) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 5; ++i) fn();
  std::vector<float> t;
  for (int i = 0; i < REPS; ++i) {
    flush(i);
    if (g_warm) g_warm();
    CK(cudaEventRecord(a));
    fn();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.f);
  }
  std::sort(t.begin(), t.end());
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return t[t.size() / 2];
}

__global__ void fill(T* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    p[i] = __float2bfloat16(((h & 0xffff) / 32768.f) - 1.f);
  }
}


// TUNE_CARVEOUT: the shared-memory carveout (percent) set on every kernel
// with shared-memory staging; unset or -1 leaves it to the driver, as the
// extension does (NOTES.md: setting the maximum cost ~0.5 us per call).
static int carveout_setting() { return getenv("TUNE_CARVEOUT") ? atoi(getenv("TUNE_CARVEOUT")) : -1; }

static cudaError_t launch_any(const rmsnorm::Params<T>& p, const rmsnorm::Config& c, bool fused) {
  if (c.kind == 4 || c.kind == 5)
    return fused ? rmsnorm::experimental_launch<T, true>(p, c, 0) : rmsnorm::experimental_launch<T, false>(p, c, 0);
  return fused ? rmsnorm::launch<T, true>(p, c, 0) : rmsnorm::launch<T, false>(p, c, 0);
}

// TUNE_FOCUS=1: the shapes the targets name, each design in turn, ROUNDS
// interleaved rounds (median of REPS each) so that drift hits every candidate
// alike; prints the median over rounds and the best round. "copy" is a device
// copy of the same bytes, the floor a kernel of this size can reach by this
// method. Candidates: rows_reg, rows_async (two rows per 256-thread block
// too, when built with RMSNORM_ASYNC_MAX_THREADS=256), and the experimental
// rows_tma and rows_pipe (rmsnorm_experimental.cuh, several grid sizes).
static int focus(T* x, T* r, T* o, T* ro, T* w, T* ref, T* ref_ro, const cudaDeviceProp& prop, double copy_gbs) {
  const int rounds = getenv("TUNE_ROUNDS") ? atoi(getenv("TUNE_ROUNDS")) : 5;
  const int carveout = carveout_setting();
  printf("focus: warm code=%d rounds=%d carveout=%d CP_L2PF=%d ASYNC_MAX_THREADS=%d STORE_CS=%d\n",
         getenv("TUNE_WARM_CODE") != nullptr, rounds, carveout, RMSNORM_CP_L2PF, RMSNORM_ASYNC_MAX_THREADS,
         RMSNORM_STORE_CS);
  struct Shape { int64_t rows; int hidden; bool fused; };
  std::vector<Shape> shapes = {{8192, 4096, false}, {2048, 4096, false}, {32768, 4096, false}, {4096, 2048, false},
                               {1024, 4096, false}, {8192, 4096, true},  {2048, 4096, true}};
  // TUNE_SHAPES="512x4096,f128x4096": other shapes (f: fused_add_rms_norm).
  if (const char* list = getenv("TUNE_SHAPES")) {
    shapes.clear();
    for (const char* q = list; *q;) {
      const bool fused = *q == 'f';
      long long rows = 0;
      int hidden = 0, used = 0;
      if (sscanf(q + (fused ? 1 : 0), "%lldx%d%n", &rows, &hidden, &used) != 2) break;
      shapes.push_back({rows, hidden, fused});
      q += used + (fused ? 1 : 0);
      if (*q == ',') ++q;
    }
  }
  auto noop = [](int, int, int) -> int64_t { return 0; };
  for (const Shape& s : shapes) {
    const size_t n = (size_t)s.rows * s.hidden;
    const double bytes = (s.fused ? 4.0 : 2.0) * n * 2 + s.hidden * 2;
    rmsnorm::Params<T> p{o, ro, x, r, w, s.rows, s.hidden, s.hidden, s.hidden, 1e-6f};
    rmsnorm::Params<T> pr = p;
    pr.out = ref;
    pr.residual_out = ref_ro;
    rmsnorm::Config refc{2, 1, 256, 1, std::min<int64_t>(s.rows, 65535)};
    if (s.fused) CK((rmsnorm::launch<T, true>(pr, refc, 0))); else CK((rmsnorm::launch<T, false>(pr, refc, 0)));
    CK(cudaDeviceSynchronize());
    // copy: 1 cudaMemcpy of the same bytes, 2 copy_kernel, 3 row_copy_async
    // (plain rms_norm shapes only).
    struct Cand { std::string name; rmsnorm::Config c; int copy; };
    std::vector<Cand> cands;
    cands.push_back({"copy (same bytes)", {}, 1});
    cands.push_back({"copy kernel (same bytes)", {}, 2});
    if (!s.fused) {
      rmsnorm::Config c = rmsnorm::choose_config(s.rows, s.hidden, 2, true, noop, 0, 0, 0, 0, false, 3);
      if (c.kind == 3 && c.ty == 1 && c.vpt == 4) cands.push_back({"row copy through smem (no reduction)", c, 3});
    }
    // 30: rows_async, two rows per block; 01, 02: rows_reg with 1 or 2
    // vectors per thread (more threads per row), for batches of few rows.
    for (int kind : {0, 1, 2, 3, 30, 4, 5}) {
      if (kind == 30 && RMSNORM_ASYNC_MAX_THREADS < 256) continue;
      if ((kind == 1 || kind == 2) && s.rows > 2048) continue;
      if (kind == 5 && s.rows < 8192) continue;
      const int base_kind = kind <= 2 ? 0 : 3;
      rmsnorm::Config c = rmsnorm::choose_config(s.rows, s.hidden, 2, true, noop, 0, kind <= 2 ? kind : 0, 0,
                                                 kind == 30 ? 2 : 0, s.fused, base_kind);
      if (c.kind != base_kind || (kind == 30 && c.ty != 2) || ((kind == 1 || kind == 2) && c.vpt != kind)) continue;
      if (kind == 4 || kind == 5) c = rmsnorm::experimental_config(c, kind, s.hidden, 2, s.fused);
      const void* kfn = kind == 4 || kind == 5
                            ? (s.fused ? rmsnorm::experimental_kernel_ptr<T, true>(c) : rmsnorm::experimental_kernel_ptr<T, false>(c))
                            : (s.fused ? rmsnorm::kernel_ptr<T, true>(c) : rmsnorm::kernel_ptr<T, false>(c));
      if (base_kind != 0 && carveout >= 0)
        CK(cudaFuncSetAttribute(kfn, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
      int per_sm = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kfn, c.tx * c.ty, c.smem));
      char name[96];
      if (kind != 5) {
        snprintf(name, sizeof name, "%s vpt=%d tx=%d ty=%d %d/SM", base_kind == 0 ? "reg" : (kind == 4 ? "tma" : "async"),
                 c.vpt, c.tx, c.ty, per_sm);
        cands.push_back({name, c, false});
        continue;
      }
      const int64_t resident = (int64_t)per_sm * prop.multiProcessorCount;
      // resident: as many blocks as fit; balanced: the fewest blocks that keep
      // the same rows per block but give every block the same count.
      const int64_t per_block = (s.rows + resident - 1) / resident;
      for (int64_t g : {resident, (s.rows + per_block - 1) / per_block, (s.rows + 1) / 2, (s.rows + 3) / 4}) {
        if (g > s.rows || g < 1) continue;
        rmsnorm::Config cg = c;
        cg.grid = g;
        snprintf(name, sizeof name, "pipe vpt=%d %d/SM grid=%lld (%.2f rows/block)", c.vpt, per_sm, (long long)g,
                 (double)s.rows / g);
        cands.push_back({name, cg, false});
      }
    }
    std::vector<std::vector<float>> t(cands.size());
    for (size_t k = 0; k < cands.size(); ++k) {
      if (cands[k].copy) continue;
      CK(cudaMemset(o, 0xff, n * 2));
      CK(cudaMemset(ro, 0xff, n * 2));
      CK(launch_any(p, cands[k].c, s.fused));
      CK(cudaDeviceSynchronize());
      size_t bad = 0;
      for (int which = 0; which < (s.fused ? 2 : 1); ++which) {
        std::vector<unsigned short> ha(n), hb(n);
        CK(cudaMemcpy(ha.data(), which ? ro : o, n * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hb.data(), which ? ref_ro : ref, n * 2, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; ++i) { int d = (int)ha[i] - (int)hb[i]; if (d > 2 || d < -2) ++bad; }
      }
      if (bad) cands[k].name += " MISMATCH(" + std::to_string(bad) + ")";
    }
    for (int round = 0; round < rounds; ++round) {
      for (size_t k = 0; k < cands.size(); ++k) {
        const Cand& cd = cands[k];
        float us;
        const size_t cbytes = (s.fused ? 2 : 1) * n * 2;
        if (cd.copy == 1) {
          us = median_us([&] { CK(cudaMemcpyAsync(s.fused ? ro : o, x, cbytes, cudaMemcpyDeviceToDevice)); });
        } else if (cd.copy == 2) {
          us = median_us([&] {
            rmsnorm::copy_kernel<<<prop.multiProcessorCount * 16, 128>>>((const uint4*)x, (uint4*)(s.fused ? ro : o), cbytes / 16);
            CK(cudaGetLastError());
          });
        } else if (cd.copy == 3) {
          us = median_us([&] {
            rmsnorm::row_copy_async<T, 4><<<(unsigned)s.rows, cd.c.tx, cd.c.smem>>>(p);
            CK(cudaGetLastError());
          });
        } else {
          rmsnorm::Params<T> one = p;
          one.rows = 1;
          rmsnorm::Config c1 = cd.c;
          c1.grid = 1;
          if (getenv("TUNE_WARM_CODE")) g_warm = [&] { CK(launch_any(one, c1, s.fused)); };
          us = median_us([&] { CK(launch_any(p, cd.c, s.fused)); });
          g_warm = nullptr;
        }
        t[k].push_back(us);
      }
    }
    for (size_t k = 0; k < cands.size(); ++k) {
      std::vector<float> v = t[k];
      std::sort(v.begin(), v.end());
      const float med = v[v.size() / 2];
      printf("%s %6lld x %5d  %-52s median %8.2f us  best %8.2f  %.3f of copy\n", s.fused ? "fused" : "plain",
             (long long)s.rows, s.hidden, cands[k].name.c_str(), med, v[0], bytes / (med * 1e3) / copy_gbs);
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  int dev = 0;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  printf("device %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  CK(cudaMalloc(&g_flush, g_flush_bytes));
  CK(cudaMemset(g_flush, 1, g_flush_bytes));
  CK(cudaMalloc(&g_sink, 8));
#ifdef RMSNORM_MIN_BLOCKS
  printf("knobs W_IN_REGS_MAX=%d LOAD_CS=%d STORE_CS=%d MIN_BLOCKS=%d\n", RMSNORM_W_IN_REGS_MAX, RMSNORM_LOAD_CS,
         RMSNORM_STORE_CS, RMSNORM_MIN_BLOCKS);
#else
  printf("knobs W_IN_REGS_MAX=%d LOAD_CS=%d STORE_CS=%d MIN_BLOCKS=unset\n", RMSNORM_W_IN_REGS_MAX, RMSNORM_LOAD_CS,
         RMSNORM_STORE_CS);
#endif
  const size_t max_elems = size_t(32768) * 4096;
  T *x, *r, *o, *ro, *w, *ref;
  CK(cudaMalloc(&x, max_elems * 2)); CK(cudaMalloc(&r, max_elems * 2)); CK(cudaMalloc(&o, max_elems * 2));
  CK(cudaMalloc(&ro, max_elems * 2)); CK(cudaMalloc(&ref, max_elems * 2)); CK(cudaMalloc(&w, 65536 * 2));
  fill<<<1024, 256>>>(x, max_elems, 1); fill<<<1024, 256>>>(r, max_elems, 2); fill<<<64, 256>>>(w, 65536, 3);
  CK(cudaDeviceSynchronize());

  // Copy ceiling: bytes read + bytes written.
  const size_t cbytes = size_t(1) << 30;
  char *cs, *cd;
  CK(cudaMalloc(&cs, cbytes)); CK(cudaMalloc(&cd, cbytes));
  CK(cudaMemset(cs, 1, cbytes));
  double copy_gbs = 0;
  for (int m : {2, 0, 1}) {  // the read flush last: copy_gbs is then the bench's ceiling
    g_flush_mode = m;
    float cu = median_us([&] { CK(cudaMemcpyAsync(cd, cs, cbytes, cudaMemcpyDeviceToDevice)); });
    copy_gbs = 2.0 * cbytes / (cu * 1e3);
    printf("copy flush=%d %.1f GB/s (%.1f us for 2x%zu MiB)\n", m, copy_gbs, cu, cbytes >> 20);
  }
  CK(cudaFree(cs)); CK(cudaFree(cd));
  if (getenv("TUNE_FOCUS")) {
    T* ref_ro;
    CK(cudaMalloc(&ref_ro, max_elems * 2));
    return focus(x, r, o, ro, w, ref, ref_ro, prop, copy_gbs);
  }

  auto resident = [&](int kind, int vpt, int threads) -> int64_t {
    rmsnorm::Config c{kind, vpt, threads, 1, 1};
    int n = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, rmsnorm::kernel_ptr<T, false>(c), threads, 0));
    return (int64_t)n * prop.multiProcessorCount;
  };

  struct Shape { int64_t rows; int hidden; };
  std::vector<Shape> shapes;
  // The shapes the targets name (NOTES.md); TUNE_ALL=1 for the wider set.
  if (getenv("TUNE_ALL")) {
    for (int64_t t : {128, 512, 2048, 8192, 32768}) shapes.push_back({t, 4096});
    for (int64_t t : {1024, 4096, 8192}) shapes.push_back({t, 2048});
    for (int64_t t : {1024, 8192}) shapes.push_back({t, 3072});
  } else {
    for (int64_t t : {2048, 8192, 32768}) shapes.push_back({t, 4096});
    shapes.push_back({4096, 2048});
  }
  for (int fused = 0; fused < 2; ++fused) {
    for (auto s : shapes) {
      const size_t n = (size_t)s.rows * s.hidden;
      rmsnorm::Params<T> p{o, ro, x, r, w, s.rows, s.hidden, s.hidden, s.hidden, 1e-6f};
      // Reference: the scalar loop kernel.
      rmsnorm::Config refc{2, 1, 256, 1, std::min<int64_t>(s.rows, 65535)};
      rmsnorm::Params<T> pr = p; pr.out = ref; pr.residual_out = ref + 0;  // residual_out unused for compare
      if (fused) { T* tmp; CK(cudaMalloc(&tmp, n * 2)); pr.residual_out = tmp;
        CK(rmsnorm::launch<T, true>(pr, refc, 0)); CK(cudaDeviceSynchronize()); CK(cudaFree(tmp)); }
      else { CK(rmsnorm::launch<T, false>(pr, refc, 0)); }
      CK(cudaDeviceSynchronize());
      const double bytes = (fused ? 4.0 : 2.0) * n * 2 + s.hidden * 2;
      float best = 1e30f; char bestd[128] = ""; rmsnorm::Config bestc{}; size_t best_smem = 0;
      // cap: blocks per multiprocessor forced down with unused dynamic shared
      // memory (0: as many as registers allow), default configuration only.
      // kind 3: rows_async (its own block shape only).
      // TUNE_ASYNC_ONLY=1: rows_async's shapes only (vectors per thread 4 or 8,
      // rows per block, caps of 8 and 12 blocks per multiprocessor).
      const bool async_only = getenv("TUNE_ASYNC_ONLY") != nullptr;
      for (int kind : {0, 3}) for (int vpt : {0, 1, 2, 4, 8}) for (int ty : {0, 1, 2}) for (int cap : {0, 3, 4, 5, 8, 12}) {
        const int nvec = s.hidden / 8;
        if (vpt && vpt * 512 < nvec) continue;  // a forced vpt that cannot cover the row
        if (kind == 0 && (async_only ? (vpt || ty || cap) : (cap > 5 || (cap && (vpt || ty))))) continue;
        if (kind == 3 && !async_only && (vpt || ty || cap)) continue;
        if (kind == 3 && async_only && ((vpt && vpt != 8) || (cap && cap < 8) || (cap && (vpt || ty)))) continue;
        rmsnorm::Config c = rmsnorm::choose_config(s.rows, s.hidden, 2, true, resident, 0, vpt, 0, ty, fused, kind);
        if (ty && c.ty != ty) continue;
        if (c.kind != kind || (vpt && c.vpt != vpt)) continue;
        size_t smem = 0;  // on top of the configuration's own
        int per_sm = 0;
        const void* kfn = fused ? rmsnorm::kernel_ptr<T, true>(c) : rmsnorm::kernel_ptr<T, false>(c);
        if (carveout_setting() >= 0)
          CK(cudaFuncSetAttribute(kfn, cudaFuncAttributePreferredSharedMemoryCarveout, carveout_setting()));
        if (cap) {
          const size_t share = (size_t)prop.sharedMemPerMultiprocessor / cap;
          smem = share > c.smem + 2048 ? share - c.smem - 2048 : 0;
          // The largest a block may opt into: the best configuration is launched again later.
          CK(cudaFuncSetAttribute(kfn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)prop.sharedMemPerBlockOptin));
        }
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kfn, c.tx * c.ty, c.smem + smem));
        if (cap && per_sm > cap) continue;
        CK(cudaMemset(o, 0xff, n * 2));
        auto run = [&] { if (fused) CK((rmsnorm::launch<T, true>(p, c, 0, smem))); else CK((rmsnorm::launch<T, false>(p, c, 0, smem))); };
        run(); CK(cudaDeviceSynchronize());
        // Compare with the reference bitwise-ish (same math, same rounding up to sum order).
        std::vector<unsigned short> ha(std::min<size_t>(n, 1 << 22)), hb(ha.size());
        CK(cudaMemcpy(ha.data(), o, ha.size() * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hb.data(), ref, hb.size() * 2, cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (size_t i = 0; i < ha.size(); ++i) { int d = (int)ha[i] - (int)hb[i]; if (d > 2 || d < -2) ++bad; }
        float us = median_us(run);
        char desc[128];
        snprintf(desc, sizeof desc, "%s%s vpt=%d tx=%d ty=%d blocks/SM=%d%s", (vpt || kind || cap) ? "" : "DEFAULT ",
                 kind == 3 ? "async" : "reg", c.vpt, c.tx, c.ty, per_sm, cap ? " (capped)" : "");
        printf("%s %6lld x %5d  %-48s %8.2f us  %7.1f GB/s  %.3f of copy%s\n", fused ? "fused" : "plain",
               (long long)s.rows, s.hidden, desc, us, bytes / (us * 1e3), bytes / (us * 1e3) / copy_gbs,
               bad ? "  MISMATCH" : "");
        if (bad) { printf("  %zu mismatches\n", bad); }
        if (us < best) { best = us; snprintf(bestd, sizeof bestd, "%s", desc); bestc = c; best_smem = smem; }
      }
      // The best configuration under the other flush modes.
      for (int m : {0, 2}) {
        g_flush_mode = m;
        float us = median_us([&] { if (fused) CK((rmsnorm::launch<T, true>(p, bestc, 0, best_smem))); else CK((rmsnorm::launch<T, false>(p, bestc, 0, best_smem))); });
        printf("FLUSH%d %s %6lld x %5d best config %8.2f us %.3f of copy\n", m, fused ? "fused" : "plain",
               (long long)s.rows, s.hidden, us, bytes / (us * 1e3) / copy_gbs);
      }
      g_flush_mode = 1;
      rmsnorm::Config d = rmsnorm::choose_config(s.rows, s.hidden, 2, true, resident, 0, 0, 0, 0, fused);
      printf("BEST %s %6lld x %5d  %-48s %8.2f us %.3f of copy | default kind=%d vpt=%d tx=%d ty=%d\n", fused ? "fused" : "plain",
             (long long)s.rows, s.hidden, bestd, best, bytes / (best * 1e3) / copy_gbs, d.kind, d.vpt, d.tx, d.ty);
    }
  }
  return 0;
}
