// DMA cost formula (core/dma_path.h) checked on tiny.yaml, with every expected time computed by
// hand from the preset's round numbers (1 cycle = 1 ns, X GB/s = X bytes/ns).
#include <gtest/gtest.h>

#include "mlusim/sim/kernel_api.h"
#include "sim_fixture.h"

namespace mlusim::sim::testing {
namespace {

using namespace mlusim::dev;

class DmaTiming : public SimTest {};

// tiny: IO-DMA latency 100 cycles = 100 ns, DRAM latency 100 ns; IO-DMA 16 GB/s is the narrowest
// stage (4 DRAM channels x 16 GB/s, a 1 KiB-aligned 4 KiB copy puts 1 KiB on each, weight 0.25 ->
// 64 GB/s; NoC 128 GB/s). 4096 B / 16 B/ns = 256 ns. Total 456 ns.
TEST_F(DmaTiming, UncontendedGdramToNramIsLatencyPlusBytesOverNarrowestStage) {
  const std::uint64_t src = dmalloc(4096, 1024);
  const KernelRecord r = run("copy", [src] {
    memcpy(nram_alloc<std::uint8_t>(4096), Addr{Space::kGdram, src}, 4096, Dir::kGdram2Nram);
  });
  ASSERT_FALSE(r.faulted) << r.fault;
  EXPECT_EQ(r.end_ps - r.start_ps, 456'000u);
  EXPECT_EQ(r.cycles, 456u);
  EXPECT_EQ(r.traffic.read_bytes[static_cast<int>(MemLevel::kGdram)], 4096u);
  EXPECT_EQ(r.traffic.write_bytes[static_cast<int>(MemLevel::kNram)], 4096u);
  EXPECT_EQ(r.engines[static_cast<int>(Engine::kIoDma)].intrinsics, 1u);
  EXPECT_EQ(r.engines[static_cast<int>(Engine::kIoDma)].busy_ps, 456'000u);
}

// Odd byte counts round up to whole 64-byte bursts: 1000 B -> 1024 B -> 64 ns + 200 ns latency.
TEST_F(DmaTiming, SegmentsRoundUpToBursts) {
  const std::uint64_t src = dmalloc(1000, 1024);
  const KernelRecord r = run("copy", [src] {
    memcpy(nram_alloc<std::uint8_t>(1000), Addr{Space::kGdram, src}, 1000, Dir::kGdram2Nram);
  });
  EXPECT_EQ(r.end_ps - r.start_ps, 264'000u);
}

// sync_loads waits for the on-chip move (NRAM -> WRAM, Move-DMA) and not for the store issued
// before it (NRAM -> GDRAM, IO-DMA): the 260-cycle VFU fill after it (10 + 8000 / 32) runs while
// the store drains, so the task ends when the store lands, as a task with the store alone; with
// sync_io the fill waits for the store and the task takes 260 cycles more.
TEST_F(DmaTiming, SyncLoadsLetsStoresDrainBehindCompute) {
  const std::uint64_t dst = dmalloc(16384, 1024);
  auto kernel = [dst](int sync) {
    return [dst, sync] {
      auto out = nram_alloc<std::uint8_t>(16384);
      auto buf = nram_alloc<float>(8000);
      auto w = wram_alloc<std::uint8_t>(128);
      memcpy_async(Addr{Space::kGdram, dst}, out, 16384, Dir::kNram2Gdram);
      if (sync == 0) return;
      memcpy_async(w, out, 128, Dir::kNram2Wram);
      if (sync == 1) sync_loads();
      else sync_io();
      vec_fill(DType::kFloat32, buf, 0.0, 8000);
    };
  };
  const KernelRecord alone = run("store", kernel(0)), loads = run("loads", kernel(1)), all = run("io", kernel(2));
  ASSERT_FALSE(loads.faulted) << loads.fault;
  ASSERT_FALSE(all.faulted) << all.fault;
  EXPECT_GT(alone.cycles, 1000u);  // 16 KiB at 16 GB/s: over four times the fill
  EXPECT_EQ(loads.cycles, alone.cycles);
  EXPECT_EQ(all.cycles, alone.cycles + 260);
}

// With a 32 GB/s IO-DMA, DRAM interleaving decides: a contiguous 4 KiB spreads over 4 channels
// (64 GB/s, so the DMA's 32 GB/s limits: 128 ns), while 64 segments of 64 B with a 1 KiB source
// stride all fall in channel 0 (16 GB/s: 256 ns).
TEST_F(DmaTiming, InterleavingSpreadsContiguousCopiesOverChannels) {
  build("tiny", {{"dma.io_bandwidth_gbps", "32"}});
  const std::uint64_t src = dmalloc(64 * 1024, 1024);
  const KernelRecord contiguous = run("contiguous", [src] {
    memcpy(nram_alloc<std::uint8_t>(4096), Addr{Space::kGdram, src}, 4096, Dir::kGdram2Nram);
  });
  EXPECT_EQ(contiguous.end_ps - contiguous.start_ps, (200 + 128) * 1000u);
  const std::uint64_t src2 = dmalloc(64 * 1024, 1024);  // bytes the first copy did not bring into the L2
  const KernelRecord strided = run("one channel", [src2] {
    CopyShape s{64, 64, /*dst_stride1=*/64, /*src_stride1=*/1024};
    memcpy_strided(nram_alloc<std::uint8_t>(4096), Addr{Space::kGdram, src2}, s, Dir::kGdram2Nram);
  });
  EXPECT_EQ(strided.end_ps - strided.start_ps, (200 + 256) * 1000u);
}

// dram.channel_hash: the same 64 segments of 64 B, 1 KiB apart (one 4 x 256 B round each), start
// at granule 4i, round i, channel digitsum_4(i) mod 4: over i = 0..63 every channel takes 16 of
// them, so the copy spreads as the contiguous one does and the DMA's 32 GB/s decides (128 ns).
TEST_F(DmaTiming, ChannelHashSpreadsRoundStridedCopies) {
  build("tiny", {{"dma.io_bandwidth_gbps", "32"}, {"dram.channel_hash", "true"}});
  const std::uint64_t src = dmalloc(64 * 1024, 1024);
  const KernelRecord strided = run("hashed", [src] {
    CopyShape s{64, 64, /*dst_stride1=*/64, /*src_stride1=*/1024};
    memcpy_strided(nram_alloc<std::uint8_t>(4096), Addr{Space::kGdram, src}, s, Dir::kGdram2Nram);
  });
  EXPECT_EQ(strided.end_ps - strided.start_ps, (200 + 128) * 1000u);
}

// The mapping itself (config.h dram_channel_of): plain is x mod n; hashed rotates round q by the
// digit sum of q in base n, so every round still holds each channel once, for any n.
TEST(DramChannel, HashedRoundsArePermutationsRotatedByTheirDigitSum) {
  HardwareConfig c{};
  c.dram_interleave_bytes = 256;
  for (std::uint32_t n : {4u, 6u, 16u}) {
    c.dram_channels = n;
    c.dram_channel_hash = false;
    EXPECT_EQ(dram_channel_of(c, 256 * (3 * n + 2)), 2u);
    c.dram_channel_hash = true;
    for (std::uint64_t q : {0ull, 1ull, 7ull, 100ull, 12345ull}) {
      std::vector<int> seen(n, 0);
      for (std::uint64_t j = 0; j < n; ++j) ++seen[dram_channel_of(c, 256 * (q * n + j) + 17)];
      for (int count : seen) EXPECT_EQ(count, 1) << "n " << n << " round " << q;
    }
    // Round q = n + 1 (digits 1, 1): rotated by 2.
    EXPECT_EQ(dram_channel_of(c, 256 * ((n + 1) * n + 1)), 3u % n);
  }
}

// Move-DMA: latency 10 cycles, 32 GB/s: 4096 B NRAM -> WRAM = 10 + 128 ns.
TEST_F(DmaTiming, MoveDmaNramToWram) {
  const KernelRecord r = run("move", [] {
    auto n = nram_alloc<std::uint8_t>(4096);
    memcpy(wram_alloc<std::uint8_t>(4096), n, 4096, Dir::kNram2Wram);
  });
  ASSERT_FALSE(r.faulted) << r.fault;
  EXPECT_EQ(r.end_ps - r.start_ps, 138'000u);
  EXPECT_EQ(r.engines[static_cast<int>(Engine::kMoveDma)].intrinsics, 1u);
}

// Unequal transfers on one core's IO-DMA (16 GB/s shared max-min fairly): A = 8192 B and
// B = 2048 B are both issued at 0 and both start streaming after the 200 ns latency, at 8 B/ns each;
// B's 2048 B finish at 200 + 256 = 456 ns; A has moved 2048 B, its remaining 6144 B go at 16 B/ns:
// 384 ns more -> 840 ns. Alone, A would take 200 + 512 = 712 ns.
TEST_F(DmaTiming, ConcurrentCopiesShareTheirEngineFairly) {
  const std::uint64_t src = dmalloc(16384, 1024);
  const KernelRecord r = run("two async", [src] {
    memcpy_async(nram_alloc<std::uint8_t>(8192), Addr{Space::kGdram, src}, 8192, Dir::kGdram2Nram);
    memcpy_async(nram_alloc<std::uint8_t>(2048), Addr{Space::kGdram, src + 8192}, 2048, Dir::kGdram2Nram);
    sync_io();
  });
  EXPECT_EQ(r.end_ps - r.start_ps, 840'000u);
}

// Data really moves, through strided 2D copies both ways (a transpose-free sub-block gather).
TEST_F(DmaTiming, StridedCopiesMoveTheRightBytes) {
  const std::uint64_t src = dmalloc(16 * 16 * 4), dst = dmalloc(16 * 16 * 4);
  std::vector<float> host(256);
  for (int i = 0; i < 256; ++i) host[i] = static_cast<float>(i);
  upload(src, host);
  upload(dst, std::vector<float>(256, -1.0f));
  const KernelRecord r = run("block", [src, dst] {
    auto buf = nram_alloc<float>(4 * 5);
    // rows 2..5, cols 3..7 of a 16x16 matrix -> packed 4x5 in NRAM -> rows 10..13, cols 0..4
    memcpy_strided(buf, Addr{Space::kGdram, src + (2 * 16 + 3) * 4}, CopyShape{5 * 4, 4, 5 * 4, 16 * 4},
                   Dir::kGdram2Nram);
    memcpy_strided(Addr{Space::kGdram, dst + 10 * 16 * 4}, buf, CopyShape{5 * 4, 4, 16 * 4, 5 * 4}, Dir::kNram2Gdram);
  });
  ASSERT_FALSE(r.faulted) << r.fault;
  const auto out = download<float>(dst, 256);
  for (int row = 0; row < 16; ++row)
    for (int col = 0; col < 16; ++col) {
      const bool inside = row >= 10 && row < 14 && col < 5;
      const float want = inside ? static_cast<float>((row - 10 + 2) * 16 + col + 3) : -1.0f;
      EXPECT_EQ(out[row * 16 + col], want) << row << "," << col;
    }
}

}  // namespace
}  // namespace mlusim::sim::testing

namespace mlusim::sim::testing {
namespace {

// The fault-injection switch flips exactly one bit of the nth DMA, and only that one.
TEST_F(DmaTiming, InjectedBitFlipCorruptsExactlyOneCopy) {
  const std::uint64_t src = dmalloc(256), dst = dmalloc(256);
  std::vector<std::uint8_t> data(256);
  for (int i = 0; i < 256; ++i) data[i] = static_cast<std::uint8_t>(i);
  upload(src, data);
  device().inject_dma_bit_flip(2);  // the copy back to GDRAM
  run("roundtrip", [src, dst] {
    auto n = dev::nram_alloc<std::uint8_t>(256);
    dev::memcpy(n, Addr{Space::kGdram, src}, 256, dev::Dir::kGdram2Nram);
    dev::memcpy(Addr{Space::kGdram, dst}, n, 256, dev::Dir::kNram2Gdram);
  });
  auto got = download<std::uint8_t>(dst, 256);
  EXPECT_EQ(got[128], data[128] ^ 1);
  got[128] ^= 1;
  EXPECT_EQ(got, data);
}

}  // namespace
}  // namespace mlusim::sim::testing
