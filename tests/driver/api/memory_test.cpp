// Device and pinned host allocations: success paths, exact cnrtMemGetInfo, every invalid
// pointer, and out-of-memory with recovery.
#include <cstring>
#include <string>
#include <vector>

#include "driver_test.h"

namespace mlusim::driver::testing {
namespace {

using MemoryTest = DriverTest;

TEST_F(MemoryTest, MallocReturnsDistinctAlignedDeviceMemory) {
  void* a = dmalloc(100);
  void* b = dmalloc(100);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % 512, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % 512, 0u);
  cnrtPointerAttributes_t attr;
  ASSERT_EQ(cnrtPointerGetAttributes(&attr, static_cast<char*>(a) + 10), cnrtSuccess);
  EXPECT_EQ(attr.type, cnrtMemTypeDevice);
  EXPECT_EQ(attr.device, 0);
  EXPECT_EQ(attr.size, 100u);
  EXPECT_EQ(attr.deviceBasePointer, a);
  EXPECT_EQ(cnrtFree(a), cnrtSuccess);
  EXPECT_EQ(cnrtFree(b), cnrtSuccess);
}

TEST_F(MemoryTest, MemGetInfoCountsRoundedAllocationsExactly) {
  size_t free0 = 0, total = 0;
  ASSERT_EQ(cnrtMemGetInfo(&free0, &total), cnrtSuccess);
  EXPECT_EQ(total, kTinyDram);
  EXPECT_EQ(free0, kTinyDram);
  void* a = dmalloc(1);     // 512
  void* b = dmalloc(513);   // 1024
  void* c = dmalloc(4096);  // 4096
  EXPECT_EQ(free_bytes(), kTinyDram - 512 - 1024 - 4096);
  ASSERT_EQ(cnrtFree(b), cnrtSuccess);
  EXPECT_EQ(free_bytes(), kTinyDram - 512 - 4096);
  ASSERT_EQ(cnrtFree(a), cnrtSuccess);
  ASSERT_EQ(cnrtFree(c), cnrtSuccess);
  EXPECT_EQ(free_bytes(), kTinyDram);
  EXPECT_CNRT_ERROR(cnrtMemGetInfo(nullptr, &total), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemGetInfo(&free0, nullptr), cnrtErrorArgsInvalid);
}

TEST_F(MemoryTest, MallocBadArguments) {
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_CNRT_ERROR(cnrtMalloc(nullptr, 16), cnrtErrorArgsInvalid);
  EXPECT_EQ(cnrtMalloc(&p, 0), cnrtSuccess);
  EXPECT_EQ(p, nullptr) << "a zero-byte allocation is NULL";
  EXPECT_CNRT_ERROR(cnrtMalloc(&p, kTinyDram + 1), cnrtErrorNoMem);
  EXPECT_CNRT_ERROR(cnrtMalloc(&p, ~size_t{0}), cnrtErrorNoMem);
  EXPECT_EQ(free_bytes(), kTinyDram);
}

TEST_F(MemoryTest, FreeRejectsEverythingButALiveAllocationStart) {
  EXPECT_EQ(cnrtFree(nullptr), cnrtSuccess);
  void* a = dmalloc(4096);
  EXPECT_CNRT_ERROR(cnrtFree(static_cast<char*>(a) + 512), cnrtErrorArgsInvalid);  // interior
  EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find("not its start"), std::string::npos);
  int on_stack = 0;
  EXPECT_CNRT_ERROR(cnrtFree(&on_stack), cnrtErrorArgsInvalid);  // host memory
  void* pinned = nullptr;
  ASSERT_EQ(cnrtHostMalloc(&pinned, 64), cnrtSuccess);
  EXPECT_CNRT_ERROR(cnrtFree(pinned), cnrtErrorArgsInvalid);  // pinned host memory
  EXPECT_EQ(cnrtFree(a), cnrtSuccess);
  EXPECT_CNRT_ERROR(cnrtFree(a), cnrtErrorArgsInvalid);  // double free
  EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find("already freed"), std::string::npos);
  EXPECT_CNRT_ERROR(cnrtFree(reinterpret_cast<void*>(0x10)), cnrtErrorArgsInvalid);  // foreign
  EXPECT_EQ(cnrtFreeHost(pinned), cnrtSuccess);
  EXPECT_EQ(free_bytes(), kTinyDram) << "failed frees change nothing";
}

