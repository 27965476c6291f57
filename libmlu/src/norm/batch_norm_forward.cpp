// batch_norm_forward_training / _inference: one BLOCK kernel over channel tiles (see
// batch_norm_common.h for the two view orders). Each task owns whole channels, so per-channel
// statistics need no cross-core reduction.
//
// Training, single pass (a channel block's N x spatial values fit NRAM), fp32 on the VFU:
//   mean = sum(x) / M; c = x - mean, refined by sum(c) / M; var = sum(c^2) / M;
//   invstd = rsqrt(var + eps); y = c * (invstd * w) + b (broadcasts are K=1 matmuls);
//   running stats r = (1 - momentum) r + momentum * stat (unbiased variance), in place.
// x is then read once and y written once. Otherwise three sweeps over chunks (sum; centred sums;
// write). Inference: y = x * a + (b - running_mean * a) with a = w * rsqrt(running_var + eps), one
// sweep whatever the size.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>

#include "common/error.h"
#include "common/launch.h"
#include "norm/batch_norm_common.h"
#include "norm/batch_norm_split.h"
#include "softmax/pipeline.h"

namespace mlusim::mlu {
namespace {

using namespace nn;
using sim::Addr;
using sim::Space;
using sim::VecBinaryOp;
using sim::VecUnaryOp;
using tile::kF32;

// Per-channel tensors a step may load or store; `set` holds one buffer set's NRAM addresses.
enum Channel { kWeight, kBias, kRunMean, kRunVar, kSaveMean, kSaveInvstd, kChannelTensors };

// NRAM: three tiles and a scratch tile; per set, the six per-channel buffers; ones; five
// per-channel temporaries.
std::size_t forward_footprint(const tile::Shape& s) {
  return 4 * align128(s.count() * 4) + (3 * kChannelTensors + 5) * align128(s.stats() * 4) +
         align128(std::max(s.nr, s.ob) * 4);
}

struct ForwardArgs {
  TensorView x, y;
  TensorView channel[kChannelTensors];
  bool has[kChannelTensors] = {};
  bool training = true;
  // One slice of a split reduction (batch_norm_split.h): save_mean <- the slice's mean,
  // save_invstd <- its biased variance; no y, no running statistics.
  bool partial = false;
  double eps = 0, momentum = 0;
  std::int64_t m = 0;  // values per channel
  ReductionTiling tiling;
};

void forward_kernel(const ForwardArgs& a) {
  const ReductionTiling& t = a.tiling;
  const tile::Shape ms = t.max_shape();
  const std::size_t ns = ms.stats();
  Addr tiles[kPipelineBuffers], ch[kPipelineBuffers][kChannelTensors];
  for (int k = 0; k < kPipelineBuffers; ++k) {
    tiles[k] = dev::alloc(Space::kNram, ms.count() * 4);
    for (Addr& c : ch[k]) c = dev::alloc(Space::kNram, ns * 4);
  }
  const Addr scratch = dev::alloc(Space::kNram, ms.count() * 4);
  const std::size_t ones_n = std::max(ms.nr, ms.ob);
  const Addr ones = dev::alloc(Space::kNram, ones_n * 4);
  const Addr neg_mean = dev::alloc(Space::kNram, ns * 4), invstd = dev::alloc(Space::kNram, ns * 4);
  const Addr acc = dev::alloc(Space::kNram, ns * 4), acc2 = dev::alloc(Space::kNram, ns * 4);
  const Addr part = dev::alloc(Space::kNram, ns * 4);
  dev::vec_fill(kF32, ones, 1.0, ones_n);
  const double inv_m = 1.0 / static_cast<double>(a.m);

  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.groups()));
  const std::size_t chunks = static_cast<std::size_t>(t.chunks());
  const std::size_t passes = a.training && t.multipass() ? (a.partial ? 2 : 3) : 1;
  using Step = PassStep;
  const PassSchedule schedule(t, range, passes, dev::task_id(), dev::task_dim());
  const std::size_t steps = schedule.size();
  auto step = [&](std::size_t s) { return schedule.at(s); };
  // The step that finishes a group's statistics, and the steps that write y.
  auto stats_step = [&](const Step& st) {
    return a.training && st.chunk + 1 == chunks && st.pass == (passes == 1 ? 0 : 1);
  };
  auto writes = [&](const Step& st) { return !a.partial && st.pass + 1 == passes; };
  // Which per-channel inputs a step reads: weight and bias where it writes y; the running
  // statistics where training updates them (only there, so no load overlaps their store) or,
  // in inference, everywhere.
  auto needs = [&](const Step& st, int c) {
    if (c == kWeight || c == kBias) return writes(st);
    return !a.training || stats_step(st);
  };
  auto fold = [&](Addr into, std::size_t chunk, std::size_t n) {
    if (chunk == 0)
      dev::vec_unary(VecUnaryOp::kCopy, kF32, into, part, n);
    else
      dev::vec_binary(VecBinaryOp::kAdd, kF32, into, into, part, n);
  };

