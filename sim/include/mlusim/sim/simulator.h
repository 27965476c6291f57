// The process-wide simulation: one SystemC kernel, the devices built from one config, and the
// trace writer they share. SystemC allows one kernel per process and its time never resets, so
// this is a singleton; rebuilding from a new config drains, shuts the old devices' threads down
// and builds new ones with a fresh epoch.
//
// Not thread-safe: exactly one thread (the driver's simulation thread, or a test's main thread)
// may call into the simulator and its devices.
#pragma once

#include <memory>
#include <vector>

#include "mlusim/sim/config.h"
#include "mlusim/sim/device.h"
#include "mlusim/sim/sim_time.h"

namespace mlusim::sim {

class TraceWriter;
namespace interconnect {
class Interconnect;
}

class Simulator {
 public:
  static Simulator& instance();

  // Replaces all devices by config.device_count new ones. Runs the simulation until the old
  // devices are idle first. The new epoch is the current simulated time.
  void build(const HardwareConfig& config);
  bool built() const { return !devices_.empty(); }
  const HardwareConfig& config() const;
  int device_count() const { return static_cast<int>(devices_.size()); }
  Device& device(int index);  // throws std::out_of_range
  // A copy from device `from` to device `to` can go over MLU-Link or the network (mlu_link.*,
  // network.*); otherwise it is staged through the host. False for from == to or a bad index.
  bool peer_reachable(int from, int to) const;

  // Runs until no activity is left (every launch and copy finished), or until a completion
  // callback calls pause(). Returns true when it stopped because of pause().
  bool run_until_idle();
  // Called from inside the simulation (e.g. a completion callback): the current run_until_idle /
  // run_until returns once the current delta cycle ends, at the time of the awaited event.
  void pause();
  // Runs until absolute device time `t` (ps since the epoch), or returns at once if past it.
  void run_until(Picos t);
  Picos now() const;  // device time: ps since the current epoch
  Picos epoch() const { return epoch_ps_; }

  TraceWriter& trace();

 private:
  Simulator();
  ~Simulator();
  std::unique_ptr<HardwareConfig> config_;
  std::unique_ptr<interconnect::Interconnect> interconnect_;  // built before the devices, which use it
  std::vector<std::unique_ptr<Device>> devices_;
  std::unique_ptr<TraceWriter> trace_;
  Picos epoch_ps_ = 0;
  bool paused_ = false;
};

}  // namespace mlusim::sim
