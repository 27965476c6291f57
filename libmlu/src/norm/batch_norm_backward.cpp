// batch_norm_backward: one BLOCK kernel over the forward's channel tiles; each task owns whole
// channels, so dweight and dbias need no cross-core reduction. fp32 on the VFU:
//   xhat = (x - mean) * invstd; dbias = sum(dy); dweight = sum(dy * xhat);
//   training: dx = dy * k - xhat * (dweight * k / M) - dbias * k / M,  k = invstd * w
//   eval:     dx = dy * k (mean, invstd from the running statistics)
// Single pass when a channel block fits NRAM (x and dy read once, dx written once); else a sweep
// for the sums and a sweep for dx.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>

#include "common/error.h"
#include "common/launch.h"
#include "norm/batch_norm_common.h"
#include "norm/batch_norm_split.h"
#include "norm/partial_sum.h"
#include "softmax/pipeline.h"

namespace mlusim::mlu {
namespace {

using namespace nn;
using sim::Addr;
using sim::Space;
using sim::VecBinaryOp;
using sim::VecUnaryOp;
using tile::kF32;

// kSumG, kSumGX: the split's fp32 totals sum(dy), sum(dy * xhat) (inputs of its last stage).
enum Channel { kWeight, kMean, kInvstdOrVar, kDweight, kDbias, kSumG, kSumGX, kChannelTensors };
constexpr int kInputs[] = {kWeight, kMean, kInvstdOrVar, kSumG, kSumGX};

// NRAM: three (x, dy) tile pairs and a scratch tile; per set, five per-channel buffers; five
// per-channel temporaries; ones.
std::size_t backward_footprint(const tile::Shape& s) {
  return 7 * align128(s.count() * 4) + (3 * kChannelTensors + 5) * align128(s.stats() * 4) +
         align128(std::max(s.nr, s.ob) * 4);
}

struct BackwardArgs {
  TensorView x, dy, dx;
  TensorView channel[kChannelTensors];
  bool has[kChannelTensors] = {};
  bool training = true, want_dx = false;
  bool given_sums = false;  // the split's last stage: dx from kSumG / kSumGX, no sums of its own
  double eps = 0;
  std::int64_t m = 0;
  ReductionTiling tiling;
};

void backward_kernel(const BackwardArgs& a) {
  const ReductionTiling& t = a.tiling;
  const tile::Shape ms = t.max_shape();
  const std::size_t ns = ms.stats();
  Addr xs[kPipelineBuffers], gs[kPipelineBuffers], ch[kPipelineBuffers][kChannelTensors];
  for (int k = 0; k < kPipelineBuffers; ++k) {
    xs[k] = dev::alloc(Space::kNram, ms.count() * 4);
    gs[k] = dev::alloc(Space::kNram, ms.count() * 4);
    for (Addr& c : ch[k]) c = dev::alloc(Space::kNram, ns * 4);
  }
  const Addr scratch = dev::alloc(Space::kNram, ms.count() * 4);
  const std::size_t ones_n = std::max(ms.nr, ms.ob);
  const Addr ones = dev::alloc(Space::kNram, ones_n * 4);
  const Addr sum_g = dev::alloc(Space::kNram, ns * 4), sum_gx = dev::alloc(Space::kNram, ns * 4);
  const Addr part = dev::alloc(Space::kNram, ns * 4), tmp = dev::alloc(Space::kNram, ns * 4);
  const Addr invstd = dev::alloc(Space::kNram, ns * 4);
  dev::vec_fill(kF32, ones, 1.0, ones_n);
  const double inv_m = 1.0 / static_cast<double>(a.m);

  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.groups()));
  // Sums are needed for dweight/dbias and for the training dx; multi-pass needs them before dx.
  const bool want_sums = !a.given_sums && (a.has[kDweight] || a.has[kDbias] || (a.training && a.want_dx));
  const std::size_t chunks = static_cast<std::size_t>(t.chunks());
  const std::size_t passes = t.multipass() && a.want_dx && want_sums ? 2 : 1;
  using Step = PassStep;
  const PassSchedule schedule(t, range, passes, dev::task_id(), dev::task_dim());
  const std::size_t steps = schedule.size();
  auto step = [&](std::size_t s) { return schedule.at(s); };
  auto sums_step = [&](const Step& st) { return want_sums && st.pass == 0; };
  auto dx_step = [&](const Step& st) { return a.want_dx && st.pass + 1 == passes; };
  auto fold = [&](Addr into, std::size_t chunk, std::size_t n) {
    if (chunk == 0)
      dev::vec_unary(VecUnaryOp::kCopy, kF32, into, part, n);
    else
      dev::vec_binary(VecBinaryOp::kAdd, kF32, into, into, part, n);
  };

