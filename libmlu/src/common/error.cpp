#include "common/error.h"

#include <algorithm>

#include <mlusim_ext.h>

namespace mlusim::mlu {

Status check_handle(const Handle* h, const char* op) {
  MLU_CHECK(h != nullptr, Status::kNotInitialized, std::string(op) + ": handle is null");
  return Status::kSuccess;
}

Status check_desc(const TensorDesc* d, const char* op, const char* name) {
  MLU_CHECK(d != nullptr, Status::kBadParam, std::string(op) + ": descriptor " + name + " is null");
  MLU_CHECK(d->valid(), Status::kBadParam, std::string(op) + ": descriptor " + name + " was never set");
  return Status::kSuccess;
}

Status check_ptr(const void* p, const TensorDesc& d, const char* op, const char* name) {
  MLU_CHECK(p != nullptr || d.numel() == 0, Status::kBadParam,
            std::string(op) + ": pointer " + name + " is null for a non-empty tensor " + d.str());
  return Status::kSuccess;
}

Status check_same_shape(const TensorDesc& a, const TensorDesc& b, const char* op, const char* an, const char* bn) {
  MLU_CHECK(a.dims() == b.dims(), Status::kBadParam,
            std::string(op) + ": " + an + " " + a.str() + " and " + bn + " " + b.str() + " differ in shape");
  return Status::kSuccess;
}

Status check_computes(DType t, const char* op, const char* name) {
  if (t != DType::kBFloat16) return Status::kSuccess;
  const sim::HardwareConfig cfg = driver::loaded_config();
  MLU_CHECK(cfg.computes(t), Status::kNotSupported,
            std::string(op) + ": " + name + " is bf16, which config '" + cfg.name +
                "' does not compute (vfu.bf16 is false: this chip has no bf16 arithmetic; the MLU500 class, "
                "preset mlu590, has it)");
  return Status::kSuccess;
}

Status check_dtype_in(const TensorDesc& d, std::initializer_list<DType> allowed, const char* op, const char* name) {
  if (std::find(allowed.begin(), allowed.end(), d.dtype()) != allowed.end()) return check_computes(d.dtype(), op, name);
  std::string list;
  for (DType t : allowed) list += (list.empty() ? "" : ", ") + std::string(sim::dtype_name(t));
  return fail(Status::kNotSupported, std::string(op) + ": " + name + " has dtype " + std::string(sim::dtype_name(d.dtype())) +
                                         "; supported: " + list);
}

}  // namespace mlusim::mlu
