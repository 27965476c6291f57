// lu_permutation: the row permutation of lu_factor's pivots (linalg.h). One batch element per
// task step: perm = 0..m-1 (int32 iota on the VFU), then the interchanges in order on the scalar
// unit (per pivot: load it, load both entries, store both swapped), widened to int64 and stored.
#include <algorithm>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "linalg/linalg_common.h"
#include "mlusim/mlu/linalg.h"

namespace mlusim::mlu {
namespace {

struct PermLaunch {
  std::int64_t batch = 0, p = 0, m = 0;
  std::uint64_t pivots = 0, perm = 0;
};

void perm_body(const PermLaunch& L) {
  const std::int64_t m = L.m, p = L.p;
  const auto piv = dev::nram_alloc<std::int32_t>(static_cast<std::size_t>(std::max<std::int64_t>(p, 1)));
  const auto perm = dev::nram_alloc<std::int32_t>(static_cast<std::size_t>(m));
  const auto wide = dev::nram_alloc<std::int64_t>(static_cast<std::size_t>(m));
  for (std::int64_t b = dev::task_id(); b < L.batch; b += dev::task_dim()) {
    dev::vec_fill(DType::kInt32, perm, 0.0, 1);
    for (std::int64_t s = 1; s < m; s *= 2)
      dev::vec_binary_scalar(sim::VecBinaryOp::kAdd, DType::kInt32, perm + s, perm, static_cast<double>(s),
                             static_cast<std::size_t>(std::min(s, m - s)));
    if (p > 0)
      dev::memcpy(piv, linalg::gdram_at(L.pivots, b * p), static_cast<std::size_t>(p) * 4, dev::Dir::kGdram2Nram);
    for (std::int64_t k = 0; k < p; ++k) {
      const std::int64_t q = static_cast<std::int64_t>(dev::load(piv + k)) - 1;
      if (q < 0 || q >= m)
        dev::trap("lu_permutation: pivots[" + std::to_string(b) + ", " + std::to_string(k) + "] = " +
                  std::to_string(q + 1) + " is outside [1, " + std::to_string(m) + "]");
      const std::int32_t at_k = dev::load(perm + k), at_q = dev::load(perm + q);
      dev::store(perm + k, at_q);
      dev::store(perm + q, at_k);
    }
    dev::vec_cast(DType::kInt64, wide, DType::kInt32, perm, static_cast<std::size_t>(m));
    dev::memcpy(linalg::gdram_at(L.perm, b * m, 8), wide, static_cast<std::size_t>(m) * 8, dev::Dir::kNram2Gdram);
  }
}

}  // namespace

Status lu_permutation(Handle* h, const TensorDesc& pivots, const void* pivots_ptr, std::int64_t m,
                      const TensorDesc& perm, void* perm_ptr) {
  constexpr const char* kOp = "lu_permutation";
  MLU_RETURN_IF_ERROR(check_handle(h, kOp));
  MLU_RETURN_IF_ERROR(check_desc(&pivots, kOp, "pivots"));
  MLU_RETURN_IF_ERROR(check_desc(&perm, kOp, "perm"));
  MLU_CHECK(pivots.ndim() >= 1 && pivots.dtype() == DType::kInt32 && (pivots.contiguous() || pivots.numel() == 0),
            Status::kBadParam,
            std::string(kOp) + ": pivots " + pivots.str() + " must be contiguous int32 [*, p]");
  const std::int64_t p = pivots.dim(pivots.ndim() - 1);
  MLU_CHECK(m >= p, Status::kBadParam,
            std::string(kOp) + ": " + std::to_string(p) + " pivots for " + std::to_string(m) + " rows (p <= m)");
  std::vector<std::int64_t> want(pivots.dims().begin(), pivots.dims().end() - 1);
  want.push_back(m);
  MLU_CHECK(perm.dtype() == DType::kInt64 && perm.dims() == want && (perm.contiguous() || perm.numel() == 0),
            Status::kBadParam,
            std::string(kOp) + ": perm " + perm.str() + " must be contiguous int64 with pivots' batch and " +
                std::to_string(m) + " entries per row (pivots " + pivots.str() + ")");
  MLU_RETURN_IF_ERROR(check_ptr(pivots_ptr, pivots, kOp, "pivots"));
  MLU_RETURN_IF_ERROR(check_ptr(perm_ptr, perm, kOp, "perm"));
  MLU_CHECK(linalg::nram_bytes({p, m, 2 * m}) <= linalg::nram_budget(*h), Status::kNotSupported,
            std::string(kOp) + ": " + std::to_string(m) + " rows do not fit one core's NRAM");
  if (perm.numel() == 0) {
    record(*h, kOp, 0, 0, 0);
    return Status::kSuccess;
  }
  auto L = std::make_shared<PermLaunch>();
  L->batch = perm.numel() / m;
  L->p = p;
  L->m = m;
  L->pivots = reinterpret_cast<std::uintptr_t>(pivots_ptr);
  L->perm = reinterpret_cast<std::uintptr_t>(perm_ptr);
  MLU_RETURN_IF_ERROR(launch(*h, kOp, [L] { perm_body(*L); }, block_dim(*h, static_cast<std::uint64_t>(L->batch)),
                             CNRT_FUNC_TYPE_BLOCK));
  record(*h, kOp, 0, static_cast<std::uint64_t>(L->batch) * static_cast<std::uint64_t>(4 * p + 8 * m), 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