  // From the centred sum of squares in acc: invstd, saved and running statistics (into set k).
  auto finish_stats = [&](const tile::Shape& s, int k) {
    const std::size_t n = s.stats();
    dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, acc, acc, inv_m, n);  // biased variance
    if (a.partial) {
      dev::vec_unary(VecUnaryOp::kNeg, kF32, ch[k][kSaveMean], neg_mean, n);
      dev::vec_unary(VecUnaryOp::kCopy, kF32, ch[k][kSaveInvstd], acc, n);
      return;
    }
    dev::vec_binary_scalar(VecBinaryOp::kAdd, kF32, invstd, acc, a.eps, n);
    dev::vec_unary(VecUnaryOp::kRsqrt, kF32, invstd, invstd, n);
    if (a.has[kSaveMean]) dev::vec_unary(VecUnaryOp::kNeg, kF32, ch[k][kSaveMean], neg_mean, n);
    if (a.has[kSaveInvstd]) dev::vec_unary(VecUnaryOp::kCopy, kF32, ch[k][kSaveInvstd], invstd, n);
    if (a.has[kRunMean]) {
      dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, ch[k][kRunMean], ch[k][kRunMean], 1 - a.momentum, n);
      dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, part, neg_mean, -a.momentum, n);
      dev::vec_binary(VecBinaryOp::kAdd, kF32, ch[k][kRunMean], ch[k][kRunMean], part, n);
    }
    if (a.has[kRunVar]) {  // unbiased: var * M / (M - 1) (M = 1: 0 * inf = NaN, as torch's 0/0)
      const double unbias = static_cast<double>(a.m) / static_cast<double>(a.m - 1);
      dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, ch[k][kRunVar], ch[k][kRunVar], 1 - a.momentum, n);
      dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, part, acc, a.momentum * unbias, n);
      dev::vec_binary(VecBinaryOp::kAdd, kF32, ch[k][kRunVar], ch[k][kRunVar], part, n);
    }
  };
  // y = c * bcast(scale) + bcast(shift) (shift optional).
  auto transform = [&](const tile::Shape& s, Addr c, Addr scale, const Addr* shift) {
    tile::broadcast(s, scratch, scale, ones, false);
    dev::vec_binary(VecBinaryOp::kMul, kF32, c, c, scratch, s.count());
    if (shift) tile::broadcast(s, c, *shift, ones, true);
  };
  auto normalize = [&](const tile::Shape& s, Addr c, int k) {
    if (a.has[kWeight])
      dev::vec_binary(VecBinaryOp::kMul, kF32, part, invstd, ch[k][kWeight], s.stats());
    else
      dev::vec_unary(VecUnaryOp::kCopy, kF32, part, invstd, s.stats());
    transform(s, c, part, a.has[kBias] ? &ch[k][kBias] : nullptr);
  };

  run_pipelined(
      steps,
      [&](std::size_t s, int k) {
        const Step st = step(s);
        load_f32_async(a.x, st.tb.box, tiles[k], st.tb.shape.count());
        const Box sb = t.stats_box_of(st.tb.box);
        for (int c : {kWeight, kBias, kRunMean, kRunVar})
          if (a.has[c] && needs(st, c)) load_f32_async(a.channel[c], sb, ch[k][c], st.tb.shape.stats());
      },
      [&](std::size_t s, int k) {
        const Step st = step(s);
        const tile::Shape& sh = st.tb.shape;
        const std::size_t n = sh.stats();
        const Addr x = tiles[k];
        widen_f32(a.x.dtype, x, sh.count());
        for (int c : {kWeight, kBias, kRunMean, kRunVar})
          if (a.has[c] && needs(st, c)) widen_f32(a.channel[c].dtype, ch[k][c], n);
        if (!a.training) {  // a = w * rsqrt(rv + eps); shift = b - rm * a
          dev::vec_binary_scalar(VecBinaryOp::kAdd, kF32, invstd, ch[k][kRunVar], a.eps, n);
          dev::vec_unary(VecUnaryOp::kRsqrt, kF32, invstd, invstd, n);
          if (a.has[kWeight]) dev::vec_binary(VecBinaryOp::kMul, kF32, invstd, invstd, ch[k][kWeight], n);
          dev::vec_binary(VecBinaryOp::kMul, kF32, part, ch[k][kRunMean], invstd, n);
          if (a.has[kBias])
            dev::vec_binary(VecBinaryOp::kSub, kF32, part, ch[k][kBias], part, n);
          else
            dev::vec_unary(VecUnaryOp::kNeg, kF32, part, part, n);
          transform(sh, x, invstd, &part);
          return;
        }
        if (!t.multipass()) {
          tile::reduce_sum(sh, acc, x, ones, scratch);
          dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, neg_mean, acc, -inv_m, n);
          tile::broadcast(sh, x, neg_mean, ones, true);  // c = x - mean
          // Refine: sum(c) / M is the fp32 mean's error; remove it from c and the mean.
          tile::reduce_sum(sh, part, x, ones, scratch);
          dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, part, part, -inv_m, n);
          tile::broadcast(sh, x, part, ones, true);
          dev::vec_binary(VecBinaryOp::kAdd, kF32, neg_mean, neg_mean, part, n);
          tile::reduce_sum(sh, acc, x, ones, scratch, true);
          finish_stats(sh, k);
          if (!a.partial) normalize(sh, x, k);
          return;
        }
        if (st.pass == 0) {
          tile::reduce_sum(sh, part, x, ones, scratch);
          fold(acc, st.chunk, n);
          if (st.chunk + 1 == chunks) dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, neg_mean, acc, -inv_m, n);
          return;
        }
        tile::broadcast(sh, x, neg_mean, ones, true);  // c = x - mean
        if (st.pass == 2) {
          normalize(sh, x, k);
          return;
        }
        tile::reduce_sum(sh, part, x, ones, scratch);
        fold(acc2, st.chunk, n);
        tile::reduce_sum(sh, part, x, ones, scratch, true);
        fold(acc, st.chunk, n);
        if (st.chunk + 1 < chunks) return;
        // mean += sum(c)/M; sum of squares about the refined mean = sum(c^2) - M (sum(c)/M)^2
        dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, acc2, acc2, -inv_m, n);
        dev::vec_binary(VecBinaryOp::kAdd, kF32, neg_mean, neg_mean, acc2, n);
        dev::vec_binary(VecBinaryOp::kMul, kF32, acc2, acc2, acc2, n);
        dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, acc2, acc2, -static_cast<double>(a.m), n);
        dev::vec_binary(VecBinaryOp::kAdd, kF32, acc, acc, acc2, n);
        finish_stats(sh, k);
      },
      [&](std::size_t s, int k) {
        const Step st = step(s);
        if (writes(st)) store_f32_async(a.y, st.tb.box, tiles[k], st.tb.shape.count());
        if (!stats_step(st)) return;
        const Box sb = t.stats_box_of(st.tb.box);
        for (int c : {kRunMean, kRunVar, kSaveMean, kSaveInvstd})
          if (a.has[c]) store_f32_async(a.channel[c], sb, ch[k][c], st.tb.shape.stats());
      });
}

