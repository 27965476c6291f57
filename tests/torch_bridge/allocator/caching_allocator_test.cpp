// The caching allocator core against the simulated driver (tiny preset: 64 MiB of DRAM), with
// CUDA's expected sizes worked out by hand in each test.
#include <cstdlib>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <mlusim_ext.h>

#include "mlusim/torch/caching_allocator.h"

namespace mlusim::bridge {
namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

class AllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(mlusimLoadConfig("tiny"), cnrtSuccess) << mlusimGetLastErrorMessage(); }

  static std::uint64_t driver_bytes(int device = 0) {
    mlusimDeviceStats_t s{};
    EXPECT_EQ(mlusimGetDeviceStats(device, &s), cnrtSuccess);
    return s.allocated_bytes;
  }
  static std::map<std::string, std::int64_t> flat(const CachingAllocator& a, int device = 0) {
    std::map<std::string, std::int64_t> m;
    for (const auto& [k, v] : a.stats(device).flatten()) m[k] = v;
    return m;
  }
  static cnrtQueue_t new_queue() {
    cnrtQueue_t q = nullptr;
    EXPECT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
    return q;
  }
  static char* c(void* p) { return static_cast<char*>(p); }
};

// ---- sizes ----------------------------------------------------------------------------------

TEST(AllocatorSizes, RoundsTo512Bytes) {
  const AllocatorConfig cfg;
  EXPECT_EQ(round_size(1, cfg), 512u);
  EXPECT_EQ(round_size(512, cfg), 512u);
  EXPECT_EQ(round_size(513, cfg), 1024u);
  EXPECT_EQ(round_size(1000000, cfg), 1000448u);  // 1954 * 512
}

TEST(AllocatorSizes, RoundupPower2Divisions) {
  AllocatorConfig cfg;
  cfg.roundup_power2_divisions = 4;
  // [1 MiB, 2 MiB) in 4 steps of 256 KiB.
  EXPECT_EQ(round_size(1300000, cfg), 1310720u);
  EXPECT_EQ(round_size(1048576, cfg), 1048576u);  // a power of two stays
  EXPECT_EQ(round_size(1310720, cfg), 1310720u);  // on a step stays
  // At or below 512 * divisions plain 512 rounding applies.
  EXPECT_EQ(round_size(2000, cfg), 2048u);
  EXPECT_EQ(round_size(1500, cfg), 1536u);
}

