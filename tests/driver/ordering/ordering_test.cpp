// Ordering: in-queue order, overlap across queues, cross-queue waits, host functions in order
// and calling the API, destroyed queues draining.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "driver_test.h"

namespace mlusim::driver::testing {
namespace {

using OrderingTest = DriverTest;

TEST_F(OrderingTest, OneQueueRunsInOrder) {
  void* d = dmalloc(sizeof(float));
  upload(d, std::vector<float>{1.0f});
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  // x -> 2x + k for k = 1..5 in order gives a value no other order gives.
  for (float k = 1; k <= 5; ++k) {
    void* args[] = {&d, &k};
    ASSERT_EQ(cnrtInvokeKernel(double_add_kernel, dim(1), cnrtFuncTypeBlock, args, 0, q), cnrtSuccess);
  }
  std::vector<float> h(1);
  ASSERT_EQ(cnrtMemcpyAsync(h.data(), d, sizeof(float), q, cnrtMemcpyDevToHost), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(q), cnrtSuccess);
  float expect = 1.0f;
  for (float k = 1; k <= 5; ++k) expect = expect * 2 + k;
  EXPECT_EQ(h[0], expect);
  size_t n = 0;
  ASSERT_EQ(mlusimGetKernelRecordCount(0, &n), cnrtSuccess);
  ASSERT_EQ(n, 5u);
  double prev_end = 0;
  for (size_t i = 0; i < n; ++i) {
    mlusimKernelRecord_t r;
    ASSERT_EQ(mlusimGetKernelRecord(0, i, &r), cnrtSuccess);
    EXPECT_GE(r.start_ns, prev_end) << "kernel " << i << " started before its predecessor ended";
    prev_end = r.end_ns;
  }
}

TEST_F(OrderingTest, DifferentQueuesOverlap) {
  cnrtQueue_t q1, q2;
  ASSERT_EQ(cnrtQueueCreate(&q1), cnrtSuccess);
  ASSERT_EQ(cnrtQueueCreate(&q2), cnrtSuccess);
  int rounds = 300;
  void* args[] = {&rounds};
  ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(2), cnrtFuncTypeBlock, args, 0, q1), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(2), cnrtFuncTypeBlock, args, 0, q2), cnrtSuccess);
  ASSERT_EQ(cnrtSyncDevice(), cnrtSuccess);
  mlusimKernelRecord_t a, b;
  ASSERT_EQ(mlusimGetKernelRecord(0, 0, &a), cnrtSuccess);
  ASSERT_EQ(mlusimGetKernelRecord(0, 1, &b), cnrtSuccess);
  EXPECT_LT(b.start_ns, a.end_ns) << "the second queue's kernel ran while the first's was still running";
  EXPECT_DOUBLE_EQ(b.start_ns - a.start_ns, kLaunchNs) << "each starts when its launch call returns";
}

TEST_F(OrderingTest, CrossQueueWaitDelaysTheWaitingQueue) {
  cnrtQueue_t producer, consumer;
  ASSERT_EQ(cnrtQueueCreate(&producer), cnrtSuccess);
  ASSERT_EQ(cnrtQueueCreate(&consumer), cnrtSuccess);
  cnrtNotifier_t done;
  ASSERT_EQ(cnrtNotifierCreate(&done), cnrtSuccess);
  const int n = 1 << 14;
  void* d = dmalloc(n * sizeof(float));
  float v = 9.0f;
  int count = n;
  void* fill_args[] = {&d, &v, &count};
  ASSERT_EQ(cnrtInvokeKernel(fill_kernel, dim(1), cnrtFuncTypeBlock, fill_args, 0, producer), cnrtSuccess);
  ASSERT_EQ(cnrtPlaceNotifier(done, producer), cnrtSuccess);
  ASSERT_EQ(cnrtQueueWaitNotifier(done, consumer, 0), cnrtSuccess);
  std::vector<float> h(n);
  ASSERT_EQ(cnrtMemcpyAsync(h.data(), d, n * sizeof(float), consumer, cnrtMemcpyDevToHost), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(consumer), cnrtSuccess);
  EXPECT_EQ(h, std::vector<float>(n, 9.0f)) << "the copy ran after the fill";
  mlusimKernelRecord_t fill;
  ASSERT_EQ(mlusimGetKernelRecord(0, 0, &fill), cnrtSuccess);
  const double copy_ns = kLinkLatencyNs + kDramLatencyNs + n * sizeof(float) / kPageableGbps;
  EXPECT_DOUBLE_EQ(host_ns(), fill.end_ns + copy_ns) << "the copy started when the fill ended";
}

