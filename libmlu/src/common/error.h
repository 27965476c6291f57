// Returning a non-success status with its detail message, and the argument checks every op
// shares. Each op's validation prologue reads as a list of MLU_CHECK lines.
#pragma once

#include <string>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

// Sets this thread's detail message and returns `s`.
Status fail(Status s, std::string detail);

// Returns early with kBadParam (or the given status) and a message when `cond` is false.
#define MLU_CHECK(cond, status, msg)                                      \
  do {                                                                    \
    if (!(cond)) return ::mlusim::mlu::fail((status), std::string(msg)); \
  } while (0)
#define MLU_RETURN_IF_ERROR(expr)                                   \
  do {                                                              \
    const ::mlusim::mlu::Status mlu_status_ = (expr);               \
    if (mlu_status_ != ::mlusim::mlu::Status::kSuccess) return mlu_status_; \
  } while (0)

// Common prologue checks; each names the op and the argument in its message.
Status check_handle(const Handle* h, const char* op);
Status check_desc(const TensorDesc* d, const char* op, const char* name);
Status check_ptr(const void* p, const TensorDesc& d, const char* op, const char* name);  // null only if empty
Status check_same_shape(const TensorDesc& a, const TensorDesc& b, const char* op, const char* an, const char* bn);
// d's dtype is one of `allowed` (kNotSupported listing them), and one the device computes
// (check_computes).
Status check_dtype_in(const TensorDesc& d, std::initializer_list<DType> allowed, const char* op, const char* name);
// kNotSupported when d is bf16 and the loaded config has no bf16 arithmetic (HardwareConfig::computes,
// `vfu.bf16`): "<op>: <name> is bf16, which config 'mlu370-x4' does not compute (...)". The same
// rule the simulated VFU applies to each intrinsic, checked up front so no kernel is launched.
Status check_computes(DType t, const char* op, const char* name);

}  // namespace mlusim::mlu
