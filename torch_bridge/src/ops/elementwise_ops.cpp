// ATen elementwise kernels over libmlu's elementwise.h (arithmetic, activations, comparisons, where, clamp, fill, casts, strided copies).
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {}

}  // namespace mlusim::bridge::ops
