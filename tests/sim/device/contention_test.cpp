// Shared-resource contention and copy/compute overlap, on tiny.yaml.
#include <gtest/gtest.h>

#include "mlusim/sim/kernel_api.h"
#include "sim_fixture.h"

namespace mlusim::sim::testing {
namespace {

using namespace mlusim::dev;

class Contention : public SimTest {};

// Every task streams 16 KiB GDRAM -> NRAM. One core: 200 ns latency + 16384 B / 16 B/ns = 1224 ns.
// 4 cores exactly fill DRAM (4 x 16 = 64 GB/s): still 1224 ns. 8 cores share 64 GB/s at 8 B/ns
// each: 200 + 2048 = 2248 ns, i.e. twice the streaming time of 4; bandwidth never exceeds 64 GB/s.
// Each run reads bytes no earlier run read, so every byte misses in the L2 and comes from DRAM.
TEST_F(Contention, CoresStreamingFromDramShareItsBandwidth) {
  constexpr std::size_t kBytes = 16384;
  auto stream_from = [](std::uint64_t src) {
    return [src] {
      memcpy(nram_alloc<std::uint8_t>(kBytes), Addr{Space::kGdram, src + task_id() * kBytes}, kBytes, Dir::kGdram2Nram);
    };
  };
  const KernelRecord one = run("1 core", stream_from(dmalloc(kBytes, 1024)), {1, 1, 1});
  const KernelRecord four = run("4 cores", stream_from(dmalloc(4 * kBytes, 1024)), {4, 1, 1});
  const KernelRecord eight = run("8 cores", stream_from(dmalloc(8 * kBytes, 1024)), {8, 1, 1});
  EXPECT_EQ(eight.traffic.l2_hit_bytes, 0u);
  EXPECT_EQ(one.end_ps - one.start_ps, 1'224'000u);
  EXPECT_EQ(four.end_ps - four.start_ps, 1'224'000u);
  EXPECT_EQ(eight.end_ps - eight.start_ps, 2'248'000u);
  const double achieved_gbps = 8.0 * kBytes / ((eight.end_ps - eight.start_ps) * 1e-3 - 200.0);
  EXPECT_LE(achieved_gbps, cfg().dram_bandwidth_gbps + 1e-9);
}

// 16 BLOCK tasks on 8 cores run in two waves: tasks 0-7 start at once, 8-15 when cores free up.
TEST_F(Contention, BlockTasksQueueForFreeCores) {
  std::vector<Picos> start(16, ~Picos{0});
  const KernelRecord r = run("waves", [&start] {
    start[task_id()] = Simulator::instance().now();
    auto a = nram_alloc<float>(320);
    vec_binary(VecBinaryOp::kAdd, DType::kFloat32, a, a, a, 320);  // 10 + 10 cycles
  }, {16, 1, 1});
  ASSERT_FALSE(r.faulted) << r.fault;
  EXPECT_EQ(r.cycles, 40u);
  for (std::uint32_t i = 0; i < 16; ++i) EXPECT_EQ(start[i] - r.start_ps, i < 8 ? 0u : 20'000u) << "task " << i;
}

// Double buffering: an async copy overlaps a VFU op. Copy 4096 B = 456 ns; exp fp32 x 2048 =
// 10 + 4 * 64 = 266 cycles. Overlapped: max = 456 ns; serial: 722 ns. (Two sources: the second
// run would otherwise hit in the L2.)
TEST_F(Contention, AsyncCopyOverlapsCompute) {
  const std::uint64_t src = dmalloc(4096, 1024);
  const std::uint64_t src2 = dmalloc(4096, 1024);
  const KernelRecord overlapped = run("overlap", [src] {
    auto in = nram_alloc<std::uint8_t>(4096);
    auto work = nram_alloc<float>(2048);
    memcpy_async(in, Addr{Space::kGdram, src}, 4096, Dir::kGdram2Nram);
    vec_unary(VecUnaryOp::kExp, DType::kFloat32, work, work, 2048);
    sync_io();
  });
  const KernelRecord serial = run("serial", [src2] {
    auto in = nram_alloc<std::uint8_t>(4096);
    auto work = nram_alloc<float>(2048);
    memcpy(in, Addr{Space::kGdram, src2}, 4096, Dir::kGdram2Nram);
    vec_unary(VecUnaryOp::kExp, DType::kFloat32, work, work, 2048);
  });
  ASSERT_FALSE(overlapped.faulted) << overlapped.fault;
  EXPECT_EQ(overlapped.cycles, 456u);
  EXPECT_EQ(serial.cycles, 722u);
}

}  // namespace
}  // namespace mlusim::sim::testing
