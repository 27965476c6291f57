// Unary math and activation gradients against double-precision host formulas (torch's), on
// odd, strided and fp16 tensors.
#include <cmath>
#include <cstdint>
#include <functional>

#include "common/mlu_test.h"
#include "elementwise/strided_ref.h"

namespace mlusim::mlu::testing {
namespace {

const double kPi = 3.14159265358979323846;

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / kPi);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

double ref_unary(UnaryOp op, double x) {
  switch (op) {
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kAbs: return std::fabs(x);
    case UnaryOp::kSquare: return x * x;
    case UnaryOp::kRelu: return x < 0 ? 0 : x;
    case UnaryOp::kExp: return std::exp(x);
    case UnaryOp::kLog: return std::log(x);
    case UnaryOp::kSqrt: return std::sqrt(x);
    case UnaryOp::kRsqrt: return 1 / std::sqrt(x);
    case UnaryOp::kSigmoid: return sigmoid(x);
    case UnaryOp::kTanh: return std::tanh(x);
    case UnaryOp::kSilu: return x * sigmoid(x);
    case UnaryOp::kReciprocal: return 1 / x;
    case UnaryOp::kGelu: return gelu(x);
    case UnaryOp::kGeluTanh: return gelu_tanh(x);
    case UnaryOp::kSin: return std::sin(x);
    case UnaryOp::kCos: return std::cos(x);
  }
  return 0;
}

double ref_grad(ActivationGrad act, double g, double v) {
  switch (act) {
    case ActivationGrad::kSigmoid: return g * (1 - v) * v;
    case ActivationGrad::kTanh: return g * (1 - v * v);
    case ActivationGrad::kGelu: return g * (0.5 * (1 + std::erf(v / std::sqrt(2.0))) + v * std::exp(-0.5 * v * v) / std::sqrt(2 * kPi));
    case ActivationGrad::kGeluTanh: {
      const double k = std::sqrt(2.0 / kPi), kappa = 0.044715;
      const double t = std::tanh(k * (v + kappa * v * v * v));
      return g * (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * k * (1 + 3 * kappa * v * v));
    }
    case ActivationGrad::kSilu: {
      const double s = sigmoid(v);
      return g * s * (1 + v * (1 - s));
    }
  }
  return 0;
}

class UnaryTest : public MluTest {};

TEST_F(UnaryTest, EveryOpInFp32) {
  const std::int64_t n = 1001;
  for (UnaryOp op : {UnaryOp::kNeg, UnaryOp::kAbs, UnaryOp::kSquare, UnaryOp::kRelu, UnaryOp::kExp, UnaryOp::kLog,
                     UnaryOp::kSqrt, UnaryOp::kRsqrt, UnaryOp::kSigmoid, UnaryOp::kTanh, UnaryOp::kSilu,
                     UnaryOp::kReciprocal, UnaryOp::kGelu, UnaryOp::kGeluTanh, UnaryOp::kSin, UnaryOp::kCos}) {
    const bool positive = op == UnaryOp::kLog || op == UnaryOp::kSqrt || op == UnaryOp::kRsqrt;
    const auto x = random<float>(n, 30 + static_cast<unsigned>(op), positive ? 0.05f : -5.0f, 5.0f);
    void* xd = to_device(x);
    void* yd = dalloc(n * 4);
    const TensorDesc d = desc(DType::kFloat32, {n});
    ASSERT_EQ(unary(&h(), op, d, xd, d, yd), Status::kSuccess) << last_error_detail();
    const auto got = from_device<float>(yd, n);
    for (std::int64_t i = 0; i < n; ++i) {
      const double want = ref_unary(op, x[i]);
      ASSERT_NEAR(got[i], want, 4e-6 * std::max(1.0, std::fabs(want))) << "op " << static_cast<int>(op) << " x " << x[i];
    }
  }
}

TEST_F(UnaryTest, StridedInputAndOutput) {
  const auto x = random<float>(6 * 9, 40, -3.0f, 3.0f);
  void* xd = to_device(x);
  void* yd = dalloc(9 * 6 * 4);
  // x viewed transposed [9, 6]; y transposed too.
  ASSERT_EQ(unary(&h(), UnaryOp::kGelu, desc(DType::kFloat32, {9, 6}, {1, 9}), xd, desc(DType::kFloat32, {9, 6}, {1, 9}), yd),
            Status::kSuccess);
  const auto got = from_device<float>(yd, 54);
  for (int i = 0; i < 54; ++i) ASSERT_NEAR(got[i], gelu(x[i]), 4e-6);
}

TEST_F(UnaryTest, HalfRoundsOnceFromFp32) {
  const std::int64_t n = 300;
  const auto x = random<half>(n, 41, -4.0f, 4.0f);
  void* xd = to_device(x);
  void* yd = dalloc(n * 2);
  const TensorDesc d = desc(DType::kFloat16, {n});
  for (UnaryOp op : {UnaryOp::kExp, UnaryOp::kTanh, UnaryOp::kGelu, UnaryOp::kGeluTanh, UnaryOp::kSilu}) {
    ASSERT_EQ(unary(&h(), op, d, xd, d, yd), Status::kSuccess);
    const auto got = from_device<half>(yd, n);
    for (std::int64_t i = 0; i < n; ++i) {
      // Within one fp16 ulp of the exact value (fp32 intermediate, rounded once).
      const double want = ref_unary(op, to_f(x[i]));
      ASSERT_NEAR(to_f(got[i]), want, std::max(1e-4, std::fabs(want) * 1.0 / 1024)) << static_cast<int>(op) << " " << i;
    }
  }
}

TEST_F(UnaryTest, IntegralInputs) {
  const std::vector<std::int32_t> x = {-3, 0, 7, -2147483647};
  void* xd = to_device(x);
  void* yd = dalloc(16);
  const TensorDesc d = desc(DType::kInt32, {4});
  ASSERT_EQ(unary(&h(), UnaryOp::kAbs, d, xd, d, yd), Status::kSuccess);
  EXPECT_EQ(from_device<std::int32_t>(yd, 4), (std::vector<std::int32_t>{3, 0, 7, 2147483647}));
  ASSERT_EQ(unary(&h(), UnaryOp::kExp, desc(DType::kInt32, {2}), xd, desc(DType::kFloat32, {2}), yd), Status::kSuccess);
  const auto e = from_device<float>(yd, 2);
  EXPECT_FLOAT_EQ(e[0], std::exp(-3.0f));
  EXPECT_EQ(unary(&h(), UnaryOp::kExp, d, xd, d, yd), Status::kBadParam) << "exp(int) is float";
  EXPECT_EQ(unary(&h(), UnaryOp::kNeg, desc(DType::kBool, {4}), xd, desc(DType::kBool, {4}), yd), Status::kNotSupported);
}

class ActivationGradTest : public MluTest {
 protected:
  void check(ActivationGrad act, DType t, double tol) {
    const std::int64_t n = 777;
    const bool from_output = act == ActivationGrad::kSigmoid || act == ActivationGrad::kTanh;
    const auto g = random<float>(n, 50, -2.0f, 2.0f);
    const auto v = random<float>(n, 51, from_output ? -0.99f : -6.0f, from_output ? 0.99f : 6.0f);
    std::vector<double> gd(g.begin(), g.end()), vd(v.begin(), v.end());
    void* gp;
    void* vp;
    if (t == DType::kFloat16) {
      std::vector<half> gh(g.begin(), g.end()), vh(v.begin(), v.end());
      for (std::int64_t i = 0; i < n; ++i) gd[i] = to_f(gh[i]), vd[i] = to_f(vh[i]);
      gp = to_device(gh);
      vp = to_device(vh);
    } else {
      gp = to_device(g);
      vp = to_device(v);
    }
    void* out = dalloc(n * 4);
    const TensorDesc d = desc(t, {n});
    ASSERT_EQ(activation_backward(&h(), act, d, gp, d, vp, d, out), Status::kSuccess) << last_error_detail();
    std::vector<double> got(n);
    if (t == DType::kFloat16) {
      const auto r = from_device<half>(out, n);
      for (std::int64_t i = 0; i < n; ++i) got[i] = to_f(r[i]);
    } else {
      const auto r = from_device<float>(out, n);
      for (std::int64_t i = 0; i < n; ++i) got[i] = r[i];
    }
    for (std::int64_t i = 0; i < n; ++i) {
      const double want = ref_grad(act, gd[i], vd[i]);
      ASSERT_NEAR(got[i], want, tol * std::max(1.0, std::fabs(want))) << static_cast<int>(act) << " v=" << vd[i];
    }
  }
};

TEST_F(ActivationGradTest, Fp32MatchesTorchFormulas) {
  for (ActivationGrad a : {ActivationGrad::kSigmoid, ActivationGrad::kTanh, ActivationGrad::kGelu,
                           ActivationGrad::kGeluTanh, ActivationGrad::kSilu})
    check(a, DType::kFloat32, 1e-5);
}

TEST_F(ActivationGradTest, Fp16WithinHalfPrecision) {
  for (ActivationGrad a : {ActivationGrad::kSigmoid, ActivationGrad::kGelu, ActivationGrad::kSilu})
    check(a, DType::kFloat16, 1.0 / 1024);
}

TEST_F(ActivationGradTest, GeluGradientAtZeroIsHalf) {
  const std::vector<float> g = {2.0f}, x = {0.0f};
  void* gp = to_device(g);
  void* xp = to_device(x);
  void* out = dalloc(4);
  const TensorDesc d = desc(DType::kFloat32, {1});
  ASSERT_EQ(activation_backward(&h(), ActivationGrad::kGelu, d, gp, d, xp, d, out), Status::kSuccess);
  EXPECT_FLOAT_EQ(from_device<float>(out, 1)[0], 1.0f);
}

TEST_F(ActivationGradTest, ThresholdBackwardMasksWithBroadcast) {
  const std::vector<float> g = {1, 2, 3, 4, 5, 6};
  const std::vector<float> x = {-1.0f, 0.0f, 0.5f, NAN, 2.0f, -0.0f};
  void* gp = to_device(g);
  void* xp = to_device(x);
  void* out = dalloc(24);
  const TensorDesc d = desc(DType::kFloat32, {2, 3});
  ASSERT_EQ(threshold_backward(&h(), d, gp, d, xp, 0.0, d, out), Status::kSuccess);
  EXPECT_EQ(from_device<float>(out, 6), (std::vector<float>{0, 0, 3, 4, 5, 0})) << "NaN keeps the gradient (torch)";
  ASSERT_EQ(threshold_backward(&h(), d, gp, d, xp, 1.0, d, out), Status::kSuccess);
  EXPECT_EQ(from_device<float>(out, 6), (std::vector<float>{0, 0, 0, 4, 5, 0}));
  // Broadcast gradient (an expanded scalar) over x.
  ASSERT_EQ(threshold_backward(&h(), desc(DType::kFloat32, {}), gp, d, xp, 0.0, d, out), Status::kSuccess);
  EXPECT_EQ(from_device<float>(out, 6), (std::vector<float>{0, 0, 1, 1, 1, 0}));
}

TEST_F(ActivationGradTest, BadArguments) {
  void* p = dalloc(64);
  const TensorDesc d = desc(DType::kFloat32, {4});
  EXPECT_EQ(activation_backward(&h(), static_cast<ActivationGrad>(9), d, p, d, p, d, p), Status::kBadParam);
  EXPECT_EQ(activation_backward(&h(), ActivationGrad::kTanh, desc(DType::kInt32, {4}), p, desc(DType::kInt32, {4}), p,
                                desc(DType::kInt32, {4}), p),
            Status::kNotSupported);
  EXPECT_EQ(activation_backward(&h(), ActivationGrad::kTanh, d, p, desc(DType::kFloat32, {5}), p, d, p), Status::kBadParam);
  EXPECT_EQ(threshold_backward(&h(), d, p, d, p, 0.0, desc(DType::kFloat32, {2}), p), Status::kBadParam);
}

}  // namespace
}  // namespace mlusim::mlu::testing
