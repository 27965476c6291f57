// conv2d_backward_weight: dw[g*OCg + o, c, tap] = sum over images and output pixels p of
// dy[n, g*OCg + o, p] x patch(x[n])[c, tap, p], one GEMM per group on the engine: rows = output
// channels of the group, columns = (input channel, tap) gathered from x, depth = the pixels of
// every image in turn (steps stay within one image). The weight tensor is small and the depth
// large, so the planner usually splits the depth over clusters (partial sums in the workspace).
// Channels-innermost operands run the direct NHWC kernel instead (direct_weight_grad.h): per tap
// dY^T x the tap's input window, accumulated on chip, no im2col. A channels-innermost 1x1
// stride-1 convolution (no windows) is one matmul over the pixels, dW[OC, C] = dY^T[OC, P] x X[P, C]
// (gemm/matmul_impl.h), which packs at most the operand its engine needs transposed instead of
// copying x and dy to channel-major layouts.
#include <memory>

#include "common/error.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "conv/conv_plan.h"
#include "conv/conv_shape.h"
#include "conv/deinterleave.h"
#include "conv/depthwise.h"
#include "conv/direct_weight_grad.h"
#include "conv/image_columns.h"
#include "conv/layout_moves.h"
#include "gemm/device_model.h"
#include "gemm/gemm_engine.h"
#include "gemm/matmul_impl.h"
#include "gemm/matrix_operands.h"
#include "gemm/splitk_reduce.h"

