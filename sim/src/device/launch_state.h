// Scheduler-side state of one kernel launch and of one union group (barriers).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "mlusim/sim/launch.h"
#include "mlusim/sim/stats.h"

namespace mlusim::sim {

// A barrier among a fixed set of participants (sync_cluster: a cluster's compute cores + memory
// core; sync_all: every core of the union group). A participant that finishes its task while
// others wait, or that arrives after another participant finished, is a barrier mismatch.
struct Barrier {
  std::uint32_t participants = 0;
  std::uint32_t arrived = 0;
  std::uint32_t exited = 0;
  std::uint64_t generation = 0;
  sc_core::sc_event released;
};

// One group of n whole clusters running 4n tasks of a UNIONn launch.
struct UnionGroup {
  std::uint32_t first_cluster_of_device = 0;  // not necessarily contiguous: see clusters
  std::vector<std::uint32_t> clusters;        // device cluster indices, in group order
  std::vector<std::unique_ptr<Barrier>> cluster_barriers;  // one per group cluster
  Barrier all;
};

struct LaunchState {
  std::uint64_t id = 0;
  KernelLaunch launch;
  std::function<void(const KernelRecord&)> on_done;
  KernelRecord record;
  std::uint32_t union_n = 0;         // clusters per group, 0 for BLOCK
  std::uint64_t units_total = 0;     // BLOCK: tasks; UNION: groups
  std::uint64_t next_unit = 0;       // next task/group to dispatch
  std::uint32_t running = 0;         // tasks (incl. memory cores) currently on a core
  Picos ready_abs = 0;               // absolute time its tasks may start: submission + scheduler.launch_latency_ns
  bool started = false;
  Picos start_abs = 0;               // absolute SystemC time its first task was placed (when started): its
                                     // record's start; the task runs from max(then, ready_abs)
  bool faulted = false;
  std::vector<std::unique_ptr<UnionGroup>> groups;

  // Records the first fault and wakes every barrier waiter so that the launch drains.
  void fault(const std::string& message) {
    if (faulted) return;
    faulted = true;
    record.faulted = true;
    record.fault = message;
    for (auto& g : groups) {
      for (auto& b : g->cluster_barriers) b->released.notify(sc_core::SC_ZERO_TIME);
      g->all.released.notify(sc_core::SC_ZERO_TIME);
    }
  }
};

// What a core runs next.
struct TaskAssignment {
  LaunchState* launch = nullptr;
  std::uint32_t task_id = 0;
  std::uint32_t cluster_in_group = 0;
  UnionGroup* group = nullptr;  // nullptr for BLOCK tasks
};

}  // namespace mlusim::sim
