// ATen matrix-multiply kernels over libmlu's gemm.h (mm, addmm, bmm, baddbmm, ...).
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {}

}  // namespace mlusim::bridge::ops