TEST(AllocatorSizes, SegmentSizesAreCudas) {
  EXPECT_EQ(segment_size_for(512), 2 * MiB);
  EXPECT_EQ(segment_size_for(1 * MiB), 2 * MiB);
  EXPECT_EQ(segment_size_for(1 * MiB + 512), 20 * MiB);
  EXPECT_EQ(segment_size_for(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(segment_size_for(10 * MiB), 10 * MiB);
  EXPECT_EQ(segment_size_for(11 * MiB + 512), 12 * MiB);
  EXPECT_TRUE(is_small_request(1 * MiB));
  EXPECT_FALSE(is_small_request(1 * MiB + 512));
}

// ---- configuration --------------------------------------------------------------------------

TEST(AllocatorConfigTest, ParsesAllKeys) {
  const AllocatorConfig c = AllocatorConfig::parse(
      " max_split_size_mb:100, garbage_collection_threshold:0.6,roundup_power2_divisions:8 ,caching:False");
  EXPECT_EQ(c.max_split_size, 100 * MiB);
  EXPECT_DOUBLE_EQ(c.garbage_collection_threshold, 0.6);
  EXPECT_EQ(c.roundup_power2_divisions, 8u);
  EXPECT_FALSE(c.caching);
  EXPECT_EQ(c.str(), "max_split_size_mb:100,garbage_collection_threshold:0.6,roundup_power2_divisions:8,caching:False");
  const AllocatorConfig d = AllocatorConfig::parse("");
  EXPECT_EQ(d.max_split_size, SIZE_MAX);
  EXPECT_TRUE(d.caching);
  EXPECT_EQ(d.str(), "");
}

void expect_parse_error(const std::string& text, const std::string& fragment) {
  try {
    AllocatorConfig::parse(text);
    ADD_FAILURE() << "no error for '" << text << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("MLU_ALLOC_CONF"), std::string::npos) << e.what();
  }
}

TEST(AllocatorConfigTest, BadValuesGiveClearErrors) {
  expect_parse_error("max_split_size_mb:20", "too small, must be > 20");
  expect_parse_error("max_split_size_mb:abc", "max_split_size_mb:abc: expected a non-negative integer");
  expect_parse_error("max_split_size_mb:-5", "expected a non-negative integer");
  expect_parse_error("max_split_size_mb:99999999999999999999999", "out of range");
  expect_parse_error("garbage_collection_threshold:1.5", "too big");
  expect_parse_error("garbage_collection_threshold:0", "too small");
  expect_parse_error("garbage_collection_threshold:x", "expected a number");
  expect_parse_error("roundup_power2_divisions:3", "power of 2");
  expect_parse_error("caching:maybe", "expected True or False");
  expect_parse_error("max_split_size_mb", "expected key:value");
  expect_parse_error("expandable_segments:True", "unrecognized option");
}

TEST(AllocatorConfigTest, ReadsTheEnvironment) {
  setenv("MLU_ALLOC_CONF", "max_split_size_mb:64", 1);
  setenv("MLU_NO_MEMORY_CACHING", "1", 1);
  AllocatorConfig c = AllocatorConfig::from_environment();
  EXPECT_EQ(c.max_split_size, 64 * MiB);
  EXPECT_FALSE(c.caching);
  setenv("MLU_NO_MEMORY_CACHING", "yes", 1);
  try {
    AllocatorConfig::from_environment();
    ADD_FAILURE() << "MLU_NO_MEMORY_CACHING=yes accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("MLU_NO_MEMORY_CACHING=yes"), std::string::npos) << e.what();
  }
  unsetenv("MLU_NO_MEMORY_CACHING");
  setenv("MLU_ALLOC_CONF", "bogus:1", 1);
  EXPECT_THROW(AllocatorConfig::from_environment(), std::invalid_argument);
  unsetenv("MLU_ALLOC_CONF");
  c = AllocatorConfig::from_environment();
  EXPECT_TRUE(c.caching);
  EXPECT_EQ(c.max_split_size, SIZE_MAX);
}

// ---- pools, splitting and merging -----------------------------------------------------------

TEST_F(AllocatorTest, SmallRequestsShareATwoMiBSegment) {
  CachingAllocator a;
  void* p1 = a.malloc(0, 1000, nullptr);
  void* p2 = a.malloc(0, 512, nullptr);
  void* p3 = a.malloc(0, 1, nullptr);
  EXPECT_EQ(c(p2), c(p1) + 1024);  // best fit splits the front of the segment
  EXPECT_EQ(c(p3), c(p2) + 512);
  auto s = flat(a);
  EXPECT_EQ(s["segment.all.current"], 1);
  EXPECT_EQ(s["segment.small_pool.current"], 1);
  EXPECT_EQ(s["segment.large_pool.current"], 0);
  EXPECT_EQ(s["reserved_bytes.small_pool.current"], static_cast<std::int64_t>(2 * MiB));
  EXPECT_EQ(s["allocated_bytes.all.current"], 1024 + 512 + 512);
  EXPECT_EQ(s["allocation.small_pool.current"], 3);
  EXPECT_EQ(s["inactive_split.small_pool.current"], 1);  // the rest of the segment
  EXPECT_EQ(s["inactive_split_bytes.small_pool.current"], static_cast<std::int64_t>(2 * MiB - 2048));
  EXPECT_EQ(s["num_device_alloc"], 1);
  EXPECT_EQ(driver_bytes(), 2 * MiB);  // reserved == live driver bytes

  // Freeing the middle block leaves a hole; freeing its neighbours merges everything back.
  a.free(p2);
  s = flat(a);
  EXPECT_EQ(s["inactive_split.small_pool.current"], 2);
  EXPECT_EQ(s["inactive_split_bytes.small_pool.current"], static_cast<std::int64_t>(2 * MiB - 2048 + 512));
  a.free(p1);
  a.free(p3);
  s = flat(a);
  EXPECT_EQ(s["inactive_split.all.current"], 0);
  EXPECT_EQ(s["inactive_split_bytes.all.current"], 0);
  EXPECT_EQ(s["allocated_bytes.all.current"], 0);
  EXPECT_EQ(s["active.all.current"], 0);
  EXPECT_EQ(s["segment.all.current"], 1);  // cached, not returned

  // The whole segment is one free block again: a 1 MiB request starts at its base.
  void* big = a.malloc(0, 1 * MiB, nullptr);
  EXPECT_EQ(big, p1);
  EXPECT_EQ(flat(a)["num_device_alloc"], 1);
  a.free(big);
}

TEST_F(AllocatorTest, LargeRequestsUseTwentyMiBSegmentsOrTheirOwnSize) {
  CachingAllocator a;
  void* q = a.malloc(0, 11 * MiB + 1, nullptr);  // >= 10 MiB: its own 12 MiB segment, not split
  auto s = flat(a);                               // (the 1 MiB - 512 rest is too small to split off)
  EXPECT_EQ(s["reserved_bytes.large_pool.current"], static_cast<std::int64_t>(12 * MiB));
  EXPECT_EQ(s["allocated_bytes.large_pool.current"], static_cast<std::int64_t>(12 * MiB));
  EXPECT_EQ(s["inactive_split.large_pool.current"], 0);
  void* p = a.malloc(0, 3 * MiB, nullptr);  // < 10 MiB: a 20 MiB segment, split
  s = flat(a);
  EXPECT_EQ(s["reserved_bytes.large_pool.current"], static_cast<std::int64_t>(32 * MiB));
  EXPECT_EQ(s["inactive_split_bytes.large_pool.current"], static_cast<std::int64_t>(17 * MiB));
  EXPECT_EQ(s["segment.large_pool.current"], 2);
  EXPECT_EQ(s["segment.small_pool.current"], 0);
  EXPECT_EQ(driver_bytes(), 32 * MiB);
  // A 5 MiB request fits in the 17 MiB remainder of the 20 MiB segment.
  void* r = a.malloc(0, 5 * MiB, nullptr);
  EXPECT_EQ(c(r), c(p) + 3 * MiB);
  EXPECT_EQ(flat(a)["num_device_alloc"], 2);
  a.free(p);
  a.free(q);
  a.free(r);
  s = flat(a);
  EXPECT_EQ(s["allocated_bytes.all.current"], 0);
  EXPECT_EQ(s["allocated_bytes.all.peak"], static_cast<std::int64_t>(20 * MiB));
  EXPECT_EQ(s["allocated_bytes.all.allocated"], static_cast<std::int64_t>(20 * MiB));
  EXPECT_EQ(s["allocated_bytes.all.freed"], s["allocated_bytes.all.allocated"]);
  EXPECT_EQ(s["reserved_bytes.all.current"], static_cast<std::int64_t>(32 * MiB));
  EXPECT_EQ(s["inactive_split.all.current"], 0);
}

TEST_F(AllocatorTest, EmptyCacheReturnsUnsplitSegmentsOnly) {
  CachingAllocator a;
  void* keep = a.malloc(0, 4096, nullptr);  // keeps its small segment split
  void* big = a.malloc(0, 12 * MiB, nullptr);
  a.free(big);
  EXPECT_EQ(driver_bytes(), 14 * MiB);
  a.empty_cache();
  auto s = flat(a);
  EXPECT_EQ(s["reserved_bytes.all.current"], static_cast<std::int64_t>(2 * MiB));
  EXPECT_EQ(s["num_device_free"], 1);
  EXPECT_EQ(driver_bytes(), 2 * MiB);
  a.free(keep);
  a.empty_cache();
  EXPECT_EQ(flat(a)["reserved_bytes.all.current"], 0);
  EXPECT_EQ(driver_bytes(), 0u);
}

TEST_F(AllocatorTest, ZeroBytesAndUnknownPointers) {
  CachingAllocator a;
  EXPECT_EQ(a.malloc(0, 0, nullptr), nullptr);
  a.free(nullptr);
  void* p = a.malloc(0, 100, nullptr);
  EXPECT_THROW(a.free(c(p) + 512), std::invalid_argument);
  a.free(p);
  EXPECT_THROW(a.free(p), std::invalid_argument);  // double free
  EXPECT_THROW(a.malloc(7, 100, nullptr), std::invalid_argument);
  EXPECT_THROW(a.malloc(-1, 100, nullptr), std::invalid_argument);
}

// ---- queues ---------------------------------------------------------------------------------

TEST_F(AllocatorTest, BlocksAreReusedOnlyOnTheirQueue) {
  CachingAllocator a;
  cnrtQueue_t q1 = new_queue(), q2 = new_queue();
  void* p = a.malloc(0, 4096, q1);
  a.free(p);
  void* other = a.malloc(0, 4096, q2);  // q1's cached blocks are not for q2: a second segment
  EXPECT_NE(other, p);
  EXPECT_EQ(flat(a)["num_device_alloc"], 2);
  void* again = a.malloc(0, 4096, q1);
  EXPECT_EQ(again, p);
  EXPECT_EQ(flat(a)["num_device_alloc"], 2);
  a.free(other);
  a.free(again);
  EXPECT_EQ(cnrtQueueDestroy(q1), cnrtSuccess);
  EXPECT_EQ(cnrtQueueDestroy(q2), cnrtSuccess);
}

TEST_F(AllocatorTest, RecordStreamDelaysReuseUntilTheOtherQueueIsDone) {
  CachingAllocator a;
  cnrtQueue_t side = new_queue();
  void* scratch = nullptr;
  ASSERT_EQ(cnrtMalloc(&scratch, 16 * MiB), cnrtSuccess);
  void* p = a.malloc(0, 4096, nullptr);
  a.record_stream(p, side);
  a.record_stream(p, nullptr);  // its own queue: no effect
  // Keep `side` busy for a while (a 16 MiB memset), then free p.
  ASSERT_EQ(cnrtMemsetAsync(scratch, 1, 16 * MiB, side), cnrtSuccess);
  a.free(p);
  auto s = flat(a);
  EXPECT_EQ(s["allocation.all.current"], 0);
  EXPECT_EQ(s["active.all.current"], 1);  // freed but still in use on `side`
  EXPECT_EQ(s["active_bytes.all.current"], 512 * 8);
  void* q = a.malloc(0, 4096, nullptr);
  EXPECT_NE(q, p);  // not reusable yet
  ASSERT_EQ(cnrtQueueSync(side), cnrtSuccess);
  void* r = a.malloc(0, 4096, nullptr);  // the notifier has completed: p is free again
  EXPECT_EQ(r, p);
  EXPECT_EQ(flat(a)["active.all.current"], 2);
  a.free(q);
  a.free(r);
  EXPECT_EQ(cnrtFree(scratch), cnrtSuccess);
  EXPECT_EQ(cnrtQueueDestroy(side), cnrtSuccess);
}

TEST_F(AllocatorTest, EmptyCacheWaitsForPendingQueueUses) {
  CachingAllocator a;
  cnrtQueue_t side = new_queue();
  void* scratch = nullptr;
  ASSERT_EQ(cnrtMalloc(&scratch, 16 * MiB), cnrtSuccess);
  void* p = a.malloc(0, 12 * MiB, nullptr);
  a.record_stream(p, side);
  ASSERT_EQ(cnrtMemsetAsync(scratch, 1, 16 * MiB, side), cnrtSuccess);
  a.free(p);
  a.empty_cache();
  EXPECT_EQ(cnrtQueueQuery(side), cnrtSuccess);  // empty_cache waited for it
  EXPECT_EQ(flat(a)["reserved_bytes.all.current"], 0);
  EXPECT_EQ(driver_bytes(), 16 * MiB);
  EXPECT_EQ(cnrtFree(scratch), cnrtSuccess);
  EXPECT_EQ(cnrtQueueDestroy(side), cnrtSuccess);
}

// ---- out of memory --------------------------------------------------------------------------

TEST_F(AllocatorTest, FreesTheCacheAndRetriesBeforeGivingUp) {
  CachingAllocator a;
  a.free(a.malloc(0, 40 * MiB, nullptr));  // 40 MiB cached of 64
  void* p = a.malloc(0, 50 * MiB, nullptr);  // fails once, frees the cache, succeeds
  auto s = flat(a);
  EXPECT_EQ(s["num_alloc_retries"], 1);
  EXPECT_EQ(s["num_ooms"], 0);
  EXPECT_EQ(s["reserved_bytes.all.current"], static_cast<std::int64_t>(50 * MiB));
  EXPECT_EQ(driver_bytes(), 50 * MiB);
  EXPECT_EQ(cnrtGetLastError(), cnrtSuccess);  // the handled failure left no error behind
  a.free(p);
}

TEST_F(AllocatorTest, OutOfMemoryErrorSaysWhatWasRequestedAndWhatIsLeft) {
  CachingAllocator a;
  void* held = a.malloc(0, 40 * MiB, nullptr);
  try {
    a.malloc(0, 30 * MiB + 100, nullptr);
    FAIL() << "no OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("out of memory"), std::string::npos) << m;
    EXPECT_NE(m.find("Tried to allocate 30.00 MiB (31457380 bytes)"), std::string::npos) << m;
    EXPECT_NE(m.find("64.00 MiB (67108864 bytes) total capacity"), std::string::npos) << m;
    EXPECT_NE(m.find("40.00 MiB (41943040 bytes) already allocated"), std::string::npos) << m;
    EXPECT_NE(m.find("24.00 MiB (25165824 bytes) free"), std::string::npos) << m;
    EXPECT_NE(m.find("40.00 MiB (41943040 bytes) reserved in total"), std::string::npos) << m;
    EXPECT_EQ(e.requested, 30 * MiB + 100);
    EXPECT_EQ(e.free, 24 * MiB);
    EXPECT_EQ(e.allocated, 40 * MiB);
    EXPECT_EQ(e.reserved, 40 * MiB);
    EXPECT_EQ(e.device, 0);
  }
  auto s = flat(a);
  EXPECT_EQ(s["num_ooms"], 1);
  EXPECT_EQ(s["num_alloc_retries"], 1);
  EXPECT_EQ(cnrtGetLastError(), cnrtSuccess);
  // Still usable: free and allocate again.
  a.free(held);
  void* p = a.malloc(0, 30 * MiB, nullptr);
  EXPECT_NE(p, nullptr);
  a.free(p);
  EXPECT_THROW(a.malloc(0, SIZE_MAX / 2, nullptr), OutOfMemoryError);
  EXPECT_EQ(flat(a)["num_ooms"], 2);
}

TEST_F(AllocatorTest, MemoryFractionLimitsReservedBytes) {
  CachingAllocator a;
  a.set_memory_fraction(0.25, 0);  // 16 MiB
  void* p = a.malloc(0, 12 * MiB, nullptr);
  try {
    a.malloc(0, 12 * MiB, nullptr);
    FAIL() << "the fraction was not enforced";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("16.00 MiB (16777216 bytes) allowed"), std::string::npos) << e.what();
  }
  a.free(p);
  EXPECT_THROW(a.set_memory_fraction(1.5, 0), std::invalid_argument);
}

