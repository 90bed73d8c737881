// Adaptive layer norm kernels, torch-free: out = norm(x) * (1 + scale) + shift,
// the modulation row m = r when M == rows, else (r / seq) % M.
//
//  * adaln_rows: a row group of TX threads per row (a power of two up to 32,
//    so that several rows share a warp and the row sums are shuffles only, or
//    a multiple of 32 up to 256 for long rows), TY rows per block; each thread
//    keeps VPT 16-byte packs of its row in registers, so x is read once. The
//    previous design, one block of up to 256 threads per row with one pack
//    each, kept 16 bytes per thread in flight and two block-wide barriers per
//    reduction: 0.45-0.75 of copy bandwidth on the H200 (NOTES.md).
//  * adaln_scalar: any width and alignment; reads x three times.
#pragma once

#include <cstdint>

#include "cuda_pack.cuh"

namespace adaln_cuda {

struct Params {
  int64_t rows, D, M, seq;
  float eps;
};

// 32-bit where the operands fit (a 64-bit division is a ~70-instruction
// subroutine on the row's critical path: NOTES.md, issue 19's small shapes).
__device__ __forceinline__ int64_t mod_row(int64_t row, const Params& p) {
  if (p.M == p.rows) return row;
  if (p.M == 1) return 0;
  if (p.rows <= 0x7fffffff && p.seq <= 0x7fffffff && p.M <= 0x7fffffff)
    return (static_cast<uint32_t>(row) / static_cast<uint32_t>(p.seq)) % static_cast<uint32_t>(p.M);
  return (row / p.seq) % p.M;
}

// EARLY: the modulation rows (scale, shift) are loaded into registers before
// the row sums, so that their latency overlaps the reductions instead of
// following them. Only for launches of at most 8 warps per multiprocessor
// (the host's choice, adaln.cu), where no other warp hides that latency and
// the extra registers cost no occupancy that matters: on the H200 it took
// 1x384x2048 from 7.12 to 6.30 us, and cost 20 % at 2x16384x2048 (many waves
// hide the latency anyway; the registers halve the resident blocks).

// Sum over the TX threads of a row group (blockDim = (TX, TY)). TX <= 32:
// xor shuffles inside the group, no barrier. TX > 32: one shared-memory step;
// `red` holds 2 x 64 floats used alternately (parity), so one barrier per sum.
__device__ __forceinline__ float row_sum(float v, float* red, int& parity) {
  const int TX = blockDim.x;
  const int width = TX < 32 ? TX : 32;
  for (int o = width >> 1; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (TX <= 32) return v;
  const int wpr = TX >> 5;
  float* buf = red + parity * 64;
  parity ^= 1;
  if ((threadIdx.x & 31) == 0) buf[threadIdx.y * wpr + (threadIdx.x >> 5)] = v;
  __syncthreads();
  float s = 0.f;
  for (int i = 0; i < wpr; ++i) s += buf[threadIdx.y * wpr + i];
  return s;
}

template <typename T>
__device__ __forceinline__ void unpack(const Pack16<T>& pk, float (&f)[Pack16<T>::N]) {
#pragma unroll
  for (int i = 0; i < Pack16<T>::N; ++i) f[i] = to_float(pk.v[i]);
}

// Hides a pack's value from the compiler, so that it widens the pack again at
// each use instead of keeping the widened floats live across the reductions.
template <typename T>
__device__ __forceinline__ void opaque(Pack16<T>& pk) {
  uint32_t* w = reinterpret_cast<uint32_t*>(&pk);
  asm volatile("" : "+r"(w[0]), "+r"(w[1]), "+r"(w[2]), "+r"(w[3]));
}

// The row's packs stay packed in registers (4 registers per pack whatever T
// is) and are widened at each use: kept as floats, 8 packs of bf16 took 127
// registers per thread (103 with packs the compiler still widened once).
template <typename T, typename TC, bool RMS, int VPT, bool EARLY>
__global__ void __launch_bounds__(256) adaln_rows(T* __restrict__ out, const T* __restrict__ x,
                                                  const TC* __restrict__ scale, const TC* __restrict__ shift,
                                                  Params p) {
  constexpr int N = Pack16<T>::N;
  __shared__ float red[128];
  const int TX = blockDim.x, tx = threadIdx.x;
  const int64_t row = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
  const bool live = row < p.rows;  // dead rows still join the shuffles and barriers
  const int packs = (int)(p.D / N);
  const Pack16<T>* xr = reinterpret_cast<const Pack16<T>*>(x + row * p.D);
  Pack16<T> v[VPT];
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int c = k * TX + tx;
    if (live && c < packs) v[k] = xr[c];
  }
  const int64_t m = live ? mod_row(row, p) : 0;
  const TC* sc = scale + m * p.D;
  const TC* sh = shift + m * p.D;
  constexpr bool kEarly = EARLY;
  // R: packs of TC per pack of x (fp32 tables beside bf16 x: 2).
  constexpr int R = sizeof(TC) >= sizeof(T) ? sizeof(TC) / sizeof(T) : 1;
  Pack16<TC> es[kEarly ? VPT * R : 1], eb[kEarly ? VPT * R : 1];
  if constexpr (kEarly) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int c = k * TX + tx;
      if (live && c < packs) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
          es[k * R + r] = reinterpret_cast<const Pack16<TC>*>(sc + (int64_t)c * N)[r];
          eb[k * R + r] = reinterpret_cast<const Pack16<TC>*>(sh + (int64_t)c * N)[r];
        }
      }
    }
  }
  int parity = 0;
  const float inv_d = 1.f / (float)p.D;
  float mean = 0.f;
  if constexpr (!RMS) {
    float sum = 0.f;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int c = k * TX + tx;
      if (live && c < packs) {
        float f[N];
        unpack(v[k], f);
#pragma unroll
        for (int i = 0; i < N; ++i) sum += f[i];
      }
    }
    mean = row_sum(sum, red, parity) * inv_d;
  }
  float sq = 0.f;
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int c = k * TX + tx;
    if (live && c < packs) {
      float f[N];
      if constexpr (!RMS) opaque(v[k]);
      unpack(v[k], f);
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const float d = f[i] - mean;
        sq += d * d;
      }
    }
  }
  const float rstd = rsqrtf(row_sum(sq, red, parity) * inv_d + p.eps);
  if (!live) return;
  T* orow = out + row * p.D;
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int c = k * TX + tx;
    if (c < packs) {
      float f[N], s[N], b[N], o[N];
      opaque(v[k]);
      unpack(v[k], f);
      if constexpr (kEarly) {
        constexpr int NC = Pack16<TC>::N;
#pragma unroll
        for (int i = 0; i < N; ++i) {
          s[i] = to_float(es[k * R + i / NC].v[i % NC]);
          b[i] = to_float(eb[k * R + i / NC].v[i % NC]);
        }
      } else {
        load_float<N>(sc + (int64_t)c * N, s);
        load_float<N>(sh + (int64_t)c * N, b);
      }
#pragma unroll
      for (int i = 0; i < N; ++i) o[i] = (f[i] - mean) * rstd * (1.0f + s[i]) + b[i];
      store_float<N>(orow + (int64_t)c * N, o);
    }
  }
}