TEST_F(MemoryTest, FreeWaitsForQueuedWorkOnTheAllocation) {
  const size_t n = 1 << 16;
  void* d = dmalloc(n * sizeof(float));
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  float value = 3.0f;
  int count = static_cast<int>(n);
  void* args[] = {&d, &value, &count};
  ASSERT_EQ(cnrtInvokeKernel(fill_kernel, dim(8), cnrtFuncTypeBlock, args, 0, q), cnrtSuccess);
  const double before = host_ns();
  EXPECT_EQ(cnrtFree(d), cnrtSuccess);
  EXPECT_EQ(cnrtQueueQuery(q), cnrtSuccess) << "cnrtFree returned after the queued kernel";
  EXPECT_GT(host_ns(), before + kApiNs);
  EXPECT_EQ(cnrtQueueSync(q), cnrtSuccess) << "the kernel did not fault on freed memory";
}

TEST_F(MemoryTest, HostMallocGivesPinnedTrackedMemory) {
  void* h = nullptr;
  ASSERT_EQ(cnrtHostMalloc(&h, 10000), cnrtSuccess);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(h) % 4096, 0u);
  std::memset(h, 7, 10000);  // host accessible
  cnrtPointerAttributes_t attr;
  ASSERT_EQ(cnrtPointerGetAttributes(&attr, static_cast<char*>(h) + 9999), cnrtSuccess);
  EXPECT_EQ(attr.type, cnrtMemTypeHost);
  EXPECT_EQ(attr.size, 10000u);
  int plain = 0;
  ASSERT_EQ(cnrtPointerGetAttributes(&attr, &plain), cnrtSuccess);
  EXPECT_EQ(attr.type, cnrtMemTypeUnregistered);
  EXPECT_CNRT_ERROR(cnrtPointerGetAttributes(nullptr, h), cnrtErrorArgsInvalid);
  EXPECT_EQ(cnrtFreeHost(h), cnrtSuccess);
}

