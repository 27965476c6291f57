// A flipped bit in any DMA of a reduction (loads, partial stores, the combine) must change the
// result: integer sums cannot absorb it.
#include "common/mlu_test.h"

namespace mlusim::mlu::testing {
namespace {

class ReduceFaultTest : public MluTest {};

TEST_F(ReduceFaultTest, BitFlipChangesAnIntegerSum) {
  const std::int64_t n = 30000;  // large enough for the two-phase split
  std::vector<std::int32_t> x(n);
  for (std::int64_t i = 0; i < n; ++i) x[i] = static_cast<std::int32_t>(i % 1000) - 500;
  void* xd = to_device(x);
  void* y = dalloc(8);
  const TensorDesc d = desc(DType::kInt32, {n});
  std::size_t ws_bytes = 0;
  ASSERT_EQ(get_reduce_workspace_size(&h(), d, {}, &ws_bytes), Status::kSuccess);
  void* ws = dalloc(ws_bytes);
  ASSERT_EQ(reduce(&h(), ReduceOp::kSum, d, xd, {}, false, desc(DType::kInt64, {}), y, ws, ws_bytes), Status::kSuccess);
  const std::int64_t clean = from_device<std::int64_t>(y, 1)[0];
  std::int64_t want = 0;
  for (std::int32_t v : x) want += v;
  ASSERT_EQ(clean, want);
  for (unsigned long long nth : {1ULL, 5ULL}) {
    ASSERT_EQ(mlusimInjectDmaBitFlip(0, nth), cnrtSuccess);
    ASSERT_EQ(reduce(&h(), ReduceOp::kSum, d, xd, {}, false, desc(DType::kInt64, {}), y, ws, ws_bytes), Status::kSuccess);
    EXPECT_NE(from_device<std::int64_t>(y, 1)[0], clean) << "DMA " << nth;
  }
}

}  // namespace
}  // namespace mlusim::mlu::testing