// ---- max_split_size and garbage collection --------------------------------------------------

TEST_F(AllocatorTest, OversizeBlocksAreNotSplitNorGivenToSmallerRequests) {
  CachingAllocator a(AllocatorConfig::parse("max_split_size_mb:21"));
  void* b1 = a.malloc(0, 22 * MiB, nullptr);
  void* b2 = a.malloc(0, 22 * MiB, nullptr);
  auto s = flat(a);
  EXPECT_EQ(s["max_split_size"], static_cast<std::int64_t>(21 * MiB));
  EXPECT_EQ(s["oversize_allocations.current"], 2);
  EXPECT_EQ(s["oversize_segments.current"], 2);
  a.free(b1);
  a.free(b2);
  s = flat(a);
  EXPECT_EQ(s["oversize_allocations.current"], 0);
  EXPECT_EQ(s["oversize_segments.current"], 2);
  // A 12 MiB request may not take a cached 22 MiB block: a 12 MiB segment of its own.
  void* held = a.malloc(0, 12 * MiB, nullptr);
  EXPECT_NE(held, b1);
  EXPECT_NE(held, b2);
  EXPECT_EQ(flat(a)["reserved_bytes.all.current"], static_cast<std::int64_t>(56 * MiB));
  // Another 12 MiB does not fit next to 56 MiB: one cached oversize block is released (no full
  // flush, so no retry is counted).
  void* more = a.malloc(0, 12 * MiB, nullptr);
  s = flat(a);
  EXPECT_EQ(s["num_alloc_retries"], 0);
  EXPECT_EQ(s["reserved_bytes.all.current"], static_cast<std::int64_t>(46 * MiB));
  EXPECT_EQ(s["oversize_segments.current"], 1);
  // An oversize request reuses a cached oversize block less than 20 MiB larger, unsplit.
  void* again = a.malloc(0, 21 * MiB + 512, nullptr);
  EXPECT_TRUE(again == b1 || again == b2);
  s = flat(a);
  EXPECT_EQ(s["reserved_bytes.all.current"], static_cast<std::int64_t>(46 * MiB));
  EXPECT_EQ(s["allocated_bytes.all.current"], static_cast<std::int64_t>(46 * MiB));
  EXPECT_EQ(s["oversize_allocations.current"], 1);
  a.free(held);
  a.free(more);
  a.free(again);
}

