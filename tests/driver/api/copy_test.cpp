// Copies and memsets: data correctness in every direction, direction inference, and every
// rejected pointer, range and direction.
#include <sys/mman.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "driver_test.h"

namespace mlusim::driver::testing {
namespace {

class CopyTest : public DriverTest {
 protected:
  std::vector<float> iota(std::size_t n, float start = 0.0f) {
    std::vector<float> v(n);
    std::iota(v.begin(), v.end(), start);
    return v;
  }
};

TEST_F(CopyTest, RoundTripInEveryDirection) {
  const std::size_t n = 1000;
  const std::vector<float> src = iota(n, 1.0f);
  void* a = dmalloc(n * sizeof(float));
  void* b = dmalloc(n * sizeof(float));
  ASSERT_EQ(cnrtMemcpy(a, const_cast<float*>(src.data()), n * sizeof(float), cnrtMemcpyHostToDev), cnrtSuccess);
  ASSERT_EQ(cnrtMemcpy(b, a, n * sizeof(float), cnrtMemcpyDevToDev), cnrtSuccess);
  std::vector<float> back(n);
  ASSERT_EQ(cnrtMemcpy(back.data(), b, n * sizeof(float), cnrtMemcpyDevToHost), cnrtSuccess);
  EXPECT_EQ(back, src);
  std::vector<float> h2h(n);
  ASSERT_EQ(cnrtMemcpy(h2h.data(), back.data(), n * sizeof(float), cnrtMemcpyHostToHost), cnrtSuccess);
  EXPECT_EQ(h2h, src);
}

TEST_F(CopyTest, NoDirectionInfersFromThePointers) {
  const std::vector<float> src = iota(256);
  void* a = dmalloc(1024);
  void* b = dmalloc(1024);
  std::vector<float> back(256), h2h(256);
  EXPECT_EQ(cnrtMemcpy(a, const_cast<float*>(src.data()), 1024, cnrtMemcpyNoDirection), cnrtSuccess);
  EXPECT_EQ(cnrtMemcpy(b, a, 1024, cnrtMemcpyNoDirection), cnrtSuccess);
  EXPECT_EQ(cnrtMemcpy(back.data(), b, 1024, cnrtMemcpyNoDirection), cnrtSuccess);
  EXPECT_EQ(cnrtMemcpy(h2h.data(), back.data(), 1024, cnrtMemcpyNoDirection), cnrtSuccess);
  EXPECT_EQ(h2h, src);
}

TEST_F(CopyTest, CopiesInsideAnAllocationAtAnOffset) {
  void* a = dmalloc(4096);
  const std::vector<float> v = iota(16, 5.0f);
  char* mid = static_cast<char*>(a) + 1000;
  ASSERT_EQ(cnrtMemcpy(mid, const_cast<float*>(v.data()), 64, cnrtMemcpyHostToDev), cnrtSuccess);
  std::vector<float> back(16);
  ASSERT_EQ(cnrtMemcpy(back.data(), mid, 64, cnrtMemcpyDevToHost), cnrtSuccess);
  EXPECT_EQ(back, v);
  // Up to the last byte of the requested size is fine.
  ASSERT_EQ(cnrtMemcpy(static_cast<char*>(a) + 4096 - 64, back.data(), 64, cnrtMemcpyHostToDev), cnrtSuccess);
}

TEST_F(CopyTest, InvalidDirectionValues) {
  void* a = dmalloc(64);
  char h[64] = {};
  EXPECT_CNRT_ERROR(cnrtMemcpy(a, h, 64, static_cast<cnrtMemTransDir_t>(6)), cnrtErrorMemcpyDirectionInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(a, h, 64, static_cast<cnrtMemTransDir_t>(-1)), cnrtErrorMemcpyDirectionInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(a, h, 0, static_cast<cnrtMemTransDir_t>(99)), cnrtErrorMemcpyDirectionInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpyAsync(a, h, 64, nullptr, static_cast<cnrtMemTransDir_t>(6)), cnrtErrorMemcpyDirectionInvalid);
}

TEST_F(CopyTest, DirectionsThatDoNotMatchThePointers) {
  void* a = dmalloc(64);
  void* b = dmalloc(64);
  char h[64] = {}, h2[64] = {};
  EXPECT_CNRT_ERROR(cnrtMemcpy(h, h2, 64, cnrtMemcpyHostToDev), cnrtErrorMemcpyDirectionInvalid);  // host dst
  EXPECT_CNRT_ERROR(cnrtMemcpy(a, b, 64, cnrtMemcpyHostToDev), cnrtErrorMemcpyDirectionInvalid);   // device src
  EXPECT_CNRT_ERROR(cnrtMemcpy(a, h, 64, cnrtMemcpyDevToHost), cnrtErrorMemcpyDirectionInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(h, a, 64, cnrtMemcpyDevToDev), cnrtErrorMemcpyDirectionInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(a, h, 64, cnrtMemcpyHostToHost), cnrtErrorMemcpyDirectionInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(h, h2, 64, cnrtMemcpyPeerToPeer), cnrtErrorMemcpyDirectionInvalid);
  EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find("cnrtMemcpyPeerToPeer"), std::string::npos);
  EXPECT_CNRT_ERROR(cnrtMemcpyAsync_V3(h, a, 64, nullptr, cnrtMemcpyHostToDev), cnrtErrorMemcpyDirectionInvalid);
}

TEST_F(CopyTest, NullFreedAndOutOfRangePointers) {
  void* a = dmalloc(1000);
  std::vector<char> h(4096);
  EXPECT_CNRT_ERROR(cnrtMemcpy(nullptr, h.data(), 8, cnrtMemcpyNoDirection), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(a, nullptr, 8, cnrtMemcpyHostToDev), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(a, reinterpret_cast<void*>(16), 8, cnrtMemcpyHostToDev), cnrtErrorArgsInvalid);
  // Crossing the end of the allocation (its requested size, not the 1024-byte rounding).
  EXPECT_CNRT_ERROR(cnrtMemcpy(a, h.data(), 1001, cnrtMemcpyHostToDev), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(static_cast<char*>(a) + 999, h.data(), 2, cnrtMemcpyHostToDev), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(h.data(), static_cast<char*>(a) + 500, 501, cnrtMemcpyDevToHost), cnrtErrorArgsInvalid);
  EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find("not inside a live allocation"), std::string::npos);
  // Freed memory.
  void* gone = dmalloc(64);
  ASSERT_EQ(cnrtFree(gone), cnrtSuccess);
  EXPECT_CNRT_ERROR(cnrtMemcpy(gone, h.data(), 8, cnrtMemcpyHostToDev), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(h.data(), gone, 8, cnrtMemcpyNoDirection), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpyAsync(gone, h.data(), 8, nullptr, cnrtMemcpyNoDirection), cnrtErrorArgsInvalid);
  // Unmapped host memory (a page just unmapped).
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  ASSERT_EQ(munmap(page, 4096), 0);
  EXPECT_CNRT_ERROR(cnrtMemcpy(a, page, 8, cnrtMemcpyHostToDev), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(page, a, 8, cnrtMemcpyNoDirection), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpyAsync(page, a, 8, nullptr, cnrtMemcpyDevToHost), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(page, h.data(), 8, cnrtMemcpyHostToHost), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(a, reinterpret_cast<void*>(0xdead0000beefull), 8, cnrtMemcpyHostToDev), cnrtErrorArgsInvalid);
  // Never allocated (inside the device range, past every allocation).
  EXPECT_CNRT_ERROR(cnrtMemcpy(static_cast<char*>(a) + (8 << 20), h.data(), 8, cnrtMemcpyHostToDev), cnrtErrorArgsInvalid);
}

