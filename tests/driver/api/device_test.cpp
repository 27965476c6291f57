// Device management: count, current device (per thread), properties and attributes from the
// config, device sync and reset, peer accessibility, flags, versions.
#include <climits>
#include <cstring>
#include <string>
#include <thread>

#include "driver_test.h"

namespace mlusim::driver::testing {
namespace {

using DeviceTest = DriverTest;

TEST_F(DeviceTest, CountsTheConfiguredDevices) {
  unsigned n = 0;
  EXPECT_EQ(cnrtGetDeviceCount(&n), cnrtSuccess);
  EXPECT_EQ(n, 1u);
  load("tiny", {"devices=3"});
  EXPECT_EQ(cnrtGetDeviceCount(&n), cnrtSuccess);
  EXPECT_EQ(n, 3u);
  EXPECT_CNRT_ERROR(cnrtGetDeviceCount(nullptr), cnrtErrorArgsInvalid);
}

TEST_F(DeviceTest, CurrentDeviceIsPerThreadAndValidated) {
  load("tiny", {"devices=2"});
  int d = -1;
  EXPECT_EQ(cnrtGetDevice(&d), cnrtSuccess);
  EXPECT_EQ(d, 0);
  EXPECT_EQ(cnrtSetDevice(1), cnrtSuccess);
  EXPECT_EQ(cnrtGetDevice(&d), cnrtSuccess);
  EXPECT_EQ(d, 1);
  int other = -1;
  std::thread([&] { cnrtGetDevice(&other); }).join();
  EXPECT_EQ(other, 0) << "a new thread starts on device 0";
  EXPECT_CNRT_ERROR(cnrtSetDevice(2), cnrtErrorDeviceInvalid);
  EXPECT_CNRT_ERROR(cnrtSetDevice(-1), cnrtErrorDeviceInvalid);
  EXPECT_EQ(cnrtGetDevice(&d), cnrtSuccess);
  EXPECT_EQ(d, 1) << "a failed cnrtSetDevice keeps the current device";
  EXPECT_CNRT_ERROR(cnrtGetDevice(nullptr), cnrtErrorArgsInvalid);
}

TEST_F(DeviceTest, PropertiesComeFromTheConfig) {
  cnrtDeviceProp_t p;
  std::memset(&p, 0xab, sizeof p);
  ASSERT_EQ(cnrtGetDeviceProperties(&p, 0), cnrtSuccess);
  EXPECT_NE(std::string(p.name).find("tiny"), std::string::npos) << p.name;
  EXPECT_EQ(p.totalMem, 64);  // MB
  EXPECT_EQ(p.totalGlobalMemSize, kTinyDram);
  EXPECT_EQ(p.availableGlobalMemorySize, 64);
  EXPECT_EQ(p.ipuClockRate, 1000000);  // kHz
  EXPECT_EQ(p.memClockRate, 1000000);
  EXPECT_EQ(p.clusterCount, 2);
  EXPECT_EQ(p.McorePerCluster, 4);
  EXPECT_EQ(p.NramSizePerMcore, 64 * 1024);
  EXPECT_EQ(p.WramSizePerMcore, 64 * 1024);
  EXPECT_EQ(p.SramSizePerMcore, 256 * 1024);
  EXPECT_EQ(p.maxL2CacheSize, 256 * 1024);
  EXPECT_EQ(p.GmemBusWidth, 256);
  EXPECT_EQ(p.maxClusterCountPerUnionTask, 2);
  EXPECT_EQ(p.maxDim[0], INT_MAX);
  EXPECT_EQ(p.maxDim[1], 65535);
  EXPECT_EQ(p.maxQueueSize, 4096);
  EXPECT_EQ(p.maxNotifierSize, 65536);
  EXPECT_EQ(p.major, 3);
  EXPECT_EQ(p.reserved[0], 0) << "members without a simulated counterpart are zero";
  cnrtDeviceProp_t v3;
  ASSERT_EQ(cnrtGetDeviceProperties_V3(&v3, 0), cnrtSuccess);
  EXPECT_EQ(std::memcmp(&p, &v3, sizeof p), 0);
  EXPECT_CNRT_ERROR(cnrtGetDeviceProperties(nullptr, 0), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtGetDeviceProperties(&p, 1), cnrtErrorDeviceInvalid);
  EXPECT_CNRT_ERROR(cnrtGetDeviceProperties(&p, -1), cnrtErrorDeviceInvalid);
}

TEST_F(DeviceTest, AttributesMatchProperties) {
  cnrtDeviceProp_t p;
  ASSERT_EQ(cnrtGetDeviceProperties(&p, 0), cnrtSuccess);
  const std::pair<cnrtDeviceAttr_t, int> expected[] = {
      {cnrtAttrClusterCount, p.clusterCount},       {cnrtAttrMcorePerCluster, p.McorePerCluster},
      {cnrtAttrNramSizePerMcore, p.NramSizePerMcore}, {cnrtAttrWramSizePerMcore, p.WramSizePerMcore},
      {cnrtAttrSramSizePerMcore, p.SramSizePerMcore}, {cnrtAttrMaxL2CacheSize, p.maxL2CacheSize},
      {cnrtAttrIpuClockRate, p.ipuClockRate},       {cnrtAttrMemClockRate, p.memClockRate},
      {cnrtAttrGmemBusWidth, p.GmemBusWidth},       {cnrtAttrTotalMemSize, p.totalMem},
      {cnrtAttrMaxDimX, p.maxDim[0]},               {cnrtAttrMaxDimY, p.maxDim[1]},
      {cnrtAttrMaxDimZ, p.maxDim[2]},               {cnrtAttrQueueSize, p.maxQueueSize},
      {cnrtAttrNotifierSize, p.maxNotifierSize},    {cnrtAttrMaxClusterCountPerUnionTask, p.maxClusterCountPerUnionTask},
      {cnrtAttrComputeCapabilityMajor, p.major},    {cnrtAttrFP16ComputingSupported, 1},
  };
  for (const auto& [attr, value] : expected) {
    int v = -1;
    EXPECT_EQ(cnrtDeviceGetAttribute(&v, attr, 0), cnrtSuccess) << attr;
    EXPECT_EQ(v, value) << "attribute " << attr;
  }
  int v = 0;
  EXPECT_CNRT_ERROR(cnrtDeviceGetAttribute(nullptr, cnrtAttrClusterCount, 0), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtDeviceGetAttribute(&v, static_cast<cnrtDeviceAttr_t>(0x7777), 0), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtDeviceGetAttribute(&v, cnrtAttrClusterCount, 5), cnrtErrorDeviceInvalid);
}

TEST_F(DeviceTest, SyncDeviceWaitsForEveryQueueOfTheCurrentDevice) {
  cnrtQueue_t q1, q2;
  ASSERT_EQ(cnrtQueueCreate(&q1), cnrtSuccess);
  ASSERT_EQ(cnrtQueueCreate(&q2), cnrtSuccess);
  int rounds = 200;
  void* args[] = {&rounds};
  ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(1), cnrtFuncTypeBlock, args, 0, q1), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(busy_kernel, dim(1), cnrtFuncTypeBlock, args, 0, q2), cnrtSuccess);
  ASSERT_EQ(cnrtQueueDestroy(q2), cnrtSuccess);  // its work still counts
  EXPECT_EQ(cnrtSyncDevice(), cnrtSuccess);
  EXPECT_EQ(cnrtQueueQuery(q1), cnrtSuccess);
  size_t n = 0;
  ASSERT_EQ(mlusimGetKernelRecordCount(0, &n), cnrtSuccess);
  EXPECT_EQ(n, 2u);
  mlusimKernelRecord_t r;
  ASSERT_EQ(mlusimGetKernelRecord(0, 1, &r), cnrtSuccess);
  EXPECT_LE(r.end_ns, host_ns()) << "the clock moved past the last kernel's end";
}

