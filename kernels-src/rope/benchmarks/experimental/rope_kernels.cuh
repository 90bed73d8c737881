// Rotary embedding kernels, torch-free (rope.cu is the glue; its header
// comment gives the layouts and the table-row mapping).
//
// Every thread maps a flat work index to (row, channel, table row): five
// divisions. With 64-bit `/` and `%` those cost ~70 instructions each, about
// as many instructions as the rotation's loads, FMAs and stores together, so
// the previous kernel was bound by integer division at the text shapes (0.74
// of copy bandwidth at 1x32x4096x128; NOTES.md). Here each division is by an
// invariant divisor: a multiply-high and a shift (FastDiv), valid while every
// index fits in 31 bits; larger tensors take the same kernel with 64-bit
// division (WideDiv).
#pragma once

#include <cstdint>

#include "cuda_pack.cuh"

namespace rope_cuda {

// n / d for 0 <= n < 2^31 and 1 <= d < 2^31: with l = ceil(log2 d) and
// m = ceil(2^(31 + l) / d) (< 2^32), n / d == (n * m) >> (31 + l). The error
// n * (m - 2^(31+l)/d) / 2^(31+l) is below n / 2^(31+l) < 2^-l <= 1/d, too
// small to carry past the next integer.
struct FastDiv {
  uint32_t d, m, s;
  FastDiv() = default;
  explicit FastDiv(int64_t divisor) : d(static_cast<uint32_t>(divisor)) {
    uint32_t l = 0;
    while ((uint64_t(1) << l) < d) ++l;
    s = 31 + l;
    m = static_cast<uint32_t>(((uint64_t(1) << s) + d - 1) / d);
  }
  __device__ __forceinline__ int64_t div(int64_t n) const {
    return static_cast<int64_t>((static_cast<uint64_t>(static_cast<uint32_t>(n)) * m) >> s);
  }
  __device__ __forceinline__ int64_t get() const { return d; }
};

struct WideDiv {
  int64_t d;
  WideDiv() = default;
  explicit WideDiv(int64_t divisor) : d(divisor) {}
  __device__ __forceinline__ int64_t div(int64_t n) const { return n / d; }
  __device__ __forceinline__ int64_t get() const { return d; }
};

template <typename Div>
struct Shape {
  int64_t rows, C, D, R, inner, mid;
  Div per_row;      // work units per row of x
  Div inner_mid;    // inner * mid
  Div inner_d;      // inner
  Div r_d;          // R
  Div sub;          // interleaved: D / N packs per head; rotate_half: (D / 2) / N packs per half head
  __device__ __forceinline__ int64_t table_row(int64_t t) const {
    const int64_t q = inner_mid.div(t);
    const int64_t in = t - inner_d.div(t) * inner;
    const int64_t v = q * inner + in;
    return v - r_d.div(v) * R;
  }
};

// One thread: N channels (one 16-byte pack of x) and, for rotate_half, the
// N partner channels half a head away.
template <typename T, typename TC, bool INTERLEAVED, typename Div>
__global__ void rope_vec_kernel(T* out, const T* x, const TC* __restrict__ cos, const TC* __restrict__ sin,
                                Shape<Div> s) {
  constexpr int N = Pack16<T>::N;
  const int64_t half = s.D / 2;
  const int64_t per_row = s.per_row.get();
  const int64_t total = s.rows * per_row;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < total;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = s.per_row.div(u);
    const int64_t k = u - t * per_row;
    const int64_t trow = s.table_row(t);
    const TC* crow = cos + trow * s.D;
    const TC* srow = sin + trow * s.D;
    const T* xrow = x + t * s.C;
    T* orow = out + t * s.C;
    if constexpr (INTERLEAVED) {
      const int64_t c = k * N;
      const int64_t j = (k - s.sub.div(k) * s.sub.get()) * N;  // c % D
      float xv[N], cv[N], sv[N], ov[N];
      load_float<N>(xrow + c, xv);
      load_float<N>(crow + j, cv);
      load_float<N>(srow + j, sv);
#pragma unroll
      for (int i = 0; i < N; i += 2) {
        ov[i] = xv[i] * cv[i] - xv[i + 1] * sv[i];
        ov[i + 1] = xv[i + 1] * cv[i + 1] + xv[i] * sv[i + 1];
      }
      store_float<N>(orow + c, ov);
    } else {
      const int64_t head = s.sub.div(k);
      const int64_t j = (k - head * s.sub.get()) * N;
      const int64_t c = head * s.D + j;
      float x1[N], x2[N], c1[N], c2[N], s1[N], s2[N], o1[N], o2[N];
      load_float<N>(xrow + c, x1);
      load_float<N>(xrow + c + half, x2);
      load_float<N>(crow + j, c1);
      load_float<N>(crow + j + half, c2);
      load_float<N>(srow + j, s1);
      load_float<N>(srow + j + half, s2);
#pragma unroll
      for (int i = 0; i < N; ++i) {
        o1[i] = x1[i] * c1[i] - x2[i] * s1[i];
        o2[i] = x2[i] * c2[i] + x1[i] * s2[i];
      }
      store_float<N>(orow + c, o1);
      store_float<N>(orow + c + half, o2);
    }
  }
}

