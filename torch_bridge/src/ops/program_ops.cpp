// ATen ops that are a short chain of elementwise steps, each computed as one libmlu elementwise
// program (run_elementwise_program, fused_ops.cpp): one streaming VFU kernel per call, so the chain's
// intermediates never reach DRAM. Losses reduce the program's output with the device's sum/mean
// kernels. CUDA twins: Activation*.cu, UnaryOpsKernel.cu, BinaryMiscOpsKernels.cu, Loss.cu.
//
//   elu (+ selu, celu through it) / elu_backward        x > 0 ? s x : s a (exp(i x) - 1)
//   softplus / softplus_backward                       x b > t ? x : log(1 + exp(b x)) / b
//   mish / mish_backward                               x tanh(softplus(x))
//   hardshrink, softshrink and their backwards
//   sign (and sgn of real tensors), isnan, nan_to_num, xlogy.Tensor, logit / logit_backward
//   mse_loss, smooth_l1_loss, huber_loss and their backwards (reduction none / mean / sum)
//   round (half to even), floor, ceil, trunc, frac    from the float->int32 cast (truncating), exact
//                                            below 2^23 (fp16: 2^10); larger values are integers;
//                                            round(decimals): x * 10^d rounded, / 10^d (torch's order)
//   exp2, log2, log10, expm1, log1p          exp/log with a constant; expm1/log1p by their cubic
//                                            Taylor polynomial for |x| < 1e-3 (no cancellation)
//   sinh, cosh, asinh, acosh, atanh, hypot, heaviside, log_sigmoid (+ backward)
//   threshold, glu (+ backward), fmax/fmin, copysign/signbit, erf (A&S 7.1.26: 1.5e-7, ~3e-7 in fp32),
//   bitwise_not, logaddexp/logaddexp2
//
//   atan (Cephes atanf), asin, acos, atan2, sinc, erfc, special_entr, special_xlog1py, angle (real)
//   rounded_division (div's rounding_mode, rounded_division.h), floor_divide, fmod, remainder
//   (quotient by the truncating int32 cast)
//   _prelu_kernel (+ backward), binary_cross_entropy (+ backward)
//   addr: beta * self + (alpha * vec1) * vec2, each step rounded to the dtype (torch's addr_kernel)
//   lgamma, digamma, polygamma (n = 0, 1): reflection, shift and asymptotic series; erfinv (Giles);
//                                            polygamma n >= 2 by Hurwitz zeta (special_ops.cpp)
//   linspace, logspace: a program over arange (torch's two-sided formula, fp32)
//   uniform_, normal_ (+ normal with tensor mean/std), log_normal_, exponential_, cauchy_, geometric_,
//   random_ (from/to), bernoulli_(p tensor): libmlu random_uniform and one program (see below)
//
// Numerics: log(1 + e) stands for log1p(e) (the VFU has no log1p): absolute error ~1e-7 where
// exp(b x) is tiny, which is where softplus is itself tiny.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/bitwise_xor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/add.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/sum.h>
#include <torch/library.h>

#include "mlusim/mlu/elementwise.h"
#include "mlusim/mlu/random.h"
#include "ops/op_support.h"
#include "ops/program_literal.h"
#include "ops/rounded_division.h"
#include "ops/special_functions.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

// A program literal of a Python float (keeps the tensors' dtype, as Python scalars do in torch).
std::string lit(double v) { return program_literal(v); }
std::string lit(const c10::Scalar& v) { return lit(v.toDouble()); }

Tensor program(const char* aten_op, at::TensorList inputs, const std::string& text) {
  OpScope op(aten_op, inputs[0]);  // tags the program's kernel with the ATen op
  return run_elementwise_program(inputs, text);
}

// A program whose fp16 intermediates round at every step (torch.ops.mlu.elementwise): for the ops
// whose CPU kernel computes in the tensor's dtype op by op (logit's scalar_t arithmetic, mse_loss's
// sub then pow) rather than in fp32 with one rounding.
Tensor program_rounded(const char* aten_op, at::TensorList inputs, const std::string& text) {
  OpScope op(aten_op, inputs[0]);
  static const auto elementwise = c10::Dispatcher::singleton()
                                      .findSchemaOrThrow("mlu::elementwise", "")
                                      .typed<Tensor(at::TensorList, c10::string_view)>();
  return elementwise.call(inputs, text);
}

// ---- elu ------------------------------------------------------------------------------------------------

std::string elu_text(const c10::Scalar& alpha, const c10::Scalar& scale, const c10::Scalar& input_scale) {
  return "where(gt($0, 0.0), mul($0, " + lit(scale) + "), mul(sub(exp(mul($0, " + lit(input_scale) + ")), 1.0), " +
         lit(alpha.toDouble() * scale.toDouble()) + "))";
}
Tensor mlu_elu(const Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale, const c10::Scalar& input_scale) {
  return program("aten::elu", {self}, elu_text(alpha, scale, input_scale));
}
Tensor& mlu_elu_out(const Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                    const c10::Scalar& input_scale, Tensor& out) {
  return write_out(mlu_elu(self, alpha, scale, input_scale), out, "aten::elu");
}
Tensor& mlu_elu_(Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale, const c10::Scalar& input_scale) {
  return write_out(mlu_elu(self, alpha, scale, input_scale), self, "aten::elu");
}
Tensor mlu_elu_backward(const Tensor& grad, const c10::Scalar& alpha, const c10::Scalar& scale,
                        const c10::Scalar& input_scale, bool is_result, const Tensor& self_or_result) {
  const double a = alpha.toDouble(), s = scale.toDouble(), i = input_scale.toDouble();
  // From the result y: dy/dx = i (y + a s) where x <= 0; from the input: i a s exp(i x).
  const std::string negative = is_result ? "mul(add($1, " + lit(a * s) + "), " + lit(i) + ")"
                                         : "mul(exp(mul($1, " + lit(i) + ")), " + lit(i * a * s) + ")";
  return program("aten::elu_backward", {grad, self_or_result},
                 "mul($0, where(gt($1, 0.0), " + lit(s) + ", " + negative + "))");
}
Tensor& mlu_elu_backward_out(const Tensor& grad, const c10::Scalar& alpha, const c10::Scalar& scale,
                             const c10::Scalar& input_scale, bool is_result, const Tensor& self_or_result,
                             Tensor& grad_input) {
  return write_out(mlu_elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result), grad_input, "aten::elu_backward");
}

// ---- softplus, mish ---------------------------------------------------------------------------------------

std::string softplus_text(const std::string& x, double beta, double threshold) {
  const std::string bx = "mul(" + x + ", " + lit(beta) + ")";
  return "where(gt(" + bx + ", " + lit(threshold) + "), " + x + ", div(log(add(exp(" + bx + "), 1.0)), " + lit(beta) +
         "))";
}
Tensor mlu_softplus(const Tensor& self, const c10::Scalar& beta, const c10::Scalar& threshold) {
  return program("aten::softplus", {self}, softplus_text("$0", beta.toDouble(), threshold.toDouble()));
}
Tensor& mlu_softplus_out(const Tensor& self, const c10::Scalar& beta, const c10::Scalar& threshold, Tensor& out) {
  return write_out(mlu_softplus(self, beta, threshold), out, "aten::softplus");
}
Tensor mlu_softplus_backward(const Tensor& grad, const Tensor& self, const c10::Scalar& beta,
                             const c10::Scalar& threshold) {
  const std::string bx = "mul($1, " + lit(beta) + ")";
  return program("aten::softplus_backward", {grad, self},
                 "z = exp(" + bx + "); mul($0, where(gt(" + bx + ", " + lit(threshold) + "), 1.0, div(z, add(z, 1.0))))");
}
Tensor& mlu_softplus_backward_out(const Tensor& grad, const Tensor& self, const c10::Scalar& beta,
                                  const c10::Scalar& threshold, Tensor& grad_input) {
  return write_out(mlu_softplus_backward(grad, self, beta, threshold), grad_input, "aten::softplus_backward");
}

Tensor mlu_mish(const Tensor& self) {
  return program("aten::mish", {self}, "mul($0, tanh(" + softplus_text("$0", 1.0, 20.0) + "))");
}
Tensor& mlu_mish_out(const Tensor& self, Tensor& out) { return write_out(mlu_mish(self), out, "aten::mish"); }
Tensor& mlu_mish_(Tensor& self) { return write_out(mlu_mish(self), self, "aten::mish"); }
Tensor mlu_mish_backward(const Tensor& grad, const Tensor& self) {
  // d/dx x tanh(sp(x)) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2)
  return program("aten::mish_backward", {grad, self},
                 "t = tanh(" + softplus_text("$1", 1.0, 20.0) +
                     "); mul($0, add(t, mul(mul($1, sigmoid($1)), sub(1.0, mul(t, t)))))");
}

// ---- shrinks -----------------------------------------------------------------------------------------------

Tensor mlu_hardshrink(const Tensor& self, const c10::Scalar& lambd) {
  return program("aten::hardshrink", {self}, "where(gt(abs($0), " + lit(lambd) + "), $0, mul($0, 0.0))");
}
Tensor& mlu_hardshrink_out(const Tensor& self, const c10::Scalar& lambd, Tensor& out) {
  return write_out(mlu_hardshrink(self, lambd), out, "aten::hardshrink");
}
Tensor mlu_softshrink(const Tensor& self, const c10::Scalar& lambd) {
  const std::string l = lit(lambd);
  return program("aten::softshrink", {self},
                 "where(gt($0, " + l + "), sub($0, " + l + "), where(lt($0, " + lit(-lambd.toDouble()) + "), add($0, " + l +
                     "), mul($0, 0.0)))");
}
Tensor& mlu_softshrink_out(const Tensor& self, const c10::Scalar& lambd, Tensor& out) {
  return write_out(mlu_softshrink(self, lambd), out, "aten::softshrink");
}
// Both shrinks pass the gradient where |x| > lambda.
Tensor shrink_backward(const char* name, const Tensor& grad, const Tensor& self, const c10::Scalar& lambd) {
  return program(name, {grad, self}, "where(gt(abs($1), " + lit(lambd) + "), $0, mul($0, 0.0))");
}
Tensor mlu_hardshrink_backward(const Tensor& grad, const Tensor& self, const c10::Scalar& lambd) {
  return shrink_backward("aten::hardshrink_backward", grad, self, lambd);
}
Tensor& mlu_hardshrink_backward_out(const Tensor& grad, const Tensor& self, const c10::Scalar& lambd, Tensor& gi) {
  return write_out(mlu_hardshrink_backward(grad, self, lambd), gi, "aten::hardshrink_backward");
}
Tensor mlu_softshrink_backward(const Tensor& grad, const Tensor& self, const c10::Scalar& lambd) {
  return shrink_backward("aten::softshrink_backward", grad, self, lambd);
}
Tensor& mlu_softshrink_backward_out(const Tensor& grad, const Tensor& self, const c10::Scalar& lambd, Tensor& gi) {
  return write_out(mlu_softshrink_backward(grad, self, lambd), gi, "aten::softshrink_backward");
}

// ---- sign, isnan, nan_to_num, xlogy, logit --------------------------------------------------------------------

