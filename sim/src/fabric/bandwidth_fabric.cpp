// Shared-bandwidth fabric: weighted max-min fair rates and the SystemC thread that applies them.
// The cost formula is documented on BandwidthFabric in bandwidth_fabric.h.
#include "fabric/bandwidth_fabric.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace mlusim::sim::fabric {
namespace {

constexpr Picos kNever = std::numeric_limits<Picos>::max();
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Absolute simulated time in ps (the constructor checks that the time resolution is 1 ps, so the
// kernel's integer time value is picoseconds).
Picos now_ps() { return static_cast<Picos>(sc_core::sc_time_stamp().value()); }

// bytes/ps -> GB/s, the inverse of gbps_to_bytes_per_ps (1 GB/s = 1e-3 bytes/ps).
double bytes_per_ps_to_gbps(double bytes_per_ps) { return bytes_per_ps * 1e3; }

// now + ceil_ps(bytes / rate) under contention. start() has checked that the transfer's
// uncontended end fits 64-bit picoseconds; a contended end that does not saturates to kNever (the
// flow then finishes when contention ends and its rate is re-evaluated).
Picos finish_time(Picos now, double bytes, double rate) {
  const double duration = bytes / rate;
  if (!(duration < static_cast<double>(kNever - now))) return kNever;
  return now + ceil_ps(duration, "contended transfer time");
}

// Scratch buffers of the progressive-filling solver, reused between recomputations so that the
// fabric does not allocate on every transfer start or finish.
struct SolverScratch {
  std::vector<double> unfrozen_weight;  // per resource: sum of w_ij over unfrozen flows
  std::vector<double> frozen_load;      // per resource: sum of w_ij * r_i over frozen flows
  std::vector<double> level;            // per resource: level L_j at which it saturates
  std::vector<char> frozen;             // per flow
};

// Progressive filling (formula on maxmin_fair_rates) over a flat problem: flow i uses
// uses[offsets[i] .. offsets[i + 1]), weights > 0 only, ids already validated, and every flow has
// at least one use. `rates` receives bytes/ps per flow.
void solve_flat(const std::vector<double>& capacity, const std::vector<FlowUse>& uses,
                const std::vector<std::size_t>& offsets, std::vector<double>& rates,
                SolverScratch& s) {
  const std::size_t num_resources = capacity.size();
  const std::size_t num_flows = offsets.empty() ? 0 : offsets.size() - 1;
  rates.assign(num_flows, 0.0);
  s.frozen.assign(num_flows, 0);
  std::size_t unfrozen = num_flows;
  double level = 0.0;  // common rate of all unfrozen flows; never decreases
  while (unfrozen > 0) {
    s.unfrozen_weight.assign(num_resources, 0.0);
    s.frozen_load.assign(num_resources, 0.0);
    for (std::size_t i = 0; i < num_flows; ++i) {
      for (std::size_t k = offsets[i]; k < offsets[i + 1]; ++k) {
        const FlowUse& u = uses[k];
        if (s.frozen[i]) {
          s.frozen_load[u.resource] += u.weight * rates[i];
        } else {
          s.unfrozen_weight[u.resource] += u.weight;
        }
      }
    }
    s.level.assign(num_resources, kInfinity);
    double next = kInfinity;
    for (std::size_t j = 0; j < num_resources; ++j) {
      if (s.unfrozen_weight[j] > 0.0) {
        s.level[j] = (capacity[j] - s.frozen_load[j]) / s.unfrozen_weight[j];
        next = std::min(next, s.level[j]);
      }
    }
    // Rounding in frozen_load can put a level a hair below the current one: clamp, so rates stay
    // monotone and the resource simply saturates now.
    level = std::max(level, next);
    // The arg-min resource has level <= `level` and an unfrozen user, so each round freezes at
    // least one flow: at most num_flows rounds.
    for (std::size_t i = 0; i < num_flows; ++i) {
      if (s.frozen[i]) continue;
      for (std::size_t k = offsets[i]; k < offsets[i + 1]; ++k) {
        if (s.level[uses[k].resource] <= level) {
          rates[i] = level;
          s.frozen[i] = 1;
          --unfrozen;
          break;
        }
      }
    }
  }
}

void check_capacity(double bytes_per_ps) {
  if (!std::isfinite(bytes_per_ps) || bytes_per_ps <= 0.0) {
    throw std::invalid_argument("bandwidth fabric: resource capacity must be finite and > 0");
  }
}

// Validates one flow's uses against `num_resources` and appends its weight > 0 entries to `out`.
// Returns how many were appended.
std::size_t append_positive_uses(const std::vector<FlowUse>& uses, std::size_t num_resources,
                                 std::vector<FlowUse>& out) {
  std::size_t appended = 0;
  for (const FlowUse& u : uses) {
    if (u.resource >= num_resources) {
      throw std::invalid_argument("bandwidth fabric: flow uses unknown resource id " +
                                  std::to_string(u.resource));
    }
    if (!std::isfinite(u.weight) || u.weight < 0.0) {
      throw std::invalid_argument("bandwidth fabric: flow weight must be finite and >= 0");
    }
    if (u.weight > 0.0) {
      out.push_back(u);
      ++appended;
    }
  }
  return appended;
}

}  // namespace

std::vector<double> maxmin_fair_rates(const std::vector<double>& capacity_bytes_per_ps,
                                      const std::vector<std::vector<FlowUse>>& flow_uses) {
  for (double c : capacity_bytes_per_ps) check_capacity(c);
  std::vector<FlowUse> uses;
  std::vector<std::size_t> offsets{0};
  for (const auto& flow : flow_uses) {
    if (append_positive_uses(flow, capacity_bytes_per_ps.size(), uses) == 0) {
      throw std::invalid_argument("bandwidth fabric: every flow needs a use with weight > 0");
    }
    offsets.push_back(uses.size());
  }
  std::vector<double> rates;
  SolverScratch scratch;
  solve_flat(capacity_bytes_per_ps, uses, offsets, rates, scratch);
  return rates;
}

namespace detail {

// Everything the fabric thread touches. Shared by the BandwidthFabric and the thread, so that
// destroying the BandwidthFabric while the thread still waits (simulation paused) is safe: the
// thread keeps the state alive until it has exited.
class FabricState {
 public:
  struct Resource {
    std::string name;
    double gbps = 0;
    double capacity = 0;   // bytes/ps
    double load = 0;       // bytes/ps carried now: sum over active flows of weight * rate
    double bytes_done = 0; // weighted bytes of flows finished since the stats epoch
    Picos busy_ps = 0;     // busy time integrated up to busy_since
  };

