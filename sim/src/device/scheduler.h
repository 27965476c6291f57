// Places launches on cores. BLOCK tasks go to free compute cores in taskId order (lowest free
// core first); a UNIONn group starts only when n whole clusters (compute cores + memory core)
// are free. Launches are served first come, first served: a launch whose next task cannot be
// placed blocks later launches (so a waiting union launch is never starved by later ones).
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

  DeviceImpl& device_;
  std::deque<std::unique_ptr<LaunchState>> launches_;
  std::uint64_t next_id_ = 0;
  bool dispatching_ = false;
};

}  // namespace mlusim::sim
