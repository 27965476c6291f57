// Pairwise distances on the device, built from device kernels as torch's CPU kernels define them
// (aten/src/ATen/native/Distance.cpp, DistanceOpsKernel.cpp; CUDA twin DistanceKernel.cu):
//
//   _cdist_forward(x1 [*, r1, m], x2 [*, r2, m], p, compute_mode)  -> [*, r1, r2]
//     p = 2 with compute_mode 1 (use_mm), or 0 (if necessary) and r1 or r2 > 25: torch's
//     _euclidean_dist (|x1|^2 + |x2|^2 - 2 x1 x2^T on the GEMM, clamped at 0, sqrt), as the CPU;
//     else the differences d = x1_i - x2_j on the VFU, reduced over m:
//       p = 0: count of d != 0;  p = 1: sum |d|;  p = 2: sqrt(sum d^2);  p = inf: max |d|;
//       other p: (sum |d|^p)^(1/p)
//   _pdist_forward(x [n, m], p) -> [n (n - 1) / 2]: the same differences for every pair i < j, in
//     row-major order (the pairs' row and column indices built on the host, a gather per side).
//
//   _cdist_backward / _pdist_backward: torch's per-difference gradient (Distance.cpp's
//     one_backward ... gt_two_backward) as one program over the same differences, with the
//     incoming gradient g and the forward's distance D broadcast over m:
//       p = 0: 0;  p = 1: sign(d) g;  p = 2: d g / D;  p = inf: sign(d) g where |d| == D;
//       other p: d |d|^(p-2) g / D^(p-1);  0 where D == 0 (and where d == 0 for p < 2)
//     then summed over x2's rows (cdist; a broadcast batch is reduced by autograd), or added to
//     both rows of each pair with opposite signs (pdist, index_add).
//
// The difference tensor holds r1 r2 m (pdist: n (n - 1) / 2 m) elements in device memory.
// Dtypes: float32 and float16 (fp32 arithmetic in the programs, one rounding); float64 raises.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_euclidean_dist.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include "ops/op_support.h"
#include "ops/program_literal.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

void check_distance_dtype(const Tensor& t, const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.scalar_type() == at::kFloat || t.scalar_type() == at::kHalf, name, ": dtype ",
                              t.scalar_type(), " is not supported on device mlu (float32, float16)");
}

// The p-norm of `diff` over its last dim (see the file comment), in diff's dtype.
Tensor norm_of_differences(const Tensor& diff, double p) {
  std::vector<int64_t> out_sizes(diff.sizes().begin(), diff.sizes().end() - 1);
  if (diff.size(-1) == 0) return at::zeros(out_sizes, diff.options());
  if (p == 0.0) return at::sum(at::ne(diff, 0), -1).to(diff.scalar_type());
  if (std::isinf(p)) return at::amax(diff.abs(), -1);
  if (p == 1.0) return at::sum(diff.abs(), -1);
  if (p == 2.0) return at::sum(run_elementwise_program({diff}, "mul($0, $0)"), -1).sqrt();
  const Tensor powered = run_elementwise_program({diff}, "pow(abs($0), " + program_literal(p) + ")");
  return run_elementwise_program({at::sum(powered, -1)}, "pow($0, " + program_literal(1.0 / p) + ")");
}

// The gradient of each difference's contribution to its p-norm times the incoming gradient
// (see the file comment); grad and dist broadcast over diff's last dim.
Tensor difference_gradient(const Tensor& diff, const Tensor& grad, const Tensor& dist, double p) {
  if (p == 0.0 || diff.numel() == 0) return at::zeros_like(diff);
  const std::string sign_g = "where(gt($0, 0.0), $1, where(lt($0, 0.0), neg($1), 0.0))";
  if (p == 1.0) return run_elementwise_program({diff, grad}, sign_g);
  if (std::isinf(p)) return run_elementwise_program({diff, grad, dist}, "where(eq(abs($0), $2), " + sign_g + ", 0.0)");
  if (p == 2.0) return run_elementwise_program({diff, grad, dist}, "where(eq($2, 0.0), 0.0, div(mul($0, $1), $2))");
  return run_elementwise_program(
      {diff, grad, dist}, "where(logical_or(eq($2, 0.0), eq($0, 0.0)), 0.0, div(mul(mul($0, pow(abs($0), " +
                              program_literal(p - 2.0) + ")), $1), pow($2, " + program_literal(p - 1.0) + ")))");
}

// Row and column indices of the pairs i < j in row-major order (pdist's output order).
std::pair<Tensor, Tensor> pair_indices(int64_t n, const c10::Device& device) {
  std::vector<int64_t> rows, cols;
  rows.reserve(static_cast<std::size_t>(n * (n - 1) / 2));
  cols.reserve(rows.capacity());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) {
      rows.push_back(i);
      cols.push_back(j);
    }
  return {at::tensor(rows, at::TensorOptions().dtype(at::kLong)).to(device),
          at::tensor(cols, at::TensorOptions().dtype(at::kLong)).to(device)};
}

