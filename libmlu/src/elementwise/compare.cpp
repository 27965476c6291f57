// Comparisons and logical ops. The VFU writes 1/0 in the operand dtype; the result is then
// converted to y's dtype (bool normally).
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

struct CompareInfo {
  const char* name;
  VecBinaryOp vfu;
};

CompareInfo info(CompareOp op) {
  switch (op) {
    case CompareOp::kEq: return {"eq", VecBinaryOp::kEq};
    case CompareOp::kNe: return {"ne", VecBinaryOp::kNe};
    case CompareOp::kLt: return {"lt", VecBinaryOp::kLt};
    case CompareOp::kLe: return {"le", VecBinaryOp::kLe};
    case CompareOp::kGt: return {"gt", VecBinaryOp::kGt};
    case CompareOp::kGe: return {"ge", VecBinaryOp::kGe};
  }
  return {"compare", VecBinaryOp::kEq};
}

bool is_valid(CompareOp op) { return static_cast<std::uint8_t>(op) <= static_cast<std::uint8_t>(CompareOp::kGe); }

bool fits(double v, DType t) {
  switch (t) {
    case DType::kBool: return v == 0.0 || v == 1.0;
    case DType::kInt8: return v >= -128.0 && v <= 127.0;
    default: return v >= -2147483648.0 && v <= 2147483647.0;
  }
}

}  // namespace

Status compare(Handle* h, CompareOp op, const TensorDesc& a, const void* a_ptr, const TensorDesc& b, const void* b_ptr,
               const TensorDesc& y, void* y_ptr) {
  MLU_CHECK(is_valid(op), Status::kBadParam, "compare: unknown op " + std::to_string(static_cast<int>(op)));
  const CompareInfo c = info(op);
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, c.name, {{"a", &a, a_ptr}, {"b", &b, b_ptr}}, {"y", &y, y_ptr}));
  const DType math = ew::vfu_dtype(result_type(a, b));
  Program p;
  const ValueId r = p.binary(c.vfu, ew::load_as(p, 1, a.dtype(), math), ew::load_as(p, 2, b.dtype(), math));
  p.set_result(ew::convert(p, r, y.dtype()));
  return ew::run_elementwise(*h, c.name, y, y_ptr, {&a, &b}, {a_ptr, b_ptr}, std::move(p));
}

Status compare_scalar(Handle* h, CompareOp op, const TensorDesc& a, const void* a_ptr, double scalar, const TensorDesc& y,
                      void* y_ptr) {
  MLU_CHECK(is_valid(op), Status::kBadParam, "compare_scalar: unknown op " + std::to_string(static_cast<int>(op)));
  const CompareInfo c = info(op);
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, c.name, {{"a", &a, a_ptr}}, {"y", &y, y_ptr}));
  DType math = ew::vfu_dtype(a.dtype());
  if (!sim::dtype_is_float(math)) {
    if (!ew::is_integer_valued(scalar) || !fits(scalar, DType::kInt32))
      math = DType::kFloat32;  // torch: int tensor vs float scalar compares in float
    else if (!fits(scalar, math))
      math = DType::kInt32;
  }
  Program p;
  const ValueId r = p.binary_scalar(c.vfu, ew::load_as(p, 1, a.dtype(), math), scalar);
  p.set_result(ew::convert(p, r, y.dtype()));
  return ew::run_elementwise(*h, c.name, y, y_ptr, {&a}, {a_ptr}, std::move(p));
}

Status logical(Handle* h, LogicalOp op, const TensorDesc& a, const void* a_ptr, const TensorDesc& b, const void* b_ptr,
               const TensorDesc& y, void* y_ptr) {
  MLU_CHECK(static_cast<std::uint8_t>(op) <= static_cast<std::uint8_t>(LogicalOp::kXor), Status::kBadParam,
            "logical: unknown op " + std::to_string(static_cast<int>(op)));
  const char* name = op == LogicalOp::kAnd ? "logical_and" : op == LogicalOp::kOr ? "logical_or" : "logical_xor";
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"a", &a, a_ptr}, {"b", &b, b_ptr}}, {"y", &y, y_ptr}));
  const VecBinaryOp vfu = op == LogicalOp::kAnd ? VecBinaryOp::kAnd : op == LogicalOp::kOr ? VecBinaryOp::kOr : VecBinaryOp::kNe;
  Program p;
  const ValueId r = p.binary(vfu, ew::load_as(p, 1, a.dtype(), DType::kBool), ew::load_as(p, 2, b.dtype(), DType::kBool));
  p.set_result(ew::convert(p, r, y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&a, &b}, {a_ptr, b_ptr}, std::move(p));
}

Status logical_not(Handle* h, const TensorDesc& x, const void* x_ptr, const TensorDesc& y, void* y_ptr) {
  const char* name = "logical_not";
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"x", &x, x_ptr}}, {"y", &y, y_ptr}));
  MLU_CHECK(x.dims() == y.dims(), Status::kBadParam,
            std::string(name) + ": x " + x.str() + " and y " + y.str() + " differ in shape");
  Program p;
  const ValueId r = p.unary(sim::VecUnaryOp::kNot, ew::load_as(p, 1, x.dtype(), DType::kBool));
  p.set_result(ew::convert(p, r, y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&x}, {x_ptr}, std::move(p));
}

}  // namespace mlusim::mlu
