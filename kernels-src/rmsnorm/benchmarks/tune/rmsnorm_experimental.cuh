// Designs measured against rows_async and not shipped (benchmarks/NOTES.md,
// "Version 3"): kept for the tuner so that the figures can be made again.
//  * rows_tma (sm_90): one bulk copy (cp.async.bulk) per row into shared
//    memory instead of a 16-byte cp.async per vector and thread (a variant
//    that also stored each row with a bulk copy, much slower, is in git
//    history: commit 009a190, RMSNORM_TMA_STORE);
//  * rows_pipe: a persistent rows_async with two staging buffers, the next
//    row's copies in flight while a row is reduced and stored.
#pragma once

#include "rmsnorm_kernels.cuh"

namespace rmsnorm {

// --- Hopper bulk copies (cp.async.bulk, completing on an mbarrier) --------
__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
#endif
}
// One bulk copy global -> shared of `bytes` (a multiple of 16, both ends
// 16-byte aligned), counted against `bar`'s transaction bytes.
__device__ __forceinline__ void bulk_load(void* smem, const void* gmem, unsigned bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_u32(smem)),
               "l"(gmem), "r"(bytes), "r"(smem_u32(bar))
               : "memory");
#endif
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned phase) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(phase)
      : "memory");
#endif
}

// rows_tma (sm_90): rows_async with each row (fused: and its residual row)
// fetched by ONE bulk copy that thread 0 issues, instead of a 16-byte cp.async
// per vector and thread. Same block shape and requirements as rows_async,
// plus the row's bytes a multiple of 16 (hidden % N == 0 guarantees it).
template <typename T, int VPT, bool FUSED>
__global__ void __launch_bounds__(128) rows_tma(Params<T> p) {
  using V = Vec16<T>;
  constexpr int N = V::N;
  extern __shared__ uint4 stage[];
  __shared__ float red[64];
  __shared__ alignas(8) uint64_t bar;
  const int TX = blockDim.x, tx = threadIdx.x;
  const int nvec = p.hidden / N;
  const int64_t row = blockIdx.x;  // one row per block
  uint4* xs = stage;
  uint4* rs = xs + nvec;  // fused only
  const unsigned row_bytes = (unsigned)nvec * 16u;
  if (tx == 0) {
    mbar_init(&bar, 1);
    mbar_expect_tx(&bar, FUSED ? 2 * row_bytes : row_bytes);
    bulk_load(xs, p.x + row * p.x_stride, row_bytes, &bar);
    if constexpr (FUSED) bulk_load(rs, p.residual + row * p.res_stride, row_bytes, &bar);
  }
  // The other threads may reach the wait before thread 0 initialised the
  // barrier: one block barrier first.
  __syncthreads();
  mbar_wait(&bar, 0);
  float ss = staged_row_sumsq<T, VPT, FUSED>(p, xs, rs, row, tx, TX);
  ss = group_sum(ss, tx, 0, TX, red, 0);
  staged_row_store<T, VPT>(p, xs, row, tx, TX, rsqrtf(ss * (1.f / (float)p.hidden) + p.eps), nullptr);
}

