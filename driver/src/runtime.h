// The runtime behind cnrt.h: the simulation thread that owns SystemC, the devices' address
// spaces, the queue and notifier registries, and the machinery that keeps host clocks and
// simulated time consistent.
//
// Threads and locking. One mutex (`mu`) guards all runtime state. Host threads validate and
// enqueue under it and block on `done_cv` for synchronous calls. The simulation thread is the
// only thread that touches sim::Simulator and its devices; it never calls into the simulator
// while holding `mu`, and completion callbacks (which run inside the simulation, on that thread)
// take `mu` themselves.
//
// Time. Host clocks are absolute SystemC picoseconds (HostThread::clock). An op is stamped with
// the submitting thread's clock and starts at max(stamp, end of the queue's previous op). The
// simulation thread advances simulated time only as far as something needs it:
//   - eagerly to the stamp of a queue head waiting for its time (so work starts when submitted),
//   - to the completion of an op a host thread blocks on (the callback pauses the simulation
//     there, so a single host thread never sees the simulation run ahead of its clock),
//   - to the clock of a thread querying (cnrtQueueQuery & co.),
// and never past the clock of a running host function (a "hold"), whose thread may still
// enqueue work in the past of anything else. A host function that returned with its clock
// ahead (it advanced time), and a modelled wait (mlusimQueueWaitUntil: a collective's end),
// complete at their time lazily: the simulation gets there when a host thread blocks or queries, or when an eager
// target lies beyond it, never on its own, so work the host queues meanwhile on other queues
// starts at its own stamp instead of after a jump that depended on real-time thread timing. With several host threads the simulation runs to
// the furthest point needed, so a lagging thread's work may start later than its stamp:
// determinism is promised for one host thread only.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "activity_log.h"
#include "cnrt.h"
#include "device_allocator.h"
#include "host_func_pool.h"
#include "host_thread.h"
#include "mlusim/sim/config.h"
#include "pinned_memory.h"
#include "queue_ops.h"

namespace mlusim::driver {

constexpr Picos kNever = ~Picos{0};
constexpr int kMaxQueuesPerDevice = 4096;       // cnrtAttrQueueSize
constexpr int kMaxNotifiersPerDevice = 65536;   // cnrtAttrNotifierSize

struct DeviceState {
  DeviceState(std::uint64_t base, std::uint64_t capacity) : allocator(base, capacity) {}
  DeviceAllocator allocator;
  QueuePtr default_queue;
  int live_queues = 0;
  int live_notifiers = 0;
  // mlusimInjectKernelFault: the kernel launch that brings this to 0 faults (0 = disarmed).
  std::uint64_t kernel_fault_countdown = 0;
  // Blocking host calls that waited for this device's work since the stats epoch, and the
  // simulated host time they waited (mlusimDeviceStats_t::host_syncs / host_sync_wait_ns).
  std::uint64_t host_syncs = 0;
  Picos host_sync_wait_ps = 0;
};

// Where a pointer points, as far as the runtime knows.
struct PointerClass {
  enum Kind { kHost, kDevice, kBadDevice } kind = kHost;
  int device = -1;  // for kDevice / kBadDevice
};

class Runtime {
 public:
  // The running runtime, started on first use with $MLUSIM_CONFIG (default preset otherwise).
  // nullptr when it cannot start; *error then says why.
  static Runtime* get(std::string* error);
  // Starts the runtime with `config`, or rebuilds the running one (mlusimLoadConfig).
  static cnrtRet_t load(const sim::HardwareConfig& config, const std::string& name,
                        const std::vector<sim::ConfigOverride>& overrides, HostThread& t);
  // Name and overrides the running runtime was loaded from (mlusimReset).
  static void current_source(std::string* name, std::vector<sim::ConfigOverride>* overrides);

  std::mutex mu;

  // ---- per call (host threads) ----
  // Brings a thread's state into the current generation (clock, device) on its first call.
  void adopt(HostThread& t);
  Picos api_cost() const { return api_cost_ps_.load(std::memory_order_relaxed); }
  Picos launch_cost() const { return launch_cost_ps_.load(std::memory_order_relaxed); }
  // After a call on a host-function thread: the hold follows its clock.
  void update_hold(HostThread& t);

