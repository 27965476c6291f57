// VFU arithmetic: the real computation of the vector intrinsics, on raw host pointers into the
// simulated NRAM/WRAM backing memory. Timing is separate (compute/vfu_timing.h); both share the
// support checks below, so timing-only mode rejects exactly the calls functional mode rejects.
//
// Element types (DType -> host storage): fp32 = float, fp16 = Eigen::half, bf16 = Eigen::bfloat16,
// int32 = int32_t, int8 = int8_t, bool = one byte (0 = false; any non-zero byte reads as true,
// results are 0/1). Only fp32, fp16, bf16, int32, int8 and bool are VFU compute dtypes (bf16 only
// on a config with `vfu.bf16`: that check is the timing functions', which know the config,
// compute/vfu_timing.h); fp64 and int64 are storage and
// may only be copied (kCopy) or cast (vec_cast). Anything else throws std::invalid_argument whose
// message names the op and the dtype: "VFU <kind> op '<op>' does not support dtype '<dtype>'".
//
// Semantics common to all functions:
// - fp16 and bf16 are computed in fp32 and rounded once to their dtype (round-to-nearest-even)
//   when stored.
// - fp32 follows IEEE: division by zero gives +-inf/NaN; max/min propagate NaN.
// - Integer arithmetic wraps (two's complement) on overflow, like torch on CPU; integer division
//   truncates toward zero; an integer division by zero yields 0 (no trap).
// - Aliasing: dst may be exactly a, b or src (in place); partially overlapping ranges are not
//   supported, except in vec_cast, which handles any overlap.
// - n == 0 is a no-op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mlusim/sim/dtype.h"
#include "mlusim/sim/vector_ops.h"

namespace mlusim::sim::compute {

// --- support table -------------------------------------------------------------------------------
// binary  add sub mul div pow : fp32 fp16 bf16 int32 int8
//         max min             : fp32 fp16 bf16 int32 int8 bool
//         eq ne lt le gt ge   : fp32 fp16 bf16 int32 int8 bool
//         and or (logical)    : int32 int8 bool
// unary   copy                : every dtype (a byte copy; fp64 and int64 included)
//         neg abs square relu : fp32 fp16 bf16 int32 int8
//         recip exp log sqrt rsqrt sigmoid tanh gelu silu sin cos : fp32 fp16 bf16
//         not (logical)       : int32 int8 bool
// reduce  sum sum_squares     : fp32 fp16 bf16 int32 int8
//         max min             : fp32 fp16 bf16 int32 int8 bool
// cast    between any two of fp32 fp16 bf16 int32 int8 bool fp64 int64
// fill, select                : fp32 fp16 bf16 int32 int8 bool
bool is_vfu_dtype(DType t);
bool vec_supported(VecBinaryOp op, DType t);
bool vec_supported(VecUnaryOp op, DType t);
bool vec_supported(VecReduceOp op, DType t);
bool vec_cast_supported(DType dst_t, DType src_t);

// Throw std::invalid_argument ("VFU binary op 'exp' does not support dtype 'int32'") when the
// combination is not in the table above.
void check_supported(VecBinaryOp op, DType t);
void check_supported(VecUnaryOp op, DType t);
void check_supported(VecReduceOp op, DType t);
void check_cast_supported(DType dst_t, DType src_t);
void check_vfu_dtype(std::string_view what, DType t);  // fill / select: "VFU fill does not support ..."

// --- elementwise ---------------------------------------------------------------------------------

// dst[i] = a[i] OP b[i], all n elements of dtype t. Comparisons (eq..ge) and logical and/or write
// 1/0 in dtype t (1.0f/0.0f for floats); NaN compares false except `ne`.
// pow: floats use std::pow semantics; integers use exact repeated multiplication (wrapping), and a
// negative exponent gives the truncated value of 1/a^|b|: 1 for a = 1, +-1 for a = -1, else 0
// (0^negative = 0).
void vec_binary(VecBinaryOp op, DType t, void* dst, const void* a, const void* b, std::size_t n);

// dst[i] = a[i] OP s (or s OP a[i] when scalar_first), where s is `scalar` converted to dtype t
// first: rounded to the nearest fp32/fp16 value for floats; for int32/int8/bool it must be an
// integer in the dtype's range (0 or 1 for bool), else std::invalid_argument.
void vec_binary_scalar(VecBinaryOp op, DType t, void* dst, const void* a, double scalar,
                       std::size_t n, bool scalar_first = false);

// Mask form of the predicates: dst is a bool array (one byte 0/1 per element) whatever the
// operand dtype t. op must be a comparison or and/or. Costs vfu_binary_cycles(op, t, n).
void vec_compare(VecBinaryOp op, DType t, void* dst_bool, const void* a, const void* b,
                 std::size_t n);
void vec_compare_scalar(VecBinaryOp op, DType t, void* dst_bool, const void* a, double scalar,
                        std::size_t n, bool scalar_first = false);

// dst[i] = OP(src[i]).
// relu(x) = x < 0 ? 0 : x (NaN stays NaN); gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2))) (exact erf
// form, no tanh approximation); silu(x) = x * sigmoid(x); sigmoid(x) = 1 / (1 + exp(-x));
// rsqrt(x) = 1 / sqrt(x). Integer neg/abs/square wrap (abs(INT_MIN) = INT_MIN).
// not(x) = (x == 0) as 1/0. copy is a byte copy (memmove) and accepts every dtype.
void vec_unary(VecUnaryOp op, DType t, void* dst, const void* src, std::size_t n);

// dst[r] = OP over src[r*n .. r*n + n) for r in [0, rows): one result per row, of dtype t.
// fp16 and bf16 accumulate in fp32; integer sums accumulate in 64 bits and wrap once to the dtype when
// stored. An empty row (n == 0) sums to 0; max/min of an empty row throw std::invalid_argument.
// dst may be exactly src (results are written after their row has been read).
void vec_reduce(VecReduceOp op, DType t, void* dst, const void* src, std::size_t rows,
                std::size_t n);

// How a float -> integer cast rounds. Saturation applies in both modes.
enum class CastRounding : std::uint8_t {
  kNearestEven,  // round half to even (the hardware default, and this function's)
  kTowardZero,   // truncate, as C++ and torch's .to(int) do
};

// dst[i] = (dst_t) src[i], for any two of fp32 fp16 bf16 int32 int8 bool fp64 int64.
// - float -> integer: rounded per `rounding`, then saturated to the integer range; NaN -> 0.
// - integer -> narrower integer: saturated (int32 300 -> int8 127), except from int64: a value out
//   of the destination range throws std::out_of_range naming the index and value (int64 tensors are
//   narrowed on load with a range check).
// - -> bool: x != 0 (NaN -> true); bool -> anything: 0 or 1.
// - -> fp16, -> bf16: via fp32 with round-to-nearest-even (fp64 -> fp16 therefore rounds twice);
//   values beyond the dtype's range become +-inf. bf16 -> fp32 is exact.
// dst and src may overlap in any way (an overlapping conversion goes through a temporary).
void vec_cast(DType dst_t, void* dst, DType src_t, const void* src, std::size_t n,
              CastRounding rounding = CastRounding::kNearestEven);

// dst[i] = value converted to dtype t as vec_binary_scalar converts its scalar.
void vec_fill(DType t, void* dst, double value, std::size_t n);

// dst[i] = cond[i] ? a[i] : b[i] ("where"); cond is a bool array (one byte per element, non-zero =
// true). Elements are copied bit for bit.
void vec_select(DType t, void* dst, const void* cond, const void* a, const void* b, std::size_t n);

}  // namespace mlusim::sim::compute
