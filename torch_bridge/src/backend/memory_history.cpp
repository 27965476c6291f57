// The caching allocator's history for PyTorch's memory tools: what
// torch.cuda.memory._record_memory_history() records for CUDA (alloc / free / segment events with
// the Python stack of each), so torch.mlu.memory._snapshot() has CUDA's format and
// torch.cuda._memory_viz and https://pytorch.org/memory_viz read it.
//
// Events come from the allocator's sink (with its lock held): gathering a stack there is what
// CUDA's allocator does too (CapturedTraceback::gather only records code pointers; symbolizing
// happens later, in memory_history(), with the GIL held). Times are simulated host time.
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <mlusim_ext.h>
#include <torch/csrc/profiler/combined_traceback.h>

#include "backend/internal.h"
#include "mlusim/torch/api.h"
#include "mlusim/torch/caching_allocator.h"

namespace mlusim::bridge {
namespace {

struct Recorded {
  MemoryTraceEntry entry;  // frames empty until symbolized
  std::shared_ptr<torch::CapturedTraceback> stack;
};

struct History {
  std::mutex mu;
  // Read without `mu` first: the sink runs on every allocation, recording or not (as the trace
  // recorder's flag).
  std::atomic<bool> enabled{false};
  bool stacks = false;
  std::size_t max_entries = 0;
  std::map<int, std::deque<Recorded>> traces;                              // per device
  std::map<std::uintptr_t, std::shared_ptr<torch::CapturedTraceback>> live;  // block -> alloc stack
};

History& history() {
  static History* h = new History();  // used by the allocator until exit: never destroyed
  return *h;
}

const char* action_of(AllocatorEventKind kind) {
  switch (kind) {
    case AllocatorEventKind::kMalloc: return "alloc";
    case AllocatorEventKind::kFree: return "free_completed";
    case AllocatorEventKind::kSegmentAlloc: return "segment_alloc";
    case AllocatorEventKind::kSegmentFree: return "segment_free";
    case AllocatorEventKind::kOutOfMemory: return "oom";
  }
  return "unknown";
}

void push(History& h, int device, Recorded r) {
  std::deque<Recorded>& trace = h.traces[device];
  trace.push_back(std::move(r));
  while (trace.size() > h.max_entries) trace.pop_front();
}

std::vector<MemoryFrame> frames_of(const torch::SymbolizedTracebacks& s, std::size_t index) {
  std::vector<MemoryFrame> frames;
  for (const std::uint64_t f : s.tracebacks.at(index)) {
    const torch::unwind::Frame& frame = s.all_frames.at(f);
    frames.push_back(MemoryFrame{frame.filename, frame.funcname, frame.lineno});
  }
  return frames;
}

}  // namespace

void memory_history_add(const AllocatorEvent& event) {
  History& h = history();
  if (!h.enabled.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(h.mu);
  if (!h.enabled.load(std::memory_order_relaxed)) return;
  Recorded r;
  r.entry.addr = event.address;
  r.entry.size = event.size;
  r.entry.stream = reinterpret_cast<std::uintptr_t>(event.queue);
  std::uint64_t ps = 0;
  if (mlusimGetHostTimePs(&ps) != cnrtSuccess) cnrtGetLastError();
  r.entry.time_us = static_cast<double>(ps) / 1e6;
  if (h.stacks) r.stack = torch::CapturedTraceback::gather(/*python=*/true, /*script=*/false, /*cpp=*/false);
  if (event.kind == AllocatorEventKind::kOutOfMemory) {
    std::size_t free_bytes = 0, total = 0;
    if (cnrtMemGetInfo(&free_bytes, &total) == cnrtSuccess) r.entry.device_free = free_bytes;
    else
      cnrtGetLastError();
  }
  if (event.kind == AllocatorEventKind::kMalloc) h.live[event.address] = r.stack;
  if (event.kind == AllocatorEventKind::kFree) {
    h.live.erase(event.address);
    // A free completes as it is requested here (a block still used by another queue is freed by
    // the allocator only once that queue is done): CUDA's trace has both actions.
    Recorded requested = r;
    requested.entry.action = "free_requested";
    push(h, event.device, std::move(requested));
  }
  r.entry.action = action_of(event.kind);
  push(h, event.device, std::move(r));
}

void record_memory_history(bool enabled, bool stacks, std::size_t max_entries) {
  History& h = history();
  std::lock_guard<std::mutex> lock(h.mu);
  h.enabled = enabled;
  h.stacks = stacks;
  h.max_entries = max_entries;
  if (enabled) {
    h.traces.clear();
    h.live.clear();
  }
}

MemoryHistory memory_history() {
  History& h = history();
  std::vector<std::vector<Recorded>> copies;
  std::vector<std::pair<std::uintptr_t, std::shared_ptr<torch::CapturedTraceback>>> live;
  {
    std::lock_guard<std::mutex> lock(h.mu);
    const int devices = device_count();
    copies.resize(static_cast<std::size_t>(devices));
    for (const auto& [device, trace] : h.traces)
      if (device >= 0 && device < devices) copies[static_cast<std::size_t>(device)].assign(trace.begin(), trace.end());
    live.assign(h.live.begin(), h.live.end());
  }
  // One symbolize call for every stack (it dedupes frames).
  std::vector<torch::CapturedTraceback*> stacks;
  for (const auto& trace : copies)
    for (const Recorded& r : trace)
      if (r.stack) stacks.push_back(r.stack.get());
  for (const auto& [address, stack] : live)
    if (stack) stacks.push_back(stack.get());
  const torch::SymbolizedTracebacks symbolized = torch::symbolize(stacks);

  MemoryHistory out;
  std::size_t next = 0;
  for (auto& trace : copies) {
    std::vector<MemoryTraceEntry> entries;
    for (Recorded& r : trace) {
      if (r.stack) r.entry.frames = frames_of(symbolized, next++);
      entries.push_back(std::move(r.entry));
    }
    out.device_traces.push_back(std::move(entries));
  }
  for (const auto& [address, stack] : live)
    out.block_frames.emplace_back(address, stack ? frames_of(symbolized, next++) : std::vector<MemoryFrame>{});
  return out;
}

}  // namespace mlusim::bridge
