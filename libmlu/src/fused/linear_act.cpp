// linear_act and linear_residual: x [..., K] x w[N, K]^T + bias (+ residual), activation, as one
// matmul whose epilogue applies the bias, the residual and the activation on chip
// (gemm/matmul_impl.h, MatmulParams::activation and ::residual).
#include <string>
#include <vector>

#include "common/activation.h"
#include "common/error.h"
#include "gemm/matmul_impl.h"
#include "mlusim/mlu/fused.h"

namespace mlusim::mlu {
namespace {

constexpr const char* kActOp = "fused_linear_act";
constexpr const char* kResidualOp = "fused_linear_residual";

// The matrices matmul sees: a = x as [rows, K] (or batched [..., M, K]), c = y and r = the
// residual likewise.
struct LinearForm {
  TensorDesc a, c, r;
};

// Stride of leading dims [0, n) of d merged into one dim, when they step uniformly (size-1 dims
// ignored); false when they do not.
bool merged_stride(const TensorDesc& d, int n, std::int64_t* stride) {
  std::int64_t expect = -1;
  *stride = 1;
  for (int i = n - 1; i >= 0; --i) {
    if (d.dim(i) == 1) continue;
    if (expect < 0)
      *stride = d.stride(i);
    else if (d.stride(i) != expect)
      return false;
    expect = d.stride(i) * d.dim(i);
  }
  return true;
}

// residual: null for none, else y's dims and dtype.
Status make_form(Handle* h, const char* kOp, Activation act, const TensorDesc& x, const TensorDesc& w,
                 const TensorDesc* residual, const TensorDesc& y, LinearForm* f) {
  MLU_RETURN_IF_ERROR(check_handle(h, kOp));
  MLU_CHECK(is_valid_activation(act), Status::kBadParam,
            std::string(kOp) + ": unknown activation " + std::to_string(static_cast<int>(act)));
  MLU_RETURN_IF_ERROR(check_desc(&x, kOp, "x"));
  MLU_RETURN_IF_ERROR(check_desc(&w, kOp, "w"));
  MLU_RETURN_IF_ERROR(check_desc(&y, kOp, "y"));
  MLU_CHECK(x.ndim() >= 1, Status::kBadParam, std::string(kOp) + ": x " + x.str() + " needs at least 1 dim");
  MLU_CHECK(w.ndim() == 2, Status::kBadParam, std::string(kOp) + ": w " + w.str() + " must be 2-d [N, K]");
  const int nd = x.ndim();
  const std::int64_t k = x.dim(nd - 1), n = w.dim(0);
  MLU_CHECK(w.dim(1) == k, Status::kBadParam,
            std::string(kOp) + ": w " + w.str() + " is not [N, " + std::to_string(k) + "] for x " + x.str());
  std::vector<std::int64_t> ydims(x.dims().begin(), x.dims().end() - 1);
  ydims.push_back(n);
  MLU_CHECK(y.dims() == ydims, Status::kBadParam,
            std::string(kOp) + ": y " + y.str() + " must have x's leading dims and N = " + std::to_string(n));
  if (residual) {
    MLU_RETURN_IF_ERROR(check_desc(residual, kOp, "residual"));
    MLU_CHECK(residual->dims() == y.dims() && residual->dtype() == y.dtype(), Status::kBadParam,
              std::string(kOp) + ": residual " + residual->str() + " must have the dims and dtype of y " + y.str());
  }
  std::int64_t xs = 0, ys = 0, rs = 0;
  if (nd == 1 || (merged_stride(x, nd - 1, &xs) && merged_stride(y, nd - 1, &ys) &&
                  (!residual || merged_stride(*residual, nd - 1, &rs)))) {
    std::int64_t rows = 1;
    for (int i = 0; i + 1 < nd; ++i) rows *= x.dim(i);
    if (nd == 1) xs = k * x.stride(0), ys = n * y.stride(0), rs = residual ? n * residual->stride(0) : 0;
    MLU_RETURN_IF_ERROR(f->a.set(x.dtype(), {rows, k}, {xs, x.stride(nd - 1)}));
    MLU_RETURN_IF_ERROR(f->c.set(y.dtype(), {rows, n}, {ys, y.stride(nd - 1)}));
    if (residual) MLU_RETURN_IF_ERROR(f->r.set(y.dtype(), {rows, n}, {rs, residual->stride(nd - 1)}));
  } else {
    f->a = x;
    f->c = y;
    if (residual) f->r = *residual;
  }
  return Status::kSuccess;
}

MatmulParams params(Activation act, const LinearForm& f, const void* residual_ptr) {
  MatmulParams p;
  p.trans_b = true;
  p.activation = act;
  if (residual_ptr) {
    p.beta = 1.0f;
    p.residual = &f.r;
    p.residual_ptr = residual_ptr;
  }
  return p;
}

}  // namespace

Status get_linear_act_workspace_size(Handle* h, Activation act, const TensorDesc& x, const TensorDesc& w,
                                     const TensorDesc* bias, const TensorDesc& y, std::size_t* bytes) {
  LinearForm f;
  MLU_RETURN_IF_ERROR(make_form(h, kActOp, act, x, w, nullptr, y, &f));
  return gemm::matmul_workspace(h, kActOp, params(act, f, nullptr), f.a, w, bias, f.c, bytes);
}

Status linear_act(Handle* h, Activation act, const TensorDesc& x, const void* x_ptr, const TensorDesc& w,
                  const void* w_ptr, const TensorDesc* bias, const void* bias_ptr, const TensorDesc& y, void* y_ptr,
                  void* workspace, std::size_t workspace_bytes) {
  LinearForm f;
  MLU_RETURN_IF_ERROR(make_form(h, kActOp, act, x, w, nullptr, y, &f));
  return gemm::run_matmul(h, kActOp, params(act, f, nullptr), f.a, x_ptr, w, w_ptr, bias, bias_ptr, f.c, y_ptr,
                          workspace, workspace_bytes);
}

Status get_linear_residual_workspace_size(Handle* h, Activation act, const TensorDesc& x, const TensorDesc& w,
                                          const TensorDesc* bias, const TensorDesc& residual, const TensorDesc& y,
                                          std::size_t* bytes) {
  LinearForm f;
  MLU_RETURN_IF_ERROR(make_form(h, kResidualOp, act, x, w, &residual, y, &f));
  // Only the residual's layout, not its address, shapes the plan: any non-null pointer will do.
  return gemm::matmul_workspace(h, kResidualOp, params(act, f, &f), f.a, w, bias, f.c, bytes);
}

Status linear_residual(Handle* h, Activation act, const TensorDesc& x, const void* x_ptr, const TensorDesc& w,
                       const void* w_ptr, const TensorDesc* bias, const void* bias_ptr, const TensorDesc& residual,
                       const void* residual_ptr, const TensorDesc& y, void* y_ptr, void* workspace,
                       std::size_t workspace_bytes) {
  LinearForm f;
  MLU_RETURN_IF_ERROR(make_form(h, kResidualOp, act, x, w, &residual, y, &f));
  MLU_RETURN_IF_ERROR(check_ptr(residual_ptr, residual, kResidualOp, "residual"));
  return gemm::run_matmul(h, kResidualOp, params(act, f, residual_ptr), f.a, x_ptr, w, w_ptr, bias, bias_ptr, f.c,
                          y_ptr, workspace, workspace_bytes);
}

}  // namespace mlusim::mlu
