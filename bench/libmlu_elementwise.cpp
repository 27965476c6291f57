// libmlu elementwise and reduction efficiency on mlu370-x4, measured in one run:
//   BM_AddLarge: y = a + b over 64M fp32 elements (768 MiB of DRAM traffic). Counters:
//     sim_us (simulated kernel time), dram_GBps (bytes moved / simulated time),
//     dram_ratio (achieved / configured DRAM bandwidth; target >= 0.85), roofline_ratio (the
//     roofline bound of the op's bytes / simulated time), host_s (host seconds per op).
//   BM_SumLastDim: y = x.sum(-1) over x [4096, 4096] fp32 (row reduction), same counters.
//   BM_SumFirstDim: y = x.sum(0), same x (column reduction, split over cores + combine).
//   BM_ArgmaxLastDim: x.argmax(-1), same x (value/index pairs).
//   BM_BiasAddBroadcast: [8192, 768] + [768] (on-chip broadcast expansion).
//   BM_TransposeCopy: x.t().contiguous() of a 2048^2 fp32 (on-chip element scatter).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <cnrt.h>
#include <mlusim_ext.h>

#include "mlusim/mlu/mlu.h"
#include "mlusim/sim/config.h"
#include "mlusim/sim/roofline.h"

namespace {

using namespace mlusim;

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what + ": " + mlu::last_error_detail() + " / " + mlusimGetLastErrorMessage());
}

struct Session {
  sim::HardwareConfig cfg;
  mlu::Handle* handle = nullptr;
  explicit Session(const char* preset) : cfg(sim::load_config(preset, {})) {
    check(mlusimLoadConfig(preset) == cnrtSuccess, "load config");
    check(mlu::Handle::create(&handle) == mlu::Status::kSuccess, "create handle");
  }
  ~Session() { mlu::Handle::destroy(handle); }
  void* alloc(std::size_t bytes) {
    void* p = nullptr;
    check(cnrtMalloc(&p, bytes) == cnrtSuccess, "cnrtMalloc");
    return p;
  }
  // Simulated span (first kernel start to last kernel end) of the kernels launched since `first`.
  double kernel_ns(std::size_t first) const {
    std::size_t count = 0;
    mlusimGetKernelRecordCount(0, &count);
    double start = 0, end = 0;
    for (std::size_t i = first; i < count; ++i) {
      mlusimKernelRecord_t r;
      mlusimGetKernelRecord(0, i, &r);
      if (i == first) start = r.start_ns;
      end = r.end_ns;
    }
    return end - start;
  }
  static std::size_t record_count() {
    std::size_t count = 0;
    mlusimGetKernelRecordCount(0, &count);
    return count;
  }
};

// Runs `op` per iteration and reports simulated time, DRAM throughput and ratios for `bytes`.
template <class Op> void measure(benchmark::State& state, Session& s, std::uint64_t bytes, Op op) {
  double host_s = 0, sim_ns = 0;
  for (auto _ : state) {
    const std::size_t first = Session::record_count();
    const auto t0 = std::chrono::steady_clock::now();
    op();
    check(cnrtQueueSync(s.handle->queue()) == cnrtSuccess, "queue sync");
    host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sim_ns = s.kernel_ns(first);
  }
  const double bound_ns = static_cast<double>(sim::roofline_bound_ps(s.cfg, sim::MacsByDtype{}, bytes)) / 1000.0;
  state.counters["sim_us"] = sim_ns / 1000.0;
  state.counters["dram_GBps"] = static_cast<double>(bytes) / sim_ns;
  state.counters["dram_ratio"] = static_cast<double>(bytes) / sim_ns / (sim::dram_peak_bytes_per_s(s.cfg) / 1e9);
  state.counters["roofline_ratio"] = bound_ns / sim_ns;
  state.counters["host_s"] = host_s;
}

void BM_AddLarge(benchmark::State& state) {
  Session s("mlu370-x4");
  constexpr std::int64_t kN = 64LL << 20;
  void* a = s.alloc(kN * 4);
  void* b = s.alloc(kN * 4);
  void* y = s.alloc(kN * 4);
  mlu::TensorDesc d;
  d.set(sim::DType::kFloat32, {kN});
  measure(state, s, 3ULL * kN * 4, [&] {
    check(mlu::binary(s.handle, mlu::BinaryOp::kAdd, d, a, d, b, d, y) == mlu::Status::kSuccess, "add");
  });
}
BENCHMARK(BM_AddLarge)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

