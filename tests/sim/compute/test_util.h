// Helpers shared by the compute block tests: seeded random data and fp16 tolerances.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "mlusim/sim/dtype.h"

namespace mlusim::sim::compute::testing {

inline std::vector<float> random_floats(std::size_t n, float lo, float hi, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<half> to_half(const std::vector<float>& v) {
  std::vector<half> h(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) h[i] = half(v[i]);
  return h;
}

template <class T>
std::vector<T> random_ints(std::size_t n, std::int64_t lo, std::int64_t hi, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> dist(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(dist(rng));
  return v;
}

// One unit in the last place of fp16 at magnitude |x| (normal range; 2^-24 for subnormals).
inline double half_ulp(double x) {
  const double ax = std::fabs(x);
  if (ax < std::ldexp(1.0, -14)) return std::ldexp(1.0, -24);
  return std::ldexp(1.0, static_cast<int>(std::floor(std::log2(ax))) - 10);
}

// Wraps a 64-bit value to T as two's complement hardware does.
template <class T> T wrap(std::int64_t v) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<std::uint64_t>(v)));
}

}  // namespace mlusim::sim::compute::testing
