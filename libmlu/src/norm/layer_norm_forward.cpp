// layer_norm_forward: one BLOCK kernel over row tiles [ob rows, n] (ReductionTiling in row mode).
// Single pass (a row fits NRAM), all fp32 on the VFU:
//   mean = sum(x) / n; c = x - mean (a K=1 matmul add), refined once by sum(c) / n (fp32 x);
//   rstd = rsqrt(sum(c^2) / n + eps);
//   y = c * (rstd (x) w) + 1 (x) b, where (x) is an outer product (one K=1 VFU matmul each),
// so a tile costs about eight passes plus the fp16 casts, and x is read once, y written once.
// weight and bias are loaded once per task. Multi-pass (huge rows): a sum sweep, a centred
// sum-of-squares sweep and a write sweep over chunks of the row.
#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "norm/layer_norm_common.h"
#include "softmax/pipeline.h"

namespace mlusim::mlu {
namespace {

using namespace nn;
using sim::Addr;
using sim::Space;
using sim::VecBinaryOp;
using sim::VecReduceOp;
using sim::VecUnaryOp;
using tile::kF32;

// NRAM: three tile buffers and a scratch tile; weight and bias chunks per pipeline set; ones;
// mean and rstd per set plus five per-row temporaries.
std::size_t forward_footprint(const tile::Shape& s) {
  return 4 * align128(s.count() * 4) + 6 * align128(s.nr * 4) + align128(std::max(s.nr, s.ob) * 4) +
         11 * align128(s.ob * 4);
}

struct ForwardArgs {
  TensorView x, y, w, b, mean, rstd;
  bool has_w = false, has_b = false, has_mean = false, has_rstd = false;
  double eps = 0;
  std::int64_t n = 0;
  ReductionTiling tiling;
};

void forward_kernel(const ForwardArgs& a) {
  const ReductionTiling& t = a.tiling;
  const tile::Shape ms = t.max_shape();
  Addr tiles[kPipelineBuffers], ws[kPipelineBuffers], bs[kPipelineBuffers], means[kPipelineBuffers],
      rstds[kPipelineBuffers];
  for (int k = 0; k < kPipelineBuffers; ++k) {
    tiles[k] = dev::alloc(Space::kNram, ms.count() * 4);
    ws[k] = dev::alloc(Space::kNram, ms.nr * 4);
    bs[k] = dev::alloc(Space::kNram, ms.nr * 4);
    means[k] = dev::alloc(Space::kNram, ms.ob * 4);
    rstds[k] = dev::alloc(Space::kNram, ms.ob * 4);
  }
  const Addr scratch = dev::alloc(Space::kNram, ms.count() * 4);
  const std::size_t ones_n = std::max(ms.nr, ms.ob);
  const Addr ones = dev::alloc(Space::kNram, ones_n * 4);
  const Addr acc = dev::alloc(Space::kNram, ms.ob * 4), part = dev::alloc(Space::kNram, ms.ob * 4);
  const Addr neg_mean = dev::alloc(Space::kNram, ms.ob * 4), rstd = dev::alloc(Space::kNram, ms.ob * 4);
  const Addr shift = dev::alloc(Space::kNram, ms.ob * 4);
  dev::vec_fill(kF32, ones, 1.0, ones_n);
  const double inv_n = 1.0 / static_cast<double>(a.n);

  // Single pass: the whole weight and bias stay resident for the task (set 0's buffers). Their
  // loads fly with the first tile's; the first compute step widens them.
  bool affine_pending = !t.multipass() && (a.has_w || a.has_b);
  if (affine_pending) {
    Box row = t.box(0, 0).box;
    for (int i = 0; i < t.r_begin; ++i) row.start[i] = 0, row.extent[i] = 1;
    if (a.has_w) load_f32_async(a.w, row, ws[0], ms.nr);
    if (a.has_b) load_f32_async(a.b, row, bs[0], ms.nr);
  }

  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.groups()));
  const std::size_t chunks = static_cast<std::size_t>(t.chunks());
  const std::size_t passes = t.multipass() ? 3 : 1;  // statistics sweeps, then the write sweep
  using Step = PassStep;
  const PassSchedule schedule(t, range, passes, dev::task_id(), dev::task_dim());
  const std::size_t steps = schedule.size();
  auto step = [&](std::size_t s) { return schedule.at(s); };
  // The step that writes y (and the statistics) of its group.
  auto writes = [&](const Step& st) { return !t.multipass() || st.pass == 2; };
  auto fold = [&](std::size_t chunk, std::size_t n) {
    if (chunk == 0)
      dev::vec_unary(VecUnaryOp::kCopy, kF32, acc, part, n);
    else
      dev::vec_binary(VecBinaryOp::kAdd, kF32, acc, acc, part, n);
  };
  // y = c * (rstd (x) w) + 1 (x) b for a centred tile c.
  auto scale_shift = [&](const tile::Shape& s, Addr c, Addr w, Addr b) {
    tile::broadcast_rows(scratch, rstd, a.has_w ? w : ones, s.ob, s.nr, false);
    dev::vec_binary(VecBinaryOp::kMul, kF32, c, c, scratch, s.count());
    if (a.has_b) tile::broadcast_cols(c, ones, b, s.ob, s.nr, true);
  };

