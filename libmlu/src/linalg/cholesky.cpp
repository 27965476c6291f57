// cholesky: A = L L^T for a batch of symmetric positive-definite matrices, one per core in NRAM
// (linalg.h). Left-looking by columns j = 0 .. n-1 (r = n - j), L zero-filled first so that the
// columns not yet computed contribute nothing:
//
//   v      = A[j:, j]                          strided NRAM gather (the lower triangle only)
//   v     += (-L[j, :]) L[j:, :]^T             one vec_matmul (M = 1, K = n, N = r, B transposed:
//                                              L's rows j.. are B's rows, contiguous)
//   d      = v[0]; info = j + 1 if !(d > 0)    scalar load (LAPACK potrf's test, NaN included)
//   v[0]   = sqrt(d); v[1:] /= v[0]            VFU
//   L[j:, j] = v                               strided NRAM scatter
//
// A failed column does not stop the loop (the work never depends on values); its NaNs spread to
// the later columns, which LAPACK leaves unspecified. VFU cycles per column: n x ceil(r / lanes)
// for the product plus passes over r.
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "linalg/linalg_common.h"
#include "mlusim/mlu/linalg.h"

namespace mlusim::mlu {
namespace {

struct CholLaunch {
  std::int64_t batch = 0, n = 0;
  std::uint64_t a = 0, l = 0, info = 0;
};

void cholesky_body(const CholLaunch& L) {
  const std::int64_t n = L.n;
  const auto A = linalg::nram_floats(n * n), F = linalg::nram_floats(n * n), v = linalg::nram_floats(n),
             neg_row = linalg::nram_floats(n);
  const auto info = dev::nram_alloc<std::int32_t>(1);
  const auto bytes = static_cast<std::size_t>(n * n) * 4;
  for (std::int64_t b = dev::task_id(); b < L.batch; b += dev::task_dim()) {
    if (bytes > 0) {
      dev::memcpy(A, linalg::gdram_at(L.a, b * n * n), bytes, dev::Dir::kGdram2Nram);
      dev::vec_fill(DType::kFloat32, F, 0.0, static_cast<std::size_t>(n * n));
    }
    std::int32_t failed = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t r = n - j;
      dev::memcpy_strided(v, A + (j * n + j), dev::CopyShape{4, static_cast<std::size_t>(r), 4, n * 4},
                          dev::Dir::kNram2Nram);
      if (j > 0) {
        // Whole rows (K = n, B's rows contiguous): L[j, j:] and L[j:, j:] are still zero.
        dev::vec_unary(sim::VecUnaryOp::kNeg, DType::kFloat32, neg_row, F + j * n, static_cast<std::size_t>(n));
        dev::vec_matmul(DType::kFloat32, DType::kFloat32, v, neg_row, F + j * n, 1, static_cast<std::size_t>(n),
                        static_cast<std::size_t>(r), true, true);
      }
      const float d = dev::load(v);
      if (!(d > 0.0f) && failed == 0) failed = static_cast<std::int32_t>(j + 1);
      dev::vec_unary(sim::VecUnaryOp::kSqrt, DType::kFloat32, v, v, 1);
      if (r > 1) {
        const double s = static_cast<double>(dev::load(v));
        dev::vec_binary_scalar(sim::VecBinaryOp::kDiv, DType::kFloat32, v + 1, v + 1, s,
                               static_cast<std::size_t>(r - 1));
      }
      dev::memcpy_strided(F + (j * n + j), v, dev::CopyShape{4, static_cast<std::size_t>(r), n * 4, 4},
                          dev::Dir::kNram2Nram);
    }
    dev::store(info, failed);
    if (bytes > 0) dev::memcpy(linalg::gdram_at(L.l, b * n * n), F, bytes, dev::Dir::kNram2Gdram);
    dev::memcpy(linalg::gdram_at(L.info, b), info, 4, dev::Dir::kNram2Gdram);
  }
}

}  // namespace

namespace linalg {
std::size_t cholesky_nram_bytes(std::int64_t n) { return nram_bytes({n * n, n * n, n, n, 1}); }
}  // namespace linalg

Status cholesky(Handle* h, const TensorDesc& a, const void* a_ptr, const TensorDesc& l, void* l_ptr,
                const TensorDesc& info, void* info_ptr) {
  constexpr const char* kOp = "cholesky";
  MLU_RETURN_IF_ERROR(check_handle(h, kOp));
  linalg::MatrixBatch am, lm;
  MLU_RETURN_IF_ERROR(linalg::check_matrices(&a, a_ptr, kOp, "a", &am));
  MLU_RETURN_IF_ERROR(linalg::check_matrices(&l, l_ptr, kOp, "l", &lm));
  MLU_CHECK(am.rows == am.cols, Status::kBadParam, std::string(kOp) + ": a " + a.str() + " must be square");
  MLU_RETURN_IF_ERROR(check_same_shape(a, l, kOp, "a", "l"));
  MLU_RETURN_IF_ERROR(linalg::check_per_matrix(&info, info_ptr, DType::kInt32, a, {}, kOp, "info"));
  const std::int64_t n = am.rows;
  MLU_CHECK(linalg::cholesky_nram_bytes(n) <= linalg::nram_budget(*h), Status::kNotSupported,
            std::string(kOp) + ": a " + std::to_string(n) + " x " + std::to_string(n) +
                " matrix does not fit one core's NRAM (" + std::to_string(h->nram_bytes()) + " bytes)");
  if (am.batch == 0) {
    record(*h, kOp, 0, 0, 0);
    return Status::kSuccess;
  }
  auto L = std::make_shared<CholLaunch>();
  L->batch = am.batch;
  L->n = n;
  L->a = reinterpret_cast<std::uintptr_t>(a_ptr);
  L->l = reinterpret_cast<std::uintptr_t>(l_ptr);
  L->info = reinterpret_cast<std::uintptr_t>(info_ptr);
  MLU_RETURN_IF_ERROR(launch(*h, kOp, [L] { cholesky_body(*L); }, block_dim(*h, static_cast<std::uint64_t>(am.batch)),
                             CNRT_FUNC_TYPE_BLOCK));
  record(*h, kOp, static_cast<std::uint64_t>(am.batch) * static_cast<std::uint64_t>(n * n * n / 6 + n * n / 2),
         static_cast<std::uint64_t>(am.batch) * static_cast<std::uint64_t>(2 * n * n + 1) * 4, 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
