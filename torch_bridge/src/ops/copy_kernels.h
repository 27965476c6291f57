// The libmlu kernels tensor_ops.cpp needs for copies and fills (implemented in elementwise_ops.cpp,
// where the rest of libmlu's elementwise family is wired up).
#pragma once

#include <ATen/core/Tensor.h>

namespace mlusim::bridge::ops {

// dst = src for two tensors on the same device: any strides, src broadcast to dst's sizes, dtypes
// converted as copy_ converts (libmlu copy_strided). Same-dtype copies of dtypes libmlu lacks
// (uint8, int16, bfloat16) move raw bits. Raises naming `op` for overlapping operands and for
// conversions libmlu cannot do.
void copy_strided_kernel(const at::Tensor& src, const at::Tensor& dst, const char* op);

// Every element of `self` (any strides; expanded dims are written once) = value, converted as
// fill_ converts (libmlu fill; for dtypes libmlu lacks, one element uploaded and broadcast).
void fill_kernel(const at::Tensor& self, const at::Scalar& value, const char* op);

}  // namespace mlusim::bridge::ops
