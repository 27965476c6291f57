// What queues hold: operations (kernels, copies, notifier placements and waits, host functions)
// and the queue and notifier objects behind the C handles.
//
// All mutable state here is guarded by Runtime::mu. Ops are created by host threads and started
// and finished by the simulation thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "cnrt.h"
#include "mlusim/sim/device.h"
#include "mlusim/sim/launch.h"
#include "mlusim/sim/sim_time.h"

namespace mlusim::driver {

using sim::Picos;
struct QueueState;
struct Op;
using OpPtr = std::shared_ptr<Op>;

enum class OpKind : std::uint8_t {
  kKernel,       // a kernel launch on `device`
  kCopy,         // one sim HostCopy on `device` (host link, device copy, memset)
  kPeerCopy,     // device -> device across devices: MLU-Link, or staged through host memory
  kHostToHost,   // memcpy on the simulation thread when the op starts; takes no simulated time
  kMarker,       // a notifier placement: completes when it starts
  kWaitMarker,   // waits for another queue's marker (cnrtQueueWaitNotifier)
  kHostFunc,     // cnrtInvokeHostFunc
  kWaitUntil,    // mlusimQueueWaitUntil: completes at `until` (absolute ps) or when it starts, if later
};

struct Op {
  OpKind kind = OpKind::kMarker;
  std::uint64_t seq = 0;   // submission order, runtime-wide
  Picos stamp = 0;         // absolute ps: earliest start (the submitting thread's clock)
  std::shared_ptr<QueueState> queue;  // reset when the op completes (QueueState::last points back)
  std::string label;       // trace/track label
  int device = 0;          // the device that executes it
  std::uint64_t correlation = 0;  // the submitting thread's innermost correlation id (activity records)
  std::uint64_t host_thread = 0;  // the submitting thread's OS id
  std::string tag;                // the submitting thread's launch tag
  Picos kernel_start_ps = 0, kernel_end_ps = 0;  // kKernel: first task start, last task end (absolute)

  // kKernel
  sim::KernelLaunch launch;
  // kCopy; for kPeerCopy: copy.device_src on `device` -> peer_dst on `peer_device`
  sim::HostCopy copy;
  int peer_device = 0;
  std::uint64_t peer_dst = 0;
  // kHostToHost
  void* host_dst = nullptr;
  const void* host_src = nullptr;
  std::size_t bytes = 0;
  // kWaitMarker
  OpPtr target;
  // kHostFunc
  cnrtHostFn_t fn = nullptr;
  void* user_data = nullptr;
  // kWaitUntil
  Picos until = 0;

  // ---- progress (Runtime::mu) ----
  bool started = false;
  bool done = false;
  Picos start_ps = 0;  // absolute
  Picos end_ps = 0;    // absolute
  cnrtRet_t error = cnrtSuccess;
  std::string error_message;
  int watchers = 0;               // host threads blocked on this op: its completion pauses the sim
  std::vector<OpPtr> dependents;  // kWaitMarker ops released when this op completes
};

struct QueueState {
  std::uint64_t id = 0;     // handle id; 0 for default queues
  int device = 0;
  int priority = 0;
  std::deque<OpPtr> pending;  // submitted, not started, in submission order
  OpPtr running;              // in-order queue: at most one op runs
  OpPtr last;                 // last submitted op (sync / query target)
  bool timer_armed = false;   // a timer will retry the head at its stamp
  bool busy = false;          // listed in its device's busy set
  // First kernel fault not yet reported by a sync/query of this queue.
  cnrtRet_t fault = cnrtSuccess;
  std::string fault_message;
  std::string track;          // trace track name
};
using QueuePtr = std::shared_ptr<QueueState>;

struct NotifierState {
  std::uint64_t id = 0;
  int device = 0;
  unsigned flags = 0;
  OpPtr placement;  // latest placement (a kMarker op), null if never placed
};
using NotifierPtr = std::shared_ptr<NotifierState>;

}  // namespace mlusim::driver
