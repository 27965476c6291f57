// Binary arithmetic: broadcasting, type promotion, strided operands, fp16 tolerance, scalar
// variants, bad arguments, and the int64 narrowing check.
#include <cmath>
#include <cstdint>

#include "common/mlu_test.h"
#include "elementwise/strided_ref.h"

namespace mlusim::mlu::testing {
namespace {

struct View {
  Dims dims, strides;
};

View contiguous(const Dims& d) { return {d, contiguous_strides(d)}; }

double ref_binary(BinaryOp op, double a, double b, double alpha) {
  switch (op) {
    case BinaryOp::kAdd: return a + alpha * b;
    case BinaryOp::kSub: return a - alpha * b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
    case BinaryOp::kPow: return std::pow(a, b);
    case BinaryOp::kMaximum: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    case BinaryOp::kMinimum: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  }
  return 0;
}

class BinaryTest : public MluTest {
 protected:
  // fp32 a op b over arbitrary views, compared with a double-precision reference.
  void check_f32(BinaryOp op, const View& a, const View& b, const View& y, unsigned seed, double alpha = 1.0,
                 float lo = -2.0f, float hi = 2.0f) {
    const auto av = random<float>(static_cast<std::size_t>(span(a.dims, a.strides)), seed, lo, hi);
    const auto bv = random<float>(static_cast<std::size_t>(span(b.dims, b.strides)), seed + 100, lo, hi);
    void* ad = to_device(av);
    void* bd = to_device(bv);
    void* yd = dalloc(static_cast<std::size_t>(span(y.dims, y.strides)) * 4);
    ASSERT_EQ(binary(&h(), op, desc(DType::kFloat32, a.dims, a.strides), ad, desc(DType::kFloat32, b.dims, b.strides), bd,
                     desc(DType::kFloat32, y.dims, y.strides), yd, alpha),
              Status::kSuccess)
        << last_error_detail();
    const auto got = from_device<float>(yd, static_cast<std::size_t>(span(y.dims, y.strides)));
    for_each_index(y.dims, [&](const Dims& idx) {
      const double want = ref_binary(op, av[static_cast<std::size_t>(offset(idx, a.dims, a.strides))],
                                     bv[static_cast<std::size_t>(offset(idx, b.dims, b.strides))], alpha);
      const float g = got[static_cast<std::size_t>(offset(idx, y.dims, y.strides))];
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(g));
      } else {
        ASSERT_NEAR(g, want, 1e-6 * std::max(1.0, std::fabs(want))) << "at flat " << offset(idx, y.dims, y.strides);
      }
    });
  }
};

TEST_F(BinaryTest, EveryOpOnOddContiguousShapes) {
  const View v = contiguous({13, 29});
  check_f32(BinaryOp::kAdd, v, v, v, 1);
  check_f32(BinaryOp::kSub, v, v, v, 2);
  check_f32(BinaryOp::kMul, v, v, v, 3);
  check_f32(BinaryOp::kDiv, v, v, v, 4);
  check_f32(BinaryOp::kMaximum, v, v, v, 5);
  check_f32(BinaryOp::kMinimum, v, v, v, 6);
  check_f32(BinaryOp::kPow, v, v, v, 7, 1.0, 0.1f, 3.0f);
}

TEST_F(BinaryTest, AlphaScalesTheSecondOperand) {
  const View v = contiguous({7, 9});
  check_f32(BinaryOp::kAdd, v, v, v, 8, 0.5);
  check_f32(BinaryOp::kSub, v, v, v, 9, -2.25);
}

TEST_F(BinaryTest, BroadcastingShapes) {
  check_f32(BinaryOp::kAdd, contiguous({33, 17}), contiguous({17}), contiguous({33, 17}), 10);         // bias
  check_f32(BinaryOp::kMul, contiguous({4, 5, 6, 7}), contiguous({1, 5, 1, 1}), contiguous({4, 5, 6, 7}), 11);
  check_f32(BinaryOp::kSub, contiguous({5, 1}), contiguous({1, 6}), contiguous({5, 6}), 12);          // outer
  check_f32(BinaryOp::kDiv, contiguous({3, 4, 5}), contiguous({}), contiguous({3, 4, 5}), 13, 1.0, 0.5f, 2.0f);
  check_f32(BinaryOp::kAdd, contiguous({2, 1, 8, 8}), contiguous({2, 3, 8, 8}), contiguous({2, 3, 8, 8}), 14);
  check_f32(BinaryOp::kMaximum, contiguous({6, 1}), contiguous({6, 9}), contiguous({6, 9}), 15);      // row scalar
}

