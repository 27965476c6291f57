// Status codes of every libmlu entry point (values as CNNL's cnnlStatus_t), with a per-thread
// detail message naming what was wrong.
#pragma once

#include <string>

namespace mlusim::mlu {

enum class Status : int {
  kSuccess = 0,
  kNotInitialized = 1,     // the handle is null or destroyed
  kAllocFailed = 2,        // host or device memory could not be allocated
  kBadParam = 3,           // a descriptor, shape, pointer or value is invalid (detail says which)
  kInternalError = 4,
  kArchMismatch = 5,       // the op needs a unit this device lacks
  kExecutionFailed = 6,    // the driver refused the launch (detail has the cnrt error)
  kNotSupported = 7,       // a valid request this library does not implement (e.g. a dtype)
  kNumericalOverflow = 8,  // an index or size exceeds what the device can address
};

const char* status_name(Status s);    // "MLU_STATUS_BAD_PARAM"
const char* status_string(Status s);  // "an argument is invalid"

// The detail of this thread's last non-success status ("matmul: a is 3x4 but b is 5x2").
const std::string& last_error_detail();

}  // namespace mlusim::mlu