  // ---- state (mu held) ----
  const sim::HardwareConfig& config() const { return config_; }
  int device_count() const { return static_cast<int>(devices_.size()); }
  DeviceState& device(int i) { return *devices_[static_cast<std::size_t>(i)]; }
  Picos epoch() const { return epoch_ps_; }
  Picos sim_now() const { return sim_now_ps_; }
  std::uint64_t generation() const { return generation_.load(); }

  QueuePtr find_queue(cnrtQueue_t handle, const HostThread& t);  // null if invalid
  NotifierPtr find_notifier(cnrtNotifier_t handle);               // null if invalid/NULL
  cnrtQueue_t create_queue(int device, int priority);             // nullptr at the limit
  bool destroy_queue(cnrtQueue_t handle);
  cnrtNotifier_t create_notifier(int device, unsigned flags);     // nullptr at the limit
  bool destroy_notifier(cnrtNotifier_t handle);
  PointerClass classify(const void* p, std::size_t bytes) const;
  PinnedMemory& pinned() { return pinned_; }
  // Queues of `device` (-1: all devices) with unfinished work: their last ops. A host
  // function's own queue is left out when `t` runs it (that queue cannot drain until it returns).
  std::vector<OpPtr> unfinished_ops(int device, const HostThread* t = nullptr) const;
  // Takes (and clears) the first unreported kernel fault of `q`; cnrtSuccess if none.
  cnrtRet_t take_fault(QueueState& q, std::string* message);
  // Same over every queue of `device`, default queue included.
  cnrtRet_t take_device_fault(int device, std::string* message);
  // Frees everything of `device` and renews its default queue (cnrtDeviceReset; work drained).
  void reset_device(int device);
  // Records an allocator counter sample for the trace (device memory in use).
  void note_allocation(int device, Picos at);

  // ---- execution (mu held by the caller, through `lk`) ----
  // Stamps `op` with t's clock and appends it to `q`.
  void submit(const OpPtr& op, const QueuePtr& q, const HostThread& t);
  // Blocks until every op has completed; t's clock moves to the latest end. `api` names the
  // blocking call: a wait for unfinished work counts as a host sync of t's device (statistics,
  // activity record).
  // `count_as_sync`: the wait is a blocking host call (statistics, activity records); false for
  // mlusimNotifierPeek, whose caller restores its clock afterwards.
  void wait(std::unique_lock<std::mutex>& lk, const std::vector<OpPtr>& ops, HostThread& t, const char* api,
            bool count_as_sync = true);

  // mlusimActivityEnable/Read (mu held).
  ActivityLog activity;

 private:
  void record_activity(const Op& op);

 public:
  // Blocks until the simulation has reached `at` (or cannot: a host function holds it back).
  void reach(std::unique_lock<std::mutex>& lk, Picos at);
  // Runs `fn` on the simulation thread (outside the simulation and without `mu`) and waits.
  void run_on_sim(std::unique_lock<std::mutex>& lk, std::function<void()> fn);
  // Whether an op has completed as seen from a host clock.
  static bool done_by(const Op& op, Picos clock) { return op.done && op.end_ps <= clock; }

  // Simulation-thread settings.
  void set_timing_only(bool on) { timing_only_ = on; }  // mu held; applied by the caller on sim
  bool timing_only() const { return timing_only_; }
  void set_fault_printing(bool on) { print_faults_.store(on); }
  void set_trace_recording(bool on) { trace_recording_.store(on); }

 private:
  Runtime() = default;
  ~Runtime() = default;  // never destroyed: see shutdown()

  static Runtime* start(const sim::HardwareConfig& config, std::string* error);
  void build_on_sim(const sim::HardwareConfig& config, std::string* error);  // simulation thread
  cnrtRet_t rebuild(const sim::HardwareConfig& config, HostThread& t);
  void shutdown();

  // fork: park the simulation thread and hold `mu` across fork().
  void fork_prepare();
  void fork_parent();
  void fork_child();
  static void on_fork_prepare();
  static void on_fork_parent();
  static void on_fork_child();
  static void on_exit();