TEST_F(DeviceTest, SyncDeviceReportsAKernelFaultOnce) {
  cnrtQueue_t q;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  ASSERT_EQ(cnrtInvokeKernel(trap_kernel, dim(1), cnrtFuncTypeBlock, nullptr, 0, q), cnrtSuccess);
  EXPECT_CNRT_ERROR(cnrtSyncDevice(), cnrtErrorKernelTrap);
  EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find("test trap"), std::string::npos) << mlusimGetLastErrorMessage();
  EXPECT_EQ(cnrtSyncDevice(), cnrtSuccess);
  EXPECT_EQ(cnrtQueueSync(q), cnrtSuccess) << "reported once, by whichever sync came first";
}

TEST_F(DeviceTest, DeviceResetReleasesEverythingOfTheDevice) {
  const std::size_t full = free_bytes();
  void* d = dmalloc(1 << 20);
  cnrtQueue_t q;
  cnrtNotifier_t n;
  ASSERT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
  ASSERT_EQ(cnrtNotifierCreate(&n), cnrtSuccess);
  ASSERT_EQ(cnrtMemsetAsync(d, 1, 1 << 20, q), cnrtSuccess);
  EXPECT_LT(free_bytes(), full);
  EXPECT_EQ(cnrtDeviceReset(), cnrtSuccess);
  EXPECT_EQ(free_bytes(), full);
  EXPECT_CNRT_ERROR(cnrtFree(d), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtQueueSync(q), cnrtErrorInvalidResourceHandle);
  EXPECT_CNRT_ERROR(cnrtQueryNotifier(n), cnrtErrorInvalidResourceHandle);
  void* again = dmalloc(4096);  // the device stays usable
  EXPECT_EQ(cnrtMemset(again, 0, 4096), cnrtSuccess);
  EXPECT_EQ(cnrtFree(again), cnrtSuccess);
}