TEST_F(AllocatorTest, GarbageCollectionReleasesOldBlocksBeforeTheLimit) {
  for (bool gc : {false, true}) {
    ASSERT_EQ(mlusimLoadConfig("tiny"), cnrtSuccess);
    CachingAllocator a(AllocatorConfig::parse(gc ? "garbage_collection_threshold:0.5" : ""));
    a.set_memory_fraction(0.5, 0);  // 32 MiB allowed; the threshold is 16 MiB
    a.free(a.malloc(0, 12 * MiB, nullptr));
    a.free(a.malloc(0, 14 * MiB, nullptr));  // 26 MiB cached
    void* p = a.malloc(0, 16 * MiB, nullptr);  // fits in neither cached block
    auto s = flat(a);
    if (gc) {
      // The older cached block (12 MiB) was collected before trying: 14 + 16 fit in 32.
      EXPECT_EQ(s["num_alloc_retries"], 0);
      EXPECT_EQ(s["reserved_bytes.all.current"], static_cast<std::int64_t>(30 * MiB));
    } else {
      EXPECT_EQ(s["num_alloc_retries"], 1);  // hit the limit, flushed everything, retried
      EXPECT_EQ(s["reserved_bytes.all.current"], static_cast<std::int64_t>(16 * MiB));
    }
    a.free(p);
  }
}

