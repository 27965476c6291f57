// Simulator extensions: configs (and their errors), reset, clocks, timing-only mode, traces,
// statistics.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "driver_test.h"
#include "test_kernels.h"

namespace mlusim::driver::testing {
namespace {

class ExtTest : public DriverTest {
 protected:
  // y = 3x + y over n floats of ones, on 4 BLOCK tasks; upload() refreshes x and y (and, being a
  // host copy, drops their L2 lines).
  struct SaxpyRun {
    static constexpr int n = 4096;
    void* dx;
    void* dy;
    float a = 3.0f;
    int count = n;
    explicit SaxpyRun(void* x, void* y) : dx(x), dy(y) { upload(); }
    void upload() {
      DriverTest::upload(dx, std::vector<float>(n, 1.0f));
      DriverTest::upload(dy, std::vector<float>(n, 1.0f));
    }
    cnrtRet_t launch() {
      void* args[] = {&dx, &dy, &a, &count};
      return cnrtInvokeKernel(saxpy_kernel, DriverTest::dim(4), cnrtFuncTypeBlock, args, 0, nullptr);
    }
  };
};

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(ExtTest, LoadConfigErrorsCarryTheLoaderMessage) {
  EXPECT_CNRT_ERROR(mlusimLoadConfig(nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimLoadConfig("no-such-preset"), cnrtErrorArgsInvalid);
  EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find("no-such-preset"), std::string::npos) << mlusimGetLastErrorMessage();
  const char* unknown_key[] = {"dram.no_such_key=1"};
  EXPECT_CNRT_ERROR(mlusimLoadConfigWithOverrides("tiny", unknown_key, 1), cnrtErrorArgsInvalid);
  EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find("no_such_key"), std::string::npos) << mlusimGetLastErrorMessage();
  const char* no_equals[] = {"devices"};
  EXPECT_CNRT_ERROR(mlusimLoadConfigWithOverrides("tiny", no_equals, 1), cnrtErrorArgsInvalid);
  const char* bad_value[] = {"devices=0"};
  EXPECT_CNRT_ERROR(mlusimLoadConfigWithOverrides("tiny", bad_value, 1), cnrtErrorArgsInvalid);
  const char* null_entry[] = {nullptr};
  EXPECT_CNRT_ERROR(mlusimLoadConfigWithOverrides("tiny", null_entry, 1), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimLoadConfigWithOverrides("tiny", nullptr, 1), cnrtErrorArgsInvalid);
  // A failed load leaves the loaded system untouched.
  char name[32];
  ASSERT_EQ(mlusimGetConfigName(name, sizeof name), cnrtSuccess);
  EXPECT_STREQ(name, "tiny");
  void* d = dmalloc(64);
  EXPECT_EQ(cnrtFree(d), cnrtSuccess);
}

TEST_F(ExtTest, LoadConfigStartsAFreshSystem) {
  void* d = dmalloc(4096);
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  ASSERT_EQ(cnrtSetDevice(0), cnrtSuccess);
  EXPECT_GT(host_ns(), 0);
  load("tiny", {"devices=2", "host.api_call_ns=100"});
  EXPECT_DOUBLE_EQ(host_ns(), 0) << "a new epoch";
  EXPECT_CNRT_ERROR(cnrtFree(d), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtQueueSync(q), cnrtErrorInvalidResourceHandle);
  unsigned n = 0;
  ASSERT_EQ(cnrtGetDeviceCount(&n), cnrtSuccess);
  EXPECT_EQ(n, 2u);
  EXPECT_DOUBLE_EQ(host_ns(), 3 * 100) << "three calls at the new api_call_ns";
  ASSERT_EQ(mlusimReset(), cnrtSuccess);
  ASSERT_EQ(cnrtGetDeviceCount(&n), cnrtSuccess);
  EXPECT_EQ(n, 2u) << "reset keeps the config and its overrides";
}

TEST_F(ExtTest, LoadConfigWaitsForQueuedWork) {
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  int rounds = 100;
  void* args[] = {&rounds};
  ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(2), cnrtFuncTypeBlock, args, 0, q), cnrtSuccess);
  EXPECT_EQ(mlusimLoadConfig("tiny"), cnrtSuccess);
}

