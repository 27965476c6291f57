// The shared-bandwidth fabric: times every DMA transfer in the chip model.
//
// Two layers:
//   * maxmin_fair_rates(): a pure weighted max-min fairness solver (no SystemC).
//   * BandwidthFabric: owns a set of bandwidth resources (DRAM channels, NoC, L2, SRAM ports,
//     per-engine DMA caps, host link...) and one SystemC thread that moves the bytes of every
//     started transfer through them at max-min fair rates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "mlusim/sim/sim_time.h"

namespace mlusim::sim::fabric {

using ResourceId = std::uint32_t;

// One resource on a flow's path. `weight` is how many bytes cross `resource` per byte of the
// flow's own payload: 1 for a plain link, 0.25 on each of 4 DRAM channels when the transfer is
// interleaved over them, 2 on DRAM for a DRAM -> DRAM copy (it is read and written). Weights need
// not sum to 1. A weight of 0 means "does not use it".
struct FlowUse {
  ResourceId resource = 0;
  double weight = 1.0;
};

// Weighted max-min fair rates by progressive filling.
//
// Flow i gets rate r_i (bytes per ps of its own payload); resource j carries
// load_j = sum_i w_ij * r_i and must keep load_j <= capacity_j. All unfrozen flows grow at one
// common level L; resource j saturates at
//     L_j = (capacity_j - sum_{frozen i} w_ij * r_i) / sum_{unfrozen i} w_ij ;
// each round takes L = min_j L_j (never below the previous level), freezes every unfrozen flow
// that uses (w > 0) a resource with L_j <= L at r_i = L, and repeats until all flows are frozen.
// A flow alone therefore gets exactly min_j capacity_j / w_ij. Deterministic: a fixed
// evaluation order, no tolerances.
//
// Preconditions (std::invalid_argument otherwise): capacities finite and > 0, weights finite and
// >= 0, resource ids in range, every flow has at least one use with weight > 0.
std::vector<double> maxmin_fair_rates(const std::vector<double>& capacity_bytes_per_ps,
                                      const std::vector<std::vector<FlowUse>>& flow_uses);

// One transfer handed to the fabric.
struct TransferRequest {
  double bytes = 0;          // payload bytes (may be fractional; 0 = a pure-latency transfer)
  Picos latency_ps = 0;      // fixed latency before streaming starts; consumes no bandwidth
  std::vector<FlowUse> uses; // resources on the path (at least one with weight > 0 if bytes > 0)
  std::function<void()> on_complete;  // optional; runs in the fabric thread at the finish time
  std::string label;         // free text for traces and debugging
};

namespace detail {
class FabricState;  // the fabric's state, shared by the BandwidthFabric and its thread
}

// Handle to a started transfer. Times are absolute SystemC time in ps (sc_time_stamp), not
// relative to any device epoch.
class Transfer {
 public:
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  // Notified (immediate notification, from the fabric thread) right after on_complete returns.
  const sc_core::sc_event& done_event() const { return done_event_; }
  bool done() const { return done_; }
  Picos start_ps() const { return start_ps_; }    // when start() was called
  Picos active_ps() const { return active_ps_; }  // start + latency: streaming begins
  Picos end_ps() const { return end_ps_; }        // finish time; valid once done()
  double bytes() const { return bytes_; }
  const std::string& label() const { return label_; }

 private:
  friend class detail::FabricState;
  Transfer() = default;

