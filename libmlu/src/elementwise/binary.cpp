// Binary arithmetic (tensor op tensor, tensor op scalar) with broadcasting and type promotion.
//
// Compute dtype: torch's result type (fp32 at least for true division). The VFU then works in
// the "math" dtype: int64 -> int32 (narrowed with the range check), bool -> int8 (add/mul/max/min
// on 0/1 then != 0, which is torch's or/and). fp16 tensor-tensor ops run on the VFU in fp16
// (it computes in fp32 and rounds once, as torch's CPU kernels do); ops with a scalar or alpha
// run in fp32 because torch applies the scalar in fp32 ("opmath"), not rounded to fp16 first.
#include <cmath>
#include <string>

#include "common/error.h"
#include "elementwise/conversion.h"
#include "elementwise/op_checks.h"
#include "elementwise/streaming_kernel.h"
#include "mlusim/mlu/elementwise.h"

namespace mlusim::mlu {
namespace {

using sim::VecBinaryOp;

const char* op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return "add";
    case BinaryOp::kSub: return "sub";
    case BinaryOp::kMul: return "mul";
    case BinaryOp::kDiv: return "div";
    case BinaryOp::kPow: return "pow";
    case BinaryOp::kMaximum: return "maximum";
    case BinaryOp::kMinimum: return "minimum";
  }
  return "binary";
}

VecBinaryOp vfu_op(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return VecBinaryOp::kAdd;
    case BinaryOp::kSub: return VecBinaryOp::kSub;
    case BinaryOp::kMul: return VecBinaryOp::kMul;
    case BinaryOp::kDiv: return VecBinaryOp::kDiv;
    case BinaryOp::kPow: return VecBinaryOp::kPow;
    case BinaryOp::kMaximum: return VecBinaryOp::kMax;
    case BinaryOp::kMinimum: return VecBinaryOp::kMin;
  }
  return VecBinaryOp::kAdd;
}

bool is_valid_op(BinaryOp op) { return static_cast<std::uint8_t>(op) <= static_cast<std::uint8_t>(BinaryOp::kMinimum); }

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
  MLU_CHECK(ew::is_integer_valued(v), Status::kBadParam,
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
  if (compute == DType::kFloat16 && needs_fp32_opmath) return DType::kFloat32;
  return ew::vfu_dtype(compute);
}

}  // namespace

Status binary(Handle* h, BinaryOp op, const TensorDesc& a, const void* a_ptr, const TensorDesc& b, const void* b_ptr,
              const TensorDesc& y, void* y_ptr, double alpha) {
  const char* name = is_valid_op(op) ? op_name(op) : "binary";
  MLU_CHECK(is_valid_op(op), Status::kBadParam, "binary: unknown op " + std::to_string(static_cast<int>(op)));
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"a", &a, a_ptr}, {"b", &b, b_ptr}}, {"y", &y, y_ptr}));
  const DType compute = compute_dtype(op, result_type(a, b));
  MLU_RETURN_IF_ERROR(check_bool_support(name, op, compute));
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(name, compute, y));
  const bool scaled = (op == BinaryOp::kAdd || op == BinaryOp::kSub) && alpha != 1.0;
  const DType math = math_dtype(compute, scaled);
  if (scaled) MLU_RETURN_IF_ERROR(check_scalar(name, "alpha", alpha, compute == DType::kBool ? DType::kBool : math));

  ew::Program p;
  const ew::ValueId va = ew::load_as(p, 1, a.dtype(), math);
  ew::ValueId vb = ew::load_as(p, 2, b.dtype(), math);
  if (scaled) vb = p.binary_scalar(VecBinaryOp::kMul, vb, alpha);
  const ew::ValueId r = p.binary(vfu_op(op), va, vb);
  p.set_result(ew::convert(p, ew::convert(p, r, compute), y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&a, &b}, {a_ptr, b_ptr}, std::move(p));
}

Status binary_scalar(Handle* h, BinaryOp op, const TensorDesc& a, const void* a_ptr, double scalar, const TensorDesc& y,
                     void* y_ptr, bool scalar_first) {
  const char* name = is_valid_op(op) ? op_name(op) : "binary_scalar";
  MLU_CHECK(is_valid_op(op), Status::kBadParam, "binary_scalar: unknown op " + std::to_string(static_cast<int>(op)));
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"a", &a, a_ptr}}, {"y", &y, y_ptr}));
  MLU_CHECK(!std::isnan(scalar) || sim::dtype_is_float(promote_types(a.dtype(), y.dtype())), Status::kBadParam,
            std::string(name) + ": scalar is NaN but the op computes in an integral dtype");
  const DType compute = compute_dtype(op, promote_types(a.dtype(), y.dtype()));
  MLU_RETURN_IF_ERROR(check_bool_support(name, op, compute));
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(name, compute, y));
  // int8 math with a scalar beyond int8 computes in int32 and wraps on the way back (torch wraps).
  DType math = math_dtype(compute, true);
  if (math == DType::kInt8 && compute != DType::kBool && (scalar < -128.0 || scalar > 127.0)) math = DType::kInt32;
  MLU_RETURN_IF_ERROR(check_scalar(name, "scalar", scalar, compute == DType::kBool ? DType::kBool : math));
  MLU_CHECK(!(op == BinaryOp::kPow && !sim::dtype_is_float(compute) && !scalar_first && scalar < 0), Status::kBadParam,
            std::string(name) + ": integers to negative integer powers are not allowed");

  ew::Program p;
  const ew::ValueId va = ew::load_as(p, 1, a.dtype(), math);
  // scalar op a: the scalar as a constant tile, so the VFU applies the same binary op.
  const ew::ValueId r = scalar_first ? p.binary(vfu_op(op), p.constant(math, scalar), va)
                                     : p.binary_scalar(vfu_op(op), va, scalar);
  p.set_result(ew::convert(p, ew::convert(p, r, compute), y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&a}, {a_ptr}, std::move(p));
}

}  // namespace mlusim::mlu