// The shared prologue of both forwards: x, y, weight, bias.
Status check_forward(const char* op, Handle* h, double eps, const TensorDesc& x, const void* x_ptr,
                     const TensorDesc* weight, const void* weight_ptr, const TensorDesc* bias, const void* bias_ptr,
                     const TensorDesc& y, const void* y_ptr, BatchNormShape* s) {
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&y, op, "y"));
  MLU_RETURN_IF_ERROR(check_batch_norm_input(op, x, s));
  MLU_RETURN_IF_ERROR(check_dtype_in(y, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "y"));
  MLU_RETURN_IF_ERROR(check_same_shape(x, y, op, "x", "y"));
  MLU_CHECK(writable(y), Status::kBadParam, std::string(op) + ": y " + y.str() + " has a broadcast (stride 0) dim");
  MLU_CHECK(std::isfinite(eps) && eps >= 0, Status::kBadParam, std::string(op) + ": eps must be finite and >= 0");
  MLU_RETURN_IF_ERROR(check_channel_tensor(op, "weight", weight, weight_ptr, *s));
  MLU_RETURN_IF_ERROR(check_channel_tensor(op, "bias", bias, bias_ptr, *s));
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  return check_ptr(y_ptr, y, op, "y");
}

std::optional<ReductionTiling> plan_tiles(Handle* h, const TensorView& x, int r_begin, int i_begin) {
  return plan_batch_norm_tiles(*h, x, r_begin, i_begin, forward_footprint);
}

