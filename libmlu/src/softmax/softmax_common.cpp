#include "softmax/softmax_common.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace mlusim::mlu::nn {

Status normalize_softmax_dim(const char* op, int dim, const TensorDesc& d, int* out) {
  const int nd = std::max(d.ndim(), 1);
  MLU_CHECK(dim >= -nd && dim < nd, Status::kBadParam,
            std::string(op) + ": dim " + std::to_string(dim) + " is out of range for " + d.str() + " (expected [" +
                std::to_string(-nd) + ", " + std::to_string(nd - 1) + "])");
  *out = dim < 0 ? dim + nd : dim;
  return Status::kSuccess;
}

std::pair<int, int> group_softmax_views(std::vector<TensorView*> views, int dim) {
  for (TensorView* v : views) {
    if (v->ndim == 0) v->ndim = 1, v->dims[0] = 1, v->strides[0] = 1;
  }
  const int nd = views.front()->ndim;
  const std::vector<int> starts = coalesce_groups(views, {0, dim, dim + 1, nd});
  return {starts[1], starts[2]};
}

const char* softmax_op_name(SoftmaxMode mode, bool backward) {
  if (mode == SoftmaxMode::kSoftmax) return backward ? "softmax_backward" : "softmax_forward";
  return backward ? "log_softmax_backward" : "log_softmax_forward";
}

}  // namespace mlusim::mlu::nn