// ---- caching off ----------------------------------------------------------------------------

TEST_F(AllocatorTest, CachingOffReturnsEveryBlockToTheDriver) {
  CachingAllocator a(AllocatorConfig::parse("caching:False"));
  void* p = a.malloc(0, 1000, nullptr);
  void* q = a.malloc(0, 3 * MiB, nullptr);
  EXPECT_EQ(driver_bytes(), 1024 + 3 * MiB);  // no segment rounding
  auto s = flat(a);
  EXPECT_EQ(s["reserved_bytes.all.current"], static_cast<std::int64_t>(1024 + 3 * MiB));
  EXPECT_EQ(s["allocated_bytes.all.current"], s["reserved_bytes.all.current"]);
  a.free(p);
  a.free(q);
  EXPECT_EQ(driver_bytes(), 0u);
  s = flat(a);
  EXPECT_EQ(s["num_device_alloc"], 2);
  EXPECT_EQ(s["num_device_free"], 2);
  EXPECT_EQ(s["segment.all.current"], 0);
}

TEST_F(AllocatorTest, TurningCachingOffEmptiesTheCache) {
  CachingAllocator a;
  a.free(a.malloc(0, 1000, nullptr));
  EXPECT_EQ(driver_bytes(), 2 * MiB);
  a.set_config(AllocatorConfig::parse("caching:False"));
  EXPECT_EQ(driver_bytes(), 0u);
  EXPECT_FALSE(a.config().caching);
}

