// Bulk fp16 <-> fp32 conversion (F16C or generic path, whichever this host takes) against
// Eigen::half's element-wise conversion.
#include "compute/half_convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace mlusim::sim::compute {
namespace {

std::uint16_t half_bits(half h) {
  std::uint16_t u;
  std::memcpy(&u, &h, sizeof u);
  return u;
}

TEST(HalfConvert, EveryHalfWidensExactly) {
  std::vector<half> all(65536 + 3);  // + 3: a tail that is not a multiple of the SIMD width
  for (std::uint32_t i = 0; i < all.size(); ++i) {
    const auto bits = static_cast<std::uint16_t>(i & 0xffff);
    std::memcpy(static_cast<void*>(&all[i]), &bits, sizeof bits);
  }
  std::vector<float> wide(all.size());
  halves_to_floats(all.data(), wide.data(), all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    const float want = static_cast<float>(all[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(wide[i])) << i;
    } else {
      ASSERT_EQ(std::memcmp(&wide[i], &want, sizeof want), 0) << "bits " << std::hex << i;
    }
  }
}

TEST(HalfConvert, NarrowingRoundsLikeEigenHalf) {
  std::vector<float> x = {0.0f, -0.0f, 1.0f + std::ldexp(1.0f, -11), 1.0f + 3 * std::ldexp(1.0f, -11),
                          65504.0f, 65519.99f, 65520.0f, -1e9f, std::ldexp(1.0f, -25),
                          std::ldexp(3.0f, -26), std::ldexp(1.0f, -15), 5.96e-8f,
                          std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  for (int i = 0; i < 100000; ++i) {
    const std::uint32_t u = any_bits(rng);
    float f;
    std::memcpy(&f, &u, sizeof f);
    x.push_back(f);
    x.push_back(std::ldexp(static_cast<float>(u % 20000) - 10000.0f, -static_cast<int>(u % 30)));
  }
  std::vector<half> narrow(x.size());
  floats_to_halves(x.data(), narrow.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const half want(x[i]);
    if (std::isnan(x[i])) {
      ASSERT_TRUE(std::isnan(static_cast<float>(narrow[i]))) << i;
    } else {
      ASSERT_EQ(half_bits(narrow[i]), half_bits(want)) << "x = " << x[i];
    }
  }
}

}  // namespace
}  // namespace mlusim::sim::compute
