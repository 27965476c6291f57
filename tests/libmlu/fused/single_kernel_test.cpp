// softmax_forward and layer_norm_forward are already fused: one kernel each (from the op record
// and the driver's kernel records), reading x once and writing y once at the minimum.
#include "fused/fused_test_util.h"

namespace mlusim::mlu::testing {
namespace {

class SingleKernelTest : public MluTest {};

TEST_F(SingleKernelTest, SoftmaxAndLayerNormAreOneKernel) {
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    const std::size_t es = sim::dtype_size(dt);
    const TensorDesc x = desc(dt, {6, 5, 77});
    void* xp = dalloc(6 * 5 * 77 * es);
    void* yp = dalloc(6 * 5 * 77 * es);
    ASSERT_EQ(fill(handle_, 0.25, x, xp), Status::kSuccess);
    for (int dim : {-1, 1}) {
      h().clear_ops();
      const DeviceCost c = device_cost(h(), [&] {
        ASSERT_EQ(softmax_forward(handle_, SoftmaxMode::kSoftmax, dim, x, xp, x, yp), Status::kSuccess);
      });
      ASSERT_EQ(h().ops().size(), 1u);
      EXPECT_EQ(h().ops().back().kernels, 1u);
      EXPECT_EQ(c.kernels, 1u) << c.names;
      EXPECT_GE(c.gdram_bytes, 2 * 6 * 5 * 77 * es);
    }
    const TensorDesc wd = desc(dt, {77});
    void* wp = dalloc(77 * es);
    ASSERT_EQ(fill(handle_, 1.0, wd, wp), Status::kSuccess);
    h().clear_ops();
    const DeviceCost c = device_cost(h(), [&] {
      ASSERT_EQ(
          layer_norm_forward(handle_, 1, 1e-5, x, xp, &wd, wp, &wd, wp, x, yp, nullptr, nullptr, nullptr, nullptr),
          Status::kSuccess);
    });
    ASSERT_EQ(h().ops().size(), 1u);
    EXPECT_EQ(h().ops().back().kernels, 1u);
    EXPECT_EQ(c.kernels, 1u) << c.names;
  }
}

}  // namespace
}  // namespace mlusim::mlu::testing
