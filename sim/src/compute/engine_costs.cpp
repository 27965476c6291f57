#include "mlusim/sim/engine_costs.h"

#include <algorithm>

#include "compute/tfu_timing.h"
#include "compute/vfu_timing.h"

namespace mlusim::sim {

std::uint64_t tfu_matmul_cycles(const HardwareConfig& cfg, DType in_t, std::uint64_t m, std::uint64_t k,
                                std::uint64_t n) {
  return compute::tfu_gemm_cycles(cfg, in_t, m, k, n).cycles;
}

std::uint64_t tfu_conv_intrinsic_cycles(const HardwareConfig& cfg, DType in_t, std::uint64_t pixels,
                                        std::uint64_t taps, std::uint64_t cin, std::uint64_t cout) {
  return compute::tfu_conv_cycles(cfg, in_t, pixels, 1, taps, 1, cin, cout).cycles;
}

std::uint64_t tfu_conv_intrinsic_chained_cycles(const HardwareConfig& cfg, DType in_t, std::uint64_t pixels,
                                                std::uint64_t taps, std::uint64_t cin, std::uint64_t cout) {
  const compute::TfuCost c = compute::tfu_conv_cycles(cfg, in_t, pixels, 1, taps, 1, cin, cout);
  return cfg.tfu_intrinsic_overlap ? c.cycles - std::min(c.drain, c.cycles) : c.cycles;
}

std::uint64_t vfu_matmul_cycles(const HardwareConfig& cfg, DType out_t, std::uint64_t m, std::uint64_t k,
                                std::uint64_t n) {
  return compute::vfu_matmul_cycles(cfg, out_t, m, k, n);
}

std::uint64_t vfu_elementwise_cycles(const HardwareConfig& cfg, DType t, std::uint64_t n) {
  return compute::vfu_binary_cycles(cfg, VecBinaryOp::kAdd, t, n);
}

}  // namespace mlusim::sim
