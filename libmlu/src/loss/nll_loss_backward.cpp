// nll_loss_backward: a BLOCK kernel over tiles of samples. Each tile's region of grad_input
// (its samples x every class) is zero-filled by stores that re-read one zeroed NRAM buffer, then
// each counted sample's value -w * g is scattered with a single-element DMA, after the fill has
// landed. g is grad_output per sample (kNone), or the scalar grad_output (kSum) divided by
// total_weight (kMean), computed on the VFU from the two device scalars.
#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "loss/nll_common.h"
#include "softmax/pipeline.h"
#include "softmax/reduction_tiling.h"

namespace mlusim::mlu {
namespace {

using namespace nn;
using sim::Addr;
using sim::DType;
using sim::Space;
using sim::VecBinaryOp;
using tile::kF32;

// NRAM per sample: 8 (targets) + 4 (weights) + 4 (grad_output / values); plus the zero buffer.
constexpr std::size_t kBytesPerSample = 16;
constexpr std::size_t kZeroBytes = 4096;

struct BackwardArgs {
  NllTargetArgs targets;
  LossReduction reduction = LossReduction::kMean;
  TensorView grad_output, total_weight;  // scalars for kMean / kSum
};

void backward_kernel(const BackwardArgs& a) {
  const NllViews& v = a.targets.views;  // input = grad_input, per_sample = grad_output (kNone)
  const ElementwiseTiling& t = v.tiling;
  const auto maxn = static_cast<std::size_t>(t.max_elements());
  const NllBuffers buf = alloc_nll_buffers(a.targets, maxn);
  const Addr g = dev::alloc(Space::kNram, maxn * 4);
  const Addr zeros = dev::alloc(Space::kNram, kZeroBytes);
  dev::vec_fill(sim::DType::kInt8, zeros, 0.0, kZeroBytes);
  const bool per_sample = a.reduction == LossReduction::kNone;
  // -g for the reductions: -grad_output (/ total_weight), read into a scalar register.
  double neg_g = 0;
  if (!per_sample) {
    const Addr s = dev::alloc(Space::kNram, 8);
    // Each scalar's single element sits at its base address; it lands in the staging byte range.
    for (const auto& [view, at] : {std::pair{&a.grad_output, s}, std::pair{&a.total_weight, s.offset(4)}})
      dev::memcpy_async(at.offset(static_cast<std::int64_t>(4 - view->elem_size())), Addr{Space::kGdram, view->base},
                        view->elem_size(), dev::Dir::kGdram2Nram);
    dev::sync_io();
    widen_f32(a.grad_output.dtype, s, 1);
    widen_f32(a.total_weight.dtype, s.offset(4), 1);
    if (a.reduction == LossReduction::kMean) dev::vec_binary(VecBinaryOp::kDiv, kF32, s, s, s.offset(4), 1);
    neg_g = -static_cast<double>(dev::load(sim::Nram<float>(s.value)));
  }
  const auto es = static_cast<std::int64_t>(v.input.elem_size());
  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.tiles()));
  for (std::size_t tile = range.first; tile < range.second; ++tile) {
    const Box b = t.box(static_cast<std::int64_t>(tile));
    const auto n = static_cast<std::size_t>(b.count(t.ndim));
    Box full = b;
    full.start[t.ndim] = 0, full.extent[t.ndim] = v.classes;
    fill_box_async(v.input_full, full, zeros, kZeroBytes);
    if (per_sample) load_f32_async(v.per_sample, b, g, n);
    const std::vector<CountedSample> counted = read_targets(a.targets, buf, b);  // ends with sync_io
    if (per_sample) {
      widen_f32(v.per_sample.dtype, g, n);
      dev::vec_binary(VecBinaryOp::kMul, kF32, g, g, buf.weights, n);
      dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, g, g, -1.0, n);
    } else {
      dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, g, buf.weights, neg_g, n);
    }
    if (v.input.dtype != DType::kFloat32) dev::vec_cast(v.input.dtype, g, kF32, g, n);
    for (std::size_t i = 0; i < counted.size(); ++i) {
      dev::memcpy_async(Addr{Space::kGdram, v.input.base + static_cast<std::uint64_t>(counted[i].offset)},
                        g.offset(static_cast<std::int64_t>(counted[i].index) * es), static_cast<std::size_t>(es),
                        dev::Dir::kNram2Gdram);
      if ((i + 1) % kGatherBatch == 0) dev::sync_io();
    }
    dev::sync_io();
  }
}

}  // namespace

