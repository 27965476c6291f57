// Queues: create/destroy, sync/query, the default queue, and destroyed/foreign handles in
// every queue-taking function.
#include <vector>

#include "driver_test.h"

namespace mlusim::driver::testing {
namespace {

using QueueTest = DriverTest;

TEST_F(QueueTest, CreateSyncQueryDestroy) {
  cnrtQueue_t q = nullptr;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(cnrtQueueQuery(q), cnrtSuccess) << "an empty queue is complete";
  EXPECT_EQ(cnrtQueueSync(q), cnrtSuccess);
  cnrtQueue_t q2 = nullptr;
  ASSERT_EQ(cnrtQueueCreateWithPriority(&q2, 0, -3), cnrtSuccess);
  EXPECT_NE(q, q2);
  int prio = 0;
  EXPECT_EQ(cnrtQueueGetPriority(q2, &prio), cnrtSuccess);
  EXPECT_EQ(prio, -3);
  EXPECT_EQ(cnrtQueueGetPriority(nullptr, &prio), cnrtSuccess);
  EXPECT_EQ(prio, 0);
  EXPECT_EQ(cnrtQueueDestroy(q), cnrtSuccess);
  EXPECT_EQ(cnrtQueueDestroy(q2), cnrtSuccess);
}

TEST_F(QueueTest, CreateBadArguments) {
  cnrtQueue_t q;
  EXPECT_CNRT_ERROR(cnrtQueueCreate(nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtQueueCreateWithPriority(nullptr, 0, 0), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtQueueCreateWithPriority(&q, 1, 0), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtQueueGetPriority(nullptr, nullptr), cnrtErrorArgsInvalid);
}

TEST_F(QueueTest, DefaultQueueCannotBeDestroyed) {
  EXPECT_CNRT_ERROR(cnrtQueueDestroy(nullptr), cnrtErrorInvalidResourceHandle);
  EXPECT_CNRT_ERROR(cnrtQueueDestroy(cnrtQueueLegacy), cnrtErrorInvalidResourceHandle);
  EXPECT_CNRT_ERROR(cnrtQueueDestroy(cnrtQueuePerThread), cnrtErrorInvalidResourceHandle);
  EXPECT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
  EXPECT_EQ(cnrtQueueQuery(cnrtQueueLegacy), cnrtSuccess);
}

TEST_F(QueueTest, DestroyedAndForeignHandlesAreRejectedEverywhere) {
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  ASSERT_EQ(cnrtQueueDestroy(q), cnrtSuccess);
  cnrtNotifier_t n;
  ASSERT_EQ(cnrtNotifierCreate(&n), cnrtSuccess);
  void* d = dmalloc(64);
  char h[64] = {};
  auto queue_id = reinterpret_cast<std::uintptr_t>(q);
  const std::vector<cnrtQueue_t> bad = {
      q,                                                     // destroyed
      reinterpret_cast<cnrtQueue_t>(0xdeadbeef0),            // foreign
      reinterpret_cast<cnrtQueue_t>(h),                      // a host pointer
      reinterpret_cast<cnrtQueue_t>(n),                      // a notifier handle
      reinterpret_cast<cnrtQueue_t>(queue_id + 16 * 1000),   // a queue id never issued
  };
  int prio = 0;
  for (cnrtQueue_t b : bad) {
    SCOPED_TRACE(::testing::Message() << "queue " << b);
    EXPECT_CNRT_ERROR(cnrtQueueDestroy(b), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtQueueSync(b), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtQueueQuery(b), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtQueueGetPriority(b, &prio), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtQueueWaitNotifier(n, b, 0), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtPlaceNotifier(n, b), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtMemcpyAsync(d, h, 64, b, cnrtMemcpyHostToDev), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtMemsetAsync(d, 0, 64, b), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtInvokeKernel(empty_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, b), cnrtErrorInvalidResourceHandle);
    EXPECT_CNRT_ERROR(cnrtInvokeHostFunc(b, [](void*) {}, nullptr), cnrtErrorInvalidResourceHandle);
  }
}

TEST_F(QueueTest, DestroyReturnsAtOnceAndQueuedWorkStillRuns) {
  const int n = 1 << 14;
  void* d = dmalloc(n * sizeof(float));
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  float v = 4.0f;
  int count = n;
  void* args[] = {&d, &v, &count};
  ASSERT_EQ(cnrtInvokeKernel(fill_kernel, dim(8), cnrtFuncTypeBlock, args, 0, q), cnrtSuccess);
  const double t0 = host_ns();
  ASSERT_EQ(cnrtQueueDestroy(q), cnrtSuccess);
  EXPECT_DOUBLE_EQ(host_ns(), t0 + kApiNs) << "destroy does not wait";
  ASSERT_EQ(cnrtSyncDevice(), cnrtSuccess);  // waits for destroyed queues' work too
  EXPECT_EQ(download<float>(d, n), std::vector<float>(n, 4.0f));
}

TEST_F(QueueTest, QueryReportsNotReadyUntilDone) {
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  int rounds = 500;
  void* args[] = {&rounds};
  ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(1), cnrtFuncTypeBlock, args, 0, q), cnrtSuccess);
  EXPECT_EQ(cnrtQueueQuery(q), cnrtErrorNotReady);
  EXPECT_EQ(cnrtPeekAtLastError(), cnrtSuccess);
  EXPECT_EQ(cnrtQueueSync(q), cnrtSuccess);
  EXPECT_EQ(cnrtQueueQuery(q), cnrtSuccess);
}

TEST_F(QueueTest, QueueLimitIsEnforced) {
  std::vector<cnrtQueue_t> qs;
  cnrtQueue_t q;
  cnrtRet_t r;
  while ((r = cnrtQueueCreate(&q)) == cnrtSuccess) {
    qs.push_back(q);
    ASSERT_LE(qs.size(), 5000u);
  }
  EXPECT_EQ(r, cnrtErrorNoMem);
  EXPECT_EQ(qs.size(), 4096u);
  ASSERT_EQ(cnrtQueueDestroy(qs.back()), cnrtSuccess);
  EXPECT_EQ(cnrtQueueCreate(&q), cnrtSuccess) << "destroying one frees a slot";
}

}  // namespace
}  // namespace mlusim::driver::testing
