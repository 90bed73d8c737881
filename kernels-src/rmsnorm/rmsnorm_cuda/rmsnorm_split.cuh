// The launch shapes for the two ends of the size range, included by
// rmsnorm_kernels.cuh after its helpers (Vec16, load_stream, store_out, ...):
//
//  * rows_small: rows of at most 64 vectors (per-head q/k norms: hidden 64 to
//    512 bf16). A row group of TPR lanes (a power of two <= 32) per row, so one
//    warp holds 32 / TPR rows, and RPT rows per group per step with every load
//    issued before the first use. The row sum is TPR-lane shuffles: no shared
//    memory, no barrier. One row per 32-lane warp left half the lanes idle at
//    hidden 128 (16 vectors) and kept 16 bytes per thread in flight.
//  * rows_cluster (sm_90): one row split over a cluster of CS blocks, each
//    holding its slice in registers; the partial sums meet through distributed
//    shared memory. For decode batches of long rows, whose few blocks would
//    otherwise each stream a whole row through one multiprocessor, and for rows
//    too long for one block's registers (over 2048 vectors).
#pragma once

namespace rmsnorm {

// I, LOOP: as rows_reg's (int64_t offsets and a grid-stride loop by default;
// int32_t and one step when the grid covers every row: launch_small).
// NVEC_S, THREADS_S: 0, or the row's vectors and the block's threads as
// compile-time constants (rows_head, kind 9: launch_head in rmsnorm_kernels.cuh; no runtime
// lane arithmetic and no per-vector bound).
template <typename T, int VPT, int RPT, bool FUSED, typename I = int64_t, bool LOOP = true, int NVEC_S = 0,
          int THREADS_S = 0>
__global__ void __launch_bounds__(256) rows_small(Params<T> p, int tpr_log2) {
  using V = Vec16<T>;
  constexpr int N = V::N;
  static_assert(NVEC_S == 0 || (NVEC_S % VPT == 0 && NVEC_S / VPT <= 32 && THREADS_S >= NVEC_S / VPT),
                "rows_head: a row group of NVEC_S / VPT lanes inside one warp and one block");
  const int tpr = NVEC_S ? NVEC_S / VPT : 1 << tpr_log2;
  const int lane = threadIdx.x & (tpr - 1);
  const int group = NVEC_S ? (int)threadIdx.x / tpr : (int)(threadIdx.x >> tpr_log2);
  const int groups = NVEC_S ? THREADS_S / tpr : (int)(blockDim.x >> tpr_log2);
  // With NVEC_S every c = i * tpr + lane of the loops below is < NVEC_S.
  const int nvec = NVEC_S ? NVEC_S : p.hidden / N;
  V w[VPT];
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int c = i * tpr + lane;
    if (NVEC_S != 0 || c < nvec) w[i] = load_ro(p.weight + (I)c * N);
  }
  const float inv_h = p.inv_hidden;
  const I per_block = (I)groups * RPT;
  for (I base = (I)blockIdx.x * per_block; !LOOP || base < (I)p.rows; base += (I)gridDim.x * per_block) {
    V a[RPT][VPT];
    // Rows base + r * groups + group: for each r, a warp covers 32 / TPR
    // consecutive rows, i.e. one contiguous span of a packed tensor.
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
      const I row = base + (I)r * groups + group;
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int c = i * tpr + lane;
        if (row < (I)p.rows && (NVEC_S != 0 || c < nvec)) a[r][i] = load_stream(p.x + row * (I)p.x_stride + (I)c * N);
      }
    }
    if constexpr (FUSED) {
      V b[RPT][VPT];
#pragma unroll
      for (int r = 0; r < RPT; ++r) {
        const I row = base + (I)r * groups + group;
#pragma unroll
        for (int i = 0; i < VPT; ++i) {
          const int c = i * tpr + lane;
          if (row < (I)p.rows && (NVEC_S != 0 || c < nvec)) b[r][i] = load_stream(p.residual + row * (I)p.res_stride + (I)c * N);
        }
      }
#pragma unroll
      for (int r = 0; r < RPT; ++r) {
        const I row = base + (I)r * groups + group;
#pragma unroll
        for (int i = 0; i < VPT; ++i) {
          const int c = i * tpr + lane;
          if (row < (I)p.rows && (NVEC_S != 0 || c < nvec)) {
            float f[N], g[N];
            unpack(a[r][i], f);
            unpack(b[r][i], g);
#pragma unroll
            for (int j = 0; j < N; ++j) f[j] += g[j];
            a[r][i] = pack<T>(f);  // rounded to T: out is rms_norm(residual_out)
            store_out(p.residual_out + row * (I)p.hidden + (I)c * N, a[r][i]);
          }
        }
      }
    }
    float ss[RPT];
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
      const I row = base + (I)r * groups + group;
      float sq = 0.f;
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int c = i * tpr + lane;
        if (row < (I)p.rows && (NVEC_S != 0 || c < nvec)) {
          float f[N];
          unpack(a[r][i], f);
#pragma unroll
          for (int j = 0; j < N; ++j) sq += f[j] * f[j];
        }
      }
      ss[r] = sq;
    }
    // Every lane of the warp takes part (the loop is uniform over the block):
    // xor offsets below TPR stay inside the row group.
    for (int o = tpr >> 1; o > 0; o >>= 1) {
#pragma unroll
      for (int r = 0; r < RPT; ++r) ss[r] += __shfl_xor_sync(0xffffffffu, ss[r], o);
    }
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
      const I row = base + (I)r * groups + group;
      const float inv = rsqrtf(ss[r] * inv_h + p.eps);
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int c = i * tpr + lane;
        if (row < (I)p.rows && (NVEC_S != 0 || c < nvec)) {
          float f[N], g[N];
          unpack(a[r][i], f);
          unpack(w[i], g);
#pragma unroll
          for (int j = 0; j < N; ++j) f[j] = f[j] * inv * g[j];
          store_out(p.out + row * (I)p.hidden + (I)c * N, pack<T>(f));
        }
      }
    }
    if constexpr (!LOOP) break;
  }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// A float in the shared memory of block `rank` of this cluster.
