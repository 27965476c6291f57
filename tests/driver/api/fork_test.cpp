// fork(): the child re-initialises the runtime on its first call and can use it; the parent
// carries on.
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "driver_test.h"

namespace mlusim::driver::testing {
namespace {

using ForkTest = DriverTest;

// The child's whole program: allocate, copy, launch, check. Exit code 0 on success.
int child_main() {
  unsigned n = 0;
  if (cnrtGetDeviceCount(&n) != cnrtSuccess || n != 1) return 1;
  void* d = nullptr;
  if (cnrtMalloc(&d, 1024 * sizeof(float)) != cnrtSuccess) return 2;
  float v = 6.0f;
  int count = 1024;
  void* args[] = {&d, &v, &count};
  if (cnrtInvokeKernel(fill_kernel, cnrtDim3_t{2, 1, 1}, cnrtFuncTypeBlock, args, 0, nullptr) != cnrtSuccess) return 3;
  std::vector<float> h(1024);
  if (cnrtMemcpy(h.data(), d, 1024 * sizeof(float), cnrtMemcpyDevToHost) != cnrtSuccess) return 4;
  for (float x : h)
    if (x != 6.0f) return 5;
  return cnrtFree(d) == cnrtSuccess ? 0 : 6;
}

TEST_F(ForkTest, ChildUsesTheApiAfterFork) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer does not support starting threads after a multi-threaded fork";
#endif
  void* parent_mem = dmalloc(4096);
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  int rounds = 200;
  void* args[] = {&rounds};
  ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(2), cnrtFuncTypeBlock, args, 0, q), cnrtSuccess);  // in flight
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(child_main());
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(cnrtQueueSync(q), cnrtSuccess) << "the parent's runtime is unaffected";
  EXPECT_EQ(cnrtFree(parent_mem), cnrtSuccess);
}

}  // namespace
}  // namespace mlusim::driver::testing
