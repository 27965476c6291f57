// `mlusim compare MODEL -c A -c B ...`: the same model run on several configs, one after the
// other in this process, summarised side by side (time, speed-up, engine utilisation, DRAM
// traffic) with the ops that take the most cycles on any of them.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "commands.h"
#include "numeric_options.h"
#include "model_runner.h"
#include "run_options.h"

namespace mlusim::cli {
namespace {

double engine_utilisation(const nlohmann::json& report, const char* engine) {
  const auto& e = report["report"]["engines"];
  return e.contains(engine) ? e[engine].value("utilisation", 0.0) : 0.0;
}

void print_table(const std::vector<nlohmann::json>& runs, std::size_t top_ops) {
  const double base = runs.front().value("simulated_ns_per_iteration", 0.0);
  std::printf("%-20s %14s %14s %9s %8s %8s %8s %12s\n", "config", "ms/iteration", "cycles", "speed-up", "TFU", "VFU",
              "IO-DMA", "DRAM MiB");
  for (const auto& r : runs) {
    const double ns = r.value("simulated_ns_per_iteration", 0.0);
    std::printf("%-20s %14.3f %14llu %8.2fx %7.1f%% %7.1f%% %7.1f%% %12.1f\n", r.value("config", "?").c_str(), ns / 1e6,
                static_cast<unsigned long long>(r.value("cycles", std::uint64_t{0})), ns > 0 ? base / ns : 0.0,
                100 * engine_utilisation(r, "TFU"), 100 * engine_utilisation(r, "VFU"),
                100 * engine_utilisation(r, "IO-DMA"), dram_bytes(r) / 1048576.0);
  }
  // The ops that matter: the union of each run's top ops by cycles.
  std::set<std::string> names;
  for (const auto& r : runs) {
    std::size_t n = 0;
    for (const auto& op : r["report"]["ops"]) {
      if (n++ >= top_ops) break;
      names.insert(op.value("name", ""));
    }
  }
  if (names.empty()) return;
  std::printf("\nops: simulated us per iteration (share of kernel cycles)\n%-34s", "op");
  for (const auto& r : runs) std::printf(" %22s", r.value("config", "?").c_str());
  std::printf("\n");
  std::vector<std::pair<double, std::string>> order;
  for (const auto& name : names) {
    double t = 0;
    for (const auto& op : runs.front()["report"]["ops"])
      if (op.value("name", "") == name) t = op.value("time_ns", 0.0);
    order.emplace_back(-t, name);
  }
  std::sort(order.begin(), order.end());
  for (const auto& [neg, name] : order) {
    std::printf("%-34s", name.c_str());
    for (const auto& r : runs) {
      const int iterations = std::max(1, r.value("iterations", 1));
      bool found = false;
      for (const auto& op : r["report"]["ops"]) {
        if (op.value("name", "") != name) continue;
        std::printf(" %13.2f (%5.1f%%)", op.value("time_ns", 0.0) / 1e3 / iterations, 100 * op.value("share", 0.0));
        found = true;
      }
      if (!found) std::printf(" %22s", "-");
    }
    std::printf("\n");
  }
}

}  // namespace

Command add_compare_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("compare", "Run one model on several configs and compare them side by side");
  auto opts = std::make_shared<ModelRunOptions>();
  auto configs = std::make_shared<std::vector<std::string>>();
  auto report = std::make_shared<std::string>();
  auto top = std::make_shared<std::size_t>(8);
  opts->add_to(*cmd, /*with_config=*/false);
  cmd->add_option("-c,--config", *configs, "Hardware preset or YAML file (at least two; repeatable or comma separated)")
      ->required()
      ->delimiter(',');
  cmd->add_option("--top", *top, "Ops listed: the union of each config's top N by cycles")
      ->capture_default_str()
      ->check(integer_in(1, 100000));
  cmd->add_option("--report", *report, "Write every run's JSON report into one file");
  return [opts, configs, report, top] {
    if (configs->size() < 2) throw std::invalid_argument("compare: give at least two configs (-c A -c B or -c A,B)");
    std::vector<nlohmann::json> runs;
    for (const std::string& config : *configs) {
      ModelRunOptions one = *opts;
      one.config = config;
      RunOptions o = one.resolve();
      std::fprintf(stderr, "running %s on %s ...\n", o.model.name.c_str(), config.c_str());
      runs.push_back(run_model(o).report);
    }
    const auto& first = runs.front();
    std::printf("model %s, %s, batch %lld, %s\n\n", first.value("model", "?").c_str(), first.value("mode", "?").c_str(),
                static_cast<long long>(first.value("batch", 1)), first.value("dtype", "?").c_str());
    print_table(runs, *top);
    if (!report->empty()) {
      const std::filesystem::path p(*report);
      if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
      std::ofstream out(p);
      out << nlohmann::json{{"mlusim_compare", 1}, {"runs", runs}}.dump(2) << "\n";
      if (!out) throw std::runtime_error("--report " + *report + ": cannot write the file");
    }
    return 0;
  };
}

}  // namespace mlusim::cli
