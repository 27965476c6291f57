// Dtype conversions with torch's semantics, as VFU program steps. The VFU's own vec_cast rounds
// floats to nearest-even and saturates narrowing integer casts; torch truncates toward zero and
// wraps, so those two conversions get short recipes here. int64 sources are narrowed by
// vec_cast with its range check (a value beyond int32 faults the kernel) before any VFU math.
#pragma once

#include "elementwise/vfu_program.h"

namespace mlusim::mlu::ew {

// v converted to `to` as torch's Tensor.to / copy_ converts.
ValueId convert(Program& p, ValueId v, DType to);

// The dtype the VFU computes in for values of dtype t: int64 narrows to int32, fp64 to fp32.
DType vfu_dtype(DType t);

// An input operand ready for VFU math in dtype `compute` (a VFU dtype): loaded, then converted.
ValueId load_as(Program& p, int operand, DType stored, DType compute);

}  // namespace mlusim::mlu::ew