Tensor mlu_sign(const Tensor& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "aten::sign: bool tensors have no sign on the device; use the tensor itself");
  // NaN compares false both ways: sign(nan) = 0, as torch gives.
  return program("aten::sign", {self}, "cast_like(sub(cast_like(gt($0, 0), $0), cast_like(lt($0, 0), $0)), $0)");
}
Tensor& mlu_sign_out(const Tensor& self, Tensor& out) { return write_out(mlu_sign(self), out, "aten::sign"); }
Tensor& mlu_sign_(Tensor& self) { return write_out(mlu_sign(self), self, "aten::sign"); }

Tensor mlu_isnan(const Tensor& self) { return program("aten::isnan", {self}, "ne($0, $0)"); }

Tensor mlu_nan_to_num(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                      std::optional<double> neginf) {
  if (!at::isFloatingType(self.scalar_type())) return self.clone();  // integers have no NaN or inf
  double hi = std::numeric_limits<float>::max(), lo = std::numeric_limits<float>::lowest();
  if (self.scalar_type() == at::kHalf) hi = 65504.0, lo = -65504.0;
  if (self.scalar_type() == at::kBFloat16) hi = 3.3895313892515355e38, lo = -3.3895313892515355e38;
  if (self.scalar_type() == at::kDouble) hi = std::numeric_limits<double>::max(), lo = std::numeric_limits<double>::lowest();
  return program("aten::nan_to_num", {self},
                 "cast_like(where(ne($0, $0), " + lit(nan.value_or(0.0)) + ", where(eq($0, inf), " + lit(posinf.value_or(hi)) +
                     ", where(eq($0, -inf), " + lit(neginf.value_or(lo)) + ", $0))), $0)");
}
Tensor& mlu_nan_to_num_out(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                           std::optional<double> neginf, Tensor& out) {
  return write_out(mlu_nan_to_num(self, nan, posinf, neginf), out, "aten::nan_to_num");
}
Tensor& mlu_nan_to_num_(Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                        std::optional<double> neginf) {
  return write_out(mlu_nan_to_num(self, nan, posinf, neginf), self, "aten::nan_to_num");
}

Tensor mlu_xlogy(const Tensor& self, const Tensor& other) {
  // x log y, 0 where x == 0 (even for y == 0), NaN where y is NaN.
  return program("aten::xlogy", {self, other},
                 "p = mul($0, log($1)); where(ne($1, $1), add(p, $1), where(eq($0, 0), 0.0, p))");
}
Tensor& mlu_xlogy_out(const Tensor& self, const Tensor& other, Tensor& out) { return write_out(mlu_xlogy(self, other), out, "aten::xlogy"); }

std::string clamped_text(std::optional<double> eps) {
  if (!eps) return "$0";
  return "minimum(maximum($0, " + lit(*eps) + "), " + lit(1.0 - *eps) + ")";
}
Tensor mlu_logit(const Tensor& self, std::optional<double> eps) {
  return program_rounded("aten::logit", {self}, "z = " + clamped_text(eps) + "; log(div(z, sub(1.0, z)))");
}
Tensor& mlu_logit_out(const Tensor& self, std::optional<double> eps, Tensor& out) { return write_out(mlu_logit(self, eps), out, "aten::logit"); }
Tensor mlu_logit_backward(const Tensor& grad, const Tensor& self, std::optional<double> eps) {
  const std::string d = "div($0, mul($1, sub(1.0, $1)))";
  // Without eps torch gives NaN outside [0, 1]; with it, 0 outside [eps, 1 - eps].
  if (!eps) return program("aten::logit_backward", {grad, self}, "where(lt($1, 0.0), nan, where(gt($1, 1.0), nan, " + d + "))");
  return program("aten::logit_backward", {grad, self},
                 "where(lt($1, " + lit(*eps) + "), mul($0, 0.0), where(gt($1, " + lit(1.0 - *eps) + "), mul($0, 0.0), " + d +
                     "))");
}
Tensor& mlu_logit_backward_out(const Tensor& grad, const Tensor& self, std::optional<double> eps, Tensor& gi) {
  return write_out(mlu_logit_backward(grad, self, eps), gi, "aten::logit_backward");
}

// ---- rounding, exponentials, hyperbolics -----------------------------------------------------------------

// Unary ops whose only form is a program of $0, with functional, out= and in-place variants.
// A float result keeps the input's dtype (the programs cast back where they go through int32).
#define MLUSIM_UNARY_PROGRAM(fn, aten_name, text)                                                 \
  Tensor mlu_##fn(const Tensor& self) { return program("aten::" aten_name, {self}, text); }    \
  Tensor& mlu_##fn##_out(const Tensor& self, Tensor& out) { return write_out(mlu_##fn(self), out, "aten::" aten_name); } \
  Tensor& mlu_##fn##_(Tensor& self) { return write_out(mlu_##fn(self), self, "aten::" aten_name); }

// Rounding: the program's cast to int32 truncates (torch's float->int conversion), exact while |x|
// is below the dtype's first integer-only magnitude (fp32 2^23, fp16 2^10), beyond which every
// value is already an integer and passes through (as do NaN and inf).
std::string integer_limit(const Tensor& self) { return self.scalar_type() == at::kHalf ? "1024.0" : "8388608.0"; }
std::string trunc_below(const std::string& x, const std::string& limit) {
  return "where(lt(abs(" + x + "), " + limit + "), cast_like(cast(" + x + ", i32), " + x + "), " + x + ")";
}
std::string trunc_of(const std::string& x, const Tensor& self) { return trunc_below(x, integer_limit(self)); }
MLUSIM_UNARY_PROGRAM(trunc, "trunc", trunc_of("$0", self))
MLUSIM_UNARY_PROGRAM(floor, "floor", "t = " + trunc_of("$0", self) + "; sub(t, cast_like(gt(t, $0), $0))")
MLUSIM_UNARY_PROGRAM(ceil, "ceil", "t = " + trunc_of("$0", self) + "; add(t, cast_like(lt(t, $0), $0))")
MLUSIM_UNARY_PROGRAM(frac, "frac", "sub($0, " + trunc_of("$0", self) + ")")
// round half to even: f = floor(x + 1/2); at a tie (f - x == 1/2) an odd f steps down by one.
// x + 1/2 is exact below the integer-only magnitude `limit`; beyond it x passes through. Statements
// that set `out` to x rounded.
std::string round_statements(const std::string& x, const std::string& limit, const std::string& out) {
  return "h = add(" + x + ", 0.5); ht = " + trunc_below("h", limit) + "; f = sub(ht, cast_like(gt(ht, h), h)); "
         "q = mul(f, 0.5); odd = ne(q, " + trunc_below("q", limit) + "); "
         "r = where(logical_and(eq(sub(f, " + x + "), 0.5), odd), sub(f, 1.0), f); " +
         out + " = where(lt(abs(" + x + "), " + limit + "), r, " + x + "); ";
}
MLUSIM_UNARY_PROGRAM(round, "round", round_statements("$0", integer_limit(self), "y") + "y")

MLUSIM_UNARY_PROGRAM(exp2, "exp2", "exp(mul($0, 0.69314718055994531))")
MLUSIM_UNARY_PROGRAM(log2, "log2", "mul(log($0), 1.4426950408889634)")
MLUSIM_UNARY_PROGRAM(log10, "log10", "mul(log($0), 0.43429448190325182)")
// x + x^2/2 + x^3/6 (relative error < 5e-14 for |x| < 1e-3), else exp(x) - 1.
MLUSIM_UNARY_PROGRAM(expm1, "expm1",
                     "where(lt(abs($0), 0.001), mul($0, add(1.0, mul($0, add(0.5, mul($0, 0.16666666666666666))))), "
                     "sub(exp($0), 1.0))")
// x - x^2/2 + x^3/3 for |x| < 1e-3, else log(1 + x).
MLUSIM_UNARY_PROGRAM(log1p, "log1p",
                     "where(lt(abs($0), 0.001), mul($0, add(1.0, mul($0, add(-0.5, mul($0, 0.33333333333333333))))), "
                     "log(add($0, 1.0)))")
// sinh: x + x^3/6 for |x| < 1e-2 (cancellation in (e^x - e^-x) / 2), cosh as is.
MLUSIM_UNARY_PROGRAM(sinh, "sinh",
                     "where(lt(abs($0), 0.01), mul($0, add(1.0, mul(mul($0, $0), 0.16666666666666666))), "
                     "mul(sub(exp($0), exp(neg($0))), 0.5))")
MLUSIM_UNARY_PROGRAM(cosh, "cosh", "mul(add(exp($0), exp(neg($0))), 0.5)")
// asinh(x) = sign(x) log(|x| + sqrt(x^2 + 1)) (odd: no cancellation for x < 0); x for |x| < 1e-3.
MLUSIM_UNARY_PROGRAM(asinh, "asinh",
                     "a = abs($0); s = log(add(a, sqrt(add(mul(a, a), 1.0)))); "
                     "where(lt(a, 0.001), $0, where(lt($0, 0.0), neg(s), s))")
MLUSIM_UNARY_PROGRAM(acosh, "acosh", "log(add($0, sqrt(sub(mul($0, $0), 1.0))))")
// atanh(x) = log((1 + x) / (1 - x)) / 2; x + x^3/3 for |x| < 1e-3.
MLUSIM_UNARY_PROGRAM(atanh, "atanh",
                     "where(lt(abs($0), 0.001), mul($0, add(1.0, mul(mul($0, $0), 0.33333333333333333))), "
                     "mul(log(div(add(1.0, $0), sub(1.0, $0))), 0.5))")
#undef MLUSIM_UNARY_PROGRAM

// round(x, decimals) as torch's round_decimals_kernel: nearbyint(x * 10^d) / 10^d, or for d < 0
// nearbyint(x / 10^-d) * 10^-d, with 10^|d| and the steps in fp32 (opmath; fp16 rounds once at the end).
Tensor mlu_round_decimals(const Tensor& self, int64_t decimals) {
  if (decimals == 0) return mlu_round(self);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "aten::round.decimals: dtype ",
                              self.scalar_type(), " is not supported (torch rounds floating tensors to decimals)");
  const std::string ten = lit(static_cast<double>(static_cast<float>(std::pow(10.0, std::abs(static_cast<double>(decimals))))));
  const bool negative = decimals < 0;
  return program("aten::round", {self},
                 "s = " + std::string(negative ? "div" : "mul") + "(cast($0, f32), " + ten + "); " +
                     round_statements("s", "8388608.0", "y") + "cast_like(" + (negative ? "mul" : "div") + "(y, " + ten +
                     "), $0)");
}
Tensor& mlu_round_decimals_out(const Tensor& self, int64_t decimals, Tensor& out) {
  return write_out(mlu_round_decimals(self, decimals), out, "aten::round");
}
Tensor& mlu_round_decimals_(Tensor& self, int64_t decimals) {
  return write_out(mlu_round_decimals(self, decimals), self, "aten::round");
}

Tensor mlu_hypot(const Tensor& self, const Tensor& other) {
  return program("aten::hypot", {self, other}, "sqrt(add(mul($0, $0), mul($1, $1)))");
}
Tensor& mlu_hypot_out(const Tensor& self, const Tensor& other, Tensor& out) { return write_out(mlu_hypot(self, other), out, "aten::hypot"); }
Tensor& mlu_hypot_(Tensor& self, const Tensor& other) { return write_out(mlu_hypot(self, other), self, "aten::hypot"); }