TEST_F(CopyTest, ZeroBytesIsANoOp) {
  void* a = dmalloc(64);
  EXPECT_EQ(cnrtMemcpy(a, nullptr, 0, cnrtMemcpyHostToDev), cnrtSuccess);
  EXPECT_EQ(cnrtMemcpy(nullptr, nullptr, 0, cnrtMemcpyNoDirection), cnrtSuccess);
  EXPECT_EQ(cnrtMemcpyAsync(a, a, 0, nullptr, cnrtMemcpyDevToDev), cnrtSuccess);
  EXPECT_EQ(cnrtMemset(nullptr, 0, 0), cnrtSuccess);
}

TEST_F(CopyTest, OverlappingRangesAreRejected) {
  void* a = dmalloc(4096);
  char* p = static_cast<char*>(a);
  EXPECT_CNRT_ERROR(cnrtMemcpy(p + 100, p, 200, cnrtMemcpyDevToDev), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(p, p + 100, 200, cnrtMemcpyNoDirection), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpy(p, p, 8, cnrtMemcpyDevToDev), cnrtErrorArgsInvalid);
  EXPECT_EQ(cnrtMemcpy(p + 200, p, 200, cnrtMemcpyDevToDev), cnrtSuccess) << "adjacent ranges are fine";
  std::vector<char> h(1024);
  EXPECT_CNRT_ERROR(cnrtMemcpy(h.data() + 10, h.data(), 100, cnrtMemcpyHostToHost), cnrtErrorArgsInvalid);
}

