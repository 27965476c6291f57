// `mlusim tfu`: one TFU matmul intrinsic C[M,N] = A[M,K] x B[K,N] on one core, for comparing the
// TFU's cycle count with a systolic-array simulator (SCALE-Sim v2 reports the same number for the
// same array, dataflow and shape when fold overlap is off).
#include <cstdio>

#include "commands.h"
#include "numeric_options.h"
#include "config_options.h"
#include "mlusim/sim/kernel_api.h"
#include "mlusim/sim/simulator.h"

namespace mlusim::cli {
namespace {

struct TfuOptions {
  ConfigOptions config;
  std::size_t m = 64, k = 64, n = 64;
  std::string dtype = "fp16";
};

int run_tfu(const TfuOptions& o) {
  const sim::HardwareConfig cfg = o.config.load();
  const sim::DType in_t = *sim::dtype_from_name(o.dtype);
  const sim::DType out_t = in_t == sim::DType::kInt8 ? sim::DType::kInt32 : sim::DType::kFloat32;
  const sim::TfuArray& arr = cfg.tfu_array(in_t);
  if (!arr.supported()) {
    std::fprintf(stderr, "mlusim tfu: %s has no %s array (tfu.%s.rows/cols are 0)\n", cfg.name.c_str(),
                 o.dtype.c_str(), o.dtype.c_str());
    return 2;
  }
  const std::size_t a_bytes = o.m * o.k * sim::dtype_size(in_t), c_bytes = o.m * o.n * sim::dtype_size(out_t);
  const std::size_t b_bytes = o.k * o.n * sim::dtype_size(in_t);
  if (a_bytes + c_bytes + 256 > cfg.nram_bytes || b_bytes > cfg.wram_bytes) {
    std::fprintf(stderr,
                 "mlusim tfu: operands do not fit one core (A+C %zu B of NRAM %llu, B %zu B of WRAM %llu); "
                 "use smaller -m/-k/-n or --set core.nram_bytes=... core.wram_bytes=...\n",
                 a_bytes + c_bytes, static_cast<unsigned long long>(cfg.nram_bytes), b_bytes,
                 static_cast<unsigned long long>(cfg.wram_bytes));
    return 2;
  }
  sim::Simulator& simulator = sim::Simulator::instance();
  simulator.build(cfg);
  sim::Device& dev = simulator.device(0);
  dev.set_functional(false);  // cycles do not depend on values
  sim::KernelRecord rec;
  const std::size_t m = o.m, k = o.k, n = o.n;
  dev.submit(sim::KernelLaunch{"tfu_matmul",
                               [=] {
                                 const sim::Addr a = dev::alloc(sim::Space::kNram, a_bytes);
                                 const sim::Addr c = dev::alloc(sim::Space::kNram, c_bytes);
                                 const sim::Addr b = dev::alloc(sim::Space::kWram, b_bytes);
                                 dev::matmul(in_t, out_t, c, a, b, m, k, n, false, false);
                               },
                               {1, 1, 1}, sim::FunctionType::kBlock},
             [&rec](const sim::KernelRecord& r) { rec = r; });
  simulator.run_until_idle();
  if (rec.faulted) throw std::runtime_error(rec.fault);
  const bool os = cfg.tfu_dataflow == sim::Dataflow::kOutputStationary;
  const std::uint64_t sr = os ? m : k, sc = n;
  const std::uint64_t folds = ((sr + arr.rows - 1) / arr.rows) * ((sc + arr.cols - 1) / arr.cols);
  const std::uint64_t per_array = (folds + arr.count - 1) / arr.count;  // the busiest array's folds
  const std::uint64_t cycles = rec.engines[static_cast<std::size_t>(sim::Engine::kTfu)].cycles;
  std::printf("config      %s\n", cfg.name.c_str());
  std::printf("array       %u x %u (%s)%s, %s, fold overlap %s\n", arr.rows, arr.cols, o.dtype.c_str(),
              arr.count > 1 ? (" x " + std::to_string(arr.count) + " arrays").c_str() : "",
              os ? "output-stationary" : "weight-stationary", cfg.tfu_fold_overlap ? "on" : "off");
  std::printf("gemm        M=%zu K=%zu N=%zu (%llu MACs)\n", m, k, n, static_cast<unsigned long long>(m * k * n));
  if (arr.count > 1)
    std::printf("folds       %llu (at most %llu per array)\n", static_cast<unsigned long long>(folds),
                static_cast<unsigned long long>(per_array));
  else
    std::printf("folds       %llu\n", static_cast<unsigned long long>(folds));
  std::printf("tfu cycles  %llu\n", static_cast<unsigned long long>(cycles));
  std::printf("utilisation %.2f%% of the array%s MACs\n",
              100.0 * double(m * k * n) / (double(cycles) * double(arr.macs_per_cycle())), arr.count > 1 ? "s'" : "'s");
  return 0;
}

}  // namespace

Command add_tfu_command(CLI::App& app) {
  auto o = std::make_shared<TfuOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tfu", "cycles of one TFU matmul intrinsic (compare with SCALE-Sim with fold overlap off: tiny, or --set tfu.fold_overlap=false)");
  o->config.add_to(*cmd);
  cmd->add_option("-m", o->m, "rows of A (output-stationary: array rows)")->check(integer_in(1, kMaxDemoDim))->capture_default_str();
  cmd->add_option("-k", o->k, "columns of A, rows of B")->check(integer_in(1, kMaxDemoDim))->capture_default_str();
  cmd->add_option("-n", o->n, "columns of B (array columns)")->check(integer_in(1, kMaxDemoDim))->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "input type")->check(CLI::IsMember({"int8", "fp16", "bf16", "fp32"}))->capture_default_str();
  return [o] { return run_tfu(*o); };
}

}  // namespace mlusim::cli
