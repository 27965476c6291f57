// lu_factor: LU with partial pivoting of a batch of matrices, one matrix per core in NRAM
// (linalg.h). Right-looking unblocked getf2, step k = 0 .. p-1 (p = min(m, n), r = m - k):
//
//   pivot search   col = A[k:, k] (strided NRAM gather); mag = |col|; mx = max(mag) (reduce);
//                  key = (mag == mx) * -2^22 + iota; first = min(key) + 2^22 (reduce): the first
//                  row attaining the maximum, as LAPACK's isamax. 2 scalar loads.
//   interchange    rows k and k + first swapped through a row buffer (3 NRAM copies of n, done
//                  also when first = 0 so that the work never depends on values); pivots[k] is
//                  stored by the scalar unit.
//   scale          A[k+1:, k] /= A[k, k] (gather, divide, scatter); a zero pivot leaves the
//                  (then all-zero) column as it is, as getf2 skips it, and sets info.
//   update         A[k+1:, :] += (-A[k+1:, k]) x u, u = A[k, :] with its first k + 1 entries
//                  zeroed: one vec_matmul (M = r-1, K = 1, N = n, accumulate) over whole rows,
//                  so the trailing block needs no strided access (columns <= k add exact zeros).
//
// VFU cycles per step: the intrinsics' formula over lengths r (search, scale) and (r-1) x
// ceil(n / lanes) (update); DMA: the matrix in and out once, pivots and info once.
#include <algorithm>
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
using sim::VecUnaryOp;

constexpr double kFar = 4194304.0;  // 2^22 > any row count that fits NRAM; exact in fp32 with it

struct LuLaunch {
  linalg::MatrixBatch mb;
  bool pivot = true;
  std::uint64_t a = 0, lu = 0, pivots = 0, info = 0;
};

dev::CopyShape column_gather(std::int64_t count, std::int64_t n) {  // NRAM column -> vector
  return dev::CopyShape{4, static_cast<std::size_t>(count), 4, n * 4};
}
dev::CopyShape column_scatter(std::int64_t count, std::int64_t n) {  // vector -> NRAM column
  return dev::CopyShape{4, static_cast<std::size_t>(count), n * 4, 4};
}

// Row (0-based, relative to k) of the first largest |A[k + i, k]|; 0 for a NaN-only column.
std::int64_t find_pivot(sim::Nram<float> col, sim::Nram<float> mag, sim::Nram<float> key, sim::Nram<float> idx,
                        sim::Nram<float> red, std::int64_t r) {
  const auto len = static_cast<std::size_t>(r);
  dev::vec_unary(VecUnaryOp::kAbs, DType::kFloat32, mag, col, len);
  dev::vec_reduce(VecReduceOp::kMax, DType::kFloat32, red, mag, 1, len);
  const float mx = dev::load(red);
  dev::vec_binary_scalar(VecBinaryOp::kEq, DType::kFloat32, key, mag, mx, len);
  dev::vec_binary_scalar(VecBinaryOp::kMul, DType::kFloat32, key, key, -kFar, len);
  dev::vec_binary(VecBinaryOp::kAdd, DType::kFloat32, key, key, idx, len);
  dev::vec_reduce(VecReduceOp::kMin, DType::kFloat32, red, key, 1, len);
  const double first = static_cast<double>(dev::load(red)) + kFar;
  return first >= 0.0 && first < static_cast<double>(r) ? static_cast<std::int64_t>(first) : 0;
}