Status launch_kernel(Handle* h, const char* op, const ForwardArgs& args) {
  return launch(
      *h, op, [args] { forward_kernel(args); }, block_dim(*h, static_cast<std::uint64_t>(args.tiling.groups())),
      cnrtFuncTypeBlock);
}

// Builds the views, plans and launches; records the op. Inference and a training forward without
// a split: one kernel. With a split (batch_norm_split.h) both run over [S | D / S] views; training
// then takes three kernels: the slices' statistics into the workspace, their combination (saved
// and running statistics, the fp32 totals), and the inference kernel on the totals, which writes y.
Status launch_forward(Handle* h, const char* op, ForwardArgs args, const TensorDesc& x, const void* x_ptr,
                      const TensorDesc& y, void* y_ptr, const TensorDesc* const channel[kChannelTensors],
                      const void* const channel_ptr[kChannelTensors], const BatchNormShape& s, void* workspace,
                      std::size_t workspace_bytes) {
  args.x = permuted_view(x, x_ptr, s);
  args.y = permuted_view(y, y_ptr, s);
  args.m = s.per_channel;
  std::vector<TensorView*> views{&args.x, &args.y};
  std::uint64_t bytes = static_cast<std::uint64_t>(x.numel()) * (x.element_size() + y.element_size());
  for (int c = 0; c < kChannelTensors; ++c) {
    args.has[c] = channel[c] != nullptr;
    args.channel[c] = args.has[c] ? channel_view(*channel[c], channel_ptr[c], x, s) : args.x;
    views.push_back(&args.channel[c]);
    if (!args.has[c]) continue;
    const bool updated = c == kRunMean || c == kRunVar;  // read and written
    bytes += static_cast<std::uint64_t>(s.channels) * channel[c]->element_size() * (updated && args.training ? 2 : 1);
  }
  // The workspace's fp32 [C] arrays as channel views: slice means and variances (made [S][C]
  // after the split), and the totals.
  const TensorDesc fp32 = fp32_channels(s.channels);
  enum { kPartialMean, kPartialVar, kTotalMean, kTotalVar, kWorkspaceViews };
  TensorView wv[kWorkspaceViews];
  for (TensorView& v : wv) v = channel_view(fp32, nullptr, x, s), views.push_back(&v);
  auto [r_begin, i_begin] = group_batch_norm_views(views, s);
  const auto tiling = plan_tiles(h, args.x, r_begin, i_begin);
  MLU_CHECK(tiling.has_value(), Status::kNotSupported, std::string(op) + ": NRAM too small for any tile of " + x.str());
  const std::int64_t slices = choose_slices(*tiling, h->total_cores(), h->nram_bytes(), forward_footprint);
  const std::size_t need = split_workspace_bytes(slices, s.channels);
  if (slices == 1 || (args.training && (workspace == nullptr || workspace_bytes < need))) {
    args.tiling = *tiling;
    MLU_RETURN_IF_ERROR(launch_kernel(h, op, args));
    record(*h, op, 0, bytes, 1);
    return Status::kSuccess;
  }
  MLU_RETURN_IF_ERROR(split_and_plan(*h, op, x, views, slices, forward_footprint, &r_begin, &i_begin, &args.tiling));
  if (!args.training) {
    MLU_RETURN_IF_ERROR(launch_kernel(h, op, args));
    record(*h, op, 0, bytes, 1);
    return Status::kSuccess;
  }
  const auto ws = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(workspace));
  const std::uint64_t partial = static_cast<std::uint64_t>(slices * s.channels) * 4, total = std::uint64_t(s.channels) * 4;
  wv[kPartialMean].base = ws, wv[kPartialVar].base = ws + partial;
  wv[kTotalMean].base = ws + 2 * partial, wv[kTotalVar].base = ws + 2 * partial + total;
  make_partial(&wv[kPartialMean], r_begin, s.channels);
  make_partial(&wv[kPartialVar], r_begin, s.channels);

  ForwardArgs stats = args;  // the slices' means and biased variances
  stats.partial = true;
  stats.m = s.per_channel / slices;
  for (bool& has : stats.has) has = false;
  stats.has[kSaveMean] = stats.has[kSaveInvstd] = true;
  stats.channel[kSaveMean] = wv[kPartialMean], stats.channel[kSaveInvstd] = wv[kPartialVar];
  MLU_RETURN_IF_ERROR(launch_kernel(h, op, stats));

  CombineForward c;
  c.partial_mean = wv[kPartialMean].base, c.partial_var = wv[kPartialVar].base;
  c.total_mean = wv[kTotalMean].base, c.total_var = wv[kTotalVar].base;
  c.slices = slices, c.channels = s.channels, c.m = s.per_channel;
  c.eps = args.eps, c.momentum = args.momentum;
  c.running_mean = channel[kRunMean], c.running_mean_ptr = channel_ptr[kRunMean];
  c.running_var = channel[kRunVar], c.running_var_ptr = channel_ptr[kRunVar];
  c.save_mean = channel[kSaveMean], c.save_mean_ptr = channel_ptr[kSaveMean];
  c.save_invstd = channel[kSaveInvstd], c.save_invstd_ptr = channel_ptr[kSaveInvstd];
  MLU_RETURN_IF_ERROR(launch_combine_forward(*h, op, c));

  ForwardArgs norm = args;  // y = x * a + (b - mean * a), a = w * rsqrt(var + eps)
  norm.training = false;
  norm.has[kSaveMean] = norm.has[kSaveInvstd] = false;
  norm.has[kRunMean] = norm.has[kRunVar] = true;
  norm.channel[kRunMean] = wv[kTotalMean], norm.channel[kRunVar] = wv[kTotalVar];
  MLU_RETURN_IF_ERROR(launch_kernel(h, op, norm));
  record(*h, op, 0, bytes + 2 * partial * 2 + total * 4, 3);
  return Status::kSuccess;
}

}  // namespace

