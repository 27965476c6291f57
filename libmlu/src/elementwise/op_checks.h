// The validation prologue shared by the elementwise entry points.
#pragma once

#include <vector>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu::ew {

struct Arg {
  const char* name;
  const TensorDesc* desc;
  const void* ptr;
};

// Handle set; every descriptor set and its pointer non-null (unless empty); y writable (no
// stride-0 dim) and its dims equal to the inputs' broadcast shape; every dtype one the VFU path
// handles (fp64 only where `allow_fp64`).
Status check_elementwise(Handle* h, const char* op, const std::vector<Arg>& inputs, const Arg& y,
                         bool allow_fp64 = false);

// kBadParam unless can_cast(from, y's dtype), naming the op.
Status check_output_dtype(const char* op, DType computed, const TensorDesc& y);

bool is_integral(DType t);  // int8, int32, int64 (not bool)
bool is_integer_valued(double v);

}  // namespace mlusim::mlu::ew
