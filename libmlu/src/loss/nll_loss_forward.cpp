// nll_loss_forward: a BLOCK kernel over tiles of samples, then (kMean/kSum) a one-task kernel
// that combines the per-task partial sums.
//
// Per tile: the targets are loaded and read by the scalar unit; each counted sample's input
// element input[sample, target] and class weight are gathered by single-element DMAs (the loss
// reads only N of the N x C inputs); then on the VFU, in fp32: loss = -(w * x). kNone stores the
// losses; kMean/kSum fold sum(loss) and sum(w) into the task's partials, written to the workspace
// at the end: workspace[task] = {sum loss, sum w}. The final kernel sums the partial rows (ones-row
// matmul) and writes output = sum or sum / sum(w), and total_weight.
#include <algorithm>
#include <string>

#include "mlusim/mlu/elementwise.h"

#include "common/error.h"
#include "common/launch.h"
#include "loss/nll_common.h"
#include "softmax/pipeline.h"
#include "softmax/reduction_tiling.h"
#include "softmax/tile_math.h"

namespace mlusim::mlu {
namespace {

using namespace nn;
using sim::Addr;
using sim::DType;
using sim::Space;
using sim::VecBinaryOp;
using sim::VecReduceOp;
using tile::kF32;

// NRAM per sample: 8 (targets) + 4 (weights) + 4 (gathered inputs / losses); the rest of NRAM
// may hold the class weights.
constexpr std::size_t kBytesPerSample = 16;

struct ForwardArgs {
  NllTargetArgs targets;
  LossReduction reduction = LossReduction::kMean;
  std::uint64_t partials = 0;  // workspace: [task][2] fp32
  TensorView total_weight;     // written 0 by task 0 for kNone
};

void forward_kernel(const ForwardArgs& a) {
  const NllViews& v = a.targets.views;
  const ElementwiseTiling& t = v.tiling;
  const auto maxn = static_cast<std::size_t>(t.max_elements());
  const NllBuffers buf = alloc_nll_buffers(a.targets, maxn);
  const Addr x = dev::alloc(Space::kNram, maxn * 4);
  const Addr acc = dev::alloc(Space::kNram, 2 * 4), part = dev::alloc(Space::kNram, 2 * 4);
  const bool reduce = a.reduction != LossReduction::kNone;
  dev::vec_fill(kF32, acc, 0.0, 2);
  const auto es = static_cast<std::int64_t>(v.input.elem_size());
  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.tiles()));
  for (std::size_t tile = range.first; tile < range.second; ++tile) {
    const Box b = t.box(static_cast<std::int64_t>(tile));
    const auto n = static_cast<std::size_t>(b.count(t.ndim));
    const std::vector<CountedSample> counted = read_targets(a.targets, buf, b);
    // Gather input[sample, target] into the staging part of x (0 for ignored samples).
    const Addr staging = x.offset(static_cast<std::int64_t>(n) * (4 - es));
    dev::vec_fill(v.input.dtype, staging, 0.0, n);
    for (std::size_t i = 0; i < counted.size(); ++i) {
      dev::memcpy_async(staging.offset(static_cast<std::int64_t>(counted[i].index) * es),
                        Addr{Space::kGdram, v.input.base + static_cast<std::uint64_t>(counted[i].offset)},
                        static_cast<std::size_t>(es), dev::Dir::kGdram2Nram);
      if ((i + 1) % kGatherBatch == 0) dev::sync_io();
    }
    dev::sync_io();
    widen_f32(v.input.dtype, x, n);
    // loss = -(w * x); + 0 turns the -0 of ignored samples into torch's +0.
    dev::vec_binary(VecBinaryOp::kMul, kF32, x, x, buf.weights, n);
    dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, x, x, -1.0, n);
    if (!reduce) {
      dev::vec_binary_scalar(VecBinaryOp::kAdd, kF32, x, x, 0.0, n);
      store_f32_async(v.per_sample, b, x, n);
      continue;
    }
    dev::vec_reduce(VecReduceOp::kSum, kF32, part, x, 1, n);
    dev::vec_reduce(VecReduceOp::kSum, kF32, part.offset(4), buf.weights, 1, n);
    dev::vec_binary(VecBinaryOp::kAdd, kF32, acc, acc, part, 2);
  }
  if (reduce) {
    dev::memcpy(Addr{Space::kGdram, a.partials + dev::task_id() * 8}, acc, 8, dev::Dir::kNram2Gdram);
  } else if (dev::task_id() == 0) {
    dev::vec_fill(a.total_weight.dtype, part, 0.0, 1);
    dev::memcpy(Addr{Space::kGdram, a.total_weight.base}, part, a.total_weight.elem_size(), dev::Dir::kNram2Gdram);
  }
  dev::sync_io();
}