Tensor mlu_heaviside(const Tensor& self, const Tensor& values) {
  return program("aten::heaviside", {self, values},
                 "cast_like(where(eq($0, 0), $1, cast_like(gt($0, 0), $1)), $0)");
}
Tensor& mlu_heaviside_out(const Tensor& self, const Tensor& values, Tensor& out) {
  return write_out(mlu_heaviside(self, values), out, "aten::heaviside");
}

// log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)); the buffer CPU kernels pass to the backward is
// empty here, as on CUDA, and the backward recomputes from x: d/dx = sigmoid(-x).
std::tuple<Tensor, Tensor> mlu_log_sigmoid_forward(const Tensor& self) {
  Tensor out = program("aten::log_sigmoid_forward", {self},
                       "e = exp(neg(abs($0))); "
                       "sub(minimum($0, 0.0), where(lt(e, 0.001), mul(e, add(1.0, mul(e, add(-0.5, mul(e, 0.33333333333333333))))), "
                       "log(add(e, 1.0))))");
  return {out, at::empty({0}, self.options())};
}
std::tuple<Tensor&, Tensor&> mlu_log_sigmoid_forward_out(const Tensor& self, Tensor& output, Tensor& buffer) {
  write_out(std::get<0>(mlu_log_sigmoid_forward(self)), output, "aten::log_sigmoid_forward");
  buffer.resize_({0});
  return {output, buffer};
}
Tensor mlu_log_sigmoid_backward(const Tensor& grad, const Tensor& self, const Tensor& /*buffer*/) {
  return program("aten::log_sigmoid_backward", {grad, self}, "mul($0, sigmoid(neg($1)))");
}
Tensor& mlu_log_sigmoid_backward_out(const Tensor& grad, const Tensor& self, const Tensor& buffer, Tensor& gi) {
  return write_out(mlu_log_sigmoid_backward(grad, self, buffer), gi, "aten::log_sigmoid_backward");
}

// ---- threshold, glu, fmax/fmin, copysign/signbit, erf, bitwise_not, logaddexp -----------------------------

Tensor mlu_threshold(const Tensor& self, const c10::Scalar& threshold, const c10::Scalar& value) {
  return program("aten::threshold", {self},
                 "cast_like(where(le($0, " + lit(threshold) + "), " + lit(value) + ", $0), $0)");  // NaN passes
}
Tensor& mlu_threshold_out(const Tensor& self, const c10::Scalar& threshold, const c10::Scalar& value, Tensor& out) {
  return write_out(mlu_threshold(self, threshold, value), out, "aten::threshold");
}

// glu(x, dim) = a sigmoid(b) for the two halves of x along dim (views: no copy).
Tensor mlu_glu(const Tensor& self, int64_t dim) {
  const int64_t d = wrap_dim(dim, self.dim(), "aten::glu");
  TORCH_CHECK(self.size(d) % 2 == 0, "aten::glu: halving dimension ", dim, " of size ", self.size(d), " is not even");
  const int64_t h = self.size(d) / 2;
  return program("aten::glu", {self.narrow(d, 0, h), self.narrow(d, h, h)}, "mul($0, sigmoid($1))");
}
Tensor& mlu_glu_out(const Tensor& self, int64_t dim, Tensor& out) { return write_out(mlu_glu(self, dim), out, "aten::glu"); }
Tensor mlu_glu_backward(const Tensor& grad, const Tensor& self, int64_t dim) {
  const int64_t d = wrap_dim(dim, self.dim(), "aten::glu_backward");
  const int64_t h = self.size(d) / 2;
  const Tensor a = self.narrow(d, 0, h), b = self.narrow(d, h, h);
  // d/da = sigmoid(b); d/db = a sigmoid(b) (1 - sigmoid(b))
  const Tensor ga = program("aten::glu_backward", {grad, b}, "mul($0, sigmoid($1))");
  const Tensor gb = program("aten::glu_backward", {grad, a, b}, "s = sigmoid($2); mul(mul($0, $1), mul(s, sub(1.0, s)))");
  return at::cat({ga, gb}, d);
}
Tensor& mlu_glu_backward_out(const Tensor& grad, const Tensor& self, int64_t dim, Tensor& gi) {
  return write_out(mlu_glu_backward(grad, self, dim), gi, "aten::glu_backward");
}

// fmax / fmin: maximum / minimum that ignore a NaN operand (NaN only when both are).
Tensor mlu_fmax(const Tensor& self, const Tensor& other) {
  return program("aten::fmax", {self, other}, "where(ne($0, $0), $1, where(ne($1, $1), $0, maximum($0, $1)))");
}
Tensor& mlu_fmax_out(const Tensor& self, const Tensor& other, Tensor& out) { return write_out(mlu_fmax(self, other), out, "aten::fmax"); }
Tensor mlu_fmin(const Tensor& self, const Tensor& other) {
  return program("aten::fmin", {self, other}, "where(ne($0, $0), $1, where(ne($1, $1), $0, minimum($0, $1)))");
}
Tensor& mlu_fmin_out(const Tensor& self, const Tensor& other, Tensor& out) { return write_out(mlu_fmin(self, other), out, "aten::fmin"); }

// The sign bit of x: x < 0, or x == -0.0 (1 / -0.0 = -inf). A NaN's sign bit is not visible to
// comparisons: it counts as clear.
std::string signbit_text(const std::string& x) {
  return "logical_or(lt(" + x + ", 0.0), logical_and(eq(" + x + ", 0.0), lt(div(1.0, " + x + "), 0.0)))";
}
Tensor mlu_signbit(const Tensor& self) { return program("aten::signbit", {self}, signbit_text("$0")); }
Tensor& mlu_signbit_out(const Tensor& self, Tensor& out) { return write_out(mlu_signbit(self), out, "aten::signbit"); }
Tensor mlu_copysign(const Tensor& self, const Tensor& other) {
  return program("aten::copysign", {self, other}, "a = abs($0); where(" + signbit_text("$1") + ", neg(a), a)");
}
Tensor& mlu_copysign_out(const Tensor& self, const Tensor& other, Tensor& out) {
  return write_out(mlu_copysign(self, other), out, "aten::copysign");
}

// erf by Abramowitz & Stegun 7.1.26: 1 - (a1 t + ... + a5 t^5) exp(-x^2), t = 1 / (1 + p |x|),
// absolute error <= 1.5e-7 (below fp32's resolution of erf near 1); odd in x.
Tensor mlu_erf(const Tensor& self) {
  return program("aten::erf", {self},
                 "a = abs($0); t = div(1.0, add(mul(a, 0.3275911), 1.0)); "
                 "y = sub(1.0, mul(mul(t, add(0.254829592, mul(t, add(-0.284496736, mul(t, add(1.421413741, "
                 "mul(t, add(-1.453152027, mul(t, 1.061405429))))))))), exp(neg(mul(a, a))))); "
                 "where(lt($0, 0.0), neg(y), y)");
}
Tensor& mlu_erf_out(const Tensor& self, Tensor& out) { return write_out(mlu_erf(self), out, "aten::erf"); }
Tensor& mlu_erf_(Tensor& self) { return write_out(mlu_erf(self), self, "aten::erf"); }

// ~x: logical not for bool, x ^ all-ones for integers (the device's bitwise_xor, which also
// covers uint8 and int16).
Tensor mlu_bitwise_not(const Tensor& self) {
  TORCH_CHECK(self.scalar_type() == at::kBool || at::isIntegralType(self.scalar_type(), /*includeBool=*/false),
              "aten::bitwise_not: expected a bool or integer tensor, got ", self.scalar_type());
  if (self.scalar_type() == at::kBool) return program("aten::bitwise_not", {self}, "logical_not($0)");
  return at::bitwise_xor(self, self.scalar_type() == at::kByte ? 255 : -1);
}
Tensor& mlu_bitwise_not_out(const Tensor& self, Tensor& out) { return write_out(mlu_bitwise_not(self), out, "aten::bitwise_not"); }

// log(e^a + e^b) = max + log1p(e^-|a - b|); equal operands (also both +-inf) give a + log 2.
Tensor mlu_logaddexp(const Tensor& self, const Tensor& other) {
  return program("aten::logaddexp", {self, other},
                 "where(eq($0, $1), add($0, 0.69314718055994531), add(maximum($0, $1), log(add(exp(neg(abs(sub($0, $1)))), 1.0))))");
}
Tensor& mlu_logaddexp_out(const Tensor& self, const Tensor& other, Tensor& out) {
  return write_out(mlu_logaddexp(self, other), out, "aten::logaddexp");
}
Tensor mlu_logaddexp2(const Tensor& self, const Tensor& other) {
  return program("aten::logaddexp2", {self, other},
                 "where(eq($0, $1), add($0, 1.0), add(maximum($0, $1), mul(log(add(exp(mul(neg(abs(sub($0, $1))), "
                 "0.69314718055994531)), 1.0)), 1.4426950408889634)))");
}
Tensor& mlu_logaddexp2_out(const Tensor& self, const Tensor& other, Tensor& out) {
  return write_out(mlu_logaddexp2(self, other), out, "aten::logaddexp2");
}

// ---- addr ---------------------------------------------------------------------------------------------

// beta * self + alpha * vec1 (x) vec2 as torch's CPU and CUDA kernels compute it for one floating
// dtype: beta and alpha in the tensors' dtype, every step rounded to it, in the order
// beta * self + (alpha * vec1) * vec2 (LinearAlgebraKernel.cpp's addr_kernel; gcc builds it without
// contraction); beta == 0 ignores self (its NaN and inf do not propagate). Other dtype mixes take
// torch's composite math_addr (outer, mul, add on the device).
Tensor mlu_addr(const Tensor& self, const Tensor& vec1, const Tensor& vec2, const c10::Scalar& beta,
                const c10::Scalar& alpha) {
  const char* name = "aten::addr";
  TORCH_CHECK(vec1.dim() == 1, "addr: Expected 1-D argument vec1, but got ", vec1.dim(), "-D");
  TORCH_CHECK(vec2.dim() == 1, "addr: Expected 1-D argument vec2, but got ", vec2.dim(), "-D");
  const std::vector<int64_t> shape = {vec1.size(0), vec2.size(0)};
  TORCH_CHECK(at::infer_size(self.sizes(), shape) == at::IntArrayRef(shape), "addr: self of size ", self.sizes(),
              " cannot be broadcast to the outer product's size ", at::IntArrayRef(shape));
  const at::ScalarType t = self.scalar_type();
  const bool one_float = at::isFloatingType(t) && t != at::kDouble && vec1.scalar_type() == t && vec2.scalar_type() == t;
  const Tensor col = vec1.view({-1, 1}), row = vec2.view({1, -1});
  if (!one_float) {
    const Tensor outer = at::mul(col, row);
    const Tensor scaled = alpha.toComplexDouble() == 1.0 ? outer : at::mul(outer, alpha);
    if (beta.toComplexDouble() == 0.0) return scaled.expand(shape).contiguous();
    return at::add(beta.toComplexDouble() == 1.0 ? self : at::mul(self, beta), scaled);
  }
  // The scalars as the kernels hold them (scalar_t).
  auto in_dtype = [t](const c10::Scalar& v) {
    const double d = v.toDouble();
    if (t == at::kHalf) return static_cast<double>(static_cast<float>(c10::Half(static_cast<float>(d))));
    if (t == at::kBFloat16) return static_cast<double>(static_cast<float>(c10::BFloat16(static_cast<float>(d))));
    return static_cast<double>(static_cast<float>(d));
  };
  const std::string a = lit(in_dtype(alpha));
  if (beta.toDouble() == 0.0) return program_rounded(name, {col, row}, "mul(mul(" + a + ", $0), $1)");
  return program_rounded(name, {self.expand(shape), col, row},
                         "add(mul(" + lit(in_dtype(beta)) + ", $0), mul(mul(" + a + ", $1), $2))");
}

