// RMSNorm and fused residual-add RMSNorm kernels. Torch-free: the launch-rule tests
// compile choose_config on the host (tests/integration/test_rmsnorm_rule.py).
//
//   out[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * weight
//   fused:  s = x + residual (rounded to T);  residual_out = s;  out = rmsnorm(s)
//
// Kernels:
//  * rows_reg: the row lives in registers (VPT 16-byte vectors per thread), so
//    it is read from memory exactly once. A "row group" of TX threads (a
//    multiple of 32) handles one row; a block holds TY row groups; blocks walk
//    the rows with a grid-stride loop, so the grid can be capped at what is
//    resident and the weight, held in registers, is read once per thread.
//  * rows_one: one 16-byte vector per thread, one row per block (decode and
//    small batches of 16-bit rows of 256-1024 vectors that fit in one wave).
//  * rows_async: the row is staged in shared memory with cp.async, so the
//    bytes in flight are not bounded by registers: a block of 128 threads and
//    ~32 registers, 16 of them per multiprocessor, all rows of a small batch
//    in flight in one wave.
//  * rows_small (rmsnorm_split.cuh): rows of at most 64 vectors, several rows
//    per warp (per-head q/k norms); rows_head is its form with the row's
//    vectors and the block's threads compile-time (batches from 16384 rows).
//  * rows_cluster (rmsnorm_split.cuh, sm_90): a row split over a cluster of
//    blocks (decode batches of long rows; rows over 2048 vectors).
//  * rows_loop: any hidden size and any alignment. VW elements per access (16
//    bytes when aligned, else 1), two passes over the row (the second hits L2).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace rmsnorm {

template <typename T>
struct Cvt;
template <>
struct Cvt<float> {
  static __device__ __forceinline__ float f(float v) { return v; }
  static __device__ __forceinline__ float t(float v) { return v; }
};
template <>
struct Cvt<__half> {
  static __device__ __forceinline__ float f(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half t(float v) { return __float2half_rn(v); }
};
template <>
struct Cvt<__nv_bfloat16> {
  static __device__ __forceinline__ float f(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 t(float v) { return __float2bfloat16_rn(v); }
};

// 16 bytes of T, kept packed in four 32-bit registers; unpacked to float only
// at the point of use so a row held across the reduction costs 4 registers
// per vector whatever T is.
template <typename T>
struct alignas(16) Vec16 {
  static constexpr int N = 16 / sizeof(T);
  uint4 u;
};

// Unpack / pack a vector's N elements as floats.
template <typename T>
__device__ __forceinline__ void unpack(const Vec16<T>& v, float (&f)[16 / sizeof(T)]) {
  const T* e = reinterpret_cast<const T*>(&v.u);
#pragma unroll
  for (int j = 0; j < Vec16<T>::N; ++j) f[j] = Cvt<T>::f(e[j]);
}
// bf16 unpacked from each 32-bit word with one shift (low element) and one mask (high
// element), exact as the conversion is, where __bfloat162float per element compiled to
// PRMT+IMAD/SHF pairs: up to 17 % fewer instructions in 52 of the 54 bf16 kernels, two
// spills gone (H200 2048x7168 17.98 -> 17.63 us).
template <>
__device__ __forceinline__ void unpack<__nv_bfloat16>(const Vec16<__nv_bfloat16>& v, float (&f)[8]) {
  const uint32_t w[4] = {v.u.x, v.u.y, v.u.z, v.u.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    f[2 * j] = __uint_as_float(w[j] << 16);
    f[2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
  }
}
template <typename T>
__device__ __forceinline__ Vec16<T> pack(const float (&f)[16 / sizeof(T)]) {
  Vec16<T> v;
  T* e = reinterpret_cast<T*>(&v.u);
#pragma unroll
  for (int j = 0; j < Vec16<T>::N; ++j) e[j] = Cvt<T>::t(f[j]);
  return v;
}

template <typename T>
struct Params {
  T* out;                // [rows, hidden], contiguous
  T* residual_out;       // fused only: [rows, hidden], contiguous
  const T* x;            // row r starts at x + r * x_stride
  const T* residual;     // fused only: row r starts at residual + r * res_stride
  const T* weight;       // [hidden]
  int64_t rows;
  int hidden;
  int64_t x_stride;
  int64_t res_stride;
  float eps;
  float inv_hidden;  // 1 / hidden, from the host: no division (and its slow path) in the kernels
};

// x through the read-only path (ld.global.nc): streaming loads (.cs) were slower
// (H200: 262144x128 36.1 -> 34.0 us with the read-only path, decode ~0.1 us faster).
template <typename T>
__device__ __forceinline__ Vec16<T> load_stream(const T* p) {
  Vec16<T> v;
  v.u = __ldg(reinterpret_cast<const uint4*>(p));
  return v;
}
// The weight through the read-only path too.
template <typename T>
__device__ __forceinline__ Vec16<T> load_ro(const T* p) {
  Vec16<T> v;
  v.u = __ldg(reinterpret_cast<const uint4*>(p));
  return v;
}
template <typename T>
__device__ __forceinline__ Vec16<T> load_plain(const T* p) {
  Vec16<T> v;
  v.u = *reinterpret_cast<const uint4*>(p);
  return v;
}
// out with the default policy, as F.rms_norm's and torch.compile's kernels store it
// (streaming stores left the L2 early: ~0.9 us slower at 8192x4096 on the H200).
template <typename T>
__device__ __forceinline__ void store_out(T* p, const Vec16<T>& v) {
  *reinterpret_cast<uint4*>(p) = v.u;
}

// The sum of K (a power of two) floats as a tree: log2(K) dependent adds. One
// template level per tree level, so every stride is a constant (written as
// loops over the level, nvcc kept a loop over a register array: predicated
// moves instead of adds).
template <int K>
struct Tree {
  static_assert((K & (K - 1)) == 0, "Tree: K must be a power of two");
  static __device__ __forceinline__ float sum(float* v) {
#pragma unroll
    for (int i = 0; i < K / 2; ++i) v[i] += v[i + K / 2];
    return Tree<K / 2>::sum(v);
  }
};
template <>
struct Tree<1> {
  static __device__ __forceinline__ float sum(float* v) { return v[0]; }
};
template <int K>
__device__ __forceinline__ float tree_sum(float (&v)[K]) {
  return Tree<K>::sum(v);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum of `v` over the TX threads of each row group. `red` has 2*32 floats; the
// two halves alternate between calls (parity) so one barrier per row suffices:
// a thread can only overwrite a half after every thread passed the barrier
// that follows the last read of it.
__device__ __forceinline__ float group_sum(float v, int tx, int ty, int TX, float* red, int parity) {
  v = warp_sum(v);
  if (TX == 32) return v;  // one warp per row: no shared memory, no barrier
  const int wpr = TX >> 5;
  float* buf = red + parity * 32;
  if ((tx & 31) == 0) buf[ty * wpr + (tx >> 5)] = v;
  __syncthreads();
  float s = 0.f;
  for (int i = 0; i < wpr; ++i) s += buf[ty * wpr + i];
  return s;
}

// blockDim = (TX, TY). VPT 16-byte vectors per thread; requires
// hidden % N == 0, 16-byte aligned rows, and hidden / N <= VPT * TX.
// The weight is held in registers across rows when VPT <= 4 (it costs as many
// registers as the row itself); at VPT 8 it is re-read per row through L1.
// I, LOOP (defaults: int64_t, true): the offsets' type, and whether blocks stride
// over rows (false: the grid holds one block per TY rows, so no row loop and no
// early-exit test before the loads; the decode launch, H200 bf16 graph replay 1x4096
// 1.89 -> 1.65 us).
// Bounds: 512 threads and 2 resident blocks per multiprocessor (64 registers:
// 2048x16384 41.0 -> 37.9 us on the H200); bf16's one-step form at 4 vectors bounded
// as for 576 threads (56 registers, 5 blocks of 224 threads at hidden 7168: 2048x7168
// 19.12 -> 17.97 us); the fused kernels 1 block (the cap spills: fused 1x4096 6.1 -> 6.6).
template <typename T, int VPT, bool FUSED, typename I = int64_t, bool LOOP = true>
__global__ void __launch_bounds__(!FUSED && !LOOP && VPT == 4 && std::is_same<T, __nv_bfloat16>::value ? 576 : 512,
                                  FUSED ? 1 : 2) rows_reg(Params<T> p) {
  using V = Vec16<T>;
  constexpr int N = V::N;
  constexpr bool W_IN_REGS = VPT <= 4;  // the weight in registers up to 4 vectors
  __shared__ float red[64];
  const int TX = blockDim.x, tx = threadIdx.x, ty = threadIdx.y, TY = blockDim.y;
  const int nvec = p.hidden / N;

  V w[W_IN_REGS ? VPT : 1];
  if constexpr (W_IN_REGS) {
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int c = i * TX + tx;
      if (c < nvec) w[i] = load_ro(p.weight + (I)c * N);
    }
  }
  const float inv_h = p.inv_hidden;
  int parity = 0;
  for (I base = (I)blockIdx.x * TY; !LOOP || base < (I)p.rows; base += (I)gridDim.x * TY) {
    const I row = base + ty;
    const bool live = row < (I)p.rows;
    V a[VPT];
    // Issue every load of the row before the first use.
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int c = i * TX + tx;
      if (live && c < nvec) a[i] = load_stream(p.x + row * (I)p.x_stride + (I)c * N);
    }
    if constexpr (FUSED) {
      V r[VPT];
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int c = i * TX + tx;
        if (live && c < nvec) r[i] = load_stream(p.residual + row * (I)p.res_stride + (I)c * N);
      }
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int c = i * TX + tx;
        if (live && c < nvec) {
          float fa[N], fr[N];
          unpack(a[i], fa);
          unpack(r[i], fr);
#pragma unroll
          for (int j = 0; j < N; ++j) fa[j] += fr[j];
          // Round to T first: the normalised output is then exactly
          // rms_norm(residual_out), as an unfused add + norm would give.
          a[i] = pack<T>(fa);
          store_out(p.residual_out + row * (I)p.hidden + (I)c * N, a[i]);
        }
      }
    }
    float sq = 0.f;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int c = i * TX + tx;
      if (live && c < nvec) {
        float f[N];
        unpack(a[i], f);
#pragma unroll
        for (int j = 0; j < N; ++j) sq += f[j] * f[j];
      }
    }
    const float ss = group_sum(sq, tx, ty, TX, red, parity);
    parity ^= 1;
    const float inv = rsqrtf(ss * inv_h + p.eps);
    // bf16: the row's packed registers made opaque after the row sum. bf16's unpack is a
    // shift or a mask, so ptxas would keep the unpacked floats (two registers per pair) live
    // across the reduction and spill at 4 and 8 vectors (28 and 40 bytes under the 64-register
    // cap); opaque, it unpacks again after it: 64 and 56 registers, no spill, and bf16 takes the
    // one-step form everywhere (2048x16384 38.54 -> 37.26 us, decode 64x16384 3.49 -> 3.13).
    if constexpr (std::is_same<T, __nv_bfloat16>::value) {
#pragma unroll
      for (int i = 0; i < VPT; ++i)
        asm volatile("" : "+r"(a[i].u.x), "+r"(a[i].u.y), "+r"(a[i].u.z), "+r"(a[i].u.w));
    }
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int c = i * TX + tx;
      if (live && c < nvec) {
        V wv;
        if constexpr (W_IN_REGS) wv = w[i]; else wv = load_ro(p.weight + (I)c * N);
        float f[N], g[N];
        unpack(a[i], f);
        unpack(wv, g);
#pragma unroll
        for (int j = 0; j < N; ++j) f[j] = f[j] * inv * g[j];
        store_out(p.out + row * (I)p.hidden + (I)c * N, pack<T>(f));
      }
    }
    if constexpr (!LOOP) break;
  }
}

