// Notifiers: flags, placement, query/wait, elapsed time rules (never placed, not complete,
// timing disabled), destroyed and foreign handles.
#include <vector>

#include "driver_test.h"

namespace mlusim::driver::testing {
namespace {

class NotifierTest : public DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    ASSERT_EQ(cnrtQueueCreate(&q_), cnrtSuccess);
  }
  // Launches a kernel that keeps the queue busy for a while.
  void busy(int rounds = 300) {
    void* args[] = {&rounds};
    ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(1), cnrtFuncTypeBlock, args, 0, q_), cnrtSuccess);
  }
  cnrtQueue_t q_ = nullptr;
};

TEST_F(NotifierTest, CreateWithEveryValidFlagSet) {
  for (unsigned flags : {0u, 2u, 4u, 6u, 12u, 14u}) {
    cnrtNotifier_t n = nullptr;
    EXPECT_EQ(cnrtNotifierCreateWithFlags(&n, flags), cnrtSuccess) << flags;
    EXPECT_NE(n, nullptr);
    EXPECT_EQ(cnrtNotifierDestroy(n), cnrtSuccess);
  }
}

TEST_F(NotifierTest, CreateBadArguments) {
  cnrtNotifier_t n;
  EXPECT_CNRT_ERROR(cnrtNotifierCreate(nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtNotifierCreateWithFlags(nullptr, 0), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtNotifierCreateWithFlags(&n, 1), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtNotifierCreateWithFlags(&n, 0x10), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtNotifierCreateWithFlags(&n, CNRT_NOTIFIER_INTERPROCESS), cnrtErrorArgsInvalid);
}

TEST_F(NotifierTest, NeverPlacedQueriesAndWaitsSucceed) {
  cnrtNotifier_t n;
  ASSERT_EQ(cnrtNotifierCreate(&n), cnrtSuccess);
  EXPECT_EQ(cnrtQueryNotifier(n), cnrtSuccess);
  EXPECT_EQ(cnrtWaitNotifier(n), cnrtSuccess);
  EXPECT_EQ(cnrtQueueWaitNotifier(n, q_, 0), cnrtSuccess);
  EXPECT_EQ(cnrtQueueSync(q_), cnrtSuccess);
}

TEST_F(NotifierTest, PlacedNotifierCompletesAfterPriorWork) {
  cnrtNotifier_t n;
  ASSERT_EQ(cnrtNotifierCreate(&n), cnrtSuccess);
  busy();
  ASSERT_EQ(cnrtPlaceNotifier(n, q_), cnrtSuccess);
  EXPECT_EQ(cnrtQueryNotifier(n), cnrtErrorNotReady);
  EXPECT_EQ(cnrtWaitNotifier(n), cnrtSuccess);
  const double waited = host_ns();
  EXPECT_EQ(cnrtQueryNotifier(n), cnrtSuccess);
  EXPECT_EQ(cnrtQueueQuery(q_), cnrtSuccess) << "nothing after the notifier";
  mlusimKernelRecord_t k;
  ASSERT_EQ(mlusimGetKernelRecord(0, 0, &k), cnrtSuccess);
  EXPECT_DOUBLE_EQ(waited, k.end_ns) << "the wait returned when the kernel ended";
}

TEST_F(NotifierTest, ElapsedTimeRules) {
  cnrtNotifier_t a, b, placed_never;
  ASSERT_EQ(cnrtNotifierCreate(&a), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierCreate(&b), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierCreate(&placed_never), cnrtSuccess);
  float ms = -1;
  EXPECT_CNRT_ERROR(cnrtNotifierElapsedTime(a, b, &ms), cnrtErrorCndrvFuncCall);  // neither placed
  ASSERT_EQ(cnrtPlaceNotifier(a, q_), cnrtSuccess);
  EXPECT_CNRT_ERROR(cnrtNotifierElapsedTime(a, placed_never, &ms), cnrtErrorCndrvFuncCall);
  busy();
  ASSERT_EQ(cnrtPlaceNotifier(b, q_), cnrtSuccess);
  EXPECT_EQ(cnrtNotifierElapsedTime(a, b, &ms), cnrtErrorNotReady);  // b not complete yet
  EXPECT_EQ(cnrtNotifierDuration(a, b, &ms), cnrtErrorNotReady);
  ASSERT_EQ(cnrtWaitNotifier(b), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierElapsedTime(a, b, &ms), cnrtSuccess);
  EXPECT_GT(ms, 0.0f);
  float back = 0;
  ASSERT_EQ(cnrtNotifierElapsedTime(b, a, &back), cnrtSuccess);
  EXPECT_FLOAT_EQ(back, -ms);
  float us = 0;
  ASSERT_EQ(cnrtNotifierDuration(a, b, &us), cnrtSuccess);
  EXPECT_NEAR(us, ms * 1000.0f, 1e-3);
  EXPECT_CNRT_ERROR(cnrtNotifierElapsedTime(a, b, nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtNotifierDuration(a, b, nullptr), cnrtErrorArgsInvalid);
}

TEST_F(NotifierTest, TimingDisabledNotifiers) {
  cnrtNotifier_t timed, no_sw, no_all;
  ASSERT_EQ(cnrtNotifierCreate(&timed), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierCreateWithFlags(&no_sw, CNRT_NOTIFIER_DISABLE_TIMING_SW), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierCreateWithFlags(&no_all, CNRT_NOTIFIER_DISABLE_TIMING_ALL), cnrtSuccess);
  for (cnrtNotifier_t n : {timed, no_sw, no_all}) ASSERT_EQ(cnrtPlaceNotifier(n, q_), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(q_), cnrtSuccess);
  float v = 0;
  EXPECT_CNRT_ERROR(cnrtNotifierElapsedTime(timed, no_sw, &v), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtNotifierElapsedTime(no_all, timed, &v), cnrtErrorArgsInvalid);
  EXPECT_EQ(cnrtNotifierDuration(timed, no_sw, &v), cnrtSuccess) << "DISABLE_TIMING_SW keeps hardware duration";
  EXPECT_CNRT_ERROR(cnrtNotifierDuration(timed, no_all, &v), cnrtErrorArgsInvalid);
  // Non-timing notifiers still synchronise.
  EXPECT_EQ(cnrtQueryNotifier(no_all), cnrtSuccess);
  EXPECT_EQ(cnrtWaitNotifier(no_sw), cnrtSuccess);
}

TEST_F(NotifierTest, ReplacementUsesTheLatestPlacement) {
  cnrtNotifier_t n, start;
  ASSERT_EQ(cnrtNotifierCreate(&n), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierCreate(&start), cnrtSuccess);
  ASSERT_EQ(cnrtPlaceNotifier(start, q_), cnrtSuccess);
  ASSERT_EQ(cnrtPlaceNotifier(n, q_), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(q_), cnrtSuccess);
  float first = 0;
  ASSERT_EQ(cnrtNotifierElapsedTime(start, n, &first), cnrtSuccess);
  busy();
  ASSERT_EQ(cnrtPlaceNotifier(n, q_), cnrtSuccess);
  EXPECT_EQ(cnrtQueryNotifier(n), cnrtErrorNotReady) << "queries follow the new placement";
  ASSERT_EQ(cnrtWaitNotifier(n), cnrtSuccess);
  float second = 0;
  ASSERT_EQ(cnrtNotifierElapsedTime(start, n, &second), cnrtSuccess);
  EXPECT_GT(second, first);
}

TEST_F(NotifierTest, DestroyedAndForeignHandles) {
  cnrtNotifier_t n, ok;
  ASSERT_EQ(cnrtNotifierCreate(&n), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierCreate(&ok), cnrtSuccess);
  ASSERT_EQ(cnrtPlaceNotifier(ok, q_), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierDestroy(n), cnrtSuccess);
  float v;
  const std::vector<cnrtNotifier_t> bad = {n, nullptr, reinterpret_cast<cnrtNotifier_t>(0x5000),
                                           reinterpret_cast<cnrtNotifier_t>(q_)};
  for (cnrtNotifier_t b : bad) {
    SCOPED_TRACE(::testing::Message() << "notifier " << b);
    EXPECT_CNRT_ERROR(cnrtNotifierDestroy(b), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtPlaceNotifier(b, q_), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtPlaceNotifierWithFlags(b, q_, 0), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtQueryNotifier(b), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtWaitNotifier(b), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtQueueWaitNotifier(b, q_, 0), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtNotifierElapsedTime(b, ok, &v), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtNotifierElapsedTime(ok, b, &v), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtNotifierDuration(b, ok, &v), cnrtErrorInvalidResourceHandle);
  }
  EXPECT_CNRT_ERROR(cnrtPlaceNotifierWithFlags(ok, q_, CNRT_NOTIFIER_PLACE_EXTERNAL), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtQueueWaitNotifier(ok, q_, CNRT_NOTIFIER_WAIT_EXTERNAL), cnrtErrorArgsInvalid);
}

TEST_F(NotifierTest, DestroyWhilePlacementPendingStillReleasesWaiters) {
  cnrtNotifier_t n;
  cnrtQueue_t other;
  ASSERT_EQ(cnrtNotifierCreate(&n), cnrtSuccess);
  ASSERT_EQ(cnrtQueueCreate(&other), cnrtSuccess);
  busy();
  ASSERT_EQ(cnrtPlaceNotifier(n, q_), cnrtSuccess);
  ASSERT_EQ(cnrtQueueWaitNotifier(n, other, 0), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierDestroy(n), cnrtSuccess);
  EXPECT_EQ(cnrtQueueSync(other), cnrtSuccess);
  mlusimKernelRecord_t k;
  ASSERT_EQ(mlusimGetKernelRecord(0, 0, &k), cnrtSuccess);
  EXPECT_DOUBLE_EQ(host_ns(), k.end_ns) << "the other queue waited for the kernel behind the notifier";
}

TEST_F(NotifierTest, NotifierLimitIsEnforced) {
  std::vector<cnrtNotifier_t> ns;
  cnrtNotifier_t n;
  cnrtRet_t r;
  while ((r = cnrtNotifierCreate(&n)) == cnrtSuccess) {
    ns.push_back(n);
    ASSERT_LE(ns.size(), 70000u);
  }
  EXPECT_EQ(r, cnrtErrorNoMem);
  EXPECT_EQ(ns.size(), 65536u);
}

}  // namespace
}  // namespace mlusim::driver::testing