  // A transfer inside the fabric: pending (waiting out its latency) or active (streaming).
  struct Flow {
    std::shared_ptr<Transfer> transfer;
    std::vector<FlowUse> uses;  // weight > 0 entries only
    std::function<void()> on_complete;
    double rate = 0;              // bytes/ps since seg_start; 0 before the first recomputation
    Picos seg_start = 0;          // when `rate` took effect
    double seg_remaining = 0;     // bytes left at seg_start
    Picos predicted_end = kNever; // seg_start + ceil_ps(seg_remaining / rate)
    double stats_remaining = 0;   // bytes left at the stats epoch (or at start, if later)

    double remaining_at(Picos t) const {
      if (rate <= 0.0) return seg_remaining;
      return std::max(0.0, seg_remaining - rate * static_cast<double>(t - seg_start));
    }
  };

  std::string name;
  std::vector<Resource> resources;
  std::vector<Flow> pending;  // in start order
  std::vector<Flow> active;   // in activation order
  std::function<void(Picos)> rate_listener;
  sc_core::sc_event wake;     // start() / shutdown() -> thread
  bool shutdown_requested = false;
  Picos busy_since = 0;       // busy_ps of every resource is integrated up to here

  // Validates a request; returns its weight > 0 uses (empty for a zero-byte transfer).
  std::vector<FlowUse> validated_uses(const TransferRequest& r) const {
    if (!std::isfinite(r.bytes) || r.bytes < 0.0) {
      throw std::invalid_argument("bandwidth fabric: transfer bytes must be finite and >= 0");
    }
    std::vector<FlowUse> uses;
    if (append_positive_uses(r.uses, resources.size(), uses) == 0 && r.bytes > 0.0) {
      throw std::invalid_argument("bandwidth fabric: transfer '" + r.label +
                                  "' moves bytes but uses no resource with weight > 0");
    }
    if (r.bytes <= 0.0) uses.clear();
    return uses;
  }

