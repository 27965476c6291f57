// Operation codes of the VFU (vector unit) intrinsics, shared by the kernel API and the
// arithmetic/timing code. Each op's cost class decides its VFU cycle formula (see compute/vfu_timing.h).
#pragma once

#include <cstdint>
#include <string_view>

namespace mlusim::sim {

// dst[i] = a[i] OP b[i]. Comparisons write 1/0 in the operand dtype (bool dst for kBool).
enum class VecBinaryOp : std::uint8_t {
  kAdd, kSub, kMul, kDiv, kMax, kMin, kPow,
  kEq, kNe, kLt, kLe, kGt, kGe,
  kAnd, kOr,  // logical, on bool / integer operands (non-zero = true)
  // Two's-complement bit operations on int8 / int32 (and/or/xor also on bool). Shifts take the
  // count from b with C's conventions made total, as torch's CPU kernels: a count < 0 or >= the
  // dtype's bit width W shifts everything out (kShl -> 0, kShr -> the sign, a >> (W - 1)); kShl
  // wraps modulo 2^W, kShr is arithmetic (sign-filling).
  kBitAnd, kBitOr, kBitXor, kShl, kShr,
};

// dst[i] = OP(src[i]).
enum class VecUnaryOp : std::uint8_t {
  kCopy, kNeg, kAbs, kSquare, kRecip,
  kExp, kLog, kSqrt, kRsqrt, kSigmoid, kTanh, kGelu /* tanh approximation-free erf form */, kSilu,
  kRelu, kNot,
  kSin, kCos,  // radians; transcendental cost
};

// dst[r] = OP over src[r*n .. r*n+n) for each of `rows` rows.
enum class VecReduceOp : std::uint8_t { kSum, kMax, kMin, kSumSquares };

// Cost classes: simple ops take one pass per vector, transcendental ones `vfu.transcendental_factor` passes.
enum class VfuCostClass : std::uint8_t { kSimple, kTranscendental, kReduce };

VfuCostClass cost_class(VecBinaryOp op);
VfuCostClass cost_class(VecUnaryOp op);
std::string_view op_name(VecBinaryOp op);
std::string_view op_name(VecUnaryOp op);
std::string_view op_name(VecReduceOp op);

}  // namespace mlusim::sim