// One thread: one rotating pair. For shapes or pointers the packs don't fit.
// `sub` is the pairs per head (D / 2).
template <typename T, typename TC, bool INTERLEAVED, typename Div>
__global__ void rope_scalar_kernel(T* out, const T* x, const TC* __restrict__ cos, const TC* __restrict__ sin,
                                   Shape<Div> s) {
  const int64_t half = s.D / 2;
  const int64_t per_row = s.per_row.get();
  const int64_t total = s.rows * per_row;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < total;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = s.per_row.div(u);
    const int64_t p = u - t * per_row;
    const int64_t head = s.sub.div(p);
    const int64_t i = p - head * half;
    const int64_t a = INTERLEAVED ? 2 * i : i;  // first member, within the head
    const int64_t b = INTERLEAVED ? 2 * i + 1 : i + half;
    const int64_t trow = s.table_row(t);
    const TC* crow = cos + trow * s.D;
    const TC* srow = sin + trow * s.D;
    const int64_t base = t * s.C + head * s.D;
    const float xa = to_float(x[base + a]);
    const float xb = to_float(x[base + b]);
    out[base + a] = from_float<T>(xa * to_float(crow[a]) - xb * to_float(srow[a]));
    out[base + b] = from_float<T>(xb * to_float(crow[b]) + xa * to_float(srow[b]));
  }
}

// rows, C, D, R, inner, mid as rope.cu describes them; `vec`: the pack path.
template <typename Div>
inline Shape<Div> make_shape(int64_t rows, int64_t C, int64_t D, int64_t R, int64_t inner, int64_t mid, bool vec,
                             bool interleaved, int pack) {
  Shape<Div> s{rows, C, D, R, inner, mid, Div(1), Div(inner * mid), Div(inner), Div(R), Div(1)};
  const int64_t per_row = vec ? (interleaved ? C / pack : C / (2 * pack)) : C / 2;
  s.per_row = Div(per_row);
  s.sub = Div(vec ? (interleaved ? D / pack : (D / 2) / pack) : D / 2);
  return s;
}

// Whether every index and divisor of the launch fits FastDiv's 31 bits.
inline bool fits_fast(int64_t rows, int64_t C, int64_t R, int64_t inner, int64_t mid) {
  const int64_t lim = int64_t(1) << 31;
  return rows * C < lim && inner * mid < lim && R < lim && rows + inner < lim;
}

template <typename T, typename TC, typename Div>
inline cudaError_t launch_with(T* out, const T* x, const TC* cos, const TC* sin, const Shape<Div>& s, bool vec,
                               bool interleaved, int sms, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t units = s.rows * s.per_row.get();
  // Enough blocks to fill the GPU several times over; the loop strides the rest.
  int64_t blocks = (units + kThreads - 1) / kThreads;
  if (blocks > (int64_t)sms * 32) blocks = (int64_t)sms * 32;
  const dim3 grid(static_cast<unsigned>(blocks > 1 ? blocks : 1));
  if (vec) {
    if (interleaved) rope_vec_kernel<T, TC, true, Div><<<grid, kThreads, 0, stream>>>(out, x, cos, sin, s);
    else rope_vec_kernel<T, TC, false, Div><<<grid, kThreads, 0, stream>>>(out, x, cos, sin, s);
  } else {
    if (interleaved) rope_scalar_kernel<T, TC, true, Div><<<grid, kThreads, 0, stream>>>(out, x, cos, sin, s);
    else rope_scalar_kernel<T, TC, false, Div><<<grid, kThreads, 0, stream>>>(out, x, cos, sin, s);
  }
  return cudaGetLastError();
}

template <typename T, typename TC>
inline cudaError_t launch(T* out, const T* x, const TC* cos, const TC* sin, int64_t rows, int64_t C, int64_t D,
                          int64_t R, int64_t inner, int64_t mid, bool interleaved, int sms, cudaStream_t stream) {
  constexpr int N = Pack16<T>::N;
  // The vector path needs each pack inside one head (interleaved: D % N;
  // rotate_half: each half a whole number of packs) and aligned pointers.
  const bool fits = interleaved ? D % N == 0 : (D / 2) % N == 0;
  const bool vec = fits && is_aligned16(out) && is_aligned16(x) && is_aligned16(cos) && is_aligned16(sin);
  if (fits_fast(rows, C, R, inner, mid)) {
    return launch_with<T, TC, FastDiv>(out, x, cos, sin,
                                       make_shape<FastDiv>(rows, C, D, R, inner, mid, vec, interleaved, N), vec,
                                       interleaved, sms, stream);
  }
  return launch_with<T, TC, WideDiv>(out, x, cos, sin,
                                     make_shape<WideDiv>(rows, C, D, R, inner, mid, vec, interleaved, N), vec,
                                     interleaved, sms, stream);
}

}  // namespace rope_cuda
