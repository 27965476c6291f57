// conv2d_backward_data: dx[n, g*Cg + c, q] = sum over (tap, o) of w[g*OCg + o, c, tap] x
// dy[n, g*OCg + o] at q's mirrored tap, one GEMM per group on the engine: rows = input channels of
// the group, columns = input pixels of all images, depth = (tap, output channel) gathered from dy
// (zero-interleaved first when the convolution is strided). The weights are transposed on the
// device to [Cg][tap][OCg] so the engine's rows are depth-contiguous.
// Channels-innermost operands run the direct NHWC kernel instead (direct_conv.h): the forward
// convolution of dy with the weights' C and OC swapped, taps mirrored, which the kernel stages
// depth-major straight from w (no transposed copy); strided ones as
// one such convolution per output phase with its sub-kernel (backward_data_phases()); a phase no
// tap reaches (kernel < stride) is filled with the bias, or zeros.
#include <algorithm>
#include <memory>
#include <vector>

#include "common/error.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "conv/conv_plan.h"
#include "conv/conv_shape.h"
#include "conv/depthwise.h"
#include "conv/dilate.h"
#include "conv/direct_conv.h"
#include "conv/image_columns.h"
#include "conv/layout_moves.h"
#include "gemm/device_model.h"
#include "gemm/gemm_engine.h"
#include "gemm/matrix_operands.h"
#include "gemm/splitk_reduce.h"
#include "gemm/strided_copy.h"

