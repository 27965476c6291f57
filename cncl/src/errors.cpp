#include "errors.h"

#include <mlusim_ext.h>

namespace mlusim::cncl {

namespace {
thread_local std::string g_last_error;
}

cnclResult_t fail(cnclResult_t code, std::string detail) {
  g_last_error = std::move(detail);
  return code;
}

cnclResult_t fail_cnrt(const std::string& what, cnrtRet_t r) {
  return fail(CNCL_RET_ERR_SYSTEM, what + ": " + cnrtGetErrorName(r) + " (" + mlusimGetLastErrorMessage() + ")");
}

}  // namespace mlusim::cncl

extern "C" {

const char* cnclGetErrorStr(cnclResult_t result) {
  switch (result) {
    case CNCL_RET_SUCCESS: return "CNCL_RET_SUCCESS: no error";
    case CNCL_RET_ERR_UNSUPPORTED: return "CNCL_RET_ERR_UNSUPPORTED: the request is valid but not supported";
    case CNCL_RET_ERR_INVALID: return "CNCL_RET_ERR_INVALID: invalid handle or usage";
    case CNCL_RET_ERR_ARGUMENT: return "CNCL_RET_ERR_ARGUMENT: an argument is out of range";
    case CNCL_RET_ERR_NULL_POINTER: return "CNCL_RET_ERR_NULL_POINTER: a required pointer is NULL";
    case CNCL_RET_ERR_INIT: return "CNCL_RET_ERR_INIT: communicator creation failed";
    case CNCL_RET_ERR_MEMORY: return "CNCL_RET_ERR_MEMORY: device memory allocation failed";
    case CNCL_RET_ERR_SYSTEM: return "CNCL_RET_ERR_SYSTEM: a cnrt call failed";
  }
  return "unknown cnclResult_t";
}

const char* cnclGetLastErrorStr(void) { return mlusim::cncl::g_last_error.c_str(); }

cnclResult_t cnclGetVersion(int* version) {
  if (version == nullptr) return mlusim::cncl::fail(CNCL_RET_ERR_NULL_POINTER, "cnclGetVersion: version is NULL");
  *version = CNCL_MAJOR_VERSION * 10000 + CNCL_MINOR_VERSION * 100 + CNCL_PATCH_VERSION;
  return CNCL_RET_SUCCESS;
}

}  // extern "C"
