// Host clocks and simulated times, hand-computed from tiny.yaml: every call costs api_call_ns,
// a launch launch_overhead_ns, a synchronous copy moves the clock to the copy's end; async work
// starts at its submission time; notifiers read simulated time.
#include <vector>

#include "driver_test.h"

namespace mlusim::driver::testing {
namespace {

using TimingTest = DriverTest;

// Host link copy of `bytes`: link latency + DRAM latency + bytes over the slower stage.
double link_ns(double bytes, double gbps) { return kLinkLatencyNs + kDramLatencyNs + bytes / gbps; }

TEST_F(TimingTest, EveryCallCostsTheConfiguredHostTime) {
  const double t0 = host_ns();
  int d = 0;
  ASSERT_EQ(cnrtGetDevice(&d), cnrtSuccess);
  EXPECT_DOUBLE_EQ(host_ns(), t0 + kApiNs);
  EXPECT_CNRT_ERROR(cnrtGetDevice(nullptr), cnrtErrorArgsInvalid);
  EXPECT_DOUBLE_EQ(host_ns(), t0 + 2 * kApiNs) << "a failed call costs the same";
  ASSERT_EQ(cnrtInvokeKernel(empty_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, nullptr), cnrtSuccess);
  EXPECT_DOUBLE_EQ(host_ns(), t0 + 2 * kApiNs + kLaunchNs);
  double ns = 0;
  ASSERT_EQ(mlusimGetDeviceTime(&ns), cnrtSuccess);
  EXPECT_LE(ns, host_ns()) << "the simulation never runs ahead of the only host thread";
}

TEST_F(TimingTest, SynchronousCopiesTakeLinkTimePinnedFasterThanPageable) {
  const std::size_t bytes = 4096;
  void* d = dmalloc(bytes);
  void* pinned = nullptr;
  ASSERT_EQ(cnrtHostMalloc(&pinned, bytes), cnrtSuccess);
  std::vector<char> pageable(bytes);
  struct Case {
    void* dst;
    void* src;
    double expect_ns;
  } cases[] = {
      {d, pinned, link_ns(bytes, kPinnedGbps)},            // H2D pinned: 1356 ns
      {d, pageable.data(), link_ns(bytes, kPageableGbps)}, // H2D pageable: 1612 ns
      {pinned, d, link_ns(bytes, kPinnedGbps)},            // D2H pinned
      {pageable.data(), d, link_ns(bytes, kPageableGbps)}, // D2H pageable
  };
  for (const Case& c : cases) {
    const double t0 = host_ns();
    ASSERT_EQ(cnrtMemcpy(c.dst, c.src, bytes, cnrtMemcpyNoDirection), cnrtSuccess);
    EXPECT_DOUBLE_EQ(host_ns() - t0, kApiNs + c.expect_ns);
  }
  ASSERT_EQ(cnrtFreeHost(pinned), cnrtSuccess);
}

TEST_F(TimingTest, NotifiersMeasureSimulatedTime) {
  const std::size_t bytes = 1 << 20;
  void* d = dmalloc(bytes);
  void* h = nullptr;
  ASSERT_EQ(cnrtHostMalloc(&h, bytes), cnrtSuccess);
  cnrtQueue_t q;
  cnrtNotifier_t start, end;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierCreate(&start), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierCreate(&end), cnrtSuccess);
  ASSERT_EQ(cnrtPlaceNotifier(start, q), cnrtSuccess);
  ASSERT_EQ(cnrtMemcpyAsync(d, h, bytes, q, cnrtMemcpyHostToDev), cnrtSuccess);
  ASSERT_EQ(cnrtPlaceNotifier(end, q), cnrtSuccess);
  ASSERT_EQ(cnrtWaitNotifier(end), cnrtSuccess);
  float ms = 0, us = 0;
  ASSERT_EQ(cnrtNotifierElapsedTime(start, end, &ms), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierDuration(start, end, &us), cnrtSuccess);
  // The copy was submitted one call (api_call_ns) after the start notifier.
  const double expect_ns = kApiNs + link_ns(bytes, kPinnedGbps);
  EXPECT_NEAR(ms, expect_ns * 1e-6, 1e-6);
  EXPECT_NEAR(us, expect_ns * 1e-3, 1e-3);
  ASSERT_EQ(cnrtFreeHost(h), cnrtSuccess);
}

TEST_F(TimingTest, AsyncWorkStartsAtSubmissionAndSyncMovesTheClockToItsEnd) {
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  int rounds = 100;
  void* args[] = {&rounds};
  ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(1), cnrtFuncTypeBlock, args, 0, q), cnrtSuccess);
  const double submitted = host_ns();
  ASSERT_EQ(cnrtQueueSync(q), cnrtSuccess);
  mlusimKernelRecord_t r;
  ASSERT_EQ(mlusimGetKernelRecord(0, 0, &r), cnrtSuccess);
  EXPECT_DOUBLE_EQ(r.submit_ns, submitted) << "a kernel reaches the device when its launch call returns";
  EXPECT_DOUBLE_EQ(r.start_ns, submitted);
  EXPECT_DOUBLE_EQ(host_ns(), r.end_ns) << "the sync returns at the kernel's end";
  EXPECT_EQ(static_cast<double>(r.cycles), r.end_ns - r.start_ns) << "1 GHz: one cycle per ns";
  EXPECT_GT(r.cycles, 100u * 32);
}

TEST_F(TimingTest, PollingAQueueAdvancesToTheCompletion) {
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  int rounds = 200;
  void* args[] = {&rounds};
  ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(1), cnrtFuncTypeBlock, args, 0, q), cnrtSuccess);
  int polls = 0;
  cnrtRet_t r;
  while ((r = cnrtQueueQuery(q)) == cnrtErrorNotReady) ++polls;
  EXPECT_EQ(r, cnrtSuccess);
  EXPECT_EQ(cnrtGetLastError(), cnrtSuccess) << "NotReady is not recorded as an error";
  mlusimKernelRecord_t k;
  ASSERT_EQ(mlusimGetKernelRecord(0, 0, &k), cnrtSuccess);
  // Each poll costs api_call_ns; the first poll that succeeds is the first at or after the end.
  EXPECT_EQ(polls, static_cast<int>((k.end_ns - k.start_ns - 1) / kApiNs));
  EXPECT_GE(host_ns(), k.end_ns);
  EXPECT_LT(host_ns(), k.end_ns + kApiNs);
}

TEST_F(TimingTest, SameProgramSameTimes) {
  auto run = [&] {
    load("tiny");
    void* d = dmalloc(1 << 16);
    cnrtQueue_t q1, q2;
    cnrtQueueCreate(&q1);
    cnrtQueueCreate(&q2);
    float v = 1.0f;
    int n = 1 << 14;
    void* args[] = {&d, &v, &n};
    std::vector<char> h(1 << 16);
    cnrtInvokeKernel(fill_kernel, dim(8), cnrtFuncTypeBlock, args, 0, q1);
    cnrtMemcpyAsync(h.data(), d, 1 << 16, q2, cnrtMemcpyDevToHost);
    cnrtSyncDevice();
    return host_ns();
  };
  const double first = run();
  EXPECT_DOUBLE_EQ(run(), first);
  EXPECT_DOUBLE_EQ(run(), first);
}

}  // namespace
}  // namespace mlusim::driver::testing
