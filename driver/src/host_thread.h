// State the runtime keeps per host thread: its virtual clock, current device, last error, and
// (on runtime-owned threads running a host function) the hold that stops the simulation from
// running past the function's clock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cnrt.h"
#include "mlusim/sim/sim_time.h"

namespace mlusim::driver {

using sim::Picos;

struct HostThread {
  // Runtime generation this state belongs to: a new config, a reset or a fork starts a new
  // generation, and the first call in it resets clock and device.
  std::uint64_t generation = 0;
  int device = 0;
  Picos clock = 0;  // absolute SystemC time in ps (not relative to the epoch)
  cnrtRet_t last_error = cnrtSuccess;
  std::string message;  // detail of this thread's last failure
  std::uint64_t hold_id = 0;  // non-zero while this thread runs a host function
  const void* host_func_op = nullptr;
  std::string launch_tag;  // mlusimSetLaunchTag: copied into the kernels this thread launches
  std::vector<std::uint64_t> correlation_ids;  // mlusimPushCorrelationId stack; work carries back()
  std::uint64_t os_thread_id = 0;              // gettid(), for activity records
  // Inside run_as_batch (mlusim_ext.h): the cnrt calls a library makes for one device-side program
  // cost no host time of their own; the batch charges its launches once at the end.
  bool batched = false;

  // Records a failure and returns `code`, so validation reads `return t.fail(code, "...")`.
  cnrtRet_t fail(cnrtRet_t code, std::string text) {
    last_error = code;
    message = std::move(text);
    return code;
  }
};

// The calling thread's state.
HostThread& this_thread();

}  // namespace mlusim::driver