TEST_F(CopyTest, AsyncSpellingsCopyInQueueOrder) {
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  const std::vector<float> src = iota(512, 3.0f);
  void* a = dmalloc(2048);
  void* b = dmalloc(2048);
  std::vector<float> back(512), h2h(512);
  ASSERT_EQ(cnrtMemcpyAsync(a, const_cast<float*>(src.data()), 2048, q, cnrtMemcpyHostToDev), cnrtSuccess);
  ASSERT_EQ(cnrtMemcpyAsync_V2(b, a, 2048, q, cnrtMemcpyDevToDev), cnrtSuccess);
  ASSERT_EQ(cnrtMemcpyAsync_V3(back.data(), b, 2048, q, cnrtMemcpyNoDirection), cnrtSuccess);
  ASSERT_EQ(cnrtMemcpyAsync(h2h.data(), back.data(), 2048, q, cnrtMemcpyHostToHost), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(q), cnrtSuccess);
  EXPECT_EQ(back, src);
  EXPECT_EQ(h2h, src);
}

TEST_F(CopyTest, AsyncOnBadQueues) {
  void* a = dmalloc(64);
  char h[64] = {};
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  ASSERT_EQ(cnrtQueueDestroy(q), cnrtSuccess);
  EXPECT_CNRT_ERROR(cnrtMemcpyAsync(a, h, 64, q, cnrtMemcpyHostToDev), cnrtErrorInvalidResourceHandle);
  EXPECT_CNRT_ERROR(cnrtMemcpyAsync_V2(a, h, 64, reinterpret_cast<cnrtQueue_t>(0x1234), cnrtMemcpyHostToDev),
                    cnrtErrorInvalidResourceHandle);
  EXPECT_CNRT_ERROR(cnrtMemsetAsync(a, 0, 64, q), cnrtErrorInvalidResourceHandle);
  EXPECT_EQ(cnrtMemcpyAsync_V3(a, h, 64, cnrtQueueLegacy, cnrtMemcpyHostToDev), cnrtSuccess);
  EXPECT_EQ(cnrtMemcpyAsync_V3(a, h, 64, cnrtQueuePerThread, cnrtMemcpyHostToDev), cnrtSuccess);
  EXPECT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
}

TEST_F(CopyTest, MemsetSetsBytes) {
  void* a = dmalloc(1000);
  ASSERT_EQ(cnrtMemset(a, 0x5a, 1000), cnrtSuccess);
  std::vector<unsigned char> v = download<unsigned char>(a, 1000);
  EXPECT_EQ(v, std::vector<unsigned char>(1000, 0x5a));
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  ASSERT_EQ(cnrtMemsetAsync(static_cast<char*>(a) + 500, 0x1ff, 500, q), cnrtSuccess);  // value as unsigned char
  ASSERT_EQ(cnrtQueueSync(q), cnrtSuccess);
  v = download<unsigned char>(a, 1000);
  EXPECT_EQ(v[499], 0x5a);
  EXPECT_EQ(v[500], 0xff);
  EXPECT_EQ(v[999], 0xff);
}

TEST_F(CopyTest, MemsetBadArguments) {
  void* a = dmalloc(1000);
  std::vector<char> h(64);
  EXPECT_CNRT_ERROR(cnrtMemset(nullptr, 0, 8), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemset(a, 0, 1001), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemset(h.data(), 0, 8), cnrtErrorArgsInvalid);
  ASSERT_EQ(cnrtFree(a), cnrtSuccess);
  EXPECT_CNRT_ERROR(cnrtMemset(a, 0, 8), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemsetAsync(a, 0, 8, nullptr), cnrtErrorArgsInvalid);
}