void lu_body(const LuLaunch& L) {
  const std::int64_t m = L.mb.rows, n = L.mb.cols, p = std::min(m, n);
  const auto A = linalg::nram_floats(m * n), col = linalg::nram_floats(m), mag = linalg::nram_floats(m),
             key = linalg::nram_floats(m), idx = linalg::nram_floats(m), u = linalg::nram_floats(n),
             row = linalg::nram_floats(n), red = linalg::nram_floats(1);
  const auto piv = dev::nram_alloc<std::int32_t>(static_cast<std::size_t>(std::max<std::int64_t>(p, 1)));
  const auto info = dev::nram_alloc<std::int32_t>(1);
  linalg::iota(idx, m);
  const auto row_bytes = static_cast<std::size_t>(n) * 4, bytes = static_cast<std::size_t>(m * n) * 4;
  for (std::int64_t b = dev::task_id(); b < L.mb.batch; b += dev::task_dim()) {
    if (bytes > 0) dev::memcpy(A, linalg::gdram_at(L.a, b * m * n), bytes, dev::Dir::kGdram2Nram);
    std::int32_t first_zero = 0;
    for (std::int64_t k = 0; k < p; ++k) {
      const std::int64_t r = m - k;
      std::int64_t pr = k;
      if (L.pivot) {
        dev::memcpy_strided(col, A + (k * n + k), column_gather(r, n), dev::Dir::kNram2Nram);
        pr = k + find_pivot(col, mag, key, idx, red, r);
        dev::memcpy(row, A + pr * n, row_bytes, dev::Dir::kNram2Nram);
        dev::memcpy(A + pr * n, A + k * n, row_bytes, dev::Dir::kNram2Nram);
        dev::memcpy(A + k * n, row, row_bytes, dev::Dir::kNram2Nram);
      }
      dev::store(piv + k, static_cast<std::int32_t>(pr + 1));
      const float d = dev::load(A + (k * n + k));
      if (d == 0.0f && first_zero == 0) first_zero = static_cast<std::int32_t>(k + 1);
      if (r == 1) continue;
      // With pivoting a zero pivot means the column below is zero: divide by 1 (getf2 skips it).
      const double divisor = d == 0.0f && L.pivot ? 1.0 : static_cast<double>(d);
      const auto below = static_cast<std::size_t>(r - 1);
      dev::memcpy_strided(col, A + ((k + 1) * n + k), column_gather(r - 1, n), dev::Dir::kNram2Nram);
      dev::vec_binary_scalar(VecBinaryOp::kDiv, DType::kFloat32, col, col, divisor, below);
      dev::memcpy_strided(A + ((k + 1) * n + k), col, column_scatter(r - 1, n), dev::Dir::kNram2Nram);
      if (k + 1 == n) continue;
      dev::vec_unary(VecUnaryOp::kNeg, DType::kFloat32, col, col, below);
      dev::memcpy(u, A + k * n, row_bytes, dev::Dir::kNram2Nram);
      dev::vec_fill(DType::kFloat32, u, 0.0, static_cast<std::size_t>(k + 1));
      dev::vec_matmul(DType::kFloat32, DType::kFloat32, A + (k + 1) * n, col, u, below, 1,
                      static_cast<std::size_t>(n), false, true);
    }
    dev::store(info, first_zero);
    if (bytes > 0) dev::memcpy(linalg::gdram_at(L.lu, b * m * n), A, bytes, dev::Dir::kNram2Gdram);
    if (p > 0)
      dev::memcpy(linalg::gdram_at(L.pivots, b * p), piv, static_cast<std::size_t>(p) * 4, dev::Dir::kNram2Gdram);
    dev::memcpy(linalg::gdram_at(L.info, b), info, 4, dev::Dir::kNram2Gdram);
  }
}

}  // namespace

namespace linalg {
std::size_t lu_factor_nram_bytes(std::int64_t m, std::int64_t n) {
  return nram_bytes({m * n, m, m, m, m, n, n, 1, std::min(m, n), 1});
}
}  // namespace linalg

Status lu_factor(Handle* h, const TensorDesc& a, const void* a_ptr, bool pivot, const TensorDesc& lu, void* lu_ptr,
                 const TensorDesc& pivots, void* pivots_ptr, const TensorDesc& info, void* info_ptr) {
  constexpr const char* kOp = "lu_factor";
  MLU_RETURN_IF_ERROR(check_handle(h, kOp));
  linalg::MatrixBatch mb, out;
  MLU_RETURN_IF_ERROR(linalg::check_matrices(&a, a_ptr, kOp, "a", &mb));
  MLU_RETURN_IF_ERROR(linalg::check_matrices(&lu, lu_ptr, kOp, "lu", &out));
  MLU_RETURN_IF_ERROR(check_same_shape(a, lu, kOp, "a", "lu"));
  const std::int64_t m = mb.rows, n = mb.cols, p = std::min(m, n);
  MLU_RETURN_IF_ERROR(linalg::check_per_matrix(&pivots, pivots_ptr, DType::kInt32, a, {p}, kOp, "pivots"));
  MLU_RETURN_IF_ERROR(linalg::check_per_matrix(&info, info_ptr, DType::kInt32, a, {}, kOp, "info"));
  MLU_CHECK(linalg::lu_factor_nram_bytes(m, n) <= linalg::nram_budget(*h), Status::kNotSupported,
            std::string(kOp) + ": a " + std::to_string(m) + " x " + std::to_string(n) +
                " matrix does not fit one core's NRAM (" + std::to_string(h->nram_bytes()) +
                " bytes; blocked factorization through GDRAM is not implemented)");
  if (mb.batch == 0) {
    record(*h, kOp, 0, 0, 0);
    return Status::kSuccess;
  }
  auto L = std::make_shared<LuLaunch>();
  L->mb = mb;
  L->pivot = pivot;
  L->a = reinterpret_cast<std::uintptr_t>(a_ptr);
  L->lu = reinterpret_cast<std::uintptr_t>(lu_ptr);
  L->pivots = reinterpret_cast<std::uintptr_t>(pivots_ptr);
  L->info = reinterpret_cast<std::uintptr_t>(info_ptr);
  MLU_RETURN_IF_ERROR(launch(*h, kOp, [L] { lu_body(*L); }, block_dim(*h, static_cast<std::uint64_t>(mb.batch)),
                             CNRT_FUNC_TYPE_BLOCK));
  std::uint64_t macs = 0;  // the trailing updates (and the column divisions)
  for (std::int64_t k = 0; k < p; ++k) macs += static_cast<std::uint64_t>((m - k - 1) * (n - k - 1) + (m - k - 1));
  record(*h, kOp, macs * static_cast<std::uint64_t>(mb.batch),
         static_cast<std::uint64_t>(mb.batch) * static_cast<std::uint64_t>(2 * m * n + p + 1) * 4, 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
