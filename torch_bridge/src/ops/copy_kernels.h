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

// Copies copy_strided cannot do in one libmlu call (copy_compositions.cpp): a uint8 / int16 side
// converting to or from another dtype, or a source whose elements overlap (an as_strided view).
// copy_needs_composition says whether src -> dst is one; copy_composed performs it from device
// kernels (programs, index_select, copy_strided_kernel) as part of op `op`.
bool copy_needs_composition(const at::Tensor& src, const at::Tensor& dst);
void copy_composed(const at::Tensor& src, const at::Tensor& dst, const char* op);
// Whether two indices of `t` reach the same element (stride-0 broadcast dims aside).
bool overlaps_itself(const at::Tensor& t);

// Every element of `self` (any strides; expanded dims are written once) = value, converted as
// fill_ converts (libmlu fill; for dtypes libmlu lacks, one element uploaded and broadcast).
void fill_kernel(const at::Tensor& self, const at::Scalar& value, const char* op);

}  // namespace mlusim::bridge::ops