namespace mlusim::mlu {

using gemm::BatchIndexer;

namespace {

constexpr const char* kOp = "conv2d_backward_data";

struct Setup {
  conv::ConvShape s;
  conv::View4 dxv, wv, dyv;
  bool depthwise = false, strided = false, pack_dy = false, pack_w = false, temp_dx = false;
  bool direct = false;  // the direct NHWC kernel (direct_conv.h) on the mirrored, depth-major weights
  bool concurrent = false;  // its phases with taps in one launch (plan_concurrent_phases)
  bool phased = false;      // its phases with taps as one convolution, each tile's dy loaded once (plan_phased)
  conv::DirectConv united;  // that convolution (DirectConv::phases; bases relative to w and dx)
  conv::DirectPlan united_plan;
  struct Phase {         // one per output phase (one at stride 1), each with its sub-kernel
    conv::DataPhase ph;
    conv::DirectConv dc;
    conv::DirectPlan plan;
    bool whole_rows = false;  // no taps in any phase of rows ry: one fill of their every column
  };
  std::vector<Phase> phases;
  conv::WorkspaceLayout ws;
  std::size_t dy_at = 0, w_at = 0, wt_at = 0, dx_at = 0, splitk_at = 0;
  conv::View4 src;  // what the columns read: dy, its dense copy or its zero-interleaved copy
  conv::ColumnsGeometry cols;
  gemm::GemmProblem problem;
  gemm::GemmPlan plan;
};


// Strided, several phases with taps: each on a share of the clusters in one launch
// (launch_direct_concurrent), shares proportional to the phases' MACs (largest remainder, at least
// one cluster each), when the planner's estimates say the slowest phase on its share beats the
// phases one after the other on every cluster.
void plan_concurrent_phases(const Handle& h, Setup* st) {
  std::vector<Setup::Phase*> taps;
  for (Setup::Phase& r : st->phases)
    if (r.ph.taps_h * r.ph.taps_w > 0) taps.push_back(&r);
  const std::size_t clusters = h.clusters();
  if (taps.size() < 2 || taps.size() > clusters) return;
  auto macs = [](const Setup::Phase* r) { return double(r->ph.out_h * r->ph.out_w * r->ph.taps_h * r->ph.taps_w); };
  double total = 0, sequential = 0;
  for (const Setup::Phase* r : taps) total += macs(r), sequential += r->plan.est_cycles;
  std::vector<std::size_t> share(taps.size(), 1);
  std::vector<double> rest(taps.size());
  std::size_t given = taps.size();
  for (std::size_t i = 0; i < taps.size(); ++i) {
    const double want = double(clusters) * macs(taps[i]) / total;
    const std::size_t whole = std::max<std::size_t>(1, static_cast<std::size_t>(want));
    given += whole - 1, share[i] = whole, rest[i] = want - double(whole);
  }
  while (given > clusters) {  // minimums of one took too many: take back from the largest shares
    const std::size_t i = static_cast<std::size_t>(std::max_element(share.begin(), share.end()) - share.begin());
    --share[i], --given;
  }
  while (given < clusters) {
    const std::size_t i = static_cast<std::size_t>(std::max_element(rest.begin(), rest.end()) - rest.begin());
    ++share[i], ++given, rest[i] -= 1;
  }
  std::vector<conv::DirectPlan> plans;
  double slowest = 0;
  for (std::size_t i = 0; i < taps.size(); ++i) {
    plans.push_back(conv::plan_direct(h, taps[i]->dc, share[i]));
    if (plans.back().rh == 0) return;
    slowest = std::max(slowest, plans.back().est_cycles);
  }
  if (slowest >= sequential) return;
  st->concurrent = true;
  for (std::size_t i = 0; i < taps.size(); ++i) taps[i]->plan = plans[i];
}

// Elements from dx's pixel (0, 0) to the phase's first pixel, and from w's tap (0, 0) to the
// phase's last tap (k0 + stride x (taps - 1) along each axis): its sub-kernel's first, mirrored.
std::int64_t phase_dx_offset(const Setup& st, const conv::DataPhase& ph) {
  return i64(ph.ry) * st.dxv.strides[2] + i64(ph.rx) * st.dxv.strides[3];
}
std::int64_t phase_w_offset(const Setup& st, const conv::DataPhase& ph) {
  const auto& p = st.s.p;
  return i64(ph.k0y + p.stride_h * (ph.taps_h - 1)) * st.wv.strides[2] +
         i64(ph.k0x + p.stride_w * (ph.taps_w - 1)) * st.wv.strides[3];
}

// Strided, several phases with taps: all of them as one convolution (DirectConv::phases), each
// tile of dy loaded once for every phase and every cluster running all phases on its pixels,
// when the planner's estimate beats the phases' launches (concurrent or one after another).
void plan_phased(const Handle& h, Setup* st) {
  std::vector<const Setup::Phase*> taps;
  for (const Setup::Phase& r : st->phases)
    if (r.ph.taps_h * r.ph.taps_w > 0) taps.push_back(&r);
  if (taps.size() < 2) return;
  double separate = 0;  // the phases' launches: the slowest of a concurrent one, else their sum
  for (const Setup::Phase* r : taps)
    separate = st->concurrent ? std::max(separate, r->plan.est_cycles) : separate + r->plan.est_cycles;
  conv::DirectConv u = taps[0]->dc;  // input, channels, weights' channel strides, output spec
  u.out.row_stride = st->s.p.stride_w * st->dxv.strides[3];
  for (const Setup::Phase* r : taps) {
    conv::DirectConv::Phase p;
    p.kh = r->dc.kh, p.kw = r->dc.kw, p.oh = r->dc.oh, p.ow = r->dc.ow, p.pad_h = r->dc.pad_h, p.pad_w = r->dc.pad_w;
    p.ws_kh = r->dc.ws_kh, p.ws_kw = r->dc.ws_kw;
    p.w_off = phase_w_offset(*st, r->ph), p.out_off = phase_dx_offset(*st, r->ph);
    u.phases.push_back(p);
  }
  conv::unite_phases(u);
  const conv::DirectPlan plan = conv::plan_direct(h, u);
  if (plan.rh == 0 || plan.est_cycles >= separate) return;
  st->phased = true, st->united = u, st->united_plan = plan;
}

// `bias` (nullptr: none) is checked; `with_bias` decides the direct kernel's epilogue buffers
// (the workspace query plans with them: an upper bound, the GEMM path needs more than the direct).
Status setup(Handle* h, const ConvParams& p, const TensorDesc& dy, const TensorDesc& w, const TensorDesc* bias,
             bool with_bias, const TensorDesc& dx, std::size_t workspace_limit, Setup* st) {
  MLU_RETURN_IF_ERROR(conv::check_conv(kOp, h, p, dx, "dx", w, "w", dy, "dy", &st->s, &st->dxv, &st->wv, &st->dyv));
  const conv::ConvShape& s = st->s;
  MLU_RETURN_IF_ERROR(conv::check_bias(kOp, bias, s.c, s.dtype));
  const std::size_t es = sim::dtype_size(s.dtype);
  st->depthwise = s.depthwise();
  if (st->depthwise) {
    st->ws.add(conv::depthwise_backward_data_workspace(s));
    return Status::kSuccess;
  }
  if (conv::direct_backward_data_applies(*h, s, st->dyv, st->wv, st->dxv)) {
    const bool strided = s.p.stride_h > 1 || s.p.stride_w > 1;
    bool fits = true;
    const std::vector<conv::DataPhase> phases = conv::backward_data_phases(s);
    for (const conv::DataPhase& ph : phases) {
      Setup::Phase r;
      r.ph = ph;
      if (ph.taps_h * ph.taps_w == 0) {  // filled with the bias (or zeros) at run time
        // Rows whose every phase is tapless (a 1x1 / 2's odd rows) take one fill of whole rows,
        // listed at their first phase: contiguous runs instead of every stride_w-th pixel.
        const auto row_has_taps = [&](const conv::DataPhase& o) { return o.ry == ph.ry && o.taps_h * o.taps_w > 0; };
        r.whole_rows = std::none_of(phases.begin(), phases.end(), row_has_taps);
        if (r.whole_rows && ph.rx > 0) continue;
        if (r.whole_rows) r.ph.out_w = s.w;
        st->phases.push_back(r);
        continue;
      }
      conv::DirectConv& d = r.dc;
      d.dtype = s.dtype;
      d.n = s.n, d.h = s.oh, d.w = s.ow, d.c = s.oc, d.oc = s.c, d.kh = ph.taps_h, d.kw = ph.taps_w;
      d.oh = ph.out_h, d.ow = ph.out_w;
      d.dil_h = static_cast<std::size_t>(s.p.dilation_h), d.dil_w = static_cast<std::size_t>(s.p.dilation_w);
      d.pad_h = ph.pad_h, d.pad_w = ph.pad_w;
      d.xs_n = st->dyv.strides[0], d.xs_h = st->dyv.strides[2], d.xs_w = st->dyv.strides[3];
      // The kernel's output channels are w's C (stride 1: direct_backward_data_applies), its input
      // channels w's OC; the phase's taps k0 + stride x m mirrored, from the last one backwards.
      d.w_k_major = true;
      d.ws_o = st->wv.strides[1], d.ws_c = st->wv.strides[0];
      d.ws_kh = -s.p.stride_h * st->wv.strides[2], d.ws_kw = -s.p.stride_w * st->wv.strides[3];
      d.out.dtype = s.dtype;
      d.out.batch = BatchIndexer{{i64(s.n)}, {st->dxv.strides[0]}};
      d.out.row_stride = ph.out_w > 1 ? s.p.stride_w * st->dxv.strides[3] : s.p.stride_h * st->dxv.strides[2];
      d.out.col_stride = 1;
      d.out.bias = with_bias;
      if (strided) d.out_row_pitch = s.p.stride_h * st->dxv.strides[2];
      r.plan = conv::plan_direct(*h, d);
      fits = fits && r.plan.rh > 0;
      st->phases.push_back(r);
    }
    if (fits) {
      st->direct = true;
      plan_concurrent_phases(*h, st);
      plan_phased(*h, st);
      return Status::kSuccess;
    }
    st->phases.clear();
  }
  st->strided = s.p.stride_h > 1 || s.p.stride_w > 1;
  st->src = st->dyv;
  if (st->strided) {
    st->dy_at = st->ws.add(conv::dilated_bytes(st->dyv, static_cast<std::size_t>(s.p.stride_h),
                                               static_cast<std::size_t>(s.p.stride_w), s.dtype));
    st->src.dims[2] = (st->dyv.h() - 1) * s.p.stride_h + 1;
    st->src.dims[3] = (st->dyv.w() - 1) * s.p.stride_w + 1;
    st->src.strides = conv::dense_strides(st->src.dims);
  } else if (st->dyv.strides[3] != 1 && s.ow > 1) {
    st->pack_dy = true;
    st->dy_at = st->ws.add(s.n * s.oc * s.oh * s.ow * es);
    st->src.strides = conv::dense_strides(st->src.dims);
  }
  // The weights as [G][Cg * taps][OCg]: one transpose of each group's [OCg, Cg * taps] (from a
  // dense copy when (C, KH, KW) do not flatten).
  st->pack_w = !st->wv.rows_dense();
  if (st->pack_w) st->w_at = st->ws.add(s.oc * s.cg * s.taps() * es);
  st->wt_at = st->ws.add(s.oc * s.cg * s.taps() * es);
  st->temp_dx = !st->dxv.plane_dense();
  if (st->temp_dx) st->dx_at = st->ws.add(s.n * s.c * s.h * s.w * es);
  conv::ColumnsGeometry& g = st->cols;
  g.role = conv::ColumnsRole::kDepthIsPatch;
  g.order = conv::RowOrder::kTapMajor;
  g.taps = conv::Taps{s.kh, s.kw, 1, 1, -s.p.dilation_h, -s.p.dilation_w, s.p.pad_h, s.p.pad_w};
  g.src.dtype = s.dtype;
  g.src.rows = static_cast<std::size_t>(st->src.h());
  g.src.cols = static_cast<std::size_t>(st->src.w());
  g.src.n_stride = st->src.strides[0], g.src.c_stride = st->src.strides[1];
  g.src.row_stride = st->src.strides[2], g.src.col_stride = st->src.strides[3];
  g.channels = s.ocg;
  g.groups = s.groups;
  g.out_h = s.h;
  g.out_w = s.w;
  gemm::GemmProblem& pr = st->problem;
  pr.batch = s.groups;
  pr.rows = s.cg;
  pr.cols = s.n * s.h * s.w;
  pr.depth = s.ocg * s.taps();
  pr.in = pr.out = s.dtype;
  pr.bias = with_bias;
  pr.bias_per_row = true;
  pr.y_must_stage = true;
  if (pr.rows * pr.cols * pr.depth == 0) return Status::kSuccess;
  Status planned = conv::plan_conv_gemm(*h, pr, conv::ImageColumns(g), st->ws.size(), workspace_limit, kOp, &st->plan);
  if (planned == Status::kNotSupported) {
    // The window of all OCg channels of dy that a depth step spanning taps needs does not fit the
    // cluster's SRAM, even for the narrowest tile (wide images, many output channels): steps
    // within one tap stage only their own channels, at the cost of depth steps <= OCg.
    pr.k_segment = s.ocg;
    g.steps_within_tap = true;
    planned = conv::plan_conv_gemm(*h, pr, conv::ImageColumns(g), st->ws.size(), workspace_limit, kOp, &st->plan);
  }
  MLU_RETURN_IF_ERROR(planned);
  st->splitk_at = st->ws.add(gemm::splitk_workspace_bytes(pr, st->plan));
  return Status::kSuccess;
}

}  // namespace

Status get_conv2d_backward_data_workspace_size(Handle* h, const ConvParams& p, const TensorDesc& dy,
                                               const TensorDesc& w, const TensorDesc& dx, std::size_t* bytes) {
  MLU_CHECK(bytes != nullptr, Status::kBadParam, std::string(kOp) + ": workspace size pointer is null");
  Setup st;
  MLU_RETURN_IF_ERROR(setup(h, p, dy, w, nullptr, true, dx, static_cast<std::size_t>(-1), &st));
  *bytes = st.ws.size();
  return Status::kSuccess;
}

Status conv2d_backward_data(Handle* h, const ConvParams& p, const TensorDesc& dy, const void* dy_ptr,
                            const TensorDesc& w, const void* w_ptr, const TensorDesc* bias, const void* bias_ptr,
                            const TensorDesc& dx, void* dx_ptr, void* workspace, std::size_t workspace_bytes) {
  Setup st;
  MLU_RETURN_IF_ERROR(setup(h, p, dy, w, bias, bias != nullptr, dx, workspace ? workspace_bytes : 0, &st));
  MLU_RETURN_IF_ERROR(check_ptr(dy_ptr, dy, kOp, "dy"));
  MLU_RETURN_IF_ERROR(check_ptr(w_ptr, w, kOp, "w"));
  if (bias) MLU_RETURN_IF_ERROR(check_ptr(bias_ptr, *bias, kOp, "bias"));
  MLU_RETURN_IF_ERROR(check_ptr(dx_ptr, dx, kOp, "dx"));
  const conv::ConvShape& s = st.s;
  const std::uint64_t bytes = conv::tensor_bytes(dy) + conv::tensor_bytes(w) + conv::tensor_bytes(dx) +
                              (bias ? conv::tensor_bytes(*bias) : 0);
  if (dx.numel() == 0) {
    record(*h, kOp, 0, 0, 0);
    return Status::kSuccess;
  }
  MLU_CHECK(workspace_bytes >= st.ws.size() && (st.ws.size() == 0 || workspace != nullptr), Status::kBadParam,
            std::string(kOp) + ": workspace of " + std::to_string(workspace_bytes) + " bytes is too small (needs " +
                std::to_string(st.ws.size()) + "; see get_conv2d_backward_data_workspace_size)");
  const auto addr = [](const void* ptr) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(ptr)); };
  const std::uint64_t ws = addr(workspace);
  const std::uint64_t bias_base = bias ? addr(bias_ptr) : 0;
  std::uint32_t kernels = 0, k = 0;
  if (st.depthwise) {
    MLU_RETURN_IF_ERROR(conv::depthwise_backward_data(*h, s, st.dyv, addr(dy_ptr), st.wv, addr(w_ptr),
                                                      bias ? bias->stride(0) : 0, bias_base, st.dxv, addr(dx_ptr), ws,
                                                      workspace_bytes, &kernels));
    record(*h, kOp, s.macs(), bytes, kernels);
    return Status::kSuccess;
  }
  if (st.direct) {
    const std::size_t es = sim::dtype_size(s.dtype);
    std::vector<conv::DirectConv> convs;  // the phases of a concurrent launch
    std::vector<conv::DirectPlan> plans;
    for (const Setup::Phase& r : st.phases) {
      const conv::DataPhase& ph = r.ph;
      const std::int64_t at = phase_dx_offset(st, ph);
      if (ph.taps_h * ph.taps_w == 0) {
        // No tap reaches the phase: its pixels are the bias, or zeros, written by the epilogue of
        // an empty product over [images x out_h] batches of [out_w pixels, C channels].
        gemm::OutputSpec fill;
        fill.dtype = s.dtype;
        fill.base = addr(dx_ptr) + static_cast<std::uint64_t>(at * i64(es));
        fill.batch = BatchIndexer{{i64(s.n), i64(ph.out_h)}, {st.dxv.strides[0], s.p.stride_h * st.dxv.strides[2]}};
        fill.row_stride = (r.whole_rows ? 1 : s.p.stride_w) * st.dxv.strides[3];
        fill.col_stride = st.dxv.strides[1];
        if (bias) fill.bias = true, fill.bias_base = bias_base, fill.bias_stride = bias->stride(0);
        MLU_RETURN_IF_ERROR(gemm::launch_splitk_reduce(*h, "conv2d_backward_data_fill", fill, 0, 0,
                                                       s.n * ph.out_h, ph.out_w, s.c));
        ++kernels;
        continue;
      }
      if (st.phased) continue;  // in the one launch below
      conv::DirectConv dc = r.dc;
      dc.x_base = addr(dy_ptr), dc.w_base = addr(w_ptr) + static_cast<std::uint64_t>(phase_w_offset(st, ph) * i64(es));
      if (bias) dc.out.bias_base = bias_base, dc.out.bias_stride = bias->stride(0);
      dc.out.base = addr(dx_ptr) + static_cast<std::uint64_t>(at * i64(es));
      if (st.concurrent) {
        convs.push_back(dc), plans.push_back(r.plan);
        continue;
      }
      MLU_RETURN_IF_ERROR(conv::launch_direct(*h, kOp, dc, r.plan, &k));
      kernels += k;
    }
    if (st.phased) {
      conv::DirectConv u = st.united;
      u.x_base = addr(dy_ptr), u.w_base = addr(w_ptr), u.out.base = addr(dx_ptr);
      if (bias) u.out.bias_base = bias_base, u.out.bias_stride = bias->stride(0);
      MLU_RETURN_IF_ERROR(conv::launch_direct(*h, kOp, u, st.united_plan, &k));
      kernels += k;
    } else if (st.concurrent) {
      MLU_RETURN_IF_ERROR(conv::launch_direct_concurrent(*h, kOp, convs, plans, &k));
      kernels += k;
    }
    record(*h, kOp, s.macs(), bytes, kernels);
    return Status::kSuccess;
  }
  std::uint64_t src_base = addr(dy_ptr), w_base = addr(w_ptr), dx_base = addr(dx_ptr);
  conv::View4 wv = st.wv, dxv = st.dxv;
  if (st.strided) {
    MLU_RETURN_IF_ERROR(conv::launch_dilate(*h, "conv2d_backward_data_dilate", s.dtype, st.dyv, src_base,
                                            static_cast<std::size_t>(s.p.stride_h),
                                            static_cast<std::size_t>(s.p.stride_w), ws + st.dy_at, &k));
    kernels += k, src_base = ws + st.dy_at;
  } else if (st.pack_dy) {
    MLU_RETURN_IF_ERROR(
        conv::to_dense(*h, "conv2d_backward_data_pack_dy", s.dtype, src_base, st.dyv, ws + st.dy_at, &k));
    kernels += k, src_base = ws + st.dy_at;
  }
  if (st.pack_w)
    MLU_RETURN_IF_ERROR(conv::move_to_dense(*h, "conv2d_backward_data_pack_w", s.dtype, ws + st.w_at, &w_base, &wv, &kernels));
  if (st.problem.depth > 0 && st.problem.rows > 0) {
    // [G][OCg, Cg * taps] (rows contiguous along depth) -> [G][Cg * taps, OCg].
    const std::size_t depth = s.cg * s.taps();
    const gemm::MatrixView src{w_base, BatchIndexer{{i64(s.groups)}, {i64(s.ocg) * wv.strides[0]}}, 1, wv.strides[0]};
    const gemm::MatrixView dst = gemm::dense_view(ws + st.wt_at, {i64(s.groups)}, depth, s.ocg);
    MLU_RETURN_IF_ERROR(gemm::launch_strided_copy(*h, "conv2d_backward_data_transpose_w", s.dtype, s.groups, depth,
                                                  s.ocg, src, dst, &k));
    kernels += k;
  }
  if (st.temp_dx) dx_base = ws + st.dx_at, dxv.strides = conv::dense_strides(dxv.dims);

  gemm::OutputSpec out;
  out.dtype = s.dtype;
  out.base = dx_base;
  out.batch = BatchIndexer{{i64(s.groups)}, {i64(s.cg) * dxv.strides[1]}};
  out.row_stride = dxv.strides[1];
  out.col_stride = 1;
  out.col_segment = s.h * s.w;
  out.col_segment_stride = dxv.strides[0];
  if (bias) {  // row c of group g is channel g * Cg + c
    out.bias = true;
    out.bias_per_row = true;
    out.bias_base = bias_base;
    out.bias_stride = bias->stride(0);
    out.bias_batch = BatchIndexer{{i64(s.groups)}, {i64(s.cg) * bias->stride(0)}};
  }
  if (st.problem.depth == 0) {  // no output channels: dx = bias (or 0)
    MLU_RETURN_IF_ERROR(
        gemm::launch_splitk_reduce(*h, "conv2d_backward_data_zero", out, 0, 0, s.groups, s.cg, s.n * s.h * s.w));
    ++kernels;
  } else {
    auto job = std::make_shared<gemm::EngineJob>();
    job->problem = st.problem;
    job->plan = st.plan;
    job->out = out;
    // Row c of group g: taps x OCg contiguous at wt + (g * Cg + c) * taps * OCg.
    const std::int64_t row = i64(s.taps() * s.ocg);
    job->x = std::make_shared<gemm::MatrixRows>(ws + st.wt_at, s.dtype, row,
                                                BatchIndexer{{i64(s.groups)}, {i64(s.cg) * row}});
    conv::ColumnsGeometry g = st.cols;
    g.src.base = src_base;
    job->y = std::make_shared<conv::ImageColumns>(g);
    MLU_RETURN_IF_ERROR(gemm::run_engine(*h, kOp, job, reinterpret_cast<void*>(ws + st.splitk_at),
                                         gemm::splitk_workspace_bytes(st.problem, st.plan), &k));
    kernels += k;
  }
  if (st.temp_dx) {
    MLU_RETURN_IF_ERROR(
        conv::from_dense(*h, "conv2d_backward_data_unpack_dx", s.dtype, dx_base, st.dxv, addr(dx_ptr), &k));
    kernels += k;
  }
  record(*h, kOp, s.macs(), bytes, kernels);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