TEST_F(OrderingTest, WaitCapturesThePlacementAtCallTime) {
  cnrtQueue_t a, b;
  ASSERT_EQ(cnrtQueueCreate(&a), cnrtSuccess);
  ASSERT_EQ(cnrtQueueCreate(&b), cnrtSuccess);
  cnrtNotifier_t n;
  ASSERT_EQ(cnrtNotifierCreate(&n), cnrtSuccess);
  ASSERT_EQ(cnrtPlaceNotifier(n, a), cnrtSuccess);  // completes at once: a is idle
  ASSERT_EQ(cnrtQueueWaitNotifier(n, b, 0), cnrtSuccess);
  int rounds = 300;
  void* args[] = {&rounds};
  ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(1), cnrtFuncTypeBlock, args, 0, a), cnrtSuccess);
  ASSERT_EQ(cnrtPlaceNotifier(n, a), cnrtSuccess);  // a later placement does not affect b's wait
  EXPECT_EQ(cnrtQueueSync(b), cnrtSuccess);
  EXPECT_EQ(cnrtQueueQuery(a), cnrtErrorNotReady);
  EXPECT_EQ(cnrtQueueSync(a), cnrtSuccess);
}

struct HostLog {
  std::mutex mu;
  std::vector<int> entries;
};
struct HostStep {
  HostLog* log;
  int id;
};
void log_step(void* p) {
  auto* s = static_cast<HostStep*>(p);
  std::lock_guard<std::mutex> lock(s->log->mu);
  s->log->entries.push_back(s->id);
}

TEST_F(OrderingTest, HostFunctionsRunInOrderBetweenDeviceWork) {
  HostLog log;
  std::vector<HostStep> steps;
  for (int i = 0; i < 6; ++i) steps.push_back({&log, i});
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  int rounds = 20;
  void* args[] = {&rounds};
  for (HostStep& s : steps) {
    ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(1), cnrtFuncTypeBlock, args, 0, q), cnrtSuccess);
    ASSERT_EQ(cnrtInvokeHostFunc(q, log_step, &s), cnrtSuccess);
  }
  ASSERT_EQ(cnrtQueueSync(q), cnrtSuccess);
  EXPECT_EQ(log.entries, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

struct ReadBack {
  void* device = nullptr;
  float value = 0;
  cnrtRet_t ret = cnrtErrorUnknown;
  double clock_ns = 0;
};
void read_back(void* p) {
  auto* r = static_cast<ReadBack*>(p);
  r->ret = cnrtMemcpy(&r->value, r->device, sizeof(float), cnrtMemcpyDevToHost);
  mlusimGetHostTime(&r->clock_ns);
}

TEST_F(OrderingTest, HostFunctionSeesEarlierResultsAndMayCallTheApi) {
  void* d = dmalloc(1024 * sizeof(float));
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  float v = 2.5f;
  int count = 1024;
  void* args[] = {&d, &v, &count};
  ASSERT_EQ(cnrtInvokeKernel(fill_kernel, dim(1), cnrtFuncTypeBlock, args, 0, q), cnrtSuccess);
  ReadBack rb;
  rb.device = d;
  ASSERT_EQ(cnrtInvokeHostFunc(q, read_back, &rb), cnrtSuccess);
  const double stamp = host_ns();
  cnrtNotifier_t after;
  ASSERT_EQ(cnrtNotifierCreate(&after), cnrtSuccess);
  ASSERT_EQ(cnrtPlaceNotifier(after, q), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(q), cnrtSuccess);
  EXPECT_EQ(rb.ret, cnrtSuccess);
  EXPECT_EQ(rb.value, 2.5f);
  mlusimKernelRecord_t fill;
  ASSERT_EQ(mlusimGetKernelRecord(0, 0, &fill), cnrtSuccess);
  // The host function started when the fill ended (or at its submission, if later); its copy
  // took api + link time (pageable).
  const double copy_ns = kApiNs + kLinkLatencyNs + kDramLatencyNs + sizeof(float) / kPageableGbps;
  EXPECT_DOUBLE_EQ(rb.clock_ns, std::max(fill.end_ns, stamp) + copy_ns);
  EXPECT_DOUBLE_EQ(host_ns(), rb.clock_ns) << "the queue resumed when the host function returned";
}

TEST_F(OrderingTest, HostFunctionSyncingItsOwnQueueIsAnErrorNotAHang) {
  static cnrtRet_t seen = cnrtSuccess;
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  static cnrtQueue_t own;
  own = q;
  ASSERT_EQ(cnrtInvokeHostFunc(q, [](void*) { seen = cnrtQueueSync(own); }, nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(q), cnrtSuccess);
  EXPECT_EQ(seen, cnrtErrorIllegalState);
}

struct ClockProbe {
  double start_ns = -1;
};
void probe_clock(void* p) { mlusimGetHostTime(&static_cast<ClockProbe*>(p)->start_ns); }

TEST_F(OrderingTest, HostFunctionsOnSeveralQueuesStartAtTheirQueuesTimes) {
  // A host function holds simulated time at its thread's clock while it runs (so work it
  // enqueues starts on time): host functions on independent queues run one after another, each
  // starting at its own queue's simulated time.
  cnrtQueue_t a, b;
  ASSERT_EQ(cnrtQueueCreate(&a), cnrtSuccess);
  ASSERT_EQ(cnrtQueueCreate(&b), cnrtSuccess);
  int rounds = 100;
  void* args[] = {&rounds};
  ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(1), cnrtFuncTypeBlock, args, 0, a), cnrtSuccess);
  ClockProbe pa, pb;
  ASSERT_EQ(cnrtInvokeHostFunc(a, probe_clock, &pa), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeHostFunc(b, probe_clock, &pb), cnrtSuccess);
  const double submitted_b = host_ns();
  EXPECT_EQ(cnrtSyncDevice(), cnrtSuccess);
  mlusimKernelRecord_t k;
  ASSERT_EQ(mlusimGetKernelRecord(0, 0, &k), cnrtSuccess);
  EXPECT_DOUBLE_EQ(pa.start_ns, k.end_ns) << "after the kernel in its queue";
  EXPECT_DOUBLE_EQ(pb.start_ns, submitted_b) << "queue b was idle: at its submission";
}

