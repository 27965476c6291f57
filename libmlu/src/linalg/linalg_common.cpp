#include "linalg/linalg_common.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/int_math.h"

namespace mlusim::mlu::linalg {

Status check_matrices(const TensorDesc* d, const void* p, const char* op, const char* name, MatrixBatch* out) {
  MLU_RETURN_IF_ERROR(check_desc(d, op, name));
  MLU_RETURN_IF_ERROR(check_dtype_in(*d, {DType::kFloat32}, op, name));
  MLU_CHECK(d->ndim() >= 2, Status::kBadParam,
            std::string(op) + ": " + name + " " + d->str() + " must be a batch of matrices (at least 2 dims)");
  MLU_CHECK(d->contiguous() || d->numel() == 0, Status::kBadParam,
            std::string(op) + ": " + name + " " + d->str() + " must be contiguous");
  MLU_RETURN_IF_ERROR(check_ptr(p, *d, op, name));
  out->rows = d->dim(d->ndim() - 2);
  out->cols = d->dim(d->ndim() - 1);
  out->batch = 1;
  for (int i = 0; i + 2 < d->ndim(); ++i) out->batch *= d->dim(i);
  return Status::kSuccess;
}

Status check_per_matrix(const TensorDesc* d, const void* p, DType dtype, const TensorDesc& of,
                        const std::vector<std::int64_t>& tail, const char* op, const char* name) {
  MLU_RETURN_IF_ERROR(check_desc(d, op, name));
  std::vector<std::int64_t> want(of.dims().begin(), of.dims().end() - 2);
  want.insert(want.end(), tail.begin(), tail.end());
  std::string shape;
  for (std::int64_t v : want) shape += (shape.empty() ? "" : ",") + std::to_string(v);
  MLU_CHECK(d->dtype() == dtype && d->dims() == want && (d->contiguous() || d->numel() == 0), Status::kBadParam,
            std::string(op) + ": " + name + " " + d->str() + " must be contiguous " +
                std::string(sim::dtype_name(dtype)) + "[" + shape + "] for matrices " + of.str());
  return check_ptr(p, *d, op, name);
}

std::size_t nram_budget(const Handle& h) {
  constexpr std::size_t kReserve = 1024;  // scalars and alignment slack
  return h.nram_bytes() > kReserve ? h.nram_bytes() - kReserve : 0;
}

std::size_t nram_bytes(const std::vector<std::int64_t>& element_counts) {
  std::size_t total = 0;
  for (std::int64_t c : element_counts) total += up128(static_cast<std::size_t>(std::max<std::int64_t>(c, 1)) * 4);
  return total;
}

void iota(sim::Nram<float> v, std::int64_t count) {
  if (count <= 0) return;
  dev::vec_fill(DType::kFloat32, v, 0.0, 1);
  for (std::int64_t s = 1; s < count; s *= 2)
    dev::vec_binary_scalar(sim::VecBinaryOp::kAdd, DType::kFloat32, v + s, v, static_cast<double>(s),
                           static_cast<std::size_t>(std::min(s, count - s)));
}

Rotation jacobi_rotation(float app, float aqq, float apq) {
  Rotation r;
  if (apq == 0.0f) return r;
  const float tau = (aqq - app) / (2.0f * apq);
  r.t = (tau >= 0.0f ? 1.0f : -1.0f) / (std::fabs(tau) + std::sqrt(1.0f + tau * tau));
  r.c = 1.0f / std::sqrt(1.0f + r.t * r.t);
  r.s = r.t * r.c;
  return r;
}

void rotate_rows(sim::Nram<float> x, sim::Nram<float> y, const Rotation& r, sim::Nram<float> t1, sim::Nram<float> t2,
                 std::int64_t len) {
  using sim::VecBinaryOp;
  const auto n = static_cast<std::size_t>(len);
  dev::vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, t1, x, r.s, n);  // s x
  dev::vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, t2, y, r.s, n);  // s y
  dev::vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, x, x, r.c, n);
  dev::vec_binary(VecBinaryOp::kSub, DType::kFloat32, x, x, t2, n);           // c x - s y
  dev::vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, y, y, r.c, n);
  dev::vec_binary(VecBinaryOp::kAdd, DType::kFloat32, y, t1, y, n);           // s x + c y
}

}  // namespace mlusim::mlu::linalg

namespace mlusim::mlu {

std::int64_t jacobi_sweeps(std::int64_t n) {
  std::int64_t log2n = 0;
  while ((std::int64_t{1} << log2n) < n) ++log2n;
  return 5 + 2 * log2n;
}

std::int64_t linalg_max_square_size(const Handle* h) {
  if (h == nullptr) return 0;
  const std::size_t budget = linalg::nram_budget(*h);
  auto fits = [&](std::int64_t n) {
    return linalg::lu_factor_nram_bytes(n, n) <= budget && linalg::cholesky_nram_bytes(n) <= budget &&
           linalg::triangular_solve_nram_bytes(n, 1) <= budget;
  };
  std::int64_t n = 0;
  while (fits(n + 1)) ++n;
  return n;
}

}  // namespace mlusim::mlu
