// Simulation speed: how fast the host simulates the chip.
//   BM_VfuIntrinsics / BM_DmaIntrinsics: simulated engine operations per host second
//     (items_per_second), one core issuing small intrinsics back to back on tiny.yaml.
//   BM_Gemm1024Fp16/functional and /timing_only: host seconds to simulate a 1024^3 fp16 tiled
//     GEMM on mlu370-x4 (every core), with the simulated time as a counter. The timing-only run
//     also reports `speedup_vs_functional`, the ratio of the two host times measured in this run.
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "mlusim/sim/examples/tiled_gemm.h"
#include "mlusim/sim/kernel_api.h"
#include "mlusim/sim/simulator.h"

namespace {

using namespace mlusim;

sim::KernelRecord run_kernel(sim::Device& dev, const std::string& name, sim::KernelBody body, sim::Dim3 dim) {
  sim::KernelRecord rec;
  dev.submit(sim::KernelLaunch{name, std::move(body), dim, sim::FunctionType::kBlock},
             [&rec](const sim::KernelRecord& r) { rec = r; });
  sim::Simulator::instance().run_until_idle();
  if (rec.faulted) throw std::runtime_error(rec.fault);
  return rec;
}

void BM_VfuIntrinsics(benchmark::State& state) {
  sim::Simulator::instance().build(sim::load_config("tiny"));
  sim::Device& dev = sim::Simulator::instance().device(0);
  constexpr int kOps = 10000;
  for (auto _ : state) {
    run_kernel(dev, "vfu_loop", [] {
      auto a = dev::nram_alloc<float>(64);
      for (int i = 0; i < kOps; ++i) dev::vec_binary(sim::VecBinaryOp::kAdd, sim::DType::kFloat32, a, a, a, 64);
    }, {1, 1, 1});
  }
  state.SetItemsProcessed(state.iterations() * kOps);
}
BENCHMARK(BM_VfuIntrinsics)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DmaIntrinsics(benchmark::State& state) {
  sim::Simulator::instance().build(sim::load_config("tiny"));
  sim::Device& dev = sim::Simulator::instance().device(0);
  const std::uint64_t src = dev.gdram_base();
  constexpr int kOps = 2000;
  for (auto _ : state) {
    run_kernel(dev, "dma_loop", [src] {
      auto a = dev::nram_alloc<std::uint8_t>(256);
      for (int i = 0; i < kOps; ++i) dev::memcpy(a, sim::Addr{sim::Space::kGdram, src}, 256, dev::Dir::kGdram2Nram);
    }, {1, 1, 1});
  }
  state.SetItemsProcessed(state.iterations() * kOps);
}
BENCHMARK(BM_DmaIntrinsics)->Unit(benchmark::kMillisecond)->UseRealTime();

double g_functional_seconds = 0;  // host time of the functional GEMM, for the ratio

void BM_Gemm1024Fp16(benchmark::State& state, bool functional) {
  const sim::HardwareConfig cfg = sim::load_config("mlu370-x4");
  sim::Simulator::instance().build(cfg);
  sim::Device& dev = sim::Simulator::instance().device(0);
  dev.set_functional(functional);
  constexpr std::size_t n = 1024;
  const std::uint64_t a = dev.gdram_base(), b = a + n * n * 2, c = b + n * n * 2;
  std::vector<sim::half> host(n * n, sim::half(0.5f));
  std::memcpy(dev.gdram_backing(a, n * n * 2), host.data(), n * n * 2);
  std::memcpy(dev.gdram_backing(b, n * n * 2), host.data(), n * n * 2);
  const examples::GemmArgs g{a, b, c, n, n, n, sim::DType::kFloat16};
  sim::KernelRecord rec;
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    rec = run_kernel(dev, "tiled_gemm", [g] { examples::tiled_gemm_kernel(g); }, {cfg.total_cores(), 1, 1});
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  seconds /= double(state.iterations());
  state.counters["simulated_us"] = double(rec.end_ps - rec.start_ps) / 1e6;
  state.counters["host_seconds"] = seconds;
  if (functional) g_functional_seconds = seconds;
  else if (g_functional_seconds > 0) state.counters["speedup_vs_functional"] = g_functional_seconds / seconds;
}
BENCHMARK_CAPTURE(BM_Gemm1024Fp16, functional, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Gemm1024Fp16, timing_only, false)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
