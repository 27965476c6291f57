// VFU arithmetic against naive reference loops written here (no Eigen on the reference side).
//
// Tolerances: ops that are exact in IEEE fp32 (add, sub, mul, div, max, min, neg, abs, square,
// relu, comparisons) must match the naive fp32 loop bit for bit; fp16 results of those ops must
// equal the fp32 result rounded once to fp16. Transcendentals (Eigen's vectorised approximations)
// must be within 4e-6 relative + 1e-7 absolute of a double-precision reference in fp32, and within
// one fp16 ulp of it in fp16. GELU's exact form x/2 * (1 + erf(x/sqrt2)) -- the formula torch uses
// on CPU -- cancels in fp32 for x < -3 (1 + erf is tiny), so GELU gets 1e-6 absolute in fp32 and
// one fp16 ulp + 1e-6 in fp16.
#include "compute/vector_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "compute/test_util.h"

namespace mlusim::sim::compute {
namespace {

using testing::half_ulp;
using testing::random_floats;
using testing::random_ints;
using testing::to_half;
using testing::wrap;

constexpr std::size_t kSizes[] = {1, 7, 1037};
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Bitwise equality, NaN == NaN.
void expect_same_float(float got, float want, std::size_t i) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << "element " << i << ": got " << got;
  } else {
    EXPECT_EQ(bits(got), bits(want)) << "element " << i << ": got " << got << " want " << want;
  }
}

float ref_binary(VecBinaryOp op, float x, float y) {
  switch (op) {
    case VecBinaryOp::kAdd: return x + y;
    case VecBinaryOp::kSub: return x - y;
    case VecBinaryOp::kMul: return x * y;
    case VecBinaryOp::kDiv: return x / y;
    case VecBinaryOp::kMax: return (std::isnan(x) || std::isnan(y)) ? kNaN : (x > y ? x : y);
    case VecBinaryOp::kMin: return (std::isnan(x) || std::isnan(y)) ? kNaN : (x < y ? x : y);
    case VecBinaryOp::kPow: return std::pow(x, y);
    case VecBinaryOp::kEq: return x == y ? 1.0f : 0.0f;
    case VecBinaryOp::kNe: return x != y ? 1.0f : 0.0f;
    case VecBinaryOp::kLt: return x < y ? 1.0f : 0.0f;
    case VecBinaryOp::kLe: return x <= y ? 1.0f : 0.0f;
    case VecBinaryOp::kGt: return x > y ? 1.0f : 0.0f;
    case VecBinaryOp::kGe: return x >= y ? 1.0f : 0.0f;
    default: ADD_FAILURE() << "no float reference"; return 0;
  }
}

const VecBinaryOp kFloatBinaryOps[] = {
    VecBinaryOp::kAdd, VecBinaryOp::kSub, VecBinaryOp::kMul, VecBinaryOp::kDiv,
    VecBinaryOp::kMax, VecBinaryOp::kMin, VecBinaryOp::kPow, VecBinaryOp::kEq,
    VecBinaryOp::kNe,  VecBinaryOp::kLt,  VecBinaryOp::kLe,  VecBinaryOp::kGt, VecBinaryOp::kGe,
};

// Operands with some NaNs, zeros and equal pairs mixed in.
void make_float_operands(std::size_t n, std::uint64_t seed, std::vector<float>& a,
                         std::vector<float>& b, bool positive_base = false) {
  a = random_floats(n, positive_base ? 0.1f : -4.0f, 4.0f, seed);
  b = random_floats(n, -3.0f, 3.0f, seed + 1);
  for (std::size_t i = 0; i < n; i += 5) b[i] = a[i];
  for (std::size_t i = 3; i < n; i += 11) b[i] = 0.0f;
  if (!positive_base)
    for (std::size_t i = 4; i < n; i += 13) a[i] = kNaN;
}

TEST(VecBinary, Fp32MatchesNaiveLoopBitForBit) {
  for (std::size_t n : kSizes) {
    std::vector<float> a, b;
    make_float_operands(n, 100 + n, a, b);
    for (VecBinaryOp op : kFloatBinaryOps) {
      SCOPED_TRACE(std::string(op_name(op)) + " n=" + std::to_string(n));
      std::vector<float> dst(n, -7.0f);
      vec_binary(op, DType::kFloat32, dst.data(), a.data(), b.data(), n);
      for (std::size_t i = 0; i < n; ++i) expect_same_float(dst[i], ref_binary(op, a[i], b[i]), i);
    }
  }
}

TEST(VecBinary, Fp16IsFp32ResultRoundedOnce) {
  for (std::size_t n : kSizes) {
    std::vector<float> af, bf;
    make_float_operands(n, 200 + n, af, bf);
    const std::vector<half> a = to_half(af), b = to_half(bf);
    for (VecBinaryOp op : kFloatBinaryOps) {
      SCOPED_TRACE(std::string(op_name(op)) + " n=" + std::to_string(n));
      std::vector<half> dst(n);
      vec_binary(op, DType::kFloat16, dst.data(), a.data(), b.data(), n);
      for (std::size_t i = 0; i < n; ++i) {
        const float want = static_cast<float>(half(ref_binary(op, static_cast<float>(a[i]), static_cast<float>(b[i]))));
        expect_same_float(static_cast<float>(dst[i]), want, i);
      }
    }
  }
}

