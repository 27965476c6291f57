// Runtime lifecycle (start, rebuild, exit, fork) and its registries. The simulation thread and
// the execution of queued work are in executor.cpp.
#include "runtime.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>

#include "kernel_registry.h"
#include "mlusim/sim/simulator.h"

namespace mlusim::driver {
namespace {

std::mutex g_mu;                        // guards starting, stopping and replacing the runtime
std::atomic<Runtime*> g_runtime{nullptr};
bool g_shut_down = false;               // process exit has begun
bool g_handlers_installed = false;
std::optional<sim::HardwareConfig> g_fork_config;  // a fork child restarts with its parent's config
std::string g_fork_config_name;
std::atomic<std::uint64_t> g_generation{0};        // process-wide: survives fork and rebuilds
std::atomic<std::uint64_t> g_next_handle_id{1};
// Runtimes stopped at exit or abandoned by a fork child stay allocated (a host thread may still
// hold one); keeping them reachable from here tells LeakSanitizer they are not leaks.
// (Plain array: it must outlive static destructors, which run before the leak check.)
Runtime* g_retired[64];
std::size_t g_retired_count = 0;
void retire(Runtime* rt) {
  if (g_retired_count < sizeof g_retired / sizeof g_retired[0]) g_retired[g_retired_count++] = rt;
}

constexpr std::uintptr_t kQueueTag = 0x51;
constexpr std::uintptr_t kNotifierTag = 0x4e;
constexpr int kTagShift = 40;
constexpr std::uintptr_t kIdMask = (std::uintptr_t{1} << kTagShift) - 1;

std::uint64_t decode(const void* handle, std::uintptr_t tag) {
  const auto v = reinterpret_cast<std::uintptr_t>(handle);
  if ((v >> kTagShift) != tag || (v & 0xF) != 0) return 0;
  return (v & kIdMask) >> 4;
}

Picos host_cost_ps(double ns) { return std::max<Picos>(1, sim::ceil_ps(ns * 1000.0, "host API call cost")); }

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

cnrtQueue_t queue_handle(std::uint64_t id) {
  return reinterpret_cast<cnrtQueue_t>((kQueueTag << kTagShift) | (id << 4));
}
cnrtNotifier_t notifier_handle(std::uint64_t id) {
  return reinterpret_cast<cnrtNotifier_t>((kNotifierTag << kTagShift) | (id << 4));
}

// ---- lifecycle ------------------------------------------------------------------------------

Runtime* Runtime::get(std::string* error) {
  if (Runtime* rt = g_runtime.load(std::memory_order_acquire)) return rt;
  std::lock_guard<std::mutex> lock(g_mu);
  if (Runtime* rt = g_runtime.load()) return rt;
  if (g_shut_down) {
    *error = "the mlusim runtime has shut down (the process is exiting)";
    return nullptr;
  }
  std::string name;
  sim::HardwareConfig config;
  if (g_fork_config) {
    config = *g_fork_config;
    name = g_fork_config_name;
  } else {
    const char* env = std::getenv("MLUSIM_CONFIG");
    name = env && *env ? env : sim::default_config_name();
    try {
      config = sim::load_config(name);
    } catch (const std::exception& e) {
      *error = std::string("cannot load the config named by MLUSIM_CONFIG (\"") + name + "\"): " + e.what();
      return nullptr;
    }
  }
  Runtime* rt = start(config, error);
  if (rt) rt->config_name_ = name;
  return rt;
}

void Runtime::current_source(std::string* name, std::vector<sim::ConfigOverride>* overrides) {
  std::lock_guard<std::mutex> lock(g_mu);
  Runtime* rt = g_runtime.load();
  if (!rt) {
    const char* env = std::getenv("MLUSIM_CONFIG");
    *name = env && *env ? env : sim::default_config_name();
    overrides->clear();
    return;
  }
  std::lock_guard<std::mutex> rt_lock(rt->mu);
  *name = rt->config_name_;
  *overrides = rt->overrides_;
}

cnrtRet_t Runtime::load(const sim::HardwareConfig& config, const std::string& name,
                        const std::vector<sim::ConfigOverride>& overrides, HostThread& t) {
  Runtime* rt = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    rt = g_runtime.load();
    if (!rt) {
      if (g_shut_down) return t.fail(cnrtErrorInit, "the mlusim runtime has shut down (the process is exiting)");
      std::string error;
      rt = start(config, &error);
      if (!rt) return t.fail(cnrtErrorInit, error);
      {
        std::lock_guard<std::mutex> rt_lock(rt->mu);
        rt->config_name_ = name;
        rt->overrides_ = overrides;
      }
      rt->adopt(t);
      return cnrtSuccess;
    }
  }
  const cnrtRet_t ret = rt->rebuild(config, t);
  if (ret == cnrtSuccess) {
    std::lock_guard<std::mutex> rt_lock(rt->mu);
    rt->config_name_ = name;
    rt->overrides_ = overrides;
  }
  return ret;
}

// Called with g_mu held.
Runtime* Runtime::start(const sim::HardwareConfig& config, std::string* error) {
  if (!g_handlers_installed) {
    // The simulator singleton must exist before our exit handler is registered, so that the
    // handler (which joins the simulation thread) runs before the simulator is destroyed.
    sim::Simulator::instance();
    std::atexit(&Runtime::on_exit);
    pthread_atfork(&Runtime::on_fork_prepare, &Runtime::on_fork_parent, &Runtime::on_fork_child);
    g_handlers_installed = true;
  }
  auto* rt = new Runtime();  // never deleted: host threads may still hold it during exit
  rt->sim_thread_ = std::thread([rt] { rt->sim_loop(); });
  std::string build_error;
  {
    std::unique_lock<std::mutex> lk(rt->mu);
    rt->run_on_sim(lk, [&] { rt->build_on_sim(config, &build_error); });
  }
  if (!build_error.empty()) {
    *error = "cannot build the simulated devices: " + build_error;
    rt->shutdown();
    retire(rt);
    return nullptr;
  }
  g_runtime.store(rt, std::memory_order_release);
  return rt;
}

void Runtime::build_on_sim(const sim::HardwareConfig& config, std::string* error) {
  sim::Simulator& sim = sim::Simulator::instance();
  const std::uint64_t gen = g_generation.fetch_add(1) + 1;
  bool timing_only = false;
  {
    std::lock_guard<std::mutex> lk(mu);
    timing_only = timing_only_;
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  try {
    sim.build(config);
    for (int i = 0; i < sim.device_count(); ++i) {
      sim::Device& d = sim.device(i);
      d.set_functional(!timing_only);
      d.set_gdram_validator([this, gen, i](std::uint64_t addr, std::uint64_t bytes) -> std::optional<std::string> {
        if (bytes == 0) return std::nullopt;
        std::lock_guard<std::mutex> lk(mu);
        if (generation_.load() != gen || i >= static_cast<int>(devices_.size()))
          return std::string("device memory of a configuration that is no longer loaded");
        if (devices_[static_cast<std::size_t>(i)]->allocator.contains(addr, bytes)) return std::nullopt;
        return "GDRAM range [" + hex(addr) + ", +" + std::to_string(bytes) + ") is not inside a live cnrtMalloc allocation of mlu" +
               std::to_string(i) + " (freed, never allocated, or past the end of its allocation)";
      });
      ranges.emplace_back(d.gdram_base(), d.gdram_size());
    }
  } catch (const std::exception& e) {
    *error = e.what();
    ranges.clear();
  }
  std::lock_guard<std::mutex> lk(mu);
  config_ = config;
  devices_.clear();
  queues_.clear();
  notifiers_.clear();
  busy_queues_.clear();
  kicked_.clear();
  timers_ = {};
  eager_timers_ = 0;
  counter_samples_.clear();
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    auto state = std::make_unique<DeviceState>(ranges[i].first, ranges[i].second);
    state->default_queue = std::make_shared<QueueState>();
    state->default_queue->device = static_cast<int>(i);
    state->default_queue->track = "default queue";
    devices_.push_back(std::move(state));
  }
  epoch_ps_ = sim.epoch();
  sim_now_ps_ = now_abs();
  api_cost_ps_.store(host_cost_ps(config.api_call_ns));
  launch_cost_ps_.store(host_cost_ps(config.launch_overhead_ns));
  drained_ = true;
  generation_.store(gen);
}

cnrtRet_t Runtime::rebuild(const sim::HardwareConfig& config, HostThread& t) {
  std::unique_lock<std::mutex> lk(mu);
  const char* busy_fn = "cannot load a config while a host function (cnrtInvokeHostFunc) is running";
  if (!holds_.empty()) return t.fail(cnrtErrorIllegalState, busy_fn);
  for (;;) {
    const std::vector<OpPtr> ops = unfinished_ops(-1);
    if (ops.empty()) break;
    wait(lk, ops, t, "mlusimLoadConfig");
    if (stop_) return t.fail(cnrtErrorInit, "the mlusim runtime has shut down");
  }
  if (!holds_.empty()) return t.fail(cnrtErrorIllegalState, busy_fn);
  std::string error;
  run_on_sim(lk, [&] { build_on_sim(config, &error); });
  if (!error.empty()) return t.fail(cnrtErrorSysNoMem, "cannot build the simulated devices: " + error);
  lk.unlock();
  adopt(t);
  return cnrtSuccess;
}

void Runtime::shutdown() {
  {
    std::lock_guard<std::mutex> lk(mu);
    stop_ = true;
    wake_sim();
    done_cv.notify_all();
  }
  if (sim_thread_.joinable() && sim_thread_.get_id() != std::this_thread::get_id()) sim_thread_.join();
  pool_.stop();
}

void Runtime::on_exit() {
  Runtime* rt = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_shut_down = true;
    rt = g_runtime.exchange(nullptr);
    if (rt) retire(rt);
  }
  if (rt) rt->shutdown();
}

