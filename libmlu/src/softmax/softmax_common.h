// What softmax_forward and softmax_backward share: validation of the dim, the grouping of views
// into [outer, dim, inner], and the op names for messages and the op log.
#pragma once

#include <vector>

#include "mlusim/mlu/softmax.h"
#include "softmax/reduction_tiling.h"
#include "softmax/tensor_view.h"

namespace mlusim::mlu::nn {

// The dim torch would use: dim + ndim for negative dims; a 0-d tensor counts as 1-d.
Status normalize_softmax_dim(const char* op, int dim, const TensorDesc& d, int* out);

// Views of the tensors (same dims; a 0-d tensor becomes [1]) coalesced jointly as
// [outer dims | dim | inner dims]. Returns r_begin and i_begin for plan_reduction.
std::pair<int, int> group_softmax_views(std::vector<TensorView*> views, int dim);

const char* softmax_op_name(SoftmaxMode mode, bool backward);

}  // namespace mlusim::mlu::nn