// ---- losses --------------------------------------------------------------------------------------------------

// at::Reduction: 0 none, 1 mean, 2 sum.
Tensor reduce(const Tensor& pointwise, int64_t reduction) {
  switch (reduction) {
    case 0: return pointwise;
    case 1: return at::mean(pointwise);
    case 2: return at::sum(pointwise);
  }
  TORCH_CHECK_VALUE(false, "loss reduction must be 0 (none), 1 (mean) or 2 (sum), got ", reduction);
}
// The backward's scale: 1 / N for mean.
std::string per_element(const Tensor& self, int64_t reduction) {
  return reduction == 1 && self.numel() > 0 ? lit(1.0 / static_cast<double>(self.numel())) : "1.0";
}

Tensor mlu_mse_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return reduce(program_rounded("aten::mse_loss", {self, target}, "d = sub($0, $1); mul(d, d)"), reduction);
}
Tensor& mlu_mse_loss_out(const Tensor& self, const Tensor& target, int64_t reduction, Tensor& out) {
  return write_out(mlu_mse_loss(self, target, reduction), out, "aten::mse_loss");
}
Tensor mlu_mse_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target, int64_t reduction) {
  return program("aten::mse_loss_backward", {grad, self, target},
                 "mul(mul(mul($0, sub($1, $2)), 2.0), " + per_element(self, reduction) + ")");
}
Tensor& mlu_mse_loss_backward_out(const Tensor& grad, const Tensor& self, const Tensor& target, int64_t reduction,
                                  Tensor& grad_input) {
  return write_out(mlu_mse_loss_backward(grad, self, target, reduction), grad_input, "aten::mse_loss_backward");
}

Tensor mlu_smooth_l1_loss(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  if (beta == 0.0) return reduce(program("aten::smooth_l1_loss", {self, target}, "abs(sub($0, $1))"), reduction);
  return reduce(program("aten::smooth_l1_loss", {self, target},
                        "d = abs(sub($0, $1)); where(lt(d, " + lit(beta) + "), div(mul(mul(d, d), 0.5), " + lit(beta) +
                            "), sub(d, " + lit(0.5 * beta) + "))"),
                reduction);
}
Tensor& mlu_smooth_l1_loss_out(const Tensor& self, const Tensor& target, int64_t reduction, double beta, Tensor& out) {
  return write_out(mlu_smooth_l1_loss(self, target, reduction, beta), out, "aten::smooth_l1_loss");
}
Tensor mlu_smooth_l1_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target, int64_t reduction,
                                   double beta) {
  // d/dx: d / beta inside the quadratic zone, sign(d) outside (beta = 0: sign(d)).
  const std::string sign = "sub(cast_like(gt(d, 0), d), cast_like(lt(d, 0), d))";
  const std::string slope =
      beta == 0.0 ? sign : "where(lt(abs(d), " + lit(beta) + "), div(d, " + lit(beta) + "), " + sign + ")";
  return program("aten::smooth_l1_loss_backward", {grad, self, target},
                 "d = sub($1, $2); mul(mul($0, " + slope + "), " + per_element(self, reduction) + ")");
}
Tensor& mlu_smooth_l1_loss_backward_out(const Tensor& grad, const Tensor& self, const Tensor& target,
                                        int64_t reduction, double beta, Tensor& grad_input) {
  return write_out(mlu_smooth_l1_loss_backward(grad, self, target, reduction, beta), grad_input, "aten::smooth_l1_loss_backward");
}

Tensor mlu_huber_loss(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  return reduce(program("aten::huber_loss", {self, target},
                        "d = abs(sub($0, $1)); where(lt(d, " + lit(delta) + "), mul(mul(d, d), 0.5), mul(sub(d, " +
                            lit(0.5 * delta) + "), " + lit(delta) + "))"),
                reduction);
}
Tensor& mlu_huber_loss_out(const Tensor& self, const Tensor& target, int64_t reduction, double delta, Tensor& out) {
  return write_out(mlu_huber_loss(self, target, reduction, delta), out, "aten::huber_loss");
}
Tensor mlu_huber_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target, int64_t reduction,
                               double delta) {
  // d/dx: d clamped to [-delta, delta]
  return program("aten::huber_loss_backward", {grad, self, target},
                 "d = sub($1, $2); mul(mul($0, minimum(maximum(d, " + lit(-delta) + "), " + lit(delta) + ")), " +
                     per_element(self, reduction) + ")");
}
Tensor& mlu_huber_loss_backward_out(const Tensor& grad, const Tensor& self, const Tensor& target, int64_t reduction,
                                    double delta, Tensor& grad_input) {
  return write_out(mlu_huber_loss_backward(grad, self, target, reduction, delta), grad_input, "aten::huber_loss_backward");
}


// ---- inverse trigonometry, modular division, special functions ------------------------------------------------

// c0 + v (c1 + v (c2 + ...)): a polynomial in Horner form (coefficients from the constant term up).
std::string horner(const std::string& v, const std::vector<double>& c) {
  std::string text = lit(c.back());
  for (std::size_t i = c.size() - 1; i-- > 0;) text = "add(mul(" + text + ", " + v + "), " + lit(c[i]) + ")";
  return text;
}
// atan by Cephes' atanf: |x| is reduced to [0, tan(pi/8)] (x > tan(3pi/8): pi/2 + atan(-1/x); x >
// tan(pi/8): pi/4 + atan((x - 1)/(x + 1))), then x + x z P(z), z = x^2, a degree-4 polynomial
// (relative error ~1e-7 in fp32); odd in x. NaN propagates, +-inf gives +-pi/2.
// Program statements that set `out` to atan(x) (their other names start with "atan").
std::string atan_statements(const std::string& x, const std::string& out) {
  return "atana = abs(" + x + "); atanbig = gt(atana, 2.414213562373095); atanmid = gt(atana, 0.41421356237309503); "
         "atanx = where(atanbig, div(-1.0, atana), where(atanmid, div(sub(atana, 1.0), add(atana, 1.0)), atana)); "
         "atanz = mul(atanx, atanx); "
         "atanr = add(cast_like(where(atanbig, 1.5707963267948966, where(atanmid, 0.78539816339744831, 0.0)), atanx), "
         "add(mul(mul(atanz, atanx), " +
         horner("atanz", {-0.333329491539, 0.199777106478, -0.138776856032, 0.0805374449538}) + "), atanx)); " +
         out + " = where(lt(" + x + ", 0.0), neg(atanr), atanr); ";
}
// Float results for integer inputs (torch's unary float ops), fp16 stays fp16 (a where() of two
// literals is float32: the programs cast such values back to the input's dtype).
Tensor float_input(const Tensor& self) { return at::isFloatingType(self.scalar_type()) ? self : self.to(at::kFloat); }

// Functional and out= forms (MLUSIM_UNARY_FLOAT_PROGRAM adds the in-place one).
#define MLUSIM_FLOAT_PROGRAM(fn, aten_name, text)                                                               \
  Tensor mlu_##fn(const Tensor& self) { return program("aten::" aten_name, {float_input(self)}, text); }     \
  Tensor& mlu_##fn##_out(const Tensor& self, Tensor& out) { return write_out(mlu_##fn(self), out, "aten::" aten_name); }
#define MLUSIM_UNARY_FLOAT_PROGRAM(fn, aten_name, text) \
  MLUSIM_FLOAT_PROGRAM(fn, aten_name, text)             \
  Tensor& mlu_##fn##_(Tensor& self) { return write_out(mlu_##fn(self), self, "aten::" aten_name); }

MLUSIM_UNARY_FLOAT_PROGRAM(atan, "atan", atan_statements("$0", "a") + "a")
// asin x = atan(x / sqrt((1 - x)(1 + x))) (the product keeps precision near |x| = 1; x/0 = +-inf
// gives +-pi/2; |x| > 1 is NaN from the sqrt).
MLUSIM_UNARY_FLOAT_PROGRAM(asin, "asin",
                           "q = div($0, sqrt(mul(sub(1.0, $0), add(1.0, $0)))); " + atan_statements("q", "a") + "a")
// acos x = 2 atan(sqrt((1 - x) / (1 + x))): no cancellation near x = 1; x = -1 is pi (set apart: the
// quotient there is inf).
MLUSIM_UNARY_FLOAT_PROGRAM(acos, "acos",
                           "q = sqrt(div(sub(1.0, $0), add(1.0, $0))); " + atan_statements("q", "a") +
                               "where(eq($0, -1.0), 3.141592653589793, mul(a, 2.0))")
// sinc x = sin(pi x) / (pi x), 1 at 0.
MLUSIM_UNARY_FLOAT_PROGRAM(sinc, "sinc",
                           "px = mul($0, 3.141592653589793); where(eq($0, 0.0), 1.0, div(sin(px), px))")
// erfc = 1 - erf (absolute error ~1.5e-7: for large x the tiny tail is not resolved relatively).
MLUSIM_UNARY_FLOAT_PROGRAM(erfc, "erfc",
                           "a = abs($0); t = div(1.0, add(mul(a, 0.3275911), 1.0)); "
                           "c = mul(mul(t, add(0.254829592, mul(t, add(-0.284496736, mul(t, add(1.421413741, "
                           "mul(t, add(-1.453152027, mul(t, 1.061405429))))))))), exp(neg(mul(a, a)))); "
                           "where(lt($0, 0.0), sub(2.0, c), c)")
// -x log x: 0 at 0, -inf below 0.
MLUSIM_FLOAT_PROGRAM(special_entr, "special_entr",
                           "where(gt($0, 0.0), neg(mul($0, log($0))), where(eq($0, 0.0), 0.0, where(lt($0, 0.0), -inf, $0)))")
#undef MLUSIM_UNARY_FLOAT_PROGRAM
#undef MLUSIM_FLOAT_PROGRAM