  // The instant a new transfer would start streaming (now + latency), after checking that it would
  // also finish, uncontended, within 64-bit picoseconds: rate = min_j capacity_j / w_j alone.
  Picos checked_end(const TransferRequest& r, const std::vector<FlowUse>& uses, Picos now) const {
    try {
      const Picos active = add_ps(now, r.latency_ps, "latency");
      if (uses.empty()) return active;
      double rate = std::numeric_limits<double>::infinity();
      for (const FlowUse& u : uses) rate = std::min(rate, resources[u.resource].capacity / u.weight);
      add_ps(active, ceil_ps(r.bytes / rate, "duration"), "end");
      return active;
    } catch (const SimTimeOverflow& e) {
      throw e.within("transfer '" + r.label + "' of " + std::to_string(static_cast<std::uint64_t>(r.bytes)) +
                     " bytes at " + std::to_string(now) + " ps");
    }
  }

  // Rate of one flow alone on the fabric (what solve_flat gives it without company).
  double solo_rate(const std::vector<FlowUse>& uses) {
    solo_offsets_ = {0, uses.size()};
    solve_flat(capacities_, uses, solo_offsets_, solo_rates_, solo_scratch_);
    return solo_rates_[0];
  }

  const Resource& resource(ResourceId id) const {
    if (id >= resources.size()) {
      throw std::out_of_range("bandwidth fabric: unknown resource id " + std::to_string(id));
    }
    return resources[id];
  }

  void add_resource(std::string resource_name, double gbps) {
    const double capacity = gbps_to_bytes_per_ps(gbps);
    check_capacity(capacity);
    Resource r;
    r.name = std::move(resource_name);
    r.gbps = gbps;
    r.capacity = capacity;
    resources.push_back(std::move(r));
    capacities_.push_back(capacity);
  }

  std::shared_ptr<Transfer> start(TransferRequest request) {
    if (shutdown_requested) {
      throw std::logic_error("bandwidth fabric '" + name + "': start() after shutdown()");
    }
    Flow flow;
    flow.uses = validated_uses(request);

    std::shared_ptr<Transfer> transfer(new Transfer());
    const Picos now = now_ps();
    transfer->start_ps_ = now;
    transfer->active_ps_ = checked_end(request, flow.uses, now);
    transfer->bytes_ = request.bytes;
    transfer->label_ = std::move(request.label);

    flow.transfer = transfer;
    flow.on_complete = std::move(request.on_complete);
    flow.seg_remaining = request.bytes;
    flow.stats_remaining = request.bytes;
    pending.push_back(std::move(flow));
    // Delta notification: works from any process and while the simulation is paused (the thread
    // then runs at the current time on the next sc_start).
    wake.notify(sc_core::SC_ZERO_TIME);
    return transfer;
  }

  void run() {
    while (!shutdown_requested) {
      const Picos now = now_ps();
      settle(now);
      if (shutdown_requested) break;
      const Picos next = next_event();
      if (next == kNever) {
        sc_core::wait(wake);
      } else {
        sc_core::wait(sc_core::sc_time::from_value(next - now), wake);
      }
    }
  }

