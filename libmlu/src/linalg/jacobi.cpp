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
// Vectors: the product of the rotations is accumulated in the same sweep by applying each
//   rotation to rows p, q (i, j) of an identity, Qt <- J^T Qt: two-sided A = Qt^T diag Qt, so the
//   eigenvectors are Qt's rows; one-sided W = Qt A, so A = Qt^T W and U's columns are Qt's rows.
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
  std::uint64_t vectors = 0;  // Qt [rows, rows] per matrix, 0: not computed
  std::uint64_t rotated = 0;  // one-sided: W after the sweeps [rows, cols], 0: not written
};

// Qt = I (n x n) in NRAM: a zero fill and a strided copy of a one onto the diagonal.
void set_identity(sim::Nram<float> qt, sim::Nram<float> one, std::int64_t n) {
  dev::vec_fill(DType::kFloat32, qt, 0.0, static_cast<std::size_t>(n * n));
  dev::memcpy_strided(qt, one, dev::CopyShape{4, static_cast<std::size_t>(n), (n + 1) * 4, 0}, dev::Dir::kNram2Nram);
}

void eigen_body(const JacobiLaunch& L) {
  const std::int64_t n = L.rows;
  const auto A = linalg::nram_floats(n * n), t1 = linalg::nram_floats(n), t2 = linalg::nram_floats(n),
             w = linalg::nram_floats(n), Qt = linalg::nram_floats(L.vectors ? n * n : 1), one = linalg::nram_floats(1);
  dev::vec_fill(DType::kFloat32, one, 1.0, 1);
  const dev::CopyShape row_to_column{4, static_cast<std::size_t>(n), n * 4, 4};
  const auto matrix_bytes = static_cast<std::size_t>(n * n) * 4;
  for (std::int64_t b = dev::task_id(); b < L.batch; b += dev::task_dim()) {
    dev::memcpy(A, linalg::gdram_at(L.a, b * n * n), matrix_bytes, dev::Dir::kGdram2Nram);
    if (L.vectors) set_identity(Qt, one, n);
    for (std::int64_t sweep = 0; sweep < L.sweeps; ++sweep)
      for (std::int64_t p = 0; p + 1 < n; ++p)
        for (std::int64_t q = p + 1; q < n; ++q) {
          const float app = dev::load(A + (p * n + p)), aqq = dev::load(A + (q * n + q)), apq = dev::load(A + (p * n + q));
          const linalg::Rotation r = linalg::jacobi_rotation(app, aqq, apq);
          linalg::rotate_rows(A + p * n, A + q * n, r, t1, t2, n);
          if (L.vectors) linalg::rotate_rows(Qt + p * n, Qt + q * n, r, t1, t2, n);
          dev::memcpy_strided(A + p, A + p * n, row_to_column, dev::Dir::kNram2Nram);
          dev::memcpy_strided(A + q, A + q * n, row_to_column, dev::Dir::kNram2Nram);
          dev::store(A + (p * n + p), app - r.t * apq);
          dev::store(A + (q * n + q), aqq + r.t * apq);
          dev::store(A + (p * n + q), 0.0f);
          dev::store(A + (q * n + p), 0.0f);
        }
    dev::memcpy_strided(w, A, dev::CopyShape{4, static_cast<std::size_t>(n), 4, (n + 1) * 4}, dev::Dir::kNram2Nram);
    dev::memcpy(linalg::gdram_at(L.out, b * n), w, static_cast<std::size_t>(n) * 4, dev::Dir::kNram2Gdram);
    if (L.vectors) dev::memcpy(linalg::gdram_at(L.vectors, b * n * n), Qt, matrix_bytes, dev::Dir::kNram2Gdram);
  }
}

void singular_body(const JacobiLaunch& L) {
  const std::int64_t k = L.rows, l = L.cols;
  const auto W = linalg::nram_floats(k * l), t1 = linalg::nram_floats(l), t2 = linalg::nram_floats(l),
             red = linalg::nram_floats(1), s = linalg::nram_floats(k), Qt = linalg::nram_floats(L.vectors ? k * k : 1),
             one = linalg::nram_floats(1);
  dev::vec_fill(DType::kFloat32, one, 1.0, 1);
  const auto len = static_cast<std::size_t>(l);
  auto reduce = [&](VecReduceOp op, sim::Nram<float> x) {
    dev::vec_reduce(op, DType::kFloat32, red, x, 1, len);
    return dev::load(red);
  };
  for (std::int64_t b = dev::task_id(); b < L.batch; b += dev::task_dim()) {
    dev::memcpy(W, linalg::gdram_at(L.a, b * k * l), static_cast<std::size_t>(k * l) * 4, dev::Dir::kGdram2Nram);
    if (L.vectors) set_identity(Qt, one, k);
    for (std::int64_t sweep = 0; sweep < L.sweeps; ++sweep)
      for (std::int64_t i = 0; i + 1 < k; ++i)
        for (std::int64_t j = i + 1; j < k; ++j) {
          const auto wi = W + i * l, wj = W + j * l;
          const float alpha = reduce(VecReduceOp::kSumSquares, wi), beta = reduce(VecReduceOp::kSumSquares, wj);
          dev::vec_binary(VecBinaryOp::kMul, DType::kFloat32, t1, wi, wj, len);
          const float gamma = reduce(VecReduceOp::kSum, t1);
          const linalg::Rotation r = linalg::jacobi_rotation(alpha, beta, gamma);
          linalg::rotate_rows(wi, wj, r, t1, t2, l);
          if (L.vectors) linalg::rotate_rows(Qt + i * k, Qt + j * k, r, t1, t2, k);
        }
    dev::vec_reduce(VecReduceOp::kSumSquares, DType::kFloat32, s, W, static_cast<std::size_t>(k), len);
    dev::vec_unary(sim::VecUnaryOp::kSqrt, DType::kFloat32, s, s, static_cast<std::size_t>(k));
    dev::memcpy(linalg::gdram_at(L.out, b * k), s, static_cast<std::size_t>(k) * 4, dev::Dir::kNram2Gdram);
    if (L.vectors) {
      dev::memcpy(linalg::gdram_at(L.vectors, b * k * k), Qt, static_cast<std::size_t>(k * k) * 4, dev::Dir::kNram2Gdram);
      dev::memcpy(linalg::gdram_at(L.rotated, b * k * l), W, static_cast<std::size_t>(k * l) * 4, dev::Dir::kNram2Gdram);
    }
  }
}

