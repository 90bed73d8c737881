// GEGLU kernels, torch-free (geglu.cu is the glue): out = gelu(gate) * value.
//
// GELU in both forms, branch-free and without erff / tanhf:
//  * erf form: gelu(x) = x * Phi(x), Phi from erfc(z), z = |x| / sqrt 2, as
//    erfc(z) = t * exp(P(t) - z^2), t = 1 / (1 + 0.47047 z), P a degree-7
//    polynomial fitted here (minimax in float64 for z in [0, 10]; NOTES.md):
//    relative error of erfc below 2.7e-7 at every argument, so Phi keeps full
//    relative accuracy in the negative tail, where 0.5 x (1 + erf(x / sqrt 2))
//    cancels (a float32 simulation of this code against float64: norm error
//    9e-9, worst relative 2e-5 at x = -12.8; the float32 textbook formula
//    rounds 4.5 % of fp16 results differently from float64, this code 0.01 %);
//  * tanh form: 0.5 x (1 + tanh(u)) == x / (1 + exp(-2u)), likewise without
//    the cancellation.
// libdevice's erff (branch-free selects of two degree-7 polynomials, then an
// exp2 and 1 - e) took ~25 instructions per element; this takes ~18, with two
// MUFU operations. `gelu_precise` is the textbook formula, which only the tuning
// patch launches (scripts/gpu/tune/geglu.patch: GEGLU_CONFIG's third field).
#pragma once

#include <cstdint>

#include "cuda_pack.cuh"

namespace geglu_cuda {

template <bool TANH>
__device__ __forceinline__ float gelu_precise(float x) {
  if constexpr (TANH) {
    const float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
  } else {
    return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
  }
}

template <bool TANH>
__device__ __forceinline__ float gelu_fast(float x) {
  if constexpr (TANH) {
    const float u = 0.7978845608028654f * fmaf(0.044715f * x, x * x, x);
    // exp(-2u) overflows to inf for x << 0: x / inf is -0, GELU's limit.
    return __fdividef(x, 1.0f + exp2f(-2.8853900817779268f * u));
  } else {
    const float z = fabsf(x) * 0.7071067811865476f;
    const float t = __fdividef(1.0f, fmaf(0.47047f, z, 1.0f));
    float p = -0.19460013508796692f;
    p = fmaf(p, t, 0.8598256707191467f);
    p = fmaf(p, t, -1.3391395807266235f);
    p = fmaf(p, t, 0.7354217767715454f);
    p = fmaf(p, t, -0.1807941496372223f);
    p = fmaf(p, t, 0.45270365476608276f);
    p = fmaf(p, t, 0.9926140904426575f);
    p = fmaf(p, t, -1.32603120803833f);
    const float e = t * exp2f(1.4426950408889634f * fmaf(-z, z, p));  // erfc(z)
    const float phi = x >= 0.f ? fmaf(-0.5f, e, 1.0f) : 0.5f * e;
    return x * phi;
  }
}

template <bool TANH, bool PRECISE>
__device__ __forceinline__ float gelu(float x) {
  if constexpr (PRECISE) return gelu_precise<TANH>(x);
  else return gelu_fast<TANH>(x);
}

// grid (ceil(d_vec / (threads * VPT)), min(rows, 65535)); each thread VPT
// packs of one row, both halves' loads issued before any use. I, LOOP: the
// offsets' type and whether blocks stride over rows (false: one row each).
template <typename T, bool TANH, bool GATE_FIRST, int VPT, bool PRECISE = false, typename I = int64_t,
          bool LOOP = true>
__global__ void __launch_bounds__(256) geglu_vec(T* __restrict__ out, const T* __restrict__ in, int64_t rows_,
                                                 int64_t d_) {
  constexpr int N = Pack16<T>::N;
  const I rows = (I)rows_, d = (I)d_;
  const I d_vec = d / N;
  const I col0 = static_cast<I>(blockIdx.x) * blockDim.x * VPT + threadIdx.x;
  for (I row = blockIdx.y; !LOOP || row < rows; row += gridDim.y) {
    const Pack16<T>* value = reinterpret_cast<const Pack16<T>*>(in + row * 2 * d + (GATE_FIRST ? d : 0));
    const Pack16<T>* gate = reinterpret_cast<const Pack16<T>*>(in + row * 2 * d + (GATE_FIRST ? 0 : d));
    Pack16<T>* o = reinterpret_cast<Pack16<T>*>(out + row * d);
    Pack16<T> v[VPT], g[VPT];
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const I c = col0 + (I)k * blockDim.x;
      if (c < d_vec) {
        v[k] = value[c];
        g[k] = gate[c];
      }
    }
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const I c = col0 + (I)k * blockDim.x;
      if (c < d_vec) {
        Pack16<T> r;
#pragma unroll
        for (int i = 0; i < N; ++i) r.v[i] = from_float<T>(gelu<TANH, PRECISE>(to_float(g[k].v[i])) * to_float(v[k].v[i]));
        o[c] = r;
      }
    }
    if constexpr (!LOOP) break;
  }
}

