// `mlusim run MODEL`: a built-in model or a TorchScript file on a simulated chip through the
// PyTorch bridge; prints the cycle report, writes a trace and (optionally) the JSON run report.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "commands.h"
#include "config_options.h"
#include "model_runner.h"
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
  return [opts, trace, no_trace, report] {
    RunOptions o = opts->resolve();
    if (!*no_trace) o.trace_path = trace->empty() ? "traces/" + o.model.name + "-" + opts->config_label() + ".json" : *trace;
    const RunResult r = run_model(o);
    std::fputs(r.text.c_str(), stdout);
    if (!o.trace_path.empty()) std::printf("\ntrace: %s (open in https://ui.perfetto.dev or chrome://tracing)\n", o.trace_path.c_str());
    if (!report->empty()) {
      write_json(*report, r.report);
      std::printf("report: %s (mlusim report %s renders it as HTML)\n", report->c_str(), report->c_str());
    }
    return 0;
  };
}

}  // namespace mlusim::cli