// atan2(y, x): atan(y / x) moved to the quadrant of (x, y); x = y = 0 gives 0 or pi (x = -0)
// with y's sign, as std::atan2. Both infinite is NaN here (std::atan2: odd multiples of pi/4).
Tensor mlu_atan2(const Tensor& self, const Tensor& other) {
  return program("aten::atan2", {float_input(self), float_input(other)},
                 "q = div($0, $1); " + atan_statements("q", "a") + "ys = " + signbit_text("$0") +
                     "; pi = cast_like(where(ys, -3.141592653589793, 3.141592653589793), a); "
                     "r = where(lt($1, 0.0), add(a, pi), a); "
                     "zero = logical_and(eq($0, 0.0), eq($1, 0.0)); "
                     "where(zero, where(" + signbit_text("$1") + ", pi, mul($0, 1.0)), r)");
}
Tensor& mlu_atan2_out(const Tensor& self, const Tensor& other, Tensor& out) { return write_out(mlu_atan2(self, other), out, "aten::atan2"); }
Tensor& mlu_atan2_(Tensor& self, const Tensor& other) { return write_out(mlu_atan2(self, other), self, "aten::atan2"); }

// The program's name of a torch dtype (cast targets).
std::string dtype_text(at::ScalarType t, const char* op) {
  switch (t) {
    case at::kFloat: return "f32";
    case at::kHalf: return "f16";
    case at::kInt: return "i32";
    case at::kLong: return "i64";
    case at::kChar: return "i8";
    case at::kBool: return "bool";
    default: break;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, op, ": dtype ", t, " is not supported on device mlu");
}

// Quotients rounded toward zero ("trunc") or down ("floor") and the matching remainders, from the
// true quotient q = a / b (fp32 for integers: exact while |a|, |b| < 2^24) and the truncating cast.
// The result has torch's dtype for a op b (integers stay integers). Integer division by zero is
// not detected (torch raises ZeroDivisionError): the result is unspecified.
enum class Rounding { kTrunc, kFloor };
// Statements setting k to the rounded quotient of $0 / $1.
std::string rounded_quotient_statements(Rounding mode, const std::string& limit) {
  const std::string t = "t = where(lt(abs(q), " + limit + "), cast_like(cast(q, i32), q), q); ";
  return "q = div($0, $1); " + t + "k = " + (mode == Rounding::kTrunc ? "t" : "sub(t, cast_like(gt(t, q), q))") + "; ";
}
std::string quotient_limit(at::ScalarType t) { return t == at::kHalf ? "1024.0" : "8388608.0"; }

// uint8 / int16 (not libmlu dtypes): the int32 copies' quotient or remainder, narrowed back (in
// range, but for the wrap torch has too: int16 -32768 // -1).
Tensor rounded_div(const char* name, const Tensor& a, const Tensor& b, Rounding mode) {
  const at::ScalarType rt = at::result_type(a, b);
  if (is_narrow_int(rt)) return rounded_div(name, widened(a, rt), widened(b, rt), mode).to(rt);
  return program(name, {a, b}, rounded_quotient_statements(mode, quotient_limit(rt)) + "cast(k, " + dtype_text(rt, name) + ")");
}
// a - b * rounded(a / b): fmod (trunc, the sign of a) and remainder (floor, the sign of b).
Tensor rounded_mod(const char* name, const Tensor& a, const Tensor& b, Rounding mode) {
  const at::ScalarType rt = at::result_type(a, b);
  if (is_narrow_int(rt)) return rounded_mod(name, widened(a, rt), widened(b, rt), mode).to(rt);
  return program(name, {a, b},
                 rounded_quotient_statements(mode, quotient_limit(rt)) + "cast(sub($0, mul(k, $1)), " +
                     dtype_text(rt, name) + ")");
}

Tensor mlu_floor_divide(const Tensor& self, const Tensor& other) {
  return rounded_div("aten::floor_divide", self, other, Rounding::kFloor);
}
Tensor& mlu_floor_divide_out(const Tensor& self, const Tensor& other, Tensor& out) {
  return write_out(mlu_floor_divide(self, other), out, "aten::floor_divide");
}
Tensor& mlu_floor_divide_(Tensor& self, const Tensor& other) {
  return write_out(mlu_floor_divide(self, other), self, "aten::floor_divide_");
}
Tensor mlu_fmod(const Tensor& self, const Tensor& other) { return rounded_mod("aten::fmod", self, other, Rounding::kTrunc); }
Tensor& mlu_fmod_out(const Tensor& self, const Tensor& other, Tensor& out) { return write_out(mlu_fmod(self, other), out, "aten::fmod"); }
Tensor& mlu_fmod_(Tensor& self, const Tensor& other) { return write_out(mlu_fmod(self, other), self, "aten::fmod_"); }
Tensor mlu_remainder(const Tensor& self, const Tensor& other) {
  return rounded_mod("aten::remainder", self, other, Rounding::kFloor);
}
Tensor& mlu_remainder_out(const Tensor& self, const Tensor& other, Tensor& out) {
  return write_out(mlu_remainder(self, other), out, "aten::remainder");
}
Tensor& mlu_remainder_(Tensor& self, const Tensor& other) { return write_out(mlu_remainder(self, other), self, "aten::remainder_"); }

// x log1p(y), 0 where x == 0 (even for y == -1), NaN where y is NaN.
Tensor mlu_xlog1py(const Tensor& self, const Tensor& other) {
  return program("aten::special_xlog1py", {float_input(self), other},
                 "l = where(lt(abs($1), 0.001), mul($1, add(1.0, mul($1, add(-0.5, mul($1, 0.33333333333333333))))), "
                 "log(add($1, 1.0))); p = mul($0, l); where(ne($1, $1), add(p, $1), where(eq($0, 0.0), 0.0, p))");
}
Tensor& mlu_xlog1py_out(const Tensor& self, const Tensor& other, Tensor& out) {
  return write_out(mlu_xlog1py(self, other), out, "aten::special_xlog1py");
}

// angle of a real number: 0 for x >= 0, pi for x < 0, NaN for NaN.
Tensor mlu_angle(const Tensor& self) {
  return program("aten::angle", {float_input(self)}, "cast_like(where(ne($0, $0), $0, where(lt($0, 0.0), 3.141592653589793, 0.0)), $0)");
}
Tensor& mlu_angle_out(const Tensor& self, Tensor& out) { return write_out(mlu_angle(self), out, "aten::angle"); }

// prelu: x > 0 ? x : w x (torch's prelu hands _prelu_kernel a weight already shaped to broadcast),
// and its backward as torch's: dx = g (x > 0 ? 1 : w) and dw = g x where x <= 0, both of the
// broadcast shape (autograd sums dw to the weight's shape).
Tensor mlu_prelu_kernel(const Tensor& self, const Tensor& weight) {
  return program("aten::_prelu_kernel", {self, weight}, "where(gt($0, 0.0), $0, mul($1, $0))");
}
std::tuple<Tensor, Tensor> mlu_prelu_kernel_backward(const Tensor& grad, const Tensor& self, const Tensor& weight) {
  const Tensor gx = program("aten::_prelu_kernel_backward", {grad, self, weight}, "where(gt($1, 0.0), $0, mul($0, $2))");
  const Tensor gw = program("aten::_prelu_kernel_backward", {grad, self, weight},
                            "cast_like(where(gt($1, 0.0), mul($0, 0.0), mul($0, $1)), $2)");
  return {gx, gw};
}

// binary_cross_entropy: -w (y log x + (1 - y) log(1 - x)), each log clamped at -100 as torch does;
// backward: g w (x - y) / max((1 - x) x, 1e-12).
Tensor mlu_binary_cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                int64_t reduction) {
  const std::string pointwise =
      "neg(add(mul($1, maximum(log($0), -100.0)), mul(sub(1.0, $1), maximum(log(sub(1.0, $0)), -100.0))))";
  const Tensor loss = weight && weight->defined()
                          ? program("aten::binary_cross_entropy", {self, target, *weight}, "mul(" + pointwise + ", $2)")
                          : program("aten::binary_cross_entropy", {self, target}, pointwise);
  return reduce(loss, reduction);
}
Tensor& mlu_binary_cross_entropy_out(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                     int64_t reduction, Tensor& out) {
  return write_out(mlu_binary_cross_entropy(self, target, weight, reduction), out, "aten::binary_cross_entropy");
}
Tensor mlu_binary_cross_entropy_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                                         const std::optional<Tensor>& weight, int64_t reduction) {
  const std::string d = "mul(mul($0, div(sub($1, $2), maximum(mul(sub(1.0, $1), $1), 1e-12))), " +
                        per_element(self, reduction) + ")";
  if (weight && weight->defined())
    return program("aten::binary_cross_entropy_backward", {grad, self, target, *weight}, "mul(" + d + ", $3)");
  return program("aten::binary_cross_entropy_backward", {grad, self, target}, d);
}
Tensor& mlu_binary_cross_entropy_backward_out(const Tensor& grad, const Tensor& self, const Tensor& target,
                                              const std::optional<Tensor>& weight, int64_t reduction, Tensor& gi) {
  return write_out(mlu_binary_cross_entropy_backward(grad, self, target, weight, reduction), gi,
                   "aten::binary_cross_entropy_backward");
}

// ---- gamma-function family and erfinv ---------------------------------------------------------------------------
//
// All in fp32 whatever the input (fp16 rounds once at the end, as torch's CPU kernels compute fp16
// in fp32): the series lose too much in fp16 steps. Near the poles the reflection's sin(pi x) has
// fp32's argument rounding (relative error ~1e-5 within 1e-2 of a negative integer).

// Statements: z = x reflected to x >= 1/2 (z = 1 - x below), y = z shifted up by `shift` (y = z + shift
// where z < shift), and r = 1/y; the reflection and shift terms are each function's own.
std::string reflect_shift_statements(const std::string& x, int shift) {
  return "refl = lt(" + x + ", 0.5); z = where(refl, sub(1.0, " + x + "), " + x + "); low = lt(z, " +
         lit(static_cast<double>(shift)) + "); y = where(low, add(z, " + lit(static_cast<double>(shift)) +
         "), z); r = div(1.0, y); rr = mul(r, r); spx = sin(mul(" + x + ", 3.141592653589793)); ";
}

// lgamma: Stirling's series at y = z + 7 >= 7 ((y - 1/2) log y - y + log(2 pi)/2 + 1/(12 y) - ...,
// truncation < 1e-9), minus log(z (z+1) ... (z+6)) where shifted, and reflected below 1/2 by
// lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x). Poles (0, -1, ...: set apart, sin(pi x) is not
// exactly 0 there in fp32) and +-inf give inf.
Tensor mlu_lgamma(const Tensor& self) {
  std::string prod = "z";
  for (int k = 1; k < 7; ++k) prod = "mul(" + prod + ", add(z, " + lit(static_cast<double>(k)) + "))";
  const std::string series = horner("rr", {1.0 / 12, -1.0 / 360, 1.0 / 1260, -1.0 / 1680});
  const Tensor input = float_input(self);
  return program("aten::lgamma", {input},
                 "x = cast($0, f32); " + reflect_shift_statements("x", 7) +
                     "lz = sub(add(sub(mul(sub(y, 0.5), log(y)), y), add(0.91893853320467274, mul(" + series +
                     ", r))), where(low, log(" + prod + "), 0.0)); "
                     "v = where(refl, sub(log(div(3.141592653589793, abs(spx))), lz), lz); "
                     "pole = logical_and(le(x, 0.0), eq(x, " + trunc_of("x", input) + ")); "
                     "cast_like(where(logical_or(pole, eq(abs(x), inf)), inf, v), $0)");
}
Tensor& mlu_lgamma_out(const Tensor& self, Tensor& out) { return write_out(mlu_lgamma(self), out, "aten::lgamma"); }
Tensor& mlu_lgamma_(Tensor& self) { return write_out(mlu_lgamma(self), self, "aten::lgamma"); }

