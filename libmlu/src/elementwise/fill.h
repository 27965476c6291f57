// The fill kernel behind fill(), for ops of other families that initialise an output as part
// of one op (embedding backward zeroes grad_weight): launches without recording.
#pragma once

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu::ew {

// Every element of y = value converted to y's dtype (as fill). kBadParam if the value does not
// fit the dtype; one kernel, none when y is empty.
Status launch_fill(Handle& h, double value, const TensorDesc& y, void* y_ptr);

}  // namespace mlusim::mlu::ew
