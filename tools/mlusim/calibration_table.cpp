#include "calibration_table.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

namespace mlusim::cli {
namespace {

constexpr std::int64_t kMaxSize = std::numeric_limits<std::int32_t>::max();
constexpr const char* kCyclesSuffix = "_cycles";
constexpr const char* kMicrosecondsSuffix = "_us";
constexpr const char* kDTypeColumn = "dtype";
constexpr const char* kModelPrefix = "model:";
const char* const kRequired[] = {"workload", "kind", "M_or_B", "K_or_H", "N_or_W",
                                 "Cin",      "Cout", "kernel", "stride", "pad"};

std::string trim(const std::string& s) {
  const std::size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const std::size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) out.push_back(trim(field));
  if (!line.empty() && line.back() == ',') out.emplace_back();  // a trailing empty field
  return out;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One data line being read: its fields by column name, and errors that name file, line, column.
class LineReader {
 public:
  LineReader(const std::string& path, int line, const std::map<std::string, std::size_t>& columns,
             const std::vector<std::string>& fields)
      : path_(path), line_(line), columns_(columns), fields_(fields) {}

  [[noreturn]] void fail(const std::string& reason) const {
    throw CalibrationTableError(path_ + ":" + std::to_string(line_) + ": " + reason);
  }
  [[noreturn]] void fail(const std::string& column, const std::string& reason) const {
    fail("column '" + column + "': " + reason);
  }

  const std::string& text(const std::string& column) const { return fields_[columns_.at(column)]; }

  // An integer in [min, kMaxSize]: decimal digits only.
  std::int64_t integer(const std::string& column, std::int64_t min) const {
    const std::string& t = text(column);
    const std::string rule = "expected an integer between " + std::to_string(min) + " and " + std::to_string(kMaxSize);
    if (t.empty()) fail(column, rule + ", got nothing");
    if (t.size() > 10 || t.find_first_not_of("0123456789") != std::string::npos)
      fail(column, rule + ", got '" + t + "'");
    const std::int64_t v = std::stoll(t);
    if (v < min || v > kMaxSize) fail(column, rule + ", got '" + t + "'");
    return v;
  }