  // Weighted bytes resource `id` carried since the stats epoch, including in-flight progress at `now`.
  double bytes_carried(ResourceId id, Picos now) const {
    double bytes = resources[id].bytes_done;
    for (const Flow& f : active) {
      const double moved = std::max(0.0, f.stats_remaining - f.remaining_at(now));
      for (const FlowUse& u : f.uses) {
        if (u.resource == id) bytes += u.weight * moved;
      }
    }
    return bytes;
  }

  Picos busy(ResourceId id, Picos now) const {
    const Resource& r = resources[id];
    return r.busy_ps + (r.load > 0.0 && now > busy_since ? now - busy_since : 0);
  }

  void reset_stats(Picos now) {
    for (Resource& r : resources) {
      r.bytes_done = 0;
      r.busy_ps = 0;
    }
    busy_since = now;
    for (Flow& f : active) f.stats_remaining = f.remaining_at(now);
  }

 private:
  // Activates and finishes everything due at `now`, recomputing rates when the active set
  // changes, until nothing more is due (callbacks may start transfers at `now`).
  void settle(Picos now) {
    for (;;) {
      std::vector<Flow> finished;
      bool active_set_changed = false;

      // Pending transfers whose latency has elapsed start streaming (zero-byte ones finish).
      std::size_t kept = 0;
      for (std::size_t i = 0; i < pending.size(); ++i) {
        Flow& f = pending[i];
        if (f.transfer->active_ps_ > now) {
          if (kept != i) pending[kept] = std::move(f);
          ++kept;
        } else if (f.uses.empty()) {
          finished.push_back(std::move(f));
        } else {
          f.seg_start = now;
          active.push_back(std::move(f));
          active_set_changed = true;
        }
      }
      pending.resize(kept);

      // Active flows whose predicted finish has come are done: their bytes are all moved.
      kept = 0;
      for (std::size_t i = 0; i < active.size(); ++i) {
        Flow& f = active[i];
        if (f.predicted_end <= now) {
          for (const FlowUse& u : f.uses) {
            resources[u.resource].bytes_done += u.weight * f.stats_remaining;
          }
          finished.push_back(std::move(f));
          active_set_changed = true;
        } else {
          if (kept != i) active[kept] = std::move(f);
          ++kept;
        }
      }
      active.resize(kept);

      if (active_set_changed) recompute(now);
      if (finished.empty() && !active_set_changed) return;

      for (Flow& f : finished) {
        Transfer& t = *f.transfer;
        t.end_ps_ = now;
        t.done_ = true;
        if (f.on_complete) f.on_complete();
        t.done_event_.notify();
      }
    }
  }

  // Recomputes every active flow's max-min fair rate at `now`. A flow whose rate changes starts a
  // new segment from the bytes it has left; a flow whose rate is unchanged keeps its prediction.
  void recompute(Picos now) {
    for (Resource& r : resources) {
      if (r.load > 0.0) r.busy_ps += now - busy_since;
    }
    busy_since = now;

    flat_uses_.clear();
    offsets_.assign(1, 0);
    for (const Flow& f : active) {
      flat_uses_.insert(flat_uses_.end(), f.uses.begin(), f.uses.end());
      offsets_.push_back(flat_uses_.size());
    }
    solve_flat(capacities_, flat_uses_, offsets_, rates_, scratch_);

    for (Resource& r : resources) r.load = 0.0;
    for (std::size_t i = 0; i < active.size(); ++i) {
      Flow& f = active[i];
      const double rate = rates_[i];
      if (rate != f.rate) {
        const double remaining = f.remaining_at(now);
        f.seg_start = now;
        f.seg_remaining = remaining;
        f.rate = rate;
        f.predicted_end = finish_time(now, remaining, rate);
      }
      for (const FlowUse& u : f.uses) resources[u.resource].load += u.weight * rate;
    }
    if (rate_listener) rate_listener(now);
  }