void BM_SumLastDim(benchmark::State& state) {
  Session s("mlu370-x4");
  constexpr std::int64_t kRows = 4096, kCols = 4096;
  void* x = s.alloc(kRows * kCols * 4);
  void* y = s.alloc(kRows * 4);
  mlu::TensorDesc xd, yd;
  xd.set(sim::DType::kFloat32, {kRows, kCols});
  yd.set(sim::DType::kFloat32, {kRows});
  std::size_t ws_bytes = 0;
  check(mlu::get_reduce_workspace_size(s.handle, xd, {1}, &ws_bytes) == mlu::Status::kSuccess, "workspace size");
  void* ws = ws_bytes ? s.alloc(ws_bytes) : nullptr;
  measure(state, s, (kRows * kCols + kRows) * 4ULL, [&] {
    check(mlu::reduce(s.handle, mlu::ReduceOp::kSum, xd, x, {1}, false, yd, y, ws, ws_bytes) == mlu::Status::kSuccess,
          "sum");
  });
}
BENCHMARK(BM_SumLastDim)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

void BM_SumFirstDim(benchmark::State& state) {
  Session s("mlu370-x4");
  constexpr std::int64_t kRows = 4096, kCols = 4096;
  void* x = s.alloc(kRows * kCols * 4);
  void* y = s.alloc(kCols * 4);
  mlu::TensorDesc xd, yd;
  xd.set(sim::DType::kFloat32, {kRows, kCols});
  yd.set(sim::DType::kFloat32, {kCols});
  std::size_t ws_bytes = 0;
  check(mlu::get_reduce_workspace_size(s.handle, xd, {0}, &ws_bytes) == mlu::Status::kSuccess, "workspace size");
  void* ws = ws_bytes ? s.alloc(ws_bytes) : nullptr;
  measure(state, s, (kRows * kCols + kCols) * 4ULL, [&] {
    check(mlu::reduce(s.handle, mlu::ReduceOp::kSum, xd, x, {0}, false, yd, y, ws, ws_bytes) == mlu::Status::kSuccess,
          "sum");
  });
}
BENCHMARK(BM_SumFirstDim)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

void BM_ArgmaxLastDim(benchmark::State& state) {
  Session s("mlu370-x4");
  constexpr std::int64_t kRows = 4096, kCols = 4096;
  void* x = s.alloc(kRows * kCols * 4);
  void* y = s.alloc(kRows * 8);
  mlu::TensorDesc xd, yd;
  xd.set(sim::DType::kFloat32, {kRows, kCols});
  yd.set(sim::DType::kInt64, {kRows});
  std::size_t ws_bytes = 0;
  check(mlu::get_reduce_workspace_size(s.handle, xd, {1}, &ws_bytes) == mlu::Status::kSuccess, "workspace size");
  void* ws = ws_bytes ? s.alloc(ws_bytes) : nullptr;
  measure(state, s, kRows * kCols * 4ULL + kRows * 8ULL, [&] {
    check(mlu::arg_reduce(s.handle, mlu::Extreme::kMax, xd, x, 1, false, yd, y, ws, ws_bytes) == mlu::Status::kSuccess,
          "argmax");
  });
}
BENCHMARK(BM_ArgmaxLastDim)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

void BM_BiasAddBroadcast(benchmark::State& state) {
  Session s("mlu370-x4");
  constexpr std::int64_t kRows = 8192, kCols = 768;
  void* x = s.alloc(kRows * kCols * 4);
  void* b = s.alloc(kCols * 4);
  void* y = s.alloc(kRows * kCols * 4);
  mlu::TensorDesc xd, bd;
  xd.set(sim::DType::kFloat32, {kRows, kCols});
  bd.set(sim::DType::kFloat32, {kCols});
  measure(state, s, (2 * kRows * kCols + kCols) * 4ULL, [&] {
    check(mlu::binary(s.handle, mlu::BinaryOp::kAdd, xd, x, bd, b, xd, y) == mlu::Status::kSuccess, "bias add");
  });
}
BENCHMARK(BM_BiasAddBroadcast)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

void BM_TransposeCopy(benchmark::State& state) {
  Session s("mlu370-x4");
  constexpr std::int64_t kN = 2048;
  void* x = s.alloc(kN * kN * 4);
  void* y = s.alloc(kN * kN * 4);
  mlu::TensorDesc xt, yd;
  xt.set(sim::DType::kFloat32, {kN, kN}, {1, kN});
  yd.set(sim::DType::kFloat32, {kN, kN});
  measure(state, s, 2ULL * kN * kN * 4, [&] {
    check(mlu::copy_strided(s.handle, xt, x, yd, y) == mlu::Status::kSuccess, "transpose");
  });
}
BENCHMARK(BM_TransposeCopy)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