// rows_pipe: a persistent rows_async. Each block walks rows blockIdx.x,
// blockIdx.x + gridDim.x, ... with two staging buffers: the next row's
// cp.async copies are issued before this row's sum, so a block always has a
// row in flight while it reduces and stores another. Each thread reads back
// only what it copied itself, so reusing a buffer needs no barrier.
template <typename T, int VPT, bool FUSED>
__global__ void __launch_bounds__(128) rows_pipe(Params<T> p) {
  using V = Vec16<T>;
  constexpr int N = V::N;
  extern __shared__ uint4 stage[];
  __shared__ float red[64];
  const int TX = blockDim.x, tx = threadIdx.x;
  const int nvec = p.hidden / N;
  const size_t per_stage = (size_t)nvec * (FUSED ? 2 : 1);
  auto issue = [&](int64_t row, int s) {
    uint4* xs = stage + s * per_stage;
    stage_row_async<T, VPT, FUSED>(p, xs, xs + nvec, row, tx, TX);
  };
  int64_t row = blockIdx.x;
  if (row < p.rows) issue(row, 0);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
  int s = 0, parity = 0;
  for (; row < p.rows; row += gridDim.x) {
    const int64_t next = row + gridDim.x;
    if (next < p.rows) issue(next, s ^ 1);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    // Always one group per iteration (possibly empty), so "all but the
    // newest group done" means this row's copies are done.
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 1;\n" ::: "memory");
#endif
    uint4* xs = stage + s * per_stage;
    float ss = staged_row_sumsq<T, VPT, FUSED>(p, xs, xs + nvec, row, tx, TX);
    ss = group_sum(ss, tx, 0, TX, red, parity);
    parity ^= 1;
    staged_row_store<T, VPT>(p, xs, row, tx, TX, rsqrtf(ss * (1.f / (float)p.hidden) + p.eps), nullptr);
    s ^= 1;
  }
}


// Diagnostics, not kernels of the op: a plain device copy (grid-stride, four
// 16-byte loads in flight per thread, each stored at once) and rows_async's
// data path without the reduction (a row through shared memory and back out),
// to tell the data path's cost from the reduction's.
__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

template <typename T, int VPT>
__global__ void __launch_bounds__(128) row_copy_async(Params<T> p) {
  using V = Vec16<T>;
  constexpr int N = V::N;
  extern __shared__ uint4 stage[];
  const int TX = blockDim.x, tx = threadIdx.x;
  const int nvec = p.hidden / N;
  const int64_t row = blockIdx.x;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int c = i * TX + tx;
    if (c < nvec) copy16_async(stage + c, p.x + row * p.x_stride + (int64_t)c * N);
  }
  copy16_wait_all();
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int c = i * TX + tx;
    if (c < nvec) {
      V a;
      a.u = stage[c];
      store_out(p.out + row * (int64_t)p.hidden + (int64_t)c * N, a);
    }
  }
}

// kind 4: rows_tma, kind 5: rows_pipe, from rows_async's configuration (one row
// per block; rows_pipe's grid is the caller's).
inline Config experimental_config(Config async_cfg, int kind, int hidden, int elem_size, bool fused) {
  Config c = async_cfg;
  c.kind = kind;
  c.ty = 1;
  c.grid = async_cfg.grid * async_cfg.ty;
  c.smem = async_smem_bytes(hidden, elem_size, 1, fused) * (kind == 5 ? 2 : 1);
  return c;
}

template <typename T, bool FUSED>
inline const void* experimental_kernel_ptr(const Config& c) {
  if (c.kind == 4) return c.vpt == 4 ? (const void*)rows_tma<T, 4, FUSED> : (const void*)rows_tma<T, 8, FUSED>;
  return c.vpt == 4 ? (const void*)rows_pipe<T, 4, FUSED> : (const void*)rows_pipe<T, 8, FUSED>;
}

template <typename T, bool FUSED>
inline cudaError_t experimental_launch(const Params<T>& p, const Config& c, cudaStream_t stream) {
  dim3 block(c.tx, c.ty);
  dim3 grid((unsigned)c.grid);
  if (c.kind == 4) {
    if (c.vpt == 4) rows_tma<T, 4, FUSED><<<grid, block, c.smem, stream>>>(p);
    else rows_tma<T, 8, FUSED><<<grid, block, c.smem, stream>>>(p);
  } else {
    if (c.vpt == 4) rows_pipe<T, 4, FUSED><<<grid, block, c.smem, stream>>>(p);
    else rows_pipe<T, 8, FUSED><<<grid, block, c.smem, stream>>>(p);
  }
  return cudaGetLastError();
}

}  // namespace rmsnorm
