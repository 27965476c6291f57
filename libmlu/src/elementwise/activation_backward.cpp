// Gradients of the activations, each one streaming kernel over (grad, value) with torch's
// CPU formulas and operation order, computed in fp32 (fp16 rounds once at the end, as torch's
// opmath does).
//
// The VFU has no erf, but it has the exact (erf) gelu: Phi(x) = gelu(x) / x for x != 0 and 1/2
// at 0. gelu(x) is computed as x * 0.5 * (1 + erf(x / sqrt 2)) in fp32, the same cancellation
// torch's own cdf has for very negative x, so the quotient tracks torch's cdf to a few ulp.
#include <cmath>
#include <string>

#include "common/error.h"
#include "elementwise/conversion.h"
#include "elementwise/op_checks.h"
#include "elementwise/streaming_kernel.h"
#include "mlusim/mlu/elementwise.h"

namespace mlusim::mlu {
namespace {

using ew::Program;
using ew::ValueId;
using sim::VecBinaryOp;
using sim::VecUnaryOp;

ValueId mul(Program& p, ValueId a, ValueId b) { return p.binary(VecBinaryOp::kMul, a, b); }
ValueId add(Program& p, ValueId a, ValueId b) { return p.binary(VecBinaryOp::kAdd, a, b); }
ValueId muls(Program& p, ValueId a, double s) { return p.binary_scalar(VecBinaryOp::kMul, a, s); }
ValueId adds(Program& p, ValueId a, double s) { return p.binary_scalar(VecBinaryOp::kAdd, a, s); }
// s - a
ValueId rsubs(Program& p, double s, ValueId a) { return adds(p, p.unary(VecUnaryOp::kNeg, a), s); }

// grad * (1 - y) * y
ValueId sigmoid_grad(Program& p, ValueId g, ValueId y) { return mul(p, mul(p, g, rsubs(p, 1.0, y)), y); }

// grad * (1 - y * y)
ValueId tanh_grad(Program& p, ValueId g, ValueId y) { return mul(p, g, rsubs(p, 1.0, mul(p, y, y))); }

// grad * (cdf + x * pdf), cdf = Phi(x), pdf = exp(-x^2 / 2) / sqrt(2 pi).
ValueId gelu_grad(Program& p, ValueId g, ValueId x) {
  const double kBeta = M_2_SQRTPI * M_SQRT1_2 * 0.5;
  const ValueId is_zero = p.cast(p.binary_scalar(VecBinaryOp::kEq, x, 0.0), DType::kBool);
  const ValueId quotient = p.binary(VecBinaryOp::kDiv, p.unary(VecUnaryOp::kGelu, x), x);
  const ValueId cdf = p.select(is_zero, p.constant(DType::kFloat32, 0.5), quotient);
  const ValueId pdf = muls(p, p.unary(VecUnaryOp::kExp, muls(p, mul(p, x, x), -0.5)), kBeta);
  return mul(p, g, add(p, cdf, mul(p, x, pdf)));
}

// torch's GeluBackward with approximate='tanh'.
ValueId gelu_tanh_grad(Program& p, ValueId g, ValueId x) {
  const double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5, kKappa = 0.044715;
  const ValueId x_sq = mul(p, x, x);
  const ValueId x_cube = mul(p, x_sq, x);
  const ValueId inner = muls(p, add(p, x, muls(p, x_cube, kKappa)), kBeta);
  const ValueId t = p.unary(VecUnaryOp::kTanh, inner);
  const ValueId left = muls(p, x, 0.5);
  const ValueId left_derivative = muls(p, adds(p, t, 1.0), 0.5);
  const ValueId tanh_derivative = rsubs(p, 1.0, mul(p, t, t));
  const ValueId inner_derivative = muls(p, adds(p, muls(p, x_sq, 3.0 * kKappa), 1.0), kBeta);
  const ValueId right_derivative = mul(p, mul(p, left, tanh_derivative), inner_derivative);
  return mul(p, g, add(p, left_derivative, right_derivative));
}

// grad * s * (1 + x * (1 - s)), s = sigmoid(x).
ValueId silu_grad(Program& p, ValueId g, ValueId x) {
  const ValueId s = p.unary(VecUnaryOp::kSigmoid, x);
  return mul(p, mul(p, g, s), adds(p, mul(p, x, rsubs(p, 1.0, s)), 1.0));
}

const char* act_name(ActivationGrad act) {
  switch (act) {
    case ActivationGrad::kSigmoid: return "sigmoid_backward";
    case ActivationGrad::kTanh: return "tanh_backward";
    case ActivationGrad::kGelu: return "gelu_backward";
    case ActivationGrad::kGeluTanh: return "gelu_tanh_backward";
    case ActivationGrad::kSilu: return "silu_backward";
  }
  return "activation_backward";
}

}  // namespace

Status threshold_backward(Handle* h, const TensorDesc& grad, const void* grad_ptr, const TensorDesc& x,
                          const void* x_ptr, double threshold, const TensorDesc& grad_in, void* grad_in_ptr) {
  const char* name = "threshold_backward";
  MLU_RETURN_IF_ERROR(
      ew::check_elementwise(h, name, {{"grad", &grad, grad_ptr}, {"x", &x, x_ptr}}, {"grad_in", &grad_in, grad_in_ptr}));
  MLU_CHECK(x.dtype() != DType::kBool && grad.dtype() != DType::kBool, Status::kNotSupported,
            std::string(name) + ": not supported for bool tensors");
  const DType compute = result_type(grad, x);
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(name, compute, grad_in));
  const DType x_math = ew::vfu_dtype(x.dtype());
  MLU_CHECK(sim::dtype_is_float(x_math) || ew::is_integer_valued(threshold), Status::kBadParam,
            std::string(name) + ": threshold " + std::to_string(threshold) + " is not an integer but x is integral");

