#include "mlusim/sim/simulator.h"

#include "interconnect/interconnect.h"

#include <cstdlib>
#include <stdexcept>
#include <utility>

#include <pthread.h>

#include <systemc>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#include "common/sc_delay.h"
#include "mlusim/sim/trace.h"

namespace mlusim::sim {
namespace {

// libsystemc's coroutines call AddressSanitizer's fiber-switch hooks, and when sc_start returns
// the calling thread is left registered with the last coroutine's stack bounds: ASan then
// misreports exceptions thrown on this stack and LeakSanitizer crashes at exit. Re-registering
// the thread's real stack after every sc_start restores correct bookkeeping.
void run_simulation(const sc_core::sc_time* duration) {
  if (duration) sc_core::sc_start(*duration);
  else sc_core::sc_start();
#if defined(__SANITIZE_ADDRESS__)
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    std::size_t size = 0;
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, addr, size);
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
  }
#endif
}

}  // namespace

Simulator& Simulator::instance() {
  static Simulator sim;
  return sim;
}

Simulator::Simulator() : trace_(std::make_unique<TraceWriter>()) {
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  // 1 ps resolution: every formula is rounded up to whole picoseconds (sim_time.h).
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
}

// Devices are destroyed with the process: their threads are parked in wait(), which SystemC
// tolerates at exit. Explicit teardown happens in build().
Simulator::~Simulator() = default;

const HardwareConfig& Simulator::config() const {
  if (!config_) throw std::logic_error("mlusim: the simulator has no config yet (call build)");
  return *config_;
}

bool Simulator::peer_reachable(int from, int to) const {
  if (!interconnect_ || from < 0 || to < 0 || from >= device_count() || to >= device_count() || from == to)
    return false;
  return interconnect_->reachable(static_cast<unsigned>(from), static_cast<unsigned>(to));
}

Device& Simulator::device(int index) {
  if (index < 0 || index >= device_count())
    throw std::out_of_range("mlusim: device " + std::to_string(index) + " does not exist (" +
                            std::to_string(device_count()) + " devices)");
  return *devices_[static_cast<std::size_t>(index)];
}

void Simulator::build(const HardwareConfig& config) {
  if (!devices_.empty()) {
    while (run_until_idle()) {
    }
    for (auto& d : devices_) d->shutdown();
    if (interconnect_) interconnect_->fabric().shutdown();
    run_simulation(nullptr);  // let the shut-down threads return
    devices_.clear();
    interconnect_.reset();
  }
  config_ = std::make_unique<HardwareConfig>(config);
  epoch_ps_ = static_cast<Picos>(sc_core::sc_time_stamp().value());
  interconnect_ = std::make_unique<interconnect::Interconnect>(config);
  for (std::uint32_t i = 0; i < config.device_count; ++i)
    devices_.push_back(std::make_unique<Device>(config, static_cast<int>(i), *trace_, epoch_ps_, interconnect_.get()));
  trace_->set_metadata("config", config.name);
  // Start the new threads so they park in their first wait before any work arrives.
  const sc_core::sc_time zero = sc_core::SC_ZERO_TIME;
  run_simulation(&zero);
}

bool Simulator::run_until_idle() {
  paused_ = false;
  if (sc_core::sc_pending_activity()) run_simulation(nullptr);
  return std::exchange(paused_, false);
}

void Simulator::pause() {
  paused_ = true;
  sc_core::sc_pause();
}

void Simulator::run_until(Picos t) {
  const Picos abs = add_ps(epoch_ps_, t, "run_until target");
  const Picos cur = static_cast<Picos>(sc_core::sc_time_stamp().value());
  if (abs <= cur) return;
  const sc_core::sc_time span = sc_delay(abs - cur, "run_until");
  run_simulation(&span);
}

Picos Simulator::now() const { return static_cast<Picos>(sc_core::sc_time_stamp().value()) - epoch_ps_; }

TraceWriter& Simulator::trace() { return *trace_; }

}  // namespace mlusim::sim
