// The backend from libtorch C++ (the CLI's and C++ users' path): registration, copies, views,
// the CPU fallback policy, out-of-memory errors, streams and events through c10's interfaces.
#include <string>

#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/igammac.h>
#include <ATen/ops/zeros.h>
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include "mlusim/torch/api.h"
#include "mlusim/torch/device.h"

namespace mlusim::bridge {
namespace {

const c10::Device kMlu(c10::DeviceType::PrivateUse1, 0);

class BackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(init());
    set_cpu_fallback(false);
    reset_cpu_fallback_counts();
  }
  void TearDown() override { set_cpu_fallback(false); }
};

at::Tensor host_range(int64_t n) { return at::arange(n, at::TensorOptions().dtype(at::kFloat)); }

TEST_F(BackendTest, RegistersTheGuardAndTheAllocator) {
  const auto* guard = c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1);
  ASSERT_NE(guard, nullptr);
  EXPECT_EQ(guard->deviceCount(), device_count());
  EXPECT_GE(device_count(), 1);
  EXPECT_EQ(c10::GetAllocator(c10::DeviceType::PrivateUse1), device_allocator());
}

TEST_F(BackendTest, RoundTripsAndAliasingViews) {
  const at::Tensor x = host_range(12).reshape({3, 4});
  at::Tensor d = x.to(kMlu);
  EXPECT_EQ(d.device(), kMlu);
  EXPECT_TRUE(at::equal(d.cpu(), x));
  at::Tensor v = d.view({12});
  EXPECT_EQ(v.data_ptr(), d.data_ptr());
  d.select(0, 1).zero_();
  at::Tensor expected = x.clone();
  expected.select(0, 1).zero_();
  EXPECT_TRUE(at::equal(v.cpu(), expected.view({12})));
  EXPECT_TRUE(at::equal(d.t().cpu(), expected.t()));
  at::Tensor z = at::zeros({5}, at::TensorOptions().device(kMlu).dtype(at::kInt));
  EXPECT_TRUE(at::equal(z.cpu(), at::zeros({5}, at::kInt)));
  EXPECT_EQ(d.select(0, 2).select(0, 3).item<float>(), 11.0f);
  // set_ with a storage (Python 1.13 cannot pass a device storage): a strided window of d.
  at::Tensor f = at::empty({0}, at::TensorOptions().device(kMlu));
  f.set_(d.storage(), 5, {3}, {2});
  EXPECT_EQ(f.data_ptr(), static_cast<float*>(d.data_ptr()) + 5);
  EXPECT_TRUE(at::equal(f.cpu(), expected.view({12}).slice(0, 5, 11, 2)));
}

TEST_F(BackendTest, FallbackRaisesByDefaultAndCountsWhenOn) {
  // igammac (the regularized upper incomplete gamma function) has no kernel for the device.
  const at::Tensor host = host_range(4).div(4);
  const at::Tensor d = host.to(kMlu);
  const at::Tensor host_a = host.add(1);
  const at::Tensor a = host_a.to(kMlu);
  try {
    at::igammac(a, d);
    FAIL() << "no error";
  } catch (const c10::NotImplementedError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("op aten::igammac.out has no kernel for device mlu"), std::string::npos) << m;
  }
  set_cpu_fallback(true);
  const at::Tensor r = at::igammac(a, d);
  EXPECT_EQ(r.device(), kMlu);
  EXPECT_TRUE(at::equal(r.cpu(), at::igammac(host_a, host)));
  const auto counts = cpu_fallback_counts();
  ASSERT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts[0].first, "aten::igammac.out");  // igammac is structured: it reaches igammac.out
  EXPECT_EQ(counts[0].second, 1u);
}

TEST_F(BackendTest, OutOfMemoryIsATorchOutOfMemoryError) {
  // The tiny preset has 64 MiB of DRAM.
  EXPECT_THROW(at::empty({int64_t{100} << 20}, at::TensorOptions().device(kMlu).dtype(at::kByte)), c10::OutOfMemoryError);
  const at::Tensor ok = at::empty({1024}, at::TensorOptions().device(kMlu));
  EXPECT_EQ(ok.numel(), 1024);
}

TEST_F(BackendTest, StreamsAndEventsThroughC10) {
  const auto* guard = c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1);
  const c10::Stream pool = guard->getStreamFromGlobalPool(kMlu);
  EXPECT_GE(pool.id(), 1);
  EXPECT_LE(pool.id(), kQueuePoolSize);
  EXPECT_EQ(guard->getStream(kMlu).id(), 0);
  const c10::Stream previous = guard->exchangeStream(pool);
  EXPECT_EQ(previous.id(), 0);
  EXPECT_EQ(current_stream(0), pool);
  EXPECT_NE(current_queue(0), nullptr);
  const at::Tensor d = host_range(1 << 16).to(kMlu);  // copied on the pool queue
  c10::Event event(c10::DeviceType::PrivateUse1);
  event.record(pool);
  guard->exchangeStream(previous);
  event.block(guard->getStream(kMlu));
  guard->synchronizeStream(pool);
  EXPECT_TRUE(event.query());
  EXPECT_TRUE(guard->queryStream(pool));
  EXPECT_TRUE(at::equal(d.cpu(), host_range(1 << 16)));
}

}  // namespace
}  // namespace mlusim::bridge