  Picos next_event() const {
    Picos next = kNever;
    for (const Flow& f : pending) next = std::min(next, f.transfer->active_ps_);
    for (const Flow& f : active) next = std::min(next, f.predicted_end);
    return next;
  }

  // Solver inputs and scratch, kept to avoid allocating per recomputation.
  std::vector<double> capacities_;
  std::vector<FlowUse> flat_uses_;
  std::vector<std::size_t> offsets_;
  std::vector<double> rates_;
  SolverScratch scratch_;
  // Separate buffers for solo_rate(), which may be called from a rate listener or callback.
  std::vector<std::size_t> solo_offsets_;
  std::vector<double> solo_rates_;
  SolverScratch solo_scratch_;
};

}  // namespace detail

BandwidthFabric::BandwidthFabric(std::string name)
    : state_(std::make_shared<detail::FabricState>()) {
  if (sc_core::sc_get_time_resolution() != sc_core::sc_time(1, sc_core::SC_PS)) {
    throw std::logic_error("bandwidth fabric: SystemC time resolution must be 1 ps");
  }
  state_->name = std::move(name);
  state_->busy_since = now_ps();

  sc_core::sc_spawn_options options;
  options.set_stack_size(1 << 20);
  // The thread takes its own reference to the state and drops it when it returns.
  auto thread_state = state_;
  thread_ = sc_core::sc_spawn(
      [thread_state]() mutable {
        const std::shared_ptr<detail::FabricState> state = std::move(thread_state);
        state->run();
      },
      sc_core::sc_gen_unique_name(state_->name.c_str()), &options);
}

BandwidthFabric::~BandwidthFabric() {
  if (!state_->shutdown_requested) shutdown();
}

ResourceId BandwidthFabric::add_resource(std::string name, double gbps) {
  state_->add_resource(std::move(name), gbps);
  return static_cast<ResourceId>(state_->resources.size() - 1);
}

std::size_t BandwidthFabric::resource_count() const { return state_->resources.size(); }

const std::string& BandwidthFabric::resource_name(ResourceId id) const {
  return state_->resource(id).name;
}

double BandwidthFabric::capacity_gbps(ResourceId id) const { return state_->resource(id).gbps; }

std::shared_ptr<Transfer> BandwidthFabric::start(TransferRequest request) {
  return state_->start(std::move(request));
}

Picos BandwidthFabric::uncontended_ps(const TransferRequest& request) const {
  const std::vector<FlowUse> uses = state_->validated_uses(request);
  if (uses.empty()) return request.latency_ps;
  return add_ps(request.latency_ps, ceil_ps(request.bytes / state_->solo_rate(uses), "uncontended transfer time"),
                "uncontended transfer time");
}

bool BandwidthFabric::idle() const { return state_->pending.empty() && state_->active.empty(); }

double BandwidthFabric::current_load_gbps(ResourceId id) const {
  return bytes_per_ps_to_gbps(state_->resource(id).load);
}

void BandwidthFabric::set_rate_listener(std::function<void(Picos now)> listener) {
  state_->rate_listener = std::move(listener);
}

BandwidthFabric::ResourceStats BandwidthFabric::resource_stats(ResourceId id) const {
  const detail::FabricState::Resource& r = state_->resource(id);
  const Picos now = now_ps();
  ResourceStats stats;
  stats.name = r.name;
  stats.capacity_gbps = r.gbps;
  stats.bytes = state_->bytes_carried(id, now);
  stats.busy_ps = state_->busy(id, now);
  return stats;
}

void BandwidthFabric::reset_stats() { state_->reset_stats(now_ps()); }

void BandwidthFabric::shutdown() {
  state_->shutdown_requested = true;
  state_->wake.notify(sc_core::SC_ZERO_TIME);
}

bool BandwidthFabric::thread_exited() const { return thread_.terminated(); }

}  // namespace mlusim::sim::fabric
