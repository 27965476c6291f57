// CNCL all-reduce bus bandwidth against message size, and against the analytic ring bound.
//
// BM_AllReduce/<bytes>/<ranks>: one fp32 sum all-reduce of <bytes> per rank on <ranks> chips of
// the mlu370-x8 preset (two chips per card; more chips with --set devices=N, every chip reaching
// every other over its own 200 GB/s MLU-Link port), in timing-only mode (no arithmetic; data still
// moves). BM_AllReduceServer/<bytes>/16: the same on the 16 chips of mlu370-x8-server (8 boards,
// MLU-Link within a board; the ring's hops between boards go through host memory, so B and a are
// those of a host-staged copy: 13 GB/s, 2 x (1000 + 120) ns). Time = device time, from a notifier placed on rank 0's queue before the calls to the
// last of the notifiers placed on every rank's queue after them (the host's launch cost, one
// kernel launch per rank, is host time and not in it). Counters (nccl-tests' definitions):
//   sim_us    the collective's simulated device time
//   algbw     bytes / time (GB/s)
//   busbw     algbw x 2(n-1)/n: what each link carried, comparable across rank counts
//   bound_us  the ring's analytic time 2(n-1) (a + S/(nB)), a = link latency + DRAM latency,
//             B = link bandwidth (of the ring's slowest hop) (the tree's 2 ceil(log2 n)(a + S/B) when that is smaller, which is
//             what the library picks for small messages)
//   of_bound  bound_us / sim_us: 1.0 = the analytic time; never above 1.
//   dram_bound_us  the ring's time when each reduce-scatter step also waits for the chip's DRAM:
//             its reduction moves 3 bytes of DRAM traffic per byte received (reads two, writes
//             one; copies over the links are not charged to DRAM, interconnect.h):
//             (n-1)(a + S/n max(1/B, 3/D)) + (n-1)(a + S/(nB)), D = dram.bandwidth_gbps
//   of_dram_bound  dram_bound_us / sim_us
//   algorithm the library's choice: 0 ring, 1 tree
#include <benchmark/benchmark.h>
#include <cncl.h>
#include <cnrt.h>
#include <mlusim_ext.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "cncl_bench: %s\n", what.c_str());
  std::abort();
}
void check(cnrtRet_t r, const char* what) {
  if (r != cnrtSuccess) die(std::string(what) + ": " + cnrtGetErrorName(r) + " " + mlusimGetLastErrorMessage());
}
void check(cnclResult_t r, const char* what) {
  if (r != CNCL_RET_SUCCESS) die(std::string(what) + ": " + cnclGetErrorStr(r) + " " + cnclGetLastErrorStr());
}

constexpr double kLinkGbps = 200, kLinkLatencyNs = 1000, kDramLatencyNs = 120, kDramGbps = 307.2;  // mlu370-x8.yaml

// The slowest hop of a ring: its latency a (ns, the hop's latency + DRAM latency) and bandwidth B.
struct RingHop {
  double a_ns, link_gbps;
};
// mlu370-x8 chips joined by MLU-Link (full mesh with --set devices=N).
constexpr RingHop kMluLink{kLinkLatencyNs + kDramLatencyNs, kLinkGbps};
// mlu370-x8-server: boards reach each other only through host memory, a copy down one chip's
// PCIe and up the other's (host_link: 26 GB/s, 1 us; mlu370-x4.yaml): twice the latency, half the
// bandwidth, as torch_mlu's cncl model takes it (collective_time_model.h).
constexpr RingHop kHostStaged{2 * (1000 + kDramLatencyNs), 26.0 / 2};

