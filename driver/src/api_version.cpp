// Versions: the CNRT release cnrt.h mirrors, the driver version mlusim reports, and mlusim's own.
#include "api_support.h"
#include "mlusim_ext.h"

using namespace mlusim::driver;

namespace {

// CNDrv release reported by cnrtDriverGetVersion (the generation CNRT 6.x runs on).
constexpr int kDriverMajor = 5, kDriverMinor = 10, kDriverPatch = 0;

cnrtRet_t version(const char* fn, int* major, int* minor, int* patch, int a, int b, int c, HostCost cost) {
  return api_call(cost, [&](Runtime&, HostThread& t) {
    if (major == nullptr || minor == nullptr || patch == nullptr)
      return t.fail(cnrtErrorArgsInvalid, std::string(fn) + ": a pointer is NULL");
    *major = a;
    *minor = b;
    *patch = c;
    return cnrtSuccess;
  });
}

}  // namespace

extern "C" {

cnrtRet_t cnrtDriverGetVersion(int* major, int* minor, int* patch) {
  return version("cnrtDriverGetVersion", major, minor, patch, kDriverMajor, kDriverMinor, kDriverPatch, HostCost::kApiCall);
}

cnrtRet_t cnrtGetLibVersion(int* major, int* minor, int* patch) {
  return version("cnrtGetLibVersion", major, minor, patch, CNRT_MAJOR_VERSION, CNRT_MINOR_VERSION, CNRT_PATCH_VERSION,
                 HostCost::kApiCall);
}

cnrtRet_t mlusimGetVersion(int* major, int* minor, int* patch) {
  return version("mlusimGetVersion", major, minor, patch, MLUSIM_VERSION_MAJOR, MLUSIM_VERSION_MINOR, MLUSIM_VERSION_PATCH,
                 HostCost::kNone);
}

}  // extern "C"