  // A finite number > 0 (e.g. 3101 or 3.1e3); `what` says what it counts.
  double positive(const std::string& column, const std::string& what) const {
    const std::string& t = text(column);
    double v = 0;
    std::size_t used = 0;
    try {
      v = std::stod(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (t.empty() || used != t.size() || !std::isfinite(v) || v <= 0)
      fail(column, "expected a number of " + what + " > 0 (or nothing: not measured), got '" + t + "'");
    return v;
  }

 private:
  const std::string& path_;
  int line_;
  const std::map<std::string, std::size_t>& columns_;
  const std::vector<std::string>& fields_;
};

}  // namespace

const char* workload_kind_name(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kGemm: return "gemm";
    case WorkloadKind::kConv2d: return "conv2d";
    case WorkloadKind::kLayerNorm: return "layernorm";
    case WorkloadKind::kSoftmax: return "softmax";
    case WorkloadKind::kAdd: return "add";
    case WorkloadKind::kRelu: return "relu";
    case WorkloadKind::kGelu: return "gelu";
    case WorkloadKind::kAttention: return "attention";
    case WorkloadKind::kEncoder: return "encoder";
    case WorkloadKind::kModel: return "model";
  }
  return "?";
}

double CalibrationRow::macs() const {
  const double s = double(seq), hd = double(width);
  switch (kind) {
    case WorkloadKind::kGemm: return double(m) * double(k) * double(n);
    case WorkloadKind::kConv2d:
      return double(batch) * double(cout) * double(out_h()) * double(out_w()) * double(cin) * double(kernel * kernel);
    case WorkloadKind::kAttention: return 2.0 * double(batch) * s * s * hd;  // k q^T and v^T p
    case WorkloadKind::kEncoder: return 12.0 * s * hd * hd + 2.0 * s * s * hd;  // 4 H x H + 2 H x 4H linears, attention
    case WorkloadKind::kLayerNorm:
    case WorkloadKind::kSoftmax:
    case WorkloadKind::kAdd:
    case WorkloadKind::kRelu:
    case WorkloadKind::kGelu:
    case WorkloadKind::kModel: return 0;
  }
  return 0;
}

CalibrationTable parse_calibration_table(const std::string& text, const std::string& path) {
  CalibrationTable table;
  table.path = path;
  std::map<std::string, std::size_t> columns;  // header name -> field index
  std::size_t header_fields = 0;
  int header_line = 0;
  std::map<std::string, int> seen;  // workload -> line
  std::istringstream in(text);
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const std::string content = trim(raw);
    if (content.empty() || content[0] == '#') continue;
    const std::vector<std::string> fields = split_fields(raw);
    const auto fail = [&](const std::string& reason) {
      throw CalibrationTableError(path + ":" + std::to_string(line) + ": " + reason);
    };
    if (header_line == 0) {  // the header
      header_line = line;
      header_fields = fields.size();
      for (std::size_t i = 0; i < fields.size(); ++i) {
        if (fields[i].empty()) fail("header: column " + std::to_string(i + 1) + " has no name");
        if (!columns.emplace(fields[i], i).second) fail("header: column '" + fields[i] + "' appears twice");
        const bool cycles = ends_with(fields[i], kCyclesSuffix);
        if (cycles || ends_with(fields[i], kMicrosecondsSuffix)) {
          if (!table.measured_column.empty())
            fail("header: two measured columns, '" + table.measured_column + "' and '" + fields[i] +
                 "'; keep one (a table holds one hardware's measurements)");
          table.measured_column = fields[i];
          table.measured_unit = cycles ? MeasuredUnit::kCycles : MeasuredUnit::kMicroseconds;
        }
      }
      for (const char* name : kRequired)
        if (columns.count(name) == 0) fail(std::string("header: missing column '") + name + "'");
      if (table.measured_column.empty())
        fail("header: missing the measured column '<hardware>_cycles' or '<hardware>_us' (e.g. tpuv3_cycles, "
             "h200_us)");
      continue;
    }
    if (fields.size() != header_fields)
      fail(std::to_string(fields.size()) + " fields, but the header (line " + std::to_string(header_line) + ") has " +
           std::to_string(header_fields));
    const LineReader r(path, line, columns, fields);
    CalibrationRow row;
    row.line = line;
    row.workload = r.text("workload");
    if (row.workload.empty()) r.fail("workload", "empty workload name");
    const auto [previous, fresh] = seen.emplace(row.workload, line);
    if (!fresh) r.fail("workload", "'" + row.workload + "' already names line " + std::to_string(previous->second));
    const std::string dtype = columns.count(kDTypeColumn) != 0 ? r.text(kDTypeColumn) : "";
    const std::optional<sim::DType> parsed = dtype.empty() ? sim::DType::kFloat32 : sim::dtype_from_name(dtype);
    const bool float_dtype = parsed && (*parsed == sim::DType::kFloat32 || *parsed == sim::DType::kFloat16 ||
                                        *parsed == sim::DType::kBFloat16);
    if (!float_dtype)
      r.fail(kDTypeColumn, "unknown dtype '" + dtype + "' (expected fp32, fp16 or bf16; empty means fp32)");
    row.dtype = *parsed;
    const std::string& kind = r.text("kind");
    if (kind == "gemm") {
      row.kind = WorkloadKind::kGemm;
      row.m = r.integer("M_or_B", 1);
      row.k = r.integer("K_or_H", 1);
      row.n = r.integer("N_or_W", 1);
    } else if (kind == "conv2d") {
      row.kind = WorkloadKind::kConv2d;
      row.batch = r.integer("M_or_B", 1);
      row.h = r.integer("K_or_H", 1);
      row.w = r.integer("N_or_W", 1);
      row.cin = r.integer("Cin", 1);
      row.cout = r.integer("Cout", 1);
      row.kernel = r.integer("kernel", 1);
      row.stride = r.integer("stride", 1);
      row.pad = r.integer("pad", 0);
      if (row.h + 2 * row.pad < row.kernel || row.w + 2 * row.pad < row.kernel)
        r.fail("kernel", std::to_string(row.kernel) + " is larger than the padded input (" +
                             std::to_string(row.h + 2 * row.pad) + " x " + std::to_string(row.w + 2 * row.pad) + ")");
    } else if (kind == "layernorm" || kind == "softmax" || kind == "add" || kind == "relu" || kind == "gelu") {
      row.kind = kind == "layernorm" ? WorkloadKind::kLayerNorm
                 : kind == "softmax" ? WorkloadKind::kSoftmax
                 : kind == "add"     ? WorkloadKind::kAdd
                 : kind == "relu"    ? WorkloadKind::kRelu
                                     : WorkloadKind::kGelu;
      row.m = r.integer("M_or_B", 1);
      row.n = r.integer("N_or_W", 1);
    } else if (kind == "attention" || kind == "encoder") {
      row.kind = kind == "attention" ? WorkloadKind::kAttention : WorkloadKind::kEncoder;
      row.batch = r.integer("M_or_B", 1);
      row.seq = r.integer("K_or_H", 1);
      row.width = r.integer("N_or_W", 1);
      if (row.kind == WorkloadKind::kEncoder && row.width % row.batch != 0)
        r.fail("M_or_B", std::to_string(row.batch) + " heads do not divide the hidden size N_or_W = " +
                             std::to_string(row.width));
    } else if (kind.rfind(kModelPrefix, 0) == 0) {
      row.kind = WorkloadKind::kModel;
      row.model = kind.substr(std::string(kModelPrefix).size());
      if (row.model.empty()) r.fail("kind", "'model:' needs a model name (e.g. model:resnet18)");
      if (row.dtype != sim::DType::kFloat32)
        r.fail(kDTypeColumn,
               "model rows run in fp32 (`mlusim run`'s default), not " + std::string(sim::dtype_name(row.dtype)));
      row.batch = r.integer("M_or_B", 1);
    } else {
      r.fail("kind", "unknown kind '" + kind + "' (expected gemm, conv2d, layernorm, softmax, add, relu, gelu, " +
                         "attention, encoder or model:NAME)");
    }
    if (!r.text(table.measured_column).empty())
      row.measured = r.positive(table.measured_column,
                                table.measured_unit == MeasuredUnit::kCycles ? "cycles" : "microseconds");
    table.rows.push_back(row);
  }
  if (header_line == 0) throw CalibrationTableError(path + ": no header line (only comments or blank lines)");
  if (table.rows.empty()) throw CalibrationTableError(path + ": no data rows after the header");
  return table;
}

CalibrationTable read_calibration_table(const std::string& path) {
  std::error_code ec;
  std::ifstream in(path, std::ios::binary);
  if (!std::filesystem::is_regular_file(path, ec) || !in)
    throw CalibrationTableError(path + ": cannot read the calibration table (no such file?)");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_calibration_table(text.str(), path);
}

}  // namespace mlusim::cli
