// cncl data types and reduce ops: element sizes, names, and the VFU dtype/op a reduction uses.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "cncl.h"
#include "mlusim/sim/dtype.h"
#include "mlusim/sim/vector_ops.h"

namespace mlusim::cncl {

bool valid_dtype(long long raw);  // a cnclDataType_t value below cnclNumTypes
bool valid_op(long long raw);     // a cnclReduceOp_t value below cnclNumOps
std::size_t dtype_bytes(cnclDataType_t t);
std::string dtype_name(cnclDataType_t t);  // "cnclFloat32"
std::string op_name(cnclReduceOp_t op);    // "cnclSum"

// The VFU type that reduces `t`: int8, int32, fp16 and fp32 (the types vec_binary computes);
// nullopt for the others (CNCL_RET_ERR_UNSUPPORTED for a reduction in them).
std::optional<sim::DType> reduce_dtype(cnclDataType_t t);
sim::VecBinaryOp reduce_vec_op(cnclReduceOp_t op);  // Sum->kAdd, Prod->kMul, Max->kMax, Min->kMin

}  // namespace mlusim::cncl
