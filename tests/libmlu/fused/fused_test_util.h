// Helpers of the fused-op tests: host activation references, what a sequence of ops cost on the
// device (kernel launches and GDRAM bytes, from the driver's kernel records), and tolerances.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

#include "common/mlu_test.h"

namespace mlusim::mlu::testing {

using half = sim::half;

inline double ref_activation(Activation a, double x) {
  switch (a) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return x > 0 ? x : 0;
    case Activation::kRelu6:
      return std::min(std::max(x, 0.0), 6.0);
    case Activation::kGelu:
      return x * 0.5 * (1 + std::erf(x / std::sqrt(2.0)));
    case Activation::kGeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::kSilu:
      return x / (1 + std::exp(-x));
    case Activation::kSigmoid:
      return 1 / (1 + std::exp(-x));
    case Activation::kTanh:
      return std::tanh(x);
  }
  return x;
}

constexpr Activation kAllActivations[] = {Activation::kNone,    Activation::kRelu,     Activation::kRelu6,
                                          Activation::kGelu,    Activation::kGeluTanh, Activation::kSilu,
                                          Activation::kSigmoid, Activation::kTanh};

// What the kernels enqueued by `ops` did: launches, and GDRAM bytes read + written.
struct DeviceCost {
  std::uint64_t kernels = 0, gdram_bytes = 0;
  double span_ns = 0;  // first kernel start to last kernel end
  std::string names;   // kernel names, for messages
};

inline DeviceCost device_cost(Handle& h, const std::function<void()>& ops) {
  DeviceCost c;
  std::size_t before = 0, after = 0;
  EXPECT_EQ(cnrtQueueSync(h.queue()), cnrtSuccess);
  EXPECT_EQ(mlusimGetKernelRecordCount(0, &before), cnrtSuccess);
  ops();
  EXPECT_EQ(cnrtQueueSync(h.queue()), cnrtSuccess);
  EXPECT_EQ(mlusimGetKernelRecordCount(0, &after), cnrtSuccess);
  double first = 1e300, last = 0;
  for (std::size_t i = before; i < after; ++i) {
    mlusimKernelRecord_t r{};
    EXPECT_EQ(mlusimGetKernelRecord(0, i, &r), cnrtSuccess);
    EXPECT_EQ(r.faulted, 0) << r.name << ": " << r.fault;
    c.gdram_bytes += r.read_bytes[1] + r.write_bytes[1];
    c.names += std::string(r.name) + " ";
    first = std::min(first, r.start_ns), last = std::max(last, r.end_ns);
  }
  c.kernels = after - before;
  c.span_ns = after > before ? last - first : 0;
  return c;
}

template <class T>
double as_double(T v) {
  return static_cast<double>(static_cast<float>(v));
}

// |got - want| <= atol + rtol |want|, reporting the first few misses.
template <class T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want, double atol, double rtol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int misses = 0;
  for (std::size_t i = 0; i < got.size() && misses < 5; ++i) {
    const double g = as_double(got[i]);
    if (std::isnan(want[i]) && std::isnan(g)) continue;
    if (!(std::fabs(g - want[i]) <= atol + rtol * std::fabs(want[i]))) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", want " << want[i];
      ++misses;
    }
  }
}

}  // namespace mlusim::mlu::testing
