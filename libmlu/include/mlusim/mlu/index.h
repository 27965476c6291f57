// Indexing ops with PyTorch semantics: embedding forward/backward, index_select, gather,
// scatter_add, scatter (assign or reduce), cat and nonzero, on strided tensors of any dtype (indices int32 or int64).
//
// Index tensors are read by the kernels themselves (integer data is always computed, also in
// timing-only mode). An index outside [0, size) faults the kernel with a message naming the op,
// the index and the bound ("index_select: index 7 is out of range for dim 0 of size 5"):
// the op returns kSuccess and cnrtQueueSync reports cnrtErrorKernelTrap, as torch raises
// IndexError. Negative indices are out of range (torch's gather/scatter/embedding reject them
// too). int64 indices beyond int32 also fault (they are narrowed for the VFU).
//
// Results that accumulate (embedding backward, scatter_add) are deterministic: each output row
// or line is owned by one task, which applies its updates in index order (torch's CPU order).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

// out[i..., :] = weight[indices[i...], :]. weight [V, D]; out = indices' dims + [D], weight's dtype.
Status embedding_forward(Handle* h, const TensorDesc& weight, const void* weight_ptr, const TensorDesc& indices,
                         const void* indices_ptr, const TensorDesc& out, void* out_ptr);

// grad_weight [V, D] = 0, then grad_weight[indices[i]] += grad_out[i, :] for every position i in
// order, skipping positions whose index is padding_idx. grad_out = indices' dims + [D].
Status embedding_backward(Handle* h, const TensorDesc& grad_out, const void* grad_out_ptr, const TensorDesc& indices,
                          const void* indices_ptr, std::optional<std::int64_t> padding_idx,
                          const TensorDesc& grad_weight, void* grad_weight_ptr);

// y = x.index_select(dim, index): index 1-d (or 0-d), y's dims = x's with dim -> index.numel().
Status index_select(Handle* h, const TensorDesc& x, const void* x_ptr, int dim, const TensorDesc& index,
                    const void* index_ptr, const TensorDesc& y, void* y_ptr);

// y = x.gather(dim, index): y's dims = index's; index.size(d) <= x.size(d) for d != dim.
Status gather(Handle* h, const TensorDesc& x, const void* x_ptr, int dim, const TensorDesc& index,
              const void* index_ptr, const TensorDesc& y, void* y_ptr);

// out = self.scatter_add(dim, index, src): out starts as a copy of self (out may be self: the
// in-place scatter_add_), then out[.., index[i], ..] += src[i] along dim for every element of
// index (src's dims >= index's; self's dims >= index's for d != dim). self, src, out one dtype.
Status scatter_add(Handle* h, const TensorDesc& self, const void* self_ptr, int dim, const TensorDesc& index,
                   const void* index_ptr, const TensorDesc& src, const void* src_ptr, const TensorDesc& out,
                   void* out_ptr);

// How scatter combines an update with the element it lands on: assign (torch's scatter), add,
// multiply, max, min (scatter_reduce's sum, prod, amax, amin; max/min propagate NaN).
enum class ScatterReduce : std::uint8_t { kNone, kAdd, kMul, kMax, kMin };

// out = self.scatter(dim, index, src) with `reduce`: as scatter_add, each line's updates applied
// in index order (with kNone the last update of a position wins, as torch's CPU kernel). src may
// broadcast (stride 0: scatter of a value). kNone also takes bool.
Status scatter(Handle* h, const TensorDesc& self, const void* self_ptr, int dim, const TensorDesc& index,
               const void* index_ptr, const TensorDesc& src, const void* src_ptr, ScatterReduce reduce,
               const TensorDesc& out, void* out_ptr);

// out = torch.cat(inputs, dim): inputs equal to out's dims except along dim, where their sizes
// add up to out's; any strides; dtypes converted to out's. 1-d empty inputs are skipped (torch).
Status cat(Handle* h, const std::vector<const TensorDesc*>& inputs, const std::vector<const void*>& input_ptrs, int dim,
           const TensorDesc& out, void* out_ptr);

// nonzero: the multi-indices of x's nonzero elements (NaN counts as nonzero) in row-major order,
// as torch.nonzero. The result's size depends on the data, so it takes two launches around one
// host read, as CUDA's nonzero synchronises once:
//   nonzero_parts(h, x)                 how many parts x is split into (one task each)
//   nonzero_count(h, x, ptr, counts)    counts[p] = nonzero elements of part p; counts int64 [parts]
//   nonzero_fill(h, x, ptr, offsets, y) y [total, x.ndim()] int64; offsets[p] = counts before p
// x contiguous, any dtype but float64 (kNotSupported); parts are contiguous runs of elements in
// order. Integer and bool data is always computed; floating-point flags are garbage in
// timing-only mode (no arithmetic). An empty x launches nothing: its total is 0.
std::int64_t nonzero_parts(const Handle* h, const TensorDesc& x);
Status nonzero_count(Handle* h, const TensorDesc& x, const void* x_ptr, void* counts_ptr);
Status nonzero_fill(Handle* h, const TensorDesc& x, const void* x_ptr, const std::vector<std::int64_t>& offsets,
                    const TensorDesc& y, void* y_ptr);

}  // namespace mlusim::mlu