__device__ __forceinline__ float load_cluster_shared(const float* local, unsigned rank) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(local));
  unsigned remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(a), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory"); }
#endif

// grid (CS, rows up to 65535), cluster (CS, 1, 1), blockDim.x threads: block
// `rank` of a cluster holds vectors [rank * slice, (rank + 1) * slice) of the
// row, VPT per thread. Two cluster barriers per row: the first publishes each
// block's partial sum, the second (split into arrive / wait around the
// stores) keeps a block's shared memory alive until every block has read it.
template <typename T, int VPT, bool FUSED>
__global__ void __launch_bounds__(256) rows_cluster(Params<T> p, int slice) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using V = Vec16<T>;
  constexpr int N = V::N;
  __shared__ float red[8];
  __shared__ float part;
  unsigned cs, rank;
  asm("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(cs));
  asm("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  const int nvec = p.hidden / N;
  const int c0 = (int)rank * slice;
  const int c1 = min(c0 + slice, nvec);
  const int tx = threadIdx.x, TX = blockDim.x;
  const float inv_h = p.inv_hidden;
  V w[VPT];
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int c = c0 + i * TX + tx;
    if (c < c1) w[i] = load_ro(p.weight + (int64_t)c * N);
  }
  for (int64_t row = blockIdx.y; row < p.rows; row += gridDim.y) {
    V a[VPT];
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int c = c0 + i * TX + tx;
      if (c < c1) a[i] = load_stream(p.x + row * p.x_stride + (int64_t)c * N);
    }
    if constexpr (FUSED) {
      V b[VPT];
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int c = c0 + i * TX + tx;
        if (c < c1) b[i] = load_stream(p.residual + row * p.res_stride + (int64_t)c * N);
      }
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int c = c0 + i * TX + tx;
        if (c < c1) {
          float f[N], g[N];
          unpack(a[i], f);
          unpack(b[i], g);
#pragma unroll
          for (int j = 0; j < N; ++j) f[j] += g[j];
          a[i] = pack<T>(f);
          store_out(p.residual_out + row * (int64_t)p.hidden + (int64_t)c * N, a[i]);
        }
      }
    }
    float ss = 0.f;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int c = c0 + i * TX + tx;
      if (c < c1) {
        float f[N];
        unpack(a[i], f);
#pragma unroll
        for (int j = 0; j < N; ++j) ss += f[j] * f[j];
      }
    }
    ss = warp_sum(ss);
    if ((tx & 31) == 0) red[tx >> 5] = ss;
    __syncthreads();
    if (tx == 0) {
      float s = 0.f;
      for (int i = 0; i < (TX + 31) / 32; ++i) s += red[i];
      part = s;
    }
    // Arrive has release and wait acquire semantics at cluster scope: every
    // block's `part` is visible to all after this pair.
    cluster_arrive();
    cluster_wait();
    float tot = 0.f;
    for (unsigned r = 0; r < cs; ++r) tot += load_cluster_shared(&part, r);
    cluster_arrive();  // this block is done reading the others' `part`
    const float inv = rsqrtf(tot * inv_h + p.eps);
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int c = c0 + i * TX + tx;
      if (c < c1) {
        float f[N], g[N];
        unpack(a[i], f);
        unpack(w[i], g);
#pragma unroll
        for (int j = 0; j < N; ++j) f[j] = f[j] * inv * g[j];
        store_out(p.out + row * (int64_t)p.hidden + (int64_t)c * N, pack<T>(f));
      }
    }
    cluster_wait();  // before `part` and `red` are written again, or the block exits
  }
#endif
}

}  // namespace rmsnorm
