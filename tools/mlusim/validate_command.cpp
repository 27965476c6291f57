// `mlusim validate TABLE -c PRESET`: runs a calibration table of workloads measured on real hardware
// (calibration_table.h) on a simulated chip with libmlu's kernels (validate_runner.h) and prints,
// per row, the measured and simulated cycles and the signed error, then the mean absolute error
// (MAE) over the rows. --json prints the same as one JSON document. docs/fidelity.md uses it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration_table.h"
#include "commands.h"
#include "config_options.h"
#include "validate_runner.h"

namespace mlusim::cli {
namespace {

struct ValidateOptions {
  ConfigOptions config;
  std::string table;
  std::vector<std::string> workloads;  // empty: every row
  std::string conv_layout = "channels_last";
  std::string trace_dir;
  bool json = false;
};

struct Result {
  const CalibrationRow* row;
  RowResult sim;
};

// The rows to run: all, or those --workload names (each must exist).
std::vector<const CalibrationRow*> select_rows(const CalibrationTable& t, const std::vector<std::string>& names) {
  std::vector<const CalibrationRow*> out;
  const std::set<std::string> wanted(names.begin(), names.end());
  std::set<std::string> missing = wanted;
  for (const CalibrationRow& r : t.rows) {
    if (!wanted.empty() && wanted.count(r.workload) == 0) continue;
    out.push_back(&r);
    missing.erase(r.workload);
  }
  if (!missing.empty()) {
    std::string known;
    for (const CalibrationRow& r : t.rows) known += (known.empty() ? "" : ", ") + r.workload;
    throw std::runtime_error("--workload: '" + *missing.begin() + "' is not a workload of " + t.path + " (it has " +
                             known + ")");
  }
  return out;
}

double mean_abs_error(const std::vector<Result>& results) {
  double sum = 0;
  for (const Result& r : results) sum += std::fabs(r.sim.error_pct(r.row->measured_cycles));
  return sum / double(results.size());
}

void print_text(const ValidateOptions& o, const CalibrationTable& t, const ValidateRunner& runner,
                const std::vector<Result>& results) {
  const sim::HardwareConfig& c = runner.config();
  std::printf("table   %s (%zu of %zu rows; measured column %s)\n", t.path.c_str(), results.size(), t.rows.size(),
              t.measured_column.c_str());
  std::printf("config  %s (%s), %.0f MHz; timing-only; conv2d memory format %s\n", c.name.c_str(),
              c.source_file.c_str(), c.core_clock_mhz, o.conv_layout.c_str());
  std::printf("cycles  first kernel start to last kernel end, in core cycles\n\n");
  std::printf("%-30s %-7s %12s %12s %8s %7s %6s %12s\n", "workload", "kind", "measured", "simulated", "error",
              "kernels", "TFU", "bound");
  for (const Result& r : results) {
    const double measured = r.row->measured_cycles;
    std::printf("%-30s %-7s %12.0f %12.0f %+7.1f%% %7u %5.0f%% %12.0f\n", r.row->workload.c_str(),
                workload_kind_name(r.row->kind), measured, r.sim.simulated_cycles, r.sim.error_pct(measured),
                r.sim.kernels,
                100.0 * double(r.sim.tfu_cycles) / std::max(1.0, r.sim.simulated_cycles * c.total_cores()),
                r.sim.bound_cycles);
  }
  std::printf("\nMAE over %zu rows: %.1f%%\n", results.size(), mean_abs_error(results));
  std::printf("(error = (simulated - measured) / measured; TFU = TFU busy cycles / (simulated cycles x cores);\n"
              " bound = roofline floor max(MACs / TFU peak, minimum DRAM bytes / DRAM bandwidth) in cycles)\n");
}

void print_json(const ValidateOptions& o, const CalibrationTable& t, const ValidateRunner& runner,
                const std::vector<Result>& results) {
  const sim::HardwareConfig& c = runner.config();
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Result& r : results) {
    const CalibrationRow& row = *r.row;
    nlohmann::ordered_json shape = row.kind == WorkloadKind::kGemm
                               ? nlohmann::ordered_json{{"m", row.m}, {"k", row.k}, {"n", row.n}}
                               : nlohmann::ordered_json{{"batch", row.batch}, {"h", row.h},           {"w", row.w},
                                                {"cin", row.cin},     {"cout", row.cout},     {"kernel", row.kernel},
                                                {"stride", row.stride}, {"pad", row.pad}};
    rows.push_back({{"workload", row.workload},
                    {"kind", workload_kind_name(row.kind)},
                    {"line", row.line},
                    {"shape", shape},
                    {"macs", row.macs()},
                    {"measured_cycles", row.measured_cycles},
                    {"simulated_cycles", r.sim.simulated_cycles},
                    {"simulated_ns", r.sim.simulated_ns},
                    {"error_pct", r.sim.error_pct(row.measured_cycles)},
                    {"kernels", r.sim.kernels},
                    {"kernel_cycles", r.sim.kernel_cycles},
                    {"tfu_cycles", r.sim.tfu_cycles},
                    {"tfu_intrinsics", r.sim.tfu_intrinsics},
                    {"bound_cycles", r.sim.bound_cycles},
                    {"dram_bytes", r.sim.dram_bytes}});
  }
  const nlohmann::ordered_json doc = {{"mlusim_validate", 1},
                              {"table", t.path},
                              {"measured_column", t.measured_column},
                              {"config", c.name},
                              {"config_file", c.source_file},
                              {"core_clock_mhz", c.core_clock_mhz},
                              {"overrides", o.config.sets},
                              {"conv_layout", o.conv_layout},
                              {"timing_only", true},
                              {"rows", rows},
                              {"mae_pct", mean_abs_error(results)}};
  std::printf("%s\n", doc.dump(2).c_str());
}

int run_validate(const ValidateOptions& o) {
  const CalibrationTable table = read_calibration_table(o.table);  // table errors before any simulation
  const std::vector<const CalibrationRow*> rows = select_rows(table, o.workloads);
  const ConvLayout layout = o.conv_layout == "nchw" ? ConvLayout::kNchw : ConvLayout::kChannelsLast;
  ValidateRunner runner(o.config.config, o.config.sets, layout);
  runner.set_trace_dir(o.trace_dir);
  std::vector<Result> results;
  for (const CalibrationRow* row : rows) results.push_back({row, runner.run(*row)});
  if (o.json)
    print_json(o, table, runner, results);
  else
    print_text(o, table, runner, results);
  return 0;
}

}  // namespace

Command add_validate_command(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "run a table of workloads measured on real hardware (data/calibration/*.csv) on a preset and print the "
      "simulated cycles, the error per row and the mean absolute error");
  cmd->add_option("table", o->table,
                  "calibration CSV: workload,kind,M_or_B,K_or_H,N_or_W,Cin,Cout,kernel,stride,pad,<hw>_cycles "
                  "(kind gemm or conv2d; '#' lines are comments)")
      ->required();
  o->config.add_to(*cmd);
  cmd->add_option("-w,--workload", o->workloads, "run only this row (its workload name; repeatable)");
  cmd->add_option("--conv-layout", o->conv_layout,
                  "memory format of conv2d tensors: channels_last (NHWC strides, as the TPU table's rows) or nchw")
      ->check(CLI::IsMember({"channels_last", "nchw"}))
      ->capture_default_str();
  cmd->add_option("--trace", o->trace_dir,
                  "write a trace of each row's op with every engine's intrinsics to DIR/<workload>.json (Perfetto)");
  cmd->add_flag("--json", o->json, "print one JSON document instead of the table");
  return [o] { return run_validate(*o); };
}

}  // namespace mlusim::cli
