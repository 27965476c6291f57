// Several host threads allocate, copy, launch, synchronise, create and destroy handles at once,
// on two devices. Checks results and that every resource comes back (run it under
// ThreadSanitizer: see driver/README.md).
#include <atomic>
#include <thread>
#include <vector>

#include "driver_test.h"

namespace mlusim::driver::testing {
namespace {

using StressTest = DriverTest;

constexpr int kThreads = 8;
constexpr int kIterations = 40;

// One thread's work: returns the number of failed checks.
int worker(int id) {
  int failures = 0;
#define check(ok)                                                                                   \
  do {                                                                                              \
    if (!(ok)) {                                                                                    \
      ++failures;                                                                                   \
      ADD_FAILURE() << "thread " << id << " iteration " << it << ": " #ok ": " << mlusimGetLastErrorMessage(); \
    }                                                                                               \
  } while (0)
  int it = -1;
  check(cnrtSetDevice(id % 2) == cnrtSuccess);
  cnrtQueue_t q = nullptr;
  check(cnrtQueueCreate(&q) == cnrtSuccess);
  for (it = 0; it < kIterations; ++it) {
    const int n = 256 * (1 + (id + it) % 4);
    void* dx = nullptr;
    void* dy = nullptr;
    check(cnrtMalloc(&dx, n * sizeof(float)) == cnrtSuccess);
    check(cnrtMalloc(&dy, n * sizeof(float)) == cnrtSuccess);
    std::vector<float> x(n, static_cast<float>(id)), y(n, static_cast<float>(it)), out(n);
    check(cnrtMemcpyAsync(dx, x.data(), n * sizeof(float), q, cnrtMemcpyHostToDev) == cnrtSuccess);
    check(cnrtMemcpyAsync(dy, y.data(), n * sizeof(float), q, cnrtMemcpyHostToDev) == cnrtSuccess);
    float a = 2.0f;
    int count = n;
    void* args[] = {&dx, &dy, &a, &count};
    check(cnrtInvokeKernel(saxpy_kernel, cnrtDim3_t{static_cast<unsigned>(1 + it % 3), 1, 1}, cnrtFuncTypeBlock, args, 0, q) ==
          cnrtSuccess);
    cnrtNotifier_t n1 = nullptr;
    check(cnrtNotifierCreate(&n1) == cnrtSuccess);
    check(cnrtPlaceNotifier(n1, q) == cnrtSuccess);
    check(cnrtMemcpyAsync(out.data(), dy, n * sizeof(float), q, cnrtMemcpyDevToHost) == cnrtSuccess);
    if (it % 3 == 0) {
      cnrtRet_t r;
      while ((r = cnrtQueueQuery(q)) == cnrtErrorNotReady) {
      }
      check(r == cnrtSuccess);
    } else {
      check(cnrtQueueSync(q) == cnrtSuccess);
    }
    check(cnrtWaitNotifier(n1) == cnrtSuccess);
    check(cnrtNotifierDestroy(n1) == cnrtSuccess);
    for (float v : out) check(v == 2.0f * id + it);
    // Bad calls in the mix must fail cleanly without disturbing anyone. (No double free here:
    // another thread may get the same address in between, as with any allocator.)
    check(cnrtFree(static_cast<char*>(dx) + 4) == cnrtErrorArgsInvalid);
    check(cnrtMemcpy(dx, out.data(), n * sizeof(float) + 1, cnrtMemcpyHostToDev) == cnrtErrorArgsInvalid);
    check(cnrtFree(dx) == cnrtSuccess);
    if (it % 4 == 1) check(cnrtMemcpy(out.data(), dy, n * sizeof(float), cnrtMemcpyDevToHost) == cnrtSuccess);
    check(cnrtFree(dy) == cnrtSuccess);
  }
  check(cnrtQueueDestroy(q) == cnrtSuccess);
  check(cnrtQueueSync(q) == cnrtErrorInvalidResourceHandle);
  cnrtGetLastError();
  return failures;
#undef check
}

TEST_F(StressTest, ManyThreadsAllocateCopyAndLaunchAtOnce) {
  load("tiny", {"devices=2"});
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back([i, &failures] { failures += worker(i); });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (int d = 0; d < 2; ++d) {
    ASSERT_EQ(cnrtSetDevice(d), cnrtSuccess);
    EXPECT_EQ(cnrtSyncDevice(), cnrtSuccess);
    EXPECT_EQ(free_bytes(), kTinyDram) << "device " << d << ": nothing leaked";
    size_t kernels = 0;
    ASSERT_EQ(mlusimGetKernelRecordCount(d, &kernels), cnrtSuccess);
    EXPECT_EQ(kernels, static_cast<size_t>(kThreads / 2 * kIterations));
  }
}

TEST_F(StressTest, ThreadsShareQueuesAndNotifiers) {
  cnrtQueue_t shared;
  ASSERT_EQ(cnrtQueueCreate(&shared), cnrtSuccess);
  void* counter = dmalloc(sizeof(float));
  upload(counter, std::vector<float>{0.0f});
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 10; ++k) {
        float add = 1.0f;
        void* args[] = {&counter, &add};
        if (cnrtInvokeKernel(double_add_kernel, cnrtDim3_t{1, 1, 1}, cnrtFuncTypeBlock, args, 0, shared) != cnrtSuccess) ++failures;
        cnrtNotifier_t n;
        if (cnrtNotifierCreate(&n) != cnrtSuccess) ++failures;
        if (cnrtPlaceNotifier(n, shared) != cnrtSuccess) ++failures;
        if (cnrtWaitNotifier(n) != cnrtSuccess) ++failures;
        if (cnrtNotifierDestroy(n) != cnrtSuccess) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_EQ(cnrtQueueSync(shared), cnrtSuccess);
  size_t kernels = 0;
  ASSERT_EQ(mlusimGetKernelRecordCount(0, &kernels), cnrtSuccess);
  EXPECT_EQ(kernels, 40u);
  // 40 applications of x -> 2x + 1 from 0, one after another: 2^40 - 1 (exact in float: 2^40).
  EXPECT_EQ(download<float>(counter, 1)[0], 1099511627775.0f);
}

}  // namespace
}  // namespace mlusim::driver::testing
