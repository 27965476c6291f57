// The L2 hit/miss model (memory/l2_cache.h) as kernels see it, on tiny.yaml (which inherits
// mlu370-x4's l2.cache: true, hit latency 60 ns): the DMA formula of core/dma_path.h with hits.
// tiny: IO-DMA latency 100 ns, DRAM latency 100 ns, IO-DMA 16 GB/s per core, 4 DRAM channels of
// 16 GB/s (64 GB/s), NoC/L2 128 GB/s; X GB/s = X bytes/ns.
#include <gtest/gtest.h>

#include <vector>

#include "mlusim/sim/kernel_api.h"
#include "sim_fixture.h"

namespace mlusim::sim::testing {
namespace {

using namespace mlusim::dev;

class L2Timing : public SimTest {
 protected:
  KernelRecord read_4k(const std::string& name, std::uint64_t src) {
    return run(name, [src] { memcpy(nram_alloc<std::uint8_t>(4096), Addr{Space::kGdram, src}, 4096, Dir::kGdram2Nram); });
  }
};

// First read: 100 + 100 ns latency + 4096 B / 16 B/ns = 456 ns, all from DRAM. Second read: every
// byte hits, so the latency is 100 + 60 ns (l2.hit_latency_ns), the IO-DMA still limits: 416 ns,
// and no byte crosses the DRAM channels.
TEST_F(L2Timing, RepeatedReadHitsWithTheHitLatencyAndNoDramBytes) {
  ASSERT_TRUE(cfg().l2_cache);
  const std::uint64_t src = dmalloc(4096, 1024);
  const KernelRecord cold = read_4k("cold", src);
  const KernelRecord warm = read_4k("warm", src);
  EXPECT_EQ(cold.end_ps - cold.start_ps, 456'000u);
  EXPECT_EQ(cold.traffic.l2_hit_bytes, 0u);
  EXPECT_EQ(cold.traffic.dram_bytes(), 4096u);
  EXPECT_EQ(warm.end_ps - warm.start_ps, 416'000u);
  EXPECT_EQ(warm.traffic.read_bytes[static_cast<int>(MemLevel::kGdram)], 4096u);  // still a GDRAM read
  EXPECT_EQ(warm.traffic.l2_hit_bytes, 4096u);
  EXPECT_EQ(warm.traffic.dram_bytes(), 0u);
  EXPECT_EQ(device().stats().traffic.l2_hit_bytes, 4096u);
}

// Half the lines resident: DRAM latency (some bytes miss), the IO-DMA limits: 456 ns; 2 KiB hit.
TEST_F(L2Timing, PartialHitPaysTheDramLatency) {
  const std::uint64_t src = dmalloc(8192, 1024);
  run("first half", [src] { memcpy(nram_alloc<std::uint8_t>(2048), Addr{Space::kGdram, src}, 2048, Dir::kGdram2Nram); });
  const KernelRecord r = read_4k("straddle", src);
  EXPECT_EQ(r.end_ps - r.start_ps, 456'000u);
  EXPECT_EQ(r.traffic.l2_hit_bytes, 2048u);
  EXPECT_EQ(r.traffic.dram_bytes(), 2048u);
}

// A missing line comes whole from DRAM: a 100-byte read fetches its two 64-byte lines (28 bytes
// of over-fetch); a read of the rest of the second line then hits.
TEST_F(L2Timing, MissesFetchWholeLines) {
  const std::uint64_t src = dmalloc(4096, 1024);
  const KernelRecord head = run("head", [src] {
    memcpy(nram_alloc<std::uint8_t>(100), Addr{Space::kGdram, src}, 100, Dir::kGdram2Nram);
  });
  EXPECT_EQ(head.traffic.l2_overfetch_bytes, 28u);
  EXPECT_EQ(head.traffic.dram_bytes(), 128u);
  const KernelRecord tail = run("tail", [src] {
    memcpy(nram_alloc<std::uint8_t>(28), Addr{Space::kGdram, src + 100}, 28, Dir::kGdram2Nram);
  });
  EXPECT_EQ(tail.traffic.l2_hit_bytes, 28u);
  EXPECT_EQ(tail.traffic.dram_bytes(), 0u);
}

// 8 cores reading 16 KiB each. Distinct data (contention_test.cpp): 8 x 16 GB/s share 64 GB/s of
// DRAM, 2248 ns. The same 16 KiB on every core: core 0's read misses and allocates the lines, the
// other 7 hit (issued in the same instant: the L2 merges them), so DRAM carries 16 KiB once and the
// NoC/L2 stage carries 8 x 16 = 128 GB/s, its capacity: core 0 ends at 200 + 1024 = 1224 ns, the
// others at 160 + 1024 = 1184 ns.
TEST_F(L2Timing, CoresReadingTheSameBytesShareOneDramRead) {
  constexpr std::size_t kBytes = 16384;
  const std::uint64_t src = dmalloc(kBytes, 1024);
  const KernelRecord r = run("shared weights", [src] {
    memcpy(nram_alloc<std::uint8_t>(kBytes), Addr{Space::kGdram, src}, kBytes, Dir::kGdram2Nram);
  }, {8, 1, 1});
  ASSERT_FALSE(r.faulted) << r.fault;
  EXPECT_EQ(r.end_ps - r.start_ps, 1'224'000u);
  EXPECT_EQ(r.traffic.l2_hit_bytes, 7 * kBytes);
  EXPECT_EQ(r.traffic.dram_bytes(), kBytes);
}

// A kernel's GDRAM write allocates its lines (write-allocate) and still goes to DRAM
// (write-through): the next kernel's read of it hits.
TEST_F(L2Timing, WrittenBytesHitForTheNextKernel) {
  const std::uint64_t dst = dmalloc(4096, 1024);
  const KernelRecord w = run("producer", [dst] {
    memcpy(Addr{Space::kGdram, dst}, nram_alloc<std::uint8_t>(4096), 4096, Dir::kNram2Gdram);
  });
  EXPECT_EQ(w.traffic.dram_bytes(), 4096u);
  const KernelRecord r = read_4k("consumer", dst);
  EXPECT_EQ(r.end_ps - r.start_ps, 416'000u);
  EXPECT_EQ(r.traffic.l2_hit_bytes, 4096u);
}

// Host copies bypass the L2 and drop the lines they write: the next kernel read misses again.
TEST_F(L2Timing, HostCopyInvalidatesWhatItWrites) {
  const std::uint64_t src = dmalloc(4096, 1024);
  read_4k("warm up", src);
  std::vector<std::uint8_t> host(4096, 7);
  bool done = false;
  HostCopy copy;
  copy.kind = HostCopy::Kind::kHostToDevice;
  copy.device_dst = src;
  copy.host_src = host.data();
  copy.bytes = host.size();
  copy.pinned = true;
  device().submit_copy(copy, [&](Picos) { done = true; });
  Simulator::instance().run_until_idle();
  ASSERT_TRUE(done);
  const KernelRecord r = read_4k("after upload", src);
  EXPECT_EQ(r.end_ps - r.start_ps, 456'000u);
  EXPECT_EQ(r.traffic.l2_hit_bytes, 0u);
  EXPECT_EQ(download<std::uint8_t>(src, 1)[0], 7);
}

// l2.cache: false: the L2 is a bandwidth stage only; every read comes from DRAM.
TEST_F(L2Timing, CacheOffEveryReadGoesToDram) {
  build("tiny", {{"l2.cache", "false"}});
  const std::uint64_t src = dmalloc(4096, 1024);
  read_4k("first", src);
  const KernelRecord r = read_4k("second", src);
  EXPECT_EQ(r.end_ps - r.start_ps, 456'000u);
  EXPECT_EQ(r.traffic.l2_hit_bytes, 0u);
  EXPECT_EQ(r.traffic.dram_bytes(), 4096u);
}

}  // namespace
}  // namespace mlusim::sim::testing