// digamma: the asymptotic series at y = z + 6 >= 6 (log y - 1/(2y) - 1/(12y^2) + 1/(120y^4) - ...),
// minus 1/z + ... + 1/(z+5) where shifted; reflected by psi(x) = psi(1 - x) - pi cos(pi x) / sin(pi x).
// digamma(0) = -inf, negative integers NaN, +inf inf (torch's values).
std::string shift_sum(int shift, int power) {
  std::string sum = "0.0";
  for (int k = 0; k < shift; ++k) {
    const std::string t = "add(z, " + lit(static_cast<double>(k)) + ")";
    sum = "add(" + sum + ", div(1.0, " + (power == 1 ? t : "mul(" + t + ", " + t + ")") + "))";
  }
  return sum;
}
std::string digamma_text(const Tensor& self) {
  const std::string series = horner("rr", {0.0, -1.0 / 12, 1.0 / 120, -1.0 / 252, 1.0 / 240, -1.0 / 132});
  return "x = cast($0, f32); " + reflect_shift_statements("x", 6) +
         "pz = sub(sub(add(log(y), " + series + "), mul(r, 0.5)), where(low, " + shift_sum(6, 1) + ", 0.0)); "
         "v = where(refl, sub(pz, div(mul(cos(mul(x, 3.141592653589793)), 3.141592653589793), spx)), pz); "
         "negint = logical_and(lt(x, 0.0), eq(x, " + trunc_of("x", self) + ")); "
         "cast_like(where(eq(x, 0.0), -inf, where(negint, nan, where(eq(x, inf), inf, v))), $0)";
}
// trigamma: 1/y + 1/(2y^2) + 1/(6y^3) - 1/(30y^5) + 1/(42y^7) - 1/(30y^9) at y = z + 6, plus
// 1/z^2 + ... + 1/(z+5)^2 where shifted; reflected by psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x).
std::string trigamma_text() {
  const std::string series = horner("rr", {1.0, 1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30});
  return "x = cast($0, f32); " + reflect_shift_statements("x", 6) +
         "p1 = add(add(mul(r, " + series + "), mul(rr, 0.5)), where(low, " + shift_sum(6, 2) + ", 0.0)); "
         "cast_like(where(refl, sub(div(9.869604401089358, mul(spx, spx)), p1), p1), $0)";
}
Tensor mlu_digamma(const Tensor& self) {
  const Tensor x = float_input(self);
  return program("aten::digamma", {x}, digamma_text(x));
}
Tensor& mlu_digamma_out(const Tensor& self, Tensor& out) { return write_out(mlu_digamma(self), out, "aten::digamma"); }
Tensor& mlu_digamma_(Tensor& self) { return write_out(mlu_digamma(self), self, "aten::digamma"); }
Tensor mlu_polygamma(int64_t n, const Tensor& self) {
  TORCH_CHECK(n >= 0, "aten::polygamma: n must be non-negative, got ", n);
  if (n >= 2) return polygamma_by_zeta(n, self);
  if (n == 0) return mlu_digamma(self);
  return program("aten::polygamma", {float_input(self)}, trigamma_text());
}
Tensor& mlu_polygamma_out(int64_t n, const Tensor& self, Tensor& out) {
  return write_out(mlu_polygamma(n, self), out, "aten::polygamma");
}

// erfinv by Giles' single-precision approximation ("Approximating the erfinv function", GPU
// Computing Gems, 2011): w = -log((1 - x)(1 + x)), a degree-8 polynomial in w - 2.5 (w < 5) or in
// sqrt(w) - 3, times x (relative error ~4e-7); +-1 gives +-inf, |x| > 1 NaN.
Tensor mlu_erfinv(const Tensor& self) {
  const std::string central = horner("wc", {1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087,
                                            -4.39150654e-06, -3.5233877e-06, 3.43273939e-07, 2.81022636e-08});
  const std::string tail = horner("wt", {2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773,
                                         -0.00367342844, 0.00134934322, 0.000100950558, -0.000200214257});
  return program("aten::erfinv", {float_input(self)},
                 "x = cast($0, f32); w = neg(log(mul(sub(1.0, x), add(1.0, x)))); wc = sub(w, 2.5); "
                 "wt = sub(sqrt(w), 3.0); p = where(lt(w, 5.0), " + central + ", " + tail + "); "
                 "cast_like(where(eq(abs(x), 1.0), mul(x, inf), mul(p, x)), $0)");
}
Tensor& mlu_erfinv_out(const Tensor& self, Tensor& out) { return write_out(mlu_erfinv(self), out, "aten::erfinv"); }
Tensor& mlu_erfinv_(Tensor& self) { return write_out(mlu_erfinv(self), self, "aten::erfinv"); }

// ---- linspace, logspace ----------------------------------------------------------------------------------------

// linspace: step = (end - start) / (steps - 1); the first half counts up from start, the second
// down from end (torch's formula: both ends exact, symmetric rounding). logspace: base^linspace.
// Computed in fp32 (integer outputs truncate, as torch's integer linspace).
Tensor linspace_values(OpScope& op, double start, double end, int64_t steps, std::optional<double> base) {
  TORCH_CHECK(steps >= 0, op.name(), ": number of steps must be non-negative, got ", steps);
  const Tensor idx = at::arange(steps, at::TensorOptions().device(op.device()).dtype(at::kFloat));
  if (steps == 0) return idx;
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  const int64_t halfway = std::max<int64_t>(steps / 2, 1);  // steps = 1: the one value is start
  std::string v = "where(lt($0, " + lit(static_cast<double>(halfway)) + "), add(mul($0, " + lit(step) + "), " +
                  lit(start) + "), sub(" + lit(end) + ", mul(sub(" + lit(static_cast<double>(steps - 1)) + ", $0), " +
                  lit(step) + ")))";
  if (base) v = "pow(" + lit(*base) + ", " + v + ")";
  return run_elementwise_program({idx}, v);
}
Tensor& mlu_linspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, Tensor& out) {
  OpScope op("aten::linspace", out);
  return write_out(linspace_values(op, start.toDouble(), end.toDouble(), steps, std::nullopt).to(out.scalar_type()), out,
                   "aten::linspace");
}
Tensor& mlu_logspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, double base, Tensor& out) {
  OpScope op("aten::logspace", out);
  return write_out(linspace_values(op, start.toDouble(), end.toDouble(), steps, base).to(out.scalar_type()), out,
                   "aten::logspace");
}


// ---- random distributions ----------------------------------------------------------------------------------------
//
// libmlu random_uniform draws u in [0, 1) (24-bit Philox uniforms on the device generator, which
// torch.manual_seed reaches); every other distribution is one program over those uniforms
// [CUDA twin: DistributionTemplates.h, the same transforms]:
//   normal(mean, std)     Box-Muller: mean + std sqrt(-2 log(1 - u1)) cos(2 pi u2), u1, u2 from
//                         one draw of 2 x n uniforms (1 - u1 is in (0, 1]: the log is finite)
//   log_normal            exp(normal)
//   exponential(lambda)   -log(1 - u) / lambda
//   cauchy(median, sigma) median + sigma tan(pi (u - 1/2))
//   geometric(p)          max(1, ceil(log(1 - u) / log(1 - p)))
//   random_(from, to)     from + floor(u (to - from)), clamped below to: exact for ranges up to
//                         2^24; wider ranges get 2^24 equally spaced values (24-bit uniforms).
//                         Integer results go through int32 (the VFU's integers): from and to must
//                         lie within int32 for integer dtypes, else NotImplementedError.
//   bernoulli_(p tensor)  u < p
// Results are computed in fp32 and cast to self's dtype (fp16, bf16, float64 storage, integers).

constexpr double kTwoPi = 6.283185307179586;
constexpr double kPi = 3.141592653589793;

// fp32 uniforms in [lo, hi) of `sizes` (libmlu random_uniform; nothing launched when empty).
Tensor uniform_tensor(OpScope& op, at::IntArrayRef sizes, double lo, double hi, const std::optional<at::Generator>& gen) {
  Tensor u = at::empty(sizes, at::TensorOptions().device(op.device()).dtype(at::kFloat));
  if (u.numel() == 0) return u;
  op.take_random((static_cast<std::uint64_t>(u.numel()) + 3) / 4 * 4, gen);
  op.check(mlu::random_uniform(op.handle(), lo, hi, desc(u, op.name()), u.data_ptr()), "random_uniform");
  return u;
}

// Random ops fill self in place: floating self for the continuous distributions (float64 is
// computed in fp32 and stored, as its other ops).
void check_random_self(const Tensor& self, const char* op, bool integers_too) {
  const at::ScalarType t = self.scalar_type();
  // bfloat16 is converted from the fp32 draws by copy_strided, which refuses it (naming the preset)
  // where the preset has no bf16 arithmetic.
  const bool ok = t == at::kFloat || t == at::kHalf || t == at::kBFloat16 || t == at::kDouble ||
                  (integers_too && (t == at::kInt || t == at::kLong || t == at::kChar || t == at::kByte || t == at::kBool));
  TORCH_CHECK_NOT_IMPLEMENTED(ok, op, ": dtype ", t,
                              " is not supported on device mlu (float32, float16, bfloat16, float64",
                              integers_too ? ", int8, uint8, int32, int64, bool)" : ")");
}

// self = r converted to self's dtype (uint8 written as int8: the low byte of r's in-range values).
void store_random(OpScope& op, const Tensor& r, Tensor& self) {
  const mlu::TensorDesc dst =
      self.scalar_type() == at::kByte ? desc_as(self, mlu::DType::kInt8, op.name()) : desc(self, op.name());
  op.check(mlu::copy_strided(op.handle(), desc(r, op.name()), r.data_ptr(), dst, self.data_ptr()), "copy_strided");
}

// self = program($0 = uniforms of self's shape) (or of [2, ...] for two_draws: $0, $1).
Tensor& fill_from_uniforms(Tensor& self, const char* name, const std::string& text, bool two_draws,
                           const std::optional<at::Generator>& gen) {
  OpScope op(name, self);
  if (self.numel() == 0) return self;
  std::vector<int64_t> sizes = self.sizes().vec();
  if (two_draws) sizes.insert(sizes.begin(), 2);
  const Tensor u = uniform_tensor(op, sizes, 0.0, 1.0, gen);
  const Tensor r = two_draws ? run_elementwise_program({u[0], u[1]}, text) : run_elementwise_program({u}, text);
  store_random(op, r, self);
  return self;
}

std::string standard_normal_text() {
  return "mul(sqrt(mul(log(sub(1.0, $0)), -2.0)), cos(mul($1, " + lit(kTwoPi) + ")))";
}
std::string normal_text(double mean, double std) {
  return "add(mul(" + standard_normal_text() + ", " + lit(std) + "), " + lit(mean) + ")";
}

