// matmul entry point: validation, choice of the engine's form, operand packing, launch, record.
#include <algorithm>
#include <memory>

#include "common/activation.h"
#include "common/error.h"
#include "common/launch.h"
#include "gemm/device_model.h"
#include "gemm/gemm_engine.h"
#include "gemm/matmul_impl.h"
#include "gemm/matrix_operands.h"
#include "gemm/splitk_reduce.h"
#include "gemm/strided_copy.h"
#include "mlusim/mlu/gemm.h"

namespace mlusim::mlu {

using gemm::BatchIndexer;
using sim::DType;

namespace {

std::size_t align256(std::size_t b) { return (b + 255) / 256 * 256; }

// A matrix operand as the engine sees it: rows x cols per batch with element strides, and its
// batch strides aligned to C's batch dims (0 where it broadcasts).
struct MatView {
  std::int64_t rows = 0, cols = 0, row_stride = 0, col_stride = 0;
  std::vector<std::int64_t> batch_strides;
  bool unit_cols() const { return col_stride == 1 || cols == 1; }
  bool unit_rows() const { return row_stride == 1 || rows == 1; }
  MatView transposed() const { return {cols, rows, col_stride, row_stride, batch_strides}; }
};

// The distinct batches of a view (dims where it does not broadcast) and how to pack them densely.
struct PackedBatches {
  std::vector<std::int64_t> dims;           // C's batch dims with broadcast ones set to 1
  std::vector<std::int64_t> dense_strides;  // strides of the packed copy, aligned to C's dims
  std::size_t count = 1;
};
PackedBatches packed_batches(const std::vector<std::int64_t>& c_batch, const MatView& v, std::int64_t matrix_elems) {
  PackedBatches p;
  p.dims.resize(c_batch.size());
  p.dense_strides.assign(c_batch.size(), 0);
  std::int64_t stride = matrix_elems;
  for (std::size_t i = c_batch.size(); i-- > 0;) {
    p.dims[i] = v.batch_strides[i] == 0 ? 1 : c_batch[i];
    if (p.dims[i] > 1) p.dense_strides[i] = stride;
    stride *= p.dims[i];
  }
  for (std::int64_t d : p.dims) p.count *= static_cast<std::size_t>(d);
  return p;
}

std::uint64_t distinct_elements(const TensorDesc& d) {
  std::uint64_t n = 1;
  for (int i = 0; i < d.ndim(); ++i) n *= (d.stride(i) == 0 ? 1 : static_cast<std::uint64_t>(d.dim(i)));
  return d.numel() == 0 ? 0 : n;
}

// Everything both the workspace query and the op need.
struct Setup {
  std::vector<std::int64_t> c_batch;
  std::size_t batch = 1, m = 0, n = 0, k = 0;
  bool transposed_form = false;  // the engine computes C^T = op(B)^T x op(A)^T
  MatView x, y;                  // engine operands (before packing)
  MatView out;                   // the engine's output rows x cols (C or C^T)
  MatView residual;              // the residual R as the engine reads it (R or R^T), when given
  bool pack_x = false, pack_y = false;
  PackedBatches x_batches, y_batches;
  std::size_t x_pack_bytes = 0, y_pack_bytes = 0;
  gemm::GemmProblem problem;
  gemm::GemmPlan plan;
  std::size_t splitk_bytes = 0;
  bool empty_output = false;
  std::size_t workspace() const { return align256(x_pack_bytes) + align256(y_pack_bytes) + splitk_bytes; }
};

Status make_view(const char* op, const TensorDesc& t, bool trans, const std::vector<std::int64_t>& c_batch,
                 const char* name, MatView* v) {
  const int nd = t.ndim();
  const int cb = static_cast<int>(c_batch.size());
  MLU_CHECK(nd - 2 <= cb, Status::kBadParam,
            std::string(op) + ": " + name + " " + t.str() + " has more batch dims than the output");
  v->rows = t.dim(nd - 2);
  v->cols = t.dim(nd - 1);
  v->row_stride = t.stride(nd - 2);
  v->col_stride = t.stride(nd - 1);
  if (trans) *v = v->transposed();
  v->batch_strides.assign(c_batch.size(), 0);
  for (int i = 0; i < nd - 2; ++i) {
    const int ci = cb - (nd - 2) + i;
    const std::int64_t d = t.dim(i);
    MLU_CHECK(d == c_batch[ci] || d == 1, Status::kBadParam,
              std::string(op) + ": batch dim " + std::to_string(i) + " of " + name + " " + t.str() +
                  " is neither 1 nor the output's " + std::to_string(c_batch[ci]));
    v->batch_strides[ci] = d == 1 ? 0 : t.stride(i);
  }
  return Status::kSuccess;
}

Status setup(Handle* h, const char* op, const MatmulParams& prm, const TensorDesc& a, const TensorDesc& b,
             const TensorDesc* bias, const TensorDesc& c, std::size_t workspace_limit, Setup* s) {
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_CHECK(is_valid_activation(prm.activation), Status::kBadParam,
            std::string(op) + ": unknown activation " + std::to_string(static_cast<int>(prm.activation)));
  MLU_RETURN_IF_ERROR(check_desc(&a, op, "a"));
  MLU_RETURN_IF_ERROR(check_desc(&b, op, "b"));
  MLU_RETURN_IF_ERROR(check_desc(&c, op, "c"));
  MLU_RETURN_IF_ERROR(check_dtype_in(a, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "a"));
  MLU_CHECK(b.dtype() == a.dtype() && c.dtype() == a.dtype(), Status::kBadParam,
            std::string(op) + ": a " + a.str() + ", b " + b.str() + " and c " + c.str() + " must share one dtype");
  MLU_CHECK(
      a.ndim() >= 2 && b.ndim() >= 2 && c.ndim() >= 2, Status::kBadParam,
      std::string(op) + ": a, b and c need at least 2 dims (got " + a.str() + ", " + b.str() + ", " + c.str() + ")");
  s->c_batch.assign(c.dims().begin(), c.dims().end() - 2);
  MatView va, vb;
  MLU_RETURN_IF_ERROR(make_view(op, a, prm.trans_a, s->c_batch, "a", &va));
  MLU_RETURN_IF_ERROR(make_view(op, b, prm.trans_b, s->c_batch, "b", &vb));
  MLU_CHECK(va.cols == vb.rows, Status::kBadParam,
            std::string(op) + ": op(a) is " + std::to_string(va.rows) + "x" + std::to_string(va.cols) +
                " but op(b) is " + std::to_string(vb.rows) + "x" + std::to_string(vb.cols));
  const std::int64_t cm = c.dim(c.ndim() - 2), cn = c.dim(c.ndim() - 1);
  MLU_CHECK(cm == va.rows && cn == vb.cols, Status::kBadParam,
            std::string(op) + ": c " + c.str() + " is not " + std::to_string(va.rows) + "x" + std::to_string(vb.cols));
  for (int i = 0; i < c.ndim() - 2; ++i)
    MLU_CHECK(c.stride(i) != 0 || c.dim(i) <= 1, Status::kBadParam,
              std::string(op) + ": c " + c.str() + " broadcasts (stride 0) over batch dim " + std::to_string(i));
  MLU_CHECK((c.stride(c.ndim() - 1) != 0 || cn <= 1) && (c.stride(c.ndim() - 2) != 0 || cm <= 1), Status::kBadParam,
            std::string(op) + ": c " + c.str() + " has a zero stride");
  MatView vr;
  if (prm.residual) {
    const TensorDesc& r = *prm.residual;
    MLU_RETURN_IF_ERROR(check_desc(&r, op, "residual"));
    MLU_CHECK(r.dtype() == c.dtype() && r.dims() == c.dims(), Status::kBadParam,
              std::string(op) + ": residual " + r.str() + " must have the dims and dtype of c " + c.str());
    MLU_CHECK(prm.beta != 0.0f, Status::kBadParam,
              std::string(op) + ": a residual is given but beta is 0 (beta multiplies the residual)");
    vr = MatView{cm, cn, r.stride(r.ndim() - 2), r.stride(r.ndim() - 1), {}};
  }
  if (bias) {
    MLU_RETURN_IF_ERROR(check_desc(bias, op, "bias"));
    MLU_CHECK(bias->dtype() == a.dtype(), Status::kBadParam,
              std::string(op) + ": bias " + bias->str() + " must have the dtype of a");
    MLU_CHECK(bias->ndim() == 1 && bias->dim(0) == cn, Status::kBadParam,
              std::string(op) + ": bias " + bias->str() + " must be 1-d of size N = " + std::to_string(cn));
  }
  s->m = static_cast<std::size_t>(va.rows);
  s->n = static_cast<std::size_t>(vb.cols);
  s->k = static_cast<std::size_t>(va.cols);
  for (std::int64_t d : s->c_batch) s->batch *= static_cast<std::size_t>(d);
  s->empty_output = s->batch * s->m * s->n == 0;
  if (s->empty_output || s->k == 0) return Status::kSuccess;

  MatView vc;
  vc.rows = cm;
  vc.cols = cn;
  vc.row_stride = c.stride(c.ndim() - 2);
  vc.col_stride = c.stride(c.ndim() - 1);
  // Form 1: X = op(A) (needs k-contiguous rows), Y = op(B), output C.
  // Form 2: X = op(B)^T, Y = op(A)^T, output C^T. Pick the one with the fewest elements to move:
  // each operand to repack, plus, where the output's rows are not contiguous, a DMA burst per
  // output element (element-wise stores). A small output stored element-wise beats repacking a
  // large operand (a weight gradient dY^T X over many pixels); a large one never does.
  const gemm::DeviceModel model = gemm::device_model(*h, a.dtype());
  auto y_ok = [](const MatView& y) { return y.unit_cols() || y.unit_rows(); };
  const double a_elems = static_cast<double>(va.rows * va.cols), b_elems = static_cast<double>(vb.rows * vb.cols);
  const double scattered = static_cast<double>(cm * cn) * static_cast<double>(model.burst_bytes) /
                           static_cast<double>(a.element_size());
  const double cost1 = (va.unit_cols() ? 0 : a_elems) + (y_ok(vb) ? 0 : b_elems) + (vc.unit_cols() ? 0 : scattered);
  const MatView bt = vb.transposed(), at = va.transposed();
  const double cost2 =
      (bt.unit_cols() ? 0 : b_elems) + (y_ok(at) ? 0 : a_elems) + (vc.transposed().unit_cols() ? 0 : scattered);
  s->transposed_form = cost2 < cost1;
  s->x = s->transposed_form ? bt : va;
  s->y = s->transposed_form ? at : vb;
  s->out = s->transposed_form ? vc.transposed() : vc;
  s->residual = s->transposed_form ? vr.transposed() : vr;
  s->pack_x = !s->x.unit_cols();
  s->pack_y = !y_ok(s->y);
  const std::size_t es = a.element_size();
  if (s->pack_x) {
    s->x_batches = packed_batches(s->c_batch, s->x, s->x.rows * s->x.cols);
    s->x_pack_bytes = s->x_batches.count * static_cast<std::size_t>(s->x.rows * s->x.cols) * es;
  }
  if (s->pack_y) {
    s->y_batches = packed_batches(s->c_batch, s->y, s->y.rows * s->y.cols);
    s->y_pack_bytes = s->y_batches.count * static_cast<std::size_t>(s->y.rows * s->y.cols) * es;
  }
  gemm::GemmProblem& p = s->problem;
  p.batch = s->batch;
  p.rows = static_cast<std::size_t>(s->x.rows);
  p.cols = static_cast<std::size_t>(s->y.cols);
  p.depth = s->k;
  p.in = p.out = a.dtype();
  p.beta = prm.beta != 0.0f;
  p.bias = bias != nullptr;
  p.bias_per_row = s->transposed_form;
  p.act = prm.activation;
  // The plan only asks the column operand about sizes, so a placeholder with the final layout will do.
  const gemm::MatrixCols layout(0, a.dtype(), 1, s->pack_y || s->y.unit_cols() ? 1 : 2, {});
  s->plan = gemm::plan_gemm(p, model, layout);
  s->splitk_bytes = gemm::splitk_workspace_bytes(p, s->plan);
  if (s->splitk_bytes > 0 && s->workspace() > workspace_limit) {  // no room to split the depth
    p.allow_split_k = false;
    s->plan = gemm::plan_gemm(p, model, layout);
    s->splitk_bytes = 0;
  }
  MLU_CHECK(s->plan.ms > 0, Status::kNotSupported,
            std::string(op) + ": no tiling of " + std::to_string(p.rows) + "x" + std::to_string(p.cols) + "x" +
                std::to_string(p.depth) + " fits this device's on-chip memories");
  return Status::kSuccess;
}

}  // namespace

namespace gemm {

Status matmul_workspace(Handle* h, const char* op, const MatmulParams& params, const TensorDesc& a,
                        const TensorDesc& b, const TensorDesc* bias, const TensorDesc& c, std::size_t* bytes) {
  MLU_CHECK(bytes != nullptr, Status::kBadParam, std::string(op) + ": workspace size pointer is null");
  Setup s;
  MLU_RETURN_IF_ERROR(setup(h, op, params, a, b, bias, c, static_cast<std::size_t>(-1), &s));
  *bytes = s.workspace();
  return Status::kSuccess;
}

Status run_matmul(Handle* h, const char* op, const MatmulParams& params, const TensorDesc& a, const void* a_ptr,
                  const TensorDesc& b, const void* b_ptr, const TensorDesc* bias, const void* bias_ptr,
                  const TensorDesc& c, void* c_ptr, void* workspace, std::size_t workspace_bytes) {
  Setup s;
  MLU_RETURN_IF_ERROR(setup(h, op, params, a, b, bias, c, workspace ? workspace_bytes : 0, &s));
  MLU_RETURN_IF_ERROR(check_ptr(a_ptr, a, op, "a"));
  MLU_RETURN_IF_ERROR(check_ptr(b_ptr, b, op, "b"));
  MLU_RETURN_IF_ERROR(check_ptr(c_ptr, c, op, "c"));
  if (bias) MLU_RETURN_IF_ERROR(check_ptr(bias_ptr, *bias, op, "bias"));
  if (params.residual) MLU_RETURN_IF_ERROR(check_ptr(params.residual_ptr, *params.residual, op, "residual"));
  const std::size_t es = a.element_size();
  const std::uint64_t macs = static_cast<std::uint64_t>(s.batch) * s.m * s.n * s.k;
  // C is read back for beta != 0 unless a residual is read in its place.
  const std::uint64_t c_elems = static_cast<std::uint64_t>(s.batch * s.m * s.n);
  const std::uint64_t bytes =
      (distinct_elements(a) + distinct_elements(b) + (bias ? s.n : 0)) * es +
      (params.residual ? distinct_elements(*params.residual) * es + c_elems * es
                       : c_elems * es * (params.beta != 0.0f ? 2 : 1));
  if (s.empty_output) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  MLU_CHECK(workspace_bytes >= s.workspace() && (s.workspace() == 0 || workspace != nullptr), Status::kBadParam,
            std::string(op) + ": workspace of " + std::to_string(workspace_bytes) + " bytes is too small (needs " +
                std::to_string(s.workspace()) + "; see get_matmul_workspace_size)");
  const auto base = [](const void* p) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)); };

  gemm::OutputSpec out;
  out.dtype = c.dtype();
  out.base = base(c_ptr);
  out.batch = BatchIndexer{s.c_batch, std::vector<std::int64_t>(c.strides().begin(), c.strides().end() - 2)};
  out.alpha = params.alpha;
  out.beta = params.beta;
  out.bias = bias != nullptr;
  out.bias_per_row = s.transposed_form;
  out.act = params.activation;
  if (bias) {
    out.bias_base = base(bias_ptr);
    out.bias_stride = bias->stride(0);
  }
  if (params.residual) {
    const TensorDesc& r = *params.residual;
    out.residual = true;
    out.residual_base = base(params.residual_ptr);
    out.residual_batch = BatchIndexer{s.c_batch, std::vector<std::int64_t>(r.strides().begin(), r.strides().end() - 2)};
    out.residual_row_stride = s.residual.row_stride;
    out.residual_col_stride = s.residual.col_stride;
  }
  if (s.k == 0) {  // empty depth: C = beta x C (or R) + bias
    out.row_stride = c.stride(c.ndim() - 2);
    out.col_stride = c.stride(c.ndim() - 1);
    if (params.residual) {
      out.residual_row_stride = params.residual->stride(params.residual->ndim() - 2);
      out.residual_col_stride = params.residual->stride(params.residual->ndim() - 1);
    }
    out.bias_per_row = false;
    MLU_RETURN_IF_ERROR(gemm::launch_splitk_reduce(*h, std::string(op) + "_epilogue", out, 0, 0, s.batch, s.m, s.n));
    record(*h, op, 0, bytes, 1);
    return Status::kSuccess;
  }
  out.row_stride = s.out.row_stride;
  out.col_stride = s.out.col_stride;

  std::uint32_t kernels = 0, k = 0;
  const std::uint64_t ws = base(workspace);
  const std::uint64_t x_pack = ws, y_pack = ws + align256(s.x_pack_bytes);
  const std::uint64_t a_base = base(a_ptr), b_base = base(b_ptr);
  const std::uint64_t x_src = s.transposed_form ? b_base : a_base, y_src = s.transposed_form ? a_base : b_base;
  std::uint64_t x_base = x_src, y_base = y_src;
  MatView x = s.x, y = s.y;
  if (s.pack_x) {
    const gemm::MatrixView src{x_src, BatchIndexer{s.x_batches.dims, x.batch_strides}, x.row_stride, x.col_stride};
    const gemm::MatrixView dst =
        gemm::dense_view(x_pack, s.x_batches.dims, static_cast<std::size_t>(x.rows), static_cast<std::size_t>(x.cols));
    MLU_RETURN_IF_ERROR(gemm::launch_strided_copy(*h, std::string(op) + "_pack_x", a.dtype(), s.x_batches.count,
                                                  static_cast<std::size_t>(x.rows), static_cast<std::size_t>(x.cols),
                                                  src, dst, &k));
    kernels += k;
    x_base = x_pack;
    x = MatView{x.rows, x.cols, x.cols, 1, s.x_batches.dense_strides};
  }
  if (s.pack_y) {
    const gemm::MatrixView src{y_src, BatchIndexer{s.y_batches.dims, y.batch_strides}, y.row_stride, y.col_stride};
    const gemm::MatrixView dst =
        gemm::dense_view(y_pack, s.y_batches.dims, static_cast<std::size_t>(y.rows), static_cast<std::size_t>(y.cols));
    MLU_RETURN_IF_ERROR(gemm::launch_strided_copy(*h, std::string(op) + "_pack_y", a.dtype(), s.y_batches.count,
                                                  static_cast<std::size_t>(y.rows), static_cast<std::size_t>(y.cols),
                                                  src, dst, &k));
    kernels += k;
    y_base = y_pack;
    y = MatView{y.rows, y.cols, y.cols, 1, s.y_batches.dense_strides};
  }
  auto job = std::make_shared<gemm::EngineJob>();
  job->problem = s.problem;
  job->plan = s.plan;
  job->out = out;
  job->x =
      std::make_shared<gemm::MatrixRows>(x_base, a.dtype(), x.row_stride, BatchIndexer{s.c_batch, x.batch_strides});
  // Y k-major when its columns are contiguous, else n-major (its rows are).
  const std::int64_t y_col_stride = y.unit_cols() ? 1 : y.col_stride;
  const std::int64_t y_row_stride = y.unit_cols() ? y.row_stride : (y.rows == 1 ? 1 : y.row_stride);
  job->y = std::make_shared<gemm::MatrixCols>(y_base, a.dtype(), y_row_stride, y_col_stride,
                                              BatchIndexer{s.c_batch, y.batch_strides});
  MLU_RETURN_IF_ERROR(gemm::run_engine(
      *h, op, job, reinterpret_cast<void*>(ws + align256(s.x_pack_bytes) + align256(s.y_pack_bytes)),
      s.splitk_bytes, &k));
  kernels += k;
  record(*h, op, macs, bytes, kernels);
  return Status::kSuccess;
}

}  // namespace gemm

namespace {
const char* matmul_name(const MatmulParams& params) {
  if (params.residual) return "fused_matmul_residual";
  return params.activation == Activation::kNone ? "matmul" : "fused_matmul_act";
}
}  // namespace

Status get_matmul_workspace_size(Handle* h, const MatmulParams& params, const TensorDesc& a, const TensorDesc& b,
                                 const TensorDesc* bias, const TensorDesc& c, std::size_t* bytes) {
  return gemm::matmul_workspace(h, matmul_name(params), params, a, b, bias, c, bytes);
}

Status matmul(Handle* h, const MatmulParams& params, const TensorDesc& a, const void* a_ptr, const TensorDesc& b,
              const void* b_ptr, const TensorDesc* bias, const void* bias_ptr, const TensorDesc& c, void* c_ptr,
              void* workspace, std::size_t workspace_bytes) {
  return gemm::run_matmul(h, matmul_name(params), params, a, a_ptr, b, b_ptr, bias, bias_ptr, c, c_ptr, workspace,
                          workspace_bytes);
}

}  // namespace mlusim::mlu
