// A flipped bit in any DMA of an elementwise op must show in its result: the numbers come out
// of the simulated memories, not from a host shortcut.
#include "common/mlu_test.h"

namespace mlusim::mlu::testing {
namespace {

class ElementwiseFaultTest : public MluTest {};

// y = a * 1: exact, so a flip in a, in the ones or in y's store always changes y.
TEST_F(ElementwiseFaultTest, BitFlipInAnyDmaChangesTheProduct) {
  const std::int64_t n = 5000;
  const auto a = random<float>(n, 1, 0.5f, 2.0f);
  void* ad = to_device(a);
  void* ones = to_device(std::vector<float>(n, 1.0f));
  void* y = dalloc(n * 4);
  const TensorDesc d = desc(DType::kFloat32, {n});
  for (unsigned long long nth : {1ULL, 2ULL, 3ULL}) {
    ASSERT_EQ(mlusimInjectDmaBitFlip(0, nth), cnrtSuccess);
    ASSERT_EQ(binary(&h(), BinaryOp::kMul, d, ad, d, ones, d, y), Status::kSuccess);
    EXPECT_NE(from_device<float>(y, n), a) << "DMA " << nth << " was flipped but the result is clean";
  }
  ASSERT_EQ(binary(&h(), BinaryOp::kMul, d, ad, d, ones, d, y), Status::kSuccess);
  EXPECT_EQ(from_device<float>(y, n), a) << "disarmed after one flip";
}

TEST_F(ElementwiseFaultTest, BitFlipInCopiesChangesTheCopy) {
  const auto a = random<float>(64 * 48, 2);
  void* ad = to_device(a);
  void* y = dalloc(a.size() * 4);
  // Direct GDRAM->GDRAM copy, then the transposing NRAM path.
  for (const TensorDesc& src : {desc(DType::kFloat32, {64, 48}), desc(DType::kFloat32, {64, 48}, {1, 64})}) {
    ASSERT_EQ(copy_strided(&h(), src, ad, desc(DType::kFloat32, {64, 48}), y), Status::kSuccess);
    const auto clean = from_device<float>(y, a.size());
    ASSERT_EQ(mlusimInjectDmaBitFlip(0, 1), cnrtSuccess);
    ASSERT_EQ(copy_strided(&h(), src, ad, desc(DType::kFloat32, {64, 48}), y), Status::kSuccess);
    EXPECT_NE(from_device<float>(y, a.size()), clean);
  }
}

}  // namespace
}  // namespace mlusim::mlu::testing
