// add_layer_norm_forward and rms_norm_forward (fused.h): a residual add and the row
// normalization that follows it (RMS norm also without the add), one BLOCK kernel over row tiles [ob rows, n] (ReductionTiling in
// row mode, as layer_norm_forward), all fp32 on the VFU. Per tile:
//   s = x + r (one vector add; for 16-bit dtypes s is rounded to the dtype and back, so that the
//     statistics see the sum eager's add would store), copied to the sum tile when it is wanted;
//   layer norm: mean = sum(s) / n; c = s - mean (a K=1 matmul add), refined once by sum(c) / n
//     (fp32); rstd = rsqrt(sum(c^2) / n + eps); y = c * (rstd (x) w) + 1 (x) b;
//   rms norm:   rstd = rsqrt(sum(s^2) / n + eps); y = s * (rstd (x) w);
// so x and r are read once and y (and s) written once: the add's DRAM round trip (write s, read
// it back for the norm) is gone. weight and bias are loaded once per task. Single pass only: a row
// must fit NRAM next to its residual and sum tiles (kNotSupported otherwise, naming the row size;
// transformer rows of a few thousand elements fit with room to spare).
#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "mlusim/mlu/fused.h"
#include "norm/layer_norm_common.h"
#include "softmax/pipeline.h"

