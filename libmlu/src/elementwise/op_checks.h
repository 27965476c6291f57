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
// handles. `bytes_only`: the op only moves bytes built on the host (fill), so fp64, and bf16 on a
// device without bf16 arithmetic, pass; otherwise fp64 is refused and bf16 needs a device that
// computes it (check_computes).
Status check_elementwise(Handle* h, const char* op, const std::vector<Arg>& inputs, const Arg& y,
                         bool bytes_only = false);

// kBadParam unless can_cast(from, y's dtype), naming the op; kNotSupported for a bf16 y on a
// device without bf16 (check_computes).
Status check_output_dtype(const char* op, DType computed, const TensorDesc& y);

bool is_integral(DType t);  // int8, int32, int64 (not bool)
bool is_integer_valued(double v);

}  // namespace mlusim::mlu::ew
