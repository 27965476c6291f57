// Internals shared by the backend's translation units (no torch headers here).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mlusim/torch/caching_allocator.h"

namespace mlusim::bridge {

// Starts the driver runtime and installs the fork and exit handlers (once per process; after the
// driver's own, so that ours run first at fork and exit).
void ensure_started();

// The process's caching allocator, created on first use from MLU_ALLOC_CONF /
// MLU_NO_MEMORY_CACHING (std::invalid_argument for bad settings). Never destroyed.
CachingAllocator& caching_allocator();
CachingAllocator* caching_allocator_if_created();

// "<what> failed: <name>: <driver message>", and the thread's last error cleared.
std::string cnrt_message(cnrtRet_t ret, const char* what);
void check(cnrtRet_t ret, const char* what);  // throws std::runtime_error

// Runs the calling thread's driver calls for `device` in a scope (restores the previous device).
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_;
};

// Forgets the queue pool, the per-thread device and queue caches (after a config reload or in a
// fork child: every handle of the old runtime is invalid).
void reset_runtime_state();

// Incremented whenever reset_runtime_state runs: caches of driver handles compare it.
std::uint64_t runtime_epoch();

// ---- the op table of the cycle report (report.cpp; fed by ops/op_support.cpp) ---------------
// One libmlu op run for ATen op `aten_op` on `device`: its theoretical MACs and minimum DRAM
// bytes, and the kernels it launched.
void op_table_add(int device, const char* aten_op, std::uint64_t macs, std::uint64_t bytes, std::uint32_t kernels);
// One call of `aten_op` (the outermost ATen kernel on its thread).
void op_table_count_call(int device, const char* aten_op);
void op_table_clear(int device);  // -1: every device (config reload)

// ---- traces (report.cpp) --------------------------------------------------------------------
void trace_recorder_begin();
void trace_recorder_end();
void trace_recorder_clear();        // stops recording and drops the events
void trace_recorder_drop_events();  // drops the events, recording goes on (config reload)
void trace_recorder_add(const AllocatorEvent& event);  // called from the allocator's sink
// memory_history.cpp: the allocator history of record_memory_history (api.h); allocator's sink.
void memory_history_add(const AllocatorEvent& event);
// Adds the recorded allocator events to a trace file the driver wrote.
void trace_merge_allocator_events(const std::string& path);

// ---- CPU fallback counts (fallback.cpp) ------------------------------------------------------
std::vector<std::pair<std::string, std::uint64_t>> fallback_counts_snapshot();

}  // namespace mlusim::bridge
