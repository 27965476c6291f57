// conv2d_forward: y[n, g*OCg + o, p] = sum over (c, tap) of w[g*OCg + o, c, tap] x patch(x)[c, tap, p]
// (+ bias), one GEMM per group on the engine: rows = output channels of the group, columns = the
// output pixels of all images, depth = (input channel, tap) gathered by the im2col operand.
// The fused output stage (conv_forward.h) rides on the engine's epilogue (per-row affine and
// activation) or on the depthwise kernel's output stage.
#include "conv/conv_forward.h"

#include <memory>

#include "common/activation.h"
#include "common/error.h"
#include "common/launch.h"
#include "conv/conv_shape.h"
#include "conv/deinterleave.h"
#include "conv/depthwise.h"
#include "conv/conv_plan.h"
#include "conv/direct_conv.h"
#include "conv/image_columns.h"
#include "conv/layout_moves.h"
#include "gemm/device_model.h"
#include "gemm/gemm_engine.h"
#include "gemm/matrix_operands.h"
#include "gemm/splitk_reduce.h"

namespace mlusim::mlu {

using gemm::BatchIndexer;

namespace {

struct Setup {
  conv::ConvShape s;
  conv::View4 xv, wv, yv;
  bool depthwise = false;
  bool direct = false;  // the direct NHWC kernel (direct_conv.h) runs it
  conv::DirectConv dc;
  conv::DirectPlan dplan;
  bool split_x = false, subsample = false, pack_x = false, pack_w = false, temp_y = false;
  conv::WorkspaceLayout ws;
  std::size_t x_at = 0, w_at = 0, y_at = 0, splitk_at = 0;
  conv::ColumnsGeometry cols;
  gemm::GemmProblem problem;
  gemm::GemmPlan plan;
};

conv::ColumnsGeometry forward_columns(const conv::ConvShape& s, const conv::View4& x) {
  conv::ColumnsGeometry g;
  g.role = conv::ColumnsRole::kDepthIsPatch;
  g.order = conv::RowOrder::kChannelMajor;
  g.taps = conv::Taps{s.kh, s.kw, s.p.stride_h, s.p.stride_w, s.p.dilation_h, s.p.dilation_w, -s.p.pad_h, -s.p.pad_w};
  g.src.dtype = s.dtype;
  g.src.rows = s.h;
  g.src.cols = s.w;
  g.src.n_stride = x.strides[0], g.src.c_stride = x.strides[1], g.src.row_stride = x.strides[2],
  g.src.col_stride = x.strides[3];
  g.channels = s.cg;
  g.groups = s.groups;
  g.out_h = s.oh;
  g.out_w = s.ow;
  return g;
}

// The direct kernel's description of the convolution (addresses filled in by forward()).
conv::DirectConv direct_conv(const conv::ConvShape& s, const conv::View4& x, const conv::View4& w,
                             const conv::View4& y, const TensorDesc* bias, const conv::OutputStage& stage) {
  conv::DirectConv d;
  d.dtype = s.dtype;
  d.n = s.n, d.h = s.h, d.w = s.w, d.c = s.c, d.oc = s.oc, d.kh = s.kh, d.kw = s.kw, d.oh = s.oh, d.ow = s.ow;
  d.stride_h = static_cast<std::size_t>(s.p.stride_h), d.stride_w = static_cast<std::size_t>(s.p.stride_w);
  d.dil_h = static_cast<std::size_t>(s.p.dilation_h), d.dil_w = static_cast<std::size_t>(s.p.dilation_w);
  d.pad_h = s.p.pad_h, d.pad_w = s.p.pad_w;
  d.xs_n = x.strides[0], d.xs_h = x.strides[2], d.xs_w = x.strides[3];
  d.ws_o = w.strides[0], d.ws_kh = w.strides[2], d.ws_kw = w.strides[3];  // ws_c = 1: direct_forward_applies
  gemm::OutputSpec& o = d.out;
  o.dtype = s.dtype;
  o.batch = BatchIndexer{{static_cast<std::int64_t>(s.n)}, {y.strides[0]}};
  o.row_stride = s.ow > 1 ? y.strides[3] : y.strides[2];  // one output pixel per GEMM row
  o.col_stride = s.oc > 1 ? y.strides[1] : 1;
  o.act = stage.act;
  if (bias) {
    o.bias = true;
    o.bias_stride = bias->stride(0);
  }
  if (stage.affine.enabled) o.affine = stage.affine, o.affine_cols = true;  // channels are the GEMM's columns
  return d;
}

Status setup(Handle* h, const char* op, const ConvParams& p, const TensorDesc& x, const TensorDesc& w,
             const TensorDesc* bias, const conv::OutputStage& stage, const TensorDesc& y, std::size_t workspace_limit,
             Setup* st) {
  MLU_RETURN_IF_ERROR(conv::check_conv(op, h, p, x, "x", w, "w", y, "y", &st->s, &st->xv, &st->wv, &st->yv));
  const conv::ConvShape& s = st->s;
  MLU_CHECK(is_valid_activation(stage.act), Status::kBadParam,
            std::string(op) + ": unknown activation " + std::to_string(static_cast<int>(stage.act)));
  MLU_RETURN_IF_ERROR(conv::check_bias(op, bias, s.oc, x.dtype()));
  const std::size_t es = sim::dtype_size(s.dtype);
  st->depthwise = s.depthwise();
  if (st->depthwise) return Status::kSuccess;
  // Channels-innermost operands: the direct kernel on NHWC tiles (no workspace, no repacking).
  if (conv::direct_forward_applies(*h, s, st->xv, st->wv, st->yv, stage)) {
    st->dc = direct_conv(s, st->xv, st->wv, st->yv, bias, stage);
    st->dplan = conv::plan_direct(*h, st->dc);
    st->direct = st->dplan.rh > 0;
    if (st->direct) return Status::kSuccess;
  }
  // Rearranged copies where the layout does not suit the kernels: pixels must run contiguously
  // along x (a row per DMA segment), weights must be dense per output channel.
  // Strided along x: the input split by column phase, so the gather reads runs, not elements;
  // a 1x1 convolution without padding only needs the pixels on the stride grid: those alone are
  // copied out (a quarter of the input at stride 2), and it runs at stride 1 over them.
  st->subsample = s.p.stride_w > 1 && s.kh == 1 && s.kw == 1 && s.p.pad_h == 0 && s.p.pad_w == 0;
  st->split_x = s.p.stride_w > 1 && !st->subsample;
  st->pack_x = !st->split_x && !st->subsample && st->xv.strides[3] != 1 && s.w > 1;
  st->pack_w = !st->wv.rows_dense();
  st->temp_y = !st->yv.plane_dense();
  if (st->pack_x) st->x_at = st->ws.add(s.n * s.c * s.h * s.w * es);
  if (st->split_x)
    st->x_at = st->ws.add(conv::deinterleaved_bytes(st->xv, static_cast<std::size_t>(s.p.stride_w), s.dtype));
  if (st->subsample)
    st->x_at = st->ws.add(conv::subsampled_bytes(st->xv, static_cast<std::size_t>(s.p.stride_h),
                                                 static_cast<std::size_t>(s.p.stride_w), s.dtype));
  if (st->pack_w) st->w_at = st->ws.add(s.oc * s.cg * s.taps() * es);
  if (st->temp_y) st->y_at = st->ws.add(s.n * s.oc * s.oh * s.ow * es);
  conv::View4 src = st->xv;
  if (st->pack_x) src.strides = conv::dense_strides(src.dims);
  st->cols = forward_columns(s, src);
  if (st->split_x) st->cols.src = conv::split_source(st->xv, static_cast<std::size_t>(s.p.stride_w), s.dtype);
  if (st->subsample) {  // a dense [N, C, OH, OW] source read at stride 1
    const conv::View4 sub = conv::subsampled_view(st->xv, static_cast<std::size_t>(s.p.stride_h),
                                                  static_cast<std::size_t>(s.p.stride_w));
    st->cols.taps.stride_y = st->cols.taps.stride_x = 1;
    st->cols.src.rows = s.oh, st->cols.src.cols = s.ow;
    st->cols.src.n_stride = sub.strides[0], st->cols.src.c_stride = sub.strides[1];
    st->cols.src.row_stride = sub.strides[2], st->cols.src.col_stride = 1;
  }
  gemm::GemmProblem& pr = st->problem;
  pr.batch = s.groups;
  pr.rows = s.ocg;
  pr.cols = s.n * s.oh * s.ow;
  pr.depth = s.cg * s.taps();
  pr.k_granule = s.taps();
  pr.in = pr.out = s.dtype;
  pr.bias = bias != nullptr;
  pr.bias_per_row = true;
  pr.affine = stage.affine.enabled;
  pr.act = stage.act;
  pr.y_must_stage = true;
  if (pr.rows * pr.cols * pr.depth == 0) return Status::kSuccess;
  MLU_RETURN_IF_ERROR(
      conv::plan_conv_gemm(*h, pr, conv::ImageColumns(st->cols), st->ws.size(), workspace_limit, op, &st->plan));
  st->splitk_at = st->ws.add(gemm::splitk_workspace_bytes(pr, st->plan));
  return Status::kSuccess;
}

}  // namespace

namespace conv {

Status forward_workspace_size(Handle* h, const char* op, const ConvParams& p, const TensorDesc& x, const TensorDesc& w,
                              const OutputStage& stage, const TensorDesc& y, std::size_t* bytes) {
  MLU_CHECK(bytes != nullptr, Status::kBadParam, std::string(op) + ": workspace size pointer is null");
  Setup st;
  MLU_RETURN_IF_ERROR(setup(h, op, p, x, w, nullptr, stage, y, static_cast<std::size_t>(-1), &st));
  *bytes = st.ws.size();
  return Status::kSuccess;
}

Status forward(Handle* h, const char* op, const ConvParams& p, const TensorDesc& x, const void* x_ptr,
               const TensorDesc& w, const void* w_ptr, const TensorDesc* bias, const void* bias_ptr,
               const OutputStage& stage, const TensorDesc& y, void* y_ptr, void* workspace, std::size_t workspace_bytes,
               ForwardResult* result) {
  *result = ForwardResult{};
  Setup st;
  MLU_RETURN_IF_ERROR(setup(h, op, p, x, w, bias, stage, y, workspace ? workspace_bytes : 0, &st));
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, op, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(w_ptr, w, op, "w"));
  MLU_RETURN_IF_ERROR(check_ptr(y_ptr, y, op, "y"));
  if (bias) MLU_RETURN_IF_ERROR(check_ptr(bias_ptr, *bias, op, "bias"));
  const conv::ConvShape& s = st.s;
  result->macs = s.macs();
  result->bytes =
      conv::tensor_bytes(x) + conv::tensor_bytes(w) + conv::tensor_bytes(y) + (bias ? conv::tensor_bytes(*bias) : 0);
  if (y.numel() == 0) {
    result->macs = result->bytes = 0;
    return Status::kSuccess;
  }
  const auto addr = [](const void* ptr) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(ptr)); };
  if (st.direct) {
    conv::DirectConv dc = st.dc;
    dc.x_base = addr(x_ptr), dc.w_base = addr(w_ptr), dc.out.base = addr(y_ptr);
    if (bias) dc.out.bias_base = addr(bias_ptr);
    std::uint32_t kernels = 0;
    MLU_RETURN_IF_ERROR(conv::launch_direct(*h, op, dc, st.dplan, &kernels));
    result->kernels = kernels;
    return Status::kSuccess;
  }
  if (st.depthwise) {
    std::uint32_t kernels = 0;
    MLU_RETURN_IF_ERROR(conv::depthwise_forward(*h, s, st.xv, addr(x_ptr), st.wv, addr(w_ptr),
                                                bias ? bias->stride(0) : 0, bias ? addr(bias_ptr) : 0, stage, st.yv,
                                                addr(y_ptr), &kernels));
    result->kernels = kernels;
    return Status::kSuccess;
  }
  MLU_CHECK(workspace_bytes >= st.ws.size() && (st.ws.size() == 0 || workspace != nullptr), Status::kBadParam,
            std::string(op) + ": workspace of " + std::to_string(workspace_bytes) + " bytes is too small (needs " +
                std::to_string(st.ws.size()) + "; see " + stage.workspace_query + ")");
  const std::uint64_t ws = addr(workspace);
  std::uint32_t kernels = 0, k = 0;
  std::uint64_t x_base = addr(x_ptr), w_base = addr(w_ptr), y_base = addr(y_ptr);
  conv::View4 xv = st.xv, wv = st.wv, yv = st.yv;
  if (st.split_x) {
    MLU_RETURN_IF_ERROR(conv::launch_deinterleave(*h, std::string(op) + "_split_x", s.dtype, xv, x_base,
                                                  static_cast<std::size_t>(s.p.stride_w), ws + st.x_at, &k));
    kernels += k, x_base = ws + st.x_at;
  }
  if (st.subsample) {
    MLU_RETURN_IF_ERROR(conv::launch_subsample(*h, std::string(op) + "_subsample_x", s.dtype, xv, x_base,
                                               static_cast<std::size_t>(s.p.stride_h),
                                               static_cast<std::size_t>(s.p.stride_w), ws + st.x_at, &k));
    kernels += k, x_base = ws + st.x_at;
  }
  if (st.pack_x)
    MLU_RETURN_IF_ERROR(
        conv::move_to_dense(*h, std::string(op) + "_pack_x", s.dtype, ws + st.x_at, &x_base, &xv, &kernels));
  if (st.pack_w)
    MLU_RETURN_IF_ERROR(
        conv::move_to_dense(*h, std::string(op) + "_pack_w", s.dtype, ws + st.w_at, &w_base, &wv, &kernels));
  if (st.temp_y) y_base = ws + st.y_at, yv.strides = conv::dense_strides(yv.dims);

  gemm::OutputSpec out;
  out.dtype = s.dtype;
  out.base = y_base;
  out.batch = BatchIndexer{{static_cast<std::int64_t>(s.groups)}, {static_cast<std::int64_t>(s.ocg) * yv.strides[1]}};
  out.row_stride = yv.strides[1];
  out.col_stride = 1;
  out.col_segment = s.oh * s.ow;
  out.col_segment_stride = yv.strides[0];
  out.affine = stage.affine;
  out.affine_batch = BatchIndexer{{static_cast<std::int64_t>(s.groups)}, {static_cast<std::int64_t>(s.ocg)}};
  out.act = stage.act;
  if (bias) {
    out.bias = true;
    out.bias_per_row = true;
    out.bias_base = addr(bias_ptr);
    out.bias_stride = bias->stride(0);
    out.bias_batch =
        BatchIndexer{{static_cast<std::int64_t>(s.groups)}, {static_cast<std::int64_t>(s.ocg) * bias->stride(0)}};
  }
  if (st.problem.depth == 0) {  // no input channels: y = bias (or 0)
    MLU_RETURN_IF_ERROR(
        gemm::launch_splitk_reduce(*h, std::string(op) + "_epilogue", out, 0, 0, s.groups, s.ocg, s.n * s.oh * s.ow));
    ++kernels;
  } else {
    auto job = std::make_shared<gemm::EngineJob>();
    job->problem = st.problem;
    job->plan = st.plan;
    job->out = out;
    job->x = std::make_shared<gemm::MatrixRows>(
        w_base, s.dtype, wv.strides[0],
        BatchIndexer{{static_cast<std::int64_t>(s.groups)}, {static_cast<std::int64_t>(s.ocg) * wv.strides[0]}});
    conv::ColumnsGeometry g = st.cols;
    g.src.base = x_base;
    if (!st.split_x && !st.subsample)
      g.src.n_stride = xv.strides[0], g.src.c_stride = xv.strides[1], g.src.row_stride = xv.strides[2],
      g.src.col_stride = xv.strides[3];
    job->y = std::make_shared<conv::ImageColumns>(g);
    MLU_RETURN_IF_ERROR(gemm::run_engine(*h, op, job, reinterpret_cast<void*>(ws + st.splitk_at),
                                         gemm::splitk_workspace_bytes(st.problem, st.plan), &k));
    kernels += k;
  }
  if (st.temp_y) {
    MLU_RETURN_IF_ERROR(conv::from_dense(*h, std::string(op) + "_unpack_y", s.dtype, y_base, st.yv, addr(y_ptr), &k));
    kernels += k;
  }
  result->kernels = kernels;
  return Status::kSuccess;
}

}  // namespace conv

Status get_conv2d_forward_workspace_size(Handle* h, const ConvParams& p, const TensorDesc& x, const TensorDesc& w,
                                         const TensorDesc& y, std::size_t* bytes) {
  return conv::forward_workspace_size(h, "conv2d_forward", p, x, w, conv::OutputStage{}, y, bytes);
}

Status conv2d_forward(Handle* h, const ConvParams& p, const TensorDesc& x, const void* x_ptr, const TensorDesc& w,
                      const void* w_ptr, const TensorDesc* bias, const void* bias_ptr, const TensorDesc& y, void* y_ptr,
                      void* workspace, std::size_t workspace_bytes) {
  conv::ForwardResult r;
  MLU_RETURN_IF_ERROR(conv::forward(h, "conv2d_forward", p, x, x_ptr, w, w_ptr, bias, bias_ptr, conv::OutputStage{}, y,
                                    y_ptr, workspace, workspace_bytes, &r));
  record(*h, "conv2d_forward", r.macs, r.bytes, r.kernels);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