TEST_F(BinaryTest, NonContiguousOperands) {
  // a transposed, b sliced ([:, ::2] of [11, 26]), y transposed.
  check_f32(BinaryOp::kAdd, {{11, 13}, {1, 11}}, {{11, 13}, {26, 2}}, contiguous({11, 13}), 16);
  check_f32(BinaryOp::kMul, contiguous({11, 13}), contiguous({11, 13}), {{11, 13}, {1, 11}}, 17);
  check_f32(BinaryOp::kSub, {{3, 5, 7}, {1, 21, 3}}, {{5, 7}, {0, 1}}, {{3, 5, 7}, {35, 7, 1}}, 18);
}

TEST_F(BinaryTest, LargeTensorUsesManyTilesAndCores) {
  const View v = contiguous({3, 100003});
  h().clear_ops();
  check_f32(BinaryOp::kAdd, v, v, v, 19);
  size_t count = 0;
  ASSERT_EQ(mlusimGetKernelRecordCount(0, &count), cnrtSuccess);
  ASSERT_GE(count, 1u);
  mlusimKernelRecord_t rec;
  ASSERT_EQ(mlusimGetKernelRecord(0, count - 1, &rec), cnrtSuccess);
  EXPECT_EQ(rec.dim.x, h().total_cores()) << "a big tensor spreads over every core";
  ASSERT_EQ(h().ops().size(), 1u);
  EXPECT_EQ(h().ops()[0].bytes, 3u * 100003 * 4 * 3);
}

TEST_F(BinaryTest, InPlaceAliasingOutputAndInput) {
  const auto a = random<float>(1000, 20), b = random<float>(1000, 21);
  void* ad = to_device(a);
  void* bd = to_device(b);
  const TensorDesc d = desc(DType::kFloat32, {1000});
  ASSERT_EQ(binary(&h(), BinaryOp::kAdd, d, ad, d, bd, d, ad), Status::kSuccess);
  const auto got = from_device<float>(ad, 1000);
  for (int i = 0; i < 1000; ++i) ASSERT_FLOAT_EQ(got[i], a[i] + b[i]);
}

TEST_F(BinaryTest, HalfPrecisionWithinOneUlp) {
  const auto a = random<half>(777, 22), b = random<half>(777, 23);
  void* ad = to_device(a);
  void* bd = to_device(b);
  void* yd = dalloc(777 * 2);
  const TensorDesc d = desc(DType::kFloat16, {777});
  for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kMul, BinaryOp::kDiv}) {
    ASSERT_EQ(binary(&h(), op, d, ad, d, bd, d, yd), Status::kSuccess);
    const auto got = from_device<half>(yd, 777);
    for (int i = 0; i < 777; ++i) {
      // torch computes in fp32 and rounds once to fp16: the result is exact to fp16 rounding.
      const float want = static_cast<float>(ref_binary(op, to_f(a[i]), to_f(b[i]), 1.0));
      ASSERT_EQ(got[i], half(want)) << i;
    }
  }
}

TEST_F(BinaryTest, TypePromotion) {
  const std::vector<std::int32_t> ai = {1, -7, 9, 4};
  const std::vector<float> bf = {0.5f, 2.0f, -3.0f, 8.0f};
  const std::vector<half> ch = {half(1.5f), half(2.0f), half(-1.0f), half(0.25f)};
  void* a = to_device(ai);
  void* b = to_device(bf);
  void* c = to_device(ch);
  void* y = dalloc(64);
  // int + float -> float
  ASSERT_EQ(binary(&h(), BinaryOp::kAdd, desc(DType::kInt32, {4}), a, desc(DType::kFloat32, {4}), b,
                   desc(DType::kFloat32, {4}), y),
            Status::kSuccess);
  EXPECT_EQ(from_device<float>(y, 4), (std::vector<float>{1.5f, -5.0f, 6.0f, 12.0f}));
  // int / int -> float (true division)
  ASSERT_EQ(binary(&h(), BinaryOp::kDiv, desc(DType::kInt32, {4}), a, desc(DType::kInt32, {4}), a,
                   desc(DType::kFloat32, {4}), y),
            Status::kSuccess);
  EXPECT_EQ(from_device<float>(y, 4), (std::vector<float>{1.0f, 1.0f, 1.0f, 1.0f}));
  // fp16 * fp32 -> fp32
  ASSERT_EQ(binary(&h(), BinaryOp::kMul, desc(DType::kFloat16, {4}), c, desc(DType::kFloat32, {4}), b,
                   desc(DType::kFloat32, {4}), y),
            Status::kSuccess);
  EXPECT_EQ(from_device<float>(y, 4), (std::vector<float>{0.75f, 4.0f, 3.0f, 2.0f}));
  // fp16 tensor * fp32 zero-dim tensor -> fp16 (zero-dim operands do not promote within a category)
  EXPECT_EQ(result_type(desc(DType::kFloat16, {4}), desc(DType::kFloat32, {})), DType::kFloat16);
  EXPECT_EQ(result_type(desc(DType::kInt32, {4}), desc(DType::kFloat32, {})), DType::kFloat32);
  EXPECT_EQ(result_type(desc(DType::kInt8, {4}), desc(DType::kInt64, {})), DType::kInt8);
  ASSERT_EQ(binary(&h(), BinaryOp::kMul, desc(DType::kFloat16, {4}), c, desc(DType::kFloat32, {}), b,
                   desc(DType::kFloat16, {4}), y),
            Status::kSuccess);
  const auto yh = from_device<half>(y, 4);
  EXPECT_EQ(yh[0], half(0.75f));
  EXPECT_EQ(yh[3], half(0.125f));
  // int32 + int32 -> int32 wraps like torch
  const std::vector<std::int32_t> big = {2147483647, 5, -2147483647 - 1, 0};
  void* bi = to_device(big);
  ASSERT_EQ(binary(&h(), BinaryOp::kAdd, desc(DType::kInt32, {4}), bi, desc(DType::kInt32, {4}), a,
                   desc(DType::kInt32, {4}), y),
            Status::kSuccess);
  EXPECT_EQ(from_device<std::int32_t>(y, 4), (std::vector<std::int32_t>{-2147483647 - 1, -2, -2147483647 + 8, 4}));
}

