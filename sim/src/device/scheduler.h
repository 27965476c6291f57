// Places launches on cores. BLOCK tasks go to free compute cores in taskId order (lowest free
// core first); a UNIONn group starts only when n whole clusters (compute cores + memory core)
// are free. Launches are served first come, first served: a launch whose next task cannot be
// placed blocks later launches (so a waiting union launch is never starved by later ones).
//
// Launch latency (`scheduler.launch_latency_ns`, L): the device front end's work between a
// kernel's submission (its queue's previous op done) and its tasks running: fetching the launch,
// setting up its arguments, distributing its first tasks; a GPU's kernel launch latency. A task
// placed at time t starts at max(t, submit + L); the core is reserved from t, and the kernel's
// record starts at its first placement, so its span holds the latency:
//   kernel span = L + tasks' time   (a launch alone on an idle device)
// Back-to-back kernels of one queue each pay L (the next is submitted when the last completes);
// launches of different queues overlap their latencies. L = 0 (the default): tasks start at once.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "device/launch_state.h"

namespace mlusim::sim {

class DeviceImpl;
class Core;

class Scheduler {
 public:
  explicit Scheduler(DeviceImpl& device) : device_(device) {}
  // Why the launch cannot run here, or nullopt.
  std::optional<std::string> validate(const KernelLaunch& launch) const;
  // Validates (throws LaunchError) and queues; dispatches at once if cores are free.
  std::uint64_t submit(KernelLaunch launch, std::function<void(const KernelRecord&)> on_done);
  // A core finished its part of `launch`: frees the core, completes the launch when it was the
  // last, dispatches waiting work.
  void task_finished(LaunchState& launch);
  bool idle() const { return launches_.empty(); }

 private:
  void dispatch();
  bool place_block_task(LaunchState& l);
  bool place_union_group(LaunchState& l);
  void complete(LaunchState& l);
  // How long a task of `l` placed now waits for the launch latency to pass.
  Picos start_delay(const LaunchState& l) const;

  DeviceImpl& device_;
  std::deque<std::unique_ptr<LaunchState>> launches_;
  std::uint64_t next_id_ = 0;
  bool dispatching_ = false;
};

}  // namespace mlusim::sim
