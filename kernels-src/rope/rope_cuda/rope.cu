// Rotary position embedding on CUDA, applied with precomputed full-width
// cos/sin tables (the diffusers/LTX-Video and transformers convention: one
// cos and one sin value per channel, pairs sharing an angle repeat it).
//
//   x:   [T, C] rows (any leading dims flattened), C = G * D (G heads of D,
//        or G = 1 when the table spans all channels, as LTX-Video's does)
//   cos, sin: [R, D], float32 or x's dtype
//   row t of x uses table row ((t / (inner * mid)) * inner + t % inner) % R,
//   which covers tables shared over a batch ([S, D]), per sample ([B, S, D]),
//   and broadcast over heads in between ([B, 1, S, D] against [B, H, S, D]).
//
// interleaved (LTX-Video, GPT-J): channel pairs (2i, 2i+1) rotate together.
// otherwise (rotate_half, GPT-NeoX/Llama): channels j and j + D/2 do.
// `out` may be `x` (in place): each thread reads both members of a pair
// before it writes either.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/DeviceGuard.h>
#include <ATen/core/Tensor.h>

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_pack.cuh"

namespace {

using rope_cuda::Pack16;
using rope_cuda::from_float;
using rope_cuda::is_aligned16;
using rope_cuda::load_float;
using rope_cuda::store_float;
using rope_cuda::to_float;

struct Shape {
  int64_t rows, C, D, R, inner, mid;
  __device__ __forceinline__ int64_t table_row(int64_t t) const {
    return ((t / (inner * mid)) * inner + t % inner) % R;
  }
};

// The rotation of one 16-byte pack: interleaved pairs (2i, 2i+1) of x at
// `xp` with the table values at `cp`/`sp`, into `op`.
template <int N, typename T, typename TC>
__device__ __forceinline__ void rotate_interleaved(T* op, const T* xp, const TC* cp, const TC* sp) {
  float xv[N], cv[N], sv[N], ov[N];
  load_float<N>(xp, xv);
  load_float<N>(cp, cv);
  load_float<N>(sp, sv);
#pragma unroll
  for (int i = 0; i < N; i += 2) {
    ov[i] = xv[i] * cv[i] - xv[i + 1] * sv[i];
    ov[i + 1] = xv[i + 1] * cv[i + 1] + xv[i] * sv[i + 1];
  }
  store_float<N>(op, ov);
}

// rotate_half's pack j and its partner j + half, both read before either is
// written (so `op` may be `xp`: in place).
template <int N, typename T, typename TC>
__device__ __forceinline__ void rotate_half_pair(T* op, const T* xp, const TC* cp, const TC* sp, int64_t half) {
  float x1[N], x2[N], c1[N], c2[N], s1[N], s2[N], o1[N], o2[N];
  load_float<N>(xp, x1);
  load_float<N>(xp + half, x2);
  load_float<N>(cp, c1);
  load_float<N>(cp + half, c2);
  load_float<N>(sp, s1);
  load_float<N>(sp + half, s2);
#pragma unroll
  for (int i = 0; i < N; ++i) {
    o1[i] = x1[i] * c1[i] - x2[i] * s1[i];
    o2[i] = x2[i] * c2[i] + x1[i] * s2[i];
  }
  store_float<N>(op, o1);
  store_float<N>(op + half, o2);
}

// One thread: N channels (one 16-byte pack of x) and, for rotate_half, the
// N partner channels half a head away.
template <typename T, typename TC, bool INTERLEAVED>
__global__ void rope_vec_kernel(T* out, const T* x, const TC* __restrict__ cos, const TC* __restrict__ sin,
                                Shape s) {
  constexpr int N = Pack16<T>::N;
  const int64_t half = s.D / 2;
  const int64_t per_row = INTERLEAVED ? s.C / N : s.C / (2 * N);
  const int64_t total = s.rows * per_row;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < total;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = u / per_row;
    const int64_t k = u - t * per_row;
    const int64_t trow = s.table_row(t);
    const TC* crow = cos + trow * s.D;
    const TC* srow = sin + trow * s.D;
    const T* xrow = x + t * s.C;
    T* orow = out + t * s.C;
    if constexpr (INTERLEAVED) {
      const int64_t c = k * N;
      const int64_t j = c % s.D;
      rotate_interleaved<N>(orow + c, xrow + c, crow + j, srow + j);
    } else {
      const int64_t packs_per_half = half / N;
      const int64_t head = k / packs_per_half;
      const int64_t j = (k - head * packs_per_half) * N;
      const int64_t c = head * s.D + j;
      rotate_half_pair<N>(orow + c, xrow + c, crow + j, srow + j, half);
    }
  }
}