namespace mlusim::mlu {
namespace {

using namespace nn;
using sim::Addr;
using sim::DType;
using sim::Space;
using sim::VecBinaryOp;
using sim::VecReduceOp;
using sim::VecUnaryOp;
using tile::kF32;

enum class NormKind { kLayer, kRms };

// NRAM: x, residual and sum tiles per pipeline set, a scratch tile; weight and bias (resident);
// ones; mean and rstd per set plus four per-row temporaries.
std::size_t footprint(const tile::Shape& s) {
  return 10 * align128(s.count() * 4) + 2 * align128(s.nr * 4) + align128(std::max(s.nr, s.ob) * 4) +
         10 * align128(s.ob * 4);
}

struct Args {
  NormKind kind = NormKind::kLayer;
  TensorView x, r, sum, y, w, b, mean, rstd;
  bool has_r = false, has_sum = false, has_w = false, has_b = false, has_mean = false, has_rstd = false;
  double eps = 0;
  std::int64_t n = 0;
  ReductionTiling tiling;
};

void kernel(const Args& a) {
  const ReductionTiling& t = a.tiling;
  const tile::Shape ms = t.max_shape();
  Addr xs[kPipelineBuffers], rs[kPipelineBuffers], ss[kPipelineBuffers], means[kPipelineBuffers],
      rstds[kPipelineBuffers];
  for (int k = 0; k < kPipelineBuffers; ++k) {
    xs[k] = dev::alloc(Space::kNram, ms.count() * 4);
    rs[k] = dev::alloc(Space::kNram, ms.count() * 4);
    ss[k] = dev::alloc(Space::kNram, ms.count() * 4);
    means[k] = dev::alloc(Space::kNram, ms.ob * 4);
    rstds[k] = dev::alloc(Space::kNram, ms.ob * 4);
  }
  const Addr scratch = dev::alloc(Space::kNram, ms.count() * 4);
  const Addr w = dev::alloc(Space::kNram, ms.nr * 4), b = dev::alloc(Space::kNram, ms.nr * 4);
  const std::size_t ones_n = std::max(ms.nr, ms.ob);
  const Addr ones = dev::alloc(Space::kNram, ones_n * 4);
  const Addr acc = dev::alloc(Space::kNram, ms.ob * 4), part = dev::alloc(Space::kNram, ms.ob * 4);
  const Addr neg_mean = dev::alloc(Space::kNram, ms.ob * 4), rstd = dev::alloc(Space::kNram, ms.ob * 4);
  dev::vec_fill(kF32, ones, 1.0, ones_n);
  const double inv_n = 1.0 / static_cast<double>(a.n);
  const bool rounds = a.x.dtype != DType::kFloat32;

  // The whole weight and bias stay resident for the task; their loads fly with the first tile's.
  bool affine_pending = a.has_w || a.has_b;
  if (affine_pending) {
    Box row = t.box(0, 0).box;
    for (int i = 0; i < t.r_begin; ++i) row.start[i] = 0, row.extent[i] = 1;
    if (a.has_w) load_f32_async(a.w, row, w, ms.nr);
    if (a.has_b) load_f32_async(a.b, row, b, ms.nr);
  }

  const PassSchedule schedule(t, task_range(static_cast<std::size_t>(t.groups())), 1, dev::task_id(),
                              dev::task_dim());
  run_pipelined(
      schedule.size(),
      [&](std::size_t s, int k) {
        const PassStep st = schedule.at(s);
        load_f32_async(a.x, st.tb.box, xs[k], st.tb.shape.count());
        if (a.has_r) load_f32_async(a.r, st.tb.box, rs[k], st.tb.shape.count());
      },
      [&](std::size_t s, int k) {
        const PassStep st = schedule.at(s);
        const tile::Shape& sh = st.tb.shape;
        const std::size_t count = sh.count();
        const Addr x = xs[k];
        widen_f32(a.x.dtype, x, count);
        if (a.has_r) widen_f32(a.r.dtype, rs[k], count);
        if (affine_pending) {
          if (a.has_w) widen_f32(a.w.dtype, w, ms.nr);
          if (a.has_b) widen_f32(a.b.dtype, b, ms.nr);
          affine_pending = false;
        }
        if (a.has_r) dev::vec_binary(VecBinaryOp::kAdd, kF32, x, x, rs[k], count);  // s = x + r
        if (a.has_r && rounds) {  // s as the dtype holds it: eager's add rounds its result once
          dev::vec_cast(a.x.dtype, scratch, DType::kFloat32, x, count);
          dev::vec_cast(DType::kFloat32, x, a.x.dtype, scratch, count);
        }
        if (a.has_sum) dev::vec_unary(VecUnaryOp::kCopy, kF32, ss[k], x, count);
        if (a.kind == NormKind::kLayer) {
          dev::vec_reduce(VecReduceOp::kSum, kF32, acc, x, sh.ob, sh.nr);
          dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, neg_mean, acc, -inv_n, sh.ob);
          tile::broadcast_rows(x, neg_mean, ones, sh.ob, sh.nr, true);  // c = s - mean
          if (!rounds) {  // the fp32 mean's error, as layer_norm_forward removes it
            dev::vec_reduce(VecReduceOp::kSum, kF32, part, x, sh.ob, sh.nr);
            dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, part, part, -inv_n, sh.ob);
            tile::broadcast_rows(x, part, ones, sh.ob, sh.nr, true);
            dev::vec_binary(VecBinaryOp::kAdd, kF32, neg_mean, neg_mean, part, sh.ob);
          }
        }
        dev::vec_reduce(VecReduceOp::kSumSquares, kF32, acc, x, sh.ob, sh.nr);
        dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, rstd, acc, inv_n, sh.ob);
        dev::vec_binary_scalar(VecBinaryOp::kAdd, kF32, rstd, rstd, a.eps, sh.ob);
        dev::vec_unary(VecUnaryOp::kRsqrt, kF32, rstd, rstd, sh.ob);
        tile::broadcast_rows(scratch, rstd, a.has_w ? w : ones, sh.ob, sh.nr, false);
        dev::vec_binary(VecBinaryOp::kMul, kF32, x, x, scratch, count);
        if (a.has_b) tile::broadcast_cols(x, ones, b, sh.ob, sh.nr, true);
        if (a.has_mean) dev::vec_unary(VecUnaryOp::kNeg, kF32, means[k], neg_mean, sh.ob);
        if (a.has_rstd) dev::vec_unary(VecUnaryOp::kCopy, kF32, rstds[k], rstd, sh.ob);
      },
      [&](std::size_t s, int k) {
        const PassStep st = schedule.at(s);
        const std::size_t count = st.tb.shape.count();
        store_f32_async(a.y, st.tb.box, xs[k], count);
        if (a.has_sum) store_f32_async(a.sum, st.tb.box, ss[k], count);
        if (a.has_mean) store_f32_async(a.mean, t.stats_box_of(st.tb.box), means[k], st.tb.shape.ob);
        if (a.has_rstd) store_f32_async(a.rstd, t.stats_box_of(st.tb.box), rstds[k], st.tb.shape.ob);
      });
}