struct FinalArgs {
  std::uint64_t partials = 0;
  std::uint32_t tasks = 0;
  bool mean = true;
  TensorView output, total_weight;  // one element each
};

// sums = ones[1, tasks] x partials[tasks, 2]; output = sums[0] (/ sums[1] for the mean).
void final_kernel(const FinalArgs& a) {
  const std::size_t rows = a.tasks;
  const Addr p = dev::alloc(Space::kNram, std::max<std::size_t>(rows, 1) * 8);
  const Addr ones = dev::alloc(Space::kNram, std::max<std::size_t>(rows, 1) * 4);
  const Addr sums = dev::alloc(Space::kNram, 8), out = dev::alloc(Space::kNram, 4), tw = dev::alloc(Space::kNram, 4);
  dev::vec_fill(kF32, ones, 1.0, std::max<std::size_t>(rows, 1));
  dev::memcpy(p, Addr{Space::kGdram, a.partials}, rows * 8, dev::Dir::kGdram2Nram);
  tile::sum_cols(sums, ones, p, rows, 2, false);
  if (a.mean)
    dev::vec_binary(VecBinaryOp::kDiv, kF32, out, sums, sums.offset(4), 1);
  else
    dev::vec_unary(sim::VecUnaryOp::kCopy, kF32, out, sums, 1);
  dev::vec_unary(sim::VecUnaryOp::kCopy, kF32, tw, sums.offset(4), 1);
  if (a.output.dtype != DType::kFloat32) dev::vec_cast(a.output.dtype, out, kF32, out, 1);
  if (a.total_weight.dtype != DType::kFloat32) dev::vec_cast(a.total_weight.dtype, tw, kF32, tw, 1);
  dev::memcpy(Addr{Space::kGdram, a.output.base}, out, a.output.elem_size(), dev::Dir::kNram2Gdram);
  dev::memcpy(Addr{Space::kGdram, a.total_weight.base}, tw, a.total_weight.elem_size(), dev::Dir::kNram2Gdram);
}

}  // namespace

Status get_nll_loss_workspace_size(Handle* h, const TensorDesc& input, LossReduction reduction, std::size_t* bytes) {
  const char* op = "get_nll_loss_workspace_size";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&input, op, "input"));
  MLU_CHECK(bytes != nullptr, Status::kBadParam, std::string(op) + ": bytes is null");
  *bytes = reduction == LossReduction::kNone ? 0 : static_cast<std::size_t>(h->total_cores()) * 8;
  return Status::kSuccess;
}

