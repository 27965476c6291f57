// Internal state of a Device: the blocks it is built from and the services they share.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "device/scheduler.h"
#include "fabric/bandwidth_fabric.h"
#include "memory/gdram.h"
#include "memory/l2_cache.h"
#include "mlusim/sim/config.h"
#include "mlusim/sim/device.h"
#include "mlusim/sim/stats.h"
#include "mlusim/sim/trace.h"

namespace mlusim::sim {

class DeviceImpl {
 public:
  DeviceImpl(const HardwareConfig& config, int index, TraceWriter& trace, Picos epoch_ps,
             interconnect::Interconnect* links);
  ~DeviceImpl();

  const HardwareConfig config;
  const int index;
  TraceWriter& trace;
  Picos epoch_ps;
  bool functional = true;
  DeviceStats stats;
  Device::GdramValidator gdram_validator;
  std::function<void(const std::string&)> log_sink;

  GdramMemory gdram;
  L2Cache l2;  // disabled (every access misses) unless config.l2_cache
  BandwidthFabric fabric;
  std::vector<ResourceId> dram_channels;
  ResourceId noc{}, host_to_device{}, device_to_host{}, pageable_staging{};
  interconnect::Interconnect* links = nullptr;  // the system's MLU-Link / network (peer copies)
  std::vector<std::unique_ptr<Cluster>> clusters;
  Scheduler scheduler;
  std::uint32_t copies_in_flight = 0;
  std::uint64_t dma_flip_countdown = 0;  // inject_dma_bit_flip: 0 = disarmed

  Picos now_abs() const;                  // SystemC time in ps
  Picos now() const { return now_abs() - epoch_ps; }
  // Adds the DRAM channels a contiguous GDRAM range touches to `uses`, each weighted by the
  // share of `total_bytes` it carries (interleaved every dram_interleave_bytes).
  void add_dram_uses(std::uint64_t addr, std::uint64_t bytes, double total_bytes, std::vector<FlowUse>& uses) const;
  // Trace helpers: this device's process id and a named track in it (created on first use).
  int trace_pid();
  int trace_track(const std::string& name);
  std::optional<std::string> validate_copy(const HostCopy& copy) const;
  void submit_copy(const HostCopy& copy, std::function<void(Picos)> on_done);

 private:
  bool trace_process_declared_ = false;
  double last_dram_gbps_ = 0;
};

}  // namespace mlusim::sim