Status batch_norm_forward_training(Handle* h, double momentum, double eps, const TensorDesc& x, const void* x_ptr,
                                   const TensorDesc* weight, const void* weight_ptr, const TensorDesc* bias,
                                   const void* bias_ptr, const TensorDesc* running_mean, void* running_mean_ptr,
                                   const TensorDesc* running_var, void* running_var_ptr, const TensorDesc& y,
                                   void* y_ptr, const TensorDesc* save_mean, void* save_mean_ptr,
                                   const TensorDesc* save_invstd, void* save_invstd_ptr, void* workspace,
                                   std::size_t workspace_bytes) {
  using namespace nn;
  const char* op = "batch_norm_forward_training";
  BatchNormShape s;
  MLU_RETURN_IF_ERROR(check_forward(op, h, eps, x, x_ptr, weight, weight_ptr, bias, bias_ptr, y, y_ptr, &s));
  MLU_CHECK(std::isfinite(momentum), Status::kBadParam, std::string(op) + ": momentum is not finite");
  MLU_RETURN_IF_ERROR(check_channel_tensor(op, "running_mean", running_mean, running_mean_ptr, s));
  MLU_RETURN_IF_ERROR(check_channel_tensor(op, "running_var", running_var, running_var_ptr, s));
  MLU_RETURN_IF_ERROR(check_channel_tensor(op, "save_mean", save_mean, save_mean_ptr, s));
  MLU_RETURN_IF_ERROR(check_channel_tensor(op, "save_invstd", save_invstd, save_invstd_ptr, s));
  for (const TensorDesc* d : {running_mean, running_var, save_mean, save_invstd})
    MLU_CHECK(d == nullptr || writable(*d), Status::kBadParam,
              std::string(op) + ": " + d->str() + " has a broadcast dim");
  if (x.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  const std::size_t need = split_workspace_for(*h, x, s, forward_footprint);
  MLU_CHECK(workspace_bytes >= need && (need == 0 || workspace != nullptr), Status::kBadParam,
            std::string(op) + ": workspace of " + std::to_string(workspace_bytes) + " bytes, needs " +
                std::to_string(need) + " (get_batch_norm_forward_training_workspace_size)");
  ForwardArgs args;
  args.training = true;
  args.eps = eps;
  args.momentum = momentum;
  const TensorDesc* channel[kChannelTensors] = {weight, bias, running_mean, running_var, save_mean, save_invstd};
  const void* channel_ptr[kChannelTensors] = {weight_ptr,      bias_ptr,      running_mean_ptr,
                                              running_var_ptr, save_mean_ptr, save_invstd_ptr};
  return launch_forward(h, op, args, x, x_ptr, y, y_ptr, channel, channel_ptr, s, workspace, workspace_bytes);
}

Status get_batch_norm_forward_training_workspace_size(Handle* h, const TensorDesc& x, std::size_t* bytes) {
  return nn::split_workspace_query(h, "get_batch_norm_forward_training_workspace_size", x, forward_footprint, bytes);
}

Status batch_norm_forward_inference(Handle* h, double eps, const TensorDesc& x, const void* x_ptr,
                                    const TensorDesc* weight, const void* weight_ptr, const TensorDesc* bias,
                                    const void* bias_ptr, const TensorDesc& running_mean, const void* running_mean_ptr,
                                    const TensorDesc& running_var, const void* running_var_ptr, const TensorDesc& y,
                                    void* y_ptr) {
  using namespace nn;
  const char* op = "batch_norm_forward_inference";
  BatchNormShape s;
  MLU_RETURN_IF_ERROR(check_forward(op, h, eps, x, x_ptr, weight, weight_ptr, bias, bias_ptr, y, y_ptr, &s));
  MLU_RETURN_IF_ERROR(check_channel_tensor(op, "running_mean", &running_mean, running_mean_ptr, s));
  MLU_RETURN_IF_ERROR(check_channel_tensor(op, "running_var", &running_var, running_var_ptr, s));
  if (x.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  ForwardArgs args;
  args.training = false;
  args.eps = eps;
  const TensorDesc* channel[kChannelTensors] = {weight, bias, &running_mean, &running_var, nullptr, nullptr};
  const void* channel_ptr[kChannelTensors] = {weight_ptr,      bias_ptr, running_mean_ptr,
                                              running_var_ptr, nullptr,  nullptr};
  return launch_forward(h, op, args, x, x_ptr, y, y_ptr, channel, channel_ptr, s, nullptr, 0);
}

}  // namespace mlusim::mlu
