// Sorting: a stable sort of every row of a contiguous [rows, n] tensor, values and indices, as
// torch.sort(x, dim=-1, descending, stable=True) returns them.
//
// Order: ascending or descending by value; equal values keep their original order (also when
// descending); NaN is larger than every number (last ascending, first descending, as torch sorts
// it); -0.0 equals 0.0. Integers compare exactly (int64 keys must fit int32: the VFU compares
// 32-bit keys, and a larger one faults the kernel, naming the cast).
//
// The kernel is a bitonic sorting network on (key, index) pairs. Float keys are first mapped to
// int32 keys with the same order (NaN made canonical and largest, -0.0 made 0.0, negatives' bits
// reversed), so every compare-exchange is an int32 VFU step: key compare, tie broken by the
// original index, swap mask, selects. A row padded to P (the next power of two) that fits one
// core's NRAM chunk is sorted there (several short rows per chunk); longer rows are sorted in
// chunks first and merged by the network's long-stride stages as passes over pairs of GDRAM tiles
// (one launch per stage), each followed by the short-stride stages within a chunk.
#pragma once

#include <cstddef>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

// GDRAM workspace `sort` needs for x (0 when every row fits one core's NRAM chunk).
std::size_t sort_workspace_bytes(const Handle* h, const TensorDesc& x);

// values[r, :] = x[r, :] sorted, indices[r, i] = the position in row r of values[r, i]. x
// contiguous [rows, n] (a 1-d x is one row) of float32, float16, int32, int64, int8 or bool;
// values contiguous with x's dtype and dims; indices contiguous int64 with x's dims.
Status sort(Handle* h, const TensorDesc& x, const void* x_ptr, bool descending, const TensorDesc& values,
            void* values_ptr, const TensorDesc& indices, void* indices_ptr, void* workspace,
            std::size_t workspace_bytes);

}  // namespace mlusim::mlu
