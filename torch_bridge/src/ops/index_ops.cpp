// ATen indexing kernels over libmlu's index.h (index_select, gather, scatter_add, cat, embedding backward).
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {}

}  // namespace mlusim::bridge::ops