TEST_F(ExtTest, LoadConfigFromAHostFunctionIsIllegal) {
  static cnrtRet_t seen = cnrtSuccess;
  ASSERT_EQ(cnrtInvokeHostFunc(nullptr, [](void*) { seen = mlusimLoadConfig("tiny"); }, nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
  EXPECT_EQ(seen, cnrtErrorIllegalState);
}

TEST_F(ExtTest, ConfigNameAndClocks) {
  char buf[8];
  EXPECT_EQ(mlusimGetConfigName(buf, sizeof buf), cnrtSuccess);
  EXPECT_STREQ(buf, "tiny");
  char tiny_buf[3];
  EXPECT_EQ(mlusimGetConfigName(tiny_buf, sizeof tiny_buf), cnrtSuccess);
  EXPECT_STREQ(tiny_buf, "ti") << "truncated, NUL-terminated";
  EXPECT_CNRT_ERROR(mlusimGetConfigName(nullptr, 4), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimGetConfigName(buf, 0), cnrtErrorArgsInvalid);
  uint64_t ps = 1;
  EXPECT_EQ(mlusimGetHostTimePs(&ps), cnrtSuccess);
  EXPECT_EQ(ps, 0u) << "mlusim calls cost no host time";
  EXPECT_EQ(mlusimGetDeviceTimePs(&ps), cnrtSuccess);
  EXPECT_CNRT_ERROR(mlusimGetHostTime(nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimGetHostTimePs(nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimGetDeviceTime(nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimGetDeviceTimePs(nullptr), cnrtErrorArgsInvalid);
}

// A host function that reports 2 us of host work completes 2 us later: the queue's next work and
// its sync wait for it. mlusimHostAdvance on the main thread moves that thread's clock only.
TEST_F(ExtTest, HostAdvanceDelaysAHostFunctionsCompletion) {
  const double t0 = host_ns();
  ASSERT_EQ(mlusimHostAdvance(250), cnrtSuccess);
  EXPECT_DOUBLE_EQ(host_ns() - t0, 250);
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  cnrtNotifier_t before, after;
  ASSERT_EQ(cnrtNotifierCreate(&before), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierCreate(&after), cnrtSuccess);
  ASSERT_EQ(cnrtPlaceNotifier(before, q), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeHostFunc(q, [](void*) { mlusimHostAdvance(2000); }, nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtPlaceNotifier(after, q), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(q), cnrtSuccess);
  float ms = 0;
  ASSERT_EQ(cnrtNotifierElapsedTime(before, after, &ms), cnrtSuccess);
  // `before` lands when placed; the host function is enqueued one API call (0.5 us) later, runs
  // at once and ends 2 us after it started; `after` waits for it.
  EXPECT_NEAR(ms * 1e6, kApiNs + 2000, 1.0);
  EXPECT_CNRT_ERROR(mlusimHostAdvance(-1), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimHostAdvance(std::nan("")), cnrtErrorArgsInvalid);
}

// Peeking at a notifier runs the simulation to it but leaves the caller's clock, and is no sync.
TEST_F(ExtTest, NotifierPeekSeesTheFutureWithoutWaiting) {
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  cnrtNotifier_t n, never;
  ASSERT_EQ(cnrtNotifierCreate(&n), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierCreate(&never), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeHostFunc(q, [](void*) { mlusimHostAdvance(30000); }, nullptr), cnrtSuccess);
  const double enqueued = host_ns();  // the host function started one API call before this
  ASSERT_EQ(cnrtPlaceNotifier(n, q), cnrtSuccess);
  const double before = host_ns();
  double at = 0;
  ASSERT_EQ(mlusimNotifierPeek(n, &at), cnrtSuccess);
  EXPECT_NEAR(at, enqueued + 30000, 1.0) << "the host function's 30 us end";
  EXPECT_EQ(host_ns(), before) << "the caller did not wait";
  mlusimDeviceStats_t stats{};
  ASSERT_EQ(mlusimGetDeviceStats(0, &stats), cnrtSuccess);
  EXPECT_EQ(stats.host_syncs, 0u);
  EXPECT_CNRT_ERROR(mlusimNotifierPeek(n, nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimNotifierPeek(never, &at), cnrtErrorIllegalState);
  EXPECT_CNRT_ERROR(mlusimNotifierPeek(nullptr, &at), cnrtErrorInvalidResourceHandle);
  ASSERT_EQ(cnrtQueueSync(q), cnrtSuccess);
  EXPECT_NEAR(host_ns(), at, 1.0) << "a real wait ends where the peek said";
}

// Untimed copies move the bytes and cost neither host nor device time.
TEST_F(ExtTest, MemcpyNoTimeMovesBytesWithoutTime) {
  void* d = dmalloc(4096);
  std::vector<std::uint32_t> in(1024), out(1024, 0);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint32_t>(i * 2654435761u);
  const double t0 = host_ns();
  ASSERT_EQ(mlusimMemcpyNoTime(d, in.data(), 4096, cnrtMemcpyHostToDev), cnrtSuccess);
  ASSERT_EQ(mlusimMemcpyNoTime(out.data(), d, 4096, cnrtMemcpyDevToHost), cnrtSuccess);
  EXPECT_EQ(host_ns(), t0);
  EXPECT_EQ(out, in);
  EXPECT_EQ(download<std::uint32_t>(d, 1024), in) << "a timed copy sees what the untimed one wrote";
  EXPECT_CNRT_ERROR(mlusimMemcpyNoTime(d, in.data(), 4097, cnrtMemcpyHostToDev), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimMemcpyNoTime(in.data(), out.data(), 16, cnrtMemcpyHostToDev), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimMemcpyNoTime(nullptr, d, 16, cnrtMemcpyDevToHost), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimMemcpyNoTime(d, d, 16, cnrtMemcpyDevToDev), cnrtErrorMemcpyDirectionInvalid);
  EXPECT_EQ(mlusimMemcpyNoTime(d, in.data(), 0, cnrtMemcpyHostToDev), cnrtSuccess);
}

// mlusimFlushL2: a kernel that reads what the previous one read hits in the L2 (tiny inherits
// l2.cache: true), and reads from DRAM again after the flush: the same cycles as the cold run.
TEST_F(ExtTest, FlushL2MakesTheNextReadsCold) {
  SaxpyRun saxpy(dmalloc(SaxpyRun::n * sizeof(float)), dmalloc(SaxpyRun::n * sizeof(float)));
  for (int i = 0; i < 3; ++i) {
    if (i == 2) {
      ASSERT_EQ(mlusimFlushL2(0), cnrtSuccess);
    }
    ASSERT_EQ(saxpy.launch(), cnrtSuccess);
    ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
  }
  mlusimKernelRecord_t cold, warm, flushed;
  ASSERT_EQ(mlusimGetKernelRecord(0, 0, &cold), cnrtSuccess);
  ASSERT_EQ(mlusimGetKernelRecord(0, 1, &warm), cnrtSuccess);
  ASSERT_EQ(mlusimGetKernelRecord(0, 2, &flushed), cnrtSuccess);
  EXPECT_EQ(cold.l2_hit_bytes, 0u);
  EXPECT_EQ(warm.l2_hit_bytes, 2u * SaxpyRun::n * sizeof(float));  // x and y (written by the first run)
  EXPECT_EQ(warm.dram_bytes, warm.read_bytes[1] + warm.write_bytes[1] - warm.l2_hit_bytes + warm.l2_overfetch_bytes);
  EXPECT_LT(warm.cycles, cold.cycles);
  EXPECT_EQ(flushed.l2_hit_bytes, 0u);
  EXPECT_EQ(flushed.cycles, cold.cycles);
  mlusimDeviceStats_t st{};
  ASSERT_EQ(mlusimGetDeviceStats(0, &st), cnrtSuccess);
  EXPECT_EQ(st.l2_hit_bytes, warm.l2_hit_bytes);
  EXPECT_CNRT_ERROR(mlusimFlushL2(7), cnrtErrorDeviceInvalid);
}

TEST_F(ExtTest, TimingOnlyKeepsCycles) {
  SaxpyRun saxpy(dmalloc(SaxpyRun::n * sizeof(float)), dmalloc(SaxpyRun::n * sizeof(float)));
  ASSERT_EQ(saxpy.launch(), cnrtSuccess);
  saxpy.upload();  // both runs start from the same L2 state: x and y not resident
  ASSERT_EQ(mlusimSetTimingOnly(1), cnrtSuccess);
  ASSERT_EQ(saxpy.launch(), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
  ASSERT_EQ(mlusimSetTimingOnly(0), cnrtSuccess);
  mlusimKernelRecord_t functional, timing;
  ASSERT_EQ(mlusimGetKernelRecord(0, 0, &functional), cnrtSuccess);
  ASSERT_EQ(mlusimGetKernelRecord(0, 1, &timing), cnrtSuccess);
  EXPECT_EQ(functional.cycles, timing.cycles);
}

TEST_F(ExtTest, TraceRecordsQueueOperations) {
  const auto path = std::filesystem::temp_directory_path() / ("mlusim_driver_trace_" + std::to_string(::getpid())) / "t.json";
  EXPECT_CNRT_ERROR(mlusimTraceBegin(static_cast<mlusimTraceLevel_t>(7)), cnrtErrorArgsInvalid);
  ASSERT_EQ(mlusimTraceBegin(MLUSIM_TRACE_OPS), cnrtSuccess);
  void* d = dmalloc(4096);
  std::vector<char> h(4096);
  ASSERT_EQ(cnrtMemcpy(d, h.data(), 4096, cnrtMemcpyHostToDev), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(empty_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtSyncDevice(), cnrtSuccess);
  ASSERT_EQ(mlusimTraceEnd(), cnrtSuccess);
  ASSERT_EQ(mlusimTraceWrite(path.c_str()), cnrtSuccess);
  const std::string json = read_file(path);
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(json.find("default queue"), std::string::npos) << "queue track";
  EXPECT_NE(json.find("memcpy HtoD 4096 B pageable"), std::string::npos);
  EXPECT_NE(json.find("empty_kernel"), std::string::npos);
  EXPECT_NE(json.find("device memory"), std::string::npos) << "allocator counter";
  std::filesystem::remove_all(path.parent_path());
  EXPECT_CNRT_ERROR(mlusimTraceWrite(nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimTraceWrite(""), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimTraceWrite("/proc/no/such/dir/t.json"), cnrtErrorSys);
}

// A modelled wait: completes at its time (the queue's next work waits for it), shows as a span
// with its name in the trace, costs one API call, and bad arguments name the problem.
TEST_F(ExtTest, QueueWaitUntilCompletesAtItsTimeAndIsNamedInTheTrace) {
  const auto path = std::filesystem::temp_directory_path() / ("mlusim_driver_wait_" + std::to_string(::getpid())) / "t.json";
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  ASSERT_EQ(mlusimTraceBegin(MLUSIM_TRACE_OPS), cnrtSuccess);
  const double t0 = host_ns();
  ASSERT_EQ(mlusimQueueWaitUntil(q, t0 + 5000, "cncl all_reduce 4194304 B"), cnrtSuccess);
  EXPECT_DOUBLE_EQ(host_ns() - t0, kApiNs) << "one API call of host time";
  cnrtNotifier_t after;
  ASSERT_EQ(cnrtNotifierCreate(&after), cnrtSuccess);
  ASSERT_EQ(cnrtPlaceNotifier(after, q), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(q), cnrtSuccess);
  double landed = 0;
  ASSERT_EQ(mlusimNotifierPeek(after, &landed), cnrtSuccess);
  EXPECT_NEAR(landed, t0 + 5000, 1e-3) << "the notifier after the wait lands at its time";
  // A time already past completes when the queue reaches it.
  ASSERT_EQ(mlusimQueueWaitUntil(q, 0, "past"), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(q), cnrtSuccess);
  ASSERT_EQ(mlusimTraceEnd(), cnrtSuccess);
  ASSERT_EQ(mlusimTraceWrite(path.c_str()), cnrtSuccess);
  const std::string json = read_file(path);
  EXPECT_NE(json.find("cncl all_reduce 4194304 B"), std::string::npos) << json.substr(0, 2000);
  std::filesystem::remove_all(path.parent_path());
  EXPECT_CNRT_ERROR(mlusimQueueWaitUntil(q, -1, "x"), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimQueueWaitUntil(q, std::nan(""), "x"), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimQueueWaitUntil(q, 1, nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimQueueWaitUntil(q, 1, ""), cnrtErrorArgsInvalid);
  EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find("name is NULL or empty"), std::string::npos);
  EXPECT_CNRT_ERROR(mlusimQueueWaitUntil(reinterpret_cast<cnrtQueue_t>(0x10), 1, "x"), cnrtErrorInvalidResourceHandle);
  ASSERT_EQ(cnrtNotifierDestroy(after), cnrtSuccess);
  ASSERT_EQ(cnrtQueueDestroy(q), cnrtSuccess);
}

TEST_F(ExtTest, StatisticsCountTrafficAndKernels) {
  void* d = dmalloc(8192);
  std::vector<char> h(8192);
  ASSERT_EQ(cnrtMemcpy(d, h.data(), 8192, cnrtMemcpyHostToDev), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(empty_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(trap_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, nullptr), cnrtSuccess);
  EXPECT_EQ(cnrtSyncDevice(), cnrtErrorKernelTrap);
  mlusimDeviceStats_t s;
  ASSERT_EQ(mlusimGetDeviceStats(0, &s), cnrtSuccess);
  EXPECT_EQ(s.read_bytes[0], 8192u) << "host";
  EXPECT_EQ(s.write_bytes[1], 8192u) << "GDRAM";
  EXPECT_EQ(s.kernels, 2u);
  EXPECT_EQ(s.faulted_kernels, 1u);
  EXPECT_EQ(s.allocated_bytes, 8192u);
  EXPECT_EQ(s.live_allocations, 1u);
  EXPECT_GT(s.elapsed_ns, 0.0);
  size_t needed = 0;
  ASSERT_EQ(mlusimGetStatsJson(0, nullptr, 0, &needed), cnrtSuccess);
  std::vector<char> json(needed);
  ASSERT_EQ(mlusimGetStatsJson(0, json.data(), json.size(), nullptr), cnrtSuccess);
  EXPECT_EQ(std::string(json.data()).size() + 1, needed);
  EXPECT_EQ(json[0], '{');
  ASSERT_EQ(mlusimResetStats(0), cnrtSuccess);
  ASSERT_EQ(mlusimGetDeviceStats(0, &s), cnrtSuccess);
  EXPECT_EQ(s.kernels, 0u);
  EXPECT_EQ(s.read_bytes[0], 0u);
  EXPECT_EQ(s.allocated_bytes, 8192u) << "allocator figures survive a stats reset";
  EXPECT_CNRT_ERROR(mlusimGetDeviceStats(0, nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimGetDeviceStats(3, &s), cnrtErrorDeviceInvalid);
  EXPECT_CNRT_ERROR(mlusimResetStats(-1), cnrtErrorDeviceInvalid);
  EXPECT_CNRT_ERROR(mlusimGetStatsJson(0, nullptr, 5, nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimGetStatsJson(9, json.data(), json.size(), nullptr), cnrtErrorDeviceInvalid);
}

// Fault injection: one armed DMA lands with one bit flipped, so exactly one float differs.
TEST_F(ExtTest, InjectedDmaBitFlipCorruptsOneElement) {
  constexpr int n = 256;
  void* p = nullptr;
  ASSERT_EQ(cnrtMalloc(&p, n * sizeof(float)), cnrtSuccess);
  ASSERT_EQ(mlusimInjectDmaBitFlip(0, 1), cnrtSuccess);
  float value = 1.0f;
  int count = n;
  void* args[] = {&p, &value, &count};
  ASSERT_EQ(cnrtInvokeKernel(fill_kernel, cnrtDim3_t{1, 1, 1}, cnrtFuncTypeBlock, args, 0, nullptr), cnrtSuccess);
  std::vector<float> host(n);
  ASSERT_EQ(cnrtMemcpy(host.data(), p, n * sizeof(float), cnrtMemcpyDevToHost), cnrtSuccess);
  int differing = 0;
  for (float v : host) differing += v != 1.0f;
  EXPECT_EQ(differing, 1);
  EXPECT_CNRT_ERROR(mlusimInjectDmaBitFlip(7, 1), cnrtErrorDeviceInvalid);
  ASSERT_EQ(cnrtFree(p), cnrtSuccess);
}

// An armed kernel fault traps the nth launch; the next sync reports it with the kernel's name and
// launch tag, once; later kernels run clean.
TEST_F(ExtTest, InjectedKernelFaultTrapsTheNthLaunch) {
  ASSERT_EQ(mlusimInjectKernelFault(0, 2), cnrtSuccess);
  ASSERT_EQ(mlusimSetLaunchTag("aten::mul"), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(empty_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(empty_kernel, dim(2), cnrtFuncTypeBlock, nullptr, 0, nullptr), cnrtSuccess);
  ASSERT_EQ(mlusimSetLaunchTag(nullptr), cnrtSuccess);
  EXPECT_EQ(cnrtQueueSync(nullptr), cnrtErrorKernelTrap);
  const std::string message = mlusimGetLastErrorMessage();
  EXPECT_NE(message.find("(launched by aten::mul) faulted"), std::string::npos) << message;
  EXPECT_NE(message.find("injected kernel fault (mlusimInjectKernelFault)"), std::string::npos) << message;
  ASSERT_EQ(cnrtInvokeKernel(empty_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, nullptr), cnrtSuccess);
  EXPECT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
  mlusimDeviceStats_t s;
  ASSERT_EQ(mlusimGetDeviceStats(0, &s), cnrtSuccess);
  EXPECT_EQ(s.faulted_kernels, 1u);
  EXPECT_CNRT_ERROR(mlusimInjectKernelFault(5, 1), cnrtErrorDeviceInvalid);
}

// Activity records: kernels and copies with their device times and the submitting thread's
// correlation id, blocking calls as syncs with how long the host waited; the sync counters.
TEST_F(ExtTest, ActivityRecordsCarryCorrelationIdsAndSyncs) {
  constexpr std::size_t kBytes = 1 << 20;
  void* d = dmalloc(kBytes);
  std::vector<char> h(kBytes, 1);
  ASSERT_EQ(mlusimResetStats(0), cnrtSuccess);
  ASSERT_EQ(mlusimActivityEnable(1), cnrtSuccess);
  ASSERT_EQ(mlusimPushCorrelationId(41), cnrtSuccess);
  ASSERT_EQ(cnrtMemcpyAsync(d, h.data(), kBytes, nullptr, cnrtMemcpyHostToDev), cnrtSuccess);
  ASSERT_EQ(mlusimPushCorrelationId(42), cnrtSuccess);
  ASSERT_EQ(mlusimSetLaunchTag("aten::relu"), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(empty_kernel, dim(4), cnrtFuncTypeBlock, nullptr, 0, nullptr), cnrtSuccess);
  ASSERT_EQ(mlusimSetLaunchTag(nullptr), cnrtSuccess);
  ASSERT_EQ(mlusimPopCorrelationId(), cnrtSuccess);
  ASSERT_EQ(mlusimPopCorrelationId(), cnrtSuccess);
  EXPECT_CNRT_ERROR(mlusimPopCorrelationId(), cnrtErrorIllegalState);
  double before = 0, after = 0;
  ASSERT_EQ(mlusimGetHostTime(&before), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);
  ASSERT_EQ(mlusimGetHostTime(&after), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);  // nothing left to wait for: not a sync
  ASSERT_EQ(mlusimActivityEnable(0), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(empty_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, nullptr), cnrtSuccess);
  ASSERT_EQ(cnrtQueueSync(nullptr), cnrtSuccess);  // not recorded, but counted

  std::vector<mlusimActivity_t> records(8);
  std::size_t n = 0;
  std::uint64_t dropped = 7;
  ASSERT_EQ(mlusimActivityRead(records.data(), records.size(), &n, &dropped), cnrtSuccess);
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(dropped, 0u);
  const mlusimActivity_t& copy = records[0];
  EXPECT_EQ(copy.kind, mlusimActivityMemcpy);
  EXPECT_EQ(copy.correlation_id, 41u);
  EXPECT_EQ(copy.bytes, kBytes);
  EXPECT_GT(copy.end_ns, copy.start_ns);
  const mlusimActivity_t& kernel = records[1];
  EXPECT_EQ(kernel.kind, mlusimActivityKernel);
  EXPECT_STREQ(kernel.name, "empty_kernel");
  EXPECT_STREQ(kernel.tag, "aten::relu");
  EXPECT_EQ(kernel.correlation_id, 42u);
  EXPECT_GE(kernel.start_ns, copy.end_ns);  // one queue: in order
  const mlusimActivity_t& sync = records[2];
  EXPECT_EQ(sync.kind, mlusimActivitySync);
  EXPECT_STREQ(sync.name, "cnrtQueueSync");
  EXPECT_EQ(sync.correlation_id, 0u);
  EXPECT_DOUBLE_EQ(sync.end_ns, after);
  EXPECT_GT(sync.end_ns, sync.start_ns);
  EXPECT_DOUBLE_EQ(sync.end_ns, kernel.end_ns);  // the host waited until the kernel was done
  EXPECT_NE(sync.host_thread, 0u);

  mlusimDeviceStats_t s;
  ASSERT_EQ(mlusimGetDeviceStats(0, &s), cnrtSuccess);
  EXPECT_EQ(s.host_syncs, 2u);
  EXPECT_GE(s.host_sync_wait_ns, sync.end_ns - sync.start_ns);
  ASSERT_EQ(mlusimActivityRead(records.data(), records.size(), &n, nullptr), cnrtSuccess);
  EXPECT_EQ(n, 0u);  // drained
  EXPECT_CNRT_ERROR(mlusimActivityRead(nullptr, 4, &n, nullptr), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimActivityRead(records.data(), 4, nullptr, nullptr), cnrtErrorArgsInvalid);
  ASSERT_EQ(mlusimResetStats(0), cnrtSuccess);
  ASSERT_EQ(mlusimGetDeviceStats(0, &s), cnrtSuccess);
  EXPECT_EQ(s.host_syncs, 0u);
}

}  // namespace
}  // namespace mlusim::driver::testing
