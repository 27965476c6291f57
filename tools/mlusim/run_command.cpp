// `mlusim run MODEL`: a built-in model or a TorchScript file on a simulated chip through the
// PyTorch bridge; prints the cycle report, writes a trace and (optionally) the JSON run report.
// `--compile` runs the model through torch.compile instead, which is Python: the resolved options
// go to `python -m torch_mlu.compile_run` (torch_bridge/python/torch_mlu/compile_run.py).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "config_options.h"
#include "model_runner.h"
#include "python_module.h"
#include "run_options.h"

namespace mlusim::cli {
namespace {

void write_json(const std::string& path, const nlohmann::json& j) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p);
  out << j.dump(2) << "\n";
  if (!out) throw std::runtime_error("--report " + path + ": cannot write the file");
}

// The fused run against the unfused one: totals, then per pattern the fused nodes and what their
// fused op cost. Also stored in the fused run's JSON under "fusion".
void compare_fusion(const nlohmann::json& unfused, nlohmann::json& fused, const std::map<std::string, int>& matches) {
  struct Row {
    const char* name;
    double before, after;
  };
  const Row rows[] = {
      {"cycles", unfused.value("cycles", 0.0), fused.value("cycles", 0.0)},
      {"simulated us", unfused.value("simulated_ns", 0.0) / 1e3, fused.value("simulated_ns", 0.0) / 1e3},
      {"DRAM bytes", dram_bytes(unfused), dram_bytes(fused)},
      {"kernel launches", unfused["report"].value("kernel_launches", 0.0), fused["report"].value("kernel_launches", 0.0)},
  };
  std::printf("\nfusion: the same run unfused -> fused\n  %-18s %16s %16s %8s\n", "", "unfused", "fused", "ratio");
  nlohmann::json totals = nlohmann::json::object();
  for (const Row& r : rows) {
    std::printf("  %-18s %16.0f %16.0f %8.3f\n", r.name, r.before, r.after, r.before > 0 ? r.after / r.before : 0.0);
    totals[r.name] = {{"unfused", r.before}, {"fused", r.after}};
  }
  static const std::map<std::string, std::string> op_of = {
      {"conv_bn_act", "mlu::conv_bn_act"}, {"linear_act", "mlu::linear_act"}, {"elementwise", "mlu::elementwise"}};
  std::printf("  %-18s %10s %10s %14s %14s\n", "pattern", "fused ops", "kernels", "cycles", "min bytes");
  nlohmann::json patterns = nlohmann::json::object();
  for (const auto& [pattern, n] : matches) {
    double kernels = 0, cycles = 0, bytes = 0;
    for (const auto& op : fused["report"]["ops"]) {
      if (op.value("name", "") != op_of.at(pattern)) continue;
      kernels = op.value("kernels", 0.0), cycles = op.value("cycles", 0.0), bytes = op.value("min_dram_bytes", 0.0);
    }
    std::printf("  %-18s %10d %10.0f %14.0f %14.0f\n", pattern.c_str(), n, kernels, cycles, bytes);
    patterns[pattern] = {{"matches", n}, {"kernels", kernels}, {"cycles", cycles}, {"min_dram_bytes", bytes}};
  }
  fused["fusion"] = {{"totals", totals}, {"patterns", patterns}};
}

// `--compile`: the model eager and through torch.compile with `backend`, in the venv's python. The
// options were validated and resolved here (model file, input shapes with the batch, sidecar);
// they go over as compile_run's options.
int run_compiled(const RunOptions& o, const std::string& backend, const std::string& report) {
  std::vector<std::string> a{o.model.file.string(), "--name", o.model.name, "--backend", backend, "--config", o.config};
  for (std::vector<std::int64_t> shape : o.model.inputs) {
    std::string text;
    for (std::int64_t& d : shape) text += (text.empty() ? "" : ",") + std::to_string(d == -1 ? o.batch : d);
    a.insert(a.end(), {"--input", text});
  }
  if (o.model.vocab > 0) a.insert(a.end(), {"--vocab", std::to_string(o.model.vocab)});
  a.insert(a.end(), {"--loss", o.model.loss});
  if (o.model.classes > 0) a.insert(a.end(), {"--classes", std::to_string(o.model.classes)});
  if (!o.model.description.empty()) a.insert(a.end(), {"--description", o.model.description});
  for (const std::string& s : o.overrides) a.insert(a.end(), {"--set", s});
  a.insert(a.end(), {"--dtype", o.dtype, "--iterations", std::to_string(o.iterations), "--warmup",
                     std::to_string(o.warmup), "--lr", std::to_string(o.learning_rate), "--seed", std::to_string(o.seed)});
  if (o.train) a.push_back("--train");
  if (o.timing_only) a.push_back("--timing-only");
  if (o.fallback) a.push_back("--fallback");
  if (!o.trace_path.empty())
    a.insert(a.end(), {"--trace", o.trace_path, "--trace-level", o.trace_level == 2 ? "intrinsics" : "ops"});
  if (!o.profile_path.empty()) a.insert(a.end(), {"--profile", o.profile_path});
  if (!report.empty()) a.insert(a.end(), {"--report", report});
  return run_python_module("mlusim run --compile", "torch_mlu.compile_run", a);
}

}  // namespace

