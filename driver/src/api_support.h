// The prologue and epilogue every cnrt*/mlusim* entry point shares: start the runtime, bring
// the thread into the current generation, charge the call's host cost, turn exceptions into
// codes (no exception crosses the C boundary; simulated time that would pass 2^64 ps is
// cnrtErrorNotSupport with the quantity named) and let a host function's hold follow its clock.
#pragma once

#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <type_traits>

#include "cnrt.h"
#include "host_thread.h"
#include "runtime.h"

namespace mlusim::driver {

enum class HostCost {
  kNone,     // simulator extensions, error queries
  kApiCall,  // host.api_call_ns
  kLaunch,   // host.launch_overhead_ns
};

// body(Runtime&, HostThread&) -> cnrtRet_t; failures are returned as t.fail(code, message).
template <class Body>
cnrtRet_t api_call(HostCost cost, Body&& body) {
  HostThread& t = this_thread();
  std::string error;
  Runtime* rt = Runtime::get(&error);
  if (rt == nullptr) return t.fail(cnrtErrorInit, error);
  cnrtRet_t ret = cnrtSuccess;
  try {
    rt->adopt(t);
    if (t.batched) cost = HostCost::kNone;  // run_as_batch charges the whole batch itself
    if (cost == HostCost::kApiCall) t.clock = sim::add_ps(t.clock, rt->api_cost(), "host clock after an API call");
    if (cost == HostCost::kLaunch) t.clock = sim::add_ps(t.clock, rt->launch_cost(), "host clock after a launch");
    ret = body(*rt, t);
  } catch (const std::bad_alloc&) {
    ret = t.fail(cnrtErrorSysNoMem, "out of host memory");
  } catch (const sim::SimTimeOverflow& e) {
    ret = t.fail(cnrtErrorNotSupport, e.what());
  } catch (const std::exception& e) {
    ret = t.fail(cnrtErrorUnknown, std::string("mlusim internal error: ") + e.what());
  } catch (...) {
    ret = t.fail(cnrtErrorUnknown, "mlusim internal error (unknown exception)");
  }
  rt->update_hold(t);
  return ret;
}

// A device must exist for calls that use the current device (a failed rebuild leaves none).
inline bool no_device(Runtime& rt) { return rt.device_count() == 0 || this_thread().device >= rt.device_count(); }
inline cnrtRet_t fail_no_device(HostThread& t, const char* fn) {
  return t.fail(cnrtErrorNoDevice, std::string(fn) + ": no simulated device (the last config failed to build)");
}

std::string hex_address(const void* p);

// The integer a caller passed for an enum parameter. C callers may pass any int; loading an
// out-of-range value as the C++ enum type is undefined behaviour, so copy the bytes instead.
template <class E>
long long raw_enum(const E& e) {
  std::underlying_type_t<E> v;
  std::memcpy(&v, &e, sizeof v);
  return static_cast<long long>(v);
}

}  // namespace mlusim::driver
