// Matrix functions composed from the device's factorizations and GEMMs (linalg_decomp_ops.cpp,
// linalg_ops.cpp); float32, batches of matrices:
//
//   linalg_polar(A [*, m, n], m >= n) -> (U, H), A = U H: from the SVD A = W diag(s) Vh (reduced),
//     U = W Vh (the orthonormal factor closest to A), H = Vh^T diag(s) Vh (symmetric PSD). CUDA
//     uses cuSOLVER's QDWH iteration or the same SVD formula; the factors are unique for full rank.
//   linalg_matrix_sqrth(A [*, n, n]) -> V diag(sqrt(max(w, 0))) V^T from eigh of A's lower
//     triangle (eigenvalues below zero clamped to 0, as the CPU's).
//   linalg_matrix_exp(A [*, n, n]) -> exp(A) by scaling and squaring, as torch (LinearAlgebra.cpp,
//     Bader, Blanes, Casas 2019): each matrix's 1-norm (the batch's norms read by the host) picks
//     its Taylor degree from torch's float thresholds {1: 1.19e-7, 2: 5.98e-4, 4: 5.12e-2,
//     8: 5.80e-1, 12: 1.46, 18: 3.01} (the batch runs the largest); above 3.01 a matrix is scaled
//     by 2^-s, s = ceil(log2(norm / 3.01)), and its result squared s times. The degree-d Taylor polynomial
//     is evaluated by Horner's rule (d - 1 GEMMs) where torch uses its cheaper evaluation
//     schemes; both are exp(A) to float32 rounding for these norms.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/ops/_linalg_eigh.h>
#include <ATen/ops/_linalg_svd.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/linalg_matrix_norm.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/tensor.h>
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

void check_float32_matrices(const Tensor& A, const char* name, bool square) {
  TORCH_CHECK_NOT_IMPLEMENTED(A.scalar_type() == at::kFloat, name, ": dtype ", A.scalar_type(),
                              " is not supported on device mlu (float32: the factorizations are fp32)");
  TORCH_CHECK(A.dim() >= 2, name, ": The input tensor A must have at least 2 dimensions.");
  TORCH_CHECK(!square || A.size(-1) == A.size(-2), name, ": A must be batches of square matrices, but they are ",
              A.size(-2), " by ", A.size(-1), " matrices");
}

std::tuple<Tensor&, Tensor&> polar_out(const Tensor& A, Tensor& U, Tensor& H) {
  constexpr const char* kName = "aten::linalg_polar.out";
  OpScope op(kName, A);
  check_float32_matrices(A, kName, false);
  TORCH_CHECK(A.size(-2) >= A.size(-1), "torch.linalg.polar: A must have at least as many rows as columns, got ",
              A.size(-2), " x ", A.size(-1));
  const auto [w, s, vh] = at::_linalg_svd(A, /*full_matrices=*/false, /*compute_uv=*/true);
  write_out(at::matmul(w, vh), U, kName);
  write_out(at::matmul(vh.mT().mul(s.unsqueeze(-2)), vh), H, kName);
  return {U, H};
}

Tensor matrix_sqrth(const Tensor& A) {
  constexpr const char* kName = "aten::linalg_matrix_sqrth";
  OpScope op(kName, A);
  check_float32_matrices(A, kName, true);
  const auto [w, v] = at::_linalg_eigh(A, "L", /*compute_v=*/true);
  const Tensor root = run_elementwise_program({w}, "sqrt(maximum($0, 0.0))");
  return at::matmul(v.mul(root.unsqueeze(-2)), v.mT());
}

Tensor matrix_exp(const Tensor& A) {
  constexpr const char* kName = "aten::linalg_matrix_exp";
  OpScope op(kName, A);
  check_float32_matrices(A, kName, true);
  const int64_t n = A.size(-1);
  if (A.numel() == 0) return A.clone();
  if (n == 1) return A.exp();
  // Every matrix its own scaling (as torch's per-matrix buckets): the batch's 1-norms read once.
  const Tensor flat = A.reshape({-1, n, n});
  const int64_t batch = flat.size(0);
  const Tensor norms = at::linalg_matrix_norm(flat, 1.0).cpu();
  // torch's float thresholds (LinearAlgebra.cpp, mexp_impl: thetas_float) and degrees.
  constexpr double kTheta[] = {1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02,
                               5.800524627688768e-01, 1.461661507209034e+00, 3.010066362817634e+00};
  constexpr int kDegree[] = {1, 2, 4, 8, 12, 18};
  int degree = 1, most_squarings = 0;
  std::vector<int> squarings(static_cast<std::size_t>(batch), 0);
  std::vector<float> scale(static_cast<std::size_t>(batch), 1.0f);
  for (int64_t b = 0; b < batch; ++b) {
    const double norm = norms[b].item<double>();
    int d = 18;
    for (int i = 0; i < 6; ++i)
      if (norm <= kTheta[i]) {
        d = kDegree[i];
        break;
      }
    degree = std::max(degree, d);
    if (norm > kTheta[5] && std::isfinite(norm)) {
      squarings[b] = static_cast<int>(std::ceil(std::log2(norm / kTheta[5])));
      scale[b] = static_cast<float>(std::ldexp(1.0, -squarings[b]));
      most_squarings = std::max(most_squarings, squarings[b]);
    }
  }
  const Tensor scales = at::tensor(scale, at::TensorOptions().dtype(at::kFloat)).to(op.device()).view({batch, 1, 1});
  const Tensor scaled = flat.mul(scales);
  const Tensor eye = at::eye(n, A.options()).expand(flat.sizes());
  // Horner: P = I + B/d, then P = I + B P / k for k = d-1 .. 1 (the batch's largest degree).
  Tensor p = eye.add(scaled, 1.0 / degree);
  for (int k = degree - 1; k >= 1; --k) p = eye.add(at::matmul(scaled, p), 1.0 / k);
  // Squaring i applies to the matrices scaled by more than 2^-i.
  for (int i = 0; i < most_squarings; ++i) {
    std::vector<int64_t> which;
    for (int64_t b = 0; b < batch; ++b)
      if (squarings[b] > i) which.push_back(b);
    if (static_cast<int64_t>(which.size()) == batch) {
      p = at::matmul(p, p);
      continue;
    }
    const Tensor idx = at::tensor(which, at::TensorOptions().dtype(at::kLong)).to(op.device());
    const Tensor sub = p.index_select(0, idx);
    p = p.index_copy(0, idx, at::matmul(sub, sub));
  }
  return p.view(A.sizes());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_polar.out", TORCH_FN(polar_out));
  m.impl("linalg_matrix_sqrth", TORCH_FN(matrix_sqrth));
  m.impl("linalg_matrix_exp", TORCH_FN(matrix_exp));
}

}  // namespace mlusim::bridge::ops
