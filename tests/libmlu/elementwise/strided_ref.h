// Host-side helpers for elementwise tests: naive strided indexing (independent of the library's
// iteration planner) and element conversions.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "mlusim/sim/dtype.h"

namespace mlusim::mlu::testing {

using half = sim::half;
using Dims = std::vector<std::int64_t>;

inline Dims contiguous_strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * std::max<std::int64_t>(dims[i + 1], 1);
  return s;
}

inline std::int64_t numel(const Dims& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

// Calls f(index) for every multi-index of dims in row-major order.
inline void for_each_index(const Dims& dims, const std::function<void(const Dims&)>& f) {
  if (numel(dims) == 0) return;
  Dims idx(dims.size(), 0);
  while (true) {
    f(idx);
    int d = static_cast<int>(dims.size()) - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Offset of idx (aligned at the last dim of `dims`, broadcast where the operand's dim is 1).
inline std::int64_t offset(const Dims& idx, const Dims& dims, const Dims& strides) {
  std::int64_t off = 0;
  const std::size_t shift = idx.size() - dims.size();
  for (std::size_t d = 0; d < dims.size(); ++d)
    if (dims[d] != 1) off += idx[d + shift] * strides[d];
  return off;
}

// Elements needed to hold a view with these dims and strides.
inline std::int64_t span(const Dims& dims, const Dims& strides) {
  if (numel(dims) == 0) return 0;
  std::int64_t last = 0;
  for (std::size_t d = 0; d < dims.size(); ++d) last += (dims[d] - 1) * strides[d];
  return last + 1;
}

inline float to_f(float v) { return v; }
inline float to_f(half v) { return static_cast<float>(v); }

}  // namespace mlusim::mlu::testing
