// The compute engines' cost formulas, for kernel planners that choose tilings by cost (libmlu's
// GEMM/conv planner). Each forwards to the one formula beside the engine's code
// (sim/src/compute/tfu_timing.h, vfu_timing.h), so a planner never re-implements it.
#pragma once

#include <cstdint>

#include "mlusim/sim/config.h"
#include "mlusim/sim/dtype.h"

namespace mlusim::sim {

// One TFU matmul intrinsic C[m,n] = A[m,k] x B[k,n] with input dtype in_t on cfg's array,
// dataflow and fold-overlap setting. Throws std::invalid_argument if the TFU lacks in_t.
std::uint64_t tfu_matmul_cycles(const HardwareConfig& cfg, DType in_t, std::uint64_t m, std::uint64_t k,
                                std::uint64_t n);
// One TFU conv2d intrinsic producing `pixels` output pixels of `cout` channels from windows of
// `taps` kernel positions x `cin` channels (input dtype in_t): the matmul of M = pixels,
// K = taps x cin, N = cout, or per tap when cfg's `tfu.conv_depth_per_tap` folds it so
// (compute/tfu_timing.h). Throws std::invalid_argument if the TFU lacks in_t.
std::uint64_t tfu_conv_intrinsic_cycles(const HardwareConfig& cfg, DType in_t, std::uint64_t pixels,
                                        std::uint64_t taps, std::uint64_t cin, std::uint64_t cout);
// The same intrinsic issued the moment the one before it on the same array ends, reading nothing
// that one wrote: the cycles it adds to the chain where the TFU chains intrinsics
// (tfu.intrinsic_overlap; compute/tfu_timing.h "Back-to-back intrinsics"), i.e. its cycles less
// the drain of the one before, approximated by its own (exact for intrinsics of equal shape);
// without intrinsic overlap, its plain cycles.
std::uint64_t tfu_conv_intrinsic_chained_cycles(const HardwareConfig& cfg, DType in_t, std::uint64_t pixels,
                                                std::uint64_t taps, std::uint64_t cin, std::uint64_t cout);
// The same product on the VFU (vec_matmul) with output dtype out_t.
std::uint64_t vfu_matmul_cycles(const HardwareConfig& cfg, DType out_t, std::uint64_t m, std::uint64_t k,
                                std::uint64_t n);
// One simple (single-pass) VFU elementwise intrinsic over n elements of t.
std::uint64_t vfu_elementwise_cycles(const HardwareConfig& cfg, DType t, std::uint64_t n);

}  // namespace mlusim::sim
