// Unary math: the emitter's recipe (emit.h) between the load and the conversion to y's dtype.
#include <string>

#include "common/error.h"
#include "elementwise/conversion.h"
#include "elementwise/emit.h"
#include "elementwise/op_checks.h"
#include "elementwise/streaming_kernel.h"
#include "mlusim/mlu/elementwise.h"

namespace mlusim::mlu {

Status unary(Handle* h, UnaryOp op, const TensorDesc& x, const void* x_ptr, const TensorDesc& y, void* y_ptr) {
  MLU_CHECK(ew::is_valid(op), Status::kBadParam, "unary: unknown op " + std::to_string(static_cast<int>(op)));
  const char* name = ew::unary_name(op);
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"x", &x, x_ptr}}, {"y", &y, y_ptr}));
  MLU_CHECK(x.dims() == y.dims(), Status::kBadParam,
            std::string(name) + ": x " + x.str() + " and y " + y.str() + " differ in shape");
  ew::Program p;
  ew::Val r;
  MLU_RETURN_IF_ERROR(ew::emit_unary(p, op, ew::Val{p.input(1, x.dtype()), x.dtype(), x.ndim() == 0}, &r));
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(name, r.dtype, y));
  p.set_result(ew::convert(p, r.id, y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&x}, {x_ptr}, std::move(p));
}

}  // namespace mlusim::mlu