  run_pipelined(
      steps,
      [&](std::size_t s, int k) {
        const Step st = step(s);
        const std::size_t n = st.tb.shape.count();
        load_f32_async(a.x, st.tb.box, xs[k], n);
        load_f32_async(a.dy, st.tb.box, gs[k], n);
        const Box sb = t.stats_box_of(st.tb.box);
        for (int c : kInputs)
          if (a.has[c]) load_f32_async(a.channel[c], sb, ch[k][c], st.tb.shape.stats());
      },
      [&](std::size_t s, int k) {
        const Step st = step(s);
        const tile::Shape& sh = st.tb.shape;
        const std::size_t n = sh.stats(), count = sh.count();
        const Addr x = xs[k], g = gs[k];
        widen_f32(a.x.dtype, x, count);
        widen_f32(a.dy.dtype, g, count);
        for (int c : kInputs)
          if (a.has[c]) widen_f32(a.channel[c].dtype, ch[k][c], n);
        if (a.given_sums) {
          dev::vec_unary(VecUnaryOp::kCopy, kF32, sum_g, ch[k][kSumG], n);
          dev::vec_unary(VecUnaryOp::kCopy, kF32, sum_gx, ch[k][kSumGX], n);
        }
        if (a.training) {
          dev::vec_unary(VecUnaryOp::kCopy, kF32, invstd, ch[k][kInvstdOrVar], n);
        } else {  // invstd from the running variance
          dev::vec_binary_scalar(VecBinaryOp::kAdd, kF32, invstd, ch[k][kInvstdOrVar], a.eps, n);
          dev::vec_unary(VecUnaryOp::kRsqrt, kF32, invstd, invstd, n);
        }
        if (sums_step(st) || (a.training && dx_step(st))) {  // xhat = (x - mean) * invstd
          dev::vec_unary(VecUnaryOp::kNeg, kF32, tmp, ch[k][kMean], n);
          tile::broadcast(sh, x, tmp, ones, true);
          tile::broadcast(sh, scratch, invstd, ones, false);
          dev::vec_binary(VecBinaryOp::kMul, kF32, x, x, scratch, count);
        }
        if (sums_step(st)) {
          tile::reduce_sum(sh, part, g, ones, scratch);
          fold(sum_g, st.chunk, n);
          dev::vec_binary(VecBinaryOp::kMul, kF32, scratch, g, x, count);
          tile::reduce_sum(sh, part, scratch, ones, scratch);
          fold(sum_gx, st.chunk, n);
          if (st.chunk + 1 == chunks) {
            if (a.has[kDweight]) dev::vec_unary(VecUnaryOp::kCopy, kF32, ch[k][kDweight], sum_gx, n);
            if (a.has[kDbias]) dev::vec_unary(VecUnaryOp::kCopy, kF32, ch[k][kDbias], sum_g, n);
          }
        }
        if (!dx_step(st)) return;
        // k = invstd * w; dx = dy * k (- xhat * sum_gx * k / M - sum_g * k / M when training)
        if (a.has[kWeight]) dev::vec_binary(VecBinaryOp::kMul, kF32, invstd, invstd, ch[k][kWeight], n);
        tile::broadcast(sh, scratch, invstd, ones, false);
        dev::vec_binary(VecBinaryOp::kMul, kF32, g, g, scratch, count);
        if (!a.training) return;
        dev::vec_binary(VecBinaryOp::kMul, kF32, tmp, sum_gx, invstd, n);
        dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, tmp, tmp, inv_m, n);
        tile::broadcast(sh, scratch, tmp, ones, false);
        dev::vec_binary(VecBinaryOp::kMul, kF32, scratch, scratch, x, count);
        dev::vec_binary(VecBinaryOp::kSub, kF32, g, g, scratch, count);
        dev::vec_binary(VecBinaryOp::kMul, kF32, tmp, sum_g, invstd, n);
        dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, tmp, tmp, -inv_m, n);
        tile::broadcast(sh, g, tmp, ones, true);
      },
      [&](std::size_t s, int k) {
        const Step st = step(s);
        if (dx_step(st)) store_f32_async(a.dx, st.tb.box, gs[k], st.tb.shape.count());
        if (!sums_step(st) || st.chunk + 1 != chunks) return;
        const Box sb = t.stats_box_of(st.tb.box);
        for (int c : {kDweight, kDbias})
          if (a.has[c]) store_f32_async(a.channel[c], sb, ch[k][c], st.tb.shape.stats());
      });
}

