// bf16 in the compute block: conversion, VFU and TFU arithmetic against a host reference that
// rounds fp32/double results to bf16 by its own rule (nearest of the two neighbouring bf16 values
// found by truncation, ties to the even one; no bit tricks shared with the simulator), and the
// timing functions' per-config support check.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "compute/half_convert.h"
#include "compute/tensor_math.h"
#include "compute/test_util.h"
#include "compute/tfu_timing.h"
#include "compute/vector_math.h"
#include "compute/vfu_timing.h"

namespace mlusim::sim::compute {
namespace {

using testing::random_floats;

std::uint16_t bits(bfloat16 v) {
  std::uint16_t b;
  std::memcpy(&b, static_cast<const void*>(&v), 2);
  return b;
}
float widen(std::uint16_t b) {
  const std::uint32_t u = std::uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
float widen(bfloat16 v) { return widen(bits(v)); }

// Reference rounding of a finite double to bf16, by value: the bf16 neighbours below and above
// (8 significant bits at x's binade), the nearer one, a tie to the one with an even last bit.
float ref_round(double x) {
  if (x == 0.0) return static_cast<float>(x);
  int e;
  std::frexp(std::fabs(x), &e);                    // |x| = m * 2^e, m in [0.5, 1)
  const double step = std::ldexp(1.0, std::max(e - 8, -133));  // 8 significant bits; subnormal floor
  const double lo = std::floor(std::fabs(x) / step) * step, hi = lo + step;
  const double d_lo = std::fabs(x) - lo, d_hi = hi - std::fabs(x);
  double r;
  if (d_lo < d_hi) r = lo;
  else if (d_hi < d_lo) r = hi;
  else r = std::fmod(lo / step, 2.0) == 0.0 ? lo : hi;
  if (r > 3.3895313892515355e38) r = std::numeric_limits<double>::infinity();
  return static_cast<float>(std::copysign(r, x));
}

std::vector<bfloat16> to_bf16(const std::vector<float>& v) {
  std::vector<bfloat16> out(v.size());
  floats_to_bfloat16s(v.data(), out.data(), v.size());
  return out;
}

TEST(Bf16, ConversionRoundsToNearestEven) {
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties to the even mantissa (1.0); 1 + 3 x 2^-8
  // lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6: rounds up to 1 + 2^-6.
  const std::vector<float> in = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f, -2.5f,
                                 3.4e38f,        -3.4e38f,           0x1p-130f,                 1e-45f,
                                 std::numeric_limits<float>::infinity()};
  const std::vector<bfloat16> out = to_bf16(in);
  EXPECT_EQ(widen(out[0]), 1.0f);
  EXPECT_EQ(widen(out[1]), 1.0f + 0x1p-6f);
  EXPECT_EQ(widen(out[2]), 1.0f + 0x1p-7f);  // just above the tie: up
  EXPECT_EQ(widen(out[3]), -2.5f);           // exact
  EXPECT_TRUE(std::isinf(widen(out[4])) && widen(out[4]) > 0);  // past the largest finite bf16
  EXPECT_TRUE(std::isinf(widen(out[5])) && widen(out[5]) < 0);
  for (std::size_t i = 0; i + 1 < in.size(); ++i) EXPECT_EQ(widen(out[i]), ref_round(in[i])) << in[i];
  EXPECT_TRUE(std::isinf(widen(out[8])));
  // A NaN stays a quiet NaN with its sign; widening is exact (bf16 -> fp32 -> bf16 is the identity).
  const float nan = -std::numeric_limits<float>::quiet_NaN();
  bfloat16 n;
  floats_to_bfloat16s(&nan, &n, 1);
  EXPECT_TRUE(std::isnan(widen(n)));
  EXPECT_TRUE(std::signbit(widen(n)));
  const std::vector<float> many = random_floats(4096, -1e4f, 1e4f, 7);
  const std::vector<bfloat16> b = to_bf16(many);
  std::vector<float> back(many.size());
  bfloat16s_to_floats(b.data(), back.data(), back.size());
  for (std::size_t i = 0; i < many.size(); ++i) ASSERT_EQ(back[i], ref_round(many[i])) << many[i];
}

TEST(Bf16, VfuArithmeticComputesInFp32AndRoundsOnce) {
  const std::size_t n = 3000;  // several 1024-element blocks and a tail
  const std::vector<bfloat16> a = to_bf16(random_floats(n, -8.0f, 8.0f, 1));
  const std::vector<bfloat16> b = to_bf16(random_floats(n, 0.5f, 4.0f, 2));
  std::vector<bfloat16> y(n);
  auto check = [&](const char* what, auto ref) {
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(widen(y[i]), ref_round(ref(double(widen(a[i])), double(widen(b[i]))))) << what << " at " << i;
  };
  vec_binary(VecBinaryOp::kAdd, DType::kBFloat16, y.data(), a.data(), b.data(), n);
  check("add", [](double x, double z) { return double(float(x) + float(z)); });
  vec_binary(VecBinaryOp::kMul, DType::kBFloat16, y.data(), a.data(), b.data(), n);
  check("mul", [](double x, double z) { return x * z; });  // bf16 x bf16 is exact in fp32
  vec_binary(VecBinaryOp::kDiv, DType::kBFloat16, y.data(), a.data(), b.data(), n);
  check("div", [](double x, double z) { return double(float(x) / float(z)); });
  vec_binary_scalar(VecBinaryOp::kAdd, DType::kBFloat16, y.data(), a.data(), 0.1, n);
  check("add_scalar", [](double x, double) { return double(float(x) + float(ref_round(0.1))); });
  vec_unary(VecUnaryOp::kExp, DType::kBFloat16, y.data(), a.data(), n);
  for (std::size_t i = 0; i < n; ++i) {  // exp on fp32 is ~1 ulp of fp32: the bf16 result may differ by 1 bf16 ulp at a tie
    const double r = std::exp(double(widen(a[i])));
    ASSERT_NEAR(widen(y[i]), r, std::fabs(r) * 0x1p-8) << "exp at " << i;
  }
  // Comparisons compare the stored values.
  std::vector<std::uint8_t> mask(n);
  vec_compare(VecBinaryOp::kLt, DType::kBFloat16, mask.data(), a.data(), b.data(), n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(mask[i], widen(a[i]) < widen(b[i]) ? 1 : 0) << i;
}

TEST(Bf16, ReduceAccumulatesInFp32) {
  // 4096 values of ~1: an accumulation in bf16 would stall at 256 (bf16 has 8 significant bits);
  // fp32 accumulation gives the sum, rounded once.
  const std::size_t rows = 3, n = 4096;
  const std::vector<bfloat16> x = to_bf16(random_floats(rows * n, 0.5f, 1.5f, 3));
  std::vector<bfloat16> y(rows);
  vec_reduce(VecReduceOp::kSum, DType::kBFloat16, y.data(), x.data(), rows, n);
  for (std::size_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += widen(x[r * n + i]);
    EXPECT_NEAR(widen(y[r]), sum, sum * 0x1p-8) << r;  // one bf16 rounding (fp32 order error is far below)
    EXPECT_GT(widen(y[r]), 3000.0f);
  }
  vec_reduce(VecReduceOp::kMax, DType::kBFloat16, y.data(), x.data(), rows, n);
  for (std::size_t r = 0; r < rows; ++r) {
    float m = -1;
    for (std::size_t i = 0; i < n; ++i) m = std::max(m, widen(x[r * n + i]));
    EXPECT_EQ(widen(y[r]), m);
  }
}

TEST(Bf16, CastsBetweenBf16Fp16Fp32AndIntegers) {
  const std::vector<float> f = {1.0f / 3.0f, -70000.0f, 65504.0f, 2.5f, -3.5f, 1e-3f};
  const std::vector<bfloat16> b = to_bf16(f);
  std::vector<bfloat16> viacast(f.size());
  vec_cast(DType::kBFloat16, viacast.data(), DType::kFloat32, f.data(), f.size());
  std::vector<half> h(f.size());
  vec_cast(DType::kFloat16, h.data(), DType::kBFloat16, b.data(), f.size());
  std::vector<std::int32_t> ints(f.size());
  vec_cast(DType::kInt32, ints.data(), DType::kBFloat16, b.data(), f.size());
  std::vector<bfloat16> from_half(f.size());
  vec_cast(DType::kBFloat16, from_half.data(), DType::kFloat16, h.data(), f.size());
  for (std::size_t i = 0; i < f.size(); ++i) {
    EXPECT_EQ(widen(viacast[i]), ref_round(f[i])) << i;
    const float v = widen(b[i]);
    EXPECT_EQ(static_cast<float>(h[i]), static_cast<float>(half(v))) << i;  // -70000 -> -inf in fp16
    EXPECT_EQ(ints[i], static_cast<std::int32_t>(std::nearbyint(v))) << i;  // ties to even: 2.5 -> 2
    if (std::isfinite(static_cast<float>(h[i]))) {
      EXPECT_EQ(widen(from_half[i]), ref_round(static_cast<float>(h[i]))) << i;
    }
  }
  std::vector<bfloat16> filled(5);
  vec_fill(DType::kBFloat16, filled.data(), 0.1, filled.size());
  EXPECT_EQ(widen(filled[4]), ref_round(0.1f));
}

TEST(Bf16, MatmulAccumulatesInFp32AndRoundsOnce) {
  const std::size_t m = 17, k = 300, n = 23;
  const std::vector<bfloat16> a = to_bf16(random_floats(m * k, -1.0f, 1.0f, 4));
  const std::vector<bfloat16> bt = to_bf16(random_floats(n * k, -1.0f, 1.0f, 5));  // [N,K]
  std::vector<bfloat16> c16(m * n);
  std::vector<float> c32(m * n);
  matmul(DType::kBFloat16, DType::kBFloat16, c16.data(), a.data(), bt.data(), m, k, n, /*b_transposed=*/true, false);
  matmul(DType::kBFloat16, DType::kFloat32, c32.data(), a.data(), bt.data(), m, k, n, true, false);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (std::size_t p = 0; p < k; ++p) {
        const double prod = double(widen(a[i * k + p])) * widen(bt[j * k + p]);
        ref += prod;
        mag += std::fabs(prod);
      }
      const std::size_t o = i * n + j;
      ASSERT_NEAR(c32[o], ref, 1e-5 * mag + 1e-6) << o;
      // One bf16 rounding of the fp32 sum: within half a bf16 ulp of c32 (2^-8 relative).
      ASSERT_EQ(widen(c16[o]), ref_round(c32[o])) << o;
    }
  EXPECT_FALSE(tensor_dtypes_supported(DType::kBFloat16, DType::kFloat16));
  EXPECT_THROW(matmul(DType::kBFloat16, DType::kFloat16, c16.data(), a.data(), bt.data(), 1, 1, 1, true, false),
               std::invalid_argument);
}

HardwareConfig config(bool bf16) {
  HardwareConfig cfg{};
  cfg.name = bf16 ? "with-bf16" : "no-bf16";
  cfg.vfu_width_bytes = 128;
  cfg.vfu_startup_cycles = 10;
  cfg.vfu_transcendental_factor = 4;
  cfg.vfu_bf16 = bf16;
  if (bf16) cfg.tfu_bf16 = TfuArray{32, 64, 1};
  return cfg;
}

TEST(Bf16, VfuTimingUsesSixteenBitLanesWhereTheConfigHasBf16) {
  const HardwareConfig cfg = config(true);
  EXPECT_EQ(vfu_elems_per_cycle(cfg, DType::kBFloat16), 64u);
  EXPECT_EQ(vfu_binary_cycles(cfg, VecBinaryOp::kAdd, DType::kBFloat16, 1000),
            vfu_binary_cycles(cfg, VecBinaryOp::kAdd, DType::kFloat16, 1000));
  EXPECT_EQ(vfu_binary_cycles(cfg, VecBinaryOp::kAdd, DType::kBFloat16, 1000), 10u + 16u);
  EXPECT_EQ(vfu_cast_cycles(cfg, DType::kFloat32, DType::kBFloat16, 64), 10u + 2u);  // fp32 side: 32 lanes
  EXPECT_EQ(tfu_gemm_cycles(cfg, DType::kBFloat16, 32, 100, 64).cycles, 100u + 32u + 64u - 2u - 1u);
}

TEST(Bf16, ConfigWithoutBf16RejectsEveryIntrinsicButCopy) {
  const HardwareConfig cfg = config(false);
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { vfu_binary_cycles(cfg, VecBinaryOp::kAdd, DType::kBFloat16, 8); }),
            "VFU binary op 'add': dtype 'bf16' is not supported by config 'no-bf16' (vfu.bf16 is false: this "
            "chip has no bf16 arithmetic)");
  EXPECT_NE(message([&] { vfu_cast_cycles(cfg, DType::kBFloat16, DType::kFloat32, 8); }).find("cast_fp32_to_bf16"),
            std::string::npos);
  EXPECT_NE(message([&] { vfu_reduce_cycles(cfg, VecReduceOp::kSum, DType::kBFloat16, 1, 8); }).find("'no-bf16'"),
            std::string::npos);
  EXPECT_NE(message([&] { vfu_unary_cycles(cfg, VecUnaryOp::kExp, DType::kBFloat16, 8); }).find("'exp'"),
            std::string::npos);
  EXPECT_THROW(vfu_fill_cycles(cfg, DType::kBFloat16, 8), std::invalid_argument);
  EXPECT_EQ(vfu_unary_cycles(cfg, VecUnaryOp::kCopy, DType::kBFloat16, 64), 10u + 1u);  // bytes only
  EXPECT_EQ(vfu_cast_cycles(cfg, DType::kBFloat16, DType::kBFloat16, 64), 10u + 1u);
  EXPECT_FALSE(tfu_array_for(cfg, DType::kBFloat16).supported());
  EXPECT_THROW(tfu_gemm_cycles(cfg, DType::kBFloat16, 8, 8, 8), std::invalid_argument);
}

}  // namespace
}  // namespace mlusim::sim::compute