Command add_run_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "run", "Run a model (built-in or TorchScript file) on a simulated MLU and print where the cycles go");
  auto opts = std::make_shared<ModelRunOptions>();
  auto trace = std::make_shared<std::string>();
  auto no_trace = std::make_shared<bool>(false);
  auto report = std::make_shared<std::string>();
  opts->add_to(*cmd);
  cmd->add_option("--trace", *trace, "Chrome trace-event JSON to write (default traces/<model>-<config>.json)");
  cmd->add_flag("--no-trace", *no_trace, "Do not record a trace");
  cmd->add_option("--report", *report, "Also write the run report as JSON (input of `mlusim report`)");
  auto profile = std::make_shared<std::string>();
  cmd->add_option("--profile", *profile,
                  "Also record the measured iterations with torch.profiler (CPU + MLU activities) and write its "
                  "trace to DIR/<model>-<config>.pt.trace.json (TensorBoard's profiler plug-in and Perfetto read it)");
  auto compile = std::make_shared<bool>(false);
  auto backend = std::make_shared<std::string>("inductor");
  cmd->add_flag("--compile", *compile,
                "Run the model through torch.compile (after an untimed compiling iteration) and also eagerly, and "
                "print both side by side: cycles, time, DRAM bytes, launches, generated kernels and fusions");
  cmd->add_option("--compile-backend", *backend,
                  "torch.compile backend for --compile: inductor (PyTorch's default, with the device's codegen) or "
                  "mlu (the device's Dynamo backend); implies --compile")
      ->capture_default_str()
      ->check(CLI::IsMember({"inductor", "mlu"}));
  return [cmd, opts, trace, no_trace, report, profile, compile, backend] {
    const bool compiled = *compile || cmd->count("--compile-backend") > 0;
    if (compiled && (opts->fuse || !opts->fuse_patterns.empty()))
      throw std::invalid_argument(
          "--compile and --fuse are two ways to fuse the graph; give one (--compile is torch.compile, --fuse the "
          "TorchScript graph rewrite)");
    RunOptions o = opts->resolve();
    if (!profile->empty())
      o.profile_path = (std::filesystem::path(*profile) / (o.model.name + "-" + opts->config_label() + ".pt.trace.json")).string();
    if (!*no_trace) o.trace_path = trace->empty() ? "traces/" + o.model.name + "-" + opts->config_label() + ".json" : *trace;
    if (compiled) return run_compiled(o, *backend, *report);
    nlohmann::json unfused;
    if (o.fuse) {  // the baseline first, same inputs (same seed), no trace
      RunOptions base = o;
      base.fuse = false;
      base.trace_path.clear();
      base.profile_path.clear();
      unfused = run_model(base).report;
    }
    RunResult r = run_model(o);
    std::fputs(r.text.c_str(), stdout);
    if (o.fuse) compare_fusion(unfused, r.report, r.fusion_matches);
    if (!o.trace_path.empty()) std::printf("\ntrace: %s (open in https://ui.perfetto.dev or chrome://tracing)\n", o.trace_path.c_str());
    if (!o.profile_path.empty())
      std::printf("profile: %s (torch.profiler trace: TensorBoard's profiler plug-in, Perfetto)\n", o.profile_path.c_str());
    if (!report->empty()) {
      write_json(*report, r.report);
      std::printf("report: %s (mlusim report %s renders it as HTML)\n", report->c_str(), report->c_str());
    }
    return 0;
  };
}

}  // namespace mlusim::cli
