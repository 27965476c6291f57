#include "elementwise/conversion.h"

#include "elementwise/op_checks.h"

namespace mlusim::mlu::ew {
namespace {

using sim::VecBinaryOp;
using sim::VecUnaryOp;

// trunc(x) in fp32. |x| < 2^23 is rounded to an integer by adding and subtracting 2^23 (exact in
// fp32 round-to-nearest), then stepped down where rounding went up; |x| >= 2^23 already is an
// integer. NaN and inf pass through.
ValueId trunc_fp32(Program& p, ValueId x) {
  constexpr double kTwo23 = 8388608.0;
  const ValueId ax = p.unary(VecUnaryOp::kAbs, x);
  const ValueId up = p.binary_scalar(VecBinaryOp::kAdd, ax, kTwo23);
  const ValueId rounded = p.binary_scalar(VecBinaryOp::kSub, up, kTwo23);
  const ValueId went_up = p.binary(VecBinaryOp::kGt, rounded, ax);  // 1.0 / 0.0
  const ValueId floor_small = p.binary(VecBinaryOp::kSub, rounded, went_up);
  const ValueId is_big = p.cast(p.binary_scalar(VecBinaryOp::kGe, ax, kTwo23), DType::kBool);
  const ValueId magnitude = p.select(is_big, ax, floor_small);
  const ValueId negative = p.cast(p.binary_scalar(VecBinaryOp::kLt, x, 0.0), DType::kBool);
  return p.select(negative, p.unary(VecUnaryOp::kNeg, magnitude), magnitude);
}

// int32 -> int8 with two's-complement wrap (torch), from r = x - 256 * (x / 256) in (-256, 256).
ValueId wrap_to_int8(Program& p, ValueId x) {
  const ValueId q = p.binary_scalar(VecBinaryOp::kDiv, x, 256.0);
  ValueId r = p.binary(VecBinaryOp::kSub, x, p.binary_scalar(VecBinaryOp::kMul, q, 256.0));
  const ValueId high = p.binary_scalar(VecBinaryOp::kGt, r, 127.0);
  r = p.binary(VecBinaryOp::kSub, r, p.binary_scalar(VecBinaryOp::kMul, high, 256.0));
  const ValueId low = p.binary_scalar(VecBinaryOp::kLt, r, -128.0);
  r = p.binary(VecBinaryOp::kAdd, r, p.binary_scalar(VecBinaryOp::kMul, low, 256.0));
  return p.cast(r, DType::kInt8);
}

}  // namespace

DType vfu_dtype(DType t) {
  if (t == DType::kInt64) return DType::kInt32;
  if (t == DType::kFloat64) return DType::kFloat32;
  return t;
}

ValueId convert(Program& p, ValueId v, DType to) {
  const DType from = p.dtype(v);
  if (from == to || to == DType::kBool || from == DType::kBool) return p.cast(v, to);
  if (sim::dtype_is_float(from) && is_integral(to)) return p.cast(trunc_fp32(p, p.cast(v, DType::kFloat32)), to);
  if (to == DType::kInt8 && (from == DType::kInt32 || from == DType::kInt64))
    return wrap_to_int8(p, p.cast(v, DType::kInt32));
  return p.cast(v, to);  // widening, int -> float, float -> float, int64 -> int32 (range-checked)
}

ValueId load_as(Program& p, int operand, DType stored, DType compute) {
  return convert(p, p.input(operand, stored), compute);
}

}  // namespace mlusim::mlu::ew