// The checks and the launch both entry points share; bias / mean only for layer norm.
// r: the residual, null for none (then no sum either).
Status run(Handle* h, const char* op, NormKind kind, int normalized_ndim, double eps, const TensorDesc& x,
           const void* x_ptr, const TensorDesc* r, const void* r_ptr, const TensorDesc* weight, const void* weight_ptr,
           const TensorDesc* bias, const void* bias_ptr, const TensorDesc* sum, void* sum_ptr, const TensorDesc& y,
           void* y_ptr, const TensorDesc* mean, void* mean_ptr, const TensorDesc* rstd, void* rstd_ptr) {
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  const TensorDesc& rd = r ? *r : x;  // the checks below then pass trivially
  for (const auto& [d, name] : {std::pair{&x, "x"}, std::pair{&rd, "residual"}, std::pair{&y, "y"}}) {
    MLU_RETURN_IF_ERROR(check_desc(d, op, name));
    MLU_RETURN_IF_ERROR(check_dtype_in(*d, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, name));
  }
  MLU_CHECK(rd.dtype() == x.dtype() && y.dtype() == x.dtype(), Status::kBadParam,
            std::string(op) + ": x " + x.str() + ", residual " + rd.str() + " and y " + y.str() +
                " must share one dtype");
  MLU_RETURN_IF_ERROR(check_same_shape(x, rd, op, "x", "residual"));
  MLU_RETURN_IF_ERROR(check_same_shape(x, y, op, "x", "y"));
  MLU_CHECK(r || !sum, Status::kBadParam, std::string(op) + ": a sum output needs a residual");
  MLU_CHECK(writable(y), Status::kBadParam, std::string(op) + ": y " + y.str() + " has a broadcast (stride 0) dim");
  if (sum) {
    MLU_RETURN_IF_ERROR(check_desc(sum, op, "sum"));
    MLU_CHECK(sum->dtype() == x.dtype(), Status::kBadParam,
              std::string(op) + ": sum " + sum->str() + " must have x's dtype");
    MLU_RETURN_IF_ERROR(check_same_shape(x, *sum, op, "x", "sum"));
    MLU_CHECK(writable(*sum), Status::kBadParam,
              std::string(op) + ": sum " + sum->str() + " has a broadcast (stride 0) dim");
  }
  MLU_CHECK(std::isfinite(eps), Status::kBadParam, std::string(op) + ": eps must be finite");
  LayerNormShape s;
  MLU_RETURN_IF_ERROR(check_layer_norm_shape(op, normalized_ndim, x, &s));
  MLU_RETURN_IF_ERROR(check_affine(op, "weight", weight, weight_ptr, x, s));
  MLU_RETURN_IF_ERROR(check_affine(op, "bias", bias, bias_ptr, x, s));
  MLU_RETURN_IF_ERROR(check_row_stat(op, "mean", mean, mean_ptr, s));
  MLU_RETURN_IF_ERROR(check_row_stat(op, "rstd", rstd, rstd_ptr, s));
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  if (r) MLU_RETURN_IF_ERROR(check_ptr(r_ptr, *r, op, "residual"));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  if (sum) MLU_RETURN_IF_ERROR(check_ptr(sum_ptr, *sum, op, "sum"));
  if (x.numel() == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }

  Args args;
  args.kind = kind;
  args.x = make_view(x, x_ptr);
  args.has_r = r != nullptr;
  args.r = args.has_r ? make_view(*r, r_ptr) : args.x;
  args.y = make_view(y, y_ptr);
  args.eps = eps;
  args.n = s.n;
  const std::uint64_t es = x.element_size();
  std::uint64_t bytes = static_cast<std::uint64_t>(x.numel()) * (args.has_r ? 3 : 2) * es;  // x, r read; y written
  // Absent tensors still get a view (of x, never touched) so the joint coalescing is uniform.
  args.has_sum = sum != nullptr, args.has_w = weight != nullptr, args.has_b = bias != nullptr;
  args.has_mean = mean != nullptr, args.has_rstd = rstd != nullptr;
  args.sum = args.has_sum ? make_view(*sum, sum_ptr) : args.x;
  args.w = args.has_w ? affine_view(*weight, weight_ptr, x, s) : args.x;
  args.b = args.has_b ? affine_view(*bias, bias_ptr, x, s) : args.x;
  args.mean = args.has_mean ? row_stat_view(*mean, mean_ptr, x, s) : args.x;
  args.rstd = args.has_rstd ? row_stat_view(*rstd, rstd_ptr, x, s) : args.x;
  if (args.has_sum) bytes += static_cast<std::uint64_t>(x.numel()) * es;
  if (args.has_w) bytes += static_cast<std::uint64_t>(s.n) * weight->element_size();
  if (args.has_b) bytes += static_cast<std::uint64_t>(s.n) * bias->element_size();
  if (args.has_mean) bytes += static_cast<std::uint64_t>(s.rows) * mean->element_size();
  if (args.has_rstd) bytes += static_cast<std::uint64_t>(s.rows) * rstd->element_size();
  const auto [r_begin, i_begin] = group_layer_norm_views(
      {&args.x, &args.r, &args.y, &args.sum, &args.w, &args.b, &args.mean, &args.rstd}, s);
  const auto tiling = plan_reduction(args.x, r_begin, i_begin, h->nram_bytes(), h->total_cores(),
                                     target_tile_elements(x.numel(), h->total_cores()), footprint);
  MLU_CHECK(tiling.has_value() && !tiling->multipass(), Status::kNotSupported,
            std::string(op) + ": a row of " + std::to_string(s.n) + " elements of x " + x.str() +
                " does not fit NRAM in one pass (with its residual and sum); use the add and the norm separately");
  args.tiling = *tiling;
  MLU_RETURN_IF_ERROR(launch(
      *h, op, [args] { kernel(args); }, block_dim(*h, static_cast<std::uint64_t>(args.tiling.groups())),
      cnrtFuncTypeBlock));
  record(*h, op, 0, bytes, 1);
  return Status::kSuccess;
}

}  // namespace

