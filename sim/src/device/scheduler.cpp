#include "device/scheduler.h"

#include <nlohmann/json.hpp>

#include "device/device_impl.h"

namespace mlusim::sim {

std::optional<std::string> Scheduler::validate(const KernelLaunch& launch) const {
  const HardwareConfig& cfg = device_.config;
  const std::string who = "launch of kernel '" + launch.name + "': ";
  if (!launch.body) return who + "no kernel body";
  if (launch.dim.x == 0 || launch.dim.y == 0 || launch.dim.z == 0)
    return who + "dim {" + std::to_string(launch.dim.x) + "," + std::to_string(launch.dim.y) + "," +
           std::to_string(launch.dim.z) + "} has a zero component";
  if (launch.dim.count() > 0xFFFFFFFFull) return who + "more than 2^32-1 tasks";
  if (launch.type == FunctionType::kBlock) return std::nullopt;
  const std::uint32_t n = union_clusters(launch.type);
  if (n == 0) return who + "unknown function type " + std::to_string(static_cast<std::uint32_t>(launch.type));
  if (n > cfg.clusters)
    return who + function_type_name(launch.type) + " needs " + std::to_string(n) + " clusters but the device has " +
           std::to_string(cfg.clusters);
  const std::uint64_t group_tasks = std::uint64_t{n} * cfg.cores_per_cluster;
  if (launch.dim.x % group_tasks != 0)
    return who + function_type_name(launch.type) + " needs dim.x to be a multiple of " + std::to_string(group_tasks) +
           " (got " + std::to_string(launch.dim.x) + ")";
  return std::nullopt;
}

std::uint64_t Scheduler::submit(KernelLaunch launch, std::function<void(const KernelRecord&)> on_done) {
  if (auto error = validate(launch)) throw LaunchError(*error);
  auto state = std::make_unique<LaunchState>();
  state->union_n = union_clusters(launch.type);
  state->units_total = state->union_n == 0
                           ? launch.dim.count()
                           : launch.dim.count() / (std::uint64_t{state->union_n} * device_.config.cores_per_cluster);
  state->id = next_id_++;
  state->launch = std::move(launch);
  state->on_done = std::move(on_done);
  KernelRecord& r = state->record;
  r.id = state->id;
  r.name = state->launch.name;
  r.tag = state->launch.tag;
  r.dim = state->launch.dim;
  r.type = state->launch.type;
  r.submit_ps = device_.now();
  state->ready_abs = device_.now_abs() + ceil_ps(device_.config.launch_latency_ns * 1000.0, "launch latency");
  launches_.push_back(std::move(state));
  dispatch();
  return r.id;
}

Picos Scheduler::start_delay(const LaunchState& l) const {
  const Picos now = device_.now_abs();
  return l.ready_abs > now ? l.ready_abs - now : 0;
}

bool Scheduler::place_block_task(LaunchState& l) {
  for (auto& cluster : device_.clusters) {
    for (std::uint32_t k = 0; k < cluster->core_count(); ++k) {
      Core& core = cluster->core(k);
      if (core.busy()) continue;
      TaskAssignment t;
      t.launch = &l;
      t.task_id = static_cast<std::uint32_t>(l.next_unit++);
      ++l.running;
      core.assign(t, start_delay(l));
      return true;
    }
  }
  return false;
}

bool Scheduler::place_union_group(LaunchState& l) {
  std::vector<Cluster*> free;
  for (auto& c : device_.clusters)
    if (c->idle() && free.size() < l.union_n) free.push_back(c.get());
  if (free.size() < l.union_n) return false;
  const HardwareConfig& cfg = device_.config;
  auto group = std::make_unique<UnionGroup>();
  group->all.participants = l.union_n * (cfg.cores_per_cluster + 1);
  const std::uint64_t group_index = l.next_unit++;
  const std::uint32_t first_task = static_cast<std::uint32_t>(group_index * l.union_n * cfg.cores_per_cluster);
  for (std::uint32_t i = 0; i < l.union_n; ++i) {
    group->clusters.push_back(free[i]->index());
    auto b = std::make_unique<Barrier>();
    b->participants = cfg.cores_per_cluster + 1;
    group->cluster_barriers.push_back(std::move(b));
  }
  UnionGroup* g = group.get();
  l.groups.push_back(std::move(group));
  const Picos delay = start_delay(l);
  for (std::uint32_t i = 0; i < l.union_n; ++i) {
    const std::uint32_t cluster_first = first_task + i * cfg.cores_per_cluster;
    for (std::uint32_t k = 0; k < cfg.cores_per_cluster; ++k) {
      free[i]->core(k).assign(TaskAssignment{&l, cluster_first + k, i, g}, delay);
      ++l.running;
    }
    // The memory core reports the task id of its cluster's first core.
    free[i]->memory_core().assign(TaskAssignment{&l, cluster_first, i, g}, delay);
    ++l.running;
  }
  return true;
}

void Scheduler::dispatch() {
  if (dispatching_) return;
  dispatching_ = true;
  for (auto& lp : launches_) {
    LaunchState& l = *lp;
    if (l.faulted) l.next_unit = l.units_total;  // a faulted launch starts no more tasks
    while (l.next_unit < l.units_total) {
      const bool placed = l.union_n == 0 ? place_block_task(l) : place_union_group(l);
      if (!placed) break;
      if (!l.started) {
        l.started = true;
        l.start_abs = device_.now_abs();
      }
    }
    if (l.next_unit < l.units_total) break;  // first come, first served
  }
  dispatching_ = false;
}

void Scheduler::task_finished(LaunchState& launch) {
  --launch.running;
  if (launch.faulted) launch.next_unit = launch.units_total;
  if (launch.running == 0 && launch.next_unit == launch.units_total) complete(launch);
  dispatch();
}

void Scheduler::complete(LaunchState& l) {
  KernelRecord& r = l.record;
  // Record times are relative to the statistics epoch (the last reset_stats()), which may have
  // begun while this launch ran: its record then belongs to the epoch it completes in, with its
  // start clamped to the epoch's start, while its cycles count its whole run.
  const Picos end_abs = device_.now_abs();
  const Picos start_abs = l.started ? l.start_abs : end_abs;
  r.start_ps = start_abs > device_.epoch_ps ? start_abs - device_.epoch_ps : 0;
  r.end_ps = end_abs - device_.epoch_ps;
  r.cycles = ps_to_cycles(end_abs - start_abs, device_.config.core_clock_mhz);
  if (device_.trace.records(TraceLevel::kOps)) {
    nlohmann::json args = {{"launch", r.id},
                           {"dim", {r.dim.x, r.dim.y, r.dim.z}},
                           {"type", function_type_name(r.type)},
                           {"cycles", r.cycles},
                           {"macs", r.macs}};
    if (!r.tag.empty()) args["op"] = r.tag;
    if (r.faulted) args["fault"] = r.fault;
    device_.trace.complete(device_.trace_pid(), device_.trace_track("kernels"), r.name, "kernel", r.start_ps,
                           r.end_ps - r.start_ps, &args);
  }
  device_.stats.kernels.push_back(r);
  auto on_done = std::move(l.on_done);
  const KernelRecord record = r;
  for (auto it = launches_.begin(); it != launches_.end(); ++it) {
    if (it->get() == &l) {
      launches_.erase(it);
      break;
    }
  }
  if (on_done) on_done(record);
}

}  // namespace mlusim::sim