// ---- statistics -----------------------------------------------------------------------------

TEST_F(AllocatorTest, StatsHaveTorchsKeysAndResets) {
  CachingAllocator a;
  const auto flatlist = a.stats(0).flatten();
  std::map<std::string, std::int64_t> s(flatlist.begin(), flatlist.end());
  for (const char* name : {"allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
                           "active_bytes", "inactive_split_bytes", "requested_bytes"})
    for (const char* pool : {"all", "small_pool", "large_pool"})
      for (const char* metric : {"current", "peak", "allocated", "freed"})
        EXPECT_EQ(s.count(std::string(name) + "." + pool + "." + metric), 1u) << name << "." << pool << "." << metric;
  for (const char* key : {"num_alloc_retries", "num_ooms", "max_split_size", "oversize_allocations.current",
                          "oversize_segments.peak", "num_device_alloc", "num_device_free"})
    EXPECT_EQ(s.count(key), 1u) << key;
  EXPECT_EQ(s.size(), 9u * 3 * 4 + 2 * 4 + 5);
  EXPECT_EQ(s["max_split_size"], -1);
  EXPECT_TRUE(std::is_sorted(flatlist.begin(), flatlist.end()));

  void* p = a.malloc(0, 3000, nullptr);  // 3072
  EXPECT_EQ(flat(a)["requested_bytes.small_pool.current"], 3000);  // the caller's size, not the block's
  void* q = a.malloc(0, 2 * MiB, nullptr);
  a.free(p);
  auto t = flat(a);
  EXPECT_EQ(t["allocated_bytes.all.current"], static_cast<std::int64_t>(2 * MiB));
  EXPECT_EQ(t["requested_bytes.all.current"], static_cast<std::int64_t>(2 * MiB));
  EXPECT_EQ(t["requested_bytes.small_pool.freed"], 3000);
  EXPECT_EQ(t["allocated_bytes.all.peak"], static_cast<std::int64_t>(2 * MiB + 3072));
  EXPECT_EQ(t["allocated_bytes.small_pool.freed"], 3072);
  EXPECT_EQ(t["allocation.all.allocated"], 2);
  a.reset_peak_stats(0);
  t = flat(a);
  EXPECT_EQ(t["allocated_bytes.all.peak"], static_cast<std::int64_t>(2 * MiB));
  EXPECT_EQ(t["allocation.all.allocated"], 2);
  a.reset_accumulated_stats(0);
  t = flat(a);
  EXPECT_EQ(t["allocation.all.allocated"], 0);
  EXPECT_EQ(t["allocated_bytes.small_pool.freed"], 0);
  EXPECT_EQ(t["num_device_alloc"], 0);
  EXPECT_EQ(t["allocated_bytes.all.current"], static_cast<std::int64_t>(2 * MiB));
  a.free(q);
}

