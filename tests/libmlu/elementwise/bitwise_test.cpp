// Bitwise and/or/xor and shifts: every integral dtype and bool, broadcasting and promotion, int64
// narrowing, tensor-scalar forms, strided operands and the dtype errors.
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>

#include "common/mlu_test.h"

namespace mlusim::mlu::testing {
namespace {

using B = std::uint8_t;  // bool tensors on the host

// torch's CPU kernels in the dtype's own width (BinaryOpsKernel.cpp): out-of-range shift counts
// give 0 (left) or the sign (right); left shifts wrap.
template <class T> T ref(BitwiseOp op, T x, T y) {
  using U = std::make_unsigned_t<T>;
  constexpr int kWidth = static_cast<int>(sizeof(T)) * 8;
  const bool out_of_range = y < 0 || y >= kWidth;
  switch (op) {
    case BitwiseOp::kAnd: return static_cast<T>(static_cast<U>(x) & static_cast<U>(y));
    case BitwiseOp::kOr: return static_cast<T>(static_cast<U>(x) | static_cast<U>(y));
    case BitwiseOp::kXor: return static_cast<T>(static_cast<U>(x) ^ static_cast<U>(y));
    case BitwiseOp::kLeftShift: return out_of_range ? T{0} : static_cast<T>(static_cast<U>(static_cast<U>(x) << y));
    case BitwiseOp::kRightShift: return static_cast<T>(x >> (out_of_range ? kWidth - 1 : y));
  }
  return 0;
}

constexpr BitwiseOp kAll[] = {BitwiseOp::kAnd, BitwiseOp::kOr, BitwiseOp::kXor, BitwiseOp::kLeftShift,
                              BitwiseOp::kRightShift};
bool is_shift(BitwiseOp op) { return op == BitwiseOp::kLeftShift || op == BitwiseOp::kRightShift; }

class BitwiseTest : public MluTest {
 protected:
  // a [rows, cols] op b [cols] (broadcast along rows), checked against ref in T.
  template <class T> void check_dtype(DType t, std::int64_t lo, std::int64_t hi, int width) {
    const std::int64_t rows = 37, cols = 129;  // several tiles' worth, odd sizes
    std::mt19937_64 rng(static_cast<std::uint64_t>(width));
    std::uniform_int_distribution<std::int64_t> value(lo, hi), count(-3, width + 3);
    std::vector<T> a(rows * cols), bits(cols), counts(cols);
    for (T& v : a) v = static_cast<T>(value(rng));
    for (T& v : bits) v = static_cast<T>(value(rng));
    for (T& v : counts) v = static_cast<T>(count(rng));
    void* ad = to_device(a);
    void* bits_d = to_device(bits);
    void* counts_d = to_device(counts);
    void* y = dalloc(a.size() * sizeof(T));
    for (BitwiseOp op : kAll) {
      SCOPED_TRACE(std::to_string(static_cast<int>(op)) + " " + std::string(sim::dtype_name(t)));
      const std::vector<T>& b = is_shift(op) ? counts : bits;
      ASSERT_EQ(bitwise(&h(), op, desc(t, {rows, cols}), ad, desc(t, {cols}), is_shift(op) ? counts_d : bits_d,
                        desc(t, {rows, cols}), y),
                Status::kSuccess)
          << last_error_detail();
      const auto got = from_device<T>(y, a.size());
      for (std::size_t i = 0; i < a.size(); ++i)
        ASSERT_EQ(got[i], ref<T>(op, a[i], b[i % cols])) << "element " << i << ": " << +a[i] << ", " << +b[i % cols];
      ASSERT_EQ(bitwise_scalar(&h(), op, desc(t, {rows, cols}), ad, 5, desc(t, {rows, cols}), y), Status::kSuccess)
          << last_error_detail();
      const auto got_s = from_device<T>(y, a.size());
      for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(got_s[i], ref<T>(op, a[i], T{5})) << "scalar, element " << i;
    }
  }
};

TEST_F(BitwiseTest, Int32AndInt8MatchTorchsKernels) {
  check_dtype<std::int32_t>(DType::kInt32, std::numeric_limits<std::int32_t>::min(),
                            std::numeric_limits<std::int32_t>::max(), 32);
  check_dtype<std::int8_t>(DType::kInt8, -128, 127, 8);
}

TEST_F(BitwiseTest, Int64ComputesInInt32Lanes) {
  const std::vector<std::int64_t> a = {-6, 12, (std::int64_t{1} << 31) - 1, -(std::int64_t{1} << 31), 7};
  const std::vector<std::int64_t> b = {3, -5, 1, 40, 2};
  void* ad = to_device(a);
  void* bd = to_device(b);
  void* y = dalloc(a.size() * 8);
  const TensorDesc d = desc(DType::kInt64, {5});
  ASSERT_EQ(bitwise(&h(), BitwiseOp::kXor, d, ad, d, bd, d, y), Status::kSuccess) << last_error_detail();
  EXPECT_EQ(from_device<std::int64_t>(y, 5), (std::vector<std::int64_t>{-6 ^ 3, 12 ^ -5, ((std::int64_t{1} << 31) - 1) ^ 1,
                                                                        -(std::int64_t{1} << 31) ^ 40, 7 ^ 2}));
  // Right shifts are exact for int32-range values whatever the count (>= 31 or < 0 leaves the sign).
  ASSERT_EQ(bitwise(&h(), BitwiseOp::kRightShift, d, ad, d, bd, d, y), Status::kSuccess);
  EXPECT_EQ(from_device<std::int64_t>(y, 5), (std::vector<std::int64_t>{-1, 0, (std::int64_t{1} << 30) - 1, -1, 1}));
  // Left shifts wrap modulo 2^32 (documented; torch wraps modulo 2^64).
  ASSERT_EQ(bitwise_scalar(&h(), BitwiseOp::kLeftShift, d, ad, 1, d, y), Status::kSuccess);
  EXPECT_EQ(from_device<std::int64_t>(y, 5),
            (std::vector<std::int64_t>{-12, 24, -2, 0, 14}));
  // A value outside int32 faults on load, as for every int64 op.
  const std::vector<std::int64_t> big = {std::int64_t{1} << 40};
  void* bigd = to_device(big);
  ASSERT_EQ(bitwise_scalar(&h(), BitwiseOp::kAnd, desc(DType::kInt64, {1}), bigd, 1, desc(DType::kInt64, {1}), y),
            Status::kSuccess);
  EXPECT_EQ(cnrtQueueSync(h().queue()), cnrtErrorKernelTrap);
}

TEST_F(BitwiseTest, BoolAndPromotion) {
  const std::vector<B> p = {0, 0, 1, 1};
  const std::vector<B> q = {0, 1, 0, 1};
  const std::vector<std::int32_t> i = {6, 6, 6, 6};
  void* pd = to_device(p);
  void* qd = to_device(q);
  void* id = to_device(i);
  void* y = dalloc(16);
  const TensorDesc bd = desc(DType::kBool, {4});
  ASSERT_EQ(bitwise(&h(), BitwiseOp::kXor, bd, pd, bd, qd, bd, y), Status::kSuccess) << last_error_detail();
  EXPECT_EQ(from_device<B>(y, 4), (std::vector<B>{0, 1, 1, 0}));
  ASSERT_EQ(bitwise(&h(), BitwiseOp::kAnd, bd, pd, bd, qd, bd, y), Status::kSuccess);
  EXPECT_EQ(from_device<B>(y, 4), (std::vector<B>{0, 0, 0, 1}));
  // bool | int32 -> int32 (torch's promotion).
  const TensorDesc id4 = desc(DType::kInt32, {4});
  ASSERT_EQ(bitwise(&h(), BitwiseOp::kOr, bd, pd, id4, id, id4, y), Status::kSuccess) << last_error_detail();
  EXPECT_EQ(from_device<std::int32_t>(y, 4), (std::vector<std::int32_t>{6, 6, 7, 7}));
  // Scalar first: 1 << t.
  ASSERT_EQ(bitwise_scalar(&h(), BitwiseOp::kLeftShift, id4, id, 1, id4, y, /*scalar_first=*/true), Status::kSuccess);
  EXPECT_EQ(from_device<std::int32_t>(y, 4), (std::vector<std::int32_t>{64, 64, 64, 64}));
}

TEST_F(BitwiseTest, StridedOperandsAndOutput) {
  // a is a transposed [3, 4] view of a [4, 3] buffer; y a column slice of a [3, 8] buffer.
  std::vector<std::int32_t> base(12);
  for (int k = 0; k < 12; ++k) base[k] = k * 37 - 100;
  void* ad = to_device(base);
  const std::vector<std::int32_t> b = {0xF0, 0x0F, -1, 0};
  void* bd = to_device(b);
  std::vector<std::int32_t> out(24, 12345);
  void* y = to_device(out);
  ASSERT_EQ(bitwise(&h(), BitwiseOp::kAnd, desc(DType::kInt32, {3, 4}, {1, 3}), ad, desc(DType::kInt32, {4}), bd,
                    desc(DType::kInt32, {3, 4}, {8, 2}), y),
            Status::kSuccess)
      << last_error_detail();
  const auto got = from_device<std::int32_t>(y, 24);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 8; ++c) {
      const std::int32_t want = c % 2 == 0 ? (base[(c / 2) * 3 + r] & b[c / 2]) : 12345;
      EXPECT_EQ(got[r * 8 + c], want) << r << "," << c;
    }
}

TEST_F(BitwiseTest, BadInputNamesTheProblem) {
  void* x = dalloc(64);
  const TensorDesc f = desc(DType::kFloat32, {4}), i = desc(DType::kInt32, {4}), b = desc(DType::kBool, {4});
  EXPECT_EQ(bitwise(&h(), BitwiseOp::kAnd, f, x, f, x, f, x), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("bitwise_and: not defined for fp32"), std::string::npos) << last_error_detail();
  EXPECT_EQ(bitwise(&h(), BitwiseOp::kOr, i, x, f, x, f, x), Status::kBadParam);  // promotes to float
  EXPECT_EQ(bitwise(&h(), BitwiseOp::kLeftShift, b, x, b, x, b, x), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("integral operands only"), std::string::npos) << last_error_detail();
  EXPECT_EQ(bitwise(&h(), static_cast<BitwiseOp>(9), i, x, i, x, i, x), Status::kBadParam);
  EXPECT_EQ(bitwise(&h(), BitwiseOp::kXor, i, x, i, x, b, x), Status::kBadParam);  // int32 can't cast to bool
  EXPECT_EQ(bitwise_scalar(&h(), BitwiseOp::kAnd, desc(DType::kInt8, {4}), x, 300, desc(DType::kInt8, {4}), x),
            Status::kBadParam);
  EXPECT_NE(last_error_detail().find("out of range for int8"), std::string::npos) << last_error_detail();
  EXPECT_EQ(bitwise_scalar(&h(), BitwiseOp::kAnd, desc(DType::kInt64, {4}), x, std::int64_t{1} << 33,
                           desc(DType::kInt64, {4}), x),
            Status::kBadParam);
  EXPECT_EQ(bitwise(&h(), BitwiseOp::kAnd, i, nullptr, i, x, i, x), Status::kBadParam);
  // The handle stays usable.
  EXPECT_EQ(bitwise(&h(), BitwiseOp::kAnd, i, x, i, x, i, x), Status::kSuccess);
}

}  // namespace
}  // namespace mlusim::mlu::testing
