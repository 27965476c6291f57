// ATen convolution kernels over libmlu's conv.h (convolution_overrideable and its backward).
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {}

}  // namespace mlusim::bridge::ops