TEST_F(AllocatorTest, SnapshotListsSegmentsAndBlocks) {
  CachingAllocator a;
  void* p = a.malloc(0, 1000, nullptr);
  void* q = a.malloc(0, 12 * MiB, nullptr);
  const auto segs = a.snapshot();
  ASSERT_EQ(segs.size(), 2u);
  std::size_t total = 0;
  for (const SegmentInfo& s : segs) {
    total += s.total_size;
    if (s.large) {
      EXPECT_EQ(s.address, reinterpret_cast<std::uintptr_t>(q));
      ASSERT_EQ(s.blocks.size(), 1u);
      EXPECT_TRUE(s.blocks[0].allocated);
    } else {
      EXPECT_EQ(s.address, reinterpret_cast<std::uintptr_t>(p));
      ASSERT_EQ(s.blocks.size(), 2u);
      EXPECT_EQ(s.blocks[0].size, 1024u);
      EXPECT_FALSE(s.blocks[1].allocated);
      EXPECT_EQ(s.allocated_size, 1024u);
    }
  }
  EXPECT_EQ(total, 14 * MiB);
  EXPECT_EQ(a.find(static_cast<char*>(q) + 5).first, q);
  EXPECT_EQ(a.find(static_cast<char*>(p) + 2000).first, nullptr);  // free part of the segment
  EXPECT_EQ(a.live_allocations(), 2u);
  a.free(p);
  a.free(q);
}