void run_all_reduce(benchmark::State& state, const char* config, const RingHop& hop) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const int n = static_cast<int>(state.range(1));
  const std::string devices = "devices=" + std::to_string(n);
  const char* ov[] = {devices.c_str()};
  check(mlusimLoadConfigWithOverrides(config, ov, 1), "load config");
  check(mlusimSetTimingOnly(1), "timing-only");
  const std::size_t count = std::max<std::size_t>(1, bytes / 4);
  std::vector<void*> buf(static_cast<std::size_t>(n));
  std::vector<cnrtQueue_t> q(static_cast<std::size_t>(n));
  std::vector<int> devs(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    devs[static_cast<std::size_t>(r)] = r;
    check(cnrtSetDevice(r), "set device");
    check(cnrtQueueCreate(&q[static_cast<std::size_t>(r)]), "queue");
    check(cnrtMalloc(&buf[static_cast<std::size_t>(r)], count * 4), "malloc");
  }
  std::vector<cnclComm_t> comms(static_cast<std::size_t>(n));
  check(cnclInitComms(comms.data(), n, devs.data(), nullptr, n, nullptr), "init comms");
  const auto run = [&] {
    check(cnclGroupStart(), "group start");
    for (int r = 0; r < n; ++r)
      check(cnclAllReduce(buf[static_cast<std::size_t>(r)], buf[static_cast<std::size_t>(r)], count, cnclFloat32, cnclSum,
                          comms[static_cast<std::size_t>(r)], q[static_cast<std::size_t>(r)]),
            "all-reduce");
    check(cnclGroupEnd(), "group end");
    for (cnrtQueue_t x : q) check(cnrtQueueSync(x), "sync");
  };
  run();  // warm-up: the library sizes its scratch buffers
  std::vector<cnrtNotifier_t> start(static_cast<std::size_t>(n)), end(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    check(cnrtSetDevice(r), "set device");
    check(cnrtNotifierCreate(&start[static_cast<std::size_t>(r)]), "notifier");
    check(cnrtNotifierCreate(&end[static_cast<std::size_t>(r)]), "notifier");
  }
  check(cnrtSetDevice(0), "set device");
  double sim_ns = 0;
  for (auto _ : state) {
    for (int r = 0; r < n; ++r) check(cnrtPlaceNotifier(start[static_cast<std::size_t>(r)], q[static_cast<std::size_t>(r)]), "place");
    run();
    for (int r = 0; r < n; ++r) check(cnrtPlaceNotifier(end[static_cast<std::size_t>(r)], q[static_cast<std::size_t>(r)]), "place");
    for (int r = 0; r < n; ++r) check(cnrtQueueSync(q[static_cast<std::size_t>(r)]), "sync");
    float longest_ms = 0;
    for (int r = 0; r < n; ++r) {  // every rank from rank 0's start (all start at the same host time)
      float ms = 0;
      check(cnrtNotifierElapsedTime(start[0], end[static_cast<std::size_t>(r)], &ms), "elapsed");
      longest_ms = std::max(longest_ms, ms);
    }
    sim_ns = static_cast<double>(longest_ms) * 1e6;
  }
  for (int r = 0; r < n; ++r) {
    cnrtNotifierDestroy(start[static_cast<std::size_t>(r)]);
    cnrtNotifierDestroy(end[static_cast<std::size_t>(r)]);
  }
  const double s = static_cast<double>(count * 4), a = hop.a_ns, link_gbps = hop.link_gbps;
  const double ring = 2.0 * (n - 1) * (a + s / n / link_gbps);
  const int lg = static_cast<int>(std::ceil(std::log2(n)));
  const double tree = 2.0 * lg * (a + s / link_gbps);
  state.counters["sim_us"] = sim_ns / 1e3;
  state.counters["algbw"] = s / sim_ns;
  state.counters["busbw"] = s / sim_ns * 2.0 * (n - 1) / n;
  state.counters["bound_us"] = std::min(ring, tree) / 1e3;
  state.counters["of_bound"] = std::min(ring, tree) / sim_ns;
  state.counters["algorithm"] = tree < ring ? 1 : 0;
  const double dram_ring = (n - 1) * (a + s / n * std::max(1 / link_gbps, 3 / kDramGbps)) + (n - 1) * (a + s / n / link_gbps);
  state.counters["dram_bound_us"] = dram_ring / 1e3;
  state.counters["of_dram_bound"] = dram_ring / sim_ns;
  check(cnclDestroyComms(comms.data(), n), "destroy");
  for (int r = 0; r < n; ++r) {
    check(cnrtFree(buf[static_cast<std::size_t>(r)]), "free");
    check(cnrtQueueDestroy(q[static_cast<std::size_t>(r)]), "queue destroy");
  }
  check(mlusimSetTimingOnly(0), "timing-only off");
}
void BM_AllReduce(benchmark::State& state) { run_all_reduce(state, "mlu370-x8", kMluLink); }
BENCHMARK(BM_AllReduce)
    ->ArgsProduct({benchmark::CreateRange(8, 1 << 30, 8), {2, 8}})  // 8 B .. 1 GiB (1 GiB x 8 ranks: 12.8 GB of host memory)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

// The 8-card server (16 chips): the ring crosses boards through the host.
void BM_AllReduceServer(benchmark::State& state) { run_all_reduce(state, "mlu370-x8-server", kHostStaged); }
BENCHMARK(BM_AllReduceServer)
    ->ArgsProduct({benchmark::CreateRange(8, 256 << 20, 8), {16}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
