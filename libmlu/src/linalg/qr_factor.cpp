// qr_factor: Householder QR (LAPACK geqr2) of a batch of matrices, one per core in NRAM
// (linalg.h). Step k = 0 .. p-1 (r = m - k rows from the diagonal down):
//
//   x      = A[k:, k]                          strided NRAM gather
//   s      = |x[1:]|^2                         VFU sum-of-squares reduce, one scalar load
//   beta   = -sign(alpha) sqrt(alpha^2 + s), tau = (beta - alpha) / beta, scale = 1 / (alpha - beta)
//            (alpha = x[0]; scalar unit, as slarfg; s = 0 gives tau = 0, H_k = I)
//   v      = x with v[0] = 1, v[1:] = x[1:] * scale
//   w      = v^T A[k:, :]                      vec_matmul (M = 1, K = r, N = n)
//   w[:k+1] = 0                                (the stored reflectors and column k stay)
//   A[k:, :] += (-tau v) w                     vec_matmul (M = r, K = 1, N = n, accumulate)
//   A[k, k] = beta, A[k+1:, k] = v[1:]         scalar store, strided scatter
//
// The same intrinsics run whatever the values (tau = 0 still applies its zero update).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "linalg/linalg_common.h"
#include "mlusim/mlu/linalg.h"

namespace mlusim::mlu {
namespace {

using sim::VecBinaryOp;

struct QrLaunch {
  linalg::MatrixBatch mb;
  std::uint64_t a = 0, qr = 0, tau = 0;
};

void qr_body(const QrLaunch& L) {
  const std::int64_t m = L.mb.rows, n = L.mb.cols, p = std::min(m, n);
  const auto A = linalg::nram_floats(m * n), v = linalg::nram_floats(m), nv = linalg::nram_floats(m),
             w = linalg::nram_floats(n), red = linalg::nram_floats(1), taus = linalg::nram_floats(p);
  const auto bytes = static_cast<std::size_t>(m * n) * 4;
  for (std::int64_t b = dev::task_id(); b < L.mb.batch; b += dev::task_dim()) {
    if (bytes > 0) dev::memcpy(A, linalg::gdram_at(L.a, b * m * n), bytes, dev::Dir::kGdram2Nram);
    for (std::int64_t k = 0; k < p; ++k) {
      const std::int64_t r = m - k;
      const auto len = static_cast<std::size_t>(r);
      dev::memcpy_strided(v, A + (k * n + k), dev::CopyShape{4, len, 4, n * 4}, dev::Dir::kNram2Nram);
      const float alpha = dev::load(v);
      float s = 0.0f;
      if (r > 1) {
        dev::vec_reduce(sim::VecReduceOp::kSumSquares, DType::kFloat32, red, v + 1, 1, len - 1);
        s = dev::load(red);
      }
      float beta = alpha, tau = 0.0f, scale = 1.0f;
      if (s != 0.0f) {
        beta = -std::copysign(std::sqrt(alpha * alpha + s), alpha);
        tau = (beta - alpha) / beta;
        scale = 1.0f / (alpha - beta);
      }
      dev::store(v, 1.0f);
      if (r > 1) dev::vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, v + 1, v + 1, scale, len - 1);
      dev::vec_matmul(DType::kFloat32, DType::kFloat32, w, v, A + k * n, 1, len, static_cast<std::size_t>(n), false,
                      false);
      dev::vec_fill(DType::kFloat32, w, 0.0, static_cast<std::size_t>(k + 1));
      dev::vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, nv, v, -static_cast<double>(tau), len);
      dev::vec_matmul(DType::kFloat32, DType::kFloat32, A + k * n, nv, w, len, 1, static_cast<std::size_t>(n), false,
                      true);
      dev::store(A + (k * n + k), beta);
      if (r > 1)
        dev::memcpy_strided(A + ((k + 1) * n + k), v + 1, dev::CopyShape{4, len - 1, n * 4, 4}, dev::Dir::kNram2Nram);
      dev::store(taus + k, tau);
    }
    if (bytes > 0) dev::memcpy(linalg::gdram_at(L.qr, b * m * n), A, bytes, dev::Dir::kNram2Gdram);
    if (p > 0)
      dev::memcpy(linalg::gdram_at(L.tau, b * p), taus, static_cast<std::size_t>(p) * 4, dev::Dir::kNram2Gdram);
  }
}

}  // namespace

namespace linalg {
std::size_t qr_factor_nram_bytes(std::int64_t m, std::int64_t n) {
  return nram_bytes({m * n, m, m, n, 1, std::min(m, n)});
}
}  // namespace linalg

Status qr_factor(Handle* h, const TensorDesc& a, const void* a_ptr, const TensorDesc& qr, void* qr_ptr,
                 const TensorDesc& tau, void* tau_ptr) {
  constexpr const char* kOp = "qr_factor";
  MLU_RETURN_IF_ERROR(check_handle(h, kOp));
  linalg::MatrixBatch mb, out;
  MLU_RETURN_IF_ERROR(linalg::check_matrices(&a, a_ptr, kOp, "a", &mb));
  MLU_RETURN_IF_ERROR(linalg::check_matrices(&qr, qr_ptr, kOp, "qr", &out));
  MLU_RETURN_IF_ERROR(check_same_shape(a, qr, kOp, "a", "qr"));
  const std::int64_t m = mb.rows, n = mb.cols, p = std::min(m, n);
  MLU_RETURN_IF_ERROR(linalg::check_per_matrix(&tau, tau_ptr, DType::kFloat32, a, {p}, kOp, "tau"));
  MLU_CHECK(linalg::qr_factor_nram_bytes(m, n) <= linalg::nram_budget(*h), Status::kNotSupported,
            std::string(kOp) + ": a " + std::to_string(m) + " x " + std::to_string(n) +
                " matrix does not fit one core's NRAM (" + std::to_string(h->nram_bytes()) + " bytes)");
  if (mb.batch == 0 || m * n == 0) {
    record(*h, kOp, 0, 0, 0);
    return Status::kSuccess;
  }
  auto L = std::make_shared<QrLaunch>();
  L->mb = mb;
  L->a = reinterpret_cast<std::uintptr_t>(a_ptr);
  L->qr = reinterpret_cast<std::uintptr_t>(qr_ptr);
  L->tau = reinterpret_cast<std::uintptr_t>(tau_ptr);
  MLU_RETURN_IF_ERROR(launch(*h, kOp, [L] { qr_body(*L); }, block_dim(*h, static_cast<std::uint64_t>(mb.batch)),
                             CNRT_FUNC_TYPE_BLOCK));
  std::uint64_t macs = 0;  // the two products per step over the trailing columns
  for (std::int64_t k = 0; k < p; ++k) macs += static_cast<std::uint64_t>(2 * (m - k) * (n - k - 1) + (m - k));
  record(*h, kOp, macs * static_cast<std::uint64_t>(mb.batch),
         static_cast<std::uint64_t>(mb.batch) * static_cast<std::uint64_t>(2 * m * n + p) * 4, 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
