// What the batch norm entry points share: argument checks and the views. Statistics are per
// channel over the batch and spatial dims, so the views are permuted to make the channel a tile
// axis of a ReductionTiling:
//   channel-major memory (NCHW with spatial size > 1): [C | N, spatial...]  -> row mode, each
//     channel's N x spatial values contiguous-ish rows (DMA segments of the spatial extent);
//   channel-last memory ([N,C] contiguous, NHWC): [ | N, spatial... | C]  -> columns mode,
//     channels contiguous across the tile (DMA segments of many channels).
// Per-channel tensors ([C]: weight, bias, running and saved statistics, their gradients) become
// views over the same dims with stride 0 off the channel dim, so one stats box addresses them.
#pragma once

#include <cstdint>

#include "mlusim/mlu/norm.h"
#include "softmax/reduction_tiling.h"
#include "softmax/tensor_view.h"

namespace mlusim::mlu::nn {

struct BatchNormShape {
  int channel_dim = 1;  // 1, or 3 for kNHWC descriptors
  std::int64_t channels = 0;
  std::int64_t per_channel = 0;  // M = N x spatial values per channel
  std::vector<int> order;        // permutation of x's dims for the views
  int r_begin = 0, r_end = 0;    // the reduced dims' range in the permuted order (before coalescing)
};

// x: fp32/fp16, >= 2 dims; picks the view order from x's strides.
Status check_batch_norm_input(const char* op, const TensorDesc& x, BatchNormShape* s);
// A per-channel tensor: [C], fp32/fp16 (optional when `d` is null).
Status check_channel_tensor(const char* op, const char* name, const TensorDesc* d, const void* p,
                            const BatchNormShape& s);

TensorView permuted_view(const TensorDesc& d, const void* p, const BatchNormShape& s);
TensorView channel_view(const TensorDesc& d, const void* p, const TensorDesc& x, const BatchNormShape& s);

// Coalesces the views jointly (x-shaped first); returns {r_begin, i_begin} for plan_reduction.
std::pair<int, int> group_batch_norm_views(std::vector<TensorView*> views, const BatchNormShape& s);

}  // namespace mlusim::mlu::nn