TEST_F(CopyTest, PeerCopiesThroughTheHost) {
  load("tiny", {"devices=2"});
  const std::vector<float> src = iota(1024, 7.0f);
  void* d0 = dmalloc(4096);
  upload(d0, src);
  ASSERT_EQ(cnrtSetDevice(1), cnrtSuccess);
  void* d1 = dmalloc(4096);
  const double before = host_ns();
  ASSERT_EQ(cnrtMemcpyPeer(d1, 1, d0, 0, 4096), cnrtSuccess);
  const double took = host_ns() - before - kApiNs;
  EXPECT_EQ(download<float>(d1, 1024), src);
  // Staged: D2H on mlu0 then H2D on mlu1, each pinned: 2 x (latency + dram latency + 4096 / 16).
  EXPECT_DOUBLE_EQ(took, 2 * (kLinkLatencyNs + kDramLatencyNs + 4096 / kPinnedGbps));
  // DevToDev / PeerToPeer / NoDirection between devices are peer copies too.
  void* d1b = dmalloc(4096);
  ASSERT_EQ(cnrtMemcpy(d1b, d0, 4096, cnrtMemcpyPeerToPeer), cnrtSuccess);
  ASSERT_EQ(cnrtMemcpy(d1b, d0, 4096, cnrtMemcpyNoDirection), cnrtSuccess);
  EXPECT_EQ(download<float>(d1b, 1024), src);
}

TEST_F(CopyTest, PeerCopiesOverMluLink) {
  load("tiny", {"devices=2", "mlu_link.bandwidth_gbps=50", "mlu_link.latency_ns=200"});
  const std::vector<float> src = iota(1024, 1.0f);
  void* d0 = dmalloc(4096);
  upload(d0, src);
  ASSERT_EQ(cnrtSetDevice(1), cnrtSuccess);
  void* d1 = dmalloc(4096);
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  ASSERT_EQ(cnrtMemcpyPeerAsync(d1, 1, d0, 0, 4096, q), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(q), cnrtSuccess);
  EXPECT_EQ(download<float>(d1, 1024), src);
  const double before = host_ns();
  ASSERT_EQ(cnrtMemcpyPeer(d1, 1, d0, 0, 4096), cnrtSuccess);
  const double took = host_ns() - before - kApiNs;
  // MLU-Link latency + DRAM latency + bytes over the slower of link (50) and DRAM (64 GB/s spread
  // over the channels the range touches).
  EXPECT_GT(took, 200 + kDramLatencyNs + 4096 / 64.0);
  EXPECT_LT(took, 2 * (kLinkLatencyNs + kDramLatencyNs + 4096 / kPinnedGbps)) << "faster than staging through the host";
}

TEST_F(CopyTest, PeerCopyBadArguments) {
  load("tiny", {"devices=2"});
  void* d0 = dmalloc(64);
  ASSERT_EQ(cnrtSetDevice(1), cnrtSuccess);
  void* d1 = dmalloc(64);
  char h[64] = {};
  EXPECT_CNRT_ERROR(cnrtMemcpyPeer(d1, 2, d0, 0, 64), cnrtErrorDeviceInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpyPeer(d1, 1, d0, -1, 64), cnrtErrorDeviceInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpyPeer(d1, 1, d0, 1, 64), cnrtErrorArgsInvalid);  // src is on device 0
  EXPECT_CNRT_ERROR(cnrtMemcpyPeer(d1, 1, h, 0, 64), cnrtErrorArgsInvalid);   // host memory
  EXPECT_CNRT_ERROR(cnrtMemcpyPeer(nullptr, 1, d0, 0, 64), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpyPeer(d1, 1, d0, 0, 65), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtMemcpyPeerAsync(d1, 1, d0, 0, 64, reinterpret_cast<cnrtQueue_t>(0x99)), cnrtErrorInvalidResourceHandle);
  EXPECT_EQ(cnrtMemcpyPeer(d1, 1, d0, 0, 0), cnrtSuccess);
}

}  // namespace
}  // namespace mlusim::driver::testing