// The rows as a slab grid, for the launches whose index arithmetic bounds the
// flat kernel (NOTES.md, version 3: five 64-bit divisions per 16-byte pack, on
// the critical path of a decode step and ~8 % of a text prefill). Row
// t = (o * mid + m) * inner + i holds G = C / D heads; blockIdx.z = o, and the
// block's y threads pick head-rows: (i, g) of chunk blockIdx.x with
// m = blockIdx.y, or, where a slab has a single head-row (inner * G == 1, a
// decode step), m itself. threadIdx.x walks the head's 16-byte packs. The
// table row is o * o_stride + i, wrapped modulo R only where the host could
// not rule out running past it: no division per pack.
struct Slab {
  int64_t rows, C, D, R, inner, mid, o_stride;
  int G;
  bool wrap, y_is_mid;
};

// How a thread covers rotate_half's pairs (j, j + D/2): SPLIT computes one
// output pack (reading x at j and at its partner, which the partner's thread
// reads too: half the registers of PAIR, twice the resident threads); PAIR
// computes both, reading both before writing either, as in place needs.
enum class Pairing { kInterleaved, kSplit, kPair };

// I: the index type, int32_t where every offset of x and of the tables fits
// (fewer instructions per pack; the host checks), int64_t otherwise.
// FORM: where the slab's y_is_mid and wrap come from: kFormRuntime the Slab
// (wrapped slabs); kFormDecode / kFormPlain compile-time (y_is_mid and no wrap / neither).
constexpr int kFormRuntime = 0, kFormDecode = 1, kFormPlain = 2;
// DH: the head width compiled in (0: s.D), only where the block's x threads are exactly
// one head's units (the host checks), so each thread takes one unit without a loop.
template <typename T, typename TC, Pairing P, typename I, int FORM = kFormRuntime, int DH = 0>
__global__ void __launch_bounds__(256) rope_slab_kernel(T* out, const T* x, const TC* __restrict__ cos,
                                                        const TC* __restrict__ sin, Slab s) {
  constexpr int N = Pack16<T>::N;
  const bool y_is_mid = FORM == kFormRuntime ? s.y_is_mid : FORM == kFormDecode;
  const bool wrap = FORM == kFormRuntime ? s.wrap : false;
  // Fits 32 bits: the host launches this kernel only for inner * G (or mid) < 2^31.
  const unsigned q = blockIdx.x * blockDim.y + threadIdx.y;
  unsigned i = 0, g = 0;
  I m;
  if (y_is_mid) {
    if (q >= static_cast<unsigned>(s.mid)) return;
    m = q;
  } else {
    if (q >= static_cast<unsigned>(s.inner * s.G)) return;
    i = q;
    if (s.G > 1) {
      i = q / static_cast<unsigned>(s.G);
      g = q - i * static_cast<unsigned>(s.G);
    }
    m = blockIdx.y;
  }
  const I t = (static_cast<I>(blockIdx.z) * static_cast<I>(s.mid) + m) * static_cast<I>(s.inner) + static_cast<I>(i);
  if (t >= static_cast<I>(s.rows)) return;
  I trow = static_cast<I>(blockIdx.z) * static_cast<I>(s.o_stride) + static_cast<I>(i);
  if (wrap) trow %= static_cast<I>(s.R);
  const I D = DH > 0 ? static_cast<I>(DH) : static_cast<I>(s.D);
  const I head = t * static_cast<I>(s.C) + static_cast<I>(g) * D;
  const T* xh = x + head;
  T* oh = out + head;
  const TC* ch = cos + trow * D;
  const TC* sh = sin + trow * D;
  const int half = DH > 0 ? DH / 2 : static_cast<int>(s.D / 2);
  const int units = P == Pairing::kPair ? half / N : (DH > 0 ? DH : static_cast<int>(s.D)) / N;
  for (int k = threadIdx.x; DH > 0 ? k == static_cast<int>(threadIdx.x) : k < units;
       k += DH > 0 ? static_cast<unsigned>(units) : blockDim.x) {
    const int j = k * N;
    if constexpr (P == Pairing::kInterleaved) {
      rotate_interleaved<N>(oh + j, xh + j, ch + j, sh + j);
    } else if constexpr (P == Pairing::kSplit) {
      // out[j] = x[j] cos[j] - x[j + D/2] sin[j] in the first half,
      // x[j] cos[j] + x[j - D/2] sin[j] in the second.
      const bool first = j < half;
      float xv[N], pv[N], cv[N], sv[N], ov[N];
      load_float<N>(xh + j, xv);
      load_float<N>(xh + (first ? j + half : j - half), pv);
      load_float<N>(ch + j, cv);
      load_float<N>(sh + j, sv);
      const float sign = first ? -1.f : 1.f;
#pragma unroll
      for (int e = 0; e < N; ++e) ov[e] = xv[e] * cv[e] + sign * pv[e] * sv[e];
      store_float<N>(oh + j, ov);
    } else {
      rotate_half_pair<N>(oh + j, xh + j, ch + j, sh + j, half);
    }
  }
}