Status add_layer_norm_forward(Handle* h, int normalized_ndim, double eps, const TensorDesc& x, const void* x_ptr,
                              const TensorDesc& residual, const void* residual_ptr, const TensorDesc* weight,
                              const void* weight_ptr, const TensorDesc* bias, const void* bias_ptr,
                              const TensorDesc* sum, void* sum_ptr, const TensorDesc& y, void* y_ptr,
                              const TensorDesc* mean, void* mean_ptr, const TensorDesc* rstd, void* rstd_ptr) {
  return run(h, "fused_add_layer_norm", NormKind::kLayer, normalized_ndim, eps, x, x_ptr, &residual, residual_ptr,
             weight, weight_ptr, bias, bias_ptr, sum, sum_ptr, y, y_ptr, mean, mean_ptr, rstd, rstd_ptr);
}

Status rms_norm_forward(Handle* h, int normalized_ndim, double eps, const TensorDesc& x, const void* x_ptr,
                        const TensorDesc* residual, const void* residual_ptr, const TensorDesc* weight,
                        const void* weight_ptr, const TensorDesc* sum, void* sum_ptr, const TensorDesc& y, void* y_ptr,
                        const TensorDesc* rstd, void* rstd_ptr) {
  return run(h, residual ? "fused_add_rms_norm" : "rms_norm", NormKind::kRms, normalized_ndim, eps, x, x_ptr, residual, residual_ptr, weight,
             weight_ptr, nullptr, nullptr, sum, sum_ptr, y, y_ptr, nullptr, nullptr, rstd, rstd_ptr);
}

}  // namespace mlusim::mlu
