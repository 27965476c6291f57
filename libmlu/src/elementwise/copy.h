// The copy kernels behind copy_strided, for ops of other families that materialise views
// (contiguous temporaries) as part of one op: launches without recording an op of its own.
#pragma once

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu::ew {

// dst = src (src broadcast to dst's dims, dtype converted as copy_strided). The caller has
// validated both views; one kernel, none when dst is empty.
Status launch_copy(Handle& h, const TensorDesc& src, const void* src_ptr, const TensorDesc& dst, void* dst_ptr);

}  // namespace mlusim::mlu::ew
