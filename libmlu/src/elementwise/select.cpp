// where(cond, a, b) and clamp(x, lo, hi).
#include <string>

#include "common/error.h"
#include "elementwise/conversion.h"
#include "elementwise/emit.h"
#include "elementwise/op_checks.h"
#include "elementwise/streaming_kernel.h"
#include "mlusim/mlu/elementwise.h"

namespace mlusim::mlu {

Status where(Handle* h, const TensorDesc& cond, const void* cond_ptr, const TensorDesc& a, const void* a_ptr,
             const TensorDesc& b, const void* b_ptr, const TensorDesc& y, void* y_ptr) {
  const char* name = "where";
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"cond", &cond, cond_ptr}, {"a", &a, a_ptr}, {"b", &b, b_ptr}},
                                            {"y", &y, y_ptr}));
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(name, result_type(a, b), y));
  ew::Program p;
  const ew::Val r = ew::emit_where(p, ew::Val{p.input(1, cond.dtype()), cond.dtype(), cond.ndim() == 0},
                                   ew::Val{p.input(2, a.dtype()), a.dtype(), a.ndim() == 0},
                                   ew::Val{p.input(3, b.dtype()), b.dtype(), b.ndim() == 0});
  p.set_result(ew::convert(p, r.id, y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&cond, &a, &b}, {cond_ptr, a_ptr, b_ptr}, std::move(p));
}

Status clamp(Handle* h, const TensorDesc& x, const void* x_ptr, std::optional<double> lo, std::optional<double> hi,
             const TensorDesc& y, void* y_ptr) {
  const char* name = "clamp";
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, name, {{"x", &x, x_ptr}}, {"y", &y, y_ptr}));
  MLU_CHECK(x.dims() == y.dims(), Status::kBadParam,
            std::string(name) + ": x " + x.str() + " and y " + y.str() + " differ in shape");
  MLU_CHECK(lo.has_value() || hi.has_value(), Status::kBadParam, "clamp: at least one of min and max must be given");
  MLU_CHECK(x.dtype() != DType::kBool, Status::kNotSupported, "clamp: not supported for bool tensors");
  const DType compute = promote_types(x.dtype(), y.dtype());
  MLU_RETURN_IF_ERROR(ew::check_output_dtype(name, compute, y));
  // Integral bounds apply in int32 (an int8 tensor clamped to a bound beyond int8 is unchanged
  // by that bound).
  DType math = ew::vfu_dtype(compute);
  if (math == DType::kInt8) math = DType::kInt32;
  for (const std::optional<double>& bound : {lo, hi})
    MLU_CHECK(!bound || sim::dtype_is_float(math) ||
                  (ew::is_integer_valued(*bound) && *bound >= -2147483648.0 && *bound <= 2147483647.0),
              Status::kBadParam,
              std::string(name) + ": bound " + std::to_string(bound.value_or(0)) + " does not fit the integral dtype " +
                  std::string(sim::dtype_name(compute)));
  ew::Program p;
  ew::ValueId r = ew::load_as(p, 1, x.dtype(), math);
  if (lo) r = p.binary_scalar(sim::VecBinaryOp::kMax, r, *lo);
  if (hi) r = p.binary_scalar(sim::VecBinaryOp::kMin, r, *hi);
  p.set_result(ew::convert(p, ew::convert(p, r, compute), y.dtype()));
  return ew::run_elementwise(*h, name, y, y_ptr, {&x}, {x_ptr}, std::move(p));
}

}  // namespace mlusim::mlu
