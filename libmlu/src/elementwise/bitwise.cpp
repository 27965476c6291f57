// Bitwise and/or/xor and shifts (tensor op tensor, tensor op scalar) with broadcasting and type
// promotion: one VFU bit op per tile in the result dtype's lanes (emit.h); int64 as int32.
#include <string>

#include "common/error.h"
#include "elementwise/conversion.h"
#include "elementwise/emit.h"
#include "elementwise/op_checks.h"
#include "elementwise/streaming_kernel.h"
#include "mlusim/mlu/elementwise.h"

namespace mlusim::mlu {

Status bitwise(Handle* h, BitwiseOp op, const TensorDesc& a, const void* a_ptr, const TensorDesc& b, const void* b_ptr,
               const TensorDesc& y, void* y_ptr) {
  MLU_CHECK(ew::is_valid(op), Status::kBadParam, "bitwise: unknown op " + std::to_string(static_cast<int>(op)));
  const char* name = ew::bitwise_name(op);
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"a", &a, a_ptr}, {"b", &b, b_ptr}}, {"y", &y, y_ptr}));
  ew::Program p;
  const ew::Val va{p.input(1, a.dtype()), a.dtype(), a.ndim() == 0};
  const ew::Val vb{p.input(2, b.dtype()), b.dtype(), b.ndim() == 0};
  ew::Val r;
  MLU_RETURN_IF_ERROR(ew::emit_bitwise(p, name, op, va, vb, &r));
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(name, r.dtype, y));
  p.set_result(ew::convert(p, r.id, y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&a, &b}, {a_ptr, b_ptr}, std::move(p));
}

Status bitwise_scalar(Handle* h, BitwiseOp op, const TensorDesc& a, const void* a_ptr, std::int64_t scalar,
                      const TensorDesc& y, void* y_ptr, bool scalar_first) {
  MLU_CHECK(ew::is_valid(op), Status::kBadParam, "bitwise_scalar: unknown op " + std::to_string(static_cast<int>(op)));
  const char* name = ew::bitwise_name(op);
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"a", &a, a_ptr}}, {"y", &y, y_ptr}));
  ew::Program p;
  const ew::Val va{p.input(1, a.dtype()), a.dtype(), a.ndim() == 0};
  ew::Val r;
  MLU_RETURN_IF_ERROR(
      ew::emit_bitwise_scalar(p, name, op, va, scalar, promote_types(a.dtype(), y.dtype()), scalar_first, &r));
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(name, r.dtype, y));
  p.set_result(ew::convert(p, r.id, y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&a}, {a_ptr}, std::move(p));
}

}  // namespace mlusim::mlu