  // ---- simulation thread ----
  void sim_loop();
  Picos now_abs() const;
  void pump(std::unique_lock<std::mutex>& lk);  // starts queue heads whose time has come
  void start_op(const OpPtr& op);               // without mu
  void start_op_unchecked(const OpPtr& op);     // start_op without its exception guard
  void finish(const OpPtr& op, cnrtRet_t error, const std::string& message);  // without mu
  // Completes `op` (and the waits it releases); true if a host thread waits on one of them.
  bool complete_locked(const OpPtr& op, cnrtRet_t error, const std::string& message);
  void run_host_func(const OpPtr& op, Picos start);  // on a pool thread
  void trace_op(const Op& op);                      // simulation thread, mu held
  void flush_trace_counters();                      // simulation thread, mu held
  void settle();  // processes the events at the current simulated time
  Picos hold_limit() const;

  struct Timer {
    Picos at = 0;
    std::uint64_t seq = 0;
    QueuePtr queue;  // retry this queue's head, or
    OpPtr finish;    // complete this op (a host function that ended at `at`)
    bool operator>(const Timer& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  struct TimeWaiter {
    Picos at = 0;
    bool satisfied = false;
  };
  struct Command {
    std::function<void()> fn;
    bool done = false;
  };
  struct HostFuncEnd {
    OpPtr op;
    Picos at = 0;
  };
  struct CounterSample {
    int device = 0;
    Picos at = 0;
    std::uint64_t bytes = 0;
  };

  sim::HardwareConfig config_{};
  std::string config_name_;
  std::vector<sim::ConfigOverride> overrides_;
  std::vector<std::unique_ptr<DeviceState>> devices_;
  std::unordered_map<std::uint64_t, QueuePtr> queues_;
  std::unordered_map<std::uint64_t, NotifierPtr> notifiers_;
  std::unordered_map<QueueState*, QueuePtr> busy_queues_;  // queues with unfinished work
  PinnedMemory pinned_;
  std::uint64_t next_seq_ = 1;
  std::uint64_t next_timer_seq_ = 0;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<Picos> api_cost_ps_{0};
  std::atomic<Picos> launch_cost_ps_{0};
  std::atomic<bool> print_faults_{true};
  std::atomic<bool> trace_recording_{false};
  bool timing_only_ = false;
  Picos epoch_ps_ = 0;
  Picos sim_now_ps_ = 0;  // how far the simulation has run (absolute)

  // simulation thread coordination (mu)
  std::condition_variable sim_cv;   // wakes the simulation thread (through wake_sim)
  bool wake_pending_ = false;       // something changed since the simulation thread last looked
  void wake_sim() {                 // mu held
    wake_pending_ = true;
    sim_cv.notify_all();
  }
  std::condition_variable done_cv;  // wakes host threads waiting for ops, time or commands
  std::deque<QueuePtr> kicked_;     // queues whose head may be startable
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  std::size_t eager_timers_ = 0;    // timers_ entries with a queue (the others are lazy)
  std::vector<TimeWaiter*> time_waiters_;
  std::vector<Op*> waited_ops_;     // ops host threads block on
  std::map<std::uint64_t, Picos> holds_;  // running host functions: id -> their thread's clock
  std::deque<Command*> commands_;
  std::vector<HostFuncEnd> host_func_ends_;
  std::vector<CounterSample> counter_samples_;
  bool stop_ = false;
  bool fork_pending_ = false;
  bool parked_ = false;
  bool orphaned_ = false;  // fork child: this runtime's threads are gone; callbacks do nothing

  // simulation thread only
  bool pumping_ = false;
  bool in_run_ = false;    // inside sc_start: pause() is allowed
  bool paused_ = false;    // a completion paused the current run
  bool drained_ = true;    // the last run_until_idle found no activity and nothing started since

  std::thread sim_thread_;
  HostFuncPool pool_;
};

// Handle encoding: ids are never reused, so a stale handle never aliases a new object.
cnrtQueue_t queue_handle(std::uint64_t id);
cnrtNotifier_t notifier_handle(std::uint64_t id);

}  // namespace mlusim::driver
