// A calibration table: workloads measured on real hardware, in the CSV format of
// data/calibration/*.csv, read for `mlusim validate`.
//
// Format (plain comma-separated values, no quoting; UTF-8 or ASCII; LF or CRLF line ends):
//   - lines starting with '#' (after optional spaces) and blank lines are ignored; the table's
//     source and measurement conditions live in those comment lines;
//   - the first other line is the header. It must name the columns
//       workload, kind, M_or_B, K_or_H, N_or_W, Cin, Cout, kernel, stride, pad
//     in any order, and exactly one column `<hardware>_cycles` holding the measurements (e.g.
//     tpuv3_cycles); other columns are ignored;
//   - every later line is one workload, with as many fields as the header:
//       kind gemm:   C[M,N] = A[M,K] x B[K,N]; M_or_B = M, K_or_H = K, N_or_W = N (Cin..pad empty
//                    or ignored);
//       kind conv2d: a batch-B convolution of a B x Cin x H x W input with Cout filters of
//                    kernel x kernel, stride and zero padding `pad` on both axes; M_or_B = B,
//                    K_or_H = H, N_or_W = W;
//     sizes are integers 1..2147483647 (pad 0..2147483647), the measured cycles a number > 0,
//     workload names are unique.
// Every problem is a CalibrationTableError whose message names the file, the line and, where one
// is at fault, the column: "t.csv:7: column 'Cin': expected an integer between 1 and 2147483647,
// got 'x'".
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mlusim::cli {

class CalibrationTableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class WorkloadKind { kGemm, kConv2d };

const char* workload_kind_name(WorkloadKind kind);  // "gemm", "conv2d"

struct CalibrationRow {
  int line = 0;  // 1-based line in the file
  std::string workload;
  WorkloadKind kind = WorkloadKind::kGemm;
  // gemm: m, k, n. conv2d: batch, h, w, cin, cout, kernel, stride, pad.
  std::int64_t m = 0, k = 0, n = 0;
  std::int64_t batch = 0, h = 0, w = 0, cin = 0, cout = 0, kernel = 0, stride = 1, pad = 0;
  double measured_cycles = 0;

  // conv2d output size per axis: (H + 2 pad - kernel) / stride + 1.
  std::int64_t out_h() const { return (h + 2 * pad - kernel) / stride + 1; }
  std::int64_t out_w() const { return (w + 2 * pad - kernel) / stride + 1; }
  // Multiply-accumulates the workload needs: M K N, or B Cout OH OW Cin kernel^2.
  double macs() const;
};

struct CalibrationTable {
  std::string path;
  std::string measured_column;  // e.g. "tpuv3_cycles"
  std::vector<CalibrationRow> rows;
};

// Parses `text` as the contents of `path` (used in messages only).
CalibrationTable parse_calibration_table(const std::string& text, const std::string& path);

// Reads and parses the file at `path`; an unreadable file is a CalibrationTableError too.
CalibrationTable read_calibration_table(const std::string& path);

}  // namespace mlusim::cli
