// The host halves of transfers. Implemented in fallback.cpp, the only file of the bridge that
// calls CPU operators: everything here works on CPU tensors (staging host data for a copy).
#pragma once

#include <ATen/core/Tensor.h>

namespace mlusim::bridge::host {

// A CPU tensor with the given sizes and strides (dense) and dtype holding `src` (a CPU tensor,
// broadcast to `sizes` and converted as copy_ converts).
at::Tensor stage(const at::Tensor& src, at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype);
// An uninitialised CPU tensor (sizes, strides, dtype).
at::Tensor empty_strided(at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype);
// The CPU view (sizes, strides, storage_offset) over the storage of CPU tensor `buffer`.
at::Tensor view(const at::Tensor& buffer, at::IntArrayRef sizes, at::IntArrayRef strides, std::int64_t storage_offset);
// dst.copy_(src) for CPU tensors.
void copy(const at::Tensor& dst, const at::Tensor& src);

}  // namespace mlusim::bridge::host