// One thread: one rotating pair. For shapes or pointers the packs don't fit.
template <typename T, typename TC, bool INTERLEAVED>
__global__ void rope_scalar_kernel(T* out, const T* x, const TC* __restrict__ cos, const TC* __restrict__ sin,
                                   Shape s) {
  const int64_t half = s.D / 2;
  const int64_t per_row = s.C / 2;
  const int64_t total = s.rows * per_row;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < total;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = u / per_row;
    const int64_t p = u - t * per_row;
    const int64_t head = p / half;
    const int64_t i = p - head * half;
    const int64_t a = INTERLEAVED ? 2 * i : i;      // first member, within the head
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

// The slab form of a launch (rope_slab_kernel), or false where the flat
// kernel is the one to run: slabs too small to fill a block of head-rows, and
// grids past CUDA's y/z limits.
inline bool plan_slab(const Shape& s, int units_per_head, Slab& slab, dim3& grid, dim3& block) {
  constexpr int64_t kMaxYZ = 65535;
  const int64_t G = s.C / s.D;
  int64_t inner = s.inner, mid = s.mid, outer = 1, o_stride = s.inner;
  bool wrap = false;
  if (mid == 1) {
    // Table row t % R: as a slab of R rows repeated rows / R times where that
    // is exact (no wrap); otherwise one slab of all rows, wrapped.
    if (s.rows % s.R == 0 && s.rows / s.R <= kMaxYZ) {
      inner = s.R; mid = s.rows / s.R; o_stride = 0;
    } else {
      inner = s.rows; wrap = s.rows > s.R;
    }
  } else {
    outer = (s.rows + inner * mid - 1) / (inner * mid);
    wrap = outer * inner > s.R;
  }
  const bool y_is_mid = inner * G == 1;  // a decode step: one position per sample
  // 256 threads for a decode step too: 128 or 64 (torch.compile's decode shape) were no faster
  // on the H200 (NOTES.md).
  const int threads = 256;
  const int tx = units_per_head < threads ? units_per_head : threads;
  const int ty = threads / tx;
  const int64_t ys = y_is_mid ? mid : inner * G;
  if (outer > kMaxYZ || (!y_is_mid && mid > kMaxYZ) || ys >= (int64_t(1) << 31) - 256) return false;
  if (ys < ty && !y_is_mid) return false;
  slab = Slab{s.rows, s.C, s.D, s.R, inner, mid, o_stride, static_cast<int>(G), wrap, y_is_mid};
  grid = dim3(static_cast<unsigned>((ys + ty - 1) / ty), static_cast<unsigned>(y_is_mid ? 1 : mid),
              static_cast<unsigned>(outer));
  block = dim3(static_cast<unsigned>(tx), static_cast<unsigned>(ty));
  return true;
}

template <typename T, typename TC, typename I, int FORM = kFormRuntime, int DH = 0>
void launch_slab(Pairing pairing, dim3 grid, dim3 block, cudaStream_t stream, T* out, const T* x, const TC* cos,
                 const TC* sin, const Slab& slab) {
  // y_is_mid and wrap compile-time where the launch allows: a decode step's loads no longer
  // wait on their runtime branches (decode 1x32 under graph replay 1.52 -> 1.30 us, H200).
  if constexpr (FORM == kFormRuntime) {
    if (!slab.wrap) {
      if (slab.y_is_mid) launch_slab<T, TC, I, kFormDecode>(pairing, grid, block, stream, out, x, cos, sin, slab);
      else launch_slab<T, TC, I, kFormPlain>(pairing, grid, block, stream, out, x, cos, sin, slab);
      return;
    }
  }
  // A decode step at head width 128 compiled in: no run-time D/2, packs per head or loop
  // bound before the first load (decode 0.23-0.29 us faster flushed, H200). One head's units
  // of width 128 exactly across the block's x threads (plan_slab's tx).
  if constexpr (FORM == kFormDecode && DH == 0) {
    constexpr int N = Pack16<T>::N;
    const unsigned units = pairing == Pairing::kPair ? 64 / N : 128 / N;
    if (slab.D == 128 && block.x == units) {
      launch_slab<T, TC, I, kFormDecode, 128>(pairing, grid, block, stream, out, x, cos, sin, slab);
      return;
    }
  }
  if (pairing == Pairing::kInterleaved)
    rope_slab_kernel<T, TC, Pairing::kInterleaved, I, FORM, DH><<<grid, block, 0, stream>>>(out, x, cos, sin, slab);
  else if (pairing == Pairing::kSplit)
    rope_slab_kernel<T, TC, Pairing::kSplit, I, FORM, DH><<<grid, block, 0, stream>>>(out, x, cos, sin, slab);
  else
    rope_slab_kernel<T, TC, Pairing::kPair, I, FORM, DH><<<grid, block, 0, stream>>>(out, x, cos, sin, slab);
}

template <typename T, typename TC>
void launch(T* out, const T* x, const TC* cos, const TC* sin, const Shape& s, bool interleaved,
            cudaStream_t stream) {
  constexpr int kThreads = 256;
  constexpr int N = Pack16<T>::N;
  // The vector path needs each pack inside one head (interleaved: D % N;
  // rotate_half: each half a whole number of packs) and aligned pointers.
  const bool fits = interleaved ? s.D % N == 0 : (s.D / 2) % N == 0;
  const bool vec = fits && is_aligned16(out) && is_aligned16(x) && is_aligned16(cos) && is_aligned16(sin);
  const int64_t units = vec ? s.rows * (interleaved ? s.C / N : s.C / (2 * N)) : s.rows * (s.C / 2);
  int sms = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, c10::cuda::current_device()));
  // Enough blocks to fill the GPU several times over; the loop strides the rest.
  const int64_t blocks = std::min<int64_t>((units + kThreads - 1) / kThreads, static_cast<int64_t>(sms) * 32);
  const dim3 grid(static_cast<unsigned>(std::max<int64_t>(blocks, 1)));
  Slab slab;
  dim3 sgrid, sblock;
  // In place (out == x), rotate_half keeps one thread per pair: a thread
  // must read both members before either is written.
  const bool in_place = static_cast<const void*>(out) == static_cast<const void*>(x);
  const Pairing pairing = interleaved ? Pairing::kInterleaved : (in_place ? Pairing::kPair : Pairing::kSplit);
  const int units_per_head = static_cast<int>(pairing == Pairing::kPair ? s.D / (2 * N) : s.D / N);
  if (vec && plan_slab(s, units_per_head, slab, sgrid, sblock)) {
    // Every offset below 2^31 (x: rows * C plus a block's reach; tables: R * D).
    const bool idx32 = s.rows * s.C < (int64_t(1) << 31) - 4096 && s.R * s.D < (int64_t(1) << 31) - 4096;
    if (idx32) launch_slab<T, TC, int32_t>(pairing, sgrid, sblock, stream, out, x, cos, sin, slab);
    else launch_slab<T, TC, int64_t>(pairing, sgrid, sblock, stream, out, x, cos, sin, slab);
  } else if (vec) {
    if (interleaved) rope_vec_kernel<T, TC, true><<<grid, kThreads, 0, stream>>>(out, x, cos, sin, s);
    else rope_vec_kernel<T, TC, false><<<grid, kThreads, 0, stream>>>(out, x, cos, sin, s);
  } else {
    if (interleaved) rope_scalar_kernel<T, TC, true><<<grid, kThreads, 0, stream>>>(out, x, cos, sin, s);
    else rope_scalar_kernel<T, TC, false><<<grid, kThreads, 0, stream>>>(out, x, cos, sin, s);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, typename AtT>
void dispatch_table(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                    const Shape& s, bool interleaved, cudaStream_t stream) {
  T* o = reinterpret_cast<T*>(out.data_ptr<AtT>());
  const T* xi = reinterpret_cast<const T*>(x.data_ptr<AtT>());
  if (cos.scalar_type() == at::ScalarType::Float) {
    launch<T, float>(o, xi, cos.data_ptr<float>(), sin.data_ptr<float>(), s, interleaved, stream);
  } else {
    launch<T, T>(o, xi, reinterpret_cast<const T*>(cos.data_ptr<AtT>()),
                 reinterpret_cast<const T*>(sin.data_ptr<AtT>()), s, interleaved, stream);
  }
}

}  // namespace

