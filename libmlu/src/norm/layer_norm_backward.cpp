// layer_norm_backward: a BLOCK kernel over the forward's row tiles, then (for dweight/dbias) a
// partial-sum kernel. Per tile, fp32 on the VFU:
//   r = rstd broadcast; xhat = x * r - mean * rstd  (a multiply and a K=1 matmul add)
//   dweight_partial[j] += sum_r dy * xhat, dbias_partial[j] += sum_r dy   (ones-row matmuls)
//   g = dy * w; a = sum(g); b = sum(g * xhat); dx = g * r - xhat * (b rstd / n) - a rstd / n
// (w broadcast over a tile's rows once per task), about 18 passes per tile with fp16 casts.
// Each task keeps its dweight/dbias partial row in NRAM and writes it to the workspace at the end;
// the second kernel sums the per-task rows. So x and dy are read once and dx written once when a
// row fits NRAM. Multi-pass (huge rows): a sweep for a and b (the partials then live in the
// workspace, read-modify-written per chunk), then a sweep that writes dx.
#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "norm/layer_norm_common.h"
#include "norm/partial_sum.h"
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

// NRAM: three (x, dy) tile pairs, a scratch tile and the rstd and w broadcasts; per set: mean,
// rstd, and row chunks of w and the two partials; resident w and partial rows; ones; four per-row
// temporaries.
std::size_t backward_footprint(const tile::Shape& s) {
  return 9 * align128(s.count() * 4) + 12 * align128(s.nr * 4) + align128(std::max(s.nr, s.ob) * 4) +
         10 * align128(s.ob * 4);
}

struct BackwardArgs {
  TensorView dy, x, mean, rstd, w, dx;
  bool has_w = false, want_dx = false, want_dw = false, want_db = false;
  std::int64_t n = 0;
  std::uint64_t partial_dw = 0, partial_db = 0;  // workspace: [task][n] fp32 each
  ReductionTiling tiling;
};

