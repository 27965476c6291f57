// ATen reduction kernels over libmlu's reduce.h.
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {}

}  // namespace mlusim::bridge::ops
