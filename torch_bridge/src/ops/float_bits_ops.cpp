// ATen ops on the bit pattern of fp32 values, computed by libmlu elementwise programs over the
// tensor's storage read as int32 (Tensor.view(int32): no copy), so the integer VFU does the bit
// arithmetic exactly [CPU/CUDA: std::nextafter / std::frexp per element]:
//
//   nextafter(x, y)   y where x == y; the smallest subnormal with y's sign where x == 0; otherwise
//                     the bits of x plus one when x moves away from zero (x < y for x > 0, x > y
//                     for x < 0), minus one when toward it; NaN where either is NaN
//   frexp(x)          mantissa in [0.5, 1) with x's sign and exponent: the exponent field e of
//                     the bits (e = trunc(|bits| / 2^23) corrected by one where fp32's rounding of
//                     |bits| carried into it), mantissa bits = sign | 126 << 23 | fraction;
//                     subnormal x is scaled by 2^24 first (exact) and its exponent lowered by 24;
//                     0, inf and NaN give (x, 0) as glibc's frexp
//
// fp32 only for nextafter (its result steps through the dtype's own ulps: float16 would need
// 16-bit integer arithmetic, which the VFU lacks; other dtypes raise NotImplementedError naming
// op and dtype); frexp takes fp16 through fp32 (every fp16 value and its mantissa are exact there).
#include <string>
#include <tuple>

#include <ATen/core/Tensor.h>
#include <ATen/ops/result_type.h>
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

Tensor program(const char* op, at::TensorList inputs, const std::string& text) {
  OpScope scope(op, inputs[0]);
  return run_elementwise_program(inputs, text);
}

// x as dtype `t` on the device (a copy kernel when it differs).
Tensor as_dtype(const Tensor& x, at::ScalarType t) { return x.scalar_type() == t ? x : x.to(t); }

Tensor mlu_nextafter(const Tensor& self, const Tensor& other) {
  const char* op = "aten::nextafter";
  const at::ScalarType rt = at::result_type(self, other);
  TORCH_CHECK_NOT_IMPLEMENTED(rt == at::kFloat, op, ": dtype ", rt,
                              " is not supported on device mlu (float32 only: the step is one ulp of the dtype, "
                              "computed on the value's bits with 32-bit integer arithmetic)");
  const Tensor x = as_dtype(self, rt), y = as_dtype(other, rt);
  // $0 x, $1 y, $2 x's bits, $3 y's bits. 2143289344 = 0x7fc00000 (NaN), -2147483648 the sign bit.
  const Tensor bits = program(
      op, {x, y, x.view(at::kInt), y.view(at::kInt)},
      "step = where(eq(lt($0, $1), gt($0, 0.0)), add($2, 1), sub($2, 1)); "
      "tiny = add(mul(cast(lt($1, 0.0), i32), -2147483648), 1); "
      "where(logical_or(ne($0, $0), ne($1, $1)), 2143289344, where(eq($0, $1), $3, where(eq($0, 0.0), tiny, step)))");
  return bits.view(at::kFloat);
}
Tensor& mlu_nextafter_out(const Tensor& self, const Tensor& other, Tensor& out) {
  return write_out(mlu_nextafter(self, other), out, "aten::nextafter");
}
Tensor& mlu_nextafter_(Tensor& self, const Tensor& other) {
  return write_out(mlu_nextafter(self, other), self, "aten::nextafter");
}

std::tuple<Tensor, Tensor> mlu_frexp(const Tensor& self) {
  const char* op = "aten::frexp";
  const at::ScalarType t = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kFloat || t == at::kHalf, op, ": dtype ", t,
                              " is not supported on device mlu (float32, and float16 through float32)");
  const Tensor x = as_dtype(self, at::kFloat);
  // Subnormals scaled into the normal range (2^24, exact); FLT_MIN = 1.1754943508222875e-38.
  const std::string subnormal = "logical_and(lt(abs($0), 1.1754943508222875e-38), ne($0, 0.0))";
  const Tensor scaled = program(op, {x}, "where(" + subnormal + ", mul($0, 16777216.0), $0)");
  // |bits| (the sign bit cleared: b + 2^31 for b < 0, in two steps inside int32), the exponent
  // field e and the fraction, of the bits `b`.
  const auto fields = [](const std::string& b) {
    return "a = where(lt(" + b + ", 0), add(add(" + b + ", 1073741824), 1073741824), " + b + "); "
           "e0 = cast(mul(cast(a, f32), 1.1920928955078125e-07), i32); "
           "e = where(gt(mul(e0, 8388608), a), sub(e0, 1), e0); "
           "special = logical_or(eq(a, 0), ge(a, 2139095040)); ";  // 0, inf, NaN
  };
  const Tensor b = scaled.view(at::kInt);
  const Tensor mantissa_bits =
      program(op, {b},
              fields("$0") + "m = add(sub(a, mul(e, 8388608)), 1056964608); "  // 126 << 23: [0.5, 1)
                             "m = where(lt($0, 0), sub(sub(m, 1073741824), 1073741824), m); "
                             "where(special, $0, m)");
  const Tensor exponent =
      program(op, {x, b},
              fields("$1") + "where(special, mul(e, 0), sub(sub(e, 126), mul(cast(" + subnormal + ", i32), 24)))");
  Tensor mantissa = mantissa_bits.view(at::kFloat);
  if (t != at::kFloat) mantissa = mantissa.to(t);
  return {mantissa, exponent};
}
std::tuple<Tensor&, Tensor&> mlu_frexp_out(const Tensor& self, Tensor& mantissa, Tensor& exponent) {
  const char* op = "aten::frexp";
  TORCH_CHECK(mantissa.scalar_type() == self.scalar_type(), op, ": expected mantissa to have dtype ",
              self.scalar_type(), " but got ", mantissa.scalar_type());
  TORCH_CHECK(exponent.scalar_type() == at::kInt, op, ": expected exponent to have int dtype but got ",
              exponent.scalar_type());
  auto [m, e] = mlu_frexp(self);
  write_out(m, mantissa, op);
  write_out(e, exponent, op);
  return {mantissa, exponent};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nextafter", TORCH_FN(mlu_nextafter));
  m.impl("nextafter.out", TORCH_FN(mlu_nextafter_out));
  m.impl("nextafter_", TORCH_FN(mlu_nextafter_));
  m.impl("frexp.Tensor", TORCH_FN(mlu_frexp));
  m.impl("frexp.Tensor_out", TORCH_FN(mlu_frexp_out));
}

}  // namespace mlusim::bridge::ops
