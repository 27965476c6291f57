// The CPU fallback (the only file of the bridge that calls CPU operators) and the autograd
// fallthrough.
//
// Policy: an op with no kernel for PrivateUse1 never runs silently on the CPU. By default it
// raises NotImplementedError naming the op and the device. With TORCH_MLU_CPU_FALLBACK=1 or
// torch_mlu.set_cpu_fallback(True) it runs on the CPU through at::native::cpu_fallback (inputs
// copied to the host, outputs copied back: those copies are simulated, the op itself is not),
// warns once per op and is counted (cpu_fallback_counts, cycle report).
//
// The host halves of transfers (host_ops.h) live here too: they run CPU operators on CPU tensors.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include <ATen/EmptyTensor.h>
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include "backend/host_ops.h"
#include "backend/internal.h"
#include "mlusim/torch/api.h"
#include "mlusim/torch/device.h"

namespace mlusim::bridge {
namespace {

std::mutex g_mu;
std::map<std::string, std::uint64_t> g_counts;
std::set<std::string> g_warned;
// -1: not read yet; then 0/1. TORCH_MLU_CPU_FALLBACK is read on first use.
std::atomic<int> g_enabled{-1};

bool fallback_enabled() {
  int v = g_enabled.load();
  if (v >= 0) return v == 1;
  const char* env = std::getenv("TORCH_MLU_CPU_FALLBACK");
  const std::string s = env ? env : "";
  if (s.empty() || s == "0") {
    v = 0;
  } else if (s == "1") {
    v = 1;
  } else {
    TORCH_CHECK(false, "TORCH_MLU_CPU_FALLBACK=", s, ": expected 1 (run ops without a device kernel on the CPU) or 0");
  }
  int expected = -1;
  g_enabled.compare_exchange_strong(expected, v);
  return g_enabled.load() == 1;
}

void mlu_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = c10::toString(op.schema().operator_name());
  TORCH_CHECK_NOT_IMPLEMENTED(fallback_enabled(), "op ", name,
                              " has no kernel for device mlu; set TORCH_MLU_CPU_FALLBACK=1 / "
                              "torch_mlu.set_cpu_fallback(True) to run it on the CPU");
  bool warn = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    ++g_counts[name];
    warn = g_warned.insert(name).second;
  }
  if (warn)
    TORCH_WARN("op ", name, " has no kernel for device mlu and runs on the CPU (CPU fallback is on); "
               "its time is not simulated. This warning is shown once per op.");
  at::native::cpu_fallback(op, stack);
}

}  // namespace

// ---- api.h ----------------------------------------------------------------------------------------

void set_cpu_fallback(bool enabled) { g_enabled.store(enabled ? 1 : 0); }
bool cpu_fallback_enabled() { return fallback_enabled(); }

std::vector<std::pair<std::string, std::uint64_t>> cpu_fallback_counts() { return fallback_counts_snapshot(); }

void reset_cpu_fallback_counts() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_counts.clear();
  g_warned.clear();
}

std::vector<std::pair<std::string, std::uint64_t>> fallback_counts_snapshot() {
  std::lock_guard<std::mutex> lock(g_mu);
  return {g_counts.begin(), g_counts.end()};
}

// ---- host_ops.h -----------------------------------------------------------------------------------

namespace host {

at::Tensor empty_strided(at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype) {
  return at::Tensor(at::detail::empty_strided_cpu(sizes, strides, dtype));
}

at::Tensor stage(const at::Tensor& src, at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype) {
  at::Tensor out = empty_strided(sizes, strides, dtype);
  out.copy_(src);  // broadcasts and converts
  return out;
}

at::Tensor view(const at::Tensor& buffer, at::IntArrayRef sizes, at::IntArrayRef strides, std::int64_t storage_offset) {
  return buffer.as_strided(sizes, strides, storage_offset);
}

void copy(const at::Tensor& dst, const at::Tensor& src) { const_cast<at::Tensor&>(dst).copy_(src); }

}  // namespace host

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&mlu_cpu_fallback>()); }

// Ops without an autograd kernel (custom operators) pass through to the device kernel; aten ops
// keep their autograd formulas (registered for every Autograd key).
TORCH_LIBRARY_IMPL(_, AutogradPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

}  // namespace mlusim::bridge
