#include "compute/tfu_timing.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace mlusim::sim::compute {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

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
  // Folds of the busiest array when the folds are dealt out over array.count arrays (header).
  const std::uint64_t busiest = ceil_div(cost.folds, array.count);
  // Demand-matrix rows of one fold in SCALE-Sim v2 (see the header for the derivation).
  const std::uint64_t per_fold = os ? t + r + c - 2 : t + 2 * r + c - 2;
  if (!fold_overlap) {
    cost.cycles = busiest * per_fold - 1;
  } else {
    const std::uint64_t interval = std::max(t, r);
    cost.cycles = per_fold + (busiest - 1) * interval - 1;
  }
  if (cost.cycles > 0)
    cost.utilisation = static_cast<double>(cost.macs) /
                       (static_cast<double>(cost.cycles) * static_cast<double>(array.macs_per_cycle()));
  return cost;
}

TfuCost tfu_gemm_cycles(const HardwareConfig& cfg, DType in_t, std::uint64_t m, std::uint64_t k,
                        std::uint64_t n) {
  const TfuArray array = tfu_array_for(cfg, in_t);
  if (!array.supported())
    throw std::invalid_argument("TFU: dtype '" + std::string(dtype_name(in_t)) +
                                "' is not supported by the tensor unit of config '" + cfg.name +
                                "'");
  return tfu_gemm_cycles(array, cfg.tfu_dataflow, cfg.tfu_fold_overlap, m, k, n);
}

TfuCost tfu_conv_cycles(const TfuArray& array, Dataflow dataflow, bool fold_overlap,
                        std::uint64_t oh, std::uint64_t ow, std::uint64_t kh, std::uint64_t kw,
                        std::uint64_t cin, std::uint64_t cout) {
  return tfu_gemm_cycles(array, dataflow, fold_overlap, oh * ow, kh * kw * cin, cout);
}

TfuCost tfu_conv_cycles(const HardwareConfig& cfg, DType in_t, std::uint64_t oh, std::uint64_t ow,
                        std::uint64_t kh, std::uint64_t kw, std::uint64_t cin, std::uint64_t cout) {
  return tfu_gemm_cycles(cfg, in_t, oh * ow, kh * kw * cin, cout);
}

}  // namespace mlusim::sim::compute