template <typename T, bool TANH, bool GATE_FIRST>
__global__ void geglu_scalar(T* __restrict__ out, const T* __restrict__ in, int64_t rows, int64_t d) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= d) return;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const T* row_in = in + row * 2 * d;
    const float value = to_float(row_in[(GATE_FIRST ? d : 0) + col]);
    const float gate = to_float(row_in[(GATE_FIRST ? 0 : d) + col]);
    out[row * d + col] = from_float<T>(gelu<TANH, false>(gate) * value);
  }
}

// Launch shape: 2 packs per thread in blocks of ~128 threads (H200, call 1 of
// issue 19: 4096x16384 erf 52.6 us against 54.4 with 256 threads, 56.3 with one
// pack), the block size chosen so that the row's packs fill whole blocks (SDXL's
// 640 packs: two blocks of 160 rather than 3 of 128 or 2 of 256, one of them a
// quarter full); when that gives fewer blocks than two per multiprocessor
// (decode batches), one pack per thread in 128-thread blocks.
struct Config {
  int vpt, threads;
  bool precise;  // the textbook GELU (launched only by scripts/gpu/tune/geglu.patch)
};

inline int block_threads(int64_t d_vec, int vpt) {
  int best = 128;
  int64_t best_waste = -1;
  for (int t : {128, 160, 96, 192, 224, 256}) {
    const int64_t per = (int64_t)t * vpt;
    const int64_t waste = (d_vec + per - 1) / per * per - d_vec;
    if (best_waste < 0 || waste < best_waste) { best = t; best_waste = waste; }
  }
  return best;
}

inline Config choose_config(int64_t rows, int64_t d_vec, int sms, int force_vpt = 0, int force_threads = 0) {
  Config c{2, block_threads(d_vec, 2), false};
  const int64_t blocks = (d_vec + 2 * c.threads - 1) / (2 * c.threads) * (rows < 65535 ? rows : 65535);
  if (blocks < 2 * (int64_t)sms) c = Config{1, 128, false};
  if (force_vpt == 1 || force_vpt == 2 || force_vpt == 4) c.vpt = force_vpt;
  if (force_threads >= 32 && force_threads <= 256 && force_threads % 32 == 0) c.threads = force_threads;
  return c;
}

template <typename T, bool TANH, bool GATE_FIRST>
inline cudaError_t launch(T* out, const T* in, int64_t rows, int64_t d, const Config& c, bool vec,
                          cudaStream_t stream) {
  constexpr int N = Pack16<T>::N;
  const unsigned gy = static_cast<unsigned>(rows < 65535 ? rows : 65535);
  if (!vec) {
    const dim3 grid(static_cast<unsigned>((d + 255) / 256), gy);
    geglu_scalar<T, TANH, GATE_FIRST><<<grid, 256, 0, stream>>>(out, in, rows, d);
    return cudaGetLastError();
  }
  const int64_t per_block = (int64_t)c.threads * c.vpt;
  const dim3 grid(static_cast<unsigned>((d / N + per_block - 1) / per_block), gy);
  // 32-bit offsets and no row loop where the grid covers every row and the offsets fit
  // (H200: 4096x16384 52.1 -> 48.3 us, decode 8x28672 under graph replay 1.83 -> 1.57).
  if (rows <= 65535 && rows * 2 * d < (int64_t(1) << 31)) {
    if (c.vpt == 1) geglu_vec<T, TANH, GATE_FIRST, 1, false, int32_t, false><<<grid, c.threads, 0, stream>>>(out, in, rows, d);
    else if (c.vpt == 2) geglu_vec<T, TANH, GATE_FIRST, 2, false, int32_t, false><<<grid, c.threads, 0, stream>>>(out, in, rows, d);
    else geglu_vec<T, TANH, GATE_FIRST, 4, false, int32_t, false><<<grid, c.threads, 0, stream>>>(out, in, rows, d);
    return cudaGetLastError();
  }
  if (c.vpt == 1) geglu_vec<T, TANH, GATE_FIRST, 1><<<grid, c.threads, 0, stream>>>(out, in, rows, d);
  else if (c.vpt == 2) geglu_vec<T, TANH, GATE_FIRST, 2><<<grid, c.threads, 0, stream>>>(out, in, rows, d);
  else geglu_vec<T, TANH, GATE_FIRST, 4><<<grid, c.threads, 0, stream>>>(out, in, rows, d);
  return cudaGetLastError();
}

}  // namespace geglu_cuda
