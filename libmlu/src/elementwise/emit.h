// Program builders of the elementwise ops: each appends one op's VFU steps to a Program and
// returns its result in the op's computed dtype. The public entry points (binary, unary, compare,
// where, logical ...) are an emitter between loading the inputs and converting to the output's
// dtype; the fused elementwise program (fused.h) chains emitters, so a fused chain computes
// exactly what the sequence of those ops computes with intermediates of the computed dtypes.
#pragma once

#include "elementwise/vfu_program.h"
#include "mlusim/mlu/elementwise.h"
#include "mlusim/mlu/status.h"

namespace mlusim::mlu::ew {

// A value being built, with what torch's type promotion needs to know about it.
struct Val {
  ValueId id = -1;  // its value in the program; -1 for a constant not yet materialized
  DType dtype = DType::kFloat32;
  bool zero_dim = false;  // promotes as a zero-dim tensor (or a Python scalar) does
  bool constant = false;  // a scalar constant: `value`, exactly representable in `dtype`
  double value = 0;
};

// torch's result_type for two operands given as (dtype, zero-dim).
DType result_type(DType a, bool a_zero_dim, DType b, bool b_zero_dim);
DType result_type(const Val& a, const Val& b);

// v as a program value of dtype `to` (a VFU dtype), converted as torch converts; a constant
// becomes a tile filled with its value.
ValueId as(Program& p, const Val& v, DType to);

const char* binary_name(BinaryOp op);    // "add", ...; "binary" when out of range
const char* unary_name(UnaryOp op);      // "exp", ...; "unary" when out of range
const char* compare_name(CompareOp op);  // "lt", ...; "compare" when out of range
const char* bitwise_name(BitwiseOp op);  // "bitwise_and", ...; "bitwise" when out of range
bool is_valid(BinaryOp op);
bool is_valid(UnaryOp op);
bool is_valid(CompareOp op);
bool is_valid(LogicalOp op);
bool is_valid(BitwiseOp op);

// a op b (alpha scales b for add/sub), computed in torch's result dtype of a and b (fp32 at least
// for true division). `name` prefixes messages.
Status emit_binary(Program& p, const char* name, BinaryOp op, const Val& a, const Val& b, double alpha, Val* out);
// a op scalar (scalar op a when scalar_first), computed in `result` (fp32 at least for kDiv), the
// scalar applied in fp32 for floating results (torch's opmath).
Status emit_binary_scalar(Program& p, const char* name, BinaryOp op, const Val& a, double scalar, DType result,
                          bool scalar_first, Val* out);
// op(x); floating ops on integral x compute in fp32.
Status emit_unary(Program& p, UnaryOp op, const Val& x, Val* out);
// 1/0 in the dtype the comparison ran in (result_type of a and b, narrowed for the VFU).
ValueId emit_compare(Program& p, CompareOp op, const Val& a, const Val& b);
// a op scalar: integral a with an integral-valued scalar compares exactly, otherwise in fp32.
ValueId emit_compare_scalar(Program& p, CompareOp op, const Val& a, double scalar);
// cond ? a : b in the result dtype of a and b.
Val emit_where(Program& p, const Val& cond, const Val& a, const Val& b);
// (a != 0) op (b != 0) and (x == 0), bool.
ValueId emit_logical(Program& p, LogicalOp op, const Val& a, const Val& b);
ValueId emit_logical_not(Program& p, const Val& x);
// a op b in result_type(a, b) (bool for and/or/xor, or integral; kBadParam otherwise).
Status emit_bitwise(Program& p, const char* name, BitwiseOp op, const Val& a, const Val& b, Val* out);
// a op scalar (scalar op a when scalar_first) in `result`; the scalar must fit its VFU lanes.
Status emit_bitwise_scalar(Program& p, const char* name, BitwiseOp op, const Val& a, std::int64_t scalar,
                           DType result, bool scalar_first, Val* out);

}  // namespace mlusim::mlu::ew
