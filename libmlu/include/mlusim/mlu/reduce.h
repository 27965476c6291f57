// Reductions with PyTorch semantics over any set of dims of a strided tensor.
//
// dims: indices into x's dims (negative counts from the end, no duplicates); an empty list
// reduces every dim (torch's dim=None). keepdim keeps reduced dims as size 1; y must have
// exactly the resulting dims (any strides). fp16 and bf16 accumulate in fp32; integral sums accumulate
// in int32 (wrapping; int64 inputs are narrowed with the range check) and are widened to y.
//
// Kernels: the reduced dims that are innermost in memory are reduced row-wise on the VFU
// (vec_reduce per row); reduced dims outside a contiguous kept dim are reduced column-wise
// (tree of contiguous-half VFU ops), so neither layout needs a transpose. When there are fewer
// independent outputs than cores, the reduced extent is split across cores (per-core partials
// in the workspace, then a combine kernel). Empty reductions give torch's identity (sum 0,
// prod 1, norm 0, mean/var NaN); max/min/argmax of an empty reduction fail with kBadParam.
//
// Every entry point takes a workspace; get_reduce_workspace_size gives an upper bound valid for
// every reduction of x over those dims (pass 0 / nullptr when it returns 0).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

Status get_reduce_workspace_size(Handle* h, const TensorDesc& x, const std::vector<int>& dims, std::size_t* bytes);

enum class ReduceOp : std::uint8_t {
  kSum,
  kMean,  // floating x only (torch)
  kProd,
  kAmax,  // max values over the dims, NaN-propagating (torch.amax)
  kAmin,
};

Status reduce(Handle* h, ReduceOp op, const TensorDesc& x, const void* x_ptr, const std::vector<int>& dims,
              bool keepdim, const TensorDesc& y, void* y_ptr, void* workspace, std::size_t workspace_bytes);

enum class Extreme : std::uint8_t { kMax, kMin };

// torch.max(x, dim) / torch.min(x, dim): values (x's dtype) and the index of the first extreme
// along dim (int64 or int32); a NaN is the extreme (its first index), as torch.
Status reduce_with_indices(Handle* h, Extreme which, const TensorDesc& x, const void* x_ptr, int dim, bool keepdim,
                           const TensorDesc& values, void* values_ptr, const TensorDesc& indices, void* indices_ptr,
                           void* workspace, std::size_t workspace_bytes);

// torch.argmax / argmin. No dim: x is flattened in row-major order (indices into the flattened
// tensor; keepdim then keeps every dim as 1).
Status arg_reduce(Handle* h, Extreme which, const TensorDesc& x, const void* x_ptr, std::optional<int> dim,
                  bool keepdim, const TensorDesc& indices, void* indices_ptr, void* workspace,
                  std::size_t workspace_bytes);

// torch.var / torch.std (take_sqrt) with `correction` (1 = unbiased, torch's default): sum((x -
// mean)^2) / max(0, N - correction), two passes (mean, then squared deviations). `mean`, when
// not null, receives the mean too (torch.var_mean / std_mean).
Status var(Handle* h, const TensorDesc& x, const void* x_ptr, const std::vector<int>& dims, double correction,
           bool keepdim, bool take_sqrt, const TensorDesc& y, void* y_ptr, const TensorDesc* mean, void* mean_ptr,
           void* workspace, std::size_t workspace_bytes);

// torch.linalg.vector_norm: p = 2 (sqrt of the sum of squares), 1, inf (max |x|), -inf (min |x|),
// 0 (count of non-zeros), any other p: (sum |x|^p)^(1/p). Floating x.
Status norm(Handle* h, const TensorDesc& x, const void* x_ptr, double p, const std::vector<int>& dims, bool keepdim,
            const TensorDesc& y, void* y_ptr, void* workspace, std::size_t workspace_bytes);

}  // namespace mlusim::mlu