  sc_core::sc_event done_event_;
  bool done_ = false;
  Picos start_ps_ = 0;
  Picos active_ps_ = 0;
  Picos end_ps_ = 0;
  double bytes_ = 0;
  std::string label_;
};

// Times transfers over shared bandwidth resources with max-min fair sharing.
//
// Cost formula. A transfer started at time s waits its latency, becoming active at a = s + latency
// (it consumes no bandwidth meanwhile), then streams its bytes at its weighted max-min fair rate
// (see maxmin_fair_rates) among all transfers active at that moment. Rates are recomputed whenever
// a transfer becomes active or finishes, and only then. Hence:
//   * uncontended: end = s + latency + ceil_ps(bytes / min_j(capacity_j / w_j)), exactly; with
//     capacity_j = gbps_to_bytes_per_ps(gbps_j) in bytes/ps;
//   * contended: between two rate changes a flow moves rate * dt bytes. At each change the flow's
//     remaining bytes R (double) are re-evaluated and its finish predicted as now + ceil_ps(R/rate);
//     a flow whose rate did not change keeps its prediction, so an unrelated transfer never shifts
//     another's finish. A flow finishes exactly at its predicted ps (no byte epsilons).
//   * zero-byte transfers finish at s + latency.
// When a transfer finishes, its on_complete runs in the fabric thread at the finish time, then
// done_event() is notified. Rates never make any resource carry more than its capacity (up to
// floating-point rounding of the sums).
//
// Not a sc_module: a plain class owning sc_events and one sc_spawn'ed thread (1 MiB stack),
// created by the constructor, so it can be built before or after sc_start has run. All state is
// driven by SystemC processes (no host-thread safety). Iteration is in insertion order, so the
// same inputs give the same times bit for bit.
//
// Requires the SystemC time resolution to be 1 ps (std::logic_error otherwise).
class BandwidthFabric {
 public:
  struct ResourceStats {
    std::string name;
    double capacity_gbps = 0;
    double bytes = 0;    // weighted bytes carried since construction / reset_stats()
    Picos busy_ps = 0;   // time during which the resource carried a nonzero rate
  };

  explicit BandwidthFabric(std::string name = "fabric");
  // Requests shutdown (if not done yet) and releases this object's share of the state. Safe while
  // the simulation is paused or from inside a process; the thread, if still waiting, exits the
  // next time the simulation runs, and the state it needs lives until then.
  ~BandwidthFabric();
  BandwidthFabric(const BandwidthFabric&) = delete;
  BandwidthFabric& operator=(const BandwidthFabric&) = delete;

  // Adds a resource of `gbps` GB/s (1e9 bytes/s); gbps must be finite and > 0.
  ResourceId add_resource(std::string name, double gbps);
  std::size_t resource_count() const;
  const std::string& resource_name(ResourceId id) const;
  double capacity_gbps(ResourceId id) const;

  // Starts a transfer at sc_time_stamp(). Callable from any SystemC process (including on_complete
  // callbacks) or between sc_start calls. Throws std::invalid_argument on a malformed request and
  // std::logic_error after shutdown().
  std::shared_ptr<Transfer> start(TransferRequest request);

  // Uncontended duration of a request (latency + ceil_ps(bytes / min_j capacity_j / w_j)) in ps:
  // the time start() gives it when nothing else is active. Same validation as start().
  Picos uncontended_ps(const TransferRequest& request) const;

  // True when no transfer is waiting out its latency or streaming.
  bool idle() const;

  // Load carried right now (sum over active flows of weight * rate), in GB/s.
  double current_load_gbps(ResourceId id) const;
  // Called in the fabric thread after every rate recomputation, with the absolute time in ps.
  void set_rate_listener(std::function<void(Picos now)> listener);

  // Statistics as of sc_time_stamp(): bytes include the in-flight part of active transfers.
  ResourceStats resource_stats(ResourceId id) const;
  // Restarts the statistics at sc_time_stamp() (in-flight transfers count only what they move
  // from now on).
  void reset_stats();

  // Makes the fabric thread exit the next time the simulation runs (sc_start). In-flight transfers
  // are abandoned (their done_event never fires): drain first (idle()) for a clean rebuild.
  void shutdown();
  // True once the fabric thread has returned.
  bool thread_exited() const;

 private:
  std::shared_ptr<detail::FabricState> state_;
  sc_core::sc_process_handle thread_;
};

}  // namespace mlusim::sim::fabric
