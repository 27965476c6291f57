// Error reporting: names and descriptions of every code, the per-thread last error (Get resets,
// Peek does not), and detail messages.
#include <set>
#include <string>
#include <thread>

#include "driver_test.h"

namespace mlusim::driver::testing {
namespace {

using ErrorTest = DriverTest;

const cnrtRet_t kAllCodes[] = {
    cnrtSuccess, cnrtErrorNotReady, cnrtErrorInit, cnrtErrorNoDevice, cnrtErrorDeviceInvalid, cnrtErrorArgsInvalid,
    cnrtErrorSys, cnrtErrorSysNoMem, cnrtErrorInvalidResourceHandle, cnrtErrorIllegalState, cnrtErrorNotSupport,
    cnrtErrorOpsNotPermitted, cnrtErrorQueue, cnrtErrorNoMem, cnrtErrorAssert, cnrtErrorKernelTrap,
    cnrtErrorKernelUserTrap, cnrtErrorNotFound, cnrtErrorInvalidKernel, cnrtErrorUnsupportedKernelVersion,
    cnrtErrorNoKernel, cnrtErrorNoModule, cnrtErrorQueueCaptureUnsupported, cnrtErrorQueueCaptureInvalidated,
    cnrtErrorQueueCaptureWrongThread, cnrtErrorQueueCaptureMerged, cnrtErrorQueueCaptureUnjoined,
    cnrtErrorQueueCaptureIsolation, cnrtErrorQueueCaptureUnmatched, cnrtErrorTaskTopoEntityUpdateFailure,
    cnrtErrorSetOnActiveProcess, cnrtErrorDevice, cnrtErrorNoAttribute, cnrtErrorMemcpyDirectionInvalid, cnrtErrorBusy,
    cnrtErrorCndrvFuncCall, cnrtErrorCndevFuncCall, cnrtErrorNoCnrtContext, cnrtErrorCndrvFuncNotFound,
    cnrtErrorInvalidSymbol, cnrtErrorUnknown,
};

TEST_F(ErrorTest, EveryCodeHasItsOwnNameAndADescription) {
  std::set<std::string> names;
  for (cnrtRet_t c : kAllCodes) {
    const std::string name = cnrtGetErrorName(c);
    const std::string str = cnrtGetErrorStr(c);
    EXPECT_EQ(name.rfind("cnrt", 0), 0u) << c;
    EXPECT_FALSE(str.empty()) << c;
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
  }
  EXPECT_STREQ(cnrtGetErrorName(cnrtErrorArgsInvalid), "cnrtErrorArgsInvalid");
  EXPECT_STREQ(cnrtGetErrorName(cnrtSuccess), "cnrtSuccess");
  EXPECT_STREQ(cnrtGetErrorName(static_cast<cnrtRet_t>(12345)), "cnrtErrorUnknown");
  EXPECT_NE(cnrtGetErrorStr(static_cast<cnrtRet_t>(-7)), nullptr);
}

TEST_F(ErrorTest, CodesHaveCnrtValues) {
  EXPECT_EQ(cnrtErrorNotReady, 1);
  EXPECT_EQ(cnrtErrorArgsInvalid, 100006);
  EXPECT_EQ(cnrtErrorInvalidResourceHandle, 100014);
  EXPECT_EQ(cnrtErrorNoMem, 100100);
  EXPECT_EQ(cnrtErrorKernelTrap, 100132);
  EXPECT_EQ(cnrtErrorInvalidKernel, 100302);
  EXPECT_EQ(cnrtErrorMemcpyDirectionInvalid, 632013);
  EXPECT_EQ(cnrtErrorUnknown, 999991);
  EXPECT_EQ(cnrtFuncTypeUnion16, 64);
  EXPECT_EQ(cnrtMemcpyNoDirection, 5);
  EXPECT_EQ(CNRT_NOTIFIER_DISABLE_TIMING_ALL, 4);
}

TEST_F(ErrorTest, GetLastErrorResetsPeekDoesNot) {
  EXPECT_EQ(cnrtGetLastError(), cnrtSuccess);
  EXPECT_EQ(cnrtMalloc(nullptr, 1), cnrtErrorArgsInvalid);
  EXPECT_EQ(cnrtPeekAtLastError(), cnrtErrorArgsInvalid);
  EXPECT_EQ(cnrtPeekAtLastError(), cnrtErrorArgsInvalid);
  unsigned n;
  EXPECT_EQ(cnrtGetDeviceCount(&n), cnrtSuccess);
  EXPECT_EQ(cnrtPeekAtLastError(), cnrtErrorArgsInvalid) << "a success does not clear the last error";
  EXPECT_EQ(cnrtGetLastError(), cnrtErrorArgsInvalid);
  EXPECT_EQ(cnrtGetLastError(), cnrtSuccess);
  EXPECT_EQ(cnrtPeekAtLastError(), cnrtSuccess);
  EXPECT_EQ(cnrtSetDevice(9), cnrtErrorDeviceInvalid);
  EXPECT_EQ(cnrtMalloc(nullptr, 1), cnrtErrorArgsInvalid);
  EXPECT_EQ(cnrtGetLastError(), cnrtErrorArgsInvalid) << "the latest error wins";
}

TEST_F(ErrorTest, LastErrorIsPerThread) {
  EXPECT_EQ(cnrtMalloc(nullptr, 1), cnrtErrorArgsInvalid);
  cnrtRet_t seen = cnrtErrorUnknown;
  std::string message = "x";
  std::thread([&] {
    seen = cnrtPeekAtLastError();
    message = mlusimGetLastErrorMessage();
  }).join();
  EXPECT_EQ(seen, cnrtSuccess);
  EXPECT_EQ(message, "");
  EXPECT_EQ(cnrtGetLastError(), cnrtErrorArgsInvalid);
}

TEST_F(ErrorTest, MessagesNameTheCallAndTheProblem) {
  EXPECT_EQ(cnrtMalloc(nullptr, 1), cnrtErrorArgsInvalid);
  EXPECT_STREQ(mlusimGetLastErrorMessage(), "cnrtMalloc: pPtr is NULL");
}

}  // namespace
}  // namespace mlusim::driver::testing