TEST_F(AllocatorTest, EventsReachTheSink) {
  CachingAllocator a;
  std::vector<AllocatorEvent> events;
  a.set_event_sink([&](const AllocatorEvent& e) { events.push_back(e); });
  void* p = a.malloc(0, 100, nullptr);
  a.free(p);
  a.empty_cache();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].kind, AllocatorEventKind::kSegmentAlloc);
  EXPECT_EQ(events[0].size, 2 * MiB);
  EXPECT_EQ(events[1].kind, AllocatorEventKind::kMalloc);
  EXPECT_EQ(events[1].size, 512u);
  EXPECT_EQ(events[1].allocated_bytes, 512);
  EXPECT_EQ(events[1].reserved_bytes, static_cast<std::int64_t>(2 * MiB));
  EXPECT_EQ(events[2].kind, AllocatorEventKind::kFree);
  EXPECT_EQ(events[2].allocated_bytes, 0);
  EXPECT_EQ(events[3].kind, AllocatorEventKind::kSegmentFree);
  EXPECT_EQ(events[3].reserved_bytes, 0);
}

// ---- devices, handles, abandon --------------------------------------------------------------

TEST_F(AllocatorTest, AllocatesOnTheNamedDeviceAndKeepsTheCurrentOne) {
  const char* two[] = {"devices=2"};
  ASSERT_EQ(mlusimLoadConfigWithOverrides("tiny", two, 1), cnrtSuccess) << mlusimGetLastErrorMessage();
  CachingAllocator a;
  void* p = a.malloc(1, 4096, nullptr);
  cnrtPointerAttributes_t attr{};
  ASSERT_EQ(cnrtPointerGetAttributes(&attr, p), cnrtSuccess);
  EXPECT_EQ(attr.device, 1);
  int current = -1;
  ASSERT_EQ(cnrtGetDevice(&current), cnrtSuccess);
  EXPECT_EQ(current, 0);
  EXPECT_EQ(driver_bytes(1), 2 * MiB);
  EXPECT_EQ(driver_bytes(0), 0u);
  EXPECT_EQ(flat(a, 1)["allocation.all.current"], 1);
  EXPECT_EQ(flat(a, 0)["allocation.all.current"], 0);
  a.free(p);
}

TEST_F(AllocatorTest, AbandonForgetsEverythingAndStaleHandlesAreIgnored) {
  CachingAllocator a;
  const auto old = a.allocate(0, 4096, nullptr);
  ASSERT_EQ(mlusimLoadConfig("tiny"), cnrtSuccess);  // the driver freed everything
  a.abandon();
  EXPECT_EQ(a.live_allocations(), 0u);
  EXPECT_EQ(flat(a)["reserved_bytes.all.current"], 0);
  const auto fresh = a.allocate(0, 4096, nullptr);  // very likely the same address as `old`
  a.release(old.handle);                             // stale: must not free `fresh`
  EXPECT_EQ(a.live_allocations(), 1u);
  EXPECT_EQ(flat(a)["allocation.all.current"], 1);
  a.release(fresh.handle);
  EXPECT_EQ(flat(a)["allocation.all.current"], 0);
}

}  // namespace
}  // namespace mlusim::bridge
