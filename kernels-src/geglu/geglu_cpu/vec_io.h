// Loads and stores of bf16/fp16/fp32 rows as pairs of float vectors, so the
// arithmetic is written once, in float, for every dtype (at::vec).
#pragma once

#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

#include <tuple>
#include <type_traits>

namespace geglu_cpu {

using fVec = at::vec::Vectorized<float>;

// Elements consumed by one load(): two float vectors' worth.
template <typename T>
constexpr int64_t kStep = 2 * fVec::size();

template <typename T>
inline void load(const T* p, fVec& lo, fVec& hi) {
  if constexpr (std::is_same_v<T, float>) {
    lo = fVec::loadu(p);
    hi = fVec::loadu(p + fVec::size());
  } else {
    std::tie(lo, hi) = at::vec::convert_to_float<T>(at::vec::Vectorized<T>::loadu(p, kStep<T>));
  }
}

template <typename T>
inline void store(T* p, const fVec& lo, const fVec& hi) {
  if constexpr (std::is_same_v<T, float>) {
    lo.store(p);
    hi.store(p + fVec::size());
  } else {
    at::vec::convert_from_float<T>(lo, hi).store(p, kStep<T>);
  }
}

}  // namespace geglu_cpu