TEST_F(DeviceTest, DeviceResetLeavesOtherDevicesAlone) {
  load("tiny", {"devices=2"});
  void* d0 = dmalloc(4096);
  ASSERT_EQ(cnrtSetDevice(1), cnrtSuccess);
  void* d1 = dmalloc(4096);
  EXPECT_EQ(cnrtDeviceReset(), cnrtSuccess);
  EXPECT_CNRT_ERROR(cnrtFree(d1), cnrtErrorArgsInvalid);
  EXPECT_EQ(cnrtFree(d0), cnrtSuccess);
}

TEST_F(DeviceTest, PeerAccessibility) {
  load("tiny", {"devices=2"});
  unsigned can = 7;
  EXPECT_EQ(cnrtGetPeerAccessibility(&can, 0, 1), cnrtSuccess);
  EXPECT_EQ(can, 1u);
  EXPECT_EQ(cnrtGetPeerAccessibility(&can, 1, 1), cnrtSuccess);
  EXPECT_EQ(can, 0u);
  EXPECT_CNRT_ERROR(cnrtGetPeerAccessibility(nullptr, 0, 1), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtGetPeerAccessibility(&can, 0, 2), cnrtErrorDeviceInvalid);
  EXPECT_CNRT_ERROR(cnrtGetPeerAccessibility(&can, -1, 0), cnrtErrorDeviceInvalid);
}

TEST_F(DeviceTest, PriorityRangeAndFlags) {
  int lo = 9, hi = 9;
  EXPECT_EQ(cnrtDeviceGetQueuePriorityRange(&lo, &hi), cnrtSuccess);
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 0);
  EXPECT_CNRT_ERROR(cnrtDeviceGetQueuePriorityRange(nullptr, &hi), cnrtErrorArgsInvalid);
  EXPECT_EQ(cnrtSetDeviceFlag(cnrtDeviceScheduleBlock), cnrtSuccess);
  uint32_t f = 0;
  EXPECT_EQ(cnrtGetDeviceFlag(&f), cnrtSuccess);
  EXPECT_EQ(f, static_cast<uint32_t>(cnrtDeviceScheduleBlock));
  EXPECT_CNRT_ERROR(cnrtSetDeviceFlag(cnrtDeviceFlagsMaxNum), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtGetDeviceFlag(nullptr), cnrtErrorArgsInvalid);
}

TEST_F(DeviceTest, Versions) {
  int a = 0, b = 0, c = 0;
  EXPECT_EQ(cnrtGetLibVersion(&a, &b, &c), cnrtSuccess);
  EXPECT_EQ(a, CNRT_MAJOR_VERSION);
  EXPECT_EQ(b, CNRT_MINOR_VERSION);
  EXPECT_EQ(c, CNRT_PATCH_VERSION);
  EXPECT_EQ(cnrtDriverGetVersion(&a, &b, &c), cnrtSuccess);
  EXPECT_EQ(a, 5);
  EXPECT_EQ(mlusimGetVersion(&a, &b, &c), cnrtSuccess);
  EXPECT_EQ(a * 10000 + b * 100 + c, 100);  // project version 0.1.0
  EXPECT_CNRT_ERROR(cnrtGetLibVersion(nullptr, &b, &c), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(cnrtDriverGetVersion(&a, nullptr, &c), cnrtErrorArgsInvalid);
  EXPECT_CNRT_ERROR(mlusimGetVersion(&a, &b, nullptr), cnrtErrorArgsInvalid);
}

}  // namespace
}  // namespace mlusim::driver::testing
