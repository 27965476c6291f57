// Reduction tiles come from the device's NRAM: halving it changes DMA counts, never results
// (integer sums and index reductions are exact whatever the split).
#include <cstdint>

#include "common/mlu_test.h"

namespace mlusim::mlu::testing {
namespace {

class ReduceTilingTest : public MluTest {
 protected:
  struct Run {
    std::vector<std::int64_t> sums, argmax;
    std::uint64_t dma_intrinsics = 0;
  };
  Run run(const std::vector<std::int32_t>& x) {
    void* xd = to_device(x);
    void* s = dalloc(300 * 8);
    void* a = dalloc(300 * 8);
    const TensorDesc xdsc = desc(DType::kInt32, {300, 97});
    std::size_t ws_bytes = 0;
    EXPECT_EQ(get_reduce_workspace_size(&h(), xdsc, {0}, &ws_bytes), Status::kSuccess);
    void* ws = dalloc(ws_bytes);
    EXPECT_EQ(cnrtQueueSync(h().queue()), cnrtSuccess);
    EXPECT_EQ(mlusimResetStats(0), cnrtSuccess);
    EXPECT_EQ(reduce(&h(), ReduceOp::kSum, xdsc, xd, {0}, false, desc(DType::kInt64, {97}), s, ws, ws_bytes),
              Status::kSuccess);
    EXPECT_EQ(arg_reduce(&h(), Extreme::kMax, xdsc, xd, 0, false, desc(DType::kInt64, {97}), a, ws, ws_bytes),
              Status::kSuccess);
    Run r;
    r.sums = from_device<std::int64_t>(s, 97);
    r.argmax = from_device<std::int64_t>(a, 97);
    mlusimDeviceStats_t st;
    EXPECT_EQ(mlusimGetDeviceStats(0, &st), cnrtSuccess);
    r.dma_intrinsics = st.engine_intrinsics[3];
    return r;
  }
};

TEST_F(ReduceTilingTest, HalfTheNramMoreDmasSameResults) {
  std::vector<std::int32_t> x(300 * 97);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int32_t>((i * 7919) % 1000) - 400;
  const Run full = run(x);
  const char* overrides[] = {"core.nram_bytes=32KiB"};
  ASSERT_EQ(mlusimLoadConfigWithOverrides("tiny", overrides, 1), cnrtSuccess);
  allocations_.clear();
  Handle::destroy(handle_);
  ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  const Run half = run(x);
  EXPECT_EQ(half.sums, full.sums);
  EXPECT_EQ(half.argmax, full.argmax);
  EXPECT_GT(half.dma_intrinsics, full.dma_intrinsics);
}

}  // namespace
}  // namespace mlusim::mlu::testing