void rope(at::Tensor& out, at::Tensor const& x, at::Tensor const& cos, at::Tensor const& sin,
          bool interleaved, int64_t inner, int64_t mid) {
  TORCH_CHECK(x.is_cuda() && out.is_cuda() && cos.is_cuda() && sin.is_cuda(),
              "rope: tensors must be on a CUDA device");
  TORCH_CHECK(x.device() == out.device() && x.device() == cos.device() && x.device() == sin.device(),
              "rope: tensors must be on the same device");
  TORCH_CHECK(x.is_contiguous() && out.is_contiguous() && cos.is_contiguous() && sin.is_contiguous(),
              "rope: tensors must be contiguous");
  TORCH_CHECK(out.scalar_type() == x.scalar_type() && out.sizes() == x.sizes(),
              "rope: out must match x in shape and dtype");
  TORCH_CHECK(cos.scalar_type() == sin.scalar_type() && cos.sizes() == sin.sizes(),
              "rope: cos and sin must match in shape and dtype");
  TORCH_CHECK(cos.scalar_type() == at::ScalarType::Float || cos.scalar_type() == x.scalar_type(),
              "rope: cos/sin must be float32 or x's dtype, got ", cos.scalar_type());
  TORCH_CHECK(x.dim() >= 1 && cos.dim() >= 1, "rope: x and cos need a channel dimension");
  const int64_t C = x.size(-1);
  const int64_t D = cos.size(-1);
  TORCH_CHECK(D > 0 && D % 2 == 0 && C % D == 0, "rope: the table width (", D,
              ") must be even and divide x's last dimension (", C, ")");
  TORCH_CHECK(inner >= 1 && mid >= 1, "rope: inner and mid must be positive");
  if (x.numel() == 0) return;
  const Shape s{x.numel() / C, C, D, cos.numel() / D, inner, mid};
  TORCH_CHECK(s.R >= 1, "rope: empty cos/sin table");
  const c10::cuda::OptionalCUDAGuard guard(device_of(x));
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  switch (x.scalar_type()) {
    case at::ScalarType::Float:
      launch<float, float>(out.data_ptr<float>(), x.data_ptr<float>(), cos.data_ptr<float>(),
                           sin.data_ptr<float>(), s, interleaved, stream);
      break;
    case at::ScalarType::Half:
      dispatch_table<__half, at::Half>(out, x, cos, sin, s, interleaved, stream);
      break;
    case at::ScalarType::BFloat16:
      dispatch_table<__nv_bfloat16, at::BFloat16>(out, x, cos, sin, s, interleaved, stream);
      break;
    default:
      TORCH_CHECK(false, "rope: unsupported dtype ", x.scalar_type(), " (float32, float16, bfloat16)");
  }
}
