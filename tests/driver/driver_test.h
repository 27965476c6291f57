// Shared fixture and helpers for the driver tests. Every test starts from a fresh runtime on the
// tiny preset (mlusimLoadConfig), so tests are independent even when one process runs them all.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cnrt.h"
#include "mlusim_ext.h"
#include "test_kernels.h"

namespace mlusim::driver::testing {

// tiny.yaml's round numbers (configs/tiny.yaml), in ns unless noted.
constexpr double kApiNs = 500;        // host.api_call_ns
constexpr double kLaunchNs = 5000;    // host.launch_overhead_ns
constexpr double kLinkLatencyNs = 1000;  // host_link.latency_ns
constexpr double kDramLatencyNs = 100;   // dram.latency_ns
constexpr double kPinnedGbps = 16;    // host_link.bandwidth_gbps (= bytes per ns)
constexpr double kPageableGbps = 8;   // host_link.pageable_bandwidth_gbps
constexpr std::size_t kTinyDram = 64u << 20;  // dram.capacity_bytes

class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override { load("tiny"); }
  void load(const std::string& preset, const std::vector<std::string>& overrides = {}) {
    std::vector<const char*> ov;
    for (const std::string& o : overrides) ov.push_back(o.c_str());
    ASSERT_EQ(mlusimLoadConfigWithOverrides(preset.c_str(), ov.data(), ov.size()), cnrtSuccess) << mlusimGetLastErrorMessage();
    ASSERT_EQ(mlusimSetFaultPrinting(0), cnrtSuccess);
    cnrtGetLastError();
  }
  static double host_ns() {
    double ns = -1;
    EXPECT_EQ(mlusimGetHostTime(&ns), cnrtSuccess);
    return ns;
  }
  static void* dmalloc(std::size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cnrtMalloc(&p, bytes), cnrtSuccess) << mlusimGetLastErrorMessage();
    return p;
  }
  static std::size_t free_bytes() {
    std::size_t f = 0, t = 0;
    EXPECT_EQ(cnrtMemGetInfo(&f, &t), cnrtSuccess);
    return f;
  }
  template <class T> static std::vector<T> download(const void* d, std::size_t count) {
    std::vector<T> v(count);
    EXPECT_EQ(cnrtMemcpy(v.data(), const_cast<void*>(d), count * sizeof(T), cnrtMemcpyDevToHost), cnrtSuccess)
        << mlusimGetLastErrorMessage();
    return v;
  }
  template <class T> static void upload(void* d, const std::vector<T>& v) {
    EXPECT_EQ(cnrtMemcpy(d, const_cast<T*>(v.data()), v.size() * sizeof(T), cnrtMemcpyHostToDev), cnrtSuccess)
        << mlusimGetLastErrorMessage();
  }
  static cnrtDim3_t dim(unsigned x, unsigned y = 1, unsigned z = 1) { return cnrtDim3_t{x, y, z}; }
};

// Expects `call` to return `code` and to set it as the thread's last error (reset afterwards).
#define EXPECT_CNRT_ERROR(call, code)                                             \
  do {                                                                            \
    const cnrtRet_t expect_ret_ = (call);                                         \
    EXPECT_EQ(expect_ret_, (code)) << #call << ": " << mlusimGetLastErrorMessage(); \
    EXPECT_EQ(cnrtGetLastError(), (code)) << #call;                               \
  } while (0)

}  // namespace mlusim::driver::testing
