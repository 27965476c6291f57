// The L2 tag store in isolation (memory/l2_cache.h): hits, miss runs, LRU replacement within a
// set, write allocation, invalidation.
#include "memory/l2_cache.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace mlusim::sim {
namespace {

using Runs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

// Reads [addr, addr + bytes); returns (hit bytes, the miss runs reported). Checks that the fill
// bytes are the runs' total.
std::pair<std::uint64_t, Runs> read(L2Cache& c, std::uint64_t addr, std::uint64_t bytes) {
  Runs runs;
  const L2Cache::ReadResult r = c.read(addr, bytes, [&](std::uint64_t a, std::uint64_t n) { runs.emplace_back(a, n); });
  std::uint64_t filled = 0;
  for (const auto& run : runs) filled += run.second;
  EXPECT_EQ(r.fill_bytes, filled);
  return {r.hit_bytes, runs};
}

TEST(L2Cache, FirstReadMissesSecondHits) {
  L2Cache c(64 * 1024, 128, 4, false);  // 128 sets
  auto [hit0, runs0] = read(c, 1000, 5000);
  EXPECT_EQ(hit0, 0u);
  EXPECT_EQ(runs0, (Runs{{896, 5120}}));  // whole lines 7..46: the over-fetch of the partial ends
  auto [hit1, runs1] = read(c, 1000, 5000);
  EXPECT_EQ(hit1, 5000u);
  EXPECT_TRUE(runs1.empty());
}

TEST(L2Cache, PartialOverlapSplitsIntoRuns) {
  L2Cache c(64 * 1024, 128, 4, false);
  read(c, 1024, 256);  // lines 8 and 9
  // [900, 1500): line 7 misses, lines 8-9 hit, lines 10-11 miss (fetched whole).
  auto [hit, runs] = read(c, 900, 600);
  EXPECT_EQ(hit, 256u);
  EXPECT_EQ(runs, (Runs{{896, 128}, {1280, 256}}));
}

TEST(L2Cache, LeastRecentlyUsedWayIsEvicted) {
  L2Cache c(2 * 128, 128, 2, false);  // one set of two ways: every line maps to it
  read(c, 0, 128);             // A
  read(c, 128, 128);           // B
  read(c, 0, 128);             // A again: B is now the least recently used
  read(c, 256, 128);           // C evicts B
  EXPECT_EQ(read(c, 0, 128).first, 128u);   // A stayed
  EXPECT_EQ(read(c, 256, 128).first, 128u); // C is there
  EXPECT_EQ(read(c, 128, 128).first, 0u);   // B was evicted (and now evicts A, the LRU)
  EXPECT_EQ(read(c, 0, 128).first, 0u);
}

TEST(L2Cache, StreamingMoreThanTheCapacityLeavesOnlyTheTail) {
  L2Cache c(16 * 1024, 128, 4, false);
  read(c, 0, 64 * 1024);
  EXPECT_EQ(read(c, 0, 16 * 1024).first, 0u);  // the head was evicted by the tail
  L2Cache d(16 * 1024, 128, 4, false);
  read(d, 0, 64 * 1024);
  EXPECT_EQ(read(d, 48 * 1024, 16 * 1024).first, 16u * 1024);  // the last 16 KiB are resident
}

TEST(L2Cache, WritesAllocateAndInvalidateDrops) {
  L2Cache c(64 * 1024, 128, 4, false);
  c.write(4096, 512);
  EXPECT_EQ(read(c, 4096, 512).first, 512u);
  c.invalidate(4096 + 128, 1);  // drops the whole line it touches
  auto [hit, runs] = read(c, 4096, 512);
  EXPECT_EQ(hit, 384u);
  EXPECT_EQ(runs, (Runs{{4096 + 128, 128}}));
  // A range larger than the cache takes the sweeping path; lines outside it stay.
  c.write(1 << 20, 128);
  c.invalidate(0, 512 * 1024);
  EXPECT_EQ(read(c, 4096, 512).first, 0u);
  EXPECT_EQ(read(c, 1 << 20, 128).first, 128u);
  c.clear();
  EXPECT_EQ(read(c, 1 << 20, 128).first, 0u);
}

TEST(L2Cache, HashedSetsSpreadPowerOfTwoStrides) {
  // 128 sets of 4 ways: 16 lines 16 KiB (= sets x line) apart all fall in set 0 unhashed, so
  // reading them again finds none; hashed, line 128k goes to set k and all 16 stay.
  auto strided = [](L2Cache& c) {
    std::uint64_t hit = 0;
    for (int pass = 0; pass < 2; ++pass)
      for (std::uint64_t k = 0; k < 16; ++k) hit += read(c, k * 16 * 1024, 128).first;
    return hit;
  };
  L2Cache plain(64 * 1024, 128, 4, false), hashed(64 * 1024, 128, 4, true);
  EXPECT_EQ(strided(plain), 0u);
  EXPECT_EQ(strided(hashed), 16u * 128);
  // A round of `sets` lines (from a multiple of sets) still covers every set once: an aligned
  // whole-capacity block stays.
  L2Cache block(64 * 1024, 128, 4, true);
  read(block, 1 << 20, 64 * 1024);
  EXPECT_EQ(read(block, 1 << 20, 64 * 1024).first, 64u * 1024);
}

TEST(L2Cache, SizeZeroIsNoCache) {
  L2Cache c(0, 128, 16, false);
  EXPECT_FALSE(c.enabled());
  c.write(0, 4096);
  auto [hit, runs] = read(c, 0, 4096);
  EXPECT_EQ(hit, 0u);
  EXPECT_EQ(runs, (Runs{{0, 4096}}));
}

}  // namespace
}  // namespace mlusim::sim
