// Helpers shared by the NN op tests (softmax, loss, pool, norm, random): strided host layouts,
// fp16 rounding and comparisons.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <cnrt.h>
#include <mlusim_ext.h>

#include "common/mlu_test.h"
#include "mlusim/sim/dtype.h"

namespace mlusim::mlu::testing {

using Dims = std::vector<std::int64_t>;

inline std::int64_t numel(const Dims& d) {
  return std::accumulate(d.begin(), d.end(), std::int64_t{1}, std::multiplies<>());
}

inline Dims contiguous_strides(const Dims& d) {
  Dims s(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * std::max<std::int64_t>(d[i + 1], 1);
  return s;
}

// Strides of a tensor whose memory order is `order` (outermost first), e.g. {1,0} = transposed
// 2-d; `gap` extra elements after each innermost run (a slice of a wider tensor).
inline Dims layout_strides(const Dims& d, const std::vector<int>& order, std::int64_t gap = 0) {
  Dims s(d.size(), 1);
  std::int64_t step = 1;
  for (int k = static_cast<int>(order.size()) - 1; k >= 0; --k) {
    s[order[k]] = step;
    step *= std::max<std::int64_t>(d[order[k]], 1);
    if (k == static_cast<int>(order.size()) - 1) step += gap;
  }
  return s;
}

inline std::size_t storage_elems(const Dims& d, const Dims& s) {
  if (numel(d) == 0) return 1;
  std::int64_t last = 0;
  for (std::size_t i = 0; i < d.size(); ++i) last += (d[i] - 1) * s[i];
  return static_cast<std::size_t>(last + 1);
}

// Offset in storage of logical row-major element `flat`.
inline std::int64_t storage_offset(const Dims& d, const Dims& s, std::int64_t flat) {
  std::int64_t off = 0;
  for (int i = static_cast<int>(d.size()) - 1; i >= 0; --i) {
    off += flat % d[i] * s[i];
    flat /= d[i];
  }
  return off;
}

// Logical row-major values placed into strided storage (unused slots hold `fill`).
template <class T>
std::vector<T> to_storage(const std::vector<float>& logical, const Dims& d, const Dims& s, float fill = 777.0f) {
  std::vector<T> out(storage_elems(d, s), static_cast<T>(fill));
  for (std::int64_t i = 0; i < numel(d); ++i) out[storage_offset(d, s, i)] = static_cast<T>(logical[i]);
  return out;
}

template <class T>
std::vector<float> from_storage(const std::vector<T>& storage, const Dims& d, const Dims& s) {
  std::vector<float> out(numel(d));
  for (std::int64_t i = 0; i < numel(d); ++i) out[i] = static_cast<float>(storage[storage_offset(d, s, i)]);
  return out;
}

inline float round_half(float v) { return static_cast<float>(sim::half(v)); }
inline std::vector<float> round_half(std::vector<float> v) {
  for (float& x : v) x = round_half(x);
  return v;
}

// |got - want| <= atol + rtol * |want| elementwise (NaN matches NaN, inf matches the same inf).
inline void expect_close(const std::vector<float>& got, const std::vector<double>& want, double atol, double rtol,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    bool ok;
    if (std::isnan(w))
      ok = std::isnan(g);
    else if (std::isinf(w))
      ok = g == w;
    else
      ok = std::abs(g - w) <= atol + rtol * std::abs(w);
    if (!ok && reported++ < 5) ADD_FAILURE() << what << ": element " << i << " got " << g << " want " << w;
  }
}

}  // namespace mlusim::mlu::testing