Status nll_loss_forward(Handle* h, LossReduction reduction, std::int64_t ignore_index, const TensorDesc& input,
                        const void* input_ptr, const TensorDesc& target, const void* target_ptr,
                        const TensorDesc* weight, const void* weight_ptr, void* workspace, std::size_t workspace_bytes,
                        const TensorDesc& output, void* output_ptr, const TensorDesc& total_weight,
                        void* total_weight_ptr) {
  using namespace nn;
  const char* op = "nll_loss_forward";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  NllShape s;
  MLU_RETURN_IF_ERROR(check_nll_common(op, input, target, weight, weight_ptr, reduction, &s));
  MLU_RETURN_IF_ERROR(check_desc(&output, op, "output"));
  MLU_RETURN_IF_ERROR(check_desc(&total_weight, op, "total_weight"));
  MLU_RETURN_IF_ERROR(check_dtype_in(output, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "output"));
  MLU_RETURN_IF_ERROR(check_dtype_in(total_weight, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "total_weight"));
  const bool reduce = reduction != LossReduction::kNone;
  if (reduce)
    MLU_CHECK(output.numel() == 1, Status::kBadParam,
              std::string(op) + ": output " + output.str() + " must hold one value");
  else
    MLU_RETURN_IF_ERROR(check_same_shape(target, output, op, "target", "output"));
  MLU_CHECK(writable(output), Status::kBadParam, std::string(op) + ": output " + output.str() + " has a broadcast dim");
  MLU_CHECK(total_weight.numel() == 1, Status::kBadParam,
            std::string(op) + ": total_weight " + total_weight.str() + " must hold one value");
  MLU_RETURN_IF_ERROR(check_ptr(input_ptr, input, op, "input"));
  MLU_RETURN_IF_ERROR(check_ptr(target_ptr, target, op, "target"));
  MLU_RETURN_IF_ERROR(check_ptr(output_ptr, output, op, "output"));
  MLU_RETURN_IF_ERROR(check_ptr(total_weight_ptr, total_weight, op, "total_weight"));
  std::size_t need = 0;
  MLU_RETURN_IF_ERROR(get_nll_loss_workspace_size(h, input, reduction, &need));
  MLU_CHECK(
      workspace_bytes >= need && (need == 0 || workspace != nullptr), Status::kBadParam,
      std::string(op) + ": workspace of " + std::to_string(workspace_bytes) + " bytes, needs " + std::to_string(need));
  const std::int64_t samples = s.samples();
  if (samples == 0 && !reduce) {
    // Nothing to compute, but total_weight is defined for kNone too (0).
    MLU_RETURN_IF_ERROR(fill(h, 0.0, total_weight, total_weight_ptr));
    record(*h, op, 0, total_weight.element_size(), 0);
    return Status::kSuccess;
  }

  ForwardArgs args;
  args.reduction = reduction;
  args.partials = reinterpret_cast<std::uintptr_t>(workspace);
  args.total_weight = make_view(total_weight, total_weight_ptr);
  args.targets.has_weight = weight != nullptr;
  if (weight != nullptr) args.targets.weight = make_view(*weight, weight_ptr);
  args.targets.ignore_index = ignore_index;
  const std::int64_t max_tile = std::max<std::int64_t>(
      1,
      std::min<std::int64_t>(static_cast<std::int64_t>(
                                 (h->nram_bytes() - resident_weight_bytes(h->nram_bytes()) - 1024) / kBytesPerSample),
                             std::max<std::int64_t>(256, samples / h->total_cores())));
  std::uint32_t kernels = 0;
  std::uint32_t tasks = 0;
  if (samples > 0) {
    args.targets.views =
        make_nll_views(s, input, input_ptr, target, target_ptr, reduce ? nullptr : &output, output_ptr, max_tile);
    const cnrtDim3_t dim = block_dim(*h, static_cast<std::uint64_t>(args.targets.views.tiling.tiles()));
    tasks = dim.x;
    MLU_RETURN_IF_ERROR(launch(
        *h, op, [args] { forward_kernel(args); }, dim, cnrtFuncTypeBlock));
    ++kernels;
  }
  if (reduce) {
    FinalArgs fin{args.partials, tasks, reduction == LossReduction::kMean, make_view(output, output_ptr),
                  args.total_weight};
    MLU_RETURN_IF_ERROR(launch(
        *h, "nll_loss_forward_reduce", [fin] { final_kernel(fin); }, cnrtDim3_t{1, 1, 1}, cnrtFuncTypeBlock));
    ++kernels;
  }
  // Minimum traffic: targets, one input element and weight per sample, the outputs.
  const auto n = static_cast<std::uint64_t>(samples);
  std::uint64_t bytes = n * (target.element_size() + input.element_size()) + output.numel() * output.element_size() +
                        total_weight.element_size();
  if (weight != nullptr) bytes += n * weight->element_size();
  record(*h, op, 0, bytes, kernels);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
