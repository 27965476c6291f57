// The elementwise ops' program builders (emit.h).
//
// Binary arithmetic: the VFU works in the "math" dtype: int64 -> int32 (narrowed with the range
// check), bool -> int8 (add/mul/max/min on 0/1 then != 0, which is torch's or/and). fp16
// tensor-tensor ops run on the VFU in fp16 (it computes in fp32 and rounds once, as torch's CPU
// kernels do); ops with a scalar or alpha run in fp32 because torch applies the scalar in fp32
// ("opmath"), not rounded to fp16 first.
// Unary math: ops with a VFU intrinsic run as one step (fp16 directly: the VFU computes in fp32
// and rounds once, as torch does); gelu's tanh approximation is composed from VFU steps in fp32
// with torch's operation order.
// Comparisons and logical ops: the VFU writes 1/0 in the operand dtype.
// Bitwise ops: one VFU bit op in the result dtype's lanes (bool directly, int64 as int32).
#include "elementwise/emit.h"

#include <cmath>
#include <string>

#include "common/error.h"
#include "elementwise/conversion.h"
#include "elementwise/op_checks.h"

namespace mlusim::mlu::ew {
namespace {

using sim::VecBinaryOp;
using sim::VecUnaryOp;

VecBinaryOp vfu_op(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return VecBinaryOp::kAdd;
    case BinaryOp::kSub:
      return VecBinaryOp::kSub;
    case BinaryOp::kMul:
      return VecBinaryOp::kMul;
    case BinaryOp::kDiv:
      return VecBinaryOp::kDiv;
    case BinaryOp::kPow:
      return VecBinaryOp::kPow;
    case BinaryOp::kMaximum:
      return VecBinaryOp::kMax;
    case BinaryOp::kMinimum:
      return VecBinaryOp::kMin;
  }
  return VecBinaryOp::kAdd;
}

// The dtype an op computes in given torch's result type.
DType compute_dtype(BinaryOp op, DType result) {
  if (op == BinaryOp::kDiv && !sim::dtype_is_float(result)) return DType::kFloat32;
  return result;
}

Status check_bool_support(const char* name, BinaryOp op, DType compute) {
  if (compute != DType::kBool) return Status::kSuccess;
  MLU_CHECK(op != BinaryOp::kSub, Status::kBadParam,
            std::string(name) + ": subtraction with bool tensors is not supported (use logical_xor)");
  MLU_CHECK(op != BinaryOp::kPow, Status::kNotSupported, std::string(name) + ": pow is not implemented for bool");
  return Status::kSuccess;
}

// Integer scalars must be whole and fit the dtype the VFU applies them in.
Status check_scalar(const char* name, const char* what, double v, DType math) {
  if (sim::dtype_is_float(math)) return Status::kSuccess;
  MLU_CHECK(is_integer_valued(v), Status::kBadParam,
            std::string(name) + ": " + what + " " + std::to_string(v) + " is not an integer but the op computes in " +
                std::string(sim::dtype_name(math)));
  const double lo = math == DType::kInt8 ? -128.0 : math == DType::kBool ? 0.0 : -2147483648.0;
  const double hi = math == DType::kInt8 ? 127.0 : math == DType::kBool ? 1.0 : 2147483647.0;
  MLU_CHECK(v >= lo && v <= hi, Status::kBadParam,
            std::string(name) + ": " + what + " " + std::to_string(v) + " is out of range for " +
                std::string(sim::dtype_name(math)));
  return Status::kSuccess;
}

// Where the VFU computes a result of dtype `compute`.
DType math_dtype(DType compute, bool needs_fp32_opmath) {
  if (compute == DType::kBool) return DType::kInt8;
  if ((compute == DType::kFloat16 || compute == DType::kBFloat16) && needs_fp32_opmath) return DType::kFloat32;
  return vfu_dtype(compute);
}

struct UnaryInfo {
  const char* name;
  VecUnaryOp vfu;
  bool floating;  // computes in a floating dtype (integral inputs promote to fp32)
};

UnaryInfo info(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg:
      return {"neg", VecUnaryOp::kNeg, false};
    case UnaryOp::kAbs:
      return {"abs", VecUnaryOp::kAbs, false};
    case UnaryOp::kSquare:
      return {"square", VecUnaryOp::kSquare, false};
    case UnaryOp::kRelu:
      return {"relu", VecUnaryOp::kRelu, false};
    case UnaryOp::kExp:
      return {"exp", VecUnaryOp::kExp, true};
    case UnaryOp::kLog:
      return {"log", VecUnaryOp::kLog, true};
    case UnaryOp::kSqrt:
      return {"sqrt", VecUnaryOp::kSqrt, true};
    case UnaryOp::kRsqrt:
      return {"rsqrt", VecUnaryOp::kRsqrt, true};
    case UnaryOp::kSigmoid:
      return {"sigmoid", VecUnaryOp::kSigmoid, true};
    case UnaryOp::kTanh:
      return {"tanh", VecUnaryOp::kTanh, true};
    case UnaryOp::kSilu:
      return {"silu", VecUnaryOp::kSilu, true};
    case UnaryOp::kReciprocal:
      return {"reciprocal", VecUnaryOp::kRecip, true};
    case UnaryOp::kGelu:
      return {"gelu", VecUnaryOp::kGelu, true};
    case UnaryOp::kGeluTanh:
      return {"gelu_tanh", VecUnaryOp::kGelu, true};
    case UnaryOp::kSin:
      return {"sin", VecUnaryOp::kSin, true};
    case UnaryOp::kCos:
      return {"cos", VecUnaryOp::kCos, true};
  }
  return {"unary", VecUnaryOp::kCopy, false};
}

