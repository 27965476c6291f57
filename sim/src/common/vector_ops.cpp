#include "mlusim/sim/vector_ops.h"

namespace mlusim::sim {

// Division and pow are iterative on a SIMD unit (reciprocal estimate + Newton steps, exp/log), so
// they pay the transcendental pass count like exp/log; everything else is one ALU pass.
VfuCostClass cost_class(VecBinaryOp op) {
  switch (op) {
    case VecBinaryOp::kDiv:
    case VecBinaryOp::kPow: return VfuCostClass::kTranscendental;
    default: return VfuCostClass::kSimple;
  }
}

VfuCostClass cost_class(VecUnaryOp op) {
  switch (op) {
    case VecUnaryOp::kRecip:
    case VecUnaryOp::kExp:
    case VecUnaryOp::kLog:
    case VecUnaryOp::kSqrt:
    case VecUnaryOp::kRsqrt:
    case VecUnaryOp::kSigmoid:
    case VecUnaryOp::kTanh:
    case VecUnaryOp::kGelu:
    case VecUnaryOp::kSilu:
    case VecUnaryOp::kSin:
    case VecUnaryOp::kCos: return VfuCostClass::kTranscendental;
    default: return VfuCostClass::kSimple;
  }
}

std::string_view op_name(VecBinaryOp op) {
  switch (op) {
    case VecBinaryOp::kAdd: return "add";
    case VecBinaryOp::kSub: return "sub";
    case VecBinaryOp::kMul: return "mul";
    case VecBinaryOp::kDiv: return "div";
    case VecBinaryOp::kMax: return "max";
    case VecBinaryOp::kMin: return "min";
    case VecBinaryOp::kPow: return "pow";
    case VecBinaryOp::kEq: return "eq";
    case VecBinaryOp::kNe: return "ne";
    case VecBinaryOp::kLt: return "lt";
    case VecBinaryOp::kLe: return "le";
    case VecBinaryOp::kGt: return "gt";
    case VecBinaryOp::kGe: return "ge";
    case VecBinaryOp::kAnd: return "and";
    case VecBinaryOp::kOr: return "or";
    case VecBinaryOp::kBitAnd: return "bitand";
    case VecBinaryOp::kBitOr: return "bitor";
    case VecBinaryOp::kBitXor: return "bitxor";
    case VecBinaryOp::kShl: return "shl";
    case VecBinaryOp::kShr: return "shr";
  }
  return "invalid";
}

std::string_view op_name(VecUnaryOp op) {
  switch (op) {
    case VecUnaryOp::kCopy: return "copy";
    case VecUnaryOp::kNeg: return "neg";
    case VecUnaryOp::kAbs: return "abs";
    case VecUnaryOp::kSquare: return "square";
    case VecUnaryOp::kRecip: return "recip";
    case VecUnaryOp::kExp: return "exp";
    case VecUnaryOp::kLog: return "log";
    case VecUnaryOp::kSqrt: return "sqrt";
    case VecUnaryOp::kRsqrt: return "rsqrt";
    case VecUnaryOp::kSigmoid: return "sigmoid";
    case VecUnaryOp::kTanh: return "tanh";
    case VecUnaryOp::kGelu: return "gelu";
    case VecUnaryOp::kSilu: return "silu";
    case VecUnaryOp::kRelu: return "relu";
    case VecUnaryOp::kNot: return "not";
    case VecUnaryOp::kSin: return "sin";
    case VecUnaryOp::kCos: return "cos";
  }
  return "invalid";
}

std::string_view op_name(VecReduceOp op) {
  switch (op) {
    case VecReduceOp::kSum: return "sum";
    case VecReduceOp::kMax: return "max";
    case VecReduceOp::kMin: return "min";
    case VecReduceOp::kSumSquares: return "sum_squares";
  }
  return "invalid";
}

}  // namespace mlusim::sim
