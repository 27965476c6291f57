#include "dtypes.h"

namespace mlusim::cncl {

bool valid_dtype(long long raw) { return raw >= 0 && raw < cnclNumTypes; }
bool valid_op(long long raw) { return raw >= 0 && raw < cnclNumOps; }

std::size_t dtype_bytes(cnclDataType_t t) {
  switch (t) {
    case cnclInt8:
    case cnclUint8: return 1;
    case cnclInt16:
    case cnclFloat16:
    case cnclBfloat16: return 2;
    case cnclInt32:
    case cnclFloat32: return 4;
    case cnclInt64:
    case cnclFloat64: return 8;
    case cnclNumTypes: break;
  }
  return 0;
}

std::string dtype_name(cnclDataType_t t) {
  switch (t) {
    case cnclInt8: return "cnclInt8";
    case cnclUint8: return "cnclUint8";
    case cnclInt16: return "cnclInt16";
    case cnclInt32: return "cnclInt32";
    case cnclInt64: return "cnclInt64";
    case cnclFloat16: return "cnclFloat16";
    case cnclFloat32: return "cnclFloat32";
    case cnclFloat64: return "cnclFloat64";
    case cnclBfloat16: return "cnclBfloat16";
    case cnclNumTypes: break;
  }
  return "cnclDataType_t(" + std::to_string(static_cast<int>(t)) + ")";
}

std::string op_name(cnclReduceOp_t op) {
  switch (op) {
    case cnclSum: return "cnclSum";
    case cnclProd: return "cnclProd";
    case cnclMax: return "cnclMax";
    case cnclMin: return "cnclMin";
    case cnclNumOps: break;
  }
  return "cnclReduceOp_t(" + std::to_string(static_cast<int>(op)) + ")";
}

std::optional<sim::DType> reduce_dtype(cnclDataType_t t) {
  switch (t) {
    case cnclInt8: return sim::DType::kInt8;
    case cnclInt32: return sim::DType::kInt32;
    case cnclFloat16: return sim::DType::kFloat16;
    case cnclBfloat16: return sim::DType::kBFloat16;  // where the config computes bf16 (api.cpp checks)
    case cnclFloat32: return sim::DType::kFloat32;
    default: return std::nullopt;
  }
}

sim::VecBinaryOp reduce_vec_op(cnclReduceOp_t op) {
  switch (op) {
    case cnclProd: return sim::VecBinaryOp::kMul;
    case cnclMax: return sim::VecBinaryOp::kMax;
    case cnclMin: return sim::VecBinaryOp::kMin;
    default: return sim::VecBinaryOp::kAdd;
  }
}

}  // namespace mlusim::cncl
