// A flipped bit in a DMA of a fused op must show in its result: the numbers come out of the
// simulated memories (the on-chip folded batch norm included), not from a host shortcut. The injector flips
// the lowest bit of a middle byte, so the data make every step exact: x in [1, 1.5), weights and
// scales 1.0, shifts -1.0 (any last-bit change of any operand then changes y).
#include "fused/fused_test_util.h"

namespace mlusim::mlu::testing {
namespace {

class FusedFaultTest : public MluTest {
 protected:
  // Runs `op` clean, then with each DMA of `nths` flipped; the outputs must differ.
  void expect_flip_changes(const std::function<void()>& op, const void* y, std::size_t n,
                           std::initializer_list<unsigned long long> nths) {
    op();
    const std::vector<float> clean = from_device<float>(y, n);
    for (unsigned long long nth : nths) {
      ASSERT_EQ(mlusimInjectDmaBitFlip(0, nth), cnrtSuccess);
      op();
      EXPECT_NE(from_device<float>(y, n), clean) << "DMA " << nth << " was flipped but the result is clean";
    }
    op();
    EXPECT_EQ(from_device<float>(y, n), clean) << "disarmed after one flip";
  }
};

// 1x1 convolution of one channel with weights 1, BN gamma 1 and beta -1: y = x - 1 exactly (the
// convolution's DMAs carry x, w, gamma, beta and y).
TEST_F(FusedFaultTest, ConvBnAct) {
  const TensorDesc x = desc(DType::kFloat32, {2, 1, 8, 8}), w = desc(DType::kFloat32, {4, 1, 1, 1});
  const TensorDesc y = desc(DType::kFloat32, {2, 4, 8, 8}), c = desc(DType::kFloat32, {4});
  void* xp = to_device(random<float>(128, 1, 1.0f, 1.5f));
  void* wp = to_device(std::vector<float>(4, 1.0f));
  void* gp = to_device(std::vector<float>(4, 1.0f));
  void* bp = to_device(std::vector<float>(4, -1.0f));
  void* yp = dalloc(512 * 4);
  BatchNormInference bn;
  bn.weight = &c, bn.weight_ptr = gp, bn.bias = &c, bn.bias_ptr = bp;
  std::size_t ws = 0;
  ASSERT_EQ(get_conv2d_bn_act_workspace_size(handle_, ConvParams{}, Activation::kNone, x, w, &bn, y, &ws),
            Status::kSuccess);
  void* wsp = dalloc(ws);
  expect_flip_changes(
      [&] {
        ASSERT_EQ(conv2d_bn_act_forward(handle_, ConvParams{}, Activation::kNone, x, xp, w, wp, nullptr, nullptr, &bn,
                                        y, yp, wsp, ws),
                  Status::kSuccess);
      },
      yp, 512, {1, 2, 3, 4, 5, 6, 7});
}

// K = 1 with weights 1 and relu: y[m, n] = x[m] exactly.
TEST_F(FusedFaultTest, LinearAct) {
  const TensorDesc x = desc(DType::kFloat32, {48, 1}), w = desc(DType::kFloat32, {40, 1});
  const TensorDesc y = desc(DType::kFloat32, {48, 40});
  void* xp = to_device(random<float>(48, 5, 1.0f, 1.5f));
  void* wp = to_device(std::vector<float>(40, 1.0f));
  void* yp = dalloc(48 * 40 * 4);
  std::size_t ws = 0;
  ASSERT_EQ(get_linear_act_workspace_size(handle_, Activation::kRelu, x, w, nullptr, y, &ws), Status::kSuccess);
  void* wsp = ws ? dalloc(ws) : nullptr;
  expect_flip_changes(
      [&] {
        ASSERT_EQ(linear_act(handle_, Activation::kRelu, x, xp, w, wp, nullptr, nullptr, y, yp, wsp, ws),
                  Status::kSuccess);
      },
      yp, 48 * 40, {1, 2, 3, 4});
}

// y = -(a * ones) - (-1) = 1 - a exactly.
TEST_F(FusedFaultTest, ElementwiseProgram) {
  const TensorDesc d = desc(DType::kFloat32, {6000});
  void* a = to_device(random<float>(6000, 7, 1.0f, 1.5f));
  void* ones = to_device(std::vector<float>(6000, 1.0f));
  void* yp = dalloc(6000 * 4);
  ElementwiseProgram prog;
  const int prod = prog.binary(BinaryOp::kMul, prog.input(0), prog.input(1));
  prog.set_output(prog.binary(BinaryOp::kSub, prog.unary(UnaryOp::kNeg, prod), prog.constant(-1.0)));
  expect_flip_changes(
      [&] {
        ASSERT_EQ(elementwise_program(handle_, prog, {{&d, a}, {&d, ones}}, d, yp), Status::kSuccess);
      },
      yp, 6000, {1, 2, 3, 4, 5, 6});
}

}  // namespace
}  // namespace mlusim::mlu::testing