// Sum over the block (blockDim.x threads, one row); every thread gets it.
__device__ __forceinline__ float block_sum(float v, float* smem) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // smem may still be read from the previous reduction
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? smem[lane] : 0.0f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T, typename TC, bool RMS>
__global__ void __launch_bounds__(256) adaln_scalar(T* __restrict__ out, const T* __restrict__ x,
                                                    const TC* __restrict__ scale, const TC* __restrict__ shift,
                                                    Params p) {
  __shared__ float smem[32];
  const int64_t row = blockIdx.x;
  const int64_t D = p.D;
  const T* xr = x + row * D;
  float sum = 0.0f;
  if (!RMS) {
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) sum += to_float(xr[i]);
  }
  const float mean = RMS ? 0.0f : block_sum(sum, smem) / static_cast<float>(D);
  float sq = 0.0f;
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
    const float d = to_float(xr[i]) - mean;
    sq += d * d;
  }
  const float rstd = rsqrtf(block_sum(sq, smem) / static_cast<float>(D) + p.eps);
  const int64_t m = mod_row(row, p);
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
    const float y = (to_float(xr[i]) - mean) * rstd;
    out[row * D + i] = from_float<T>(y * (1.0f + to_float(scale[m * D + i])) + to_float(shift[m * D + i]));
  }
}

