// A calibration table: workloads measured on real hardware, in the CSV format of
// data/calibration/*.csv, read for `mlusim validate`.
//
// Format (plain comma-separated values, no quoting; UTF-8 or ASCII; LF or CRLF line ends):
//   - lines starting with '#' (after optional spaces) and blank lines are ignored; the table's
//     source and measurement conditions live in those comment lines;
//   - the first other line is the header. It must name the columns
//       workload, kind, M_or_B, K_or_H, N_or_W, Cin, Cout, kernel, stride, pad
//     in any order, and exactly one measured column: `<hardware>_cycles` (core cycles, e.g.
//     tpuv3_cycles) or `<hardware>_us` (device time in microseconds, e.g. h200_us, for chips
//     whose clock moves under load: compared with the simulated time, not cycles). An optional
//     `dtype` column gives each row's element type: fp32 (also when empty or absent), fp16 or
//     bf16. Other columns are ignored;
//   - every later line is one workload, with as many fields as the header (columns a kind does not
//     use are ignored; leave them empty). The kinds, after the workloads of PyTorchSim's TPUv3
//     validation (its experiments/*.py) plus elementwise ops, in the row's dtype:
//       gemm:      C[M,N] = A[M,K] x B[K,N]; M_or_B = M, K_or_H = K, N_or_W = N;
//       conv2d:    a batch-B convolution of a B x Cin x H x W input with Cout filters of
//                  kernel x kernel, stride and zero padding `pad` on both axes; M_or_B = B,
//                  K_or_H = H, N_or_W = W, Cin, Cout, kernel, stride, pad;
//       layernorm: torch.nn.LayerNorm(N) (weight and bias, eps 1e-5) of an [M, N] input;
//                  M_or_B = M, N_or_W = N;
//       softmax:   softmax of an [M, N] input along dim 1; M_or_B = M, N_or_W = N;
//       add:       a + b of two [M, N] inputs; relu, gelu: relu(x), gelu(x) (erf form) of an
//                  [M, N] input; M_or_B = M, N_or_W = N;
//       attention: q, k, v [B, S, D]; scores = k q^T / sqrt(D) [B, S, S], softmax along dim -2,
//                  out = v^T scores [B, D, S]; M_or_B = B (heads), K_or_H = S, N_or_W = D;
//       encoder:   a Transformer encoder block on S tokens of width H with B heads (B divides H):
//                  Q, K, V linears, the attention above, output linear + residual + LayerNorm,
//                  linear H -> 4H + ReLU, linear 4H -> H + residual + LayerNorm (PyTorchSim's BERT
//                  EncoderBlock); M_or_B = B (heads), K_or_H = S, N_or_W = H;
//       model:NAME a built-in model of `mlusim run` (resnet18, resnet50, ...): one inference of a
//                  batch of M_or_B on its default input shape;
//     sizes are integers 1..2147483647 (pad 0..2147483647), workload names are unique, and the
//     measurement is a number > 0 or empty: a row without a measurement is run and printed
//     but not counted in the error (a prediction).
// Every problem is a CalibrationTableError whose message names the file, the line and, where one
// is at fault, the column: "t.csv:7: column 'Cin': expected an integer between 1 and 2147483647,
// got 'x'".
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlusim/sim/dtype.h"

namespace mlusim::cli {

class CalibrationTableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class WorkloadKind { kGemm, kConv2d, kLayerNorm, kSoftmax, kAdd, kRelu, kGelu, kAttention, kEncoder, kModel };

// "gemm", "conv2d", "layernorm", "softmax", "add", "relu", "gelu", "attention", "encoder", "model".
const char* workload_kind_name(WorkloadKind kind);

// What the measured column holds: core cycles (`<hw>_cycles`) or microseconds (`<hw>_us`).
enum class MeasuredUnit { kCycles, kMicroseconds };

struct CalibrationRow {
  int line = 0;  // 1-based line in the file
  std::string workload;
  WorkloadKind kind = WorkloadKind::kGemm;
  sim::DType dtype = sim::DType::kFloat32;  // the `dtype` column: fp32, fp16 or bf16
  // gemm: m, k, n. layernorm, softmax, add, relu, gelu: m rows of n. conv2d: batch, h, w, cin, cout, kernel,
  // stride, pad. attention: batch (heads), seq, width (head dim). encoder: batch (heads), seq,
  // width (hidden size). model: model (its name), batch.
  std::int64_t m = 0, k = 0, n = 0;
  std::int64_t batch = 0, h = 0, w = 0, cin = 0, cout = 0, kernel = 0, stride = 1, pad = 0;
  std::int64_t seq = 0, width = 0;
  std::string model;
  double measured = 0;  // in the table's MeasuredUnit; 0: not measured (the row is a prediction)

  bool is_measured() const { return measured > 0; }

  // conv2d output size per axis: (H + 2 pad - kernel) / stride + 1.
  std::int64_t out_h() const { return (h + 2 * pad - kernel) / stride + 1; }
  std::int64_t out_w() const { return (w + 2 * pad - kernel) / stride + 1; }
  // Multiply-accumulates the workload needs: gemm M K N; conv2d B Cout OH OW Cin kernel^2;
  // attention 2 B S^2 D; encoder 12 S H^2 + 2 S^2 H; layernorm, softmax, elementwise 0; model 0 (unknown
  // before it runs: the runner's result has the model's).
  double macs() const;
};

struct CalibrationTable {
  std::string path;
  std::string measured_column;  // e.g. "tpuv3_cycles" or "h200_us"
  MeasuredUnit measured_unit = MeasuredUnit::kCycles;
  std::vector<CalibrationRow> rows;
};

// Parses `text` as the contents of `path` (used in messages only).
CalibrationTable parse_calibration_table(const std::string& text, const std::string& path);

// Reads and parses the file at `path`; an unreadable file is a CalibrationTableError too.
CalibrationTable read_calibration_table(const std::string& path);

}  // namespace mlusim::cli