TEST(VecBinary, ScalarOperandOnEitherSide) {
  const std::size_t n = 37;
  const std::vector<float> a = random_floats(n, 0.5f, 4.0f, 7);
  std::vector<float> dst(n);
  vec_binary_scalar(VecBinaryOp::kSub, DType::kFloat32, dst.data(), a.data(), 2.5, n);
  for (std::size_t i = 0; i < n; ++i) expect_same_float(dst[i], a[i] - 2.5f, i);
  vec_binary_scalar(VecBinaryOp::kDiv, DType::kFloat32, dst.data(), a.data(), 10.0, n, /*scalar_first=*/true);
  for (std::size_t i = 0; i < n; ++i) expect_same_float(dst[i], 10.0f / a[i], i);
  vec_binary_scalar(VecBinaryOp::kGe, DType::kFloat32, dst.data(), a.data(), 2.0, n);
  for (std::size_t i = 0; i < n; ++i) expect_same_float(dst[i], a[i] >= 2.0f ? 1.0f : 0.0f, i);

  // fp16: the scalar is rounded to fp16 before use (0.1 -> 0.0999755859375).
  const std::vector<half> ah = to_half(a);
  std::vector<half> dh(n);
  vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat16, dh.data(), ah.data(), 0.1, n);
  const float s = static_cast<float>(half(0.1f));
  for (std::size_t i = 0; i < n; ++i)
    expect_same_float(static_cast<float>(dh[i]), static_cast<float>(half(static_cast<float>(ah[i]) * s)), i);

  // Integers: exact integer scalars only.
  const std::vector<std::int32_t> ai = random_ints<std::int32_t>(n, -1000, 1000, 9);
  std::vector<std::int32_t> di(n);
  vec_binary_scalar(VecBinaryOp::kSub, DType::kInt32, di.data(), ai.data(), 7.0, n, /*scalar_first=*/true);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(di[i], 7 - ai[i]);
  EXPECT_THROW(vec_binary_scalar(VecBinaryOp::kMul, DType::kInt32, di.data(), ai.data(), 0.5, n),
               std::invalid_argument);
  std::vector<std::int8_t> i8(n, 1);
  EXPECT_THROW(vec_binary_scalar(VecBinaryOp::kAdd, DType::kInt8, i8.data(), i8.data(), 200.0, n),
               std::invalid_argument);
}

template <class T> std::int64_t ref_int(VecBinaryOp op, std::int64_t x, std::int64_t y) {
  switch (op) {
    case VecBinaryOp::kAdd: return x + y;
    case VecBinaryOp::kSub: return x - y;
    case VecBinaryOp::kMul: return x * y;
    case VecBinaryOp::kDiv: return y == 0 ? 0 : x / y;
    case VecBinaryOp::kMax: return x > y ? x : y;
    case VecBinaryOp::kMin: return x < y ? x : y;
    case VecBinaryOp::kEq: return x == y;
    case VecBinaryOp::kNe: return x != y;
    case VecBinaryOp::kLt: return x < y;
    case VecBinaryOp::kLe: return x <= y;
    case VecBinaryOp::kGt: return x > y;
    case VecBinaryOp::kGe: return x >= y;
    case VecBinaryOp::kAnd: return x != 0 && y != 0;
    case VecBinaryOp::kOr: return x != 0 || y != 0;
    default: ADD_FAILURE(); return 0;
  }
}

template <class T> void check_int_binary(DType t) {
  const VecBinaryOp ops[] = {VecBinaryOp::kAdd, VecBinaryOp::kSub, VecBinaryOp::kMul,
                             VecBinaryOp::kDiv, VecBinaryOp::kMax, VecBinaryOp::kMin,
                             VecBinaryOp::kEq,  VecBinaryOp::kNe,  VecBinaryOp::kLt,
                             VecBinaryOp::kLe,  VecBinaryOp::kGt,  VecBinaryOp::kGe,
                             VecBinaryOp::kAnd, VecBinaryOp::kOr};
  constexpr std::int64_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  for (std::size_t n : kSizes) {
    std::vector<T> a = random_ints<T>(n, lo, hi, 300 + n);
    std::vector<T> b = random_ints<T>(n, lo, hi, 301 + n);
    for (std::size_t i = 0; i < n; i += 4) b[i] = static_cast<T>(i % 3 == 0 ? 0 : -1);  // div by 0, -1
    a[0] = static_cast<T>(lo);  // INT_MIN / -1 or / 0
    for (VecBinaryOp op : ops) {
      SCOPED_TRACE(std::string(op_name(op)) + " " + std::string(dtype_name(t)) + " n=" + std::to_string(n));
      std::vector<T> dst(n);
      vec_binary(op, t, dst.data(), a.data(), b.data(), n);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(dst[i], wrap<T>(ref_int<T>(op, a[i], b[i]))) << "element " << i << ": " << +a[i] << ", " << +b[i];
    }
  }
}

TEST(VecBinary, IntegersWrapTruncateAndDivideByZeroToZero) {
  check_int_binary<std::int32_t>(DType::kInt32);
  check_int_binary<std::int8_t>(DType::kInt8);
  // Spot values.
  const std::int32_t a[] = {std::numeric_limits<std::int32_t>::min(), 7, -7, 5, std::numeric_limits<std::int32_t>::max()};
  const std::int32_t b[] = {-1, 2, 2, 0, 1};
  std::int32_t d[5];
  vec_binary(VecBinaryOp::kDiv, DType::kInt32, d, a, b, 5);
  EXPECT_EQ(d[0], std::numeric_limits<std::int32_t>::min());  // wraps
  EXPECT_EQ(d[1], 3);
  EXPECT_EQ(d[2], -3);  // toward zero
  EXPECT_EQ(d[3], 0);   // by zero
  vec_binary(VecBinaryOp::kAdd, DType::kInt32, d, a, b, 5);
  EXPECT_EQ(d[4], std::numeric_limits<std::int32_t>::min());  // max + 1 wraps
}

TEST(VecBinary, IntegerPow) {
  const std::int32_t base[] = {3, 2, -2, 2, 1, -1, -1, 0, 0, 5};
  const std::int32_t expo[] = {4, 31, 3, -1, -5, -3, -4, -1, 0, 0};
  const std::int32_t want[] = {81, std::numeric_limits<std::int32_t>::min(), -8, 0, 1, -1, 1, 0, 1, 1};
  std::int32_t d[10];
  vec_binary(VecBinaryOp::kPow, DType::kInt32, d, base, expo, 10);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(d[i], want[i]) << base[i] << "^" << expo[i];
  const std::int8_t b8[] = {2, 3, -3};
  const std::int8_t e8[] = {7, 5, 3};
  std::int8_t d8[3];
  vec_binary(VecBinaryOp::kPow, DType::kInt8, d8, b8, e8, 3);
  EXPECT_EQ(d8[0], -128);  // 128 wraps
  EXPECT_EQ(d8[1], wrap<std::int8_t>(243));
  EXPECT_EQ(d8[2], -27);
}