namespace mlusim::mlu {

using gemm::BatchIndexer;

namespace {

constexpr const char* kOp = "conv2d_backward_weight";

struct Setup {
  conv::ConvShape s;
  conv::View4 xv, dwv, dyv;
  bool depthwise = false, split_x = false, pack_x = false, pack_dy = false, temp_dw = false;
  bool direct = false;  // the direct NHWC kernel (direct_weight_grad.h)
  bool pointwise = false;  // a channels-innermost 1x1 stride-1 convolution: one matmul
  TensorDesc pa, pb, pc;   // its dY^T [OC, P], X [P, C], dW [OC, C]
  conv::WeightGradConv dc;
  conv::WeightGradPlan dplan;
  conv::WorkspaceLayout ws;
  std::size_t x_at = 0, dy_at = 0, dw_at = 0, splitk_at = 0;
  conv::ColumnsGeometry cols;
  gemm::GemmProblem problem;
  gemm::GemmPlan plan;
};


// A 1x1, stride-1, unpadded, ungrouped convolution whose x and dy are channels-innermost with
// their pixels evenly spaced over all images (N x H x W one stride): sets the matmul's views.
bool pointwise_matmul(const conv::ConvShape& s, Setup* st) {
  if (s.taps() != 1 || s.groups != 1 || s.p.stride_h != 1 || s.p.stride_w != 1 || s.p.pad_h != 0 ||
      s.p.pad_w != 0 || s.n * s.h * s.w == 0)
    return false;
  // The pixel stride of a view whose pixels are evenly spaced across images, else 0.
  auto pixel_stride = [](const conv::View4& v) -> std::int64_t {
    const std::int64_t ps = v.w() > 1 ? v.strides[3] : v.h() > 1 ? v.strides[2] : v.strides[0];
    if ((v.w() > 1 && v.h() > 1 && v.strides[2] != v.w() * ps) ||
        (v.n() > 1 && v.strides[0] != v.h() * v.w() * ps) || (v.c() > 1 && v.strides[1] != 1))
      return 0;
    return ps;
  };
  const std::int64_t xs = pixel_stride(st->xv), ys = pixel_stride(st->dyv);
  if (xs == 0 || ys == 0) return false;
  const std::int64_t pixels = i64(s.n * s.h * s.w);
  return st->pa.set(s.dtype, {i64(s.oc), pixels}, {1, ys}) == Status::kSuccess &&
         st->pb.set(s.dtype, {pixels, i64(s.c)}, {xs, 1}) == Status::kSuccess &&
         st->pc.set(s.dtype, {i64(s.oc), i64(s.c)}, {st->dwv.strides[0], st->dwv.strides[1]}) == Status::kSuccess;
}

Status setup(Handle* h, const ConvParams& p, const TensorDesc& x, const TensorDesc& dy, const TensorDesc& dw,
             std::size_t workspace_limit, Setup* st) {
  MLU_RETURN_IF_ERROR(conv::check_conv(kOp, h, p, x, "x", dw, "dw", dy, "dy", &st->s, &st->xv, &st->dwv, &st->dyv));
  const conv::ConvShape& s = st->s;
  const std::size_t es = sim::dtype_size(s.dtype);
  st->depthwise = s.depthwise();
  if (st->depthwise) return Status::kSuccess;
  if (conv::direct_backward_weight_applies(*h, s, st->xv, st->dyv, st->dwv)) {
    st->dc = conv::weight_grad_conv(s, st->xv, st->dyv, st->dwv);
    st->dplan = conv::plan_weight_grad(*h, st->dc);
    st->direct = st->dplan.ocb > 0;
    if (st->direct) return Status::kSuccess;
  }
  if (pointwise_matmul(s, st)) {
    st->pointwise = true;
    std::size_t bytes = 0;
    MLU_RETURN_IF_ERROR(gemm::matmul_workspace(h, kOp, MatmulParams{}, st->pa, st->pb, nullptr, st->pc, &bytes));
    st->ws.add(bytes);
    return Status::kSuccess;
  }
  // Strided along x: the input split by column phase, so the gather reads runs, not elements.
  st->split_x = s.p.stride_w > 1;
  st->pack_x = !st->split_x && st->xv.strides[3] != 1 && s.w > 1;
  st->pack_dy = !st->dyv.plane_dense();
  st->temp_dw = !st->dwv.rows_dense();
  if (st->pack_x) st->x_at = st->ws.add(s.n * s.c * s.h * s.w * es);
  if (st->split_x)
    st->x_at = st->ws.add(conv::deinterleaved_bytes(st->xv, static_cast<std::size_t>(s.p.stride_w), s.dtype));
  if (st->pack_dy) st->dy_at = st->ws.add(s.n * s.oc * s.oh * s.ow * es);
  if (st->temp_dw) st->dw_at = st->ws.add(s.oc * s.cg * s.taps() * es);
  conv::View4 src = st->xv;
  if (st->pack_x) src.strides = conv::dense_strides(src.dims);
  conv::ColumnsGeometry& g = st->cols;
  g.role = conv::ColumnsRole::kDepthIsPixels;
  g.order = conv::RowOrder::kChannelMajor;
  g.taps = conv::Taps{s.kh, s.kw, s.p.stride_h, s.p.stride_w, s.p.dilation_h, s.p.dilation_w, -s.p.pad_h, -s.p.pad_w};
  g.src.dtype = s.dtype;
  g.src.rows = s.h;
  g.src.cols = s.w;
  g.src.n_stride = src.strides[0], g.src.c_stride = src.strides[1], g.src.row_stride = src.strides[2],
  g.src.col_stride = src.strides[3];
  g.channels = s.cg;
  g.groups = s.groups;
  g.out_h = s.oh;
  g.out_w = s.ow;
  if (st->split_x) g.src = conv::split_source(st->xv, static_cast<std::size_t>(s.p.stride_w), s.dtype);
  gemm::GemmProblem& pr = st->problem;
  pr.batch = s.groups;
  pr.rows = s.ocg;
  pr.cols = s.cg * s.taps();
  pr.depth = s.n * s.oh * s.ow;
  pr.k_segment = s.oh * s.ow;
  pr.in = pr.out = s.dtype;
  pr.y_must_stage = true;
  if (pr.rows * pr.cols * pr.depth == 0) return Status::kSuccess;
  MLU_RETURN_IF_ERROR(
      conv::plan_conv_gemm(*h, pr, conv::ImageColumns(g), st->ws.size(), workspace_limit, kOp, &st->plan));
  st->splitk_at = st->ws.add(gemm::splitk_workspace_bytes(pr, st->plan));
  return Status::kSuccess;
}

}  // namespace

Status get_conv2d_backward_weight_workspace_size(Handle* h, const ConvParams& p, const TensorDesc& x,
                                                 const TensorDesc& dy, const TensorDesc& dw, std::size_t* bytes) {
  MLU_CHECK(bytes != nullptr, Status::kBadParam, std::string(kOp) + ": workspace size pointer is null");
  Setup st;
  MLU_RETURN_IF_ERROR(setup(h, p, x, dy, dw, static_cast<std::size_t>(-1), &st));
  *bytes = st.ws.size();
  return Status::kSuccess;
}

Status conv2d_backward_weight(Handle* h, const ConvParams& p, const TensorDesc& x, const void* x_ptr,
                              const TensorDesc& dy, const void* dy_ptr, const TensorDesc& dw, void* dw_ptr,
                              void* workspace, std::size_t workspace_bytes) {
  Setup st;
  MLU_RETURN_IF_ERROR(setup(h, p, x, dy, dw, workspace ? workspace_bytes : 0, &st));
  MLU_RETURN_IF_ERROR(check_ptr(x_ptr, x, kOp, "x"));
  MLU_RETURN_IF_ERROR(check_ptr(dy_ptr, dy, kOp, "dy"));
  MLU_RETURN_IF_ERROR(check_ptr(dw_ptr, dw, kOp, "dw"));
  const conv::ConvShape& s = st.s;
  const std::uint64_t bytes = conv::tensor_bytes(x) + conv::tensor_bytes(dy) + conv::tensor_bytes(dw);
  if (dw.numel() == 0) {
    record(*h, kOp, 0, 0, 0);
    return Status::kSuccess;
  }
  MLU_CHECK(workspace_bytes >= st.ws.size() && (st.ws.size() == 0 || workspace != nullptr), Status::kBadParam,
            std::string(kOp) + ": workspace of " + std::to_string(workspace_bytes) + " bytes is too small (needs " +
                std::to_string(st.ws.size()) + "; see get_conv2d_backward_weight_workspace_size)");
  const auto addr = [](const void* ptr) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(ptr)); };
  const std::uint64_t ws = addr(workspace);
  std::uint32_t kernels = 0, k = 0;
  if (st.depthwise) {
    MLU_RETURN_IF_ERROR(conv::depthwise_backward_weight(*h, s, st.xv, addr(x_ptr), st.dyv, addr(dy_ptr), st.dwv,
                                                        addr(dw_ptr), &kernels));
    record(*h, kOp, s.macs(), bytes, kernels);
    return Status::kSuccess;
  }
  if (st.pointwise)  // records the op itself, under kOp
    return gemm::run_matmul(h, kOp, MatmulParams{}, st.pa, dy_ptr, st.pb, x_ptr, nullptr, nullptr, st.pc, dw_ptr,
                            workspace, workspace_bytes);
  if (st.direct) {
    conv::WeightGradConv dc = st.dc;
    dc.x_base = addr(x_ptr), dc.dy_base = addr(dy_ptr), dc.dw_base = addr(dw_ptr);
    MLU_RETURN_IF_ERROR(conv::launch_weight_grad(*h, kOp, dc, st.dplan, &kernels));
    record(*h, kOp, s.macs(), bytes, kernels);
    return Status::kSuccess;
  }
  std::uint64_t x_base = addr(x_ptr), dy_base = addr(dy_ptr), dw_base = addr(dw_ptr);
  conv::View4 xv = st.xv, dyv = st.dyv, dwv = st.dwv;
  if (st.split_x) {
    MLU_RETURN_IF_ERROR(conv::launch_deinterleave(*h, "conv2d_backward_weight_split_x", s.dtype, xv, x_base,
                                                  static_cast<std::size_t>(s.p.stride_w), ws + st.x_at, &k));
    kernels += k, x_base = ws + st.x_at;
  }
  if (st.pack_x)
    MLU_RETURN_IF_ERROR(conv::move_to_dense(*h, "conv2d_backward_weight_pack_x", s.dtype, ws + st.x_at, &x_base, &xv, &kernels));
  if (st.pack_dy)
    MLU_RETURN_IF_ERROR(conv::move_to_dense(*h, "conv2d_backward_weight_pack_dy", s.dtype, ws + st.dy_at, &dy_base, &dyv, &kernels));
  if (st.temp_dw) dw_base = ws + st.dw_at, dwv.strides = conv::dense_strides(dwv.dims);

  gemm::OutputSpec out;
  out.dtype = s.dtype;
  out.base = dw_base;
  out.batch = BatchIndexer{{i64(s.groups)}, {i64(s.ocg) * dwv.strides[0]}};
  out.row_stride = dwv.strides[0];
  out.col_stride = 1;
  if (st.problem.depth == 0) {  // no pixels: the gradient is zero
    MLU_RETURN_IF_ERROR(
        gemm::launch_splitk_reduce(*h, "conv2d_backward_weight_zero", out, 0, 0, s.groups, s.ocg, s.cg * s.taps()));
    ++kernels;
  } else {
    auto job = std::make_shared<gemm::EngineJob>();
    job->problem = st.problem;
    job->plan = st.plan;
    job->out = out;
    job->x = std::make_shared<gemm::MatrixRows>(dy_base, s.dtype, dyv.strides[1],
                                                BatchIndexer{{i64(s.groups)}, {i64(s.ocg) * dyv.strides[1]}},
                                                s.oh * s.ow, dyv.strides[0]);
    conv::ColumnsGeometry g = st.cols;
    g.src.base = x_base;
    if (!st.split_x)
      g.src.n_stride = xv.strides[0], g.src.c_stride = xv.strides[1], g.src.row_stride = xv.strides[2],
      g.src.col_stride = xv.strides[3];
    job->y = std::make_shared<conv::ImageColumns>(g);
    MLU_RETURN_IF_ERROR(gemm::run_engine(*h, kOp, job, reinterpret_cast<void*>(ws + st.splitk_at),
                                         gemm::splitk_workspace_bytes(st.problem, st.plan), &k));
    kernels += k;
  }
  if (st.temp_dw) {
    MLU_RETURN_IF_ERROR(
        conv::from_dense(*h, "conv2d_backward_weight_unpack_dw", s.dtype, dw_base, st.dwv, addr(dw_ptr), &k));
    kernels += k;
  }
  record(*h, kOp, s.macs(), bytes, kernels);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