Tensor cdist_forward(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  OpScope op("aten::_cdist_forward", x1);
  const char* name = op.name();
  check_on_device(x2, op.device(), name, "x2");
  check_distance_dtype(x1, name);
  TORCH_CHECK(x1.scalar_type() == x2.scalar_type(), "cdist: X1 and X2 must have the same dtype, got ",
              x1.scalar_type(), " and ", x2.scalar_type());
  TORCH_CHECK(x1.dim() >= 2 && x2.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(),
              "D, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  const int64_t mode = compute_mode.value_or(0);
  TORCH_CHECK(mode >= 0 && mode <= 2, name, ": possible modes: 0, 1, 2, but was: ", mode);
  const int64_t r1 = x1.size(-2), r2 = x2.size(-2);
  const std::vector<int64_t> batch =
      at::infer_size(x1.sizes().slice(0, x1.dim() - 2), x2.sizes().slice(0, x2.dim() - 2));
  auto expanded = [&](const Tensor& x) {
    std::vector<int64_t> sizes = batch;
    sizes.push_back(x.size(-2));
    sizes.push_back(x.size(-1));
    return x.expand(sizes);
  };
  const Tensor a = expanded(x1), b = expanded(x2);
  if (p == 2.0 && (mode == 1 || (mode == 0 && (r1 > 25 || r2 > 25))))
    return at::_euclidean_dist(a.contiguous(), b.contiguous());
  return norm_of_differences(a.unsqueeze(-2).sub(b.unsqueeze(-3)), p);
}

Tensor pdist_forward(const Tensor& self, double p) {
  OpScope op("aten::_pdist_forward", self);
  const char* name = op.name();
  check_distance_dtype(self, name);
  TORCH_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  TORCH_CHECK(p >= 0, "pdist only supports non-negative p values");
  const int64_t n = self.size(0);
  if (n < 2) return empty_on(op.device(), {0}, self.scalar_type());
  const auto [ri, ci] = pair_indices(n, op.device());
  return norm_of_differences(at::index_select(self, 0, ri).sub(at::index_select(self, 0, ci)), p);
}

// grad_x1 [*, r1, m] (the broadcast batch: autograd sums it to x1's) = sum over x2's rows of the
// difference gradient.
Tensor cdist_backward(const Tensor& grad, const Tensor& x1, const Tensor& x2, double p, const Tensor& cdist) {
  OpScope op("aten::_cdist_backward", x1);
  const char* name = op.name();
  check_distance_dtype(x1, name);
  check_on_device(x2, op.device(), name, "x2");
  check_on_device(grad, op.device(), name, "grad");
  check_on_device(cdist, op.device(), name, "cdist");
  TORCH_CHECK(x1.dim() >= 2 && x2.dim() >= 2 && x1.size(-1) == x2.size(-1), name, ": x1 ", x1.sizes(), " and x2 ",
              x2.sizes(), " are not [*, r, m] with the same m");
  const std::vector<int64_t> batch =
      at::infer_size(x1.sizes().slice(0, x1.dim() - 2), x2.sizes().slice(0, x2.dim() - 2));
  std::vector<int64_t> out_sizes = batch;
  out_sizes.push_back(x1.size(-2));
  out_sizes.push_back(x1.size(-1));
  if (x1.numel() == 0 || x2.size(-2) == 0 || p == 0.0) return at::zeros(out_sizes, x1.options());
  const Tensor diff = x1.unsqueeze(-2).sub(x2.unsqueeze(-3));  // [*, r1, r2, m]
  return at::sum(difference_gradient(diff, grad.unsqueeze(-1), cdist.unsqueeze(-1), p), -2).expand(out_sizes).contiguous();
}

// grad_x[i] = sum over pairs (i, j) of the difference gradient of x_i - x_j, minus the same over
// pairs (k, i): one index_add per side.
Tensor pdist_backward(const Tensor& grad, const Tensor& self, double p, const Tensor& pdist) {
  OpScope op("aten::_pdist_backward", self);
  const char* name = op.name();
  check_distance_dtype(self, name);
  check_on_device(grad, op.device(), name, "grad");
  check_on_device(pdist, op.device(), name, "pdist");
  TORCH_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  const int64_t n = self.size(0);
  Tensor result = at::zeros(self.sizes(), self.options());
  if (n < 2 || self.size(1) == 0 || p == 0.0) return result;
  const auto [ri, ci] = pair_indices(n, op.device());
  const Tensor diff = at::index_select(self, 0, ri).sub(at::index_select(self, 0, ci));  // [pairs, m]
  const Tensor g = difference_gradient(diff, grad.unsqueeze(-1), pdist.unsqueeze(-1), p);
  return result.index_add_(0, ri, g).index_add_(0, ci, g, -1);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_cdist_forward", TORCH_FN(cdist_forward));
  m.impl("_pdist_forward", TORCH_FN(pdist_forward));
  m.impl("_cdist_backward", TORCH_FN(cdist_backward));
  m.impl("_pdist_backward", TORCH_FN(pdist_backward));
}

}  // namespace mlusim::bridge::ops
