// householder_product: Q = H_0 ... H_{k-1} (first n columns), LAPACK org2r, one matrix per core
// in NRAM (linalg.h). Q starts as the m x n identity (a zero fill and a strided copy of a one
// onto the diagonal); for i = k-1 .. 0 (r = m - i):
//
//   v      = V[i:, i] with v[0] = 1            strided gather, scalar store
//   w      = v^T Q[i:, :]                      vec_matmul (M = 1, K = r, N = n)
//   Q[i:, :] += (-tau_i v) w                   vec_matmul (M = r, K = 1, N = n, accumulate)
//
// Q's columns before i are still unit vectors that H_i leaves alone, so the products run over
// whole rows (contiguous) without changing them.
#include <algorithm>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "linalg/linalg_common.h"
#include "mlusim/mlu/linalg.h"

namespace mlusim::mlu {
namespace {

struct OrgqrLaunch {
  std::int64_t batch = 0, m = 0, n = 0, k = 0;
  std::uint64_t v = 0, tau = 0, q = 0;
};

void orgqr_body(const OrgqrLaunch& L) {
  const std::int64_t m = L.m, n = L.n, k = L.k;
  const auto V = linalg::nram_floats(m * n), Q = linalg::nram_floats(m * n), v = linalg::nram_floats(m),
             nv = linalg::nram_floats(m), w = linalg::nram_floats(n), taus = linalg::nram_floats(k),
             one = linalg::nram_floats(1);
  dev::vec_fill(DType::kFloat32, one, 1.0, 1);
  const auto bytes = static_cast<std::size_t>(m * n) * 4;
  for (std::int64_t b = dev::task_id(); b < L.batch; b += dev::task_dim()) {
    dev::memcpy(V, linalg::gdram_at(L.v, b * m * n), bytes, dev::Dir::kGdram2Nram);
    if (k > 0) dev::memcpy(taus, linalg::gdram_at(L.tau, b * k), static_cast<std::size_t>(k) * 4, dev::Dir::kGdram2Nram);
    dev::vec_fill(DType::kFloat32, Q, 0.0, static_cast<std::size_t>(m * n));
    dev::memcpy_strided(Q, one, dev::CopyShape{4, static_cast<std::size_t>(n), (n + 1) * 4, 0}, dev::Dir::kNram2Nram);
    for (std::int64_t i = k - 1; i >= 0; --i) {
      const std::int64_t r = m - i;
      const auto len = static_cast<std::size_t>(r);
      dev::memcpy_strided(v, V + (i * n + i), dev::CopyShape{4, len, 4, n * 4}, dev::Dir::kNram2Nram);
      dev::store(v, 1.0f);
      const double tau = dev::load(taus + i);
      dev::vec_matmul(DType::kFloat32, DType::kFloat32, w, v, Q + i * n, 1, len, static_cast<std::size_t>(n), false,
                      false);
      dev::vec_binary_scalar(sim::VecBinaryOp::kMul, DType::kFloat32, nv, v, -tau, len);
      dev::vec_matmul(DType::kFloat32, DType::kFloat32, Q + i * n, nv, w, len, 1, static_cast<std::size_t>(n), false,
                      true);
    }
    dev::memcpy(linalg::gdram_at(L.q, b * m * n), Q, bytes, dev::Dir::kNram2Gdram);
  }
}

}  // namespace

namespace linalg {
std::size_t householder_product_nram_bytes(std::int64_t m, std::int64_t n) {
  return nram_bytes({m * n, m * n, m, m, n, n, 1});
}
}  // namespace linalg

Status householder_product(Handle* h, const TensorDesc& v, const void* v_ptr, const TensorDesc& tau,
                           const void* tau_ptr, const TensorDesc& q, void* q_ptr) {
  constexpr const char* kOp = "householder_product";
  MLU_RETURN_IF_ERROR(check_handle(h, kOp));
  linalg::MatrixBatch vm, qm;
  MLU_RETURN_IF_ERROR(linalg::check_matrices(&v, v_ptr, kOp, "v", &vm));
  MLU_RETURN_IF_ERROR(linalg::check_matrices(&q, q_ptr, kOp, "q", &qm));
  MLU_RETURN_IF_ERROR(check_same_shape(v, q, kOp, "v", "q"));
  const std::int64_t m = vm.rows, n = vm.cols;
  MLU_CHECK(m >= n, Status::kBadParam, std::string(kOp) + ": v " + v.str() + " must have at least as many rows as columns");
  MLU_RETURN_IF_ERROR(check_desc(&tau, kOp, "tau"));
  const std::int64_t k = tau.ndim() >= 1 ? tau.dim(tau.ndim() - 1) : -1;
  MLU_CHECK(k >= 0 && k <= n, Status::kBadParam,
            std::string(kOp) + ": tau " + tau.str() + " must hold at most " + std::to_string(n) + " scalars per matrix");
  MLU_RETURN_IF_ERROR(linalg::check_per_matrix(&tau, tau_ptr, DType::kFloat32, v, {k}, kOp, "tau"));
  MLU_CHECK(linalg::householder_product_nram_bytes(m, n) <= linalg::nram_budget(*h), Status::kNotSupported,
            std::string(kOp) + ": a " + std::to_string(m) + " x " + std::to_string(n) +
                " matrix does not fit one core's NRAM (" + std::to_string(h->nram_bytes()) + " bytes)");
  if (vm.batch == 0 || m * n == 0) {
    record(*h, kOp, 0, 0, 0);
    return Status::kSuccess;
  }
  auto L = std::make_shared<OrgqrLaunch>();
  L->batch = vm.batch;
  L->m = m;
  L->n = n;
  L->k = k;
  L->v = reinterpret_cast<std::uintptr_t>(v_ptr);
  L->tau = reinterpret_cast<std::uintptr_t>(tau_ptr);
  L->q = reinterpret_cast<std::uintptr_t>(q_ptr);
  MLU_RETURN_IF_ERROR(launch(*h, kOp, [L] { orgqr_body(*L); }, block_dim(*h, static_cast<std::uint64_t>(vm.batch)),
                             CNRT_FUNC_TYPE_BLOCK));
  record(*h, kOp, static_cast<std::uint64_t>(vm.batch * 2 * k * m * n),
         static_cast<std::uint64_t>(vm.batch) * static_cast<std::uint64_t>(2 * m * n + k) * 4, 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