Tensor& mlu_uniform_(Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  const char* name = "aten::uniform_";
  check_random_self(self, name, false);
  TORCH_CHECK(from <= to, name, ": expects to return a [from, to) range, but found from=", from, " > to=", to);
  OpScope op(name, self);
  if (self.numel() == 0) return self;
  if ((self.scalar_type() == at::kFloat || self.scalar_type() == at::kHalf) &&
      at::has_internal_overlap(self) == at::MemOverlap::No) {  // straight into self, any strides
    op.take_random((static_cast<std::uint64_t>(self.numel()) + 3) / 4 * 4, gen);
    op.check(mlu::random_uniform(op.handle(), from, to, desc(self, name), self.data_ptr()), "random_uniform");
    return self;
  }
  copy_into(op, uniform_tensor(op, self.sizes(), from, to, gen), self);
  return self;
}

Tensor& mlu_normal_(Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  check_random_self(self, "aten::normal_", false);
  TORCH_CHECK(std >= 0.0, "aten::normal_: expects std >= 0.0, but found std ", std);
  return fill_from_uniforms(self, "aten::normal_", normal_text(mean, std), true, gen);
}

// normal with tensor mean and/or std: a standard normal draw of the broadcast shape, then
// mean + std z in the same program.
Tensor normal_tensors(const char* name, const Tensor& mean, const Tensor& std, std::optional<at::Generator> gen) {
  OpScope op(name, mean.defined() ? mean : std);
  const std::vector<int64_t> shape = mean.defined() && std.defined() ? at::infer_size(mean.sizes(), std.sizes())
                                     : mean.defined()                 ? mean.sizes().vec()
                                                                      : std.sizes().vec();
  std::vector<int64_t> sizes = shape;
  sizes.insert(sizes.begin(), 2);
  const Tensor u = uniform_tensor(op, sizes, 0.0, 1.0, gen);
  if (u.numel() == 0) return at::empty(shape, (mean.defined() ? mean : std).options());
  const std::string z = standard_normal_text();
  return run_elementwise_program({u[0], u[1], mean, std}, "cast_like(add(mul(" + z + ", $3), $2), $2)");
}
Tensor mlu_normal_tensor_float(const Tensor& mean, double std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std >= 0.0, "aten::normal: expects std >= 0.0, but found std ", std);
  return normal_tensors("aten::normal.Tensor_float", mean, at::scalar_tensor(std, mean.options()), gen);
}
Tensor mlu_normal_float_tensor(double mean, const Tensor& std, std::optional<at::Generator> gen) {
  return normal_tensors("aten::normal.float_Tensor", at::scalar_tensor(mean, std.options()), std, gen);
}
Tensor mlu_normal_tensor_tensor(const Tensor& mean, const Tensor& std, std::optional<at::Generator> gen) {
  return normal_tensors("aten::normal.Tensor_Tensor", mean, std, gen);
}
Tensor& mlu_normal_tensor_float_out(const Tensor& mean, double std, std::optional<at::Generator> gen, Tensor& out) {
  return write_out(mlu_normal_tensor_float(mean, std, gen), out, "aten::normal.Tensor_float_out");
}
Tensor& mlu_normal_float_tensor_out(double mean, const Tensor& std, std::optional<at::Generator> gen, Tensor& out) {
  return write_out(mlu_normal_float_tensor(mean, std, gen), out, "aten::normal.float_Tensor_out");
}
Tensor& mlu_normal_tensor_tensor_out(const Tensor& mean, const Tensor& std, std::optional<at::Generator> gen, Tensor& out) {
  return write_out(mlu_normal_tensor_tensor(mean, std, gen), out, "aten::normal.Tensor_Tensor_out");
}

Tensor& mlu_log_normal_(Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  check_random_self(self, "aten::log_normal_", false);
  TORCH_CHECK(std > 0.0, "aten::log_normal_: expects std > 0.0, but found std=", std);
  return fill_from_uniforms(self, "aten::log_normal_", "exp(" + normal_text(mean, std) + ")", true, gen);
}

Tensor& mlu_exponential_(Tensor& self, double lambd, std::optional<at::Generator> gen) {
  check_random_self(self, "aten::exponential_", false);
  TORCH_CHECK(lambd > 0.0, "aten::exponential_: expects lambda > 0.0, but found lambda=", lambd);
  return fill_from_uniforms(self, "aten::exponential_", "div(log(sub(1.0, $0)), " + lit(-lambd) + ")", false, gen);
}

Tensor& mlu_cauchy_(Tensor& self, double median, double sigma, std::optional<at::Generator> gen) {
  check_random_self(self, "aten::cauchy_", false);
  TORCH_CHECK(sigma > 0.0, "aten::cauchy_: expects sigma > 0.0, but found sigma=", sigma);
  return fill_from_uniforms(self, "aten::cauchy_",
                            "a = mul(sub($0, 0.5), " + lit(kPi) + "); add(mul(div(sin(a), cos(a)), " + lit(sigma) +
                                "), " + lit(median) + ")",
                            false, gen);
}

Tensor& mlu_geometric_(Tensor& self, double p, std::optional<at::Generator> gen) {
  check_random_self(self, "aten::geometric_", true);
  TORCH_CHECK(p > 0 && p < 1, "aten::geometric_: expects p to be in (0, 1), but got p=", p);
  // q >= 0; its ceiling from the truncating int32 cast (q is capped below 2^31).
  const std::string q = "minimum(div(log(sub(1.0, $0)), " + lit(std::log1p(-p)) + "), 2147483520.0)";
  return fill_from_uniforms(self, "aten::geometric_",
                            "q = " + q + "; t = cast(cast(q, i32), f32); maximum(add(t, cast(gt(q, t), f32)), 1.0)", false,
                            gen);
}

// [from, to) for random_: to = None means the dtype's largest integer + 1 (floats: 2^mantissa + 1).
Tensor& random_range(Tensor& self, const char* name, int64_t from, std::optional<int64_t> to_opt,
                     std::optional<at::Generator> gen) {
  check_random_self(self, name, true);
  const at::ScalarType t = self.scalar_type();
  int64_t to = 0;
  if (to_opt) {
    to = *to_opt;
  } else {
    switch (t) {
      case at::kBool: to = 2; break;
      case at::kChar: to = 128; break;
      case at::kByte: to = 256; break;
      case at::kHalf: to = (int64_t{1} << 11) + 1; break;
      case at::kFloat: to = (int64_t{1} << 24) + 1; break;
      default: to = int64_t{1} << 31; break;  // int32; int64 and double through int32 (see below)
    }
  }
  TORCH_CHECK(from < to, name, ": expects 'from' to be less than 'to', but got from=", from, " >= to=", to);
  const bool integral = !at::isFloatingType(t);
  TORCH_CHECK_NOT_IMPLEMENTED(!integral || (from >= INT32_MIN && to - 1 <= INT32_MAX), name, ": the range [", from,
                              ", ", to, ") of dtype ", t,
                              " leaves int32, which device mlu computes integers in (int64 is narrowed to int32)");
  const double range = static_cast<double>(to - from);
  // floor(u range) by the truncating cast (u range >= 0), at most range - 1 (fp32 rounding of u range).
  const std::string k = "minimum(cast(mul($0, " + lit(range) + "), i32), " + std::to_string(to - from - 1) + ")";
  const std::string text = integral ? "add(" + k + ", " + std::to_string(from) + ")"
                                    : "add(cast(" + k + ", f32), " + lit(static_cast<double>(from)) + ")";
  return fill_from_uniforms(self, name, text, false, gen);
}
Tensor& mlu_random_from_(Tensor& self, int64_t from, std::optional<int64_t> to, std::optional<at::Generator> gen) {
  return random_range(self, "aten::random_.from", from, to, gen);
}
Tensor& mlu_random_to_(Tensor& self, int64_t to, std::optional<at::Generator> gen) {
  return random_range(self, "aten::random_.to", 0, to, gen);
}
Tensor& mlu_random_(Tensor& self, std::optional<at::Generator> gen) {
  return random_range(self, "aten::random_", 0, std::nullopt, gen);
}

Tensor& mlu_bernoulli_tensor_(Tensor& self, const Tensor& p, std::optional<at::Generator> gen) {
  const char* name = "aten::bernoulli_.Tensor";
  check_random_self(self, name, true);
  OpScope op(name, self);
  check_on_device(p, op.device(), name, "p");
  if (self.numel() == 0) return self;
  const Tensor u = uniform_tensor(op, self.sizes(), 0.0, 1.0, gen);
  store_random(op, run_elementwise_program({u, p.expand(self.sizes())}, "lt($0, $1)"), self);
  return self;
}

}  // namespace

