// Binary arithmetic (tensor op tensor, tensor op scalar) with broadcasting and type promotion.
//
// Compute dtype: torch's result type (fp32 at least for true division); the VFU recipe is the
// emitter's (emit.h): int64 narrowed to int32, bool as int8, fp16 with a scalar or alpha in fp32.
#include <string>

#include "common/error.h"
#include "elementwise/conversion.h"
#include "elementwise/emit.h"
#include "elementwise/op_checks.h"
#include "elementwise/streaming_kernel.h"
#include "mlusim/mlu/elementwise.h"

namespace mlusim::mlu {

Status binary(Handle* h, BinaryOp op, const TensorDesc& a, const void* a_ptr, const TensorDesc& b, const void* b_ptr,
              const TensorDesc& y, void* y_ptr, double alpha) {
  const char* name = ew::binary_name(op);
  MLU_CHECK(ew::is_valid(op), Status::kBadParam, "binary: unknown op " + std::to_string(static_cast<int>(op)));
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"a", &a, a_ptr}, {"b", &b, b_ptr}}, {"y", &y, y_ptr}));
  ew::Program p;
  const ew::Val va{p.input(1, a.dtype()), a.dtype(), a.ndim() == 0};
  const ew::Val vb{p.input(2, b.dtype()), b.dtype(), b.ndim() == 0};
  ew::Val r;
  MLU_RETURN_IF_ERROR(ew::emit_binary(p, name, op, va, vb, alpha, &r));
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(name, r.dtype, y));
  p.set_result(ew::convert(p, r.id, y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&a, &b}, {a_ptr, b_ptr}, std::move(p));
}

Status binary_scalar(Handle* h, BinaryOp op, const TensorDesc& a, const void* a_ptr, double scalar, const TensorDesc& y,
                     void* y_ptr, bool scalar_first) {
  const char* name = ew::is_valid(op) ? ew::binary_name(op) : "binary_scalar";
  MLU_CHECK(ew::is_valid(op), Status::kBadParam, "binary_scalar: unknown op " + std::to_string(static_cast<int>(op)));
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"a", &a, a_ptr}}, {"y", &y, y_ptr}));
  ew::Program p;
  const ew::Val va{p.input(1, a.dtype()), a.dtype(), a.ndim() == 0};
  ew::Val r;
  MLU_RETURN_IF_ERROR(
      ew::emit_binary_scalar(p, name, op, va, scalar, promote_types(a.dtype(), y.dtype()), scalar_first, &r));
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(name, r.dtype, y));
  p.set_result(ew::convert(p, r.id, y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&a}, {a_ptr}, std::move(p));
}

}  // namespace mlusim::mlu