// Reference in the dtype's own width (unsigned for the wrap), independent of the VFU's 64-bit loop:
// torch's CPU kernels (BinaryOpsKernel.cpp lshift/rshift) make out-of-range counts total.
template <class T> T ref_bitwise(VecBinaryOp op, T x, T y) {
  using U = std::make_unsigned_t<T>;
  constexpr int kWidth = static_cast<int>(sizeof(T)) * 8;
  const bool out_of_range = y < 0 || y >= kWidth;
  switch (op) {
    case VecBinaryOp::kBitAnd: return static_cast<T>(static_cast<U>(x) & static_cast<U>(y));
    case VecBinaryOp::kBitOr: return static_cast<T>(static_cast<U>(x) | static_cast<U>(y));
    case VecBinaryOp::kBitXor: return static_cast<T>(static_cast<U>(x) ^ static_cast<U>(y));
    case VecBinaryOp::kShl: return out_of_range ? T{0} : static_cast<T>(static_cast<U>(static_cast<U>(x) << y));
    case VecBinaryOp::kShr: return static_cast<T>(x >> (out_of_range ? kWidth - 1 : y));
    default: ADD_FAILURE(); return 0;
  }
}

template <class T> void check_bitwise(DType t) {
  constexpr std::int64_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  constexpr std::int64_t width = sizeof(T) * 8;
  for (std::size_t n : kSizes) {
    const std::vector<T> a = random_ints<T>(n, lo, hi, 700 + n);
    const std::vector<T> bits = random_ints<T>(n, lo, hi, 701 + n);
    const std::vector<T> counts = random_ints<T>(n, -3, width + 3, 702 + n);  // in and out of range
    for (VecBinaryOp op : {VecBinaryOp::kBitAnd, VecBinaryOp::kBitOr, VecBinaryOp::kBitXor, VecBinaryOp::kShl,
                           VecBinaryOp::kShr}) {
      SCOPED_TRACE(std::string(op_name(op)) + " " + std::string(dtype_name(t)) + " n=" + std::to_string(n));
      const bool shift = op == VecBinaryOp::kShl || op == VecBinaryOp::kShr;
      const std::vector<T>& b = shift ? counts : bits;
      std::vector<T> dst(n);
      vec_binary(op, t, dst.data(), a.data(), b.data(), n);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(dst[i], ref_bitwise<T>(op, a[i], b[i])) << "element " << i << ": " << +a[i] << ", " << +b[i];
      vec_binary_scalar(op, t, dst.data(), a.data(), 3.0, n);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(dst[i], ref_bitwise<T>(op, a[i], T{3})) << "scalar, element " << i;
    }
  }
}

TEST(VecBinary, BitwiseOpsAndShiftsInTheDtypeWidth) {
  check_bitwise<std::int32_t>(DType::kInt32);
  check_bitwise<std::int8_t>(DType::kInt8);
  // Spot values: sign fill, wrap, out-of-range counts.
  const std::int32_t x[] = {-8, 1, 0x40000000, -1, 5};
  const std::int32_t c[] = {1, 31, 1, 32, -1};
  std::int32_t d[5];
  vec_binary(VecBinaryOp::kShr, DType::kInt32, d, x, c, 5);
  EXPECT_EQ(std::vector<std::int32_t>(d, d + 5), (std::vector<std::int32_t>{-4, 0, 0x20000000, -1, 0}));
  vec_binary(VecBinaryOp::kShl, DType::kInt32, d, x, c, 5);
  EXPECT_EQ(std::vector<std::int32_t>(d, d + 5),
            (std::vector<std::int32_t>{-16, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::min(), 0, 0}));
  // Bool: and/or/xor only (torch defines no bool shifts).
  const std::uint8_t p[] = {0, 0, 1, 1}, q[] = {0, 1, 0, 1};
  std::uint8_t r[4];
  vec_binary(VecBinaryOp::kBitXor, DType::kBool, r, p, q, 4);
  EXPECT_EQ(std::vector<std::uint8_t>(r, r + 4), (std::vector<std::uint8_t>{0, 1, 1, 0}));
  EXPECT_FALSE(vec_supported(VecBinaryOp::kShl, DType::kBool));
  EXPECT_FALSE(vec_supported(VecBinaryOp::kBitAnd, DType::kFloat32));
  EXPECT_THROW(vec_binary(VecBinaryOp::kShr, DType::kBool, r, p, q, 4), std::invalid_argument);
  float f[2] = {1.0f, 2.0f};
  EXPECT_THROW(vec_binary(VecBinaryOp::kBitOr, DType::kFloat32, f, f, f, 2), std::invalid_argument);
}

TEST(VecBinary, BoolLogicAndComparisons) {
  // Any non-zero byte is true; results are 0/1.
  const std::uint8_t a[] = {0, 0, 1, 2, 1};
  const std::uint8_t b[] = {0, 5, 0, 1, 1};
  std::uint8_t d[5];
  vec_binary(VecBinaryOp::kAnd, DType::kBool, d, a, b, 5);
  EXPECT_EQ(std::vector<std::uint8_t>(d, d + 5), (std::vector<std::uint8_t>{0, 0, 0, 1, 1}));
  vec_binary(VecBinaryOp::kOr, DType::kBool, d, a, b, 5);
  EXPECT_EQ(std::vector<std::uint8_t>(d, d + 5), (std::vector<std::uint8_t>{0, 1, 1, 1, 1}));
  vec_binary(VecBinaryOp::kEq, DType::kBool, d, a, b, 5);
  EXPECT_EQ(std::vector<std::uint8_t>(d, d + 5), (std::vector<std::uint8_t>{1, 0, 0, 1, 1}));
  vec_binary(VecBinaryOp::kMax, DType::kBool, d, a, b, 5);
  EXPECT_EQ(std::vector<std::uint8_t>(d, d + 5), (std::vector<std::uint8_t>{0, 1, 1, 1, 1}));
  vec_unary(VecUnaryOp::kNot, DType::kBool, d, a, 5);
  EXPECT_EQ(std::vector<std::uint8_t>(d, d + 5), (std::vector<std::uint8_t>{1, 1, 0, 0, 0}));
  const std::int8_t i8[] = {0, -3, 4};
  std::int8_t n8[3];
  vec_unary(VecUnaryOp::kNot, DType::kInt8, n8, i8, 3);
  EXPECT_EQ(std::vector<std::int8_t>(n8, n8 + 3), (std::vector<std::int8_t>{1, 0, 0}));
}