void backward_kernel(const BackwardArgs& a) {
  const ReductionTiling& t = a.tiling;
  const tile::Shape ms = t.max_shape();
  Addr xs[kPipelineBuffers], gs[kPipelineBuffers], means[kPipelineBuffers], rstds[kPipelineBuffers],
      ws[kPipelineBuffers], pdw[kPipelineBuffers], pdb[kPipelineBuffers];
  for (int k = 0; k < kPipelineBuffers; ++k) {
    xs[k] = dev::alloc(Space::kNram, ms.count() * 4);
    gs[k] = dev::alloc(Space::kNram, ms.count() * 4);
    means[k] = dev::alloc(Space::kNram, ms.ob * 4);
    rstds[k] = dev::alloc(Space::kNram, ms.ob * 4);
    ws[k] = dev::alloc(Space::kNram, ms.nr * 4);
    pdw[k] = dev::alloc(Space::kNram, ms.nr * 4);
    pdb[k] = dev::alloc(Space::kNram, ms.nr * 4);
  }
  const Addr scratch = dev::alloc(Space::kNram, ms.count() * 4);
  const Addr rstd_b = dev::alloc(Space::kNram, ms.count() * 4), w_b = dev::alloc(Space::kNram, ms.count() * 4);
  const std::size_t ones_n = std::max(ms.nr, ms.ob);
  const Addr ones = dev::alloc(Space::kNram, ones_n * 4);
  const Addr row_a = dev::alloc(Space::kNram, ms.ob * 4), row_b = dev::alloc(Space::kNram, ms.ob * 4);
  const Addr part = dev::alloc(Space::kNram, ms.ob * 4), tmp = dev::alloc(Space::kNram, ms.ob * 4);
  dev::vec_fill(kF32, ones, 1.0, ones_n);
  const double inv_n = 1.0 / static_cast<double>(a.n);
  const bool multipass = t.multipass();

  // This task's partial rows in the workspace, as views over x's dims (stride 0 off the row).
  auto partial_view = [&](std::uint64_t base) {
    TensorView v = a.x;
    v.base = base + dev::task_id() * static_cast<std::uint64_t>(a.n) * 4;
    v.dtype = sim::DType::kFloat32;
    std::int64_t stride = 1;
    for (int i = v.ndim - 1; i >= 0; --i) {
      const bool row = i >= t.r_begin && i < t.i_begin;
      v.strides[i] = row ? stride : 0;
      if (row) stride *= v.dims[i];
    }
    return v;
  };
  const TensorView dw_view = partial_view(a.partial_dw), db_view = partial_view(a.partial_db);
  Box row_box = t.box(0, 0).box;  // one whole row (single pass)
  for (int i = 0; i < t.r_begin; ++i) row_box.start[i] = 0, row_box.extent[i] = 1;

  // Single pass: w and the partial rows stay resident (set 0's buffers); w's load flies with the
  // first tile's and the first compute step widens it.
  bool weight_pending = !multipass && a.has_w;
  if (weight_pending) load_f32_async(a.w, row_box, ws[0], ms.nr);
  if (!multipass && a.want_dw) dev::vec_fill(kF32, pdw[0], 0.0, ms.nr);
  if (!multipass && a.want_db) dev::vec_fill(kF32, pdb[0], 0.0, ms.nr);

  const std::pair<std::size_t, std::size_t> range = task_range(static_cast<std::size_t>(t.groups()));
  // Multi-pass keeps two passes even without dx: a workspace chunk is then touched at most every
  // fourth step, after its previous store has retired.
  const std::size_t passes = multipass ? 2 : 1;
  using Step = PassStep;
  const PassSchedule schedule(t, range, passes, dev::task_id(), dev::task_dim());
  const std::size_t steps = schedule.size();
  auto step = [&](std::size_t s) { return schedule.at(s); };
  // In multi-pass, pass 0 read-modify-writes the workspace partials, except on the task's first row.
  auto partials_in_gdram = [&](const Step& st) { return multipass && st.pass == 0; };
  auto first_row = [&](const Step& st) { return st.group == static_cast<std::int64_t>(range.first); };

  auto fold = [&](Addr acc, std::size_t chunk, std::size_t n) {
    if (!multipass || chunk == 0)
      dev::vec_unary(VecUnaryOp::kCopy, kF32, acc, part, n);
    else
      dev::vec_binary(VecBinaryOp::kAdd, kF32, acc, acc, part, n);
  };

  run_pipelined(
      steps,
      [&](std::size_t s, int k) {
        const Step st = step(s);
        if (st.pass == 1 && !a.want_dx) return;
        const std::size_t n = st.tb.shape.count(), nr = st.tb.shape.nr;
        load_f32_async(a.x, st.tb.box, xs[k], n);
        load_f32_async(a.dy, st.tb.box, gs[k], n);
        const Box sb = t.stats_box_of(st.tb.box);
        load_f32_async(a.mean, sb, means[k], st.tb.shape.ob);
        load_f32_async(a.rstd, sb, rstds[k], st.tb.shape.ob);
        if (multipass && a.has_w && a.want_dx) load_f32_async(a.w, st.tb.box, ws[k], nr);
        if (partials_in_gdram(st) && !first_row(st)) {
          if (a.want_dw) load_box_async(dw_view, st.tb.box, pdw[k]);
          if (a.want_db) load_box_async(db_view, st.tb.box, pdb[k]);
        }
      },
      [&](std::size_t s, int k) {
        const Step st = step(s);
        if (st.pass == 1 && !a.want_dx) return;
        const tile::Shape& sh = st.tb.shape;
        const std::size_t n = sh.count();
        const Addr x = xs[k], g = gs[k];
        if (weight_pending) {
          widen_f32(a.w.dtype, ws[0], ms.nr);
          tile::broadcast_cols(w_b, ones, ws[0], ms.ob, ms.nr, false);
          weight_pending = false;
        }
        widen_f32(a.x.dtype, x, n);
        widen_f32(a.dy.dtype, g, n);
        widen_f32(a.mean.dtype, means[k], sh.ob);
        widen_f32(a.rstd.dtype, rstds[k], sh.ob);
        if (multipass && a.has_w && a.want_dx) widen_f32(a.w.dtype, ws[k], sh.nr);
        // r = rstd broadcast over the row (kept for the final scaling); xhat = x * r - mean * rstd.
        tile::broadcast_rows(rstd_b, rstds[k], ones, sh.ob, sh.nr, false);
        dev::vec_binary(VecBinaryOp::kMul, kF32, tmp, means[k], rstds[k], sh.ob);
        dev::vec_unary(VecUnaryOp::kNeg, kF32, tmp, tmp, sh.ob);
        dev::vec_binary(VecBinaryOp::kMul, kF32, x, x, rstd_b, n);
        tile::broadcast_rows(x, tmp, ones, sh.ob, sh.nr, true);
        if (st.pass == 0 && (a.want_dw || a.want_db)) {
          const Addr dw = multipass ? pdw[k] : pdw[0], db = multipass ? pdb[k] : pdb[0];
          const bool accumulate = !(multipass && first_row(st));
          if (a.want_dw) {
            dev::vec_binary(VecBinaryOp::kMul, kF32, scratch, g, x, n);
            tile::sum_cols(dw, ones, scratch, sh.ob, sh.nr, accumulate);
          }
          if (a.want_db) tile::sum_cols(db, ones, g, sh.ob, sh.nr, accumulate);
        }
        if (!a.want_dx) return;
        if (a.has_w) {  // g = dy * w (w broadcast over the rows once per task in single pass)
          if (multipass) tile::broadcast_cols(w_b, ones, ws[k], sh.ob, sh.nr, false);
          dev::vec_binary(VecBinaryOp::kMul, kF32, g, g, w_b, n);
        }
        if (st.pass == 0) {  // a = sum(g), b = sum(g * xhat)
          dev::vec_reduce(VecReduceOp::kSum, kF32, part, g, sh.ob, sh.nr);
          fold(row_a, st.chunk, sh.ob);
          dev::vec_binary(VecBinaryOp::kMul, kF32, scratch, g, x, n);
          dev::vec_reduce(VecReduceOp::kSum, kF32, part, scratch, sh.ob, sh.nr);
          fold(row_b, st.chunk, sh.ob);
          if (multipass) return;
        }
        // dx = (g - a/n - xhat * b/n) * rstd = g * r + xhat * (-b rstd / n) + (-a rstd / n)
        dev::vec_binary(VecBinaryOp::kMul, kF32, g, g, rstd_b, n);
        dev::vec_binary(VecBinaryOp::kMul, kF32, tmp, row_b, rstds[k], sh.ob);
        dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, tmp, tmp, -inv_n, sh.ob);
        tile::broadcast_rows(scratch, tmp, ones, sh.ob, sh.nr, false);
        dev::vec_binary(VecBinaryOp::kMul, kF32, scratch, scratch, x, n);
        dev::vec_binary(VecBinaryOp::kAdd, kF32, g, g, scratch, n);
        dev::vec_binary(VecBinaryOp::kMul, kF32, tmp, row_a, rstds[k], sh.ob);
        dev::vec_binary_scalar(VecBinaryOp::kMul, kF32, tmp, tmp, -inv_n, sh.ob);
        tile::broadcast_rows(g, tmp, ones, sh.ob, sh.nr, true);
      },
      [&](std::size_t s, int k) {
        const Step st = step(s);
        if (a.want_dx && st.pass + 1 == passes) store_f32_async(a.dx, st.tb.box, gs[k], st.tb.shape.count());
        if (partials_in_gdram(st)) {
          if (a.want_dw) store_box_async(dw_view, st.tb.box, pdw[k]);
          if (a.want_db) store_box_async(db_view, st.tb.box, pdb[k]);
        }
      });
  if (!multipass) {
    if (a.want_dw) store_box_async(dw_view, row_box, pdw[0]);
    if (a.want_db) store_box_async(db_view, row_box, pdb[0]);
  }
}

}  // namespace