Tensor rounded_division(const char* name, const Tensor& a, const Tensor& b, c10::string_view mode) {
  TORCH_CHECK_VALUE(mode == "trunc" || mode == "floor", name, ": expected rounding_mode 'trunc' or 'floor', got '",
                    mode, "'");
  return rounded_div(name, a, b, mode == "trunc" ? Rounding::kTrunc : Rounding::kFloor);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("elu", TORCH_FN(mlu_elu));
  m.impl("elu.out", TORCH_FN(mlu_elu_out));
  m.impl("elu_", TORCH_FN(mlu_elu_));
  m.impl("elu_backward", TORCH_FN(mlu_elu_backward));
  m.impl("elu_backward.grad_input", TORCH_FN(mlu_elu_backward_out));
  m.impl("softplus", TORCH_FN(mlu_softplus));
  m.impl("softplus.out", TORCH_FN(mlu_softplus_out));
  m.impl("softplus_backward", TORCH_FN(mlu_softplus_backward));
  m.impl("softplus_backward.grad_input", TORCH_FN(mlu_softplus_backward_out));
  m.impl("mish", TORCH_FN(mlu_mish));
  m.impl("mish.out", TORCH_FN(mlu_mish_out));
  m.impl("mish_", TORCH_FN(mlu_mish_));
  m.impl("mish_backward", TORCH_FN(mlu_mish_backward));
  m.impl("hardshrink", TORCH_FN(mlu_hardshrink));
  m.impl("hardshrink.out", TORCH_FN(mlu_hardshrink_out));
  m.impl("hardshrink_backward", TORCH_FN(mlu_hardshrink_backward));
  m.impl("hardshrink_backward.grad_input", TORCH_FN(mlu_hardshrink_backward_out));
  m.impl("softshrink", TORCH_FN(mlu_softshrink));
  m.impl("softshrink.out", TORCH_FN(mlu_softshrink_out));
  m.impl("softshrink_backward", TORCH_FN(mlu_softshrink_backward));
  m.impl("softshrink_backward.grad_input", TORCH_FN(mlu_softshrink_backward_out));
  m.impl("sign", TORCH_FN(mlu_sign));
  m.impl("sign.out", TORCH_FN(mlu_sign_out));
  m.impl("sign_", TORCH_FN(mlu_sign_));
  m.impl("sgn", TORCH_FN(mlu_sign));  // sgn of a real tensor is its sign (l1_loss's backward)
  m.impl("sgn.out", TORCH_FN(mlu_sign_out));
  m.impl("sgn_", TORCH_FN(mlu_sign_));
  m.impl("isnan", TORCH_FN(mlu_isnan));
  m.impl("nan_to_num", TORCH_FN(mlu_nan_to_num));
  m.impl("nan_to_num.out", TORCH_FN(mlu_nan_to_num_out));
  m.impl("nan_to_num_", TORCH_FN(mlu_nan_to_num_));
  m.impl("xlogy.Tensor", TORCH_FN(mlu_xlogy));
  m.impl("xlogy.OutTensor", TORCH_FN(mlu_xlogy_out));
  m.impl("logit", TORCH_FN(mlu_logit));
  m.impl("logit.out", TORCH_FN(mlu_logit_out));
  m.impl("logit_backward", TORCH_FN(mlu_logit_backward));
  m.impl("logit_backward.grad_input", TORCH_FN(mlu_logit_backward_out));
#define MLUSIM_REGISTER_UNARY(fn)               \
  m.impl(#fn, TORCH_FN(mlu_##fn));              \
  m.impl(#fn ".out", TORCH_FN(mlu_##fn##_out)); \
  m.impl(#fn "_", TORCH_FN(mlu_##fn##_));
  MLUSIM_REGISTER_UNARY(round)
  m.impl("round.decimals", TORCH_FN(mlu_round_decimals));
  m.impl("round.decimals_out", TORCH_FN(mlu_round_decimals_out));
  m.impl("round_.decimals", TORCH_FN(mlu_round_decimals_));
  MLUSIM_REGISTER_UNARY(floor)
  MLUSIM_REGISTER_UNARY(ceil)
  MLUSIM_REGISTER_UNARY(trunc)
  MLUSIM_REGISTER_UNARY(frac)
  MLUSIM_REGISTER_UNARY(exp2)
  MLUSIM_REGISTER_UNARY(log2)
  MLUSIM_REGISTER_UNARY(log10)
  MLUSIM_REGISTER_UNARY(expm1)
  MLUSIM_REGISTER_UNARY(log1p)
  MLUSIM_REGISTER_UNARY(sinh)
  MLUSIM_REGISTER_UNARY(cosh)
  MLUSIM_REGISTER_UNARY(asinh)
  MLUSIM_REGISTER_UNARY(acosh)
  MLUSIM_REGISTER_UNARY(atanh)
#undef MLUSIM_REGISTER_UNARY
  m.impl("hypot", TORCH_FN(mlu_hypot));
  m.impl("hypot.out", TORCH_FN(mlu_hypot_out));
  m.impl("hypot_", TORCH_FN(mlu_hypot_));
  m.impl("heaviside", TORCH_FN(mlu_heaviside));
  m.impl("heaviside.out", TORCH_FN(mlu_heaviside_out));
  m.impl("log_sigmoid_forward", TORCH_FN(mlu_log_sigmoid_forward));
  m.impl("log_sigmoid_forward.output", TORCH_FN(mlu_log_sigmoid_forward_out));
  m.impl("log_sigmoid_backward", TORCH_FN(mlu_log_sigmoid_backward));
  m.impl("log_sigmoid_backward.grad_input", TORCH_FN(mlu_log_sigmoid_backward_out));
  m.impl("threshold", TORCH_FN(mlu_threshold));
  m.impl("threshold.out", TORCH_FN(mlu_threshold_out));
  m.impl("glu", TORCH_FN(mlu_glu));
  m.impl("glu.out", TORCH_FN(mlu_glu_out));
  m.impl("glu_backward", TORCH_FN(mlu_glu_backward));
  m.impl("glu_backward.grad_input", TORCH_FN(mlu_glu_backward_out));
  m.impl("fmax", TORCH_FN(mlu_fmax));
  m.impl("fmax.out", TORCH_FN(mlu_fmax_out));
  m.impl("fmin", TORCH_FN(mlu_fmin));
  m.impl("fmin.out", TORCH_FN(mlu_fmin_out));
  m.impl("signbit", TORCH_FN(mlu_signbit));
  m.impl("signbit.out", TORCH_FN(mlu_signbit_out));
  m.impl("copysign.Tensor", TORCH_FN(mlu_copysign));
  m.impl("copysign.out", TORCH_FN(mlu_copysign_out));
  m.impl("erf", TORCH_FN(mlu_erf));
  m.impl("erf.out", TORCH_FN(mlu_erf_out));
  m.impl("erf_", TORCH_FN(mlu_erf_));
  m.impl("bitwise_not", TORCH_FN(mlu_bitwise_not));
  m.impl("bitwise_not.out", TORCH_FN(mlu_bitwise_not_out));
  m.impl("logaddexp", TORCH_FN(mlu_logaddexp));
  m.impl("logaddexp.out", TORCH_FN(mlu_logaddexp_out));
  m.impl("logaddexp2", TORCH_FN(mlu_logaddexp2));
  m.impl("logaddexp2.out", TORCH_FN(mlu_logaddexp2_out));
  m.impl("addr", TORCH_FN(mlu_addr));
  m.impl("mse_loss", TORCH_FN(mlu_mse_loss));
  m.impl("mse_loss.out", TORCH_FN(mlu_mse_loss_out));
  m.impl("mse_loss_backward", TORCH_FN(mlu_mse_loss_backward));
  m.impl("mse_loss_backward.grad_input", TORCH_FN(mlu_mse_loss_backward_out));
  m.impl("smooth_l1_loss", TORCH_FN(mlu_smooth_l1_loss));
  m.impl("smooth_l1_loss.out", TORCH_FN(mlu_smooth_l1_loss_out));
  m.impl("smooth_l1_loss_backward", TORCH_FN(mlu_smooth_l1_loss_backward));
  m.impl("smooth_l1_loss_backward.grad_input", TORCH_FN(mlu_smooth_l1_loss_backward_out));
  m.impl("huber_loss", TORCH_FN(mlu_huber_loss));
  m.impl("huber_loss.out", TORCH_FN(mlu_huber_loss_out));
  m.impl("huber_loss_backward", TORCH_FN(mlu_huber_loss_backward));
  m.impl("huber_loss_backward.out", TORCH_FN(mlu_huber_loss_backward_out));
  m.impl("atan", TORCH_FN(mlu_atan));
  m.impl("atan.out", TORCH_FN(mlu_atan_out));
  m.impl("atan_", TORCH_FN(mlu_atan_));
  m.impl("asin", TORCH_FN(mlu_asin));
  m.impl("asin.out", TORCH_FN(mlu_asin_out));
  m.impl("asin_", TORCH_FN(mlu_asin_));
  m.impl("acos", TORCH_FN(mlu_acos));
  m.impl("acos.out", TORCH_FN(mlu_acos_out));
  m.impl("acos_", TORCH_FN(mlu_acos_));
  m.impl("sinc", TORCH_FN(mlu_sinc));
  m.impl("sinc.out", TORCH_FN(mlu_sinc_out));
  m.impl("sinc_", TORCH_FN(mlu_sinc_));
  m.impl("erfc", TORCH_FN(mlu_erfc));
  m.impl("erfc.out", TORCH_FN(mlu_erfc_out));
  m.impl("erfc_", TORCH_FN(mlu_erfc_));
  m.impl("special_entr", TORCH_FN(mlu_special_entr));
  m.impl("special_entr.out", TORCH_FN(mlu_special_entr_out));
  m.impl("atan2", TORCH_FN(mlu_atan2));
  m.impl("atan2.out", TORCH_FN(mlu_atan2_out));
  m.impl("atan2_", TORCH_FN(mlu_atan2_));
  m.impl("floor_divide", TORCH_FN(mlu_floor_divide));
  m.impl("floor_divide.out", TORCH_FN(mlu_floor_divide_out));
  m.impl("floor_divide_.Tensor", TORCH_FN(mlu_floor_divide_));
  m.impl("fmod.Tensor", TORCH_FN(mlu_fmod));
  m.impl("fmod.Tensor_out", TORCH_FN(mlu_fmod_out));
  m.impl("fmod_.Tensor", TORCH_FN(mlu_fmod_));
  m.impl("remainder.Tensor", TORCH_FN(mlu_remainder));
  m.impl("remainder.Tensor_out", TORCH_FN(mlu_remainder_out));
  m.impl("remainder_.Tensor", TORCH_FN(mlu_remainder_));
  m.impl("special_xlog1py", TORCH_FN(mlu_xlog1py));
  m.impl("special_xlog1py.out", TORCH_FN(mlu_xlog1py_out));
  m.impl("angle", TORCH_FN(mlu_angle));
  m.impl("angle.out", TORCH_FN(mlu_angle_out));
  m.impl("_prelu_kernel", TORCH_FN(mlu_prelu_kernel));
  m.impl("_prelu_kernel_backward", TORCH_FN(mlu_prelu_kernel_backward));
  m.impl("binary_cross_entropy", TORCH_FN(mlu_binary_cross_entropy));
  m.impl("binary_cross_entropy.out", TORCH_FN(mlu_binary_cross_entropy_out));
  m.impl("binary_cross_entropy_backward", TORCH_FN(mlu_binary_cross_entropy_backward));
  m.impl("binary_cross_entropy_backward.grad_input", TORCH_FN(mlu_binary_cross_entropy_backward_out));
  m.impl("lgamma", TORCH_FN(mlu_lgamma));
  m.impl("lgamma.out", TORCH_FN(mlu_lgamma_out));
  m.impl("lgamma_", TORCH_FN(mlu_lgamma_));
  m.impl("digamma", TORCH_FN(mlu_digamma));
  m.impl("digamma.out", TORCH_FN(mlu_digamma_out));
  m.impl("digamma_", TORCH_FN(mlu_digamma_));
  m.impl("polygamma", TORCH_FN(mlu_polygamma));
  m.impl("polygamma.out", TORCH_FN(mlu_polygamma_out));
  m.impl("erfinv", TORCH_FN(mlu_erfinv));
  m.impl("erfinv.out", TORCH_FN(mlu_erfinv_out));
  m.impl("erfinv_", TORCH_FN(mlu_erfinv_));
  m.impl("linspace.out", TORCH_FN(mlu_linspace_out));
  m.impl("logspace.out", TORCH_FN(mlu_logspace_out));
  m.impl("uniform_", TORCH_FN(mlu_uniform_));
  m.impl("normal_", TORCH_FN(mlu_normal_));
  m.impl("normal.Tensor_float", TORCH_FN(mlu_normal_tensor_float));
  m.impl("normal.float_Tensor", TORCH_FN(mlu_normal_float_tensor));
  m.impl("normal.Tensor_Tensor", TORCH_FN(mlu_normal_tensor_tensor));
  m.impl("normal.Tensor_float_out", TORCH_FN(mlu_normal_tensor_float_out));
  m.impl("normal.float_Tensor_out", TORCH_FN(mlu_normal_float_tensor_out));
  m.impl("normal.Tensor_Tensor_out", TORCH_FN(mlu_normal_tensor_tensor_out));
  m.impl("log_normal_", TORCH_FN(mlu_log_normal_));
  m.impl("exponential_", TORCH_FN(mlu_exponential_));
  m.impl("cauchy_", TORCH_FN(mlu_cauchy_));
  m.impl("geometric_", TORCH_FN(mlu_geometric_));
  m.impl("random_.from", TORCH_FN(mlu_random_from_));
  m.impl("random_.to", TORCH_FN(mlu_random_to_));
  m.impl("random_", TORCH_FN(mlu_random_));
  m.impl("bernoulli_.Tensor", TORCH_FN(mlu_bernoulli_tensor_));
}

}  // namespace mlusim::bridge::ops