  run_pipelined(
      steps,
      [&](std::size_t s, int k) {
        const Step st = step(s);
        load_f32_async(a.x, st.tb.box, tiles[k], st.tb.shape.count());
        if (t.multipass() && st.pass == 2) {
          if (a.has_w) load_f32_async(a.w, st.tb.box, ws[k], st.tb.shape.nr);
          if (a.has_b) load_f32_async(a.b, st.tb.box, bs[k], st.tb.shape.nr);
        }
      },
      [&](std::size_t s, int k) {
        const Step st = step(s);
        const tile::Shape& sh = st.tb.shape;
        const Addr x = tiles[k];
        widen_f32(a.x.dtype, x, sh.count());
        if (affine_pending) {
          if (a.has_w) widen_f32(a.w.dtype, ws[0], ms.nr);
          if (a.has_b) widen_f32(a.b.dtype, bs[0], ms.nr);
          affine_pending = false;
        }
        if (!t.multipass()) {
          dev::vec_reduce(VecReduceOp::kSum, kF32, acc, x, sh.ob, sh.nr);
          dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, neg_mean, acc, -inv_n, sh.ob);
          tile::broadcast_rows(x, neg_mean, ones, sh.ob, sh.nr, true);  // c = x - mean
          // Refine: the fp32 mean of a row far from 0 is off by a few ulps of |mean|; sum(c)/n is
          // that error, removed from c and the mean before the variance. (fp16 inputs carry 11
          // bits: their quantisation dwarfs that error, so they skip these two passes.)
          if (a.x.dtype == sim::DType::kFloat32) {
            dev::vec_reduce(VecReduceOp::kSum, kF32, part, x, sh.ob, sh.nr);
            dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, part, part, -inv_n, sh.ob);
            tile::broadcast_rows(x, part, ones, sh.ob, sh.nr, true);
            dev::vec_binary(VecBinaryOp::kAdd, kF32, neg_mean, neg_mean, part, sh.ob);
          }
          dev::vec_reduce(VecReduceOp::kSumSquares, kF32, acc, x, sh.ob, sh.nr);
        } else if (st.pass == 0) {
          dev::vec_reduce(VecReduceOp::kSum, kF32, part, x, sh.ob, sh.nr);
          fold(st.chunk, sh.ob);
          if (st.chunk + 1 == chunks) dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, neg_mean, acc, -inv_n, sh.ob);
          return;
        } else {
          tile::broadcast_rows(x, neg_mean, ones, sh.ob, sh.nr, true);
          if (st.pass == 1) {  // sum(c) (the mean's error) into shift, sum(c^2) into acc
            dev::vec_reduce(VecReduceOp::kSum, kF32, part, x, sh.ob, sh.nr);
            if (st.chunk == 0)
              dev::vec_unary(VecUnaryOp::kCopy, kF32, shift, part, sh.ob);
            else
              dev::vec_binary(VecBinaryOp::kAdd, kF32, shift, shift, part, sh.ob);
            dev::vec_reduce(VecReduceOp::kSumSquares, kF32, part, x, sh.ob, sh.nr);
            fold(st.chunk, sh.ob);
            if (st.chunk + 1 < chunks) return;
            // var = sum(c^2)/n - (sum(c)/n)^2; mean += sum(c)/n
            dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, shift, shift, -inv_n, sh.ob);
            dev::vec_binary(VecBinaryOp::kAdd, kF32, neg_mean, neg_mean, shift, sh.ob);
            dev::vec_binary(VecBinaryOp::kMul, kF32, shift, shift, shift, sh.ob);
            dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, shift, shift, -static_cast<double>(a.n), sh.ob);
            dev::vec_binary(VecBinaryOp::kAdd, kF32, acc, acc, shift, sh.ob);
          }
        }
        if (!t.multipass() || st.pass == 1) {  // rstd = rsqrt(var + eps) from the centred sum of squares
          dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, rstd, acc, inv_n, sh.ob);
          dev::vec_binary_scalar(VecBinaryOp::kAdd, kF32, rstd, rstd, a.eps, sh.ob);
          dev::vec_unary(VecUnaryOp::kRsqrt, kF32, rstd, rstd, sh.ob);
          if (t.multipass()) return;
        }
        if (t.multipass() && a.has_w) widen_f32(a.w.dtype, ws[k], sh.nr);
        if (t.multipass() && a.has_b) widen_f32(a.b.dtype, bs[k], sh.nr);
        scale_shift(sh, x, ws[t.multipass() ? k : 0], bs[t.multipass() ? k : 0]);
        if (a.has_mean) dev::vec_unary(VecUnaryOp::kNeg, kF32, means[k], neg_mean, sh.ob);
        if (a.has_rstd) dev::vec_unary(VecUnaryOp::kCopy, kF32, rstds[k], rstd, sh.ob);
      },
      [&](std::size_t s, int k) {
        const Step st = step(s);
        if (!writes(st)) return;
        store_f32_async(a.y, st.tb.box, tiles[k], st.tb.shape.count());
        if (st.chunk + 1 != chunks) return;
        if (a.has_mean) store_f32_async(a.mean, t.stats_box_of(st.tb.box), means[k], st.tb.shape.ob);
        if (a.has_rstd) store_f32_async(a.rstd, t.stats_box_of(st.tb.box), rstds[k], st.tb.shape.ob);
      });
}

}  // namespace