// rows_one: one 16-byte vector per thread, one row per block of nvec threads
// (rounded up to whole warps, at most 1024), one block per row: the decode
// launch of rows of 256-1024 vectors, in the shape of the Triton kernel that
// torch.compile generates there (H200, 2026-12-02 third session: 512 threads x
// one vector for fused 64x4096, 176 instructions per warp where rows_reg<2>'s
// 256 threads x two vectors issue 348: NOTES.md, version 8). Compared with
// rows_reg<T, 1>: no row loop and no per-vector branch (the loads are
// predicated), the squares summed as a tree, and the per-warp partials read
// one per lane and added by shuffles (log2 of the warp count), where
// group_sum adds them one after another in a runtime-length loop. I: the
// offsets' type (int32_t where they fit).
// NVEC: the row's vector count, compile-time (launched with NVEC threads: a power-of-two
// count of whole warps), or 0 (runtime).
template <typename T, bool FUSED, typename I, int NVEC = 0>
__global__ void __launch_bounds__(1024) rows_one(Params<T> p) {
  static_assert(NVEC == 0 || (NVEC % 32 == 0 && (NVEC & (NVEC - 1)) == 0), "whole warps, a power of two");
  using V = Vec16<T>;
  constexpr int N = V::N;
  __shared__ float red[32];
  const int tx = threadIdx.x;
  const int lane = tx & 31;
  const int nvec = NVEC ? NVEC : p.hidden / N;
  const bool on = NVEC ? true : tx < nvec;
  const I row = (I)blockIdx.x;
  const I col = (I)tx * N;
  V w, a;
  w.u = make_uint4(0u, 0u, 0u, 0u);
  a.u = w.u;
  if (on) w = load_ro(p.weight + col);
  if (on) a = load_stream(p.x + row * (I)p.x_stride + col);
  if constexpr (FUSED) {
    V r;
    r.u = make_uint4(0u, 0u, 0u, 0u);
    if (on) r = load_stream(p.residual + row * (I)p.res_stride + col);
    float fa[N], fr[N];
    unpack(a, fa);
    unpack(r, fr);
#pragma unroll
    for (int j = 0; j < N; ++j) fa[j] += fr[j];
    // Rounded to T first, as in rows_reg: out is rms_norm(residual_out).
    a = pack<T>(fa);
    if (on) store_out(p.residual_out + row * (I)p.hidden + col, a);
  }
  float f[N];
  unpack(a, f);
  float sq[N];
#pragma unroll
  for (int j = 0; j < N; ++j) sq[j] = f[j] * f[j];
  float ss = warp_sum(tree_sum(sq));  // idle lanes hold zeros
  const int warps = NVEC ? NVEC / 32 : (int)(blockDim.x >> 5);
  if (lane == 0) red[tx >> 5] = ss;
  __syncthreads();
  // Every lane reads a partial (lane mod the warp count rounded up to a power
  // of two; zeros past the count), so after log2 of that many butterfly steps
  // every lane of every warp holds the row's sum: no second barrier.
  // warps rounded up to a power of two (1: 1); NVEC's 8, 16 and 32 warps are powers of two
  const int span = NVEC ? NVEC / 32 : 1 << (32 - __clz(warps - 1));
  const int slot = lane & (span - 1);
  float t = slot < warps ? red[slot] : 0.f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    if (o < span) t += __shfl_xor_sync(0xffffffffu, t, o);
  const float inv = rsqrtf(t * p.inv_hidden + p.eps);
  if (!on) return;
  float g[N];
  unpack(w, g);
#pragma unroll
  for (int j = 0; j < N; ++j) f[j] = f[j] * inv * g[j];
  store_out(p.out + row * (I)p.hidden + col, pack<T>(f));
}

