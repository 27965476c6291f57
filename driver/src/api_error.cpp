// cnrtGetErrorName / cnrtGetErrorStr / cnrtGetLastError / cnrtPeekAtLastError and
// mlusimGetLastErrorMessage. None of them starts the runtime or costs simulated time.
#include <cstring>
#include <type_traits>

#include "cnrt.h"
#include "host_thread.h"
#include "mlusim_ext.h"

namespace {

struct ErrorText {
  cnrtRet_t code;
  const char* name;
  const char* description;
};

constexpr ErrorText kErrors[] = {
    {cnrtSuccess, "cnrtSuccess", "no error"},
    {cnrtErrorNotReady, "cnrtErrorNotReady", "the queried work has not finished yet"},
    {cnrtErrorInit, "cnrtErrorInit", "the runtime failed to initialise (see the config error message)"},
    {cnrtErrorNoDevice, "cnrtErrorNoDevice", "no MLU device found"},
    {cnrtErrorDeviceInvalid, "cnrtErrorDeviceInvalid", "device ordinal out of range"},
    {cnrtErrorArgsInvalid, "cnrtErrorArgsInvalid", "invalid argument"},
    {cnrtErrorSys, "cnrtErrorSys", "a system call failed"},
    {cnrtErrorSysNoMem, "cnrtErrorSysNoMem", "out of host memory"},
    {cnrtErrorInvalidResourceHandle, "cnrtErrorInvalidResourceHandle", "invalid queue or notifier handle"},
    {cnrtErrorIllegalState, "cnrtErrorIllegalState", "resource not in a valid state for the operation"},
    {cnrtErrorNotSupport, "cnrtErrorNotSupport", "operation not supported"},
    {cnrtErrorOpsNotPermitted, "cnrtErrorOpsNotPermitted", "operation not permitted"},
    {cnrtErrorQueue, "cnrtErrorQueue", "failed to get the default queue"},
    {cnrtErrorNoMem, "cnrtErrorNoMem", "out of device memory"},
    {cnrtErrorAssert, "cnrtErrorAssert", "device-side assert triggered"},
    {cnrtErrorKernelTrap, "cnrtErrorKernelTrap", "a kernel faulted (trap, invalid access or hazard)"},
    {cnrtErrorKernelUserTrap, "cnrtErrorKernelUserTrap", "a kernel reached a user trap"},
    {cnrtErrorNotFound, "cnrtErrorNotFound", "resource not found"},
    {cnrtErrorInvalidKernel, "cnrtErrorInvalidKernel", "invalid kernel handle"},
    {cnrtErrorUnsupportedKernelVersion, "cnrtErrorUnsupportedKernelVersion", "kernel built with an unsupported toolchain"},
    {cnrtErrorNoKernel, "cnrtErrorNoKernel", "kernel not registered"},
    {cnrtErrorNoModule, "cnrtErrorNoModule", "module not registered"},
    {cnrtErrorQueueCaptureUnsupported, "cnrtErrorQueueCaptureUnsupported", "not permitted while a queue captures"},
    {cnrtErrorQueueCaptureInvalidated, "cnrtErrorQueueCaptureInvalidated", "queue capture invalidated"},
    {cnrtErrorQueueCaptureWrongThread, "cnrtErrorQueueCaptureWrongThread", "queue capture ended on another thread"},
    {cnrtErrorQueueCaptureMerged, "cnrtErrorQueueCaptureMerged", "two capture sequences merged"},
    {cnrtErrorQueueCaptureUnjoined, "cnrtErrorQueueCaptureUnjoined", "capture sequence has an unjoined fork"},
    {cnrtErrorQueueCaptureIsolation, "cnrtErrorQueueCaptureIsolation", "dependency crosses the capture boundary"},
    {cnrtErrorQueueCaptureUnmatched, "cnrtErrorQueueCaptureUnmatched", "capture ended on another queue"},
    {cnrtErrorTaskTopoEntityUpdateFailure, "cnrtErrorTaskTopoEntityUpdateFailure", "TaskTopo update not performed"},
    {cnrtErrorSetOnActiveProcess, "cnrtErrorSetOnActiveProcess", "device flag set on an active process"},
    {cnrtErrorDevice, "cnrtErrorDevice", "resource does not belong to the current device"},
    {cnrtErrorNoAttribute, "cnrtErrorNoAttribute", "attribute does not exist"},
    {cnrtErrorMemcpyDirectionInvalid, "cnrtErrorMemcpyDirectionInvalid", "invalid copy direction for these pointers"},
    {cnrtErrorBusy, "cnrtErrorBusy", "device or resource busy"},
    {cnrtErrorCndrvFuncCall, "cnrtErrorCndrvFuncCall", "driver call failed (e.g. timing a notifier that was never placed)"},
    {cnrtErrorCndevFuncCall, "cnrtErrorCndevFuncCall", "device management call failed"},
    {cnrtErrorNoCnrtContext, "cnrtErrorNoCnrtContext", "no CNRT context"},
    {cnrtErrorCndrvFuncNotFound, "cnrtErrorCndrvFuncNotFound", "driver function not found"},
    {cnrtErrorInvalidSymbol, "cnrtErrorInvalidSymbol", "invalid symbol"},
    {cnrtErrorUnknown, "cnrtErrorUnknown", "unknown error"},
};

// Looks the code up by its bits: C callers may pass any int, and loading an out-of-range value
// as the C++ enum type would be undefined behaviour.
const ErrorText* find(const cnrtRet_t& code) {
  std::underlying_type_t<cnrtRet_t> raw;
  std::memcpy(&raw, &code, sizeof raw);
  for (const ErrorText& e : kErrors)
    if (static_cast<std::underlying_type_t<cnrtRet_t>>(e.code) == raw) return &e;
  return nullptr;
}

}  // namespace

extern "C" {

const char* cnrtGetErrorName(cnrtRet_t error) {
  const ErrorText* e = find(error);
  return e ? e->name : "cnrtErrorUnknown";
}

const char* cnrtGetErrorStr(cnrtRet_t error) {
  const ErrorText* e = find(error);
  return e ? e->description : "unrecognized error code";
}

cnrtRet_t cnrtGetLastError(void) {
  mlusim::driver::HostThread& t = mlusim::driver::this_thread();
  const cnrtRet_t e = t.last_error;
  t.last_error = cnrtSuccess;
  return e;
}

cnrtRet_t cnrtPeekAtLastError(void) { return mlusim::driver::this_thread().last_error; }

const char* mlusimGetLastErrorMessage(void) { return mlusim::driver::this_thread().message.c_str(); }

}  // extern "C"
