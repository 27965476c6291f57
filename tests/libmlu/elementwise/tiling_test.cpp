// Tiles are sized from the device's NRAM: halving it changes the number of DMAs and the cycles,
// never the numbers.
#include <cstdint>

#include "common/mlu_test.h"

namespace mlusim::mlu::testing {
namespace {

class ElementwiseTilingTest : public MluTest {
 protected:
  struct Run {
    std::vector<float> y;
    std::uint64_t dma_intrinsics = 0;
    double kernel_ns = 0;
  };
  Run run_gelu_bias(const std::vector<float>& x, const std::vector<float>& b) {
    void* xd = to_device(x);
    void* bd = to_device(b);
    void* yd = dalloc(x.size() * 4);
    const TensorDesc xdsc = desc(DType::kFloat32, {97, 211}), bdsc = desc(DType::kFloat32, {211});
    EXPECT_EQ(cnrtQueueSync(h().queue()), cnrtSuccess);
    EXPECT_EQ(mlusimResetStats(0), cnrtSuccess);
    EXPECT_EQ(binary(&h(), BinaryOp::kAdd, xdsc, xd, bdsc, bd, xdsc, yd), Status::kSuccess);
    EXPECT_EQ(unary(&h(), UnaryOp::kGeluTanh, xdsc, yd, xdsc, yd), Status::kSuccess);
    Run r;
    r.y = from_device<float>(yd, x.size());
    mlusimDeviceStats_t st;
    EXPECT_EQ(mlusimGetDeviceStats(0, &st), cnrtSuccess);
    r.dma_intrinsics = st.engine_intrinsics[3];
    r.kernel_ns = st.elapsed_ns;
    return r;
  }
};

TEST_F(ElementwiseTilingTest, HalfTheNramMoreDmasSameNumbers) {
  const auto x = random<float>(97 * 211, 1), b = random<float>(211, 2);
  const Run full = run_gelu_bias(x, b);
  const char* overrides[] = {"core.nram_bytes=32KiB"};
  ASSERT_EQ(mlusimLoadConfigWithOverrides("tiny", overrides, 1), cnrtSuccess);
  allocations_.clear();
  Handle::destroy(handle_);
  ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  const Run half = run_gelu_bias(x, b);
  EXPECT_EQ(half.y, full.y);
  EXPECT_GT(half.dma_intrinsics, full.dma_intrinsics);
}

}  // namespace
}  // namespace mlusim::mlu::testing