// 16-byte asynchronous copy global -> shared (sm_80+; a plain copy before).
__device__ __forceinline__ void copy16_async(uint4* smem, const void* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
#else
  *smem = *reinterpret_cast<const uint4*>(gmem);
#endif
}
__device__ __forceinline__ void copy16_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
#endif
}

// Issues the cp.async copies of this thread's vectors of `row` (fused: and
// of its residual row) into `xs` (`rs`); the caller commits and waits.
template <typename T, int VPT, bool FUSED>
__device__ __forceinline__ void stage_row_async(const Params<T>& p, uint4* xs, uint4* rs, int64_t row, int tx,
                                                int TX) {
  constexpr int N = Vec16<T>::N;
  const int nvec = p.hidden / N;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int c = i * TX + tx;
    if (c < nvec) {
      copy16_async(xs + c, p.x + row * p.x_stride + (int64_t)c * N);
      if constexpr (FUSED) copy16_async(rs + c, p.residual + row * p.res_stride + (int64_t)c * N);
    }
  }
}

// A row staged in shared memory (`xs`; fused: its residual row in `rs`),
// each thread reading back only the vectors it copied itself. The sum of
// squares of this thread's part of the row (fused: of x + residual, rounded
// to T, which is also stored to residual_out and written back to `xs`).
template <typename T, int VPT, bool FUSED>
__device__ __forceinline__ float staged_row_sumsq(const Params<T>& p, uint4* xs, const uint4* rs, int64_t row,
                                                  int tx, int TX) {
  using V = Vec16<T>;
  constexpr int N = V::N;
  const int nvec = p.hidden / N;
  float ss = 0.f;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int c = i * TX + tx;
    if (c < nvec) {
      V a;
      a.u = xs[c];
      float f[N];
      unpack(a, f);
      if constexpr (FUSED) {
        V r;
        r.u = rs[c];
        float g[N];
        unpack(r, g);
#pragma unroll
        for (int j = 0; j < N; ++j) f[j] += g[j];
        // Rounded to T first, as in rows_reg: out is rms_norm(residual_out).
        a = pack<T>(f);
        unpack(a, f);
        store_out(p.residual_out + row * (int64_t)p.hidden + (int64_t)c * N, a);
        xs[c] = a.u;
      }
#pragma unroll
      for (int j = 0; j < N; ++j) ss += f[j] * f[j];
    }
  }
  return ss;
}

// The staged row times `inv` times the weight, stored to out. `wr`: the
// weight's vectors already in registers, or null to load them here.
template <typename T, int VPT>
__device__ __forceinline__ void staged_row_store(const Params<T>& p, const uint4* xs, int64_t row, int tx, int TX,
                                                 float inv, const Vec16<T>* wr) {
  using V = Vec16<T>;
  constexpr int N = V::N;
  const int nvec = p.hidden / N;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int c = i * TX + tx;
    if (c < nvec) {
      V a, wv;
      a.u = xs[c];
      wv = wr ? wr[i] : load_ro(p.weight + (int64_t)c * N);
      float f[N], g[N];
      unpack(a, f);
      unpack(wv, g);
#pragma unroll
      for (int j = 0; j < N; ++j) f[j] = f[j] * inv * g[j];
      store_out(p.out + row * (int64_t)p.hidden + (int64_t)c * N, pack<T>(f));
    }
  }
}

// blockDim = (TX, TY), one row per row group, VPT 16-byte vectors per thread;
// same requirements as rows_reg (hidden % N == 0, 16-byte aligned rows,
// hidden / N <= VPT * TX). Dynamic shared memory: TY rows of hidden elements
// (fused: x and residual, twice that). Each thread reads back only the
// vectors it copied itself, so waiting for its own copies is enough; the one
// barrier is the row sum's.
template <typename T, int VPT, bool FUSED>
__global__ void __launch_bounds__(128) rows_async(Params<T> p) {
  using V = Vec16<T>;
  constexpr int N = V::N;
  extern __shared__ uint4 stage[];
  __shared__ float red[64];
  const int TX = blockDim.x, tx = threadIdx.x, ty = threadIdx.y;
  const int nvec = p.hidden / N;
  const int64_t row = (int64_t)blockIdx.x * blockDim.y + ty;
  const bool live = row < p.rows;
  uint4* xs = stage + (size_t)ty * nvec * (FUSED ? 2 : 1);
  uint4* rs = xs + nvec;  // fused only
  if (live) stage_row_async<T, VPT, FUSED>(p, xs, rs, row, tx, TX);
  copy16_wait_all();
  float ss = live ? staged_row_sumsq<T, VPT, FUSED>(p, xs, rs, row, tx, TX) : 0.f;
  // The weight is loaded after the row sum (loading it before the barrier, or an L1
  // prefetch while the row is in flight, gained nothing on the H200).
  const V* wr = nullptr;
  ss = group_sum(ss, tx, ty, TX, red, 0);
  const float inv = rsqrtf(ss * p.inv_hidden + p.eps);
  if (live) staged_row_store<T, VPT>(p, xs, row, tx, TX, inv, wr);
}

