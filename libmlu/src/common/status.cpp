#include "mlusim/mlu/status.h"

#include "common/error.h"

namespace mlusim::mlu {
namespace {
thread_local std::string t_detail;
}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::kSuccess: return "MLU_STATUS_SUCCESS";
    case Status::kNotInitialized: return "MLU_STATUS_NOT_INITIALIZED";
    case Status::kAllocFailed: return "MLU_STATUS_ALLOC_FAILED";
    case Status::kBadParam: return "MLU_STATUS_BAD_PARAM";
    case Status::kInternalError: return "MLU_STATUS_INTERNAL_ERROR";
    case Status::kArchMismatch: return "MLU_STATUS_ARCH_MISMATCH";
    case Status::kExecutionFailed: return "MLU_STATUS_EXECUTION_FAILED";
    case Status::kNotSupported: return "MLU_STATUS_NOT_SUPPORTED";
    case Status::kNumericalOverflow: return "MLU_STATUS_NUMERICAL_OVERFLOW";
  }
  return "MLU_STATUS_UNKNOWN";
}

const char* status_string(Status s) {
  switch (s) {
    case Status::kSuccess: return "success";
    case Status::kNotInitialized: return "the handle is not initialized";
    case Status::kAllocFailed: return "memory allocation failed";
    case Status::kBadParam: return "an argument is invalid";
    case Status::kInternalError: return "internal library error";
    case Status::kArchMismatch: return "the device lacks a unit this op needs";
    case Status::kExecutionFailed: return "the kernel could not be launched";
    case Status::kNotSupported: return "not supported by this library";
    case Status::kNumericalOverflow: return "a size or index overflows what the device can address";
  }
  return "unknown status";
}

const std::string& last_error_detail() { return t_detail; }

Status fail(Status s, std::string detail) {
  t_detail = std::move(detail);
  return s;
}

}  // namespace mlusim::mlu