  // x <= threshold ? 0 : grad (NaN x keeps the gradient, as torch).
  Program p;
  const ValueId g = ew::load_as(p, 1, grad.dtype(), ew::vfu_dtype(compute));
  const ValueId masked =
      p.cast(p.binary_scalar(VecBinaryOp::kLe, ew::load_as(p, 2, x.dtype(), x_math), threshold), DType::kBool);
  const ValueId r = p.select(masked, p.constant(p.dtype(g), 0.0), g);
  p.set_result(ew::convert(p, ew::convert(p, r, compute), grad_in.dtype()));
  return ew::run_elementwise(*h, name, grad_in, grad_in_ptr, {&grad, &x}, {grad_ptr, x_ptr}, std::move(p));
}

Status activation_backward(Handle* h, ActivationGrad act, const TensorDesc& grad, const void* grad_ptr,
                           const TensorDesc& value, const void* value_ptr, const TensorDesc& grad_in, void* grad_in_ptr) {
  MLU_CHECK(static_cast<std::uint8_t>(act) <= static_cast<std::uint8_t>(ActivationGrad::kSilu), Status::kBadParam,
            "activation_backward: unknown activation " + std::to_string(static_cast<int>(act)));
  const char* name = act_name(act);
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"grad", &grad, grad_ptr}, {"value", &value, value_ptr}},
                                            {"grad_in", &grad_in, grad_in_ptr}));
  const DType compute = result_type(grad, value);
  MLU_CHECK(sim::dtype_is_float(compute), Status::kNotSupported,
            std::string(name) + ": needs floating tensors, got " + std::string(sim::dtype_name(compute)));
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(name, compute, grad_in));

  Program p;
  const ValueId g = ew::load_as(p, 1, grad.dtype(), DType::kFloat32);
  const ValueId v = ew::load_as(p, 2, value.dtype(), DType::kFloat32);
  ValueId r = g;
  switch (act) {
    case ActivationGrad::kSigmoid: r = sigmoid_grad(p, g, v); break;
    case ActivationGrad::kTanh: r = tanh_grad(p, g, v); break;
    case ActivationGrad::kGelu: r = gelu_grad(p, g, v); break;
    case ActivationGrad::kGeluTanh: r = gelu_tanh_grad(p, g, v); break;
    case ActivationGrad::kSilu: r = silu_grad(p, g, v); break;
  }
  p.set_result(ew::convert(p, ew::convert(p, r, compute), grad_in.dtype()));
  return ew::run_elementwise(*h, name, grad_in, grad_in_ptr, {&grad, &value}, {grad_ptr, value_ptr}, std::move(p));
}

}  // namespace mlusim::mlu
