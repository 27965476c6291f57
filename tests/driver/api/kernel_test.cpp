// Kernel launches: results, argument copying, every invalid launch, union mapping, faults
// reported on the queue, kernel records; host functions.
#include <sys/mman.h>

#include <atomic>
#include <numeric>
#include <string>
#include <vector>

#include "driver_test.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::driver::testing {
namespace {

using KernelTest = DriverTest;

TEST_F(KernelTest, SaxpyComputesOnTheDevice) {
  const int n = 5000;
  std::vector<float> x(n), y(n);
  std::iota(x.begin(), x.end(), 0.0f);
  std::iota(y.begin(), y.end(), 100.0f);
  void* dx = dmalloc(n * sizeof(float));
  void* dy = dmalloc(n * sizeof(float));
  upload(dx, x);
  upload(dy, y);
  float a = 2.0f;
  int count = n;
  void* args[] = {&dx, &dy, &a, &count};
  ASSERT_EQ(cnrtInvokeKernel(saxpy_kernel, dim(4, 2), cnrtFuncTypeBlock, args, 0, nullptr), cnrtSuccess);
  a = 100.0f;  // arguments were copied at launch
  ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
  const std::vector<float> out = download<float>(dy, n);
  for (int i = 0; i < n; ++i) ASSERT_FLOAT_EQ(out[i], 2.0f * x[i] + y[i]) << i;
  // &kernel and kernel are the same handle.
  ASSERT_EQ(cnrtInvokeKernel(&saxpy_kernel, dim(1), cnrtFuncTypeBlock, args, 0, nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
}

// Launch tags name the kernels of one thread (a framework op) in their records; the records also
// carry each kernel's own DRAM traffic.
TEST_F(KernelTest, LaunchTagsAndPerKernelTrafficReachTheRecords) {
  constexpr int n = 1024;
  void* dx = dmalloc(n * sizeof(float));
  void* dy = dmalloc(n * sizeof(float));
  float a = 1.0f;
  int count = n;
  void* args[] = {&dx, &dy, &a, &count};
  ASSERT_EQ(mlusimSetLaunchTag("aten::add.out"), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(saxpy_kernel, dim(2), cnrtFuncTypeBlock, args, 0, nullptr), cnrtSuccess);
  ASSERT_EQ(mlusimSetLaunchTag(nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(saxpy_kernel, dim(2), cnrtFuncTypeBlock, args, 0, nullptr), cnrtSuccess);
  ASSERT_EQ(mlusimSetLaunchTag(std::string(300, 'x').c_str()), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(empty_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, nullptr), cnrtSuccess);
  ASSERT_EQ(mlusimSetLaunchTag(""), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
  mlusimKernelRecord_t r[3];
  for (size_t i = 0; i < 3; ++i) ASSERT_EQ(mlusimGetKernelRecord(0, i, &r[i]), cnrtSuccess);
  EXPECT_STREQ(r[0].tag, "aten::add.out");
  EXPECT_STREQ(r[1].tag, "") << "cleared by NULL";
  EXPECT_EQ(std::string(r[2].tag), std::string(127, 'x')) << "truncated to 127 bytes";
  // saxpy reads x and y and writes y: 2n floats read from GDRAM, n written.
  EXPECT_EQ(r[0].read_bytes[1], 2u * n * sizeof(float));
  EXPECT_EQ(r[0].write_bytes[1], 1u * n * sizeof(float));
  EXPECT_EQ(r[2].read_bytes[1], 0u);
}

TEST_F(KernelTest, InvalidKernelsAndArguments) {
  int handle_like = 0;
  void* d = dmalloc(64);
  float v = 0;
  int n = 16;
  void* args[] = {&d, &v, &n};
  void* holes[] = {&d, nullptr, &n};
  EXPECT_CNRT_ERROR(cnrtInvokeKernel(nullptr, dim(1), cnrtFuncTypeBlock, args, 0, nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtInvokeKernel(&handle_like, dim(1), cnrtFuncTypeBlock, args, 0, nullptr), cnrtErrorInvalidKernel);
  EXPECT_CNRT_ERROR(cnrtInvokeKernel(reinterpret_cast<const void*>(&cnrtMalloc), dim(1), cnrtFuncTypeBlock, args, 0, nullptr),
                    cnrtErrorInvalidKernel);
  EXPECT_CNRT_ERROR(cnrtInvokeKernel(fill_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtInvokeKernel(fill_kernel, dim(1), cnrtFuncTypeBlock, holes, 0, nullptr), cnrtErrorArgsInvalid);
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  ASSERT_EQ(munmap(page, 4096), 0);
  void* unmapped_arg[] = {&d, page, &n};
  EXPECT_CNRT_ERROR(cnrtInvokeKernel(fill_kernel, dim(1), cnrtFuncTypeBlock, unmapped_arg, 0, nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtInvokeKernel(fill_kernel, dim(1), cnrtFuncTypeBlock, static_cast<void**>(page), 0, nullptr),
                    cnrtErrorArgsInvalid);
  EXPECT_EQ(cnrtInvokeKernel(empty_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, nullptr), cnrtSuccess)
      << "a kernel without parameters needs no args";
  EXPECT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
}

TEST_F(KernelTest, InvalidDimsAndTypes) {
  auto launch = [&](cnrtDim3_t d, int type) {
    return cnrtInvokeKernel(empty_kernel, d, static_cast<cnrtFunctionType_t>(type), nullptr, 0, nullptr);
  };
  EXPECT_CNRT_ERROR(launch(dim(0), cnrtFuncTypeBlock), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(launch(dim(1, 0), cnrtFuncTypeBlock), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(launch(dim(1, 1, 0), cnrtFuncTypeBlock), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(launch(dim(1, 65536), cnrtFuncTypeBlock), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(launch(dim(0x80000000u), cnrtFuncTypeBlock), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(launch(dim(65535, 65535, 2), cnrtFuncTypeBlock), cnrtErrorArgsInvalid);  // > 2^32-1 tasks
  for (int bad : {0, 2, 3, 5, 12, 128, -1}) {
    SCOPED_TRACE(bad);
    EXPECT_CNRT_ERROR(launch(dim(4), bad), cnrtErrorArgsInvalid);
  }
  // tiny has 2 clusters of 4 cores: UNION4 and wider do not fit.
  EXPECT_CNRT_ERROR(launch(dim(16), cnrtFuncTypeUnion4), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(launch(dim(64), cnrtFuncTypeUnion16), cnrtErrorArgsInvalid);
  EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find("has 2"), std::string::npos) << mlusimGetLastErrorMessage();
  // dim.x must be a multiple of the union group size.
  EXPECT_CNRT_ERROR(launch(dim(6), cnrtFuncTypeUnion1), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(launch(dim(4), cnrtFuncTypeUnion2), cnrtErrorArgsInvalid);
  EXPECT_EQ(launch(dim(8), cnrtFuncTypeUnion2), cnrtSuccess);
  EXPECT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
}

TEST_F(KernelTest, UnionTasksMapOntoClusters) {
  const int tasks = 16;
  void* d = dmalloc(tasks * sizeof(int));
  void* args[] = {&d};
  ASSERT_EQ(cnrtInvokeKernel(task_id_kernel, dim(tasks), cnrtFuncTypeUnion1, args, 0, nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
  std::vector<int> ids = download<int>(d, tasks);
  for (int i = 0; i < tasks; ++i) EXPECT_EQ(ids[i], i) << "UNION1: one cluster per group, cluster_id 0";
  ASSERT_EQ(cnrtInvokeKernel(task_id_kernel, dim(8), cnrtFuncTypeUnion2, args, 0, nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
  ids = download<int>(d, 8);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(ids[i], i + 1000 * (i / 4)) << "UNION2: tasks 4..7 run on the group's second cluster";
}

TEST_F(KernelTest, FaultIsReportedOnTheQueueOnceWithItsMessage) {
  cnrtQueue_t q, other;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  ASSERT_EQ(cnrtQueueCreate(&other), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(trap_kernel, dim(2), cnrtFuncTypeBlock, nullptr, 0, q), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(empty_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, q), cnrtSuccess);
  EXPECT_EQ(cnrtQueueSync(other), cnrtSuccess) << "other queues are not affected";
  EXPECT_CNRT_ERROR(cnrtQueueSync(q), cnrtErrorKernelTrap);
  const std::string message = mlusimGetLastErrorMessage();
  EXPECT_NE(message.find("trap_kernel"), std::string::npos) << message;
  EXPECT_NE(message.find("test trap"), std::string::npos) << message;
  EXPECT_EQ(cnrtQueueSync(q), cnrtSuccess) << "reported once";
  EXPECT_EQ(cnrtQueueQuery(q), cnrtSuccess);
  size_t n = 0;
  ASSERT_EQ(mlusimGetKernelRecordCount(0, &n), cnrtSuccess);
  ASSERT_EQ(n, 2u);
  mlusimKernelRecord_t r;
  ASSERT_EQ(mlusimGetKernelRecord(0, 0, &r), cnrtSuccess);
  EXPECT_EQ(r.faulted, 1);
  EXPECT_EQ(std::string(r.name), "trap_kernel");
  ASSERT_EQ(mlusimGetKernelRecord(0, 1, &r), cnrtSuccess);
  EXPECT_EQ(r.faulted, 0) << "later work in the queue still runs";
}

TEST_F(KernelTest, FaultIsReportedByQueryAndByTheNextSynchronousCopy) {
  ASSERT_EQ(cnrtInvokeKernel(trap_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, nullptr), cnrtSuccess);
  void* d = dmalloc(64);
  char h[64] = {};
  EXPECT_CNRT_ERROR(cnrtMemcpy(h, d, 64, cnrtMemcpyDevToHost), cnrtErrorKernelTrap);
  EXPECT_EQ(cnrtMemcpy(h, d, 64, cnrtMemcpyDevToHost), cnrtSuccess);
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(trap_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, q), cnrtSuccess);
  cnrtRet_t r;
  while ((r = cnrtQueueQuery(q)) == cnrtErrorNotReady) {
  }
  EXPECT_EQ(r, cnrtErrorKernelTrap);
  EXPECT_EQ(cnrtQueueQuery(q), cnrtSuccess);
}

TEST_F(KernelTest, KernelAccessToFreedOrForeignMemoryFaults) {
  void* live = dmalloc(4096);
  void* gone = dmalloc(4096);
  ASSERT_EQ(cnrtFree(gone), cnrtSuccess);
  int n = 256;
  void* ok_args[] = {&live, &n};
  void* freed_args[] = {&gone, &n};
  ASSERT_EQ(cnrtInvokeKernel(read_kernel, dim(1), cnrtFuncTypeBlock, ok_args, 0, nullptr), cnrtSuccess);
  EXPECT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(read_kernel, dim(1), cnrtFuncTypeBlock, freed_args, 0, nullptr), cnrtSuccess);
  EXPECT_CNRT_ERROR(cnrtQueueSync(nullptr), cnrtErrorKernelTrap);
  EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find("not inside a live cnrtMalloc allocation"), std::string::npos)
      << mlusimGetLastErrorMessage();
  int past_end = 1025;  // 4100 bytes from a 4096-byte allocation
  void* over_args[] = {&live, &past_end};
  ASSERT_EQ(cnrtInvokeKernel(read_kernel, dim(1), cnrtFuncTypeBlock, over_args, 0, nullptr), cnrtSuccess);
  EXPECT_CNRT_ERROR(cnrtQueueSync(nullptr), cnrtErrorKernelTrap);
}

TEST_F(KernelTest, KernelRecordsCarryCyclesAndTimes) {
  int rounds = 10;
  void* args[] = {&rounds};
  ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(3), cnrtFuncTypeBlock, args, 0, nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
  mlusimKernelRecord_t r;
  ASSERT_EQ(mlusimGetKernelRecord(0, 0, &r), cnrtSuccess);
  EXPECT_EQ(std::string(r.name), "busy_kernel");
  EXPECT_EQ(r.dim.x, 3u);
  EXPECT_EQ(r.type, cnrtFuncTypeBlock);
  EXPECT_EQ(r.cycles, 10u * (1024 / 32 + 10)) << "10 vec_fill of 1024 fp32 on a 32-lane VFU, 3 tasks in parallel";
  EXPECT_LE(r.start_ns, r.end_ns);
  EXPECT_EQ(r.vector_elements, 3u * 10 * 1024);
  EXPECT_CNRT_ERROR(mlusimGetKernelRecord(0, 1, &r), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimGetKernelRecord(0, 0, nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimGetKernelRecord(1, 0, &r), cnrtErrorDeviceInvalid);
  size_t n = 0;
  EXPECT_CNRT_ERROR(mlusimGetKernelRecordCount(0, nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimGetKernelRecordCount(-1, &n), cnrtErrorDeviceInvalid);
}

TEST_F(KernelTest, CppBodiesLaunchThroughTheSameQueues) {
  void* d = dmalloc(sizeof(float));
  const auto addr = reinterpret_cast<std::uint64_t>(d);
  auto body = [addr] {
    if (mlusim::dev::task_id() == 0) mlusim::dev::store(mlusim::sim::Gdram<float>(addr), 42.0f);
  };
  ASSERT_EQ(invoke_kernel_body("lambda", body, dim(1), cnrtFuncTypeBlock, nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
  EXPECT_EQ(download<float>(d, 1)[0], 42.0f);
  EXPECT_CNRT_ERROR(invoke_kernel_body("lambda", nullptr, dim(1), cnrtFuncTypeBlock, nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(invoke_kernel_body("", body, dim(1), cnrtFuncTypeBlock, nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(invoke_kernel_body("lambda", body, dim(0), cnrtFuncTypeBlock, nullptr), cnrtErrorArgsInvalid);
}

std::atomic<int> g_calls{0};
void count_call(void* data) {
  g_calls.fetch_add(1);
  *static_cast<int*>(data) += 1;
}

TEST_F(KernelTest, HostFunctionsRunInQueueOrder) {
  int value = 0;
  g_calls = 0;
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeHostFunc(q, count_call, &value), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeHostFunc(nullptr, count_call, &value), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(q), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
  EXPECT_EQ(value, 2);
  EXPECT_EQ(g_calls.load(), 2);
  EXPECT_CNRT_ERROR(cnrtInvokeHostFunc(q, nullptr, nullptr), cnrtErrorArgsInvalid);
}

}  // namespace
}  // namespace mlusim::driver::testing