Status layer_norm_forward(Handle* h, int normalized_ndim, double eps, const TensorDesc& x, const void* x_ptr,
                          const TensorDesc* weight, const void* weight_ptr, const TensorDesc* bias,
                          const void* bias_ptr, const TensorDesc& y, void* y_ptr, const TensorDesc* mean,
                          void* mean_ptr, const TensorDesc* rstd, void* rstd_ptr) {
  using namespace nn;
  const char* op = "layer_norm_forward";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&y, op, "y"));
  MLU_RETURN_IF_ERROR(check_dtype_in(x, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "x"));
  MLU_RETURN_IF_ERROR(check_dtype_in(y, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "y"));
  MLU_RETURN_IF_ERROR(check_same_shape(x, y, op, "x", "y"));
  MLU_CHECK(writable(y), Status::kBadParam, std::string(op) + ": y " + y.str() + " has a broadcast (stride 0) dim");
  // Any finite eps, as torch's layer_norm: a negative one makes rstd NaN where var + eps < 0.
  MLU_CHECK(std::isfinite(eps), Status::kBadParam, std::string(op) + ": eps must be finite");
  LayerNormShape s;
  MLU_RETURN_IF_ERROR(check_layer_norm_shape(op, normalized_ndim, x, &s));
  MLU_RETURN_IF_ERROR(check_affine(op, "weight", weight, weight_ptr, x, s));
  MLU_RETURN_IF_ERROR(check_affine(op, "bias", bias, bias_ptr, x, s));
  MLU_RETURN_IF_ERROR(check_row_stat(op, "mean", mean, mean_ptr, s));
  MLU_RETURN_IF_ERROR(check_row_stat(op, "rstd", rstd, rstd_ptr, s));
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  if (x.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }

  ForwardArgs args;
  args.x = make_view(x, x_ptr);
  args.y = make_view(y, y_ptr);
  args.eps = eps;
  args.n = s.n;
  std::vector<TensorView*> views{&args.x, &args.y};
  std::uint64_t bytes = static_cast<std::uint64_t>(x.numel()) * (x.element_size() + y.element_size());
  // Absent tensors still get a view (of x, never touched) so the joint coalescing is uniform.
  args.has_w = weight != nullptr, args.has_b = bias != nullptr;
  args.has_mean = mean != nullptr, args.has_rstd = rstd != nullptr;
  args.w = args.has_w ? affine_view(*weight, weight_ptr, x, s) : args.x;
  args.b = args.has_b ? affine_view(*bias, bias_ptr, x, s) : args.x;
  args.mean = args.has_mean ? row_stat_view(*mean, mean_ptr, x, s) : args.x;
  args.rstd = args.has_rstd ? row_stat_view(*rstd, rstd_ptr, x, s) : args.x;
  for (TensorView* v : {&args.w, &args.b, &args.mean, &args.rstd}) views.push_back(v);
  if (args.has_w) bytes += static_cast<std::uint64_t>(s.n) * weight->element_size();
  if (args.has_b) bytes += static_cast<std::uint64_t>(s.n) * bias->element_size();
  if (args.has_mean) bytes += static_cast<std::uint64_t>(s.rows) * mean->element_size();
  if (args.has_rstd) bytes += static_cast<std::uint64_t>(s.rows) * rstd->element_size();
  const auto [r_begin, i_begin] = group_layer_norm_views(views, s);
  const auto tiling = plan_reduction(args.x, r_begin, i_begin, h->nram_bytes(), h->total_cores(),
                                     target_tile_elements(x.numel(), h->total_cores()), forward_footprint);
  MLU_CHECK(tiling.has_value(), Status::kNotSupported, std::string(op) + ": NRAM too small for any tile of " + x.str());
  args.tiling = *tiling;
  MLU_RETURN_IF_ERROR(launch(
      *h, op, [args] { forward_kernel(args); }, block_dim(*h, static_cast<std::uint64_t>(args.tiling.groups())),
      cnrtFuncTypeBlock));
  record(*h, op, 0, bytes, 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
