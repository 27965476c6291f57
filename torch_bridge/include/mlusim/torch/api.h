// The torch-free C++ API of the PyTorch bridge (libmlusim_torch.so): what torch_mlu (the Python
// package) and C++ programs (the mlusim CLI, libtorch users) call besides ATen itself. It
// includes no torch header, so code using it compiles fast.
//
// Devices are the simulated MLUs of the loaded config, seen by torch as "mlu:<i>".
// Queues (the c10 streams of this device) are named by (device, id): id 0 is the device's
// default queue (CNRT's NULL queue), ids 1..kQueuePoolSize a pool of queues created on first
// use, handed out round robin as torch.cuda hands out its pool streams.
//
// Errors are thrown as std::runtime_error (std::invalid_argument for bad arguments) with a
// sentence naming the call and, for driver failures, the cnrt error and the driver's message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <cnrt.h>

namespace mlusim::bridge {

// Returns true. The backend registers itself when the library is loaded; calling init() from a
// program also keeps the library linked where --as-needed would drop it.
bool init();

// ---- devices -------------------------------------------------------------------------------
int device_count();  // 0 when the runtime cannot start (as torch requires; no exception)
struct DeviceProperties {
  std::string name;                  // "MLU (mlusim <config>)"
  std::uint64_t total_memory = 0;    // bytes of DRAM
  int clusters = 0, cores_per_cluster = 0;
  double core_clock_mhz = 0;
  int major = 0, minor = 0;          // compute capability (3.0: MLU300 class)
};
DeviceProperties device_properties(int device = -1);
int current_device();
void set_device(int device);
// Waits for all work queued on every queue of `device` (-1: the current device).
void synchronize(int device = -1);

// ---- queues (c10 streams) ------------------------------------------------------------------
constexpr int kQueuePoolSize = 32;
std::int64_t current_queue_id(int device = -1);
void set_current_queue_id(int device, std::int64_t id);
// The next pool queue of `device`, round robin (torch.cuda.Stream() semantics).
std::int64_t next_pool_queue_id(int device = -1);
// The CNRT handle of a queue (NULL for id 0); created on first use.
cnrtQueue_t queue_handle(int device, std::int64_t id);
bool query_queue(int device, std::int64_t id);        // all queued work finished?
void synchronize_queue(int device, std::int64_t id);  // wait for it

// ---- notifiers (events) --------------------------------------------------------------------
// Handles are CNRT notifiers as integers. A notifier lives on the device it was created on.
std::uintptr_t notifier_create(int device, bool enable_timing);
void notifier_destroy(std::uintptr_t notifier) noexcept;  // errors (e.g. a stale handle) ignored
void notifier_record(std::uintptr_t notifier, int device, std::int64_t queue_id);
bool notifier_query(std::uintptr_t notifier);
void notifier_synchronize(std::uintptr_t notifier);
// Simulated milliseconds from start's to end's completion (both recorded and completed).
double notifier_elapsed_ms(std::uintptr_t start, std::uintptr_t end);
// Work queued on the queue after this call waits for the notifier's last record.
void queue_wait_notifier(int device, std::int64_t queue_id, std::uintptr_t notifier);

// ---- memory (the caching allocator) --------------------------------------------------------
// torch.cuda.memory_stats' flat keys, sorted. Devices never used give all zeros.
std::vector<std::pair<std::string, std::int64_t>> memory_stats(int device);
void reset_peak_memory_stats(int device);
void reset_accumulated_memory_stats(int device);
void empty_cache();
// MLU_ALLOC_CONF syntax; set_ replaces all settings (keys not named return to defaults).
std::string allocator_settings();
void set_allocator_settings(const std::string& conf);
void set_memory_fraction(double fraction, int device);
// torch.cuda.memory_snapshot() as JSON: a list of segments with their blocks.
std::string memory_snapshot_json();
// torch.cuda.caching_allocator_alloc / _delete: a block of the caching allocator by address.
// std::invalid_argument for a pointer that is not a live block from caching_allocator_alloc.
std::uintptr_t caching_allocator_alloc(std::size_t size, int device, std::int64_t queue_id);
void caching_allocator_delete(std::uintptr_t ptr);
// {free, total} bytes of the device's DRAM (cnrtMemGetInfo).
std::pair<std::size_t, std::size_t> mem_get_info(int device);
// Blocks handed out by the caching allocator and not freed, over all devices.
std::size_t live_allocations();

// Checks MLU_ALLOC_CONF, MLU_NO_MEMORY_CACHING and TORCH_MLU_CPU_FALLBACK without starting the
// runtime; throws with a message naming the variable for a bad value.
void check_environment();

// ---- CPU fallback --------------------------------------------------------------------------
// Off by default (an op without a device kernel raises); TORCH_MLU_CPU_FALLBACK=1 or this call
// turns it on: such ops then run on the CPU, with one warning per op, and are counted.
void set_cpu_fallback(bool enabled);
bool cpu_fallback_enabled();
std::vector<std::pair<std::string, std::uint64_t>> cpu_fallback_counts();  // "aten::op.overload" -> calls
void reset_cpu_fallback_counts();

// ---- random --------------------------------------------------------------------------------
// The default device generators (one per device, torch's default generators for "mlu") that
// device random ops use: a Philox-style (seed, offset) pair. manual_seed seeds every device and
// restarts the offsets.
constexpr std::uint64_t kDefaultSeed = 67280421310721ull;  // torch's default_rng_seed_val
void manual_seed(std::uint64_t seed);
void manual_seed_device(int device, std::uint64_t seed);
std::uint64_t initial_seed(int device = -1);
// Reserves `count` random numbers on `device`: returns {seed, first offset}.
std::pair<std::uint64_t, std::uint64_t> reserve_random(int device, std::uint64_t count);
// The default generator's {seed, offset} (torch.mlu.get_rng_state's 16 bytes) and setting it.
std::pair<std::uint64_t, std::uint64_t> rng_state(int device);
void set_rng_state(int device, std::uint64_t seed, std::uint64_t offset);

// ---- configs, traces, reports --------------------------------------------------------------
// Replaces the simulated system (mlusimLoadConfigWithOverrides), e.g. ("tiny", {"devices=2"}).
// Refuses while device tensors are alive (they would point into the old system's freed memory);
// empties the allocator cache first. Queues and notifiers of the old system become invalid.
void load_config(const std::string& name_or_path, const std::vector<std::string>& overrides = {});
std::string config_name();
// Timing-only mode (mlusimSetTimingOnly): kernels skip floating-point arithmetic (results are
// garbage) but take the same simulated time; for fast performance runs of whole models.
void set_timing_only(bool enabled);
// Test-only (mlusimInjectKernelFault): the `nth` kernel launched on `device` (-1: current) from
// now faults when it runs; the op that launched it returns, the next sync raises naming the
// kernel and the op. 0 disarms.
void inject_kernel_fault(int device, std::uint64_t nth);

// ---- memory history: torch.mlu.memory._record_memory_history / _snapshot (CUDA's format) ----
struct MemoryFrame {
  std::string filename;
  std::string name;
  std::uint64_t line = 0;
};
struct MemoryTraceEntry {
  std::string action;          // alloc, free_requested, free_completed, segment_alloc, segment_free, oom
  std::uintptr_t addr = 0;     // block or segment address (0 for oom)
  std::size_t size = 0;        // block or segment bytes; the request for oom
  std::uintptr_t stream = 0;   // the queue handle
  double time_us = 0;          // simulated host time of the allocating thread, us
  std::size_t device_free = 0; // oom: free device memory then
  std::vector<MemoryFrame> frames;  // Python stack of the call, innermost first (when stacks are on)
};
struct MemoryHistory {
  std::vector<std::vector<MemoryTraceEntry>> device_traces;  // one list per device, oldest first
  std::vector<std::pair<std::uintptr_t, std::vector<MemoryFrame>>> block_frames;  // live block -> its alloc stack
};
// Starts (clearing earlier history) or stops recording the caching allocator's events; `stacks`
// gathers the Python stack of every event (torch's CapturedTraceback, as CUDA's allocator does);
// at most `max_entries` newest events are kept per device.
void record_memory_history(bool enabled, bool stacks, std::size_t max_entries);
// The recorded history with its stacks symbolized. Call with the GIL held (Python frames).
MemoryHistory memory_history();
// Trace capture: level 1 = ops (kernels, copies, allocator events and counters), 2 = + intrinsics.
void trace_begin(int level);
void trace_end();
// Writes the driver's trace and adds the allocator's events (track "allocator", counters
// "memory reserved (bytes)" and "torch allocated (bytes)") to it.
void trace_write(const std::string& path);
// The cycle report of `device` (-1: current): kernels, engines, memory traffic (driver
// statistics since the last reset_stats), allocator statistics and CPU-fallback ops.
std::string cycle_report(int device = -1);
std::string cycle_report_json(int device = -1);
// The driver's statistics of `device` (mlusimDeviceStats_t's scalar fields: elapsed_ns, kernels,
// allocated_bytes, peak_allocated_bytes, live_allocations, ...).
std::vector<std::pair<std::string, double>> device_stats(int device = -1);
// Starts a new statistics epoch on the device (mlusimResetStats) and clears fallback counts.
void reset_stats(int device = -1);
// Drops every line of the device's L2 cache (mlusimFlushL2): the next op starts from a cold L2.
void flush_l2(int device = -1);
// ATen kernels of the device run so far in this process (outermost calls, every device and
// thread): cheap to poll, for progress displays.
std::uint64_t op_calls();

// ---- the "cncl" process group's transport (src/distributed/process_group_cncl.h) ---------------
// Each rank process simulates its own chip; ranks exchange tensors over Gloo and the collective's
// simulated time comes from the interconnect model, so the bytes move without simulated time.
// Copies `bytes` between host memory and device memory at once (mlusimMemcpyNoTime).
void memcpy_untimed(std::uintptr_t dst, std::uintptr_t src, std::size_t bytes, bool to_device);
// The calling thread's simulated host clock, ns (mlusimGetHostTime).
double host_time_ns();
// When `notifier`'s placement completes, ns on the host clock's scale, without waiting for it
// (mlusimNotifierPeek: the simulation runs ahead; the caller's clock stays).
double notifier_peek_ns(std::uintptr_t notifier);
// Advances the calling thread's host clock by `ns` (mlusimHostAdvance).
void host_advance(double ns);
// Queues on (device, queue_id) an operation that completes at host time `until_ns` (or as soon as
// the queue reaches it, if later): the collective's end as the interconnect model computed it.
// `label` names its span on the queue's track in traces ("cncl all_reduce 4.0 MiB").
void queue_hold_until(int device, std::int64_t queue_id, double until_ns, const std::string& label);
// The figures of the loaded config the collectives' time model uses.
struct InterconnectFigures {
  int devices = 1;
  double mlu_link_gbps = 0, mlu_link_latency_ns = 0;
  double host_link_gbps = 0, host_link_latency_ns = 0;
  double dram_gbps = 0, dram_latency_ns = 0;
  double launch_overhead_ns = 0;
  std::string mlu_link_topology;       // none | full_mesh | ring | explicit
  int chips_per_host = 16;
  double nic_gbps = 0, nic_latency_ns = 0;
  std::string config_name;
};
InterconnectFigures interconnect_figures();
// [start, end] of every kernel `device` ran since the last stats reset, ns on the host clock's scale
// (mlusimGetKernelRecord): what a collective's time can overlap with.
std::vector<std::pair<double, double>> kernel_spans(int device);

}  // namespace mlusim::bridge