// fork(): the simulation thread parks outside the simulation and every runtime mutex is held
// across the fork, so the child inherits consistent state. The child cannot use the parent's
// threads: it abandons the parent's runtime (its callbacks become no-ops) and starts a new one
// from the same config on its first call.
void Runtime::on_fork_prepare() {
  g_mu.lock();
  KernelRegistry::instance().mutex().lock();
  if (Runtime* rt = g_runtime.load()) rt->fork_prepare();
}

void Runtime::on_fork_parent() {
  if (Runtime* rt = g_runtime.load()) rt->fork_parent();
  KernelRegistry::instance().mutex().unlock();
  g_mu.unlock();
}

void Runtime::on_fork_child() {
  if (Runtime* rt = g_runtime.load()) {
    g_fork_config = rt->config_;
    g_fork_config_name = rt->config_name_;
    rt->fork_child();
    g_runtime.store(nullptr);
    retire(rt);
  }
  KernelRegistry::instance().mutex().unlock();
  g_mu.unlock();
}

void Runtime::fork_prepare() {
  std::unique_lock<std::mutex> lk(mu);
  fork_pending_ = true;
  wake_sim();
  done_cv.wait(lk, [this] { return parked_ || stop_; });
  pool_.mutex().lock();
  lk.release();  // mu stays locked until fork_parent / fork_child
}