// Launch shape, from the row length in packs (NOTES.md): whole rows in
// registers, at most 8 packs per thread; rows of up to 256 packs (2048 bf16)
// on a power-of-two group of at most 32 lanes, ~4 packs per lane; longer rows
// on 64-256 threads of 8 packs. kind 0: adaln_rows, 1: adaln_scalar.
struct Config {
  int kind, vpt, tx, ty;
  int64_t grid;
  bool early = false;  // adaln_rows<..., EARLY>: scale/shift loaded before the row sums
};

inline int pow2_ceil(int v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}

inline int round_vpt(int v) { return v <= 2 ? v : (v <= 4 ? 4 : (v <= 6 ? 6 : 8)); }

// Lanes per row for rows of at most 256 packs: the power of two up to 64 whose
// packs per lane (rounded to an instantiated count) leave the fewest lanes
// idle, ties to ~4 packs per lane. H200, call 1 of issue 19: 2048 bf16 (256
// packs) 64 lanes x 4 (67.5 us at 2x16384x2048) against 32 x 8 (70.0);
// 1152 (144 packs) 32 x 6 (49.6 us at 8x4096x1152) against 64 x 4 (55.6).
inline int group_lanes(int packs) {
  int best = 32;
  double best_use = -1.0;
  int best_dist = 0;
  for (int tx = 1; tx <= 64; tx *= 2) {
    const int v = round_vpt((packs + tx - 1) / tx);
    if ((packs + tx - 1) / tx > 8) continue;
    const double use = (double)packs / ((double)tx * v);
    const int dist = v > 4 ? v - 4 : 4 - v;
    if (use > best_use + 1e-9 || (use > best_use - 1e-9 && dist < best_dist)) {
      best = tx;
      best_use = use;
      best_dist = dist;
    }
  }
  return best;
}

inline int round_up_32(int v) { return (v + 31) / 32 * 32; }

// Batches whose blocks all fit on the device at once (one wave), rows of 1024-2048
// elements: one row per block of up to 256 threads, one pack per thread (two in
// float32), the launch shape of rmsnorm's rows_one and of torch.compile's kernel
// there (NOTES.md, "One pack per thread"). A few warps per row, each thread short,
// where the group rule gives few threads many packs (98-161 registers at the two
// small-batch shapes). Sweep adaln-one, 2026-12-03 call 1 (H200, bf16, flushed |
// graph replay): rms 1x384x2048 6.18 | 2.66 -> 5.74 | 2.50 us (torch.compile 5.90 |
// 2.57); layer 2x256x1152 6.62 | 3.08 -> 6.37 | 3.14 (6.53 | 3.43).
// one_wave_shape: the one-wave launch's packs per thread and threads per row for a row
// of `packs` 16-byte packs (0 threads: the shape is outside the rule's range).
inline void one_wave_shape(int64_t D, int packs, int& vpt, int& tx) {
  vpt = (packs + 255) / 256;
  tx = D >= 1024 && D <= 2048 && vpt <= 2 ? round_up_32((packs + vpt - 1) / vpt) : 0;
}