// One row per block (TX threads), any hidden size. VEC: 16-byte accesses
// (rows and weight 16-byte aligned, hidden % N == 0) or one element at a time.
template <typename T, bool VEC, bool FUSED>
__global__ void __launch_bounds__(1024) rows_loop(Params<T> p) {
  using V = Vec16<T>;
  constexpr int N = V::N;
  __shared__ float red[64];
  const int TX = blockDim.x, tx = threadIdx.x;
  const float inv_h = p.inv_hidden;
  const int nacc = VEC ? p.hidden / N : p.hidden;
  int parity = 0;
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* xr = p.x + row * p.x_stride;
    const T* rr = FUSED ? p.residual + row * p.res_stride : nullptr;
    T* outr = p.out + row * (int64_t)p.hidden;
    T* resr = FUSED ? p.residual_out + row * (int64_t)p.hidden : nullptr;
    float ss = 0.f;
    for (int c = tx; c < nacc; c += TX) {
      if constexpr (VEC) {
        float f[N];
        V a = load_stream(xr + (int64_t)c * N);
        if constexpr (FUSED) {
          float g[N];
          unpack(a, f);
          unpack(load_stream(rr + (int64_t)c * N), g);
#pragma unroll
          for (int j = 0; j < N; ++j) f[j] += g[j];
          a = pack<T>(f);
          *reinterpret_cast<uint4*>(resr + (int64_t)c * N) = a.u;
        }
        unpack(a, f);
#pragma unroll
        for (int j = 0; j < N; ++j) ss += f[j] * f[j];
      } else {
        T a = xr[c];
        if constexpr (FUSED) {
          a = Cvt<T>::t(Cvt<T>::f(a) + Cvt<T>::f(rr[c]));
          resr[c] = a;
        }
        const float f = Cvt<T>::f(a);
        ss += f * f;
      }
    }
    ss = group_sum(ss, tx, 0, TX, red, parity);
    parity ^= 1;
    const float inv = rsqrtf(ss * inv_h + p.eps);
    // Second pass: the row comes back from L2 (fused: this thread's own
    // writes, hence plain loads rather than the read-only path).
    const T* src = FUSED ? resr : xr;
    for (int c = tx; c < nacc; c += TX) {
      if constexpr (VEC) {
        float f[N], g[N];
        unpack(load_plain(src + (int64_t)c * N), f);
        unpack(load_ro(p.weight + (int64_t)c * N), g);
#pragma unroll
        for (int j = 0; j < N; ++j) f[j] = f[j] * inv * g[j];
        store_out(outr + (int64_t)c * N, pack<T>(f));
      } else {
        outr[c] = Cvt<T>::t(Cvt<T>::f(src[c]) * inv * Cvt<T>::f(p.weight[c]));
      }
    }
  }
}

}  // namespace rmsnorm

#include "rmsnorm_split.cuh"  // rows_small, rows_cluster (use the helpers above)

