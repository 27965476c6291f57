// Kernel misuse faults the launch with a message naming kernel, task and address; it never hangs,
// never touches host memory, and leaves the device usable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mlusim/sim/kernel_api.h"
#include "sim_fixture.h"

namespace mlusim::sim::testing {
namespace {

using namespace mlusim::dev;
using ::testing::HasSubstr;

class Faults : public SimTest {
 protected:
  // Runs a kernel that must fault and checks that a clean kernel still runs afterwards.
  std::string expect_fault(KernelBody body, Dim3 dim = {1, 1, 1}, FunctionType type = FunctionType::kBlock) {
    const KernelRecord r = run("bad_kernel", std::move(body), dim, type);
    EXPECT_TRUE(r.faulted);
    EXPECT_THAT(r.fault, HasSubstr("kernel 'bad_kernel' task"));
    const KernelRecord ok = run("good_kernel", [] {
      auto a = nram_alloc<float>(32);
      vec_fill(DType::kFloat32, a, 1.0, 32);
    });
    EXPECT_FALSE(ok.faulted) << ok.fault;
    return r.fault;
  }
};

TEST_F(Faults, NramBufferLargerThanCapacity) {
  const std::string f = expect_fault([] { nram_alloc<float>(64 * 1024); });  // 256 KiB > 64 KiB
  EXPECT_THAT(f, HasSubstr("NRAM buffer of 262144 bytes does not fit"));
}

TEST_F(Faults, NramOutOfBounds) {
  const std::string f = expect_fault([] {
    vec_fill(DType::kFloat32, Nram<float>(64 * 1024 - 8), 0.0, 4);  // last 8 bytes + 8 beyond
  });
  EXPECT_THAT(f, HasSubstr("out of bounds of NRAM"));
  EXPECT_THAT(f, HasSubstr("NRAM+0xfff8"));
}

TEST_F(Faults, GdramOutsideDeviceMemoryNeverTouchesHostMemory) {
  std::vector<float> host(16, 7.0f);
  const std::uint64_t host_addr = reinterpret_cast<std::uintptr_t>(host.data());
  const std::string f = expect_fault([host_addr] {
    auto n = nram_alloc<float>(16);
    vec_fill(DType::kFloat32, n, 0.0, 16);
    memcpy(Addr{Space::kGdram, host_addr}, n, 64, Dir::kNram2Gdram);
  });
  EXPECT_THAT(f, HasSubstr("outside device memory"));
  for (float v : host) EXPECT_EQ(v, 7.0f);
}

TEST_F(Faults, DirectionMustMatchSpaces) {
  const std::string f = expect_fault([] {
    auto n = nram_alloc<float>(16);
    memcpy(wram_alloc<float>(16), n, 64, Dir::kNram2Nram);
  });
  EXPECT_THAT(f, HasSubstr("direction NRAM2NRAM does not match"));
}

// Reading a buffer that an async copy is still filling, before sync_io: a hazard.
TEST_F(Faults, MissingSyncIsAHazard) {
  const std::uint64_t src = dmalloc(4096);
  const std::string f = expect_fault([src] {
    auto buf = nram_alloc<float>(1024);
    memcpy_async(buf, Addr{Space::kGdram, src}, 4096, Dir::kGdram2Nram);
    vec_unary(VecUnaryOp::kExp, DType::kFloat32, buf, buf, 1024);  // no sync_io
  });
  EXPECT_THAT(f, HasSubstr("hazard"));
  EXPECT_THAT(f, HasSubstr("missing sync_io"));
}

// Writing the source of an in-flight copy is a hazard too; after sync_io it is fine.
TEST_F(Faults, OverwritingAnInFlightSourceIsAHazard) {
  const std::uint64_t dst = dmalloc(4096);
  const std::string f = expect_fault([dst] {
    auto buf = nram_alloc<float>(1024);
    memcpy_async(Addr{Space::kGdram, dst}, buf, 4096, Dir::kNram2Gdram);
    vec_fill(DType::kFloat32, buf, 0.0, 1024);
  });
  EXPECT_THAT(f, HasSubstr("writes"));
  const KernelRecord ok = run("synced", [dst] {
    auto buf = nram_alloc<float>(1024);
    memcpy_async(Addr{Space::kGdram, dst}, buf, 4096, Dir::kNram2Gdram);
    sync_io();
    vec_fill(DType::kFloat32, buf, 0.0, 1024);
  });
  EXPECT_FALSE(ok.faulted) << ok.fault;
}

// sync_loads leaves a store running: its source is still guarded (writing it is a hazard), while
// the load waited for may be read; after sync_io the source may be written.
TEST_F(Faults, SyncLoadsKeepsAStoresSourceGuarded) {
  const std::uint64_t dst = dmalloc(16384), src = dmalloc(4096);
  const std::string f = expect_fault([dst, src] {
    auto out = nram_alloc<float>(4096), in = nram_alloc<float>(1024);
    memcpy_async(Addr{Space::kGdram, dst}, out, 16384, Dir::kNram2Gdram);
    memcpy_async(in, Addr{Space::kGdram, src}, 4096, Dir::kGdram2Nram);
    sync_loads();
    vec_unary(VecUnaryOp::kExp, DType::kFloat32, in, in, 1024);  // landed: fine
    vec_fill(DType::kFloat32, out, 0.0, 4096);                   // the store may still read it
  });
  EXPECT_THAT(f, HasSubstr("hazard"));
  EXPECT_THAT(f, HasSubstr("writes"));
  const KernelRecord ok = run("synced", [dst, src] {
    auto out = nram_alloc<float>(4096), in = nram_alloc<float>(1024);
    memcpy_async(Addr{Space::kGdram, dst}, out, 16384, Dir::kNram2Gdram);
    memcpy_async(in, Addr{Space::kGdram, src}, 4096, Dir::kGdram2Nram);
    sync_loads();
    vec_unary(VecUnaryOp::kExp, DType::kFloat32, in, in, 1024);
    sync_io();
    vec_fill(DType::kFloat32, out, 0.0, 4096);
  });
  EXPECT_FALSE(ok.faulted) << ok.fault;
}

// A UNION1 task that skips sync_cluster while the others wait: a barrier mismatch, not a hang.
TEST_F(Faults, BarrierMismatchFaultsInsteadOfHanging) {
  const std::string f = expect_fault([] {
    if (core_id() != 2) sync_cluster();
  }, {4, 1, 1}, FunctionType::kUnion1);
  EXPECT_THAT(f, HasSubstr("barrier mismatch"));
}

TEST_F(Faults, BarrierInBlockTask) {
  EXPECT_THAT(expect_fault([] { sync_cluster(); }), HasSubstr("BLOCK"));
}

TEST_F(Faults, SramNotAvailableToBlockTasks) {
  EXPECT_THAT(expect_fault([] { sram_alloc<float>(16); }), HasSubstr("SRAM is not available to BLOCK tasks"));
}

TEST_F(Faults, KernelTrapAndAssert) {
  EXPECT_THAT(expect_fault([] { kassert(task_id() == 99, "task_id() == 99"); }),
              HasSubstr("assertion failed: task_id() == 99"));
}

// One faulting task stops the launch; tasks not yet started never run.
TEST_F(Faults, FaultStopsRemainingTasks) {
  int ran = 0;
  const KernelRecord r = run("bad_kernel", [&ran] {
    ++ran;
    if (task_id() == 0) trap("boom");
    auto a = nram_alloc<float>(3200);
    vec_fill(DType::kFloat32, a, 0.0, 3200);
  }, {64, 1, 1});
  EXPECT_TRUE(r.faulted);
  EXPECT_THAT(r.fault, HasSubstr("boom"));
  EXPECT_LE(ran, 8 + 1);  // the first wave (8 cores), at most
}

TEST_F(Faults, LaunchesTheDeviceCannotHoldAreRejected) {
  auto body = [] {};
  auto why = [&](Dim3 dim, FunctionType type) {
    return device().validate_launch(KernelLaunch{"k", body, dim, type}).value_or("accepted");
  };
  EXPECT_THAT(why({16, 1, 1}, FunctionType::kUnion4), HasSubstr("UNION4 needs 4 clusters but the device has 2"));
  EXPECT_THAT(why({6, 1, 1}, FunctionType::kUnion1), HasSubstr("dim.x to be a multiple of 4"));
  EXPECT_THAT(why({0, 1, 1}, FunctionType::kBlock), HasSubstr("zero component"));
  EXPECT_THAT(why({4, 1, 1}, static_cast<FunctionType>(3)), HasSubstr("unknown function type 3"));
  EXPECT_EQ(why({4, 1, 1}, FunctionType::kUnion1), "accepted");
  EXPECT_TRUE(device().idle());
}

TEST_F(Faults, CopiesOutsideDeviceMemoryAreRejected) {
  std::vector<std::uint8_t> host(64);
  const std::uint64_t end = device().gdram_base() + device().gdram_size();
  HostCopy c{HostCopy::Kind::kHostToDevice, end - 32, 0, nullptr, host.data(), 64, true, 0, "h2d"};
  EXPECT_THAT(device().validate_copy(c).value_or("accepted"), HasSubstr("destination range"));
  c.device_dst = end - 64;
  EXPECT_FALSE(device().validate_copy(c).has_value());
  c.host_src = nullptr;
  EXPECT_THAT(device().validate_copy(c).value_or("accepted"), HasSubstr("host buffer"));
  HostCopy peer{HostCopy::Kind::kToPeer, 0, device().gdram_base(), host.data(), nullptr, 64, true, 0, "peer"};
  EXPECT_THAT(device().validate_copy(peer).value_or("accepted"), HasSubstr("has no MLU-Link"));
}

}  // namespace
}  // namespace mlusim::sim::testing
