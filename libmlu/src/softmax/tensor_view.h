// A tensor as a kernel addresses it (GDRAM address, dtype, dims, element strides), and the host-side
// coalescing that turns descriptors into the fewest dims, so that kernels move the largest possible
// contiguous segments. Shared by the NN op families (softmax, loss, pool, norm, random).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "mlusim/mlu/tensor.h"
#include "mlusim/sim/dtype.h"

namespace mlusim::mlu::nn {

// Descriptors have at most kMaxDims dims; grouping may add a unit dim per empty group.
constexpr int kMaxViewDims = kMaxDims + 2;

struct TensorView {
  std::uint64_t base = 0;  // GDRAM device address of element [0, ..., 0]
  DType dtype = DType::kFloat32;
  int ndim = 0;
  std::array<std::int64_t, kMaxViewDims> dims{};
  std::array<std::int64_t, kMaxViewDims> strides{};  // in elements; 0 = broadcast

  std::size_t elem_size() const { return sim::dtype_size(dtype); }
  std::int64_t numel() const;
};

TensorView make_view(const TensorDesc& d, const void* ptr);

// A view with `dims` whose dim k reads `d`'s dim map[k] (map[k] < 0: a broadcast dim of stride 0).
// Lets tensors of fewer dims (a [C] weight, a per-row statistic) ride along in joint coalescing.
TensorView make_broadcast_view(const TensorDesc& d, const void* ptr, const std::vector<std::int64_t>& dims,
                               const std::vector<int>& map);

// Views with equal dims, rewritten group by group: group g covers the original dims
// [splits[g], splits[g+1]). Inside a group, size-1 dims are dropped and adjacent dims merge where
// every view is contiguous across the pair (stride[i] == stride[i+1] * dims[i+1]); each group keeps
// at least one dim (size 1 when it had none). Returns the new group starts plus the new ndim.
std::vector<int> coalesce_groups(std::vector<TensorView*> views, const std::vector<int>& splits);

// True when no dim of size > 1 has stride 0 (an output may not write one element twice).
bool writable(const TensorDesc& d);

}  // namespace mlusim::mlu::nn