std::optional<ReductionTiling> plan_tiles(Handle* h, const TensorView& x, int r_begin, int i_begin) {
  return plan_batch_norm_tiles(*h, x, r_begin, i_begin, backward_footprint);
}

Status launch_kernel(Handle* h, const char* op, const BackwardArgs& args) {
  return launch(
      *h, op, [args] { backward_kernel(args); }, block_dim(*h, static_cast<std::uint64_t>(args.tiling.groups())),
      cnrtFuncTypeBlock);
}

}  // namespace

Status get_batch_norm_backward_workspace_size(Handle* h, const TensorDesc& x, std::size_t* bytes) {
  return nn::split_workspace_query(h, "get_batch_norm_backward_workspace_size", x, backward_footprint, bytes);
}

Status batch_norm_backward(Handle* h, bool training, double eps, const TensorDesc& dy, const void* dy_ptr,
                           const TensorDesc& x, const void* x_ptr, const TensorDesc* weight, const void* weight_ptr,
                           const TensorDesc& mean, const void* mean_ptr, const TensorDesc& invstd_or_var,
                           const void* invstd_or_var_ptr, const TensorDesc* dx, void* dx_ptr, const TensorDesc* dweight,
                           void* dweight_ptr, const TensorDesc* dbias, void* dbias_ptr, void* workspace,
                           std::size_t workspace_bytes) {
  using namespace nn;
  const char* op = "batch_norm_backward";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&dy, op, "dy"));
  BatchNormShape s;
  MLU_RETURN_IF_ERROR(check_batch_norm_input(op, x, &s));
  MLU_RETURN_IF_ERROR(check_dtype_in(dy, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "dy"));
  MLU_RETURN_IF_ERROR(check_same_shape(x, dy, op, "x", "dy"));
  MLU_CHECK(std::isfinite(eps) && eps >= 0, Status::kBadParam, std::string(op) + ": eps must be finite and >= 0");
  MLU_RETURN_IF_ERROR(check_channel_tensor(op, "weight", weight, weight_ptr, s));
  MLU_RETURN_IF_ERROR(check_channel_tensor(op, "mean", &mean, mean_ptr, s));
  MLU_RETURN_IF_ERROR(check_channel_tensor(op, "invstd_or_var", &invstd_or_var, invstd_or_var_ptr, s));
  MLU_RETURN_IF_ERROR(check_channel_tensor(op, "dweight", dweight, dweight_ptr, s));
  MLU_RETURN_IF_ERROR(check_channel_tensor(op, "dbias", dbias, dbias_ptr, s));
  if (dx != nullptr) {
    MLU_RETURN_IF_ERROR(check_desc(dx, op, "dx"));
    MLU_RETURN_IF_ERROR(check_dtype_in(*dx, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "dx"));
    MLU_RETURN_IF_ERROR(check_same_shape(x, *dx, op, "x", "dx"));
    MLU_RETURN_IF_ERROR(check_ptr(dx_ptr, *dx, op, "dx"));
  }
  for (const TensorDesc* d : {dx, dweight, dbias})
    MLU_CHECK(d == nullptr || writable(*d), Status::kBadParam,
              std::string(op) + ": " + d->str() + " has a broadcast dim");
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(dy_ptr, dy, op, "dy"));
  if (x.numel() == 0 || (dx == nullptr && dweight == nullptr && dbias == nullptr)) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  const std::size_t need = split_workspace_for(*h, x, s, backward_footprint);
  MLU_CHECK(workspace_bytes >= need && (need == 0 || workspace != nullptr), Status::kBadParam,
            std::string(op) + ": workspace of " + std::to_string(workspace_bytes) + " bytes, needs " +
                std::to_string(need) + " (get_batch_norm_backward_workspace_size)");
  BackwardArgs args;
  args.training = training;
  args.want_dx = dx != nullptr;
  args.eps = eps;
  args.m = s.per_channel;
  args.x = permuted_view(x, x_ptr, s);
  args.dy = permuted_view(dy, dy_ptr, s);
  args.dx = dx ? permuted_view(*dx, dx_ptr, s) : args.x;
  std::vector<TensorView*> views{&args.x, &args.dy, &args.dx};
  const TensorDesc* channel[kChannelTensors] = {weight, &mean, &invstd_or_var, dweight, dbias, nullptr, nullptr};
  const void* channel_ptr[kChannelTensors] = {weight_ptr, mean_ptr, invstd_or_var_ptr, dweight_ptr, dbias_ptr,
                                              nullptr,    nullptr};
  std::uint64_t bytes = static_cast<std::uint64_t>(x.numel()) * (x.element_size() + dy.element_size());
  if (dx != nullptr) bytes += static_cast<std::uint64_t>(x.numel()) * dx->element_size();
  // The workspace's fp32 [C] arrays (kSumG, kSumGX: the totals; the slices' sums of dy and of
  // dy * xhat, made [S][C] after the split) ride along as channel views.
  const TensorDesc fp32 = fp32_channels(s.channels);
  TensorView partial_g = channel_view(fp32, nullptr, x, s), partial_gx = partial_g;
  for (int c = 0; c < kChannelTensors; ++c) {
    args.has[c] = channel[c] != nullptr;
    args.channel[c] = args.has[c] ? channel_view(*channel[c], channel_ptr[c], x, s) : args.x;
    if (c == kSumG || c == kSumGX) args.channel[c] = partial_g;
    views.push_back(&args.channel[c]);
    if (args.has[c]) bytes += static_cast<std::uint64_t>(s.channels) * channel[c]->element_size();
  }
  views.push_back(&partial_g), views.push_back(&partial_gx);
  auto [r_begin, i_begin] = group_batch_norm_views(views, s);
  const auto tiling = plan_tiles(h, args.x, r_begin, i_begin);
  MLU_CHECK(tiling.has_value(), Status::kNotSupported, std::string(op) + ": NRAM too small for any tile of " + x.str());
  // Sums are what the split spreads; a backward without them (eval, dx only) is elementwise.
  const bool want_sums = dweight != nullptr || dbias != nullptr || (training && dx != nullptr);
  const std::int64_t slices = want_sums ? choose_slices(*tiling, h->total_cores(), h->nram_bytes(), backward_footprint) : 1;
  if (slices == 1 || workspace == nullptr || workspace_bytes < split_workspace_bytes(slices, s.channels)) {
    args.tiling = *tiling;
    MLU_RETURN_IF_ERROR(launch_kernel(h, op, args));
    record(*h, op, 0, bytes, 1);
    return Status::kSuccess;
  }
  ReductionTiling split;
  MLU_RETURN_IF_ERROR(split_and_plan(*h, op, x, views, slices, backward_footprint, &r_begin, &i_begin, &split));
  const auto ws = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(workspace));
  const std::uint64_t partial = static_cast<std::uint64_t>(slices * s.channels) * 4, total = std::uint64_t(s.channels) * 4;
  partial_g.base = ws, partial_gx.base = ws + partial;
  make_partial(&partial_g, r_begin, s.channels);
  make_partial(&partial_gx, r_begin, s.channels);
  args.channel[kSumG].base = ws + 2 * partial, args.channel[kSumGX].base = ws + 2 * partial + total;

  BackwardArgs sums = args;  // the slices' sum(dy) and sum(dy * xhat)
  sums.tiling = split;
  sums.want_dx = false;
  sums.has[kWeight] = sums.has[kSumG] = sums.has[kSumGX] = false;
  sums.has[kDbias] = sums.has[kDweight] = true;
  sums.channel[kDbias] = partial_g, sums.channel[kDweight] = partial_gx;
  MLU_RETURN_IF_ERROR(launch_kernel(h, op, sums));

  void* const total_g = reinterpret_cast<void*>(static_cast<std::uintptr_t>(args.channel[kSumG].base));
  void* const total_gx = reinterpret_cast<void*>(static_cast<std::uintptr_t>(args.channel[kSumGX].base));
  const void* const pg = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(partial_g.base));
  const void* const pgx = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(partial_gx.base));
  std::vector<PartialSum> reduce;
  if (dx != nullptr && training) reduce.push_back({pg, slices, &fp32, total_g}), reduce.push_back({pgx, slices, &fp32, total_gx});
  if (dbias != nullptr) reduce.push_back({pg, slices, dbias, dbias_ptr});
  if (dweight != nullptr) reduce.push_back({pgx, slices, dweight, dweight_ptr});
  MLU_RETURN_IF_ERROR(launch_partial_sums(*h, op, reduce));
  std::uint32_t kernels = 2;
  if (dx != nullptr) {  // dx from the totals
    BackwardArgs grad = args;
    grad.tiling = split;
    grad.given_sums = true;
    grad.has[kDweight] = grad.has[kDbias] = false;
    grad.has[kSumG] = grad.has[kSumGX] = training;
    MLU_RETURN_IF_ERROR(launch_kernel(h, op, grad));
    ++kernels;
  }
  record(*h, op, 0, bytes + 2 * partial * 2 + 2 * total * 2, kernels);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