// 0.5 * x * (1 + tanh(kBeta * (x + kKappa * x^3))), kBeta = sqrt(2/pi), in torch's order.
ValueId gelu_tanh(Program& p, ValueId x) {
  const double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5, kKappa = 0.044715;
  const ValueId x_cube = p.binary(VecBinaryOp::kMul, p.binary(VecBinaryOp::kMul, x, x), x);
  const ValueId inner = p.binary_scalar(
      VecBinaryOp::kMul, p.binary(VecBinaryOp::kAdd, x, p.binary_scalar(VecBinaryOp::kMul, x_cube, kKappa)), kBeta);
  const ValueId one_plus = p.binary_scalar(VecBinaryOp::kAdd, p.unary(VecUnaryOp::kTanh, inner), 1.0);
  return p.binary(VecBinaryOp::kMul, p.binary_scalar(VecBinaryOp::kMul, x, 0.5), one_plus);
}

VecBinaryOp vfu_op(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return VecBinaryOp::kEq;
    case CompareOp::kNe:
      return VecBinaryOp::kNe;
    case CompareOp::kLt:
      return VecBinaryOp::kLt;
    case CompareOp::kLe:
      return VecBinaryOp::kLe;
    case CompareOp::kGt:
      return VecBinaryOp::kGt;
    case CompareOp::kGe:
      return VecBinaryOp::kGe;
  }
  return VecBinaryOp::kEq;
}

bool fits(double v, DType t) {
  switch (t) {
    case DType::kBool:
      return v == 0.0 || v == 1.0;
    case DType::kInt8:
      return v >= -128.0 && v <= 127.0;
    default:
      return v >= -2147483648.0 && v <= 2147483647.0;
  }
}

}  // namespace

DType result_type(const Val& a, const Val& b) { return result_type(a.dtype, a.zero_dim, b.dtype, b.zero_dim); }

ValueId as(Program& p, const Val& v, DType to) {
  if (v.constant) return p.constant(to, v.value);
  return convert(p, v.id, to);
}

const char* binary_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "add";
    case BinaryOp::kSub:
      return "sub";
    case BinaryOp::kMul:
      return "mul";
    case BinaryOp::kDiv:
      return "div";
    case BinaryOp::kPow:
      return "pow";
    case BinaryOp::kMaximum:
      return "maximum";
    case BinaryOp::kMinimum:
      return "minimum";
  }
  return "binary";
}

const char* unary_name(UnaryOp op) { return info(op).name; }

const char* compare_name(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return "eq";
    case CompareOp::kNe:
      return "ne";
    case CompareOp::kLt:
      return "lt";
    case CompareOp::kLe:
      return "le";
    case CompareOp::kGt:
      return "gt";
    case CompareOp::kGe:
      return "ge";
  }
  return "compare";
}

