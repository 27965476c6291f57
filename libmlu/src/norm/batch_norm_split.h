// A batch norm's per-channel reduction split over cores.
//
// Each task of the batch norm kernels owns whole channel groups (batch_norm_common.h), so a
// tensor with few groups leaves cores idle, and a group whose N x spatial values do not fit NRAM
// runs multi-pass on one core: a channels-last [8, 64, 56, 56] is one group of 25,088 rows, one
// core sweeping it three times. The split cuts the first reduced dim D (the coalesced N x H x W of
// a channels-last tensor; N in NCHW) into S equal slices and makes S an outer dim of every view,
// so the kernels compute [S, C] partial statistics (fp32, dense [S][C] in the op's workspace) with
// S x groups tasks' worth of work, and a second stage combines them per channel.
//
// When: the unsplit tiling (`unsplit`) has fewer groups than cores, or tiles narrower than
// min(channels, 64) columns (a channels-last reduction that fits NRAM whole only a column or
// two wide moves 4-byte DMA segments: [1, 64, 112, 112]'s fp32 backward took 5.5 ms on
// mlu370-x4 with one channel per tile), and its busy tasks hold >= 8 Ki values each. S: the smallest
// divisor of D (at most 1024, slices of >= 8 values) that is >= 2, >= the slices whose
// [D / S, min(C, 64)] tile fits NRAM, and >= the slices that give every core a group; none: no
// split. The kernels' tiling then plans the split views as any others.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/tensor.h"
#include "norm/batch_norm_common.h"
#include "softmax/reduction_tiling.h"
#include "softmax/tensor_view.h"

namespace mlusim::mlu::nn {

std::int64_t choose_slices(const ReductionTiling& unsplit, std::uint32_t cores, std::size_t nram_bytes,
                           const NramFootprint& footprint);

// Rewrites `views` (jointly grouped: outer dims [0, r_begin), reduced [r_begin, i_begin)) so the
// first reduced dim becomes [S, D / S], the S dim the last outer dim; returns the new
// {r_begin, i_begin} (each + 1).
std::pair<int, int> split_first_reduced(const std::vector<TensorView*>& views, int r_begin, int i_begin,
                                        std::int64_t slices);

// split_first_reduced on `views` (x's first), then the kernels' tiling of the split x view (op
// names the NRAM error): what both batch norm directions do once they split.
Status split_and_plan(Handle& h, const char* op, const TensorDesc& x, const std::vector<TensorView*>& views,
                      std::int64_t slices, const NramFootprint& footprint, int* r_begin, int* i_begin,
                      ReductionTiling* tiling);

// A dense fp32 [C] descriptor (the workspace's per-channel statistics).
TensorDesc fp32_channels(std::int64_t channels);

// After split_first_reduced: makes `v` (a channel view of a dense fp32 [C] array) address the
// [S][C] partial array at its base: the S dim (index r_begin - 1 of the split views) steps by C.
void make_partial(TensorView* v, int split_r_begin, std::int64_t channels);

// Workspace bytes of a split into S slices: two [S][C] fp32 partial arrays and two [C] fp32 totals.
std::size_t split_workspace_bytes(std::int64_t slices, std::int64_t channels);

// The batch norm kernels' tiling of jointly grouped views (tasks own channel groups).
std::optional<ReductionTiling> plan_batch_norm_tiles(Handle& h, const TensorView& x, int r_begin, int i_begin,
                                                     const NramFootprint& footprint);

// What get_batch_norm_*_workspace_size return: the split's bytes for x's views grouped alone (the
// op's other tensors taken with x's strides), 0 when it does not split. An op whose tensors group
// otherwise and want more runs unsplit.
std::size_t split_workspace_for(Handle& h, const TensorDesc& x, const BatchNormShape& s,
                                const NramFootprint& footprint);
// The whole query, named `op`: checks h, bytes and x, then split_workspace_for (0 for an empty x).
Status split_workspace_query(Handle* h, const char* op, const TensorDesc& x, const NramFootprint& footprint,
                             std::size_t* bytes);

// The forward's second stage, one BLOCK kernel over channel blocks. From the slices' means m_s
// and biased variances v_s (equal counts M / S; Chan et al.'s pairwise combination):
//   mean = sum_s m_s / S,  var = (sum_s v_s + sum_s (m_s - mean)^2) / S  (biased),
//   invstd = rsqrt(var + eps); running stats r = (1 - momentum) r + momentum * stat with the
//   unbiased variance var * M / (M - 1); mean and var also to the fp32 [C] `total_mean`,
//   `total_var` (the normalizing pass's inputs).
struct CombineForward {
  std::uint64_t partial_mean = 0, partial_var = 0;  // [S][C] fp32
  std::uint64_t total_mean = 0, total_var = 0;      // [C] fp32
  std::int64_t slices = 0, channels = 0, m = 0;     // m: values per channel
  double eps = 0, momentum = 0;
  const TensorDesc *running_mean = nullptr, *running_var = nullptr, *save_mean = nullptr, *save_invstd = nullptr;
  // Addresses only (the kernel writes through views, as the batch norm kernels' channel views).
  const void *running_mean_ptr = nullptr, *running_var_ptr = nullptr, *save_mean_ptr = nullptr,
             *save_invstd_ptr = nullptr;
};
Status launch_combine_forward(Handle& h, const char* name, const CombineForward& c);

}  // namespace mlusim::mlu::nn