// vectors / rotated: null descriptors for values only (rotated only one-sided, with vectors).
Status launch_jacobi(Handle* h, const char* op, bool symmetric, const TensorDesc& a, const void* a_ptr,
                     const TensorDesc& out, void* out_ptr, const TensorDesc* vectors, void* vectors_ptr,
                     const TensorDesc* rotated, void* rotated_ptr) {
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  linalg::MatrixBatch mb;
  MLU_RETURN_IF_ERROR(linalg::check_matrices(&a, a_ptr, op, "a", &mb));
  if (symmetric)
    MLU_CHECK(mb.rows == mb.cols, Status::kBadParam, std::string(op) + ": a " + a.str() + " must be square");
  else
    MLU_CHECK(mb.rows <= mb.cols, Status::kBadParam,
              std::string(op) + ": a " + a.str() + " must have at most as many rows as columns (pass A^T)");
  MLU_RETURN_IF_ERROR(linalg::check_per_matrix(&out, out_ptr, DType::kFloat32, a, {mb.rows}, op, symmetric ? "w" : "s"));
  const bool with_vectors = vectors != nullptr;
  if (with_vectors) {
    MLU_RETURN_IF_ERROR(linalg::check_per_matrix(vectors, vectors_ptr, DType::kFloat32, a, {mb.rows, mb.rows}, op,
                                                 symmetric ? "v" : "qt"));
    if (!symmetric)
      MLU_RETURN_IF_ERROR(linalg::check_per_matrix(rotated, rotated_ptr, DType::kFloat32, a, {mb.rows, mb.cols}, op,
                                                   "rotated"));
  }
  MLU_CHECK(linalg::jacobi_nram_bytes(mb.rows, mb.cols, with_vectors) <= linalg::nram_budget(*h), Status::kNotSupported,
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
  if (with_vectors) L->vectors = reinterpret_cast<std::uintptr_t>(vectors_ptr);
  if (with_vectors && !symmetric) L->rotated = reinterpret_cast<std::uintptr_t>(rotated_ptr);
  MLU_RETURN_IF_ERROR(launch(*h, op, [L] { L->symmetric ? eigen_body(*L) : singular_body(*L); },
                             block_dim(*h, static_cast<std::uint64_t>(mb.batch)), CNRT_FUNC_TYPE_BLOCK));
  // Per rotation: two rows of `cols` rotated (4 multiplies), plus the one-sided dot products,
  // plus two rows of the accumulated rotation (`rows` long) with vectors.
  const std::uint64_t pairs = static_cast<std::uint64_t>(mb.rows * (mb.rows - 1) / 2);
  const std::uint64_t per_pair =
      static_cast<std::uint64_t>(mb.cols) * (symmetric ? 4 : 7) + (with_vectors ? 4 * static_cast<std::uint64_t>(mb.rows) : 0);
  const std::int64_t written = mb.rows + (with_vectors ? mb.rows * mb.rows + (symmetric ? 0 : mb.rows * mb.cols) : 0);
  record(*h, op, static_cast<std::uint64_t>(mb.batch * L->sweeps) * pairs * per_pair,
         static_cast<std::uint64_t>(mb.batch) * static_cast<std::uint64_t>(mb.rows * mb.cols + written) * 4, 1);
  return Status::kSuccess;
}

}  // namespace

namespace linalg {
std::size_t jacobi_nram_bytes(std::int64_t rows, std::int64_t cols, bool vectors) {
  return nram_bytes({rows * cols, cols, cols, rows, 1, vectors ? rows * rows : 1, 1});
}
}  // namespace linalg

Status symmetric_eigenvalues(Handle* h, const TensorDesc& a, const void* a_ptr, const TensorDesc& w, void* w_ptr) {
  return launch_jacobi(h, "symmetric_eigenvalues", true, a, a_ptr, w, w_ptr, nullptr, nullptr, nullptr, nullptr);
}

Status symmetric_eigen(Handle* h, const TensorDesc& a, const void* a_ptr, const TensorDesc& w, void* w_ptr,
                       const TensorDesc& v, void* v_ptr) {
  return launch_jacobi(h, "symmetric_eigen", true, a, a_ptr, w, w_ptr, &v, v_ptr, nullptr, nullptr);
}

Status singular_values(Handle* h, const TensorDesc& a, const void* a_ptr, const TensorDesc& s, void* s_ptr) {
  return launch_jacobi(h, "singular_values", false, a, a_ptr, s, s_ptr, nullptr, nullptr, nullptr, nullptr);
}

Status singular_value_rotation(Handle* h, const TensorDesc& a, const void* a_ptr, const TensorDesc& s, void* s_ptr,
                               const TensorDesc& qt, void* qt_ptr, const TensorDesc& rotated, void* rotated_ptr) {
  return launch_jacobi(h, "singular_value_rotation", false, a, a_ptr, s, s_ptr, &qt, qt_ptr, &rotated, rotated_ptr);
}

}  // namespace mlusim::mlu
