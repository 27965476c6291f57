// Test fixture for the chip model: builds a device from a preset, gives tests a trivial GDRAM
// bump allocator and untimed host access to device memory, and runs launches to completion.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "mlusim/sim/config.h"
#include "mlusim/sim/device.h"
#include "mlusim/sim/simulator.h"
#include "mlusim/sim/trace.h"

namespace mlusim::sim::testing {

class SimTest : public ::testing::Test {
 protected:
  void build(const std::string& preset = "tiny", const std::vector<ConfigOverride>& overrides = {}) {
    cfg_ = load_config(preset, overrides);
    Simulator::instance().build(cfg_);
    next_ = device().gdram_base();
  }
  void SetUp() override { build(); }

  Device& device(int i = 0) { return Simulator::instance().device(i); }
  const HardwareConfig& cfg() const { return cfg_; }

  // GDRAM allocation for tests (the driver owns the real allocator).
  std::uint64_t dmalloc(std::size_t bytes, std::size_t align = 4096) {
    next_ = (next_ + align - 1) / align * align;
    const std::uint64_t p = next_;
    next_ += bytes;
    EXPECT_TRUE(device().gdram_contains(p, bytes));
    return p;
  }
  template <class T> void upload(std::uint64_t dst, const std::vector<T>& v) {
    std::memcpy(device().gdram_backing(dst, v.size() * sizeof(T)), v.data(), v.size() * sizeof(T));
  }
  template <class T> std::vector<T> download(std::uint64_t src, std::size_t count) {
    std::vector<T> v(count);
    std::memcpy(v.data(), device().gdram_backing(src, count * sizeof(T)), count * sizeof(T));
    return v;
  }

  // Submits and runs until idle; returns the launch's record.
  KernelRecord run(const std::string& name, KernelBody body, Dim3 dim = {1, 1, 1},
                   FunctionType type = FunctionType::kBlock) {
    KernelRecord out;
    bool done = false;
    device().submit(KernelLaunch{name, std::move(body), dim, type}, [&](const KernelRecord& r) {
      out = r;
      done = true;
    });
    Simulator::instance().run_until_idle();
    EXPECT_TRUE(done) << "launch of " << name << " did not complete";
    return out;
  }

  // Time in ps of `cycles` core cycles on this config.
  Picos cycles_ps(std::uint64_t cycles) const { return cycles_to_ps(cycles, cfg_.core_clock_mhz, "test"); }

  HardwareConfig cfg_;
  std::uint64_t next_ = 0;
};

}  // namespace mlusim::sim::testing