TEST_F(MemoryTest, HostMallocBadArguments) {
  void* h = reinterpret_cast<void*>(0x1);
  EXPECT_CNRT_ERROR(cnrtHostMalloc(nullptr, 16), cnrtErrorArgsInvalid);
  EXPECT_EQ(cnrtHostMalloc(&h, 0), cnrtSuccess);
  EXPECT_EQ(h, nullptr);
  EXPECT_CNRT_ERROR(cnrtHostMalloc(&h, ~size_t{0} - 4096), cnrtErrorSysNoMem);
  EXPECT_EQ(cnrtFreeHost(nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtHostMalloc(&h, 128), cnrtSuccess);
  EXPECT_CNRT_ERROR(cnrtFreeHost(static_cast<char*>(h) + 1), cnrtErrorArgsInvalid);  // interior
  std::vector<char> plain(16);
  EXPECT_CNRT_ERROR(cnrtFreeHost(plain.data()), cnrtErrorArgsInvalid);  // not pinned
  void* d = dmalloc(64);
  EXPECT_CNRT_ERROR(cnrtFreeHost(d), cnrtErrorArgsInvalid);  // device memory
  EXPECT_EQ(cnrtFreeHost(h), cnrtSuccess);
  EXPECT_CNRT_ERROR(cnrtFreeHost(h), cnrtErrorArgsInvalid);  // double free
  EXPECT_EQ(cnrtFree(d), cnrtSuccess);
}

TEST_F(MemoryTest, OutOfMemoryThenRecoveryLeavesStateIntact) {
  // Allocate 1 MiB blocks until the device is full.
  std::vector<void*> blocks;
  for (;;) {
    void* p = nullptr;
    const cnrtRet_t r = cnrtMalloc(&p, 1 << 20);
    if (r != cnrtSuccess) {
      EXPECT_EQ(r, cnrtErrorNoMem);
      EXPECT_EQ(cnrtGetLastError(), cnrtErrorNoMem);
      break;
    }
    blocks.push_back(p);
    ASSERT_LE(blocks.size(), 64u);
  }
  EXPECT_EQ(blocks.size(), 64u) << "64 MiB of DRAM holds exactly 64 blocks of 1 MiB";
  EXPECT_EQ(free_bytes(), 0u);
  void* small = nullptr;
  EXPECT_CNRT_ERROR(cnrtMalloc(&small, 1), cnrtErrorNoMem);
  // Earlier allocations still work.
  std::vector<float> v(256, 1.5f);
  upload(blocks[10], v);
  EXPECT_EQ(download<float>(blocks[10], 256), v);
  // Free every other block: 32 MiB free but no 2 MiB hole.
  for (std::size_t i = 0; i < blocks.size(); i += 2) ASSERT_EQ(cnrtFree(blocks[i]), cnrtSuccess);
  EXPECT_EQ(free_bytes(), 32u << 20);
  void* big = nullptr;
  EXPECT_CNRT_ERROR(cnrtMalloc(&big, 2 << 20), cnrtErrorNoMem);
  EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find("largest free block 1048576"), std::string::npos)
      << mlusimGetLastErrorMessage();
  // Free the rest: neighbours coalesce and the whole device is one block again.
  for (std::size_t i = 1; i < blocks.size(); i += 2) ASSERT_EQ(cnrtFree(blocks[i]), cnrtSuccess);
  EXPECT_EQ(free_bytes(), kTinyDram);
  ASSERT_EQ(cnrtMalloc(&big, kTinyDram), cnrtSuccess) << "nothing leaked, nothing fragmented";
  EXPECT_EQ(free_bytes(), 0u);
  EXPECT_EQ(cnrtFree(big), cnrtSuccess);
  mlusimDeviceStats_t s;
  ASSERT_EQ(mlusimGetDeviceStats(0, &s), cnrtSuccess);
  EXPECT_EQ(s.live_allocations, 0u);
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.peak_allocated_bytes, kTinyDram);
}

TEST_F(MemoryTest, BestFitReusesTheSmallestHole) {
  void* a = dmalloc(4096);
  void* gap_big = dmalloc(8192);
  void* b = dmalloc(4096);
  void* gap_small = dmalloc(1024);
  void* c = dmalloc(4096);
  ASSERT_EQ(cnrtFree(gap_big), cnrtSuccess);
  ASSERT_EQ(cnrtFree(gap_small), cnrtSuccess);
  void* p = dmalloc(1000);
  EXPECT_EQ(p, gap_small) << "best fit takes the 1 KiB hole, not the 8 KiB one";
  for (void* q : {a, b, c, p}) EXPECT_EQ(cnrtFree(q), cnrtSuccess);
}

TEST_F(MemoryTest, AllocationsArePerDevice) {
  load("tiny", {"devices=2"});
  void* d0 = dmalloc(1 << 20);
  ASSERT_EQ(cnrtSetDevice(1), cnrtSuccess);
  EXPECT_EQ(free_bytes(), kTinyDram) << "device 1 is untouched by device 0's allocation";
  void* d1 = dmalloc(1 << 20);
  cnrtPointerAttributes_t attr;
  ASSERT_EQ(cnrtPointerGetAttributes(&attr, d1), cnrtSuccess);
  EXPECT_EQ(attr.device, 1);
  EXPECT_EQ(cnrtFree(d0), cnrtSuccess) << "a pointer is freed on its own device, whatever the current one";
  EXPECT_EQ(cnrtFree(d1), cnrtSuccess);
}

}  // namespace
}  // namespace mlusim::driver::testing