TEST(VecCompare, WritesBoolMasks) {
  const std::size_t n = 101;
  std::vector<float> a, b;
  make_float_operands(n, 55, a, b);
  const VecBinaryOp preds[] = {VecBinaryOp::kEq, VecBinaryOp::kNe, VecBinaryOp::kLt,
                               VecBinaryOp::kLe, VecBinaryOp::kGt, VecBinaryOp::kGe};
  for (VecBinaryOp op : preds) {
    std::vector<std::uint8_t> mask(n, 9);
    vec_compare(op, DType::kFloat32, mask.data(), a.data(), b.data(), n);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(mask[i], ref_binary(op, a[i], b[i]) != 0.0f ? 1 : 0) << op_name(op) << " " << i;
    const std::vector<half> ah = to_half(a), bh = to_half(b);
    vec_compare(op, DType::kFloat16, mask.data(), ah.data(), bh.data(), n);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(mask[i], ref_binary(op, static_cast<float>(ah[i]), static_cast<float>(bh[i])) != 0.0f ? 1 : 0);
  }
  const std::vector<std::int32_t> ai = random_ints<std::int32_t>(n, -5, 5, 3);
  std::vector<std::uint8_t> mask(n);
  vec_compare_scalar(VecBinaryOp::kLt, DType::kInt32, mask.data(), ai.data(), 1.0, n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(mask[i], ai[i] < 1 ? 1 : 0);
  vec_compare_scalar(VecBinaryOp::kLt, DType::kInt32, mask.data(), ai.data(), 1.0, n, /*scalar_first=*/true);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(mask[i], 1 < ai[i] ? 1 : 0);
  EXPECT_THROW(vec_compare(VecBinaryOp::kAdd, DType::kFloat32, mask.data(), a.data(), b.data(), n),
               std::invalid_argument);
}

double ref_unary(VecUnaryOp op, double x) {
  switch (op) {
    case VecUnaryOp::kNeg: return -x;
    case VecUnaryOp::kAbs: return std::fabs(x);
    case VecUnaryOp::kSquare: return x * x;
    case VecUnaryOp::kRecip: return 1.0 / x;
    case VecUnaryOp::kExp: return std::exp(x);
    case VecUnaryOp::kLog: return std::log(x);
    case VecUnaryOp::kSqrt: return std::sqrt(x);
    case VecUnaryOp::kRsqrt: return 1.0 / std::sqrt(x);
    case VecUnaryOp::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case VecUnaryOp::kTanh: return std::tanh(x);
    case VecUnaryOp::kGelu: return x * 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
    case VecUnaryOp::kSilu: return x / (1.0 + std::exp(-x));
    case VecUnaryOp::kRelu: return x < 0 ? 0.0 : x;
    default: ADD_FAILURE(); return 0;
  }
}

bool needs_positive(VecUnaryOp op) {
  return op == VecUnaryOp::kLog || op == VecUnaryOp::kSqrt || op == VecUnaryOp::kRsqrt;
}

const VecUnaryOp kFloatUnaryOps[] = {
    VecUnaryOp::kNeg,  VecUnaryOp::kAbs,     VecUnaryOp::kSquare, VecUnaryOp::kRecip,
    VecUnaryOp::kExp,  VecUnaryOp::kLog,     VecUnaryOp::kSqrt,   VecUnaryOp::kRsqrt,
    VecUnaryOp::kSigmoid, VecUnaryOp::kTanh, VecUnaryOp::kGelu,   VecUnaryOp::kSilu,
    VecUnaryOp::kRelu,
};

TEST(VecUnary, Fp32WithinToleranceOfDoubleReference) {
  for (std::size_t n : kSizes) {
    for (VecUnaryOp op : kFloatUnaryOps) {
      SCOPED_TRACE(std::string(op_name(op)) + " n=" + std::to_string(n));
      const std::vector<float> x = needs_positive(op) ? random_floats(n, 1e-3f, 50.0f, 400 + n)
                                                      : random_floats(n, -9.0f, 9.0f, 400 + n);
      std::vector<float> dst(n);
      vec_unary(op, DType::kFloat32, dst.data(), x.data(), n);
      for (std::size_t i = 0; i < n; ++i) {
        const double want = ref_unary(op, x[i]);
        const double abs_tol = op == VecUnaryOp::kGelu ? 1e-6 : 1e-7;
        ASSERT_NEAR(dst[i], want, 4e-6 * std::fabs(want) + abs_tol) << "x = " << x[i];
      }
    }
  }
}

TEST(VecUnary, Fp16WithinOneUlp) {
  for (std::size_t n : kSizes) {
    for (VecUnaryOp op : kFloatUnaryOps) {
      SCOPED_TRACE(std::string(op_name(op)) + " n=" + std::to_string(n));
      const std::vector<half> x = to_half(needs_positive(op) ? random_floats(n, 1e-2f, 50.0f, 500 + n)
                                                             : random_floats(n, -6.0f, 6.0f, 500 + n));
      std::vector<half> dst(n);
      vec_unary(op, DType::kFloat16, dst.data(), x.data(), n);
      for (std::size_t i = 0; i < n; ++i) {
        const double want = ref_unary(op, static_cast<float>(x[i]));
        const double abs_tol = op == VecUnaryOp::kGelu ? 1e-6 : 0.0;
        ASSERT_LE(std::fabs(static_cast<float>(dst[i]) - want), half_ulp(want) + abs_tol)
            << "x = " << static_cast<float>(x[i]) << " got " << static_cast<float>(dst[i]) << " want " << want;
      }
    }
  }
}

// sqrt is correctly rounded (IEEE), so it must equal the host's std::sqrt bit for bit, denormals
// included; rsqrt = 1 / sqrt is within 1.5 ulp of the exact value. Eigen's fast-math versions
// (an x86 rsqrt estimate + one Newton step) were up to ~3.5 ulp off and flushed denormals to 0.
TEST(VecUnary, SqrtCorrectlyRoundedRsqrtWithinOneAndAHalfUlp) {
  std::vector<float> x(4096);  // mantissas 1.000 .. 1.999 at exponents -100 .. 99, then denormals
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = std::ldexp(1.0f + static_cast<float>(i % 1000) / 1000.0f, static_cast<int>(i % 200) - 100);
  x.insert(x.end(), {1e-40f, 1.4e-45f, std::numeric_limits<float>::min(), 2.0f, 3.0f, 0.1f, 65504.0f});
  std::vector<float> sq(x.size()), rs(x.size());
  vec_unary(VecUnaryOp::kSqrt, DType::kFloat32, sq.data(), x.data(), x.size());
  vec_unary(VecUnaryOp::kRsqrt, DType::kFloat32, rs.data(), x.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    expect_same_float(sq[i], std::sqrt(x[i]), i);
    const double want = 1.0 / std::sqrt(static_cast<double>(x[i]));
    const double ulp = std::nextafter(static_cast<float>(want), std::numeric_limits<float>::infinity()) -
                       static_cast<float>(want);
    ASSERT_LE(std::fabs(rs[i] - want), 1.5 * ulp) << "rsqrt(" << x[i] << ") = " << rs[i] << ", want " << want;
  }
  const float special[] = {0.0f, -0.0f, -1.0f, std::numeric_limits<float>::infinity(), kNaN};
  float d[5];
  vec_unary(VecUnaryOp::kSqrt, DType::kFloat32, d, special, 5);
  for (int i = 0; i < 5; ++i) expect_same_float(d[i], std::sqrt(special[i]), static_cast<std::size_t>(i));
  vec_unary(VecUnaryOp::kRsqrt, DType::kFloat32, d, special, 5);
  EXPECT_EQ(d[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(d[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(d[2]));
  EXPECT_EQ(d[3], 0.0f);
  EXPECT_TRUE(std::isnan(d[4]));
}

TEST(VecUnary, SpecialValues) {
  const float x[] = {kNaN, -0.0f, -5.0f, 0.0f, 1e30f};
  float d[5];
  vec_unary(VecUnaryOp::kRelu, DType::kFloat32, d, x, 5);
  EXPECT_TRUE(std::isnan(d[0]));
  EXPECT_EQ(d[2], 0.0f);
  EXPECT_EQ(d[4], 1e30f);
  vec_unary(VecUnaryOp::kRecip, DType::kFloat32, d, x, 5);
  EXPECT_EQ(d[3], std::numeric_limits<float>::infinity());
  EXPECT_EQ(d[1], -std::numeric_limits<float>::infinity());
  // fp16 overflow to inf when rounding the fp32 result.
  const half big[] = {half(300.0f)};
  half sq[1];
  vec_unary(VecUnaryOp::kSquare, DType::kFloat16, sq, big, 1);
  EXPECT_TRUE(std::isinf(static_cast<float>(sq[0])));
}

// exp and log are IEEE-correct at the ends of the fp32 range (Eigen's vectorised versions clamp:
// exp(-inf) was 2.9e-39 and log of a subnormal -87.34, so log(sum(exp(-inf))) was -87.3, not
// -inf): special values exactly, subnormal results and arguments within 2 ulp of the host's libm.
TEST(VecUnary, ExpAndLogSpecialValuesAndSubnormals) {
  const float inf = std::numeric_limits<float>::infinity();
  const float x[] = {-inf, inf, kNaN, 0.0f, -0.0f, -1.0f, -87.5f, -100.0f, -103.0f, -104.0f, -200.0f,
                     1e-40f, 1.4e-45f, std::numeric_limits<float>::min(), 88.0f, 89.0f};
  constexpr std::size_t n = sizeof x / sizeof x[0];
  float e[n], l[n];
  vec_unary(VecUnaryOp::kExp, DType::kFloat32, e, x, n);
  vec_unary(VecUnaryOp::kLog, DType::kFloat32, l, x, n);
  for (std::size_t i = 0; i < n; ++i) {
    SCOPED_TRACE("x = " + std::to_string(x[i]));
    const float want_e = std::exp(x[i]), want_l = std::log(x[i]);
    if (std::isnan(want_e)) EXPECT_TRUE(std::isnan(e[i]));
    else if (std::isinf(want_e) || want_e == 0.0f) EXPECT_EQ(e[i], want_e);
    else EXPECT_LE(std::fabs(e[i] - want_e), 2.0f * (std::nextafter(want_e, inf) - want_e));
    if (std::isnan(want_l)) EXPECT_TRUE(std::isnan(l[i]));
    else if (std::isinf(want_l)) EXPECT_EQ(l[i], want_l);
    else EXPECT_NEAR(l[i], want_l, 4e-6 * std::fabs(want_l));
  }
  EXPECT_EQ(e[0], 0.0f);   // exp(-inf)
  EXPECT_EQ(l[3], -inf);   // log(0)
  EXPECT_TRUE(std::isnan(l[5]));
  // exp then log of -inf stays -inf (the logsumexp chain), in fp16 too.
  float chain[2] = {-inf, -inf};
  vec_unary(VecUnaryOp::kExp, DType::kFloat32, chain, chain, 2);
  vec_unary(VecUnaryOp::kLog, DType::kFloat32, chain, chain, 2);
  EXPECT_EQ(chain[0], -inf);
  half hx[2] = {half(-inf), half(0.0f)}, hd[2];
  vec_unary(VecUnaryOp::kExp, DType::kFloat16, hd, hx, 2);
  EXPECT_EQ(static_cast<float>(hd[0]), 0.0f);
  vec_unary(VecUnaryOp::kLog, DType::kFloat16, hd, hx, 2);
  EXPECT_EQ(static_cast<float>(hd[1]), -inf);
}

TEST(VecUnary, IntegerOpsWrap) {
  const std::int8_t x[] = {-128, -5, 0, 7, 127, 12};
  std::int8_t d[6];
  vec_unary(VecUnaryOp::kNeg, DType::kInt8, d, x, 6);
  EXPECT_EQ(std::vector<std::int8_t>(d, d + 6), (std::vector<std::int8_t>{-128, 5, 0, -7, -127, -12}));
  vec_unary(VecUnaryOp::kAbs, DType::kInt8, d, x, 6);
  EXPECT_EQ(std::vector<std::int8_t>(d, d + 6), (std::vector<std::int8_t>{-128, 5, 0, 7, 127, 12}));
  vec_unary(VecUnaryOp::kSquare, DType::kInt8, d, x, 6);
  EXPECT_EQ(std::vector<std::int8_t>(d, d + 6),
            (std::vector<std::int8_t>{0, 25, 0, 49, 1, wrap<std::int8_t>(144)}));
  vec_unary(VecUnaryOp::kRelu, DType::kInt8, d, x, 6);
  EXPECT_EQ(std::vector<std::int8_t>(d, d + 6), (std::vector<std::int8_t>{0, 0, 0, 7, 127, 12}));
  const std::int32_t y[] = {46341, -3};
  std::int32_t e[2];
  vec_unary(VecUnaryOp::kSquare, DType::kInt32, e, y, 2);
  EXPECT_EQ(e[0], wrap<std::int32_t>(std::int64_t{46341} * 46341));
  EXPECT_EQ(e[1], 9);
}

TEST(VecUnary, CopyMovesBytesForEveryDtype) {
  const double src[] = {1.5, -2.25, 1e300};
  double dst[3];
  vec_unary(VecUnaryOp::kCopy, DType::kFloat64, dst, src, 3);
  EXPECT_EQ(std::memcmp(dst, src, sizeof src), 0);
  const std::uint16_t nan_payload = 0x7e01;
  half hn[2] = {half(1.0f), half(0.0f)};
  std::memcpy(static_cast<void*>(&hn[1]), &nan_payload, sizeof nan_payload);
  half hd[2];
  vec_unary(VecUnaryOp::kCopy, DType::kFloat16, hd, hn, 2);
  EXPECT_EQ(std::memcmp(hd, hn, sizeof hn), 0);
}

TEST(VecInPlace, DstMayAliasAnOperandExactly) {
  const std::size_t n = 1037;
  std::vector<float> a, b;
  make_float_operands(n, 77, a, b);
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = a[i] * b[i];
  std::vector<float> x = a;
  vec_binary(VecBinaryOp::kMul, DType::kFloat32, x.data(), x.data(), b.data(), n);  // dst == a
  for (std::size_t i = 0; i < n; ++i) expect_same_float(x[i], want[i], i);
  x = b;
  vec_binary(VecBinaryOp::kMul, DType::kFloat32, x.data(), a.data(), x.data(), n);  // dst == b
  for (std::size_t i = 0; i < n; ++i) expect_same_float(x[i], want[i], i);
  x = a;
  vec_binary(VecBinaryOp::kAdd, DType::kFloat32, x.data(), x.data(), x.data(), n);  // dst == a == b
  for (std::size_t i = 0; i < n; ++i) expect_same_float(x[i], a[i] + a[i], i);

  std::vector<half> h = to_half(random_floats(n, -3.0f, 3.0f, 78));
  const std::vector<half> h0 = h;
  vec_unary(VecUnaryOp::kExp, DType::kFloat16, h.data(), h.data(), n);
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_LE(std::fabs(static_cast<float>(h[i]) - std::exp(static_cast<double>(h0[i]))),
              half_ulp(std::exp(static_cast<double>(h0[i]))));

  std::vector<std::int32_t> k = random_ints<std::int32_t>(n, -100, 100, 79);
  const std::vector<std::int32_t> k0 = k;
  vec_binary_scalar(VecBinaryOp::kMul, DType::kInt32, k.data(), k.data(), -3.0, n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(k[i], k0[i] * -3);
}

TEST(VecReduce, FloatRowsAgainstDoubleReference) {
  const std::size_t rows = 5, n = 1003;
  const std::vector<float> x = random_floats(rows * n, -2.0f, 2.0f, 600);
  for (VecReduceOp op : {VecReduceOp::kSum, VecReduceOp::kSumSquares, VecReduceOp::kMax, VecReduceOp::kMin}) {
    SCOPED_TRACE(op_name(op));
    std::vector<float> dst(rows);
    vec_reduce(op, DType::kFloat32, dst.data(), x.data(), rows, n);
    const std::vector<half> xh = to_half(x);
    std::vector<half> dh(rows);
    vec_reduce(op, DType::kFloat16, dh.data(), xh.data(), rows, n);
    for (std::size_t r = 0; r < rows; ++r) {
      double acc = 0, acc_h = 0, abs_sum = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const double v = x[r * n + i], vh = static_cast<float>(xh[r * n + i]);
        switch (op) {
          case VecReduceOp::kSum: acc += v; acc_h += vh; abs_sum += std::fabs(v); break;
          case VecReduceOp::kSumSquares: acc += v * v; acc_h += vh * vh; abs_sum += v * v; break;
          case VecReduceOp::kMax: acc = i ? std::max(acc, v) : v; acc_h = i ? std::max(acc_h, vh) : vh; break;
          case VecReduceOp::kMin: acc = i ? std::min(acc, v) : v; acc_h = i ? std::min(acc_h, vh) : vh; break;
        }
      }
      // fp32 accumulation error bound ~ n * eps * sum|terms|; max/min are exact.
      EXPECT_NEAR(dst[r], acc, 1e-6 * abs_sum) << "row " << r;
      EXPECT_LE(std::fabs(static_cast<float>(dh[r]) - acc_h), half_ulp(acc_h) + 1e-6 * abs_sum) << "row " << r;
    }
  }
}

TEST(VecReduce, NanPropagatesThroughMaxMin) {
  float x[] = {1.0f, kNaN, 3.0f, 4.0f, 5.0f, 6.0f};
  float d[2];
  vec_reduce(VecReduceOp::kMax, DType::kFloat32, d, x, 2, 3);
  EXPECT_TRUE(std::isnan(d[0]));
  EXPECT_EQ(d[1], 6.0f);
  vec_reduce(VecReduceOp::kMin, DType::kFloat32, d, x, 2, 3);
  EXPECT_TRUE(std::isnan(d[0]));
  EXPECT_EQ(d[1], 4.0f);
}

TEST(VecReduce, IntegersBoolsAndInPlace) {
  const std::size_t rows = 3, n = 50;
  std::vector<std::int8_t> x = random_ints<std::int8_t>(rows * n, -128, 127, 700);
  for (VecReduceOp op : {VecReduceOp::kSum, VecReduceOp::kSumSquares, VecReduceOp::kMax, VecReduceOp::kMin}) {
    std::vector<std::int8_t> d(rows);
    vec_reduce(op, DType::kInt8, d.data(), x.data(), rows, n);
    for (std::size_t r = 0; r < rows; ++r) {
      std::int64_t acc = op == VecReduceOp::kMax ? -1000 : op == VecReduceOp::kMin ? 1000 : 0;
      for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t v = x[r * n + i];
        if (op == VecReduceOp::kSum) acc += v;
        if (op == VecReduceOp::kSumSquares) acc += v * v;
        if (op == VecReduceOp::kMax) acc = std::max(acc, v);
        if (op == VecReduceOp::kMin) acc = std::min(acc, v);
      }
      EXPECT_EQ(d[r], wrap<std::int8_t>(acc)) << op_name(op) << " row " << r;
    }
  }
  // In place: dst == src.
  std::vector<std::int32_t> y = random_ints<std::int32_t>(rows * n, -1000, 1000, 701);
  std::vector<std::int32_t> want(rows, 0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < n; ++i) want[r] += y[r * n + i];
  vec_reduce(VecReduceOp::kSum, DType::kInt32, y.data(), y.data(), rows, n);
  for (std::size_t r = 0; r < rows; ++r) EXPECT_EQ(y[r], want[r]);
  std::vector<float> f = random_floats(rows * 4, -1.0f, 1.0f, 702);
  const std::vector<float> f0 = f;
  vec_reduce(VecReduceOp::kMax, DType::kFloat32, f.data(), f.data(), rows * 4, 1);  // n = 1: identity
  EXPECT_EQ(f, f0);
  // bool: max = any, min = all.
  const std::uint8_t b[] = {0, 0, 3, 1, 1, 1};
  std::uint8_t any[2], all[2];
  vec_reduce(VecReduceOp::kMax, DType::kBool, any, b, 2, 3);
  vec_reduce(VecReduceOp::kMin, DType::kBool, all, b, 2, 3);
  EXPECT_EQ(any[0], 1);
  EXPECT_EQ(any[1], 1);
  EXPECT_EQ(all[0], 0);
  EXPECT_EQ(all[1], 1);
  // Empty rows.
  float s[2] = {5, 5};
  vec_reduce(VecReduceOp::kSum, DType::kFloat32, s, nullptr, 2, 0);
  EXPECT_EQ(s[0], 0.0f);
  EXPECT_THROW(vec_reduce(VecReduceOp::kMax, DType::kFloat32, s, nullptr, 2, 0), std::invalid_argument);
}

TEST(VecCast, FloatToIntRoundsAndSaturates) {
  const float x[] = {2.5f, 3.5f, -2.5f, 2.7f, -2.7f, 1e10f, -1e10f, kNaN, 0.49999997f};
  std::int32_t d[9];
  vec_cast(DType::kInt32, d, DType::kFloat32, x, 9);
  EXPECT_EQ(std::vector<std::int32_t>(d, d + 9),
            (std::vector<std::int32_t>{2, 4, -2, 3, -3, std::numeric_limits<std::int32_t>::max(),
                                       std::numeric_limits<std::int32_t>::min(), 0, 0}));
  vec_cast(DType::kInt32, d, DType::kFloat32, x, 9, CastRounding::kTowardZero);
  EXPECT_EQ(std::vector<std::int32_t>(d, d + 9),
            (std::vector<std::int32_t>{2, 3, -2, 2, -2, std::numeric_limits<std::int32_t>::max(),
                                       std::numeric_limits<std::int32_t>::min(), 0, 0}));
  std::int8_t d8[9];
  vec_cast(DType::kInt8, d8, DType::kFloat32, x, 9);
  EXPECT_EQ(d8[5], 127);
  EXPECT_EQ(d8[6], -128);
  const half h[] = {half(-0.5f), half(1.5f), half(300.0f)};
  vec_cast(DType::kInt8, d8, DType::kFloat16, h, 3);
  EXPECT_EQ(d8[0], 0);
  EXPECT_EQ(d8[1], 2);
  EXPECT_EQ(d8[2], 127);
  const double big[] = {9.3e18, -9.3e18, 123.5};
  std::int64_t d64[3];
  vec_cast(DType::kInt64, d64, DType::kFloat64, big, 3);
  EXPECT_EQ(d64[0], std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(d64[1], std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(d64[2], 124);
}

TEST(VecCast, IntegerNarrowing) {
  const std::int32_t x[] = {300, -300, 5, -128};
  std::int8_t d[4];
  vec_cast(DType::kInt8, d, DType::kInt32, x, 4);
  EXPECT_EQ(std::vector<std::int8_t>(d, d + 4), (std::vector<std::int8_t>{127, -128, 5, -128}));
  const std::int64_t ok[] = {std::numeric_limits<std::int32_t>::min(), 42, std::numeric_limits<std::int32_t>::max()};
  std::int32_t d32[3];
  vec_cast(DType::kInt32, d32, DType::kInt64, ok, 3);
  EXPECT_EQ(d32[0], std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(d32[2], std::numeric_limits<std::int32_t>::max());
  const std::int64_t bad[] = {1, std::int64_t{1} << 31};
  try {
    vec_cast(DType::kInt32, d32, DType::kInt64, bad, 2);
    FAIL() << "int64 out of int32 range must throw";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("2147483648"), std::string::npos) << e.what();
  }
}

TEST(VecCast, FloatConversionsAndBools) {
  // fp32 -> fp16 rounds to nearest even; beyond the range -> inf.
  const float x[] = {1.0f + std::ldexp(1.0f, -11), 1.0f + 3 * std::ldexp(1.0f, -11), 65520.0f, -1e6f, 0.1f};
  half h[5];
  vec_cast(DType::kFloat16, h, DType::kFloat32, x, 5);
  EXPECT_EQ(static_cast<float>(h[0]), 1.0f);
  EXPECT_EQ(static_cast<float>(h[1]), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isinf(static_cast<float>(h[2])));
  EXPECT_TRUE(std::isinf(static_cast<float>(h[3])) && static_cast<float>(h[3]) < 0);
  float back[5];
  vec_cast(DType::kFloat32, back, DType::kFloat16, h, 5);
  EXPECT_EQ(back[4], static_cast<float>(half(0.1f)));
  double dd[5];
  vec_cast(DType::kFloat64, dd, DType::kFloat32, x, 5);
  EXPECT_EQ(dd[4], static_cast<double>(0.1f));
  // -> bool: non-zero (and NaN) is true; bool -> numbers: 0/1.
  const float f[] = {0.0f, -0.0f, 2.0f, kNaN};
  std::uint8_t b[4];
  vec_cast(DType::kBool, b, DType::kFloat32, f, 4);
  EXPECT_EQ(std::vector<std::uint8_t>(b, b + 4), (std::vector<std::uint8_t>{0, 0, 1, 1}));
  const std::uint8_t bb[] = {0, 7, 1};
  std::int32_t bi[3];
  vec_cast(DType::kInt32, bi, DType::kBool, bb, 3);
  EXPECT_EQ(std::vector<std::int32_t>(bi, bi + 3), (std::vector<std::int32_t>{0, 1, 1}));
  half bh[3];
  vec_cast(DType::kFloat16, bh, DType::kBool, bb, 3);
  EXPECT_EQ(static_cast<float>(bh[1]), 1.0f);
}

TEST(VecCast, OverlappingBuffersInPlace) {
  // Widening fp16 -> fp32 inside one buffer, dst == src (the halves occupy its first half).
  const std::size_t n = 33;
  const std::vector<float> vals = random_floats(n, -100.0f, 100.0f, 800);
  std::vector<float> buf(n);
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i) {
    const half h(vals[i]);
    std::memcpy(reinterpret_cast<unsigned char*>(buf.data()) + i * sizeof(half), &h, sizeof h);
    want[i] = static_cast<float>(h);
  }
  vec_cast(DType::kFloat32, buf.data(), DType::kFloat16, buf.data(), n);
  EXPECT_EQ(buf, want);
  // Narrowing back in place.
  vec_cast(DType::kFloat16, buf.data(), DType::kFloat32, buf.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    half h;
    std::memcpy(&h, reinterpret_cast<const unsigned char*>(buf.data()) + i * sizeof(half), sizeof h);
    EXPECT_EQ(static_cast<float>(h), want[i]);
  }
  // Same size, in place: fp32 -> int32.
  std::vector<float> f = {1.5f, -7.25f};
  vec_cast(DType::kInt32, f.data(), DType::kFloat32, f.data(), 2);
  std::int32_t i0, i1;
  std::memcpy(&i0, &f[0], 4);
  std::memcpy(&i1, &f[1], 4);
  EXPECT_EQ(i0, 2);
  EXPECT_EQ(i1, -7);
}

TEST(VecFillSelect, FillConvertsTheValue) {
  half h[3];
  vec_fill(DType::kFloat16, h, 0.1, 3);
  EXPECT_EQ(static_cast<float>(h[2]), static_cast<float>(half(0.1f)));
  float f[2];
  vec_fill(DType::kFloat32, f, -std::numeric_limits<double>::infinity(), 2);
  EXPECT_TRUE(std::isinf(f[1]) && f[1] < 0);
  std::int8_t i8[4];
  vec_fill(DType::kInt8, i8, -128, 4);
  EXPECT_EQ(i8[3], -128);
  std::uint8_t b[2];
  vec_fill(DType::kBool, b, 1, 2);
  EXPECT_EQ(b[1], 1);
  EXPECT_THROW(vec_fill(DType::kInt32, f, 0.5, 1), std::invalid_argument);
  EXPECT_THROW(vec_fill(DType::kInt8, i8, 128, 1), std::invalid_argument);
  EXPECT_THROW(vec_fill(DType::kBool, b, 2, 1), std::invalid_argument);
  EXPECT_THROW(vec_fill(DType::kFloat64, f, 1, 1), std::invalid_argument);
}

TEST(VecFillSelect, SelectCopiesByMask) {
  const std::size_t n = 19;
  std::vector<std::uint8_t> cond(n);
  for (std::size_t i = 0; i < n; ++i) cond[i] = static_cast<std::uint8_t>(i % 3 == 0 ? 0 : i % 3);  // 0, 1, 2
  const std::vector<float> a = random_floats(n, -1, 1, 900), b = random_floats(n, -1, 1, 901);
  std::vector<float> d(n);
  vec_select(DType::kFloat32, d.data(), cond.data(), a.data(), b.data(), n);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(d[i], cond[i] ? a[i] : b[i]);
  const std::vector<half> ah = to_half(a), bh = to_half(b);
  std::vector<half> dh = ah;
  vec_select(DType::kFloat16, dh.data(), cond.data(), dh.data(), bh.data(), n);  // dst == a
  for (std::size_t i = 0; i < n; ++i)
    EXPECT_EQ(static_cast<float>(dh[i]), static_cast<float>(cond[i] ? ah[i] : bh[i]));
  const std::vector<std::int8_t> a8 = random_ints<std::int8_t>(n, -128, 127, 902);
  const std::vector<std::int8_t> b8 = random_ints<std::int8_t>(n, -128, 127, 903);
  std::vector<std::int8_t> d8(n);
  vec_select(DType::kInt8, d8.data(), cond.data(), a8.data(), b8.data(), n);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(d8[i], cond[i] ? a8[i] : b8[i]);
  EXPECT_THROW(vec_select(DType::kInt64, d.data(), cond.data(), a.data(), b.data(), n), std::invalid_argument);
}

void expect_error_names(const std::function<void()>& call, const std::string& op, const std::string& dtype) {
  try {
    call();
    ADD_FAILURE() << op << " on " << dtype << " must throw";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'" + op + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'" + dtype + "'"), std::string::npos) << msg;
  }
}

TEST(VecErrors, UnsupportedCombinationsNameOpAndDtype) {
  float buf[4] = {};
  expect_error_names([&] { vec_unary(VecUnaryOp::kExp, DType::kInt32, buf, buf, 4); }, "exp", "int32");
  expect_error_names([&] { vec_unary(VecUnaryOp::kGelu, DType::kInt8, buf, buf, 4); }, "gelu", "int8");
  expect_error_names([&] { vec_unary(VecUnaryOp::kNot, DType::kFloat32, buf, buf, 4); }, "not", "fp32");
  expect_error_names([&] { vec_binary(VecBinaryOp::kAdd, DType::kFloat64, buf, buf, buf, 2); }, "add", "fp64");
  expect_error_names([&] { vec_binary(VecBinaryOp::kMul, DType::kInt64, buf, buf, buf, 2); }, "mul", "int64");
  expect_error_names([&] { vec_binary(VecBinaryOp::kAnd, DType::kFloat16, buf, buf, buf, 4); }, "and", "fp16");
  expect_error_names([&] { vec_binary(VecBinaryOp::kSub, DType::kBool, buf, buf, buf, 4); }, "sub", "bool");
  expect_error_names([&] { vec_reduce(VecReduceOp::kSum, DType::kBool, buf, buf, 1, 4); }, "sum", "bool");
  expect_error_names([&] { vec_reduce(VecReduceOp::kMax, DType::kFloat64, buf, buf, 1, 2); }, "max", "fp64");
  // Rejected even when there is nothing to compute.
  expect_error_names([&] { vec_unary(VecUnaryOp::kLog, DType::kInt8, buf, buf, 0); }, "log", "int8");
}

}  // namespace
}  // namespace mlusim::sim::compute
