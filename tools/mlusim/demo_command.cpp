// `mlusim demo`: a tiled GEMM kernel (examples/tiled_gemm.h) on a simulated device: uploads
// seeded random matrices over the host link, runs the kernel on every core, downloads C, checks
// it against a host reference, prints the cycle report and writes a trace.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "numeric_options.h"
#include "config_options.h"
#include "mlusim/sim/examples/tiled_gemm.h"
#include "mlusim/sim/report.h"
#include "mlusim/sim/simulator.h"
#include "mlusim/sim/trace.h"

namespace mlusim::cli {
namespace {

struct DemoOptions {
  ConfigOptions config;
  std::size_t m = 1024, k = 1024, n = 1024;
  std::string dtype = "fp16";
  bool timing_only = false;
  std::string trace = "traces/gemm-demo.json";
  std::string trace_level = "ops";
  std::string report;
};

template <class T>
std::vector<T> random_matrix(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<T> v(count);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

// Copies host <-> device over the simulated host link and waits for it.
void host_copy(sim::Device& dev, sim::HostCopy c) {
  dev.submit_copy(c, nullptr);
  sim::Simulator::instance().run_until_idle();
}

template <class T>
int run_demo(const DemoOptions& o) {
  const sim::HardwareConfig cfg = o.config.load();
  sim::Simulator& simulator = sim::Simulator::instance();
  simulator.build(cfg);
  sim::Device& dev = simulator.device(0);
  dev.set_functional(!o.timing_only);

  const std::size_t es = sizeof(T);
  const std::uint64_t base = dev.gdram_base();
  auto align = [](std::uint64_t v) { return (v + 4095) / 4096 * 4096; };
  examples::GemmArgs g{base, 0, 0, o.m, o.k, o.n, sim::DTypeOf<T>::value};
  g.b = align(g.a + o.m * o.k * es);
  g.c = align(g.b + o.k * o.n * es);
  if (!dev.gdram_contains(g.c, o.m * o.n * es))
    throw std::runtime_error("the matrices need " + std::to_string(g.c + o.m * o.n * es - base) +
                             " bytes of device memory; the config has " + std::to_string(dev.gdram_size()));

  const auto a = random_matrix<T>(o.m * o.k, 1), b = random_matrix<T>(o.k * o.n, 2);
  std::vector<T> c(o.m * o.n);
  sim::TraceLevel level = o.trace_level == "intrinsics" ? sim::TraceLevel::kIntrinsics : sim::TraceLevel::kOps;
  if (!o.trace.empty()) simulator.trace().begin(level);
  dev.reset_stats();
  host_copy(dev, {sim::HostCopy::Kind::kHostToDevice, g.a, 0, nullptr, a.data(), a.size() * es, true, 0, "upload A"});
  host_copy(dev, {sim::HostCopy::Kind::kHostToDevice, g.b, 0, nullptr, b.data(), b.size() * es, true, 0, "upload B"});

  const auto host_start = std::chrono::steady_clock::now();
  sim::KernelRecord rec;
  dev.submit(sim::KernelLaunch{"tiled_gemm", [g] { examples::tiled_gemm_kernel(g); }, {cfg.total_cores(), 1, 1},
                               sim::FunctionType::kBlock},
             [&rec](const sim::KernelRecord& r) { rec = r; });
  simulator.run_until_idle();
  const double host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
  if (rec.faulted) throw std::runtime_error("kernel fault: " + rec.fault);
  host_copy(dev, {sim::HostCopy::Kind::kDeviceToHost, 0, g.c, c.data(), nullptr, c.size() * es, true, 0, "download C"});
  if (!o.trace.empty()) simulator.trace().end();

  std::printf("GEMM %zux%zux%zu %s on %s (%s mode)\n", o.m, o.k, o.n, o.dtype.c_str(), cfg.name.c_str(),
              o.timing_only ? "timing-only" : "functional");
  if (!o.timing_only) {
    // Spot-check 64 seeded entries against a double-precision reference.
    std::mt19937 rng(3);
    double worst = 0;
    for (int s = 0; s < 64; ++s) {
      const std::size_t i = rng() % o.m, j = rng() % o.n;
      double ref = 0;
      for (std::size_t p = 0; p < o.k; ++p) ref += double(float(a[i * o.k + p])) * double(float(b[p * o.n + j]));
      worst = std::max(worst, std::abs(double(float(c[i * o.n + j])) - ref) / (std::abs(ref) + 1.0));
    }
    std::printf("result check: 64 sampled entries vs host reference, max relative error %.2e\n", worst);
    if (worst > (es == 2 ? 1e-2 : 1e-4)) throw std::runtime_error("GEMM result does not match the host reference");
  }
  std::printf("kernel: %llu cycles, %.3f us simulated, %.3f s host\n\n", static_cast<unsigned long long>(rec.cycles),
              double(rec.end_ps - rec.start_ps) / 1e6, host_seconds);
  std::fputs(sim::format_cycle_report(cfg, dev.stats(), dev.now()).c_str(), stdout);
  if (!o.trace.empty()) {
    simulator.trace().write(o.trace);
    std::printf("\ntrace: %s (%zu events; open in https://ui.perfetto.dev)\n", o.trace.c_str(),
                simulator.trace().event_count());
  }
  if (!o.report.empty()) {
    nlohmann::json j;
    sim::cycle_report_json(cfg, dev.stats(), dev.now(), j);
    std::ofstream(o.report) << j.dump(2) << "\n";
    std::printf("report: %s\n", o.report.c_str());
  }
  return 0;
}

}  // namespace

Command add_demo_command(CLI::App& app) {
  auto o = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand("demo", "run a tiled GEMM kernel on a simulated device and report its cycles");
  o->config.add_to(*cmd);
  cmd->add_option("-m", o->m, "rows of A and C")->check(integer_in(1, kMaxDemoDim))->capture_default_str();
  cmd->add_option("-k", o->k, "columns of A, rows of B")->check(integer_in(1, kMaxDemoDim))->capture_default_str();
  cmd->add_option("-n", o->n, "columns of B and C")->check(integer_in(1, kMaxDemoDim))->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "element type")->check(CLI::IsMember({"fp16", "fp32"}))->capture_default_str();
  cmd->add_flag("--timing-only", o->timing_only, "skip floating-point arithmetic (same cycles, no results)");
  auto* trace = cmd->add_option("--trace", o->trace, "Chrome trace-event JSON output")->capture_default_str();
  cmd->add_flag_callback("--no-trace", [o] { o->trace.clear(); }, "do not record a trace")->excludes(trace);
  cmd->add_option("--trace-level", o->trace_level, "ops: kernels, tasks, copies; intrinsics: every engine operation")
      ->check(CLI::IsMember({"ops", "intrinsics"}))
      ->capture_default_str();
  cmd->add_option("--report", o->report, "write the cycle report as JSON to this file");
  return [o] { return o->dtype == "fp16" ? run_demo<sim::half>(*o) : run_demo<float>(*o); };
}

}  // namespace mlusim::cli
