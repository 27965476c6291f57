// Kernel-side work splitting and the triple-buffered load/compute/store loop shared by the NN
// kernels.
#pragma once

#include <cstddef>
#include <utility>

#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::nn {

// This task's share [begin, end) of `items` work items: contiguous, sizes differ by at most one.
inline std::pair<std::size_t, std::size_t> task_range(std::size_t items) {
  const std::size_t t = dev::task_id(), n = dev::task_dim();
  return {items * t / n, items * (t + 1) / n};
}

constexpr int kPipelineBuffers = 3;

// Runs `steps` steps over kPipelineBuffers buffer sets (step s uses set s % 3):
//   load(s, set)    issues step s's async loads;
//   compute(s, set) works on them once they landed;
//   store(s, set)   issues step s's async stores (it may narrow dtypes in place first).
// While step s computes, step s+1's loads and step s-1's stores are in flight, so a DRAM-bound
// kernel keeps its DMA busy; sync_io (which waits for all of a core's copies) comes once per step,
// before the buffers it frees are reused.
template <class Load, class Compute, class Store>
void run_pipelined(std::size_t steps, Load&& load, Compute&& compute, Store&& store) {
  if (steps == 0) return;
  load(std::size_t{0}, 0);
  for (std::size_t s = 0; s < steps; ++s) {
    dev::sync_io();  // step s landed; step s-2's stores retired (set (s+1) % 3 is free)
    if (s > 0) store(s - 1, static_cast<int>((s - 1) % kPipelineBuffers));
    if (s + 1 < steps) load(s + 1, static_cast<int>((s + 1) % kPipelineBuffers));
    compute(s, static_cast<int>(s % kPipelineBuffers));
  }
  dev::sync_io();
  store(steps - 1, static_cast<int>((steps - 1) % kPipelineBuffers));
  dev::sync_io();
}

}  // namespace mlusim::mlu::nn