Status nll_loss_backward(Handle* h, LossReduction reduction, std::int64_t ignore_index, const TensorDesc& grad_output,
                         const void* grad_output_ptr, const TensorDesc& target, const void* target_ptr,
                         const TensorDesc* weight, const void* weight_ptr, const TensorDesc& total_weight,
                         const void* total_weight_ptr, const TensorDesc& grad_input, void* grad_input_ptr) {
  using namespace nn;
  const char* op = "nll_loss_backward";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  NllShape s;
  MLU_RETURN_IF_ERROR(check_nll_common(op, grad_input, target, weight, weight_ptr, reduction, &s));
  MLU_RETURN_IF_ERROR(check_desc(&grad_output, op, "grad_output"));
  MLU_RETURN_IF_ERROR(check_desc(&total_weight, op, "total_weight"));
  MLU_RETURN_IF_ERROR(check_dtype_in(grad_output, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "grad_output"));
  MLU_RETURN_IF_ERROR(check_dtype_in(total_weight, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "total_weight"));
  const bool per_sample = reduction == LossReduction::kNone;
  if (per_sample)
    MLU_RETURN_IF_ERROR(check_same_shape(target, grad_output, op, "target", "grad_output"));
  else
    MLU_CHECK(grad_output.numel() == 1, Status::kBadParam,
              std::string(op) + ": grad_output " + grad_output.str() + " must hold one value");
  MLU_CHECK(total_weight.numel() == 1, Status::kBadParam,
            std::string(op) + ": total_weight " + total_weight.str() + " must hold one value");
  MLU_CHECK(writable(grad_input), Status::kBadParam,
            std::string(op) + ": grad_input " + grad_input.str() + " has a broadcast dim");
  MLU_RETURN_IF_ERROR(check_ptr(grad_output_ptr, grad_output, op, "grad_output"));
  MLU_RETURN_IF_ERROR(check_ptr(target_ptr, target, op, "target"));
  MLU_RETURN_IF_ERROR(check_ptr(total_weight_ptr, total_weight, op, "total_weight"));
  MLU_RETURN_IF_ERROR(check_ptr(grad_input_ptr, grad_input, op, "grad_input"));
  if (grad_input.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }

  BackwardArgs args;
  args.reduction = reduction;
  args.grad_output = make_view(grad_output, grad_output_ptr);
  args.total_weight = make_view(total_weight, total_weight_ptr);
  args.targets.has_weight = weight != nullptr;
  if (weight != nullptr) args.targets.weight = make_view(*weight, weight_ptr);
  args.targets.ignore_index = ignore_index;
  const std::int64_t samples = s.samples();
  const std::int64_t max_tile = std::max<std::int64_t>(
      1, std::min<std::int64_t>(
             static_cast<std::int64_t>((h->nram_bytes() - resident_weight_bytes(h->nram_bytes()) - kZeroBytes - 1024) /
                                       kBytesPerSample),
             std::max<std::int64_t>(256, samples / h->total_cores())));
  args.targets.views = make_nll_views(s, grad_input, grad_input_ptr, target, target_ptr,
                                      per_sample ? &grad_output : nullptr, grad_output_ptr, max_tile);
  MLU_RETURN_IF_ERROR(launch(
      *h, op, [args] { backward_kernel(args); },
      block_dim(*h, static_cast<std::uint64_t>(args.targets.views.tiling.tiles())), cnrtFuncTypeBlock));
  // Minimum traffic: grad_input written once, targets (and per-sample grads, weights) read once.
  const auto n = static_cast<std::uint64_t>(samples);
  std::uint64_t bytes = static_cast<std::uint64_t>(grad_input.numel()) * grad_input.element_size() +
                        n * target.element_size() + grad_output.numel() * grad_output.element_size() +
                        total_weight.element_size();
  if (weight != nullptr) bytes += n * weight->element_size();
  record(*h, op, 0, bytes, 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
