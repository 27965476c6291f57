// Comparisons and logical ops. The VFU writes 1/0 in the operand dtype (emit.h); the result is
// then converted to y's dtype (bool normally).
#include <string>

#include "common/error.h"
#include "elementwise/conversion.h"
#include "elementwise/emit.h"
#include "elementwise/op_checks.h"
#include "elementwise/streaming_kernel.h"
#include "mlusim/mlu/elementwise.h"

namespace mlusim::mlu {
namespace {

ew::Val input(ew::Program& p, int operand, const TensorDesc& d) {
  return ew::Val{p.input(operand, d.dtype()), d.dtype(), d.ndim() == 0};
}

}  // namespace

Status compare(Handle* h, CompareOp op, const TensorDesc& a, const void* a_ptr, const TensorDesc& b, const void* b_ptr,
               const TensorDesc& y, void* y_ptr) {
  MLU_CHECK(ew::is_valid(op), Status::kBadParam, "compare: unknown op " + std::to_string(static_cast<int>(op)));
  const char* name = ew::compare_name(op);
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"a", &a, a_ptr}, {"b", &b, b_ptr}}, {"y", &y, y_ptr}));
  ew::Program p;
  const ew::ValueId r = ew::emit_compare(p, op, input(p, 1, a), input(p, 2, b));
  p.set_result(ew::convert(p, r, y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&a, &b}, {a_ptr, b_ptr}, std::move(p));
}

Status compare_scalar(Handle* h, CompareOp op, const TensorDesc& a, const void* a_ptr, double scalar, const TensorDesc& y,
                      void* y_ptr) {
  MLU_CHECK(ew::is_valid(op), Status::kBadParam, "compare_scalar: unknown op " + std::to_string(static_cast<int>(op)));
  const char* name = ew::compare_name(op);
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"a", &a, a_ptr}}, {"y", &y, y_ptr}));
  ew::Program p;
  const ew::ValueId r = ew::emit_compare_scalar(p, op, input(p, 1, a), scalar);
  p.set_result(ew::convert(p, r, y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&a}, {a_ptr}, std::move(p));
}

Status logical(Handle* h, LogicalOp op, const TensorDesc& a, const void* a_ptr, const TensorDesc& b, const void* b_ptr,
               const TensorDesc& y, void* y_ptr) {
  MLU_CHECK(ew::is_valid(op), Status::kBadParam, "logical: unknown op " + std::to_string(static_cast<int>(op)));
  const char* name = op == LogicalOp::kAnd ? "logical_and" : op == LogicalOp::kOr ? "logical_or" : "logical_xor";
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"a", &a, a_ptr}, {"b", &b, b_ptr}}, {"y", &y, y_ptr}));
  ew::Program p;
  const ew::ValueId r = ew::emit_logical(p, op, input(p, 1, a), input(p, 2, b));
  p.set_result(ew::convert(p, r, y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&a, &b}, {a_ptr, b_ptr}, std::move(p));
}

Status logical_not(Handle* h, const TensorDesc& x, const void* x_ptr, const TensorDesc& y, void* y_ptr) {
  const char* name = "logical_not";
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"x", &x, x_ptr}}, {"y", &y, y_ptr}));
  MLU_CHECK(x.dims() == y.dims(), Status::kBadParam,
            std::string(name) + ": x " + x.str() + " and y " + y.str() + " differ in shape");
  ew::Program p;
  const ew::ValueId r = ew::emit_logical_not(p, input(p, 1, x));
  p.set_result(ew::convert(p, r, y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&x}, {x_ptr}, std::move(p));
}

}  // namespace mlusim::mlu
