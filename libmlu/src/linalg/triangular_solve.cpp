// triangular_solve: X = A^-1 B for triangular A, a batch of matrices, one per core in NRAM
// (linalg.h). A is loaded once per matrix and negated (one VFU pass), so that each row of the
// substitution is a single accumulating product:
//
//   lower   x_i += (-A[i, :i]) X[:i, :]   (vec_matmul M = 1, K = i, N = kc), i = 0 .. n-1
//   upper   x_i += (-A[i, i+1:]) X[i+1:, :] (K = n-1-i), i = n-1 .. 0
//   then    x_i /= A[i, i]   (a scalar load of the diagonal and one division; none when unit)
//
// B's columns are independent: they go through NRAM in chunks of kc columns (strided 2-D DMA)
// when n x k does not fit beside A. VFU cycles per row: i x ceil(kc / lanes) for the product.
#include <algorithm>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "linalg/linalg_common.h"
#include "mlusim/mlu/linalg.h"

namespace mlusim::mlu {
namespace {

struct TrsmLaunch {
  std::int64_t batch = 0, n = 0, k = 0, kc = 1;
  bool upper = false, unit = false;
  std::uint64_t a = 0, b = 0, x = 0;
};

void trsm_body(const TrsmLaunch& L) {
  const std::int64_t n = L.n, k = L.k, kc_max = L.kc;
  const auto nA = linalg::nram_floats(n * n), X = linalg::nram_floats(n * kc_max);
  for (std::int64_t b = dev::task_id(); b < L.batch; b += dev::task_dim()) {
    dev::memcpy(nA, linalg::gdram_at(L.a, b * n * n), static_cast<std::size_t>(n * n) * 4, dev::Dir::kGdram2Nram);
    dev::vec_unary(sim::VecUnaryOp::kNeg, DType::kFloat32, nA, nA, static_cast<std::size_t>(n * n));
    for (std::int64_t c0 = 0; c0 < k; c0 += kc_max) {
      const std::int64_t kc = std::min(kc_max, k - c0);
      const dev::CopyShape in{static_cast<std::size_t>(kc) * 4, static_cast<std::size_t>(n), kc * 4, k * 4};
      const dev::CopyShape out{static_cast<std::size_t>(kc) * 4, static_cast<std::size_t>(n), k * 4, kc * 4};
      dev::memcpy_strided(X, linalg::gdram_at(L.b, b * n * k + c0), in, dev::Dir::kGdram2Nram);
      for (std::int64_t step = 0; step < n; ++step) {
        const std::int64_t i = L.upper ? n - 1 - step : step;
        const auto xi = X + i * kc;
        if (step > 0) {
          if (L.upper)
            dev::vec_matmul(DType::kFloat32, DType::kFloat32, xi, nA + (i * n + i + 1), X + (i + 1) * kc, 1,
                            static_cast<std::size_t>(n - 1 - i), static_cast<std::size_t>(kc), false, true);
          else
            dev::vec_matmul(DType::kFloat32, DType::kFloat32, xi, nA + i * n, X, 1, static_cast<std::size_t>(i),
                            static_cast<std::size_t>(kc), false, true);
        }
        if (!L.unit) {
          const double d = -static_cast<double>(dev::load(nA + (i * n + i)));
          dev::vec_binary_scalar(sim::VecBinaryOp::kDiv, DType::kFloat32, xi, xi, d, static_cast<std::size_t>(kc));
        }
      }
      dev::memcpy_strided(linalg::gdram_at(L.x, b * n * k + c0), X, out, dev::Dir::kNram2Gdram);
    }
  }
}

}  // namespace

namespace linalg {
std::size_t triangular_solve_nram_bytes(std::int64_t n, std::int64_t rhs_cols) {
  return nram_bytes({n * n, n * rhs_cols});
}
}  // namespace linalg

Status triangular_solve(Handle* h, const TensorDesc& a, const void* a_ptr, Triangle triangle, bool unit_diagonal,
                        const TensorDesc& b, const void* b_ptr, const TensorDesc& x, void* x_ptr) {
  constexpr const char* kOp = "triangular_solve";
  MLU_RETURN_IF_ERROR(check_handle(h, kOp));
  MLU_CHECK(triangle == Triangle::kLower || triangle == Triangle::kUpper, Status::kBadParam,
            std::string(kOp) + ": unknown triangle " + std::to_string(static_cast<int>(triangle)));
  linalg::MatrixBatch am, bm, xm;
  MLU_RETURN_IF_ERROR(linalg::check_matrices(&a, a_ptr, kOp, "a", &am));
  MLU_RETURN_IF_ERROR(linalg::check_matrices(&b, b_ptr, kOp, "b", &bm));
  MLU_RETURN_IF_ERROR(linalg::check_matrices(&x, x_ptr, kOp, "x", &xm));
  MLU_CHECK(am.rows == am.cols, Status::kBadParam, std::string(kOp) + ": a " + a.str() + " must be square");
  MLU_CHECK(bm.rows == am.rows && bm.batch == am.batch, Status::kBadParam,
            std::string(kOp) + ": b " + b.str() + " must have a's batch and " + std::to_string(am.rows) +
                " rows (a " + a.str() + ")");
  MLU_RETURN_IF_ERROR(check_same_shape(b, x, kOp, "b", "x"));
  const std::int64_t n = am.rows, k = bm.cols;
  const std::size_t budget = linalg::nram_budget(*h);
  MLU_CHECK(linalg::triangular_solve_nram_bytes(n, 1) <= budget, Status::kNotSupported,
            std::string(kOp) + ": a " + std::to_string(n) + " x " + std::to_string(n) +
                " matrix does not fit one core's NRAM (" + std::to_string(h->nram_bytes()) + " bytes)");
  if (b.numel() == 0) {
    record(*h, kOp, 0, 0, 0);
    return Status::kSuccess;
  }
  auto L = std::make_shared<TrsmLaunch>();
  L->batch = am.batch;
  L->n = n;
  L->k = k;
  L->kc = k;
  while (L->kc > 1 && linalg::triangular_solve_nram_bytes(n, L->kc) > budget) L->kc = (L->kc + 1) / 2;
  L->upper = triangle == Triangle::kUpper;
  L->unit = unit_diagonal;
  L->a = reinterpret_cast<std::uintptr_t>(a_ptr);
  L->b = reinterpret_cast<std::uintptr_t>(b_ptr);
  L->x = reinterpret_cast<std::uintptr_t>(x_ptr);
  MLU_RETURN_IF_ERROR(launch(*h, kOp, [L] { trsm_body(*L); }, block_dim(*h, static_cast<std::uint64_t>(am.batch)),
                             CNRT_FUNC_TYPE_BLOCK));
  record(*h, kOp, static_cast<std::uint64_t>(am.batch) * static_cast<std::uint64_t>(n * (n - 1) / 2 * k),
         static_cast<std::uint64_t>(am.batch) * static_cast<std::uint64_t>(n * n + 2 * n * k) * 4, 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