TEST_F(OrderingTest, AHostFunctionThatAdvancedTimeDoesNotPullOtherQueuesAhead) {
  // A host function returning with its clock 1 ms ahead (a modelled wait: cncl's collective
  // hold) completes at that clock, but lazily: work the host queues afterwards on another idle
  // queue starts at its own submission time however long the host takes (in real time) to
  // queue it. Before, the simulation ran ahead to the host function's end on its own, so the
  // later kernel's start depended on thread timing.
  cnrtQueue_t a, b;
  ASSERT_EQ(cnrtQueueCreate(&a), cnrtSuccess);
  ASSERT_EQ(cnrtQueueCreate(&b), cnrtSuccess);
  std::atomic<bool> returned{false};
  struct Hold {
    std::atomic<bool>* returned;
  } hold{&returned};
  ASSERT_EQ(cnrtInvokeHostFunc(
                a,
                [](void* p) {
                  mlusimHostAdvance(1e6);
                  static_cast<Hold*>(p)->returned->store(true);
                },
                &hold),
            cnrtSuccess);
  while (!returned.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // ample real time to run ahead
  const double submitted = host_ns();
  int rounds = 10;
  void* args[] = {&rounds};
  ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(1), cnrtFuncTypeBlock, args, 0, b), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(b), cnrtSuccess);
  mlusimKernelRecord_t k;
  ASSERT_EQ(mlusimGetKernelRecord(0, 0, &k), cnrtSuccess);
  EXPECT_LT(k.start_ns, submitted + 1e5) << "the kernel waited for the other queue's host function";
  // The host function's queue still completes at its end, when someone asks.
  cnrtNotifier_t n;
  ASSERT_EQ(cnrtNotifierCreate(&n), cnrtSuccess);
  ASSERT_EQ(cnrtPlaceNotifier(n, a), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(a), cnrtSuccess);
  EXPECT_GE(host_ns(), 1e6) << "syncing the queue waits for the host function's end";
  ASSERT_EQ(cnrtNotifierDestroy(n), cnrtSuccess);
}

}  // namespace
}  // namespace mlusim::driver::testing
