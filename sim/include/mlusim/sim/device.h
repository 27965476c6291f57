// One simulated chip: host link + DRAM + L2/NoC + clusters (SRAM, memory core, compute cores).
//
// Not thread-safe: a Device belongs to the thread that runs the simulation (the driver's
// simulation thread, or a test's main thread). Methods other than those marked "kernel side"
// are called between sc_start() runs or from completion callbacks inside the simulation.
// Completion callbacks run inside the simulation at the completion's simulated time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "mlusim/sim/config.h"
#include "mlusim/sim/launch.h"
#include "mlusim/sim/sim_time.h"
#include "mlusim/sim/stats.h"

namespace mlusim::sim {

class TraceWriter;
class DeviceImpl;

// A copy between host memory and this device's GDRAM (or within GDRAM), timed over the host link
// (or the DMA fabric). The host buffer is read at start (host -> device) or written at
// completion (device -> host); it must stay valid until on_done.
struct HostCopy {
  // kToPeer: device_src on this device -> host_dst, which is the backing of device peer_device's
  // range (Device::gdram_backing); timed over the interconnect (interconnect/interconnect.h:
  // MLU-Link path or network), which must reach the peer (Simulator::peer_reachable).
  enum class Kind : std::uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice, kMemset, kToPeer };
  Kind kind = Kind::kHostToDevice;
  std::uint64_t device_dst = 0;  // device address (kHostToDevice, kDeviceToDevice, kMemset)
  std::uint64_t device_src = 0;  // device address (kDeviceToHost, kDeviceToDevice)
  void* host_dst = nullptr;      // kDeviceToHost
  const void* host_src = nullptr;  // kHostToDevice
  std::size_t bytes = 0;
  bool pinned = false;            // host buffer is pinned: host link runs at full bandwidth
  int memset_value = 0;           // kMemset
  std::string label;              // trace/report label
  int peer_device = -1;           // kToPeer: the receiving device
};

namespace interconnect {
class Interconnect;
}

class Device {
 public:
  // `links`: the system's interconnect, which peer copies use (none: no peer copies).
  Device(const HardwareConfig& config, int index, TraceWriter& trace, Picos epoch_ps,
         interconnect::Interconnect* links = nullptr);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  int index() const;
  const HardwareConfig& config() const;

  // ---- GDRAM address space: [gdram_base, gdram_base + gdram_size) ----
  // Device addresses are host virtual addresses of a PROT_NONE reservation, so a host
  // dereference of a device pointer faults loudly; the data lives in a separate backing mapping.
  std::uint64_t gdram_base() const;
  std::uint64_t gdram_size() const;
  bool gdram_contains(std::uint64_t addr, std::uint64_t bytes) const;
  // The backing bytes of [addr, addr+bytes); throws std::out_of_range when outside GDRAM.
  void* gdram_backing(std::uint64_t addr, std::uint64_t bytes);
  // Lets the driver restrict kernel GDRAM accesses to live allocations: returns an error text
  // for an invalid range, nullopt when the range is fine. Default: any range inside GDRAM.
  using GdramValidator = std::function<std::optional<std::string>(std::uint64_t addr, std::uint64_t bytes)>;
  void set_gdram_validator(GdramValidator validator);

  // ---- work ----
  // Why the device cannot run this launch (bad dim, unknown type, union larger than the device,
  // dim.x not a multiple of the group size, no body), or nullopt when it can.
  std::optional<std::string> validate_launch(const KernelLaunch& launch) const;
  // Why this copy is invalid (a device range outside GDRAM, MLU-Link missing), or nullopt.
  std::optional<std::string> validate_copy(const HostCopy& copy) const;
  // Queues a kernel launch; it starts when its first task finds a free core. Returns the launch
  // id. Throws LaunchError (validate_launch's message) for a launch the device cannot run.
  // Note: with Debian's libsystemc (QuickThreads), an exception thrown on the stack that runs
  // sc_start confuses AddressSanitizer; the simulation thread should validate first.
  std::uint64_t submit(KernelLaunch launch, std::function<void(const KernelRecord&)> on_done);
  // Queues a copy over the host link / DMA fabric; starts now. on_done gets the end time.
  // Throws std::invalid_argument (validate_copy's message) for an invalid copy.
  void submit_copy(const HostCopy& copy, std::function<void(Picos end)> on_done);
  bool idle() const;  // no launch or copy pending or running

  // ---- modes, time, statistics ----
  // Functional (default) computes floating-point results; timing-only skips them with
  // identical cycle counts (integer index data is still computed).
  void set_functional(bool functional);
  bool functional() const;
  Picos now() const;  // simulated time since this device's epoch
  const DeviceStats& stats() const;
  void reset_stats();  // new epoch = now; kernel records cleared
  // Kernel printf sink (default: stderr). Lines arrive prefixed "[mlu<d> <kernel> task <t>] ".
  void set_log_sink(std::function<void(const std::string&)> sink);

  // Test-only fault injection: the `nth` kernel DMA from now (1 = the next one) lands with one
  // bit flipped (bit 0 of its middle byte). 0 disarms. Proves that results come out of the
  // simulated memories: every op test must fail with it armed.
  void inject_dma_bit_flip(std::uint64_t nth);

  // Drops every line of the L2 (l2.cache; no effect without it): the next GDRAM reads miss, as
  // after a cold start. For benchmarks that time one op from a cold cache.
  void flush_l2();

  // Drains nothing: the owner must have run the simulation until idle(). Makes the device's
  // SystemC threads exit; the next sc_start lets them finish. Safe to destroy afterwards.
  void shutdown();

  DeviceImpl& impl() { return *impl_; }

 private:
  std::unique_ptr<DeviceImpl> impl_;
};

}  // namespace mlusim::sim
