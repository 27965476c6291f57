// VFU (vector unit) cost model: cycles of one vector intrinsic.
//
// The VFU is a SIMD unit `vfu_width_bytes` wide that starts a new vector every cycle once its
// pipeline is full. All formulas below are in core-clock cycles; they depend on op, dtype and
// element counts only, never on values (timing-only mode gets the same numbers).
//
//   epc(dtype)  = max(1, vfu_width_bytes / dtype_size(dtype))      elements per cycle
//                 (fp32/int32: width/4, fp16: width/2, int8/bool: width; fp64/int64: width/8,
//                  reached only by copy and cast)
//   passes(op)  = 1 for VfuCostClass::kSimple, vfu_transcendental_factor for kTranscendental
//                 (exp, log, sqrt, rsqrt, recip, sigmoid, tanh, gelu, silu, div, pow); a factor
//                 of 0 counts as 1
//
//   elementwise (binary, binary-scalar, compare, unary):
//                 cycles = startup + ceil(n / epc) * passes
//   fill, select: cycles = startup + ceil(n / epc)
//   cast:         cycles = startup + ceil(n / epc(wider of the two dtypes))
//                 (the wider side moves more bytes per element, so it bounds the rate)
//   reduce over `rows` rows of n elements:
//                 cycles = startup + rows * ceil(n / epc) + ceil(log2(epc))
//     Each row streams ceil(n / epc) vectors into a lane-wise accumulator (one per cycle; a row
//     starts on a fresh vector, rows are not packed across lanes). The lanes then collapse in a
//     log2(epc)-deep adder/comparator tree; the tree is pipelined, so row r's tree overlaps row
//     r+1's streaming and only the last row's tree latency shows. sum_squares fuses the square
//     into the accumulate (same cost).
// `startup` = vfu_startup_cycles is paid once per intrinsic, also for n == 0.
//
//                 (fp16 and bf16 alike: width/2 lanes; the [hw] vector rate of MLU5xx is the same
//                 for both 16-bit float types)
// Every function validates the (op, dtype) pair with the same rules as the arithmetic
// (compute/vector_math.h) and throws the same std::invalid_argument. It also rejects bf16 on a
// config that does not compute it (HardwareConfig::computes: no `vfu.bf16`), for every intrinsic
// but a copy, with std::invalid_argument naming the op, the dtype and the config:
//   "VFU binary op 'add': dtype 'bf16' is not supported by config 'mlu370-x4' (vfu.bf16 is false:
//    this chip has no bf16 arithmetic)".
#pragma once

#include <cstdint>
#include <string_view>

#include "mlusim/sim/config.h"
#include "mlusim/sim/dtype.h"
#include "mlusim/sim/vector_ops.h"

namespace mlusim::sim::compute {

// Elements of dtype t processed per cycle (>= 1). Throws std::invalid_argument if
// cfg.vfu_width_bytes is 0.
std::uint64_t vfu_elems_per_cycle(const HardwareConfig& cfg, DType t);

// vec_binary / vec_binary_scalar / vec_compare / vec_compare_scalar of n elements.
std::uint64_t vfu_binary_cycles(const HardwareConfig& cfg, VecBinaryOp op, DType t, std::uint64_t n);
// vec_unary of n elements.
std::uint64_t vfu_unary_cycles(const HardwareConfig& cfg, VecUnaryOp op, DType t, std::uint64_t n);
// vec_reduce of rows x n elements.
std::uint64_t vfu_reduce_cycles(const HardwareConfig& cfg, VecReduceOp op, DType t,
                                std::uint64_t rows, std::uint64_t n);
// vec_cast of n elements.
std::uint64_t vfu_cast_cycles(const HardwareConfig& cfg, DType dst_t, DType src_t, std::uint64_t n);
// vec_fill of n elements.
std::uint64_t vfu_fill_cycles(const HardwareConfig& cfg, DType t, std::uint64_t n);
// Throws the error above when `cfg` does not compute `t` (op and kind name the intrinsic).
void check_config_computes(const HardwareConfig& cfg, std::string_view kind, std::string_view op, DType t);

// vec_matmul (the VFU computing C[m,n] (+)= A[m,k] x B[k,n] for dtypes the TFU lacks): one fused
// multiply-add pass over n per (row, k) at the output dtype's lanes:
//   cycles = startup + m * k * ceil(n / epc(out_t)).
std::uint64_t vfu_matmul_cycles(const HardwareConfig& cfg, DType out_t, std::uint64_t m, std::uint64_t k,
                                std::uint64_t n);
// vec_select of n elements.
std::uint64_t vfu_select_cycles(const HardwareConfig& cfg, DType t, std::uint64_t n);

}  // namespace mlusim::sim::compute