bool is_valid(BinaryOp op) { return static_cast<std::uint8_t>(op) <= static_cast<std::uint8_t>(BinaryOp::kMinimum); }
bool is_valid(UnaryOp op) { return static_cast<std::uint8_t>(op) <= static_cast<std::uint8_t>(UnaryOp::kCos); }
bool is_valid(CompareOp op) { return static_cast<std::uint8_t>(op) <= static_cast<std::uint8_t>(CompareOp::kGe); }
bool is_valid(LogicalOp op) { return static_cast<std::uint8_t>(op) <= static_cast<std::uint8_t>(LogicalOp::kXor); }
bool is_valid(BitwiseOp op) { return static_cast<std::uint8_t>(op) <= static_cast<std::uint8_t>(BitwiseOp::kRightShift); }

const char* bitwise_name(BitwiseOp op) {
  switch (op) {
    case BitwiseOp::kAnd:
      return "bitwise_and";
    case BitwiseOp::kOr:
      return "bitwise_or";
    case BitwiseOp::kXor:
      return "bitwise_xor";
    case BitwiseOp::kLeftShift:
      return "bitwise_left_shift";
    case BitwiseOp::kRightShift:
      return "bitwise_right_shift";
  }
  return "bitwise";
}

Status emit_binary(Program& p, const char* name, BinaryOp op, const Val& a, const Val& b, double alpha, Val* out) {
  const DType compute = compute_dtype(op, result_type(a, b));
  MLU_RETURN_IF_ERROR(check_bool_support(name, op, compute));
  const bool scaled = (op == BinaryOp::kAdd || op == BinaryOp::kSub) && alpha != 1.0;
  const DType math = math_dtype(compute, scaled);
  if (scaled) MLU_RETURN_IF_ERROR(check_scalar(name, "alpha", alpha, compute == DType::kBool ? DType::kBool : math));
  const ValueId va = as(p, a, math);
  ValueId vb = as(p, b, math);
  if (scaled) vb = p.binary_scalar(VecBinaryOp::kMul, vb, alpha);
  const ValueId r = p.binary(vfu_op(op), va, vb);
  *out = Val{convert(p, r, compute), compute, a.zero_dim && b.zero_dim};
  return Status::kSuccess;
}

Status emit_binary_scalar(Program& p, const char* name, BinaryOp op, const Val& a, double scalar, DType result,
                          bool scalar_first, Val* out) {
  MLU_CHECK(!std::isnan(scalar) || sim::dtype_is_float(result), Status::kBadParam,
            std::string(name) + ": scalar is NaN but the op computes in an integral dtype");
  const DType compute = compute_dtype(op, result);
  MLU_RETURN_IF_ERROR(check_bool_support(name, op, compute));
  // int8 math with a scalar beyond int8 computes in int32 and wraps on the way back (torch wraps).
  DType math = math_dtype(compute, true);
  if (math == DType::kInt8 && compute != DType::kBool && (scalar < -128.0 || scalar > 127.0)) math = DType::kInt32;
  MLU_RETURN_IF_ERROR(check_scalar(name, "scalar", scalar, compute == DType::kBool ? DType::kBool : math));
  MLU_CHECK(!(op == BinaryOp::kPow && !sim::dtype_is_float(compute) && !scalar_first && scalar < 0), Status::kBadParam,
            std::string(name) + ": integers to negative integer powers are not allowed");
  const ValueId va = as(p, a, math);
  // scalar op a: the scalar as a constant tile, so the VFU applies the same binary op.
  const ValueId r =
      scalar_first ? p.binary(vfu_op(op), p.constant(math, scalar), va) : p.binary_scalar(vfu_op(op), va, scalar);
  *out = Val{convert(p, r, compute), compute, a.zero_dim};
  return Status::kSuccess;
}

Status emit_unary(Program& p, UnaryOp op, const Val& x, Val* out) {
  const UnaryInfo u = info(op);
  MLU_CHECK(u.floating || x.dtype != DType::kBool, Status::kNotSupported,
            std::string(u.name) + ": not supported for bool tensors");
  const DType compute = u.floating && !sim::dtype_is_float(x.dtype) ? DType::kFloat32 : x.dtype;
  const ValueId r =
      op == UnaryOp::kGeluTanh ? gelu_tanh(p, as(p, x, DType::kFloat32)) : p.unary(u.vfu, as(p, x, vfu_dtype(compute)));
  *out = Val{convert(p, r, compute), compute, x.zero_dim};
  return Status::kSuccess;
}