void Runtime::fork_parent() {
  pool_.mutex().unlock();
  fork_pending_ = false;
  wake_sim();
  mu.unlock();
}

void Runtime::fork_child() {
  orphaned_ = true;
  pool_.mutex().unlock();
  mu.unlock();
}

// ---- per call ------------------------------------------------------------------------------

void Runtime::adopt(HostThread& t) {
  if (t.generation == generation_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lk(mu);
  t.generation = generation_.load();
  t.device = 0;
  t.clock = sim_now_ps_;
  t.hold_id = 0;
  t.host_func_op = nullptr;
}

void Runtime::update_hold(HostThread& t) {
  if (t.hold_id == 0) return;
  std::lock_guard<std::mutex> lk(mu);
  auto it = holds_.find(t.hold_id);
  if (it != holds_.end() && it->second != t.clock) {
    it->second = t.clock;
    wake_sim();
  }
}

// ---- registries ----------------------------------------------------------------------------

QueuePtr Runtime::find_queue(cnrtQueue_t handle, const HostThread& t) {
  if (handle == nullptr || handle == cnrtQueuePerThread || handle == cnrtQueueLegacy) {
    if (t.device < 0 || t.device >= device_count()) return nullptr;
    return device(t.device).default_queue;
  }
  const std::uint64_t id = decode(handle, kQueueTag);
  auto it = queues_.find(id);
  return it == queues_.end() ? nullptr : it->second;
}

NotifierPtr Runtime::find_notifier(cnrtNotifier_t handle) {
  const std::uint64_t id = decode(handle, kNotifierTag);
  auto it = notifiers_.find(id);
  return it == notifiers_.end() ? nullptr : it->second;
}

cnrtQueue_t Runtime::create_queue(int dev, int priority) {
  DeviceState& d = device(dev);
  if (d.live_queues >= kMaxQueuesPerDevice) return nullptr;
  auto q = std::make_shared<QueueState>();
  q->id = g_next_handle_id.fetch_add(1);
  q->device = dev;
  q->priority = priority;
  q->track = "queue " + std::to_string(q->id);
  queues_.emplace(q->id, q);
  ++d.live_queues;
  return queue_handle(q->id);
}

bool Runtime::destroy_queue(cnrtQueue_t handle) {
  auto it = queues_.find(decode(handle, kQueueTag));
  if (it == queues_.end()) return false;
  --device(it->second->device).live_queues;
  queues_.erase(it);  // queued ops keep the state alive until they finish
  return true;
}

cnrtNotifier_t Runtime::create_notifier(int dev, unsigned flags) {
  DeviceState& d = device(dev);
  if (d.live_notifiers >= kMaxNotifiersPerDevice) return nullptr;
  auto n = std::make_shared<NotifierState>();
  n->id = g_next_handle_id.fetch_add(1);
  n->device = dev;
  n->flags = flags;
  notifiers_.emplace(n->id, n);
  ++d.live_notifiers;
  return notifier_handle(n->id);
}

bool Runtime::destroy_notifier(cnrtNotifier_t handle) {
  auto it = notifiers_.find(decode(handle, kNotifierTag));
  if (it == notifiers_.end()) return false;
  --device(it->second->device).live_notifiers;
  notifiers_.erase(it);
  return true;
}

PointerClass Runtime::classify(const void* p, std::size_t bytes) const {
  const auto addr = reinterpret_cast<std::uint64_t>(p);
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const DeviceAllocator& a = devices_[i]->allocator;
    if (!a.in_address_space(addr)) continue;
    PointerClass c;
    c.device = static_cast<int>(i);
    c.kind = a.contains(addr, std::max<std::size_t>(bytes, 1)) ? PointerClass::kDevice : PointerClass::kBadDevice;
    return c;
  }
  return PointerClass{};
}

