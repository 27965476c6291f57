// The simulation loop the driver builds on: pause at an awaited completion, run to a time.
#include <gtest/gtest.h>

#include "mlusim/sim/kernel_api.h"
#include "sim_fixture.h"

namespace mlusim::sim::testing {
namespace {

using namespace mlusim::dev;

class SimulatorLoop : public SimTest {};

// Two kernels of different length; pausing in the first one's completion stops the simulation
// exactly at its end time, with the second still running; resuming finishes it.
TEST_F(SimulatorLoop, PauseStopsAtTheAwaitedCompletion) {
  auto work = [](std::size_t n) {
    return [n] {
      auto a = nram_alloc<float>(n);
      vec_fill(DType::kFloat32, a, 0.0, n);
    };
  };
  Simulator& sim = Simulator::instance();
  Picos short_end = 0;
  bool long_done = false;
  device().submit(KernelLaunch{"short", work(320), {1, 1, 1}, FunctionType::kBlock}, [&](const KernelRecord& r) {
    short_end = r.end_ps;
    sim.pause();
  });
  device().submit(KernelLaunch{"long", work(3200), {1, 1, 1}, FunctionType::kBlock},
                  [&](const KernelRecord&) { long_done = true; });
  const Picos t0 = sim.now();
  EXPECT_TRUE(sim.run_until_idle());
  EXPECT_EQ(sim.now(), short_end);
  EXPECT_EQ(short_end - t0, 20'000u);  // 10 + 320/32 cycles
  EXPECT_FALSE(long_done);
  EXPECT_FALSE(device().idle());
  EXPECT_FALSE(sim.run_until_idle());
  EXPECT_TRUE(long_done);
  EXPECT_TRUE(device().idle());
}

// reset_stats() while a kernel runs (the bridge's reset_stats() does not wait for the queues): the
// kernel's record belongs to the new epoch, its cycles are its whole run (10 + 3200/32 = 110) and
// its start is the epoch's start. Its cycles used to be end - start across the two epochs' origins
// (60 here, or an unsigned underflow of ~3e16 when the old origin lay further back).
TEST_F(SimulatorLoop, AKernelRunningAcrossResetStatsKeepsItsCycles) {
  Simulator& sim = Simulator::instance();
  sim.run_until(sim.now() + 1'000'000);  // the old epoch's origin lies 1000 cycles back
  device().reset_stats();
  const Picos t0 = sim.now();
  KernelRecord record;
  bool done = false;
  device().submit(KernelLaunch{"fill",
                               [] {
                                 auto a = nram_alloc<float>(3200);
                                 vec_fill(DType::kFloat32, a, 0.0, 3200);
                               },
                               {1, 1, 1},
                               FunctionType::kBlock},
                  [&](const KernelRecord& r) {
                    record = r;
                    done = true;
                  });
  sim.run_until(t0 + 50'000);  // 50 of its 110 cycles
  ASSERT_FALSE(done);
  device().reset_stats();
  EXPECT_FALSE(sim.run_until_idle());  // ran to the end (nothing paused it)
  ASSERT_TRUE(done);
  EXPECT_EQ(record.cycles, 110u);
  EXPECT_EQ(record.start_ps, 0u);
  EXPECT_EQ(record.end_ps, 60'000u);
  ASSERT_EQ(device().stats().kernels.size(), 1u);
  EXPECT_EQ(device().stats().kernels[0].cycles, 110u);
}

TEST_F(SimulatorLoop, RunUntilAdvancesTimeWithoutWork) {
  Simulator& sim = Simulator::instance();
  const Picos t0 = sim.now();
  sim.run_until(t0 + 5'000'000);
  EXPECT_EQ(sim.now(), t0 + 5'000'000);
  sim.run_until(t0);  // the past: no-op
  EXPECT_EQ(sim.now(), t0 + 5'000'000);
}

// Host copies are timed over the host link: 4096 B pinned at 16 GB/s = 256 ns + 1000 ns link
// latency + 100 ns DRAM latency; pageable also crosses the 8 GB/s staging copy: 512 ns.
TEST_F(SimulatorLoop, HostCopiesUseTheHostLink) {
  std::vector<std::uint8_t> src(4096, 0xAB), back(4096, 0);
  const std::uint64_t dev = dmalloc(4096, 1024);
  Simulator& sim = Simulator::instance();
  Picos t0 = sim.now(), end = 0;
  HostCopy up{HostCopy::Kind::kHostToDevice, dev, 0, nullptr, src.data(), 4096, true, 0, "h2d"};
  device().submit_copy(up, [&](Picos e) { end = e; });
  sim.run_until_idle();
  EXPECT_EQ(end - t0, 1'356'000u);
  t0 = sim.now();
  HostCopy down{HostCopy::Kind::kDeviceToHost, 0, dev, back.data(), nullptr, 4096, false, 0, "d2h"};
  device().submit_copy(down, [&](Picos e) { end = e; });
  sim.run_until_idle();
  EXPECT_EQ(end - t0, 1'612'000u);
  EXPECT_EQ(back, src);
}

// scheduler.launch_latency_ns (device/scheduler.h): a launch's tasks start L after its submission;
// its record spans L plus the tasks; union groups wait the same; with L = 0 tasks start at once.
TEST_F(SimulatorLoop, LaunchLatencyDelaysTheFirstTasksAndCountsInTheSpan) {
  auto work = [] {
    auto a = nram_alloc<float>(320);
    vec_fill(DType::kFloat32, a, 0.0, 320);  // 10 + 320 / 32 = 20 cycles on tiny (1 GHz)
  };
  const KernelRecord plain = run("plain", work);
  EXPECT_EQ(plain.end_ps - plain.start_ps, 20'000u);
  build("tiny", {{"scheduler.launch_latency_ns", "150"}});
  Simulator& sim = Simulator::instance();
  const Picos t0 = sim.now();
  const KernelRecord late = run("late", work);
  EXPECT_EQ(late.start_ps, t0);                          // the record starts at submission ...
  EXPECT_EQ(late.end_ps - late.start_ps, 170'000u);      // ... and holds the latency
  EXPECT_EQ(device().stats().kernels.back().cycles, 170u);
  // More tasks than cores: the first wave waits L, later tasks start as cores free up.
  const std::uint32_t cores = cfg().total_cores();
  const KernelRecord waves = run("waves", work, {2 * cores, 1, 1});
  EXPECT_EQ(waves.end_ps - waves.start_ps, 150'000u + 2 * 20'000u);
  // A union launch: its memory cores wait too (the cluster barrier after the compute cores' fill
  // releases all of them together).
  const KernelRecord u = run("union", [] {
    if (core_id() != kMemoryCoreId) {
      auto a = nram_alloc<float>(320);
      vec_fill(DType::kFloat32, a, 0.0, 320);
    }
    sync_cluster();
  }, {cfg().cores_per_cluster, 1, 1}, FunctionType::kUnion1);
  const KernelRecord u0 = [&] {
    build("tiny");
    return run("union", [] {
      if (core_id() != kMemoryCoreId) {
        auto a = nram_alloc<float>(320);
        vec_fill(DType::kFloat32, a, 0.0, 320);
      }
      sync_cluster();
    }, {cfg().cores_per_cluster, 1, 1}, FunctionType::kUnion1);
  }();
  EXPECT_EQ(u.end_ps - u.start_ps, 150'000u + (u0.end_ps - u0.start_ps));
  build("tiny", {{"scheduler.launch_latency_ns", "150"}});
  // Two launches submitted together (two queues) overlap their latencies.
  Picos ends[2] = {0, 0};
  const Picos t1 = sim.now();
  for (int i = 0; i < 2; ++i)
    device().submit(KernelLaunch{"k" + std::to_string(i), work, {1, 1, 1}, FunctionType::kBlock},
                    [&ends, i](const KernelRecord& r) { ends[i] = r.end_ps; });
  sim.run_until_idle();
  EXPECT_EQ(ends[0] - t1, 170'000u);
  EXPECT_EQ(ends[1] - t1, 170'000u);
  // A launch waiting for cores: placed after its latency has passed, it starts at once; placed
  // while its latency is still running, it waits the rest.
  const std::uint32_t all = cfg().total_cores();
  auto long_work = [] {
    auto a = nram_alloc<float>(3200);
    vec_fill(DType::kFloat32, a, 0.0, 3200);  // 10 + 100 = 110 cycles
  };
  Picos short_start = 0, short_end = 0, late_start = 0, late_end = 0, blocker_end = 0;
  const Picos t2 = sim.now();
  device().submit(KernelLaunch{"blocker", work, {all, 1, 1}, FunctionType::kBlock},
                  [&](const KernelRecord& r) { blocker_end = r.end_ps; });
  device().submit(KernelLaunch{"within", work, {1, 1, 1}, FunctionType::kBlock},
                  [&](const KernelRecord& r) { short_start = r.start_ps, short_end = r.end_ps; });
  sim.run_until_idle();
  EXPECT_EQ(blocker_end - t2, 170'000u);  // placed at t2, started at t2 + L, 20 ns of work
  EXPECT_EQ(short_start, blocker_end);    // placed when a core freed up (after its own L had passed) ...
  EXPECT_EQ(short_end - short_start, 20'000u);  // ... so it starts at once
  const Picos t4 = sim.now();
  device().submit(KernelLaunch{"blocker", work, {all, 1, 1}, FunctionType::kBlock},
                  [&](const KernelRecord& r) { blocker_end = r.end_ps; });
  sim.run_until(t4 + 100'000);  // the blocker's cores are reserved; its tasks wait until t4 + L
  device().submit(KernelLaunch{"partway", long_work, {1, 1, 1}, FunctionType::kBlock},
                  [&](const KernelRecord& r) { late_start = r.start_ps, late_end = r.end_ps; });
  sim.run_until_idle();
  // Submitted at t4 + 100 ns, ready at t4 + 250 ns; a core frees at t4 + 170 ns: it is placed then
  // and waits the remaining 80 ns.
  EXPECT_EQ(blocker_end - t4, 170'000u);
  EXPECT_EQ(late_start, blocker_end);
  EXPECT_EQ(late_end - late_start, 80'000u + 110'000u);
}

}  // namespace
}  // namespace mlusim::sim::testing
