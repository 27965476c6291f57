#include "compute/tfu_timing.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace mlusim::sim::compute {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// macs / (cycles x the arrays' MACs per cycle); 0 for an empty operation.
double utilisation(const TfuCost& cost, const TfuArray& array) {
  if (cost.cycles == 0) return 0.0;
  return static_cast<double>(cost.macs) /
         (static_cast<double>(cost.cycles) * static_cast<double>(array.macs_per_cycle()));
}

// cfg's array for input dtype in_t; throws std::invalid_argument naming the dtype when the TFU has none.
TfuArray usable_array(const HardwareConfig& cfg, DType in_t) {
  const TfuArray array = tfu_array_for(cfg, in_t);
  if (!array.supported())
    throw std::invalid_argument("TFU: dtype '" + std::string(dtype_name(in_t)) +
                                "' is not supported by the tensor unit of config '" + cfg.name +
                                "'");
  return array;
}

}  // namespace

TfuArray tfu_array_for(const HardwareConfig& cfg, DType t) {
  switch (t) {
    case DType::kFloat32: return cfg.tfu_fp32;
    case DType::kFloat16: return cfg.tfu_fp16;
    case DType::kBFloat16: return cfg.tfu_bf16;
    case DType::kInt8: return cfg.tfu_int8;
    default: return TfuArray{};
  }
}

TfuCost tfu_gemm_cycles(const TfuArray& array, Dataflow dataflow, bool fold_overlap,
                        std::uint64_t m, std::uint64_t k, std::uint64_t n) {
  if (!array.supported() || array.count == 0)
    throw std::invalid_argument("tfu_gemm_cycles: systolic array " + std::to_string(array.rows) +
                                "x" + std::to_string(array.cols) + " x " + std::to_string(array.count) +
                                " is not usable");
  TfuCost cost;
  if (m == 0 || k == 0 || n == 0) return cost;

  const std::uint64_t r = array.rows;
  const std::uint64_t c = array.cols;
  const bool os = dataflow == Dataflow::kOutputStationary;
  const std::uint64_t sr = os ? m : k;  // spatial along the rows
  const std::uint64_t sc = n;           // spatial along the columns
  const std::uint64_t t = os ? k : m;   // streamed (temporal)

  cost.folds = ceil_div(sr, r) * ceil_div(sc, c);
  cost.macs = m * k * n;
  // Demand-matrix rows of one fold streaming `rows` in SCALE-Sim v2 (the header's derivation), and
  // the busiest array's schedule of `whole` folds of t streamed rows then `split` folds of
  // `share` rows (one array: whole = folds, split = 0, SCALE-Sim's count).
  const auto per_fold = [&](std::uint64_t rows) { return os ? rows + r + c - 2 : rows + 2 * r + c - 2; };
  const auto schedule = [&](std::uint64_t whole, std::uint64_t split, std::uint64_t share) {
    if (!fold_overlap) return whole * per_fold(t) + split * per_fold(share) - 1;
    const std::uint64_t first = whole > 0 ? per_fold(t) : per_fold(share);
    const std::uint64_t rest = whole > 0 ? (whole - 1) * std::max(t, r) + split * std::max(share, r)
                                         : (split - 1) * std::max(share, r);
    return first + rest - 1;
  };
  // Several arrays (header): folds dealt out whole, the busiest holding ceil(folds / A); or the
  // folds that do not divide evenly (folds mod A) each split into A shares of ceil(t / A) streamed
  // rows, one per array. The cheaper of the two.
  const std::uint64_t a = array.count, whole = cost.folds / a, left = cost.folds % a;
  cost.cycles = schedule(ceil_div(cost.folds, a), 0, 0);
  std::uint64_t last_t = t;  // streamed rows of the busiest array's last fold
  if (left > 0) {
    const std::uint64_t split = schedule(whole, left, ceil_div(t, a));
    if (split < cost.cycles) cost.cycles = split, last_t = ceil_div(t, a);
  }
  // Back-to-back intrinsics (header): the last fold's cycles after its interval, during which
  // the array already takes the next intrinsic's operands.
  if (fold_overlap) cost.drain = per_fold(last_t) - std::max(last_t, r) - 1;
  cost.utilisation = utilisation(cost, array);
  return cost;
}

TfuCost tfu_gemm_cycles(const HardwareConfig& cfg, DType in_t, std::uint64_t m, std::uint64_t k,
                        std::uint64_t n) {
  return tfu_gemm_cycles(usable_array(cfg, in_t), cfg.tfu_dataflow, cfg.tfu_fold_overlap, m, k, n);
}

TfuCost tfu_conv_cycles(const TfuArray& array, Dataflow dataflow, bool fold_overlap, bool depth_per_tap,
                        std::uint64_t oh, std::uint64_t ow, std::uint64_t kh, std::uint64_t kw,
                        std::uint64_t cin, std::uint64_t cout) {
  const std::uint64_t m = oh * ow, k = kh * kw * cin;
  if (!depth_per_tap || dataflow != Dataflow::kWeightStationary || !array.supported() || m * k * cout == 0)
    return tfu_gemm_cycles(array, dataflow, fold_overlap, m, k, cout);
  // WS with the depth folded per tap: whole row folds per tap, K' = KH x KW x R x ceil(Cin / R).
  TfuCost cost = tfu_gemm_cycles(array, dataflow, fold_overlap, m, kh * kw * array.rows * ceil_div(cin, array.rows),
                                 cout);
  cost.macs = m * k * cout;
  cost.utilisation = utilisation(cost, array);
  return cost;
}

TfuCost tfu_conv_cycles(const HardwareConfig& cfg, DType in_t, std::uint64_t oh, std::uint64_t ow,
                        std::uint64_t kh, std::uint64_t kw, std::uint64_t cin, std::uint64_t cout) {
  return tfu_conv_cycles(usable_array(cfg, in_t), cfg.tfu_dataflow, cfg.tfu_fold_overlap, cfg.tfu_conv_depth_per_tap,
                         oh, ow, kh, kw, cin, cout);
}

}  // namespace mlusim::sim::compute
