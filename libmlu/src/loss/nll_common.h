// What nll_loss_forward and nll_loss_backward share: the argument checks, the views over
// [sample dims..., class dim] and the kernel step that reads a tile of targets and gathers the
// class weights of its samples.
#pragma once

#include <cstdint>
#include <vector>

#include "mlusim/mlu/loss.h"
#include "softmax/box_copy.h"
#include "softmax/elementwise_tiling.h"

namespace mlusim::mlu::nn {

// The sample dims of an input: [] for [C], [N] for [N,C], [N,d1..] for [N,C,d1..]; the class dim.
struct NllShape {
  std::vector<std::int64_t> sample_dims;
  int class_dim = 0;
  std::int64_t classes = 0;
  std::int64_t samples() const;
};

// input (or grad_input): fp32/fp16, >= 1 dim; target int32/int64 with the sample dims; weight
// optional [C] fp32/fp16.
Status check_nll_common(const char* op, const TensorDesc& input, const TensorDesc& target, const TensorDesc* weight,
                        const void* weight_ptr, LossReduction reduction, NllShape* shape);

// Tensors over the samples, as the kernels address them.
struct NllViews {
  ElementwiseTiling tiling;  // over the sample dims (padded to >= 2)
  TensorView input;          // input (grad_input) at class 0 of each sample
  TensorView target;
  TensorView per_sample;          // output (forward, kNone) or grad_output (backward, kNone)
  TensorView input_full;          // input (grad_input) over [sample dims..., class]
  std::int64_t class_stride = 0;  // elements between classes of one sample
  std::int64_t classes = 0;
};

// Coalesces input, target and (if non-null) the per-sample tensor jointly; tiles of at most
// `max_tile` samples.
NllViews make_nll_views(const NllShape& s, const TensorDesc& input, const void* input_ptr, const TensorDesc& target,
                        const void* target_ptr, const TensorDesc* per_sample, const void* per_sample_ptr,
                        std::int64_t max_tile);

struct NllTargetArgs {
  NllViews views;
  TensorView weight;  // [C] (ndim 1), valid when has_weight
  bool has_weight = false;
  std::int64_t ignore_index = -100;
};

// The per-sample NRAM tiles of one task (each max_tile elements) and what they hold after
// read_targets: targets as int32; weights (fp32, 0 where ignored, 1 where no weight tensor).
// A class weight vector that fits `resident_weight_bytes` is loaded once (as fp32) and read by
// the scalar unit; a larger one is gathered by DMA per sample.
struct NllBuffers {
  sim::Addr targets;        // 8 bytes per sample (int64 lands raw, then narrows in place)
  sim::Addr weights;        // fp32
  sim::Addr class_weights;  // the resident weight vector, fp32 (when resident)
  bool resident = false;
  std::size_t max_tile = 0;
};
NllBuffers alloc_nll_buffers(const NllTargetArgs& a, std::size_t max_tile);

// NRAM a resident class weight vector may take.
std::size_t resident_weight_bytes(std::size_t nram_bytes);

// Single-element DMAs in flight per core at most: they are issued in batches of this many, each
// followed by a sync (a DMA queue depth; it also bounds the fabric's concurrent flows).
constexpr std::size_t kGatherBatch = 16;

// A sample of a tile that counts (its target is not ignore_index): its index in the tile and the
// byte offset of its target class's element from views.input.base.
struct CountedSample {
  std::uint32_t index;
  std::int64_t offset;
};

// Kernel step for box b of the sample tiling: loads and narrows the targets, reads each with the
// scalar unit (a target outside [0, C) that is not ignore_index faults the kernel, like torch's
// check), gathers the class weights by DMA into `weights` as fp32 (0 where ignored; 1/0 when there
// is no weight tensor) and returns the counted samples. Ends synchronised (sync_io).
std::vector<CountedSample> read_targets(const NllTargetArgs& a, const NllBuffers& buf, const Box& b);

}  // namespace mlusim::mlu::nn
