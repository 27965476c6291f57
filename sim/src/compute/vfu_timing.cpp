#include "compute/vfu_timing.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "compute/vector_math.h"

namespace mlusim::sim::compute {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

std::uint64_t ceil_log2(std::uint64_t x) {
  std::uint64_t bits = 0;
  while ((std::uint64_t{1} << bits) < x) ++bits;
  return bits;
}

std::uint64_t passes(const HardwareConfig& cfg, VfuCostClass cls) {
  return cls == VfuCostClass::kTranscendental ? std::max<std::uint64_t>(1, cfg.vfu_transcendental_factor)
                                              : 1;
}

std::uint64_t streaming(const HardwareConfig& cfg, std::uint64_t epc, std::uint64_t n,
                        std::uint64_t pass_count) {
  return cfg.vfu_startup_cycles + ceil_div(n, epc) * pass_count;
}

}  // namespace

void check_config_computes(const HardwareConfig& cfg, std::string_view kind, std::string_view op, DType t) {
  if (cfg.computes(t)) return;
  throw std::invalid_argument("VFU " + std::string(kind) + " op '" + std::string(op) + "': dtype '" +
                              std::string(dtype_name(t)) + "' is not supported by config '" + cfg.name +
                              "' (vfu.bf16 is false: this chip has no bf16 arithmetic)");
}

std::uint64_t vfu_elems_per_cycle(const HardwareConfig& cfg, DType t) {
  if (cfg.vfu_width_bytes == 0) throw std::invalid_argument("VFU: vfu.width_bytes is 0");
  return std::max<std::uint64_t>(1, cfg.vfu_width_bytes / dtype_size(t));
}

std::uint64_t vfu_binary_cycles(const HardwareConfig& cfg, VecBinaryOp op, DType t, std::uint64_t n) {
  check_supported(op, t);
  check_config_computes(cfg, "binary", op_name(op), t);
  return streaming(cfg, vfu_elems_per_cycle(cfg, t), n, passes(cfg, cost_class(op)));
}

std::uint64_t vfu_unary_cycles(const HardwareConfig& cfg, VecUnaryOp op, DType t, std::uint64_t n) {
  check_supported(op, t);
  if (op != VecUnaryOp::kCopy) check_config_computes(cfg, "unary", op_name(op), t);
  return streaming(cfg, vfu_elems_per_cycle(cfg, t), n, passes(cfg, cost_class(op)));
}

std::uint64_t vfu_reduce_cycles(const HardwareConfig& cfg, VecReduceOp op, DType t,
                                std::uint64_t rows, std::uint64_t n) {
  check_supported(op, t);
  check_config_computes(cfg, "reduce", op_name(op), t);
  const std::uint64_t epc = vfu_elems_per_cycle(cfg, t);
  return cfg.vfu_startup_cycles + rows * ceil_div(n, epc) + ceil_log2(epc);
}

std::uint64_t vfu_cast_cycles(const HardwareConfig& cfg, DType dst_t, DType src_t, std::uint64_t n) {
  check_cast_supported(dst_t, src_t);
  if (dst_t != src_t) {
    const std::string op = "cast_" + std::string(dtype_name(src_t)) + "_to_" + std::string(dtype_name(dst_t));
    check_config_computes(cfg, "cast", op, src_t);
    check_config_computes(cfg, "cast", op, dst_t);
  }
  const DType wider = dtype_size(dst_t) >= dtype_size(src_t) ? dst_t : src_t;
  return streaming(cfg, vfu_elems_per_cycle(cfg, wider), n, 1);
}

std::uint64_t vfu_fill_cycles(const HardwareConfig& cfg, DType t, std::uint64_t n) {
  check_vfu_dtype("fill", t);
  check_config_computes(cfg, "fill", "fill", t);
  return streaming(cfg, vfu_elems_per_cycle(cfg, t), n, 1);
}

std::uint64_t vfu_select_cycles(const HardwareConfig& cfg, DType t, std::uint64_t n) {
  check_vfu_dtype("select", t);
  check_config_computes(cfg, "select", "select", t);
  return streaming(cfg, vfu_elems_per_cycle(cfg, t), n, 1);
}

std::uint64_t vfu_matmul_cycles(const HardwareConfig& cfg, DType out_t, std::uint64_t m, std::uint64_t k,
                                std::uint64_t n) {
  const std::uint64_t lanes = vfu_elems_per_cycle(cfg, out_t);
  return cfg.vfu_startup_cycles + m * k * ((n + lanes - 1) / lanes);
}

}  // namespace mlusim::sim::compute
