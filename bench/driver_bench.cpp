// Driver overheads and host-link accuracy, through the public C API (tiny.yaml).
//   BM_TinyMemcpy/<dir>: host (real) microseconds per synchronous 4-byte cnrtMemcpy: the cost of
//     a round trip to the simulation thread plus the simulated copy.
//   BM_EmptyKernelLaunch: host microseconds per cnrtInvokeKernel of an empty kernel (launches are
//     asynchronous; the queue is synchronised every 256 launches, included in the time).
//   BM_EmptyKernelLaunchSync: launch + cnrtQueueSync per iteration.
//   BM_HostLinkBandwidth/<bytes>/<pinned>: simulated GB/s of a host-to-device copy measured with
//     notifiers, next to the configured rate (`configured_GBps`) and their ratio; large copies
//     approach 1.0 (latency makes small ones slower).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cnrt.h"
#include "mlusim/sim/config.h"
#include "mlusim_ext.h"

MLUSIM_KERNEL(bench_empty_kernel, ()) {}

namespace {

void check(cnrtRet_t r, const char* what) {
  if (r != cnrtSuccess) {
    std::fprintf(stderr, "%s failed: %s (%s)\n", what, cnrtGetErrorName(r), mlusimGetLastErrorMessage());
    std::abort();
  }
}

void load_tiny() { check(mlusimLoadConfig("tiny"), "mlusimLoadConfig"); }

void BM_TinyMemcpy(benchmark::State& state) {
  load_tiny();
  const bool to_device = state.range(0) == 0;
  void* d = nullptr;
  check(cnrtMalloc(&d, 4), "cnrtMalloc");
  float h = 1.0f;
  for (auto _ : state) {
    if (to_device) {
      check(cnrtMemcpy(d, &h, sizeof h, cnrtMemcpyHostToDev), "cnrtMemcpy");
    } else {
      check(cnrtMemcpy(&h, d, sizeof h, cnrtMemcpyDevToHost), "cnrtMemcpy");
    }
  }
  state.SetLabel(to_device ? "HtoD 4 B" : "DtoH 4 B");
  check(cnrtFree(d), "cnrtFree");
}
BENCHMARK(BM_TinyMemcpy)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_EmptyKernelLaunch(benchmark::State& state) {
  load_tiny();
  cnrtQueue_t q = nullptr;
  check(cnrtQueueCreate(&q), "cnrtQueueCreate");
  std::size_t launches = 0;
  for (auto _ : state) {
    check(cnrtInvokeKernel(bench_empty_kernel, cnrtDim3_t{1, 1, 1}, cnrtFuncTypeBlock, nullptr, 0, q), "cnrtInvokeKernel");
    if (++launches % 256 == 0) check(cnrtQueueSync(q), "cnrtQueueSync");
  }
  check(cnrtQueueSync(q), "cnrtQueueSync");
  check(cnrtQueueDestroy(q), "cnrtQueueDestroy");
}
BENCHMARK(BM_EmptyKernelLaunch)->Unit(benchmark::kMicrosecond);

void BM_EmptyKernelLaunchSync(benchmark::State& state) {
  load_tiny();
  cnrtQueue_t q = nullptr;
  check(cnrtQueueCreate(&q), "cnrtQueueCreate");
  for (auto _ : state) {
    check(cnrtInvokeKernel(bench_empty_kernel, cnrtDim3_t{1, 1, 1}, cnrtFuncTypeBlock, nullptr, 0, q), "cnrtInvokeKernel");
    check(cnrtQueueSync(q), "cnrtQueueSync");
  }
  check(cnrtQueueDestroy(q), "cnrtQueueDestroy");
}
BENCHMARK(BM_EmptyKernelLaunchSync)->Unit(benchmark::kMicrosecond);

void BM_HostLinkBandwidth(benchmark::State& state) {
  load_tiny();
  const mlusim::sim::HardwareConfig config = mlusim::sim::load_config("tiny");
  const std::size_t bytes = static_cast<std::size_t>(state.range(0));
  const bool pinned = state.range(1) != 0;
  void* d = nullptr;
  void* h = nullptr;
  std::vector<char> pageable;
  check(cnrtMalloc(&d, bytes), "cnrtMalloc");
  if (pinned) {
    check(cnrtHostMalloc(&h, bytes), "cnrtHostMalloc");
  } else {
    pageable.resize(bytes);
    h = pageable.data();
  }
  cnrtQueue_t q = nullptr;
  cnrtNotifier_t start = nullptr, stop = nullptr;
  check(cnrtQueueCreate(&q), "cnrtQueueCreate");
  check(cnrtNotifierCreate(&start), "cnrtNotifierCreate");
  check(cnrtNotifierCreate(&stop), "cnrtNotifierCreate");
  double simulated_gbps = 0;
  for (auto _ : state) {
    check(cnrtPlaceNotifier(start, q), "cnrtPlaceNotifier");
    check(cnrtMemcpyAsync_V3(d, h, bytes, q, cnrtMemcpyHostToDev), "cnrtMemcpyAsync_V3");
    check(cnrtPlaceNotifier(stop, q), "cnrtPlaceNotifier");
    check(cnrtWaitNotifier(stop), "cnrtWaitNotifier");
    float ms = 0;
    check(cnrtNotifierElapsedTime(start, stop, &ms), "cnrtNotifierElapsedTime");
    // The copy was enqueued one API call after `start`: take that host time out.
    const double copy_s = ms * 1e-3 - config.api_call_ns * 1e-9;
    simulated_gbps = static_cast<double>(bytes) / copy_s / 1e9;
  }
  const double configured = pinned ? config.host_link_bandwidth_gbps : config.host_link_pageable_gbps;
  state.counters["simulated_GBps"] = simulated_gbps;
  state.counters["configured_GBps"] = configured;
  state.counters["ratio"] = simulated_gbps / configured;
  state.SetLabel(pinned ? "pinned" : "pageable");
  check(cnrtNotifierDestroy(start), "cnrtNotifierDestroy");
  check(cnrtNotifierDestroy(stop), "cnrtNotifierDestroy");
  check(cnrtQueueDestroy(q), "cnrtQueueDestroy");
  check(cnrtFree(d), "cnrtFree");
  if (pinned) check(cnrtFreeHost(h), "cnrtFreeHost");
}
BENCHMARK(BM_HostLinkBandwidth)
    ->ArgsProduct({{4096, 1 << 20, 16 << 20}, {1, 0}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
