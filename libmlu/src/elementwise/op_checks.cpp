#include "elementwise/op_checks.h"

#include <cmath>
#include <string>

#include "common/error.h"
#include "elementwise/iter_space.h"
#include "elementwise/streaming_kernel.h"
#include "mlusim/mlu/elementwise.h"

namespace mlusim::mlu::ew {

Status check_elementwise(Handle* h, const char* op, const std::vector<Arg>& inputs, const Arg& y, bool bytes_only) {
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  std::vector<NamedDesc> named;
  for (const Arg& a : inputs) {
    MLU_RETURN_IF_ERROR(check_desc(a.desc, op, a.name));
    MLU_RETURN_IF_ERROR(check_ptr(a.ptr, *a.desc, op, a.name));
    named.push_back({a.name, a.desc});
  }
  MLU_RETURN_IF_ERROR(check_desc(y.desc, op, y.name));
  MLU_RETURN_IF_ERROR(check_ptr(y.ptr, *y.desc, op, y.name));
  MLU_RETURN_IF_ERROR(check_output_writable(op, y.name, *y.desc));
  std::vector<Arg> all = inputs;
  all.push_back(y);
  for (const Arg& a : all)
    MLU_CHECK(bytes_only || a.desc->dtype() != DType::kFloat64, Status::kNotSupported,
              std::string(op) + ": " + a.name + " is fp64, which the VFU cannot compute on (cast it first)");
  if (!bytes_only)
    for (const Arg& a : all) MLU_RETURN_IF_ERROR(check_computes(a.desc->dtype(), op, a.name));
  if (inputs.empty()) return Status::kSuccess;
  std::vector<std::int64_t> shape;
  MLU_RETURN_IF_ERROR(broadcast_shape(op, named, &shape));
  MLU_CHECK(shape == y.desc->dims(), Status::kBadParam,
            std::string(op) + ": " + y.name + " " + y.desc->str() + " does not have the inputs' broadcast shape");
  return Status::kSuccess;
}

Status check_output_dtype(const char* op, DType computed, const TensorDesc& y) {
  MLU_CHECK(can_cast(computed, y.dtype()), Status::kBadParam,
            std::string(op) + ": result type " + std::string(sim::dtype_name(computed)) +
                " can't be cast to the output dtype " + std::string(sim::dtype_name(y.dtype())));
  return check_computes(y.dtype(), op, "the output");
}

bool is_integral(DType t) { return t == DType::kInt8 || t == DType::kInt32 || t == DType::kInt64; }

bool is_integer_valued(double v) { return std::isfinite(v) && std::trunc(v) == v; }

}  // namespace mlusim::mlu::ew
