// ATen NN kernels over libmlu: softmax, nll loss, pooling, batch/layer norm, dropout.
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {}

}  // namespace mlusim::bridge::ops