// force_*: a tuning build's overrides (scripts/gpu/tune/adaln.patch; 0: the rule's choice).
// `resident_blocks(vpt, threads)`: blocks of adaln_rows at that many packs per thread and threads per block
// resident on the whole device at once (the host's occupancy query; asked only for
// shapes the one-wave rule may take).
template <typename ResidentFn>
inline Config choose_config(int64_t rows, int64_t D, int elem_size, bool aligned, ResidentFn resident_blocks,
                            int force_vpt = 0, int force_tx = 0, int force_ty = 0) {
  Config c{1, 1, 256, 1, rows};
  const int n = 16 / elem_size;
  if (!aligned || D % n != 0 || D / n > 256 * 8) return c;
  const int packs = (int)(D / n);
  if (force_vpt == 0 && force_tx == 0 && force_ty == 0) {
    int vpt = 0, tx = 0;
    one_wave_shape(D, packs, vpt, tx);
    if (tx > 0 && rows <= resident_blocks(vpt, tx)) return Config{0, vpt, tx, 1, rows};
  }
  int tx = force_tx > 0 && (force_tx <= 32 ? (force_tx & (force_tx - 1)) == 0 : force_tx % 32 == 0) ? force_tx : 0;
  // Packs per lane past 256: float32 at 4 (H200, RMS 1x6144x2048 27.02 -> 25.66 us against 8).
  const int lane_packs = elem_size == 4 ? 4 : 8;
  if (tx == 0) tx = packs <= 256 ? group_lanes(packs) : ((packs + lane_packs * 32 - 1) / (lane_packs * 32)) * 32;
  if (tx > 256) tx = 256;
  int vpt = force_vpt ? force_vpt : (packs + tx - 1) / tx;
  if ((int64_t)vpt * tx < packs) vpt = (packs + tx - 1) / tx;
  if (vpt > 8) return c;
  vpt = round_vpt(vpt);
  int ty = force_ty ? force_ty : (tx >= 128 ? 1 : 128 / tx);
  if (tx < 32 && tx * ty < 32) ty = 32 / tx;  // whole warps
  if (tx * ty > 256) ty = 256 / tx;
  while ((tx * ty) % 32) ++ty;  // every warp full: the shuffles take all 32 lanes
  c = Config{0, vpt, tx, ty, (rows + ty - 1) / ty};
  return c;
}

template <typename T, typename TC, bool RMS, bool EARLY>
inline void launch_rows(T* out, const T* x, const TC* scale, const TC* shift, const Params& p, const Config& c,
                        cudaStream_t stream) {
  const dim3 grid((unsigned)c.grid), block(c.tx, c.ty);
  switch (c.vpt) {
    case 1: adaln_rows<T, TC, RMS, 1, EARLY><<<grid, block, 0, stream>>>(out, x, scale, shift, p); break;
    case 2: adaln_rows<T, TC, RMS, 2, EARLY><<<grid, block, 0, stream>>>(out, x, scale, shift, p); break;
    case 4: adaln_rows<T, TC, RMS, 4, EARLY><<<grid, block, 0, stream>>>(out, x, scale, shift, p); break;
    case 6: adaln_rows<T, TC, RMS, 6, EARLY><<<grid, block, 0, stream>>>(out, x, scale, shift, p); break;
    default: adaln_rows<T, TC, RMS, 8, EARLY><<<grid, block, 0, stream>>>(out, x, scale, shift, p); break;
  }
}

template <typename T, typename TC, bool RMS>
inline cudaError_t launch(T* out, const T* x, const TC* scale, const TC* shift, const Params& p, const Config& c,
                          cudaStream_t stream) {
  if (c.kind == 1) {
    adaln_scalar<T, TC, RMS><<<(unsigned)p.rows, 256, 0, stream>>>(out, x, scale, shift, p);
  } else if (c.early) {
    launch_rows<T, TC, RMS, true>(out, x, scale, shift, p, c, stream);
  } else {
    launch_rows<T, TC, RMS, false>(out, x, scale, shift, p, c, stream);
  }
  return cudaGetLastError();
}

}  // namespace adaln_cuda