namespace rmsnorm {

// ---------------------------------------------------------------------------
// Launch configuration. Chosen from the row length in 16-byte vectors; see
// benchmarks/NOTES.md for the measurements behind each choice.
struct Config {
  int kind;   // 0: rows_reg, 1: rows_loop vectorised, 2: rows_loop scalar, 3: rows_async,
              // 6: rows_small, 7: rows_cluster, 8: rows_one, 9: rows_head (rows_small with
              // compile-time shapes)
  int vpt;    // rows_reg, rows_async, rows_small, rows_cluster: vectors per thread
  int tx;     // threads per row (rows_small: lanes per row; rows_cluster: threads per block)
  int ty;     // rows per block (rows_small: row groups per block)
  int64_t grid;
  size_t smem;  // dynamic shared memory per block (rows_async)
  int rpt;    // rows_small: rows per row group per step
  int cs;     // rows_cluster: blocks per cluster (grid is cs x min(rows, 65535))
  int slice;  // rows_cluster: vectors of the row per block
};

// rows_async's staging buffer per block.
inline size_t async_smem_bytes(int hidden, int elem_size, int ty, bool fused) {
  return (size_t)ty * (size_t)hidden * (size_t)elem_size * (fused ? 2 : 1);
}

inline int round_up_32(int v) { return (v + 31) / 32 * 32; }
inline int log2_ceil(int v) {
  int l = 0;
  while ((1 << l) < v) ++l;
  return l;
}

// rows_async pays off once there are more rows than rows_reg keeps in flight
// (H200, bf16, one `pipeline bench` run each; benchmarks/NOTES.md): from 8 MiB
// of input rows for rms_norm (1024 x 4096: 9.3 against 9.7 us; 512 x 4096
// and 1024 x 2048 are 0.1-0.4 us slower), from 32 MiB for fused (its staging
// buffer is twice as large, 13 blocks per multiprocessor instead of 16).
// Never for 16-bit rows of 65-512 vectors (hidden 520-4096), which stay in registers at
// every batch since rows_reg's one-step form (H200 bf16, rows_async -> rows_reg<4>: fused
// 4096x4096 36.61 -> 33.98 us, 4096x3072 17.04 -> 15.33; an H100, 16384x896 20.70 -> 19.54).
inline bool async_by_rule(int64_t rows, int nvec, bool fused, int elem_size) {
  const int64_t vectors = rows * (int64_t)nvec;
  if (elem_size == 2 && nvec >= 256 && nvec <= 512)
    return false;
  if (elem_size == 2 && nvec > 64 && nvec < 256) return false;  // rows_reg
  return vectors >= (fused ? (int64_t(1) << 21) : (int64_t(1) << 19));
}

// rows_cluster (sm_90 only: `cluster_ok`): rows over 2048 vectors (too long for
// one block's registers), and decode batches of long rows (NOTES.md, version 4).
// Measured (call 1 of issue 19's session): one block per row was faster than
// any cluster at 8192 hidden and at 64 rows of 16384; four blocks won only at
// a few rows of 16384 (1x16384 graph replay 3.05 -> 2.68 us).
// float32 rows of up to 4096 vectors in batches from 2048 rows stay in one
// block's registers (8 vectors x 512 threads): 2048x16384 77.6 -> 67.9 us
// (sweep rmsnorm-fp32, fifth session's call 2).
inline int cluster_by_rule(int64_t rows, int nvec, int elem_size) {
  if (elem_size == 4 && nvec <= 4096 && rows >= 2048) return 0;
  if (nvec > 2048) return (nvec + 1023) / 1024;  // slices of at most 1024 vectors
  if (rows <= 8 && nvec >= 2048) return 4;       // slices of 512 vectors
  return 0;
}

// rows_small: hidden <= 64 vectors. Defaults: one vector per lane and two rows
// per group up to 32 vectors, two vectors per lane beyond (NOTES.md, version 4).
inline Config small_config(int64_t rows, int nvec, int force_vpt, int force_tx, int force_rpt) {
  Config c{};
  c.kind = 6;
  c.vpt = force_vpt ? force_vpt : (nvec <= 32 ? 1 : 2);
  if (c.vpt != 1 && c.vpt != 2 && c.vpt != 4) c.vpt = 2;
  c.rpt = force_rpt ? force_rpt : (c.vpt == 1 ? 2 : 1);
  // At most 8 vectors in flight per lane (2 x 4 and 4 x 2 only when a tuning build forces them).
  if (c.vpt * c.rpt > 8 || (c.rpt != 1 && c.rpt != 2 && c.rpt != 4)) c.rpt = 1;
  int tpr = 1 << log2_ceil((nvec + c.vpt - 1) / c.vpt);
  if (force_tx && (force_tx & (force_tx - 1)) == 0 && force_tx * c.vpt >= nvec) tpr = force_tx;
  if (tpr > 32) {  // the row does not fit in a warp at this vpt
    c.vpt = 4;
    c.rpt = 1;
    tpr = 1 << log2_ceil((nvec + 3) / 4);
  }
  c.tx = tpr;
  c.ty = 256 / tpr;
  const int64_t per_block = (int64_t)c.ty * c.rpt;
  c.grid = (rows + per_block - 1) / per_block;
  return c;
}

// rows_head (kind 9): rows of 8, 16 or 32 vectors, VPT x RPT <= 8 vectors per lane, blocks
// of 64, 128 or 256 threads (0 / out of range: 1 vector, 2 rows, 256 threads: rows_small's
// default shape for these rows).
inline bool head_shape(int nvec) { return nvec == 8 || nvec == 16 || nvec == 32; }
inline Config head_config(int64_t rows, int nvec, int vpt, int rpt, int threads) {
  Config c{};
  c.kind = 9;
  const bool ok = (vpt == 1 && (rpt == 1 || rpt == 2 || rpt == 4 || rpt == 8)) ||
                  (vpt == 2 && (rpt == 1 || rpt == 2 || rpt == 4));
  c.vpt = ok ? vpt : 1;
  c.rpt = ok ? rpt : 2;
  c.tx = nvec / c.vpt;  // lanes per row
  c.ty = (threads == 64 || threads == 128 || threads == 256 ? threads : 256) / c.tx;  // row groups per block
  const int64_t per_block = (int64_t)c.ty * c.rpt;
  c.grid = (rows + per_block - 1) / per_block;
  return c;
}

// rows_head by rule: the plain op's per-head rows (hidden 64, 128) from 16384 rows
// (at 2048x128 every kind-9 shape was level with rows_small or slower under graph replay). From
// 65536 rows of 16 or 32 vectors whose input is at most 40 MiB: two vectors per lane, four rows
// per row group, 64-thread blocks (8 vectors in flight per lane; torch.compile's per-head shape);
// otherwise one vector, two rows, 128 threads. H200, sweeps rmsnorm-head(32) (2026-12-02 fourth
// session, calls 1 and 3), µs, rows_small -> the rule's shape: bf16 16384x128 6.56 -> 6.34,
// 32768x128 8.06 -> 7.87, 65536x128 11.90 -> 11.36, 70000x128 12.38 -> 11.97, 131072x128 18.85 ->
// 18.69, 262144x128 34.19 -> 33.76, 65536x64 8.00 -> 7.94, 262144x64 18.88 -> 18.78; float32
// 16384x128 8.16 -> 7.81, 65536x128 18.69 -> 18.37, 262144x128 66.30 -> 64.62, 65536x64 11.68 ->
// 11.17, 262144x64 33.74 -> 33.17. The deep shape lost below 65536 rows (bf16 32768x128: 8.11
// against 7.87), where the input was 64-128 MiB (float32 262144x128: 65.92 against 64.62) and at
// 8-vector rows (bf16 65536x64: 8.21); the 40 MiB bound lies between the measured 36 and 64 MiB.
// Head widths 64 and 128 only, as measured (16-bit rows of 256 are 32 vectors too: not swept).
inline bool head_by_rule(int64_t rows, int hidden, int nvec, bool fused) {
  return !fused && (hidden == 64 || hidden == 128) && head_shape(nvec) && rows >= 16384;
}
inline Config head_rule_config(int64_t rows, int nvec) {
  const bool deep = nvec >= 16 && rows >= 65536 && rows * (int64_t)nvec * 16 <= (int64_t(40) << 20);
  return deep ? head_config(rows, nvec, 2, 4, 64) : head_config(rows, nvec, 1, 2, 128);
}

// rows_one by rule: 16-bit rows of 65-1024 vectors whose blocks (one per
// row) all fit on the device at once, `resident` being how many do (one wave). H200, bf16, sweep
// rmsnorm-one (2026-12-02 third session): ahead of rows_reg at 1-128 rows of 4096 (graph replay
// 0.1-0.17 us), 512 rows (6.66 against 6.91 us; fused 8.43 against 8.54), decode rows of 7168 and
// 8192 (64x8192 5.60 | 2.34 against 6.02 | 2.46), 1024x2048 (6.43 against 6.66: 1024 of 1056
// resident blocks); behind past one wave (1024x3072, 1.5 waves: 7.71 against 7.36) and level at
// two (fused 1024x4096). Rows of 65-255 vectors (Qwen2's 896 and 1536) alike (an H100, graph
// replay: 1x896 1.76 -> 1.48 us, 1x1536 1.86 -> 1.50, 64x1536 1.97 -> 1.70).
inline bool one_shape(int64_t rows, int nvec, int elem_size) {
  return elem_size == 2 && nvec >= 65 && nvec <= 1024 && rows >= 1 && rows <= 4096;
}

inline Config one_config(int64_t rows, int nvec) {
  Config c{};
  c.kind = 8;
  c.vpt = 1;
  c.tx = round_up_32(nvec);
  c.ty = 1;
  c.grid = rows;
  return c;
}

inline Config cluster_config(int64_t rows, int nvec, int cs, int force_vpt) {
  Config c{};
  c.kind = 7;
  c.cs = cs < 1 ? 1 : (cs > 8 ? 8 : cs);
  c.slice = (nvec + c.cs - 1) / c.cs;
  c.vpt = force_vpt ? force_vpt : (c.slice <= 256 ? 1 : (c.slice <= 512 ? 2 : 4));
  if (c.vpt != 1 && c.vpt != 2 && c.vpt != 4) c.vpt = 4;
  while (c.vpt < 4 && (c.slice + c.vpt - 1) / c.vpt > 256) c.vpt *= 2;
  c.tx = round_up_32((c.slice + c.vpt - 1) / c.vpt);
  c.ty = 1;
  c.grid = rows < 65535 ? rows : 65535;
  return c;
}

// `resident_blocks(threads)`: how many blocks of that size fit on the whole
// device at once (multiprocessors * blocks per multiprocessor).
// `max_waves` caps the grid at that many device-fulls of blocks; the grid-stride
// loop does the remaining rows (0: no cap). force_*: a tuning build's overrides
// (0 / -1: the rule's choice). `cluster_ok`: the device runs thread-block
// clusters (compute capability 9.0 or newer).
template <typename ResidentFn>
inline Config choose_config(int64_t rows, int hidden, int elem_size, bool aligned, ResidentFn resident_blocks,
                            int max_waves = 0, int force_vpt = 0, int force_tx = 0, int force_ty = 0,
                            bool fused = false, int force_kind = -1, int force_rpt = 0, int force_cs = 0,
                            bool cluster_ok = false) {
  Config c{};
  const int n = 16 / elem_size;
  const int nvec = aligned && hidden % n == 0 ? hidden / n : 0;
  if (nvec > 0 && cluster_ok && nvec <= 8 * 1024 && (force_kind == 7 || force_kind < 0)) {
    const int cs = force_kind == 7 ? (force_cs ? force_cs : 4) : cluster_by_rule(rows, nvec, elem_size);
    if (cs > 0 && (nvec + cs - 1) / cs <= 1024) return cluster_config(rows, nvec, cs, force_kind == 7 ? force_vpt : 0);
  }
  if (force_kind == 9 && head_shape(nvec)) return head_config(rows, nvec, force_vpt, force_rpt, force_cs);
  if (force_kind < 0 && head_by_rule(rows, hidden, nvec, fused)) return head_rule_config(rows, nvec);
  if (nvec > 0 && ((force_kind == 6 && nvec <= 128) || (force_kind < 0 && nvec <= 64))) {
    c = small_config(rows, nvec, force_kind == 6 ? force_vpt : 0, force_kind == 6 ? force_tx : 0,
                     force_kind == 6 ? force_rpt : 0);
    // A tuning build's persistent grid: at most force_ty device-fulls of blocks.
    if (force_kind == 6 && force_ty > 0) {
      const int64_t cap = (int64_t)force_ty * resident_blocks(6, c.vpt, 256);
      if (cap > 0 && c.grid > cap) c.grid = cap;
    }
    return c;
  }
  // rows_one: resident_blocks is asked only for the shapes it may take (a cached lookup).
  if (nvec > 0 && nvec <= 1024 && rows >= 1 && rows <= 0x7fffffff &&
      (force_kind == 8 || (force_kind < 0 && one_shape(rows, nvec, elem_size) &&
                           rows <= resident_blocks(8, 1, round_up_32(nvec)))))
    return one_config(rows, nvec);
  if (nvec == 0) {
    c.kind = 2;
    c.tx = hidden >= 1024 ? 256 : (hidden >= 256 ? 128 : 32);
    c.ty = 1;
    c.vpt = 1;
  } else {
    if (nvec > 8 * 512 || force_kind == 1) {
      c.kind = 1;
      c.tx = force_kind == 1 && force_tx >= 32 && force_tx <= 1024 && force_tx % 32 == 0 ? force_tx : 1024;
      c.ty = 1;
      c.vpt = 1;
    } else {
      c.kind = 0;
      // 4 vectors (64 bytes) per thread in flight, whole warps per row (as
      // few idle lanes as possible: 3072 bf16 = 384 vectors = 96 threads of
      // 4), ~128 threads per block. These are the defaults the recorded H200
      // run measured; benchmarks/NOTES.md lists what the sweep suggests next.
      // Every 16-bit rows_reg runs one step without a spill (rows_reg's opaque row).
      const bool reg_wide16 = elem_size == 2 && !fused;
      int vpt = force_vpt;
      if (vpt == 0) vpt = nvec <= 32 ? 1 : (nvec <= 64 ? 2 : (nvec <= 4096 ? 4 : 8));
      // 16-bit rows of 1537-2048 vectors in batches from 2048 rows: 8 vectors x 256
      // threads (H200 bf16: 2048x16384 36.8 -> 34.9 us); rows of 1025-1536 keep four
      // (384 threads at 12288; an H100: 2048x12288 33.78 -> 32.32 us against eight).
      if (force_vpt == 0 && reg_wide16 && nvec > 1536 && nvec <= 2048 && rows >= 2048) vpt = 8;
      // A batch of a few rows is one partial wave: twice the threads per row
      // and half the vectors each finish a row sooner (H200, bf16: 128x4096
      // 5.25 -> 5.06 us, 512x4096 6.37 -> 6.21; at 3072, 192 threads were
      // slower, so only rows of 256 or 512 vectors; NOTES.md, version 3).
      // Decode batches of 16-bit rows of 7168-8192 at two vectors too (graph replay 1x8192
      // 2.50 -> 2.18 us).
      const bool few_rows = (rows <= 512 && (nvec == 256 || nvec == 512)) ||
                            (elem_size == 2 && rows <= 64 && nvec > 512 && nvec <= 1024);
      if (force_vpt == 0 && vpt == 4 && few_rows) vpt = 2;
      int tx = force_tx ? force_tx : round_up_32((nvec + vpt - 1) / vpt);
      if (tx < 32) tx = 32;
      if ((int64_t)tx * vpt < nvec) tx = round_up_32((nvec + vpt - 1) / vpt);  // a forced tx too small
      if (tx > 512) { tx = round_up_32((nvec + 7) / 8); vpt = 8; }
      int ty = force_ty ? force_ty : (tx >= 128 ? 1 : 128 / tx);
      if (tx * ty > 512) ty = 512 / tx;
      c.vpt = vpt;
      c.tx = tx;
      c.ty = ty;
      // rows_async: 128-thread blocks, 4 vectors per thread (8 past 512
      // vectors, 16 past 1024: hidden 16384 bf16 is 32 KB of staging, 6
      // blocks per multiprocessor); 64-thread blocks of 8 vectors and caps of
      // 8-12 blocks per multiprocessor were slower or level (NOTES.md). At
      // most 48 KB of staging (the default dynamic shared-memory limit).
      const bool forced = force_kind == 3 && (force_vpt == 4 || force_vpt == 8 || force_vpt == 16);
      const int avpt = forced ? force_vpt : (nvec <= 4 * 128 ? 4 : (nvec <= 8 * 128 ? 8 : 16));
      const int atx = round_up_32((nvec + avpt - 1) / avpt);
      const bool async_fits = nvec <= 16 * 128 && atx <= 128 &&
                              async_smem_bytes(hidden, elem_size, 1, fused) <= (size_t(48) << 10);
      bool use_async = false;
      if (force_kind == 3) use_async = async_fits;
      // By rule only up to 1024 vectors (16 per thread: 2048x16384 47.0 us
      // against 37.9 in registers), and past 512 vectors only from 4096 rows
      // (2048x7168: 21.3 against 20.1 in registers; 8192x7168 61.0 against 67.4).
      // float32 only below 512 vectors (the rule was measured in bf16; in float32
      // rows_reg won every sweep case from 512 vectors: 4096x4096 37.0 -> 33.6 us,
      // 8192x3072 53.3 -> 49.4, 8192x2048 33.9 -> 33.3, fused 8192x4096
      // 146.1 -> 129.6; sweep rmsnorm-fp32, fifth session's call 2).
      // 16-bit rows past 512 vectors in registers at any batch once the one-step form
      // fits (rows_reg's opaque row; sweep rmsnorm-opq, 2026-12-02 call 1, H200 bf16:
      // 8192x5120 45.0 -> 42.4 us, 8192x7168 61.0 -> 59.3, 4096x8192 36.5 -> 34.7).
      else if (force_kind < 0)
        use_async = async_fits && nvec <= 8 * 128 && async_by_rule(rows, nvec, fused, elem_size) &&
                    (nvec <= 512 || (rows >= 4096 && !reg_wide16)) && (elem_size != 4 || nvec < 512);
      if (use_async) {
        c.kind = 3;
        c.vpt = avpt;
        c.tx = atx;
        c.ty = force_ty ? force_ty : (128 / atx > 0 ? 128 / atx : 1);
        if (c.tx * c.ty > 128) c.ty = 1;  // rows_async's launch bound
        c.smem = async_smem_bytes(hidden, elem_size, c.ty, fused);
        if (c.smem > (size_t(48) << 10)) { c.ty = 1; c.smem = async_smem_bytes(hidden, elem_size, 1, fused); }
      }
    }
  }
  const int64_t row_blocks = (rows + c.ty - 1) / c.ty;
  c.grid = row_blocks;
  if (max_waves > 0) {
    const int64_t cap = (int64_t)max_waves * resident_blocks(c.kind, c.vpt, c.tx * c.ty);
    if (cap > 0 && c.grid > cap) c.grid = cap;
  }
  if (c.grid > 0x7fffffff) c.grid = 0x7fffffff;
  if (c.grid < 1) c.grid = 1;
  return c;
}

// Every element offset a launch forms (rows x row stride, and the contiguous
// outputs' rows x hidden) below 2^31: int32_t offsets are exact.
template <typename T>
inline bool offsets_fit_i32(const Params<T>& p) {
  const int64_t stride = p.x_stride > p.res_stride ? p.x_stride : p.res_stride;
  const int64_t widest = stride > p.hidden ? stride : (int64_t)p.hidden;
  return p.rows * widest + p.hidden < (int64_t(1) << 31);
}

template <typename T, bool FUSED>
inline const void* small_ptr(const Config& c) {
  if (c.vpt == 1) {
    if (c.rpt == 4) return (const void*)rows_small<T, 1, 4, FUSED>;
    if (c.rpt == 2) return (const void*)rows_small<T, 1, 2, FUSED>;
    return (const void*)rows_small<T, 1, 1, FUSED>;
  }
  if (c.vpt == 2) {
    if (c.rpt == 4) return (const void*)rows_small<T, 2, 4, FUSED>;
    return c.rpt == 2 ? (const void*)rows_small<T, 2, 2, FUSED> : (const void*)rows_small<T, 2, 1, FUSED>;
  }
  return c.rpt == 2 ? (const void*)rows_small<T, 4, 2, FUSED> : (const void*)rows_small<T, 4, 1, FUSED>;
}

template <typename T, bool FUSED>
inline const void* kernel_ptr(const Config& c) {
  if (c.kind == 0) {
    switch (c.vpt) {
      case 1: return (const void*)rows_reg<T, 1, FUSED>;
      case 2: return (const void*)rows_reg<T, 2, FUSED>;
      case 4: return (const void*)rows_reg<T, 4, FUSED>;
      default: return (const void*)rows_reg<T, 8, FUSED>;
    }
  }
  if (c.kind == 3) {
    if (c.vpt == 4) return (const void*)rows_async<T, 4, FUSED>;
    return c.vpt == 8 ? (const void*)rows_async<T, 8, FUSED> : (const void*)rows_async<T, 16, FUSED>;
  }
  if (c.kind == 6) return small_ptr<T, FUSED>(c);
  if (c.kind == 8) return (const void*)rows_one<T, FUSED, int64_t>;
  if (c.kind == 7) {
    if (c.vpt == 1) return (const void*)rows_cluster<T, 1, FUSED>;
    return c.vpt == 2 ? (const void*)rows_cluster<T, 2, FUSED> : (const void*)rows_cluster<T, 4, FUSED>;
  }
  if (c.kind == 1) return (const void*)rows_loop<T, true, FUSED>;
  return (const void*)rows_loop<T, false, FUSED>;
}

template <typename T, bool FUSED>
inline cudaError_t launch_small(const Params<T>& p, const Config& c, cudaStream_t stream) {
  const int l = log2_ceil(c.tx);
  const dim3 grid((unsigned)(c.grid > 0x7fffffff ? 0x7fffffff : (c.grid < 1 ? 1 : c.grid)));
  const dim3 block(256);
  // The rule's three shapes (the others, which only a tuning build forces, keep
  // the loop form): one step per block when the grid covers every row.
  const int64_t per_block = (int64_t)(256 >> l) * c.rpt;
  if (offsets_fit_i32(p) && (int64_t)grid.x * per_block >= p.rows) {
    if (c.vpt == 1 && c.rpt == 2) {
      rows_small<T, 1, 2, FUSED, int32_t, false><<<grid, block, 0, stream>>>(p, l);
      return cudaGetLastError();
    }
    if (c.vpt == 2 && c.rpt == 1) {
      rows_small<T, 2, 1, FUSED, int32_t, false><<<grid, block, 0, stream>>>(p, l);
      return cudaGetLastError();
    }
    if (c.vpt == 4 && c.rpt == 1) {
      rows_small<T, 4, 1, FUSED, int32_t, false><<<grid, block, 0, stream>>>(p, l);
      return cudaGetLastError();
    }
  }
  if (c.vpt == 1) {
    if (c.rpt == 4) rows_small<T, 1, 4, FUSED><<<grid, block, 0, stream>>>(p, l);
    else if (c.rpt == 2) rows_small<T, 1, 2, FUSED><<<grid, block, 0, stream>>>(p, l);
    else rows_small<T, 1, 1, FUSED><<<grid, block, 0, stream>>>(p, l);
  } else if (c.vpt == 2) {
    if (c.rpt == 4) rows_small<T, 2, 4, FUSED><<<grid, block, 0, stream>>>(p, l);
    else if (c.rpt == 2) rows_small<T, 2, 2, FUSED><<<grid, block, 0, stream>>>(p, l);
    else rows_small<T, 2, 1, FUSED><<<grid, block, 0, stream>>>(p, l);
  } else {
    if (c.rpt == 2) rows_small<T, 4, 2, FUSED><<<grid, block, 0, stream>>>(p, l);
    else rows_small<T, 4, 1, FUSED><<<grid, block, 0, stream>>>(p, l);
  }
  return cudaGetLastError();
}

template <typename T, int NV, int VPT, int RPT, int THREADS>
inline bool launch_head_as(const Params<T>& p, const Config& c, cudaStream_t stream) {
  if (c.tx * c.vpt != NV || c.vpt != VPT || c.rpt != RPT || c.tx * c.ty != THREADS) return false;
  const dim3 grid((unsigned)c.grid);
  rows_small<T, VPT, RPT, false, int32_t, false, NV, THREADS><<<grid, THREADS, 0, stream>>>(p, 0);
  return true;
}

// The rule's two shapes (head_rule_config); a tuning build compiles every shape head_config
// accepts (scripts/gpu/tune/rmsnorm.patch).
template <typename T, int NV>
inline bool launch_head_nvec(const Params<T>& p, const Config& c, cudaStream_t stream) {
  if (launch_head_as<T, NV, 1, 2, 128>(p, c, stream)) return true;
  if constexpr (NV >= 16) return launch_head_as<T, NV, 2, 4, 64>(p, c, stream);
  return false;
}

// rows_head: the plain op, one step, 32-bit offsets; anything else (the fused op, offsets
// past 2^31, a grid over 2^31 blocks) runs rows_small's default for the row.
template <typename T, bool FUSED>
inline cudaError_t launch_head(const Params<T>& p, const Config& c, cudaStream_t stream) {
  if constexpr (!FUSED) {
    if (offsets_fit_i32(p) && c.grid <= 0x7fffffff) {
      const bool done = launch_head_nvec<T, 8>(p, c, stream) || launch_head_nvec<T, 16>(p, c, stream) ||
                        launch_head_nvec<T, 32>(p, c, stream);
      if (done) return cudaGetLastError();
    }
  }
  return launch_small<T, FUSED>(p, small_config(p.rows, c.tx * c.vpt, 0, 0, 0), stream);
}

template <typename T, bool FUSED>
inline cudaError_t launch_cluster(const Params<T>& p, const Config& c, cudaStream_t stream) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)c.cs, (unsigned)c.grid, 1);
  cfg.blockDim = dim3((unsigned)c.tx, 1, 1);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = (unsigned)c.cs;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  if (c.vpt == 1) return cudaLaunchKernelEx(&cfg, rows_cluster<T, 1, FUSED>, p, c.slice);
  if (c.vpt == 2) return cudaLaunchKernelEx(&cfg, rows_cluster<T, 2, FUSED>, p, c.slice);
  return cudaLaunchKernelEx(&cfg, rows_cluster<T, 4, FUSED>, p, c.slice);
}