std::vector<OpPtr> Runtime::unfinished_ops(int dev, const HostThread* t) const {
  std::vector<OpPtr> ops;
  for (const auto& [raw, q] : busy_queues_) {
    if (t != nullptr && t->host_func_op != nullptr && q->running.get() == t->host_func_op) continue;
    if ((dev < 0 || q->device == dev) && q->last && !q->last->done) ops.push_back(q->last);
  }
  std::sort(ops.begin(), ops.end(), [](const OpPtr& a, const OpPtr& b) { return a->seq < b->seq; });
  return ops;
}

cnrtRet_t Runtime::take_fault(QueueState& q, std::string* message) {
  if (q.fault == cnrtSuccess) return cnrtSuccess;
  const cnrtRet_t code = q.fault;
  *message = std::move(q.fault_message);
  q.fault = cnrtSuccess;
  q.fault_message.clear();
  return code;
}

cnrtRet_t Runtime::take_device_fault(int dev, std::string* message) {
  std::vector<QueueState*> qs{device(dev).default_queue.get()};
  for (const auto& [id, q] : queues_)
    if (q->device == dev) qs.push_back(q.get());
  std::sort(qs.begin() + 1, qs.end(), [](const QueueState* a, const QueueState* b) { return a->id < b->id; });
  cnrtRet_t first = cnrtSuccess;
  for (QueueState* q : qs) {
    std::string m;
    const cnrtRet_t code = take_fault(*q, &m);
    if (code != cnrtSuccess && first == cnrtSuccess) {
      first = code;
      *message = std::move(m);
    }
  }
  return first;
}

void Runtime::reset_device(int dev) {
  DeviceState& d = device(dev);
  d.allocator.release_all();
  for (auto it = queues_.begin(); it != queues_.end();) it = it->second->device == dev ? queues_.erase(it) : std::next(it);
  for (auto it = notifiers_.begin(); it != notifiers_.end();)
    it = it->second->device == dev ? notifiers_.erase(it) : std::next(it);
  d.live_queues = 0;
  d.live_notifiers = 0;
  d.default_queue = std::make_shared<QueueState>();
  d.default_queue->device = dev;
  d.default_queue->track = "default queue";
}

void Runtime::note_allocation(int dev, Picos at) {
  if (!trace_recording_.load()) return;
  counter_samples_.push_back({dev, at, device(dev).allocator.reserved_bytes()});
  wake_sim();
}

}  // namespace mlusim::driver