Status get_layer_norm_backward_workspace_size(Handle* h, int normalized_ndim, const TensorDesc& x, bool want_dweight,
                                              bool want_dbias, std::size_t* bytes) {
  using namespace nn;
  const char* op = "get_layer_norm_backward_workspace_size";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_CHECK(bytes != nullptr, Status::kBadParam, std::string(op) + ": bytes is null");
  LayerNormShape s;
  MLU_RETURN_IF_ERROR(check_layer_norm_shape(op, normalized_ndim, x, &s));
  const std::size_t per = static_cast<std::size_t>(h->total_cores()) * static_cast<std::size_t>(s.n) * 4;
  *bytes = (want_dweight ? per : 0) + (want_dbias ? per : 0);
  return Status::kSuccess;
}

Status layer_norm_backward(Handle* h, int normalized_ndim, const TensorDesc& dy, const void* dy_ptr,
                           const TensorDesc& x, const void* x_ptr, const TensorDesc& mean, const void* mean_ptr,
                           const TensorDesc& rstd, const void* rstd_ptr, const TensorDesc* weight,
                           const void* weight_ptr, void* workspace, std::size_t workspace_bytes, const TensorDesc* dx,
                           void* dx_ptr, const TensorDesc* dweight, void* dweight_ptr, const TensorDesc* dbias,
                           void* dbias_ptr) {
  using namespace nn;
  const char* op = "layer_norm_backward";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&x, op, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&dy, op, "dy"));
  MLU_RETURN_IF_ERROR(check_dtype_in(x, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "x"));
  MLU_RETURN_IF_ERROR(check_dtype_in(dy, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "dy"));
  MLU_RETURN_IF_ERROR(check_same_shape(x, dy, op, "x", "dy"));
  LayerNormShape s;
  MLU_RETURN_IF_ERROR(check_layer_norm_shape(op, normalized_ndim, x, &s));
  MLU_RETURN_IF_ERROR(check_row_stat(op, "mean", &mean, mean_ptr, s));
  MLU_RETURN_IF_ERROR(check_row_stat(op, "rstd", &rstd, rstd_ptr, s));
  MLU_RETURN_IF_ERROR(check_affine(op, "weight", weight, weight_ptr, x, s));
  if (dx != nullptr) {
    MLU_RETURN_IF_ERROR(check_desc(dx, op, "dx"));
    MLU_RETURN_IF_ERROR(check_dtype_in(*dx, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "dx"));
    MLU_RETURN_IF_ERROR(check_same_shape(x, *dx, op, "x", "dx"));
    MLU_CHECK(writable(*dx), Status::kBadParam,
              std::string(op) + ": dx " + dx->str() + " has a broadcast (stride 0) dim");
    MLU_RETURN_IF_ERROR(check_ptr(dx_ptr, *dx, op, "dx"));
  }
  for (const auto& [d, p, name] :
       {std::tuple{dweight, dweight_ptr, "dweight"}, std::tuple{dbias, dbias_ptr, "dbias"}}) {
    if (d == nullptr) continue;
    MLU_RETURN_IF_ERROR(check_affine(op, name, d, p, x, s));
    MLU_CHECK(writable(*d), Status::kBadParam, std::string(op) + ": " + name + " " + d->str() + " has a broadcast dim");
  }
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(dy_ptr, dy, op, "dy"));
  std::size_t need = 0;
  MLU_RETURN_IF_ERROR(
      get_layer_norm_backward_workspace_size(h, normalized_ndim, x, dweight != nullptr, dbias != nullptr, &need));
  MLU_CHECK(
      workspace_bytes >= need && (need == 0 || workspace != nullptr), Status::kBadParam,
      std::string(op) + ": workspace of " + std::to_string(workspace_bytes) + " bytes, needs " + std::to_string(need));
  if (x.numel() == 0 || (dx == nullptr && dweight == nullptr && dbias == nullptr)) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }

  BackwardArgs args;
  args.x = make_view(x, x_ptr);
  args.dy = make_view(dy, dy_ptr);
  args.mean = row_stat_view(mean, mean_ptr, x, s);
  args.rstd = row_stat_view(rstd, rstd_ptr, x, s);
  args.has_w = weight != nullptr;
  args.want_dx = dx != nullptr, args.want_dw = dweight != nullptr, args.want_db = dbias != nullptr;
  args.w = args.has_w ? affine_view(*weight, weight_ptr, x, s) : args.x;
  args.dx = args.want_dx ? make_view(*dx, dx_ptr) : args.x;
  args.n = s.n;
  const std::uint64_t per = static_cast<std::uint64_t>(h->total_cores()) * static_cast<std::uint64_t>(s.n) * 4;
  args.partial_dw = reinterpret_cast<std::uintptr_t>(workspace);
  args.partial_db = args.partial_dw + (args.want_dw ? per : 0);
  const auto [r_begin, i_begin] =
      group_layer_norm_views({&args.x, &args.dy, &args.mean, &args.rstd, &args.w, &args.dx}, s);
  const auto tiling = plan_reduction(args.x, r_begin, i_begin, h->nram_bytes(), h->total_cores(),
                                     target_tile_elements(x.numel(), h->total_cores()), backward_footprint);
  MLU_CHECK(tiling.has_value(), Status::kNotSupported, std::string(op) + ": NRAM too small for any tile of " + x.str());
  args.tiling = *tiling;
  const cnrtDim3_t dim = block_dim(*h, static_cast<std::uint64_t>(args.tiling.groups()));
  MLU_RETURN_IF_ERROR(launch(
      *h, op, [args] { backward_kernel(args); }, dim, cnrtFuncTypeBlock));
  std::vector<PartialSum> sums;
  if (dweight != nullptr) sums.push_back({workspace, dim.x, dweight, dweight_ptr});
  if (dbias != nullptr)
    sums.push_back({reinterpret_cast<void*>(static_cast<std::uintptr_t>(args.partial_db)), dim.x, dbias, dbias_ptr});
  if (!sums.empty()) MLU_RETURN_IF_ERROR(launch_partial_sums(*h, "layer_norm_backward_affine", sums));
  const std::uint32_t kernels = sums.empty() ? 1 : 2;
  const auto n = static_cast<std::uint64_t>(x.numel());
  std::uint64_t bytes = n * (x.element_size() + dy.element_size()) +
                        static_cast<std::uint64_t>(s.rows) * (mean.element_size() + rstd.element_size());
  if (weight != nullptr) bytes += static_cast<std::uint64_t>(s.n) * weight->element_size();
  if (dx != nullptr) bytes += n * dx->element_size();
  if (dweight != nullptr) bytes += static_cast<std::uint64_t>(s.n) * dweight->element_size();
  if (dbias != nullptr) bytes += static_cast<std::uint64_t>(s.n) * dbias->element_size();
  record(*h, op, 0, bytes, kernels);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
