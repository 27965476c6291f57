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
//                                            below 2^23 (fp16: 2^10); larger values are integers
//   exp2, log2, log10, expm1, log1p          exp/log with a constant; expm1/log1p by their cubic
//                                            Taylor polynomial for |x| < 1e-3 (no cancellation)
//   sinh, cosh, asinh, acosh, atanh, hypot, heaviside, log_sigmoid (+ backward)
//   threshold, glu (+ backward), fmax/fmin, copysign/signbit, erf (A&S 7.1.26: 1.5e-7, ~3e-7 in fp32),
//   bitwise_not, logaddexp/logaddexp2
//
// Numerics: log(1 + e) stands for log1p(e) (the VFU has no log1p): absolute error ~1e-7 where
// exp(b x) is tiny, which is where softplus is itself tiny.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/sum.h>
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

// A program literal of a Python float (keeps the tensors' dtype, as Python scalars do in torch).
std::string lit(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  std::string s(text);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}
std::string lit(const c10::Scalar& v) { return lit(v.toDouble()); }

Tensor program(const char* aten_op, at::TensorList inputs, const std::string& text) {
  OpScope op(aten_op, inputs[0]);  // tags the program's kernel with the ATen op
  return run_elementwise_program(inputs, text);
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
  return program("aten::logit", {self}, "z = " + clamped_text(eps) + "; log(div(z, sub(1.0, z)))");
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
std::string trunc_of(const std::string& x, const Tensor& self) {
  return "where(lt(abs(" + x + "), " + integer_limit(self) + "), cast_like(cast(" + x + ", i32), " + x + "), " + x + ")";
}
MLUSIM_UNARY_PROGRAM(trunc, "trunc", trunc_of("$0", self))
MLUSIM_UNARY_PROGRAM(floor, "floor", "t = " + trunc_of("$0", self) + "; sub(t, cast_like(gt(t, $0), $0))")
MLUSIM_UNARY_PROGRAM(ceil, "ceil", "t = " + trunc_of("$0", self) + "; add(t, cast_like(lt(t, $0), $0))")
MLUSIM_UNARY_PROGRAM(frac, "frac", "sub($0, " + trunc_of("$0", self) + ")")
// round half to even: f = floor(x + 1/2); at a tie (f - x == 1/2) an odd f steps down by one.
// x + 1/2 is exact below the integer-only magnitude; beyond it x passes through.
MLUSIM_UNARY_PROGRAM(round, "round",
                     "h = add($0, 0.5); ht = " + trunc_of("h", self) + "; f = sub(ht, cast_like(gt(ht, h), h)); "
                     "q = mul(f, 0.5); odd = ne(q, " + trunc_of("q", self) + "); "
                     "r = where(logical_and(eq(sub(f, $0), 0.5), odd), sub(f, 1.0), f); "
                     "where(lt(abs($0), " + integer_limit(self) + "), r, $0)")

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

// ~x: logical not for bool, -x - 1 in two's complement for integers.
Tensor mlu_bitwise_not(const Tensor& self) {
  TORCH_CHECK(self.scalar_type() == at::kBool || at::isIntegralType(self.scalar_type(), /*includeBool=*/false),
              "aten::bitwise_not: expected a bool or integer tensor, got ", self.scalar_type());
  if (self.scalar_type() == at::kBool) return program("aten::bitwise_not", {self}, "logical_not($0)");
  return program("aten::bitwise_not", {self}, "cast_like(sub(neg($0), 1), $0)");
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
  return reduce(program("aten::mse_loss", {self, target}, "d = sub($0, $1); mul(d, d)"), reduction);
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

}  // namespace

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
}

}  // namespace mlusim::bridge::ops
