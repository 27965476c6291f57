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
#ifdef MLUSIM_CLI_WITH_TORCH
#include "mlusim/torch/api.h"
#include "model_runner.h"
#endif

namespace mlusim::cli {
namespace {

#ifdef MLUSIM_CLI_WITH_TORCH
// A model:NAME row: one inference of the built-in model through the PyTorch layer, as a TPU runs a
// whole compiled program: the graph fused (conv+BN+activation, linear+activation, elementwise
// chains; `mlusim run --fuse`), 4-d tensors in channels_last (the direct NHWC conv kernels),
// timing-only. Its cycles are the device's elapsed time of that iteration.
RowResult run_model_row(const CalibrationRow& row, const std::string& config, const std::vector<std::string>& overrides,
                        const std::string& trace_path) {
  RunOptions o;
  try {
    o.model = resolve_model(row.model, {});
  } catch (const std::exception& e) {
    throw std::runtime_error(row.workload + ": model:" + row.model + ": " + e.what());
  }
  o.config = config;
  o.overrides = overrides;
  o.batch = row.batch;
  o.timing_only = true;
  o.progress = false;
  o.fuse = true;
  o.channels_last = true;
  o.trace_path = trace_path;
  o.trace_level = 2;
  RunResult run;
  try {
    run = run_model(o);
  } catch (const std::exception& e) {
    throw std::runtime_error(row.workload + ": " + e.what());
  }
  bridge::empty_cache();  // the next row resets the device: nothing may stay cached on it
  const nlohmann::json& rep = run.report["report"];
  RowResult r;
  r.simulated_ns = run.report.value("simulated_ns", 0.0);
  r.simulated_cycles = r.simulated_ns * run.report.value("core_clock_mhz", 0.0) / 1000.0;
  r.kernels = rep.value("kernel_launches", 0u);
  for (const auto& k : rep["kernels"]) r.kernel_cycles += k.value("cycles", 0.0);
  if (rep["engines"].contains("TFU")) {
    r.tfu_cycles = rep["engines"]["TFU"].value("cycles", std::uint64_t{0});
    r.tfu_intrinsics = rep["engines"]["TFU"].value("intrinsics", std::uint64_t{0});
  }
  for (const auto& op : rep["ops"]) {
    r.bound_cycles += op.value("roofline_bound_ns", 0.0) * run.report.value("core_clock_mhz", 0.0) / 1000.0;
    r.macs += op.value("macs", 0.0);
  }
  r.dram_bytes = static_cast<std::uint64_t>(dram_bytes(run.report));
  return r;
}
#endif

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

const char* unit_name(MeasuredUnit unit) { return unit == MeasuredUnit::kCycles ? "cycles" : "us"; }

// Over the measured rows; NaN when none is.
double mean_abs_error(const std::vector<Result>& results, MeasuredUnit unit, std::size_t* measured = nullptr) {
  double sum = 0;
  std::size_t n = 0;
  for (const Result& r : results)
    if (r.row->is_measured()) sum += std::fabs(r.sim.error_pct(r.row->measured, unit)), ++n;
  if (measured != nullptr) *measured = n;
  return n > 0 ? sum / double(n) : std::nan("");
}

void print_text(const ValidateOptions& o, const CalibrationTable& t, const ValidateRunner& runner,
                const std::vector<Result>& results) {
  const sim::HardwareConfig& c = runner.config();
  std::printf("table   %s (%zu of %zu rows; measured column %s)\n", t.path.c_str(), results.size(), t.rows.size(),
              t.measured_column.c_str());
  std::printf("config  %s (%s), %.0f MHz; timing-only; conv2d memory format %s\n", c.name.c_str(),
              c.source_file.c_str(), c.core_clock_mhz, o.conv_layout.c_str());
  const MeasuredUnit unit = t.measured_unit;
  const bool cycles = unit == MeasuredUnit::kCycles;
  std::printf("%s  first kernel start to last kernel end, %s\n\n", cycles ? "cycles" : "us    ",
              cycles ? "in core cycles" : "in microseconds of device time");
  std::printf("%-30s %-9s %-5s %12s %12s %8s %7s %6s %12s\n", "workload", "kind", "dtype", "measured", "simulated",
              "error", "kernels", "TFU", "bound");
  const char* value_format = cycles ? "%.0f" : "%.2f";
  for (const Result& r : results) {
    const double measured = r.row->measured;
    char measured_text[32] = "-", simulated_text[32], bound_text[32], error_text[32] = "-";
    if (r.row->is_measured()) {
      std::snprintf(measured_text, sizeof measured_text, value_format, measured);
      std::snprintf(error_text, sizeof error_text, "%+.1f%%", r.sim.error_pct(measured, unit));
    }
    std::snprintf(simulated_text, sizeof simulated_text, value_format, r.sim.simulated(unit));
    const double bound = cycles ? r.sim.bound_cycles : r.sim.bound_cycles / c.core_clock_mhz;  // cycles / MHz = us
    std::snprintf(bound_text, sizeof bound_text, value_format, bound);
    const std::string dtype(sim::dtype_name(r.row->dtype));
    std::printf("%-30s %-9s %-5s %12s %12s %8s %7u %5.0f%% %12s\n", r.row->workload.c_str(),
                workload_kind_name(r.row->kind), dtype.c_str(), measured_text, simulated_text, error_text,
                r.sim.kernels,
                100.0 * double(r.sim.tfu_cycles) / std::max(1.0, r.sim.simulated_cycles * c.total_cores()), bound_text);
  }
  std::size_t measured = 0;
  const double mae = mean_abs_error(results, unit, &measured);
  if (measured > 0)
    std::printf("\nMAE over %zu measured rows: %.1f%%\n", measured, mae);
  else
    std::printf("\nMAE: none of these rows is measured\n");
  if (measured < results.size())
    std::printf("(%zu rows without a measurement: simulated only, not in the MAE)\n", results.size() - measured);
  std::printf("(error = (simulated - measured) / measured; TFU = TFU busy cycles / (simulated cycles x cores);\n"
              " bound = roofline floor max(MACs / TFU peak, minimum DRAM bytes / DRAM bandwidth) in %s)\n",
              cycles ? "cycles" : "us");
}

// A row's sizes by name, as its kind reads them (calibration_table.h).
nlohmann::ordered_json shape_json(const CalibrationRow& row) {
  switch (row.kind) {
    case WorkloadKind::kGemm: return {{"m", row.m}, {"k", row.k}, {"n", row.n}};
    case WorkloadKind::kConv2d:
      return {{"batch", row.batch}, {"h", row.h},           {"w", row.w},   {"cin", row.cin},
              {"cout", row.cout},   {"kernel", row.kernel}, {"stride", row.stride}, {"pad", row.pad}};
    case WorkloadKind::kLayerNorm:
    case WorkloadKind::kSoftmax:
    case WorkloadKind::kAdd:
    case WorkloadKind::kRelu:
    case WorkloadKind::kGelu: return {{"m", row.m}, {"n", row.n}};
    case WorkloadKind::kAttention: return {{"batch", row.batch}, {"seq", row.seq}, {"head_dim", row.width}};
    case WorkloadKind::kEncoder: return {{"heads", row.batch}, {"seq", row.seq}, {"hidden", row.width}};
    case WorkloadKind::kModel: return {{"model", row.model}, {"batch", row.batch}};
  }
  return nullptr;
}

void print_json(const ValidateOptions& o, const CalibrationTable& t, const ValidateRunner& runner,
                const std::vector<Result>& results) {
  const sim::HardwareConfig& c = runner.config();
  const MeasuredUnit unit = t.measured_unit;
  const double mae = mean_abs_error(results, unit);
  const std::string measured_key = std::string("measured_") + unit_name(unit);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Result& r : results) {
    const CalibrationRow& row = *r.row;
    const nlohmann::ordered_json none(nullptr);
    rows.push_back({{"workload", row.workload},
                    {"kind", workload_kind_name(row.kind)},
                    {"dtype", std::string(sim::dtype_name(row.dtype))},
                    {"line", row.line},
                    {"shape", shape_json(row)},
                    {"macs", r.sim.macs},
                    {measured_key, row.is_measured() ? nlohmann::ordered_json(row.measured) : none},
                    {"simulated_cycles", r.sim.simulated_cycles},
                    {"simulated_ns", r.sim.simulated_ns},
                    {"error_pct",
                     row.is_measured() ? nlohmann::ordered_json(r.sim.error_pct(row.measured, unit)) : none},
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
                              {"measured_unit", unit_name(unit)},
                              {"config", c.name},
                              {"config_file", c.source_file},
                              {"core_clock_mhz", c.core_clock_mhz},
                              {"overrides", o.config.sets},
                              {"conv_layout", o.conv_layout},
                              {"timing_only", true},
                              {"rows", rows},
                              {"mae_pct", std::isnan(mae) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(mae)}};
  std::printf("%s\n", doc.dump(2).c_str());
}

int run_validate(const ValidateOptions& o) {
  const CalibrationTable table = read_calibration_table(o.table);  // table errors before any simulation
  const std::vector<const CalibrationRow*> rows = select_rows(table, o.workloads);
  const ConvLayout layout = o.conv_layout == "nchw" ? ConvLayout::kNchw : ConvLayout::kChannelsLast;
  ValidateRunner runner(o.config.config, o.config.sets, layout);
  runner.set_trace_dir(o.trace_dir);
#ifdef MLUSIM_CLI_WITH_TORCH
  runner.set_model_runner(run_model_row);
#endif
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
      "simulated cycles (or microseconds, for a <hw>_us table), the error per row and the mean absolute error");
  cmd->add_option("table", o->table,
                  "calibration CSV: workload,kind,M_or_B,K_or_H,N_or_W,Cin,Cout,kernel,stride,pad and <hw>_cycles "
                  "or <hw>_us (microseconds), optionally dtype (fp32, fp16, bf16) (kind gemm, conv2d, layernorm, "
                  "softmax, add, relu, gelu, attention, encoder or model:NAME; an empty measurement is a prediction, "
                  "not in the MAE; '#' lines are comments)")
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