ValueId emit_compare(Program& p, CompareOp op, const Val& a, const Val& b) {
  const DType math = vfu_dtype(result_type(a, b));
  return p.binary(vfu_op(op), as(p, a, math), as(p, b, math));
}

ValueId emit_compare_scalar(Program& p, CompareOp op, const Val& a, double scalar) {
  DType math = vfu_dtype(a.dtype);
  if (!sim::dtype_is_float(math)) {
    if (!is_integer_valued(scalar) || !fits(scalar, DType::kInt32))
      math = DType::kFloat32;  // torch: int tensor vs float scalar compares in float
    else if (!fits(scalar, math))
      math = DType::kInt32;
  }
  return p.binary_scalar(vfu_op(op), as(p, a, math), scalar);
}

Val emit_where(Program& p, const Val& cond, const Val& a, const Val& b) {
  const DType compute = result_type(a, b);
  const DType math = vfu_dtype(compute);
  const ValueId c = as(p, cond, DType::kBool);
  const ValueId r = p.select(c, as(p, a, math), as(p, b, math));
  return Val{convert(p, r, compute), compute, cond.zero_dim && a.zero_dim && b.zero_dim};
}

ValueId emit_logical(Program& p, LogicalOp op, const Val& a, const Val& b) {
  const VecBinaryOp vfu = op == LogicalOp::kAnd  ? VecBinaryOp::kAnd
                          : op == LogicalOp::kOr ? VecBinaryOp::kOr
                                                 : VecBinaryOp::kNe;
  return p.binary(vfu, as(p, a, DType::kBool), as(p, b, DType::kBool));
}

ValueId emit_logical_not(Program& p, const Val& x) { return p.unary(sim::VecUnaryOp::kNot, as(p, x, DType::kBool)); }

namespace {

VecBinaryOp vfu_op(BitwiseOp op) {
  switch (op) {
    case BitwiseOp::kAnd:
      return VecBinaryOp::kBitAnd;
    case BitwiseOp::kOr:
      return VecBinaryOp::kBitOr;
    case BitwiseOp::kXor:
      return VecBinaryOp::kBitXor;
    case BitwiseOp::kLeftShift:
      return VecBinaryOp::kShl;
    case BitwiseOp::kRightShift:
      return VecBinaryOp::kShr;
  }
  return VecBinaryOp::kBitAnd;
}

// Bitwise ops are defined on integral dtypes, and/or/xor on bool too (torch's kernels' dispatch).
Status check_bitwise_dtype(const char* name, BitwiseOp op, DType compute) {
  const bool shift = op == BitwiseOp::kLeftShift || op == BitwiseOp::kRightShift;
  MLU_CHECK(!sim::dtype_is_float(compute) && !(shift && compute == DType::kBool),
            Status::kBadParam,
            std::string(name) + ": not defined for " + std::string(sim::dtype_name(compute)) +
                (shift ? " (integral operands only)" : " (bool or integral operands only)"));
  return Status::kSuccess;
}

}  // namespace

Status emit_bitwise(Program& p, const char* name, BitwiseOp op, const Val& a, const Val& b, Val* out) {
  const DType compute = result_type(a, b);
  MLU_RETURN_IF_ERROR(check_bitwise_dtype(name, op, compute));
  const DType math = vfu_dtype(compute);
  const ValueId r = p.binary(vfu_op(op), as(p, a, math), as(p, b, math));
  *out = Val{convert(p, r, compute), compute, a.zero_dim && b.zero_dim};
  return Status::kSuccess;
}

Status emit_bitwise_scalar(Program& p, const char* name, BitwiseOp op, const Val& a, std::int64_t scalar,
                           DType result, bool scalar_first, Val* out) {
  MLU_RETURN_IF_ERROR(check_bitwise_dtype(name, op, result));
  const DType math = vfu_dtype(result);
  const auto v = static_cast<double>(scalar);
  MLU_RETURN_IF_ERROR(check_scalar(name, "scalar", v, math));
  const ValueId va = as(p, a, math);
  const ValueId r = scalar_first ? p.binary(vfu_op(op), p.constant(math, v), va) : p.binary_scalar(vfu_op(op), va, v);
  *out = Val{convert(p, r, result), result, a.zero_dim};
  return Status::kSuccess;
}

}  // namespace mlusim::mlu::ew
