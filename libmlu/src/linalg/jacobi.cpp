// symmetric_eigenvalues and singular_values: cyclic Jacobi on one matrix per core in NRAM
// (linalg.h), jacobi_sweeps(n) sweeps over the pairs (p < q) in row order.
//
// Two-sided (eigenvalues), rotation (p, q) with J = [[c, s], [-s, c]] in rows/columns p, q:
//   B = J^T A: rows p, q rotated (rotate_rows);  A' = B J: for i outside {p, q}, A'[i, p] and
//   A'[i, q] are B[p, i] and B[q, i] (symmetry), so rows p, q are copied into columns p, q
//   (two strided NRAM copies), then A'[p, p] = a_pp - t a_pq, A'[q, q] = a_qq + t a_pq and
//   A'[p, q] = A'[q, p] = 0 are stored by the scalar unit.
// One-sided (singular values), rows w_i, w_j of W (k x l): alpha = |w_i|^2, beta = |w_j|^2,
//   gamma = w_i . w_j; the rotation of [[alpha, gamma], [gamma, beta]] applied to the rows
//   makes them orthogonal (Hestenes); at the end the singular values are the row norms.
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "linalg/linalg_common.h"
#include "mlusim/mlu/linalg.h"

namespace mlusim::mlu {
namespace {

using sim::VecBinaryOp;
using sim::VecReduceOp;

struct JacobiLaunch {
  std::int64_t batch = 0, rows = 0, cols = 0, sweeps = 0;
  bool symmetric = true;
  std::uint64_t a = 0, out = 0;
};

void eigen_body(const JacobiLaunch& L) {
  const std::int64_t n = L.rows;
  const auto A = linalg::nram_floats(n * n), t1 = linalg::nram_floats(n), t2 = linalg::nram_floats(n),
             w = linalg::nram_floats(n);
  const dev::CopyShape row_to_column{4, static_cast<std::size_t>(n), n * 4, 4};
  for (std::int64_t b = dev::task_id(); b < L.batch; b += dev::task_dim()) {
    dev::memcpy(A, linalg::gdram_at(L.a, b * n * n), static_cast<std::size_t>(n * n) * 4, dev::Dir::kGdram2Nram);
    for (std::int64_t sweep = 0; sweep < L.sweeps; ++sweep)
      for (std::int64_t p = 0; p + 1 < n; ++p)
        for (std::int64_t q = p + 1; q < n; ++q) {
          const float app = dev::load(A + (p * n + p)), aqq = dev::load(A + (q * n + q)), apq = dev::load(A + (p * n + q));
          const linalg::Rotation r = linalg::jacobi_rotation(app, aqq, apq);
          linalg::rotate_rows(A + p * n, A + q * n, r, t1, t2, n);
          dev::memcpy_strided(A + p, A + p * n, row_to_column, dev::Dir::kNram2Nram);
          dev::memcpy_strided(A + q, A + q * n, row_to_column, dev::Dir::kNram2Nram);
          dev::store(A + (p * n + p), app - r.t * apq);
          dev::store(A + (q * n + q), aqq + r.t * apq);
          dev::store(A + (p * n + q), 0.0f);
          dev::store(A + (q * n + p), 0.0f);
        }
    dev::memcpy_strided(w, A, dev::CopyShape{4, static_cast<std::size_t>(n), 4, (n + 1) * 4}, dev::Dir::kNram2Nram);
    dev::memcpy(linalg::gdram_at(L.out, b * n), w, static_cast<std::size_t>(n) * 4, dev::Dir::kNram2Gdram);
  }
}

void singular_body(const JacobiLaunch& L) {
  const std::int64_t k = L.rows, l = L.cols;
  const auto W = linalg::nram_floats(k * l), t1 = linalg::nram_floats(l), t2 = linalg::nram_floats(l),
             red = linalg::nram_floats(1), s = linalg::nram_floats(k);
  const auto len = static_cast<std::size_t>(l);
  auto reduce = [&](VecReduceOp op, sim::Nram<float> x) {
    dev::vec_reduce(op, DType::kFloat32, red, x, 1, len);
    return dev::load(red);
  };
  for (std::int64_t b = dev::task_id(); b < L.batch; b += dev::task_dim()) {
    dev::memcpy(W, linalg::gdram_at(L.a, b * k * l), static_cast<std::size_t>(k * l) * 4, dev::Dir::kGdram2Nram);
    for (std::int64_t sweep = 0; sweep < L.sweeps; ++sweep)
      for (std::int64_t i = 0; i + 1 < k; ++i)
        for (std::int64_t j = i + 1; j < k; ++j) {
          const auto wi = W + i * l, wj = W + j * l;
          const float alpha = reduce(VecReduceOp::kSumSquares, wi), beta = reduce(VecReduceOp::kSumSquares, wj);
          dev::vec_binary(VecBinaryOp::kMul, DType::kFloat32, t1, wi, wj, len);
          const float gamma = reduce(VecReduceOp::kSum, t1);
          linalg::rotate_rows(wi, wj, linalg::jacobi_rotation(alpha, beta, gamma), t1, t2, l);
        }
    dev::vec_reduce(VecReduceOp::kSumSquares, DType::kFloat32, s, W, static_cast<std::size_t>(k), len);
    dev::vec_unary(sim::VecUnaryOp::kSqrt, DType::kFloat32, s, s, static_cast<std::size_t>(k));
    dev::memcpy(linalg::gdram_at(L.out, b * k), s, static_cast<std::size_t>(k) * 4, dev::Dir::kNram2Gdram);
  }
}

Status launch_jacobi(Handle* h, const char* op, bool symmetric, const TensorDesc& a, const void* a_ptr,
                     const TensorDesc& out, void* out_ptr) {
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  linalg::MatrixBatch mb;
  MLU_RETURN_IF_ERROR(linalg::check_matrices(&a, a_ptr, op, "a", &mb));
  if (symmetric)
    MLU_CHECK(mb.rows == mb.cols, Status::kBadParam, std::string(op) + ": a " + a.str() + " must be square");
  else
    MLU_CHECK(mb.rows <= mb.cols, Status::kBadParam,
              std::string(op) + ": a " + a.str() + " must have at most as many rows as columns (pass A^T)");
  MLU_RETURN_IF_ERROR(linalg::check_per_matrix(&out, out_ptr, DType::kFloat32, a, {mb.rows}, op, symmetric ? "w" : "s"));
  MLU_CHECK(linalg::jacobi_nram_bytes(mb.rows, mb.cols) <= linalg::nram_budget(*h), Status::kNotSupported,
            std::string(op) + ": a " + std::to_string(mb.rows) + " x " + std::to_string(mb.cols) +
                " matrix does not fit one core's NRAM (" + std::to_string(h->nram_bytes()) + " bytes)");
  if (mb.batch == 0 || mb.rows == 0) {
    record(*h, op, 0, 0, 0);
    return Status::kSuccess;
  }
  auto L = std::make_shared<JacobiLaunch>();
  L->batch = mb.batch;
  L->rows = mb.rows;
  L->cols = mb.cols;
  L->sweeps = jacobi_sweeps(mb.rows);
  L->symmetric = symmetric;
  L->a = reinterpret_cast<std::uintptr_t>(a_ptr);
  L->out = reinterpret_cast<std::uintptr_t>(out_ptr);
  MLU_RETURN_IF_ERROR(launch(*h, op, [L] { L->symmetric ? eigen_body(*L) : singular_body(*L); },
                             block_dim(*h, static_cast<std::uint64_t>(mb.batch)), CNRT_FUNC_TYPE_BLOCK));
  // Per rotation: two rows of `cols` rotated (4 multiplies), plus the one-sided dot products.
  const std::uint64_t pairs = static_cast<std::uint64_t>(mb.rows * (mb.rows - 1) / 2);
  const std::uint64_t per_pair = static_cast<std::uint64_t>(mb.cols) * (symmetric ? 4 : 7);
  record(*h, op, static_cast<std::uint64_t>(mb.batch * L->sweeps) * pairs * per_pair,
         static_cast<std::uint64_t>(mb.batch) * static_cast<std::uint64_t>(mb.rows * mb.cols + mb.rows) * 4, 1);
  return Status::kSuccess;
}

}  // namespace

namespace linalg {
std::size_t jacobi_nram_bytes(std::int64_t rows, std::int64_t cols) {
  return nram_bytes({rows * cols, cols, cols, rows, 1});
}
}  // namespace linalg

Status symmetric_eigenvalues(Handle* h, const TensorDesc& a, const void* a_ptr, const TensorDesc& w, void* w_ptr) {
  return launch_jacobi(h, "symmetric_eigenvalues", true, a, a_ptr, w, w_ptr);
}

Status singular_values(Handle* h, const TensorDesc& a, const void* a_ptr, const TensorDesc& s, void* s_ptr) {
  return launch_jacobi(h, "singular_values", false, a, a_ptr, s, s_ptr);
}

}  // namespace mlusim::mlu
