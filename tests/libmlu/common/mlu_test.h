// Test fixture for libmlu ops: a handle on the tiny preset, device buffers through the driver,
// seeded random data, and comparison helpers. References are naive C++ written in each test,
// independent of the simulator's Eigen path.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cnrt.h>
#include <mlusim_ext.h>

#include "mlusim/mlu/mlu.h"

namespace mlusim::mlu::testing {

class MluTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mlusimLoadConfig("tiny"), cnrtSuccess);
    ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  }
  void TearDown() override {
    for (void* p : allocations_) cnrtFree(p);
    Handle::destroy(handle_);
  }
  Handle& h() { return *handle_; }

  void* dalloc(std::size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cnrtMalloc(&p, bytes == 0 ? 1 : bytes), cnrtSuccess);
    allocations_.push_back(p);
    return p;
  }
  template <class T> void* to_device(const std::vector<T>& v) {
    void* p = dalloc(v.size() * sizeof(T));
    if (!v.empty()) {
      EXPECT_EQ(cnrtMemcpy(p, const_cast<T*>(v.data()), v.size() * sizeof(T), cnrtMemcpyHostToDev), cnrtSuccess);
    }
    return p;
  }
  template <class T> std::vector<T> from_device(const void* p, std::size_t count) {
    std::vector<T> v(count);
    EXPECT_EQ(cnrtQueueSync(h().queue()), cnrtSuccess) << "kernel fault or queue error";
    if (count) {
      EXPECT_EQ(cnrtMemcpy(v.data(), const_cast<void*>(p), count * sizeof(T), cnrtMemcpyDevToHost), cnrtSuccess);
    }
    return v;
  }
  template <class T> static std::vector<T> random(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<T> v(n);
    for (auto& x : v) x = static_cast<T>(d(rng));
    return v;
  }
  static TensorDesc desc(DType t, std::vector<std::int64_t> dims, std::vector<std::int64_t> strides = {}) {
    TensorDesc d;
    if (strides.empty()) {
      EXPECT_EQ(d.set(t, dims), Status::kSuccess);
    } else {
      EXPECT_EQ(d.set(t, dims, strides), Status::kSuccess);
    }
    return d;
  }

  Handle* handle_ = nullptr;
  std::vector<void*> allocations_;
};

}  // namespace mlusim::mlu::testing