template <typename T, bool FUSED>
inline cudaError_t launch(const Params<T>& p, const Config& c, cudaStream_t stream) {
  if (c.kind == 6) return launch_small<T, FUSED>(p, c, stream);
  if (c.kind == 9) return launch_head<T, FUSED>(p, c, stream);
  if (c.kind == 7) return launch_cluster<T, FUSED>(p, c, stream);
  if (c.kind == 8) {  // one block per row: c.grid == rows
    const dim3 g1((unsigned)c.grid), b1((unsigned)c.tx);
    // The row's vector count compiled in for rows of 256, 512 and 1024 vectors (one thread per
    // vector, every lane on), where the runtime form divides the hidden size, predicates the
    // loads and branches around each cross-warp shuffle (bf16 fused: 200 -> 151 SASS
    // instructions; an H100, graph replay fused 64x4096 2.19 -> 1.98 us).
    if (offsets_fit_i32(p) && c.tx * Vec16<T>::N == p.hidden) {
      switch (c.tx) {
        case 256: rows_one<T, FUSED, int32_t, 256><<<g1, b1, 0, stream>>>(p); return cudaGetLastError();
        case 512: rows_one<T, FUSED, int32_t, 512><<<g1, b1, 0, stream>>>(p); return cudaGetLastError();
        case 1024: rows_one<T, FUSED, int32_t, 1024><<<g1, b1, 0, stream>>>(p); return cudaGetLastError();
        default: break;  // other widths: the runtime form
      }
    }
    if (offsets_fit_i32(p)) rows_one<T, FUSED, int32_t><<<g1, b1, 0, stream>>>(p);
    else rows_one<T, FUSED, int64_t><<<g1, b1, 0, stream>>>(p);
    return cudaGetLastError();
  }
  dim3 block(c.tx, c.ty);
  dim3 grid((unsigned)c.grid);
  // rows_reg in one step with 32-bit offsets where the grid covers every row and the
  // offsets fit; the loop form otherwise.
  if (c.kind == 0 && offsets_fit_i32(p) && c.grid * c.ty >= p.rows) {
    switch (c.vpt) {
      case 1: rows_reg<T, 1, FUSED, int32_t, false><<<grid, block, 0, stream>>>(p); break;
      case 2: rows_reg<T, 2, FUSED, int32_t, false><<<grid, block, 0, stream>>>(p); break;
      case 4: rows_reg<T, 4, FUSED, int32_t, false><<<grid, block, 0, stream>>>(p); break;
      default: rows_reg<T, 8, FUSED, int32_t, false><<<grid, block, 0, stream>>>(p); break;
    }
    return cudaGetLastError();
  }
  if (c.kind == 0) {
    switch (c.vpt) {
      case 1: rows_reg<T, 1, FUSED><<<grid, block, 0, stream>>>(p); break;
      case 2: rows_reg<T, 2, FUSED><<<grid, block, 0, stream>>>(p); break;
      case 4: rows_reg<T, 4, FUSED><<<grid, block, 0, stream>>>(p); break;
      default: rows_reg<T, 8, FUSED><<<grid, block, 0, stream>>>(p); break;
    }
  } else if (c.kind == 3) {
    if (c.vpt == 4) rows_async<T, 4, FUSED><<<grid, block, c.smem, stream>>>(p);
    else if (c.vpt == 8) rows_async<T, 8, FUSED><<<grid, block, c.smem, stream>>>(p);
    else rows_async<T, 16, FUSED><<<grid, block, c.smem, stream>>>(p);
  } else if (c.kind == 1) {
    rows_loop<T, true, FUSED><<<grid, block, 0, stream>>>(p);
  } else {
    rows_loop<T, false, FUSED><<<grid, block, 0, stream>>>(p);
  }
  return cudaGetLastError();
}

}  // namespace rmsnorm
