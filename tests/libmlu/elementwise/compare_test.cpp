// Comparisons, logical ops, where, clamp and fill: broadcasting, promotion, NaN rules, every
// dtype of fill, strided outputs.
#include <cmath>
#include <cstdint>

#include "common/mlu_test.h"
#include "elementwise/strided_ref.h"

namespace mlusim::mlu::testing {
namespace {

using B = std::uint8_t;  // bool tensors on the host

bool ref_compare(CompareOp op, double a, double b) {
  switch (op) {
    case CompareOp::kEq: return a == b;
    case CompareOp::kNe: return a != b;
    case CompareOp::kLt: return a < b;
    case CompareOp::kLe: return a <= b;
    case CompareOp::kGt: return a > b;
    case CompareOp::kGe: return a >= b;
  }
  return false;
}

class CompareTest : public MluTest {};

TEST_F(CompareTest, TensorComparisonsBroadcastAndPromote) {
  std::vector<float> a = {1.5f, -2.0f, 3.0f, NAN, 0.0f, 7.0f};  // [2, 3]
  const std::vector<std::int32_t> b = {1, -2, 4};                // [3], promoted to float
  void* ad = to_device(a);
  void* bd = to_device(b);
  void* y = dalloc(6);
  for (CompareOp op : {CompareOp::kEq, CompareOp::kNe, CompareOp::kLt, CompareOp::kLe, CompareOp::kGt, CompareOp::kGe}) {
    ASSERT_EQ(compare(&h(), op, desc(DType::kFloat32, {2, 3}), ad, desc(DType::kInt32, {3}), bd, desc(DType::kBool, {2, 3}), y),
              Status::kSuccess)
        << last_error_detail();
    const auto got = from_device<B>(y, 6);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(got[i], ref_compare(op, a[i], b[i % 3])) << static_cast<int>(op) << " " << i;
  }
}

TEST_F(CompareTest, ScalarComparisons) {
  const std::vector<std::int32_t> a = {-1, 2, 3, 2};
  void* ad = to_device(a);
  void* y = dalloc(16);
  const TensorDesc d = desc(DType::kInt32, {4}), yd = desc(DType::kBool, {4});
  ASSERT_EQ(compare_scalar(&h(), CompareOp::kEq, d, ad, 2, yd, y), Status::kSuccess);
  EXPECT_EQ(from_device<B>(y, 4), (std::vector<B>{0, 1, 0, 1}));
  ASSERT_EQ(compare_scalar(&h(), CompareOp::kLt, d, ad, 2.5, yd, y), Status::kSuccess);  // compares in float
  EXPECT_EQ(from_device<B>(y, 4), (std::vector<B>{1, 1, 0, 1}));
  const std::vector<std::int8_t> c = {-100, 100};
  void* cd = to_device(c);
  ASSERT_EQ(compare_scalar(&h(), CompareOp::kGt, desc(DType::kInt8, {2}), cd, 1000, desc(DType::kBool, {2}), y),
            Status::kSuccess)
      << "a scalar beyond int8 compares in int32";
  EXPECT_EQ(from_device<B>(y, 2), (std::vector<B>{0, 0}));
  // Output in another dtype: 1/0.
  ASSERT_EQ(compare_scalar(&h(), CompareOp::kGe, d, ad, 2, desc(DType::kFloat32, {4}), y), Status::kSuccess);
  EXPECT_EQ(from_device<float>(y, 4), (std::vector<float>{0, 1, 1, 1}));
}

TEST_F(CompareTest, LogicalOps) {
  const std::vector<float> a = {0.0f, 2.0f, 0.0f, -1.0f};
  const std::vector<std::int32_t> b = {0, 0, 5, 3};
  void* ad = to_device(a);
  void* bd = to_device(b);
  void* y = dalloc(4);
  const TensorDesc ad4 = desc(DType::kFloat32, {4}), bd4 = desc(DType::kInt32, {4}), yd = desc(DType::kBool, {4});
  ASSERT_EQ(logical(&h(), LogicalOp::kAnd, ad4, ad, bd4, bd, yd, y), Status::kSuccess);
  EXPECT_EQ(from_device<B>(y, 4), (std::vector<B>{0, 0, 0, 1}));
  ASSERT_EQ(logical(&h(), LogicalOp::kOr, ad4, ad, bd4, bd, yd, y), Status::kSuccess);
  EXPECT_EQ(from_device<B>(y, 4), (std::vector<B>{0, 1, 1, 1}));
  ASSERT_EQ(logical(&h(), LogicalOp::kXor, ad4, ad, bd4, bd, yd, y), Status::kSuccess);
  EXPECT_EQ(from_device<B>(y, 4), (std::vector<B>{0, 1, 1, 0}));
  ASSERT_EQ(logical_not(&h(), ad4, ad, yd, y), Status::kSuccess);
  EXPECT_EQ(from_device<B>(y, 4), (std::vector<B>{1, 0, 1, 0}));
}

TEST_F(CompareTest, WhereBroadcastsAllThree) {
  const std::vector<B> cond = {1, 0, 1};                      // [3]
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};            // [2, 3]
  const std::vector<half> b = {half(-1.0f), half(-2.0f)};     // [2, 1], promoted to fp32
  void* cd = to_device(cond);
  void* ad = to_device(a);
  void* bd = to_device(b);
  void* y = dalloc(24);
  ASSERT_EQ(where(&h(), desc(DType::kBool, {3}), cd, desc(DType::kFloat32, {2, 3}), ad, desc(DType::kFloat16, {2, 1}), bd,
                  desc(DType::kFloat32, {2, 3}), y),
            Status::kSuccess)
      << last_error_detail();
  EXPECT_EQ(from_device<float>(y, 6), (std::vector<float>{1, -1, 3, 4, -2, 6}));
  EXPECT_EQ(where(&h(), desc(DType::kBool, {3}), cd, desc(DType::kFloat32, {2, 3}), ad, desc(DType::kFloat16, {2, 1}), bd,
                  desc(DType::kInt32, {2, 3}), y),
            Status::kBadParam);
}

TEST_F(CompareTest, ClampBoundsAndNan) {
  const std::vector<float> x = {-5, -0.5f, 0.5f, 5, NAN};
  void* xd = to_device(x);
  void* y = dalloc(24);
  const TensorDesc d = desc(DType::kFloat32, {5});
  ASSERT_EQ(clamp(&h(), d, xd, -1.0, 1.0, d, y), Status::kSuccess);
  auto got = from_device<float>(y, 5);
  EXPECT_EQ(std::vector<float>(got.begin(), got.begin() + 4), (std::vector<float>{-1, -0.5f, 0.5f, 1}));
  EXPECT_TRUE(std::isnan(got[4]));
  ASSERT_EQ(clamp(&h(), d, xd, std::nullopt, 0.0, d, y), Status::kSuccess);
  got = from_device<float>(y, 4);
  EXPECT_EQ(got, (std::vector<float>{-5, -0.5f, 0, 0}));
  ASSERT_EQ(clamp(&h(), d, xd, 2.0, 1.0, d, y), Status::kSuccess);  // min > max gives max
  got = from_device<float>(y, 4);
  EXPECT_EQ(got, (std::vector<float>{1, 1, 1, 1}));
  const std::vector<std::int64_t> xi = {-7, 3, 9};
  void* xid = to_device(xi);
  ASSERT_EQ(clamp(&h(), desc(DType::kInt64, {3}), xid, 0.0, 5.0, desc(DType::kInt64, {3}), y), Status::kSuccess);
  EXPECT_EQ(from_device<std::int64_t>(y, 3), (std::vector<std::int64_t>{0, 3, 5}));
  EXPECT_EQ(clamp(&h(), d, xd, std::nullopt, std::nullopt, d, y), Status::kBadParam);
  EXPECT_EQ(clamp(&h(), desc(DType::kInt32, {5}), xd, 0.5, std::nullopt, desc(DType::kInt32, {5}), y), Status::kBadParam);
}

class FillTest : public MluTest {};

TEST_F(FillTest, EveryDtype) {
  void* y = dalloc(1000 * 8);
  ASSERT_EQ(fill(&h(), 2.5, desc(DType::kFloat32, {1000}), y), Status::kSuccess);
  EXPECT_EQ(from_device<float>(y, 1000), std::vector<float>(1000, 2.5f));
  ASSERT_EQ(fill(&h(), 0.1, desc(DType::kFloat16, {333}), y), Status::kSuccess);
  EXPECT_EQ(from_device<half>(y, 333)[332], half(0.1f));
  ASSERT_EQ(fill(&h(), -3.9, desc(DType::kInt32, {10}), y), Status::kSuccess);
  EXPECT_EQ(from_device<std::int32_t>(y, 10), std::vector<std::int32_t>(10, -3));
  ASSERT_EQ(fill(&h(), 5e12, desc(DType::kInt64, {77}), y), Status::kSuccess);
  EXPECT_EQ(from_device<std::int64_t>(y, 77), std::vector<std::int64_t>(77, 5000000000000LL));
  ASSERT_EQ(fill(&h(), 0.1, desc(DType::kFloat64, {9}), y), Status::kSuccess);
  EXPECT_EQ(from_device<double>(y, 9), std::vector<double>(9, 0.1));
  ASSERT_EQ(fill(&h(), 7, desc(DType::kBool, {5}), y), Status::kSuccess);
  EXPECT_EQ(from_device<B>(y, 5), std::vector<B>(5, 1));
  EXPECT_EQ(fill(&h(), 300, desc(DType::kInt8, {5}), y), Status::kBadParam) << "overflows int8";
  EXPECT_EQ(fill(&h(), 1e6, desc(DType::kFloat16, {5}), y), Status::kBadParam) << "overflows fp16";
}

TEST_F(FillTest, StridedDestinationLeavesGapsAlone) {
  std::vector<float> buf(6 * 10, -1.0f);
  void* y = to_device(buf);
  // y[:, 1:9:2] of a [6, 10] buffer.
  ASSERT_EQ(fill(&h(), 4.0, desc(DType::kFloat32, {6, 4}, {10, 2}), static_cast<float*>(y) + 1), Status::kSuccess);
  const auto got = from_device<float>(y, 60);
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 10; ++c) EXPECT_EQ(got[r * 10 + c], (c % 2 == 1 && c < 9) ? 4.0f : -1.0f) << r << "," << c;
  EXPECT_EQ(fill(&h(), 1.0, desc(DType::kFloat32, {6, 4}, {0, 1}), y), Status::kBadParam) << "stride 0 output";
}

}  // namespace
}  // namespace mlusim::mlu::testing