TEST_F(BinaryTest, BoolAndInt8AndInt64) {
  const std::vector<std::uint8_t> a = {0, 1, 0, 1}, b = {0, 0, 1, 1};
  void* ad = to_device(a);
  void* bd = to_device(b);
  void* y = dalloc(64);
  const TensorDesc bd4 = desc(DType::kBool, {4});
  ASSERT_EQ(binary(&h(), BinaryOp::kAdd, bd4, ad, bd4, bd, bd4, y), Status::kSuccess);  // logical or
  EXPECT_EQ(from_device<std::uint8_t>(y, 4), (std::vector<std::uint8_t>{0, 1, 1, 1}));
  ASSERT_EQ(binary(&h(), BinaryOp::kMul, bd4, ad, bd4, bd, bd4, y), Status::kSuccess);  // logical and
  EXPECT_EQ(from_device<std::uint8_t>(y, 4), (std::vector<std::uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(binary(&h(), BinaryOp::kSub, bd4, ad, bd4, bd, bd4, y), Status::kBadParam);

  const std::vector<std::int8_t> i8 = {100, -100, 7, 127};
  void* i8d = to_device(i8);
  const TensorDesc d8 = desc(DType::kInt8, {4});
  ASSERT_EQ(binary(&h(), BinaryOp::kAdd, d8, i8d, d8, i8d, d8, y), Status::kSuccess);  // wraps
  EXPECT_EQ(from_device<std::int8_t>(y, 4), (std::vector<std::int8_t>{-56, 56, 14, -2}));

  // int64 narrows to int32 for the VFU and widens back; the zero-dim operand reads element 0.
  const std::vector<std::int64_t> i64 = {3000, -5, 1024, 7};
  void* i64d = to_device(i64);
  const TensorDesc d64 = desc(DType::kInt64, {4});
  ASSERT_EQ(binary(&h(), BinaryOp::kMul, d64, i64d, desc(DType::kInt64, {}), i64d, d64, y), Status::kSuccess);
  EXPECT_EQ(from_device<std::int64_t>(y, 4), (std::vector<std::int64_t>{9000000, -15000, 3072000, 21000}));
}

TEST_F(BinaryTest, Int64OutOfInt32RangeFaults) {
  const std::vector<std::int64_t> v = {1, 1LL << 35};
  void* d = to_device(v);
  void* y = dalloc(16);
  const TensorDesc d64 = desc(DType::kInt64, {2});
  ASSERT_EQ(binary(&h(), BinaryOp::kAdd, d64, d, d64, d, d64, y), Status::kSuccess);
  EXPECT_EQ(cnrtQueueSync(h().queue()), cnrtErrorKernelTrap);
}

TEST_F(BinaryTest, ScalarVariants) {
  const std::vector<float> a = {1.0f, -2.0f, 4.0f, 0.5f};
  void* ad = to_device(a);
  void* y = dalloc(16);
  const TensorDesc d = desc(DType::kFloat32, {4});
  ASSERT_EQ(binary_scalar(&h(), BinaryOp::kSub, d, ad, 3.0, d, y, /*scalar_first=*/true), Status::kSuccess);
  EXPECT_EQ(from_device<float>(y, 4), (std::vector<float>{2.0f, 5.0f, -1.0f, 2.5f}));
  ASSERT_EQ(binary_scalar(&h(), BinaryOp::kPow, d, ad, 2.0, d, y), Status::kSuccess);
  EXPECT_EQ(from_device<float>(y, 4), (std::vector<float>{1.0f, 4.0f, 16.0f, 0.25f}));
  ASSERT_EQ(binary_scalar(&h(), BinaryOp::kPow, d, ad, 2.0, d, y, true), Status::kSuccess);  // 2 ** a
  EXPECT_EQ(from_device<float>(y, 4), (std::vector<float>{2.0f, 0.25f, 16.0f, std::sqrt(2.0f)}));
  ASSERT_EQ(binary_scalar(&h(), BinaryOp::kDiv, d, ad, 1.0, d, y, true), Status::kSuccess);  // 1 / a
  EXPECT_EQ(from_device<float>(y, 4), (std::vector<float>{1.0f, -0.5f, 0.25f, 2.0f}));

  // int tensor + 2.5 -> float; int tensor * 3 -> int
  const std::vector<std::int32_t> ai = {1, -2, 3, 4};
  void* aid = to_device(ai);
  ASSERT_EQ(binary_scalar(&h(), BinaryOp::kAdd, desc(DType::kInt32, {4}), aid, 2.5, d, y), Status::kSuccess);
  EXPECT_EQ(from_device<float>(y, 4), (std::vector<float>{3.5f, 0.5f, 5.5f, 6.5f}));
  ASSERT_EQ(binary_scalar(&h(), BinaryOp::kMul, desc(DType::kInt32, {4}), aid, 3, desc(DType::kInt32, {4}), y),
            Status::kSuccess);
  EXPECT_EQ(from_device<std::int32_t>(y, 4), (std::vector<std::int32_t>{3, -6, 9, 12}));
  EXPECT_EQ(binary_scalar(&h(), BinaryOp::kMul, desc(DType::kInt32, {4}), aid, 2.5, desc(DType::kInt32, {4}), y),
            Status::kBadParam);

  // fp16 tensor + scalar applies the scalar in fp32 before rounding once (torch opmath).
  const std::vector<half> ah = {half(1.0f), half(1000.0f)};
  void* ahd = to_device(ah);
  const TensorDesc d2 = desc(DType::kFloat16, {2});
  ASSERT_EQ(binary_scalar(&h(), BinaryOp::kMul, d2, ahd, 0.1, d2, y), Status::kSuccess);
  const auto gh = from_device<half>(y, 2);
  EXPECT_EQ(gh[0], half(0.1f));
  EXPECT_EQ(gh[1], half(1000.0f * 0.1f));
}

TEST_F(BinaryTest, BadArguments) {
  void* p = dalloc(256);
  const TensorDesc a = desc(DType::kFloat32, {4, 3}), b = desc(DType::kFloat32, {5, 3});
  EXPECT_EQ(binary(nullptr, BinaryOp::kAdd, a, p, a, p, a, p), Status::kNotInitialized);
  EXPECT_EQ(binary(&h(), BinaryOp::kAdd, a, p, b, p, a, p), Status::kBadParam);
  EXPECT_NE(last_error_detail().find("broadcast"), std::string::npos) << last_error_detail();
  EXPECT_EQ(binary(&h(), BinaryOp::kAdd, a, p, a, p, desc(DType::kFloat32, {4, 4}), p), Status::kBadParam);
  EXPECT_EQ(binary(&h(), BinaryOp::kAdd, a, nullptr, a, p, a, p), Status::kBadParam);
  EXPECT_EQ(binary(&h(), static_cast<BinaryOp>(99), a, p, a, p, a, p), Status::kBadParam);
  EXPECT_EQ(binary(&h(), BinaryOp::kAdd, a, p, a, p, desc(DType::kInt32, {4, 3}), p), Status::kBadParam)
      << "float result can't be cast to int";
  EXPECT_EQ(binary(&h(), BinaryOp::kAdd, desc(DType::kFloat64, {4, 3}), p, a, p, a, p), Status::kNotSupported);
  EXPECT_EQ(binary(&h(), BinaryOp::kAdd, desc(DType::kInt32, {4}), p, desc(DType::kInt32, {4}), p,
                   desc(DType::kInt32, {4}), p, 0.5),
            Status::kBadParam)
      << "fractional alpha with integral tensors";
  EXPECT_EQ(binary_scalar(&h(), BinaryOp::kPow, desc(DType::kInt32, {4}), p, -1, desc(DType::kInt32, {4}), p),
            Status::kBadParam);
}

TEST_F(BinaryTest, EmptyTensorSucceedsWithoutLaunch) {
  const TensorDesc e = desc(DType::kFloat32, {3, 0});
  h().clear_ops();
  EXPECT_EQ(binary(&h(), BinaryOp::kAdd, e, nullptr, e, nullptr, e, nullptr), Status::kSuccess);
  EXPECT_TRUE(h().ops().empty());
}

}  // namespace
}  // namespace mlusim::mlu::testing
