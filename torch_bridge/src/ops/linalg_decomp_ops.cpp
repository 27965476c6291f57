// ATen dense factorizations and solves over libmlu linalg (linalg.h: LU with partial pivoting,
// the pivots' permutation, triangular solves, Cholesky; each one matrix per core in NRAM on the
// VFU). float32 only: torch's CPU has no float16/bfloat16 linalg, and float64 is not computed on
// the device (DESIGN.md), so both raise NotImplementedError naming op and dtype. Matrices larger
// than one core's NRAM raise NotImplementedError from libmlu (kNotSupported) naming the size.
//
//   linalg_lu_factor_ex.out    libmlu lu_factor (pivot=False allowed, as on CUDA); check_errors
//                              through torch's _linalg_check_errors on the device info
//   lu_unpack.out              L = tril(LU, -1) + I, U = triu(LU) (device tril/triu), P[r, c] =
//                              (perm[c] == r) from libmlu lu_permutation
//   linalg_lu.out              lu_factor + lu_unpack (P empty without pivoting, as torch)
//   linalg_lu_solve.out        P^T B by gather of perm rows, unit-lower then upper triangular
//                              solve; adjoint: U^T, then L^T, then P (scatter); left=False through
//                              the transposes (X A = B <=> A^T X^T = B^T)
//   _linalg_solve_ex.result    lu_factor of A, lu_solve (LU/pivots are A's, as torch's backward
//                              expects)
//   linalg_inv_ex.inverse      solve with the identity
//   _linalg_det.result         det(P) * prod(diag(LU)), det(P) = (-1)^(pivots != 1..n) (torch's
//   _linalg_slogdet.sign       lu_det_P), LU of A^T for contiguous A; slogdet: sign from sgn of the
//                              diagonal, logabsdet = sum(log|diag|)
//   linalg_solve_triangular(.out), triangular_solve.X   libmlu triangular_solve (right side and
//                              transpose through transposed copies, the triangle flipped)
//   linalg_cholesky_ex.L       libmlu cholesky (upper: the factor of A^T, transposed)
//   _cholesky_solve_helper     two triangular solves (cholesky_solve composes over it)
//   cholesky_inverse(.out)     cholesky solve of the identity
//   geqrf(.a)                  libmlu qr_factor (LAPACK geqr2's reflectors and tau, so R's signs
//                              and Q are the CPU's)
//   linalg_householder_product(.out)  libmlu householder_product (org2r)
//   linalg_qr.out              geqrf, R = triu, Q = householder_product of the first min(m, n)
//                              reflectors ('complete': over m x m, the extra columns zero)
//   ormqr(.out)                Q (m x m, from the reflectors) applied by a device matmul
//   _linalg_eigh.eigenvalues   compute_v=False (eigvalsh, matrix_rank(hermitian=True)): libmlu
//                              symmetric_eigenvalues (cyclic Jacobi) on the matrix rebuilt from
//                              the UPLO triangle, sorted ascending (device sort)
//   _linalg_svd.U              compute_uv=False (svdvals, matrix_rank, cond, matrix_norm 2/nuc):
//                              libmlu singular_values (one-sided Jacobi on A or A^T, whichever
//                              is wide), sorted descending
//   _linalg_eigh.eigenvalues   compute_v=True (eigh, pinv(hermitian=True)): libmlu symmetric_eigen
//                              (the rotations accumulated beside the matrix), the vectors
//                              reordered with the sorted values
//   _linalg_svd.U              compute_uv=True (svd, pinv, lowrank): libmlu singular_value_rotation
//                              (U from the accumulated rotations), Vh = the rotated rows / s,
//                              re-orthonormalised and completed by a Householder QR (geqrf +
//                              householder_product) for zero values and full_matrices
// Vectors are unique only up to sign (and rotations within repeated values): the device's are a
// valid basis, not necessarily LAPACK's signs, as CUDA's cuSOLVER vectors are not either.
//
// Batch dims broadcast as in torch and are materialised (device copies) before the kernels.
// Everything else in torch.linalg that is built from these (solve, inv, det, slogdet, logdet,
// lu_factor, lu, matrix_power with negative exponents, tensorinv, tensorsolve, cholesky_solve)
// comes through torch's composites on device kernels.
#include <optional>
#include <tuple>
#include <vector>

#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/where.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/geqrf.h>
#include <ATen/ops/linalg_householder_product.h>
#include <ATen/ops/linalg_lu_factor_ex.h>
#include <ATen/ops/linalg_lu_solve.h>
#include <ATen/ops/lu_unpack.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include "mlusim/mlu/linalg.h"
#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;
using mlu::Triangle;

// float32 or NotImplementedError naming the op, the argument and its dtype.
void check_float32(const Tensor& t, const char* op, const char* arg) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.scalar_type() == at::kFloat, op, ": ", arg, " has dtype ", t.scalar_type(),
                              ", which is not supported on device mlu (float32 only: the device factorizes in "
                              "fp32; torch's CPU has no float16/bfloat16 linalg, and float64 is not computed on "
                              "the device)");
}

void check_matrix(const Tensor& t, const char* op, const char* arg, bool square) {
  TORCH_CHECK(t.dim() >= 2, op, ": The input tensor ", arg, " must have at least 2 dimensions.");
  TORCH_CHECK(!square || t.size(-1) == t.size(-2), op, ": ", arg,
              " must be batches of square matrices, but they are ", t.size(-2), " by ", t.size(-1), " matrices");
}

std::vector<int64_t> batch_of(const Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end() - 2); }

std::vector<int64_t> with_tail(std::vector<int64_t> batch, std::initializer_list<int64_t> tail) {
  batch.insert(batch.end(), tail.begin(), tail.end());
  return batch;
}

// t expanded to `batch` + its own last two dims, contiguous on the device.
Tensor expand_batch(const Tensor& t, const std::vector<int64_t>& batch) {
  return t.expand(with_tail(batch, {t.size(-2), t.size(-1)})).contiguous();
}

struct Lu {
  Tensor lu, pivots, info;  // batch + [m, n] fp32, batch + [min(m, n)] int32, batch int32
};

Lu lu_factor_on(OpScope& op, const Tensor& A, bool pivot) {
  const char* name = op.name();
  const Tensor a = A.contiguous();
  const int64_t m = a.size(-2), n = a.size(-1);
  const auto batch = batch_of(a);
  Lu r{empty_on(op.device(), a.sizes(), at::kFloat), empty_on(op.device(), with_tail(batch, {std::min(m, n)}), at::kInt),
       empty_on(op.device(), batch, at::kInt)};
  op.check(mlu::lu_factor(op.handle(), desc(a, name), a.data_ptr(), pivot, desc(r.lu, name), r.lu.data_ptr(),
                          desc(r.pivots, name), r.pivots.data_ptr(), desc(r.info, name), r.info.data_ptr()),
           "lu_factor");
  return r;
}

// perm[..., i] = the row of A that LU's row i came from (int64, batch + [m]).
Tensor permutation_on(OpScope& op, const Tensor& pivots, int64_t m) {
  const Tensor p = pivots.to(at::kInt).contiguous();
  auto sizes = p.sizes().vec();
  sizes.back() = m;
  Tensor perm = empty_on(op.device(), sizes, at::kLong);
  op.check(mlu::lu_permutation(op.handle(), desc(p, op.name()), p.data_ptr(), m, desc(perm, op.name()), perm.data_ptr()),
           "lu_permutation");
  return perm;
}

// X = A^-1 B for triangular A; A [..., n, n] and B [..., n, k] with equal batch dims.
Tensor trsm_on(OpScope& op, const Tensor& A, const Tensor& B, Triangle tri, bool unit) {
  const char* name = op.name();
  const Tensor a = A.contiguous(), b = B.contiguous();
  Tensor x = empty_on(op.device(), b.sizes(), at::kFloat);
  op.check(mlu::triangular_solve(op.handle(), desc(a, name), a.data_ptr(), tri, unit, desc(b, name), b.data_ptr(),
                                 desc(x, name), x.data_ptr()),
           "triangular_solve");
  return x;
}

Triangle flip(Triangle t) { return t == Triangle::kLower ? Triangle::kUpper : Triangle::kLower; }

// op(A) X = B (left) or X op(A) = B with op = transpose when `transpose`; batches broadcast.
Tensor triangular_solve_any(OpScope& op, const Tensor& A, const Tensor& B, Triangle tri, bool unit, bool left,
                            bool transpose) {
  if (!left) return triangular_solve_any(op, A, B.mT(), tri, unit, true, !transpose).mT();
  const auto batch = at::infer_size(batch_of(A), batch_of(B));
  const Tensor a = transpose ? A.mT() : A;
  return trsm_on(op, expand_batch(a, batch), expand_batch(B, batch), transpose ? flip(tri) : tri, unit);
}

// A X = B (or A^T X = B) for A = P L U packed in LU; LU/pivots/B batches broadcast; left side.
Tensor lu_solve_on(OpScope& op, const Tensor& LU, const Tensor& pivots, const Tensor& B, bool adjoint) {
  const int64_t n = LU.size(-1), k = B.size(-1);
  const auto batch = at::infer_size(batch_of(LU), batch_of(B));
  const Tensor lu = expand_batch(LU, batch), b = expand_batch(B, batch);
  const Tensor piv = pivots.expand(with_tail(batch, {n})).contiguous();
  const Tensor index = permutation_on(op, piv, n).unsqueeze(-1).expand(with_tail(batch, {n, k})).contiguous();
  if (!adjoint) {  // x = U^-1 L^-1 P^T b, (P^T b)[i] = b[perm[i]]
    const Tensor y = trsm_on(op, lu, at::gather(b, -2, index), Triangle::kLower, true);
    return trsm_on(op, lu, y, Triangle::kUpper, false);
  }
  // A^T = U^T L^T P^T: x = P L^-T U^-T b, (P y)[perm[i]] = y[i]
  const Tensor lut = lu.mT().contiguous();
  const Tensor y = trsm_on(op, lut, trsm_on(op, lut, b, Triangle::kLower, false), Triangle::kUpper, true);
  return at::empty_like(y).scatter_(-2, index, y);
}

void check_errors_if(bool check, const Tensor& info, const char* api, const Tensor& A) {
  if (check) at::_linalg_check_errors(info, api, A.dim() == 2);
}

std::tuple<Tensor&, Tensor&, Tensor&> lu_factor_ex_out(const Tensor& A, bool pivot, bool check_errors, Tensor& LU,
                                                       Tensor& pivots, Tensor& info) {
  OpScope op("aten::linalg_lu_factor_ex.out", A);
  check_matrix(A, op.name(), "A", false);
  check_float32(A, op.name(), "A");
  const Lu r = lu_factor_on(op, A, pivot);
  write_out(r.lu, LU, op.name());
  write_out(r.pivots, pivots, op.name());
  write_out(r.info, info, op.name());
  check_errors_if(check_errors, info, "torch.linalg.lu_factor_ex", A);
  return {LU, pivots, info};
}

std::tuple<Tensor&, Tensor&, Tensor&> lu_unpack_out(const Tensor& LU, const Tensor& pivots, bool unpack_data,
                                                    bool unpack_pivots, Tensor& P, Tensor& L, Tensor& U) {
  OpScope op("aten::lu_unpack.out", LU);
  const char* name = op.name();
  check_matrix(LU, name, "LU_data", false);
  check_float32(LU, name, "LU_data");
  TORCH_CHECK(pivots.scalar_type() == at::kInt, "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
              "torch.int32 dtype. Note: this function is intended to be used with the output produced by "
              "torch.linalg.lu_factor");
  const int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
  if (unpack_data) {
    write_out(LU.narrow(-1, 0, k).tril(-1).add(at::eye(m, k, LU.options())), L, name);
    write_out(LU.narrow(-2, 0, k).triu(), U, name);
  } else {
    prepare_out(L, op.device(), {0}, name);
    prepare_out(U, op.device(), {0}, name);
  }
  if (unpack_pivots) {
    const Tensor perm = permutation_on(op, pivots, m);
    write_out(at::eq(perm.unsqueeze(-2), at::arange(m, perm.options()).unsqueeze(-1)).to(LU.scalar_type()), P, name);
  } else {
    prepare_out(P, op.device(), {0}, name);
  }
  return {P, L, U};
}

std::tuple<Tensor&, Tensor&, Tensor&> linalg_lu_out(const Tensor& A, bool pivot, Tensor& P, Tensor& L, Tensor& U) {
  OpScope op("aten::linalg_lu.out", A);
  check_matrix(A, op.name(), "A", false);
  check_float32(A, op.name(), "A");
  const auto [LU, pivots, info] = at::linalg_lu_factor_ex(A, pivot);
  at::lu_unpack_out(P, L, U, LU, pivots, true, pivot);
  return {P, L, U};
}

Tensor& lu_solve_out(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint, Tensor& out) {
  OpScope op("aten::linalg_lu_solve.out", LU);
  const char* name = op.name();
  check_matrix(LU, name, "LU", true);
  check_matrix(B, name, "B", false);
  check_float32(LU, name, "LU");
  check_float32(B, name, "B");
  TORCH_CHECK(pivots.scalar_type() == at::kInt, name, ": pivots should be a Tensor of scalar type torch.int32");
  TORCH_CHECK((left ? B.size(-2) : B.size(-1)) == LU.size(-1), name, ": Incompatible shapes of A and B for the "
              "equation ", left ? "AX = B" : "XA = B", " (", LU.size(-2), "x", LU.size(-1), " and ", B.size(-2), "x",
              B.size(-1), ")");
  const Tensor x = left ? lu_solve_on(op, LU, pivots, B, adjoint) : lu_solve_on(op, LU, pivots, B.mT(), !adjoint).mT();
  return write_out(x, out, name);
}

std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> solve_ex_out(const Tensor& A, const Tensor& B, bool left,
                                                            bool check_errors, Tensor& result, Tensor& LU,
                                                            Tensor& pivots, Tensor& info) {
  OpScope op("aten::_linalg_solve_ex.result", A);
  check_matrix(A, op.name(), "A", true);
  check_float32(A, op.name(), "A");
  check_float32(B, op.name(), "B");
  // torch 2.14 factors A itself here (det/slogdet factor A^T when A is contiguous); its
  // backward solves with this LU and adjoint=True, so LU must be A's.
  at::linalg_lu_factor_ex_out(LU, pivots, info, A);
  check_errors_if(check_errors, info, "torch.linalg.solve_ex", A);
  const bool vector_case =
      B.dim() == 1 || (A.dim() - 1 == B.dim() && B.sizes() == A.sizes().slice(0, A.dim() - 1));
  const Tensor b = vector_case ? B.unsqueeze(-1) : B;
  const Tensor x = at::linalg_lu_solve(LU, pivots, b, left, /*adjoint=*/false);
  write_out(vector_case ? x.squeeze(-1) : x, result, op.name());
  return {result, LU, pivots, info};
}

std::tuple<Tensor&, Tensor&> inv_ex_out(const Tensor& A, bool check_errors, Tensor& inverse, Tensor& info) {
  OpScope op("aten::linalg_inv_ex.inverse", A);
  check_matrix(A, op.name(), "A", true);
  check_float32(A, op.name(), "A");
  const Lu r = lu_factor_on(op, A, true);
  const Tensor eye = at::eye(A.size(-1), A.options()).expand(A.sizes());
  write_out(lu_solve_on(op, r.lu, r.pivots, eye, false), inverse, op.name());
  write_out(r.info, info, op.name());
  check_errors_if(check_errors, info, "linalg.inv_ex", A);
  return {inverse, info};
}

// det(P) of LAPACK pivots: -1 per actual interchange (torch's lu_det_P), int64.
Tensor lu_det_P(const Tensor& pivots) {
  return at::ne(at::arange(1, pivots.size(-1) + 1, pivots.options()), pivots)
      .sum(-1, false, at::kLong)
      .fmod_(2)
      .mul_(-2)
      .add_(1);
}

std::tuple<Tensor&, Tensor&, Tensor&> det_out(const Tensor& A, Tensor& result, Tensor& LU, Tensor& pivots) {
  OpScope op("aten::_linalg_det.result", A);
  check_matrix(A, op.name(), "A", true);
  check_float32(A, op.name(), "A");
  Tensor info = empty_on(op.device(), {0}, at::kInt);
  at::linalg_lu_factor_ex_out(LU, pivots, info, A.is_contiguous() ? A.mT() : A);
  write_out(at::mul(lu_det_P(pivots), LU.diagonal(0, -2, -1).prod(-1)), result, op.name());
  return {result, LU, pivots};
}

std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> slogdet_out(const Tensor& A, Tensor& sign, Tensor& logabsdet,
                                                           Tensor& LU, Tensor& pivots) {
  OpScope op("aten::_linalg_slogdet.sign", A);
  check_matrix(A, op.name(), "A", true);
  check_float32(A, op.name(), "A");
  Tensor info = empty_on(op.device(), {0}, at::kInt);
  at::linalg_lu_factor_ex_out(LU, pivots, info, A.is_contiguous() ? A.mT() : A);
  const Tensor diag = LU.diagonal(0, -2, -1);
  write_out(at::mul(diag.sgn().prod(-1), lu_det_P(pivots)), sign, op.name());
  write_out(diag.abs().log().sum(-1), logabsdet, op.name());
  return {sign, logabsdet, LU, pivots};
}

Tensor& solve_triangular_out(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular, Tensor& out) {
  OpScope op("aten::linalg_solve_triangular.out", A);
  const char* name = op.name();
  check_matrix(A, name, "A", true);
  check_matrix(B, name, "B", false);
  check_float32(A, name, "A");
  check_float32(B, name, "B");
  TORCH_CHECK((left ? B.size(-2) : B.size(-1)) == A.size(-1), name, ": Incompatible shapes of A and B for the equation ",
              left ? "AX = B" : "XA = B", " (", A.size(-2), "x", A.size(-1), " and ", B.size(-2), "x", B.size(-1), ")");
  const Triangle tri = upper ? Triangle::kUpper : Triangle::kLower;
  return write_out(triangular_solve_any(op, A, B, tri, unitriangular, left, false), out, name);
}

Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular) {
  Tensor out = empty_on(A.device(), {0}, A.scalar_type());
  return solve_triangular_out(A, B, upper, left, unitriangular, out);
}

std::tuple<Tensor&, Tensor&> triangular_solve_out(const Tensor& b, const Tensor& A, bool upper, bool transpose,
                                                  bool unitriangular, Tensor& X, Tensor& M) {
  OpScope op("aten::triangular_solve.X", A);
  const char* name = op.name();
  check_matrix(A, name, "A", true);
  check_matrix(b, name, "b", false);
  check_float32(A, name, "A");
  check_float32(b, name, "b");
  TORCH_CHECK(A.size(-1) == b.size(-2), name, ": Incompatible matrix sizes for triangular_solve: each A matrix is ",
              A.size(-1), " by ", A.size(-1), " but each b matrix is ", b.size(-2), " by ", b.size(-1));
  const auto batch = at::infer_size(batch_of(b), batch_of(A));
  const Triangle tri = upper ? Triangle::kUpper : Triangle::kLower;
  write_out(triangular_solve_any(op, A, b, tri, unitriangular, true, transpose), X, name);
  write_out(expand_batch(A, batch), M, name);
  return {X, M};
}

// The Cholesky factor (lower, or upper = the lower factor of A^T transposed) and info.
std::tuple<Tensor&, Tensor&> cholesky_ex_out(const Tensor& A, bool upper, bool check_errors, Tensor& L, Tensor& info) {
  OpScope op("aten::linalg_cholesky_ex.L", A);
  const char* name = op.name();
  check_matrix(A, name, "A", true);
  check_float32(A, name, "A");
  const Tensor a = (upper ? A.mT() : A).contiguous();
  Tensor l = empty_on(op.device(), a.sizes(), at::kFloat), inf = empty_on(op.device(), batch_of(a), at::kInt);
  op.check(mlu::cholesky(op.handle(), desc(a, name), a.data_ptr(), desc(l, name), l.data_ptr(), desc(inf, name),
                         inf.data_ptr()),
           "cholesky");
  write_out(upper ? l.mT() : l, L, name);
  write_out(inf, info, name);
  check_errors_if(check_errors, info, "linalg.cholesky_ex", A);
  return {L, info};
}

// X = (F F^T)^-1 B for a lower factor F (upper: (F^T F)^-1 B); batches already broadcast.
Tensor cholesky_solve_on(OpScope& op, const Tensor& B, const Tensor& F, bool upper) {
  const Tensor lower = (upper ? F.mT() : F).contiguous();
  const Tensor y = trsm_on(op, lower, B, Triangle::kLower, false);
  return trsm_on(op, lower.mT().contiguous(), y, Triangle::kUpper, false);
}

Tensor cholesky_solve_helper(const Tensor& self, const Tensor& A, bool upper) {
  OpScope op("aten::_cholesky_solve_helper", A);
  check_matrix(A, op.name(), "A", true);
  check_float32(A, op.name(), "input2");
  check_float32(self, op.name(), "self");
  const auto batch = at::infer_size(batch_of(self), batch_of(A));
  return cholesky_solve_on(op, expand_batch(self, batch), expand_batch(A, batch), upper);
}

Tensor& cholesky_inverse_out(const Tensor& self, bool upper, Tensor& out) {
  OpScope op("aten::cholesky_inverse.out", self);
  check_matrix(self, op.name(), "input", true);
  check_float32(self, op.name(), "input");
  const Tensor f = self.contiguous();
  const Tensor eye = at::eye(f.size(-1), f.options()).expand(f.sizes()).contiguous();
  return write_out(cholesky_solve_on(op, eye, f, upper), out, op.name());
}

Tensor cholesky_inverse(const Tensor& self, bool upper) {
  Tensor out = empty_on(self.device(), {0}, self.scalar_type());
  return cholesky_inverse_out(self, upper, out);
}

std::tuple<Tensor&, Tensor&> geqrf_out(const Tensor& self, Tensor& a, Tensor& tau) {
  OpScope op("aten::geqrf.a", self);
  const char* name = op.name();
  check_matrix(self, name, "input", false);
  check_float32(self, name, "input");
  const Tensor x = self.contiguous();
  const int64_t k = std::min(x.size(-2), x.size(-1));
  Tensor qr = empty_on(op.device(), x.sizes(), at::kFloat), t = empty_on(op.device(), with_tail(batch_of(x), {k}), at::kFloat);
  op.check(mlu::qr_factor(op.handle(), desc(x, name), x.data_ptr(), desc(qr, name), qr.data_ptr(), desc(t, name),
                          t.data_ptr()),
           "qr_factor");
  write_out(qr, a, name);
  write_out(t, tau, name);
  return {a, tau};
}

std::tuple<Tensor, Tensor> geqrf(const Tensor& self) {
  Tensor a = empty_on(self.device(), {0}, self.scalar_type()), tau = empty_on(self.device(), {0}, self.scalar_type());
  geqrf_out(self, a, tau);
  return {a, tau};
}

Tensor& householder_product_out(const Tensor& input, const Tensor& tau, Tensor& out) {
  OpScope op("aten::linalg_householder_product.out", input);
  const char* name = op.name();
  check_matrix(input, name, "input", false);
  check_float32(input, name, "input");
  check_float32(tau, name, "tau");
  TORCH_CHECK(input.size(-2) >= input.size(-1), "torch.linalg.householder_product: input.shape[-2] must be greater "
              "than or equal to input.shape[-1]");
  TORCH_CHECK(tau.dim() >= 1 && input.size(-1) >= tau.size(-1), "torch.linalg.householder_product: input.shape[-1] "
              "must be greater than or equal to tau.shape[-1]");
  TORCH_CHECK(input.dim() - tau.dim() == 1 && tau.sizes().slice(0, tau.dim() - 1) == batch_of(input),
              "torch.linalg.householder_product: Expected batch dimensions of tau to be equal to input.shape[:-2]");
  const Tensor v = input.contiguous(), t = tau.contiguous();
  Tensor q = empty_on(op.device(), v.sizes(), at::kFloat);
  op.check(mlu::householder_product(op.handle(), desc(v, name), v.data_ptr(), desc(t, name), t.data_ptr(),
                                    desc(q, name), q.data_ptr()),
           "householder_product");
  return write_out(q, out, name);
}

Tensor householder_product(const Tensor& input, const Tensor& tau) {
  Tensor out = empty_on(input.device(), {0}, input.scalar_type());
  return householder_product_out(input, tau, out);
}

// The m x m product of the reflectors in v's first k columns (v: [..., m, k'], k = tau's size).
Tensor full_q(const Tensor& v, const Tensor& tau) {
  const int64_t m = v.size(-2), k = std::min(v.size(-1), m);
  if (v.size(-1) == m) return at::linalg_householder_product(v, tau);
  Tensor square = at::zeros(with_tail(batch_of(v), {m, m}), v.options());
  square.narrow(-1, 0, k).copy_(v.narrow(-1, 0, k));
  return at::linalg_householder_product(square, tau);
}

std::tuple<Tensor&, Tensor&> linalg_qr_out(const Tensor& A, c10::string_view mode, Tensor& Q, Tensor& R) {
  OpScope op("aten::linalg_qr.out", A);
  const char* name = op.name();
  check_matrix(A, name, "A", false);
  check_float32(A, name, "A");
  TORCH_CHECK(mode == "reduced" || mode == "complete" || mode == "r", "qr received unrecognized mode '", mode,
              "' but expected one of 'reduced' (default), 'r', or 'complete'");
  const int64_t m = A.size(-2), k = std::min(m, A.size(-1));
  const auto [qr, tau] = at::geqrf(A);
  write_out((mode == "complete" ? qr : qr.narrow(-2, 0, k)).triu(), R, name);
  if (mode == "r")
    prepare_out(Q, op.device(), {0}, name);
  else if (mode == "complete")
    write_out(full_q(qr, tau), Q, name);
  else
    write_out(at::linalg_householder_product(qr.narrow(-1, 0, k), tau), Q, name);
  return {Q, R};
}

Tensor& ormqr_out(const Tensor& input, const Tensor& tau, const Tensor& other, bool left, bool transpose, Tensor& out) {
  OpScope op("aten::ormqr.out", input);
  const char* name = op.name();
  check_matrix(input, name, "input", false);
  check_matrix(other, name, "other", false);
  check_float32(input, name, "input");
  check_float32(tau, name, "tau");
  check_float32(other, name, "other");
  const int64_t mn = left ? other.size(-2) : other.size(-1);
  TORCH_CHECK(input.size(-2) == mn, "torch.ormqr: input.shape[-2] must be equal to other.shape[", left ? -2 : -1, "]");
  TORCH_CHECK(tau.size(-1) <= input.size(-1), "torch.ormqr: tau.shape[-1] must be less than or equal to input.shape[-1]");
  Tensor q = full_q(input.narrow(-1, 0, tau.size(-1)), tau);
  if (transpose) q = q.mT();
  return write_out(left ? at::matmul(q, other) : at::matmul(other, q), out, name);
}

Tensor ormqr(const Tensor& input, const Tensor& tau, const Tensor& other, bool left, bool transpose) {
  Tensor out = empty_on(input.device(), {0}, input.scalar_type());
  return ormqr_out(input, tau, other, left, transpose, out);
}

// The rows of t ([..., k, c]) in the order `order` ([..., k], int64): row i is t[..., order[i], :].
Tensor gather_rows(const Tensor& t, const Tensor& order) {
  return t.gather(-2, order.unsqueeze(-1).expand(t.sizes()));
}

std::tuple<Tensor&, Tensor&> eigh_out(const Tensor& A, c10::string_view uplo, bool compute_v, Tensor& eigenvalues,
                                      Tensor& eigenvectors) {
  OpScope op("aten::_linalg_eigh.eigenvalues", A);
  const char* name = op.name();
  check_matrix(A, name, "A", true);
  check_float32(A, name, "A");
  TORCH_CHECK(uplo == "L" || uplo == "U", "Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  const Tensor sym = (uplo == "L" ? A.tril().add(A.tril(-1).mT()) : A.triu().add(A.triu(1).mT())).contiguous();
  Tensor w = empty_on(op.device(), with_tail(batch_of(sym), {sym.size(-1)}), at::kFloat);
  if (!compute_v) {
    op.check(mlu::symmetric_eigenvalues(op.handle(), desc(sym, name), sym.data_ptr(), desc(w, name), w.data_ptr()),
             "symmetric_eigenvalues");
    write_out(std::get<0>(w.sort(-1)), eigenvalues, name);
    prepare_out(eigenvectors, op.device(), {0}, name);
    return {eigenvalues, eigenvectors};
  }
  Tensor vt = empty_on(op.device(), sym.sizes(), at::kFloat);
  op.check(mlu::symmetric_eigen(op.handle(), desc(sym, name), sym.data_ptr(), desc(w, name), w.data_ptr(),
                                desc(vt, name), vt.data_ptr()),
           "symmetric_eigen");
  const auto [sorted, order] = w.sort(-1);
  write_out(sorted, eigenvalues, name);
  write_out(gather_rows(vt, order).mT(), eigenvectors, name);  // eigenvectors as columns
  return {eigenvalues, eigenvectors};
}

// Vh of a wide matrix (k <= l) from the one-sided Jacobi rows (`rows`, [..., k, l], orthogonal,
// norms `s`, both in descending order of s): the rows divided by their norms (a row whose value
// is at most max(k, l) eps s_max, numerically zero, stays zero), then re-orthonormalised and
// completed by a Householder QR of their transpose, unit^T = Q R: R is diagonal +-1 for
// orthonormal rows, so row i = sign(R_ii) Q[:, i]; a zero row becomes Q's i-th column, and
// Q's columns k..l-1 complete the basis for full_matrices. Returns [..., complete ? l : k, l].
Tensor right_singular_vectors(const Tensor& rows, const Tensor& s, bool complete) {
  const int64_t k = rows.size(-2), l = rows.size(-1);
  if (k == 0) return complete ? at::eye(l, rows.options()).expand(with_tail(batch_of(rows), {l, l})).contiguous() : rows;
  const double eps = 1.1920928955078125e-07;  // float32's machine epsilon
  const Tensor tol = s.narrow(-1, 0, 1).mul(eps * static_cast<double>(std::max(k, l)));
  const Tensor nonzero = s.gt(tol).unsqueeze(-1);
  const Tensor unit = at::where(nonzero, rows.div(s.unsqueeze(-1)), at::zeros({}, rows.options()));
  const auto [qr, tau] = at::geqrf(unit.mT());
  const Tensor q = complete ? full_q(qr, tau) : at::linalg_householder_product(qr, tau);
  const Tensor signs = at::where(qr.diagonal(0, -2, -1).lt(0.0), -1.0, 1.0).to(at::kFloat);
  const Tensor leading = q.narrow(-1, 0, k).mT().mul(signs.unsqueeze(-1));
  return complete && l > k ? at::cat({leading, q.narrow(-1, k, l - k).mT()}, -2) : leading;
}

std::tuple<Tensor&, Tensor&, Tensor&> svd_out(const Tensor& A, bool full_matrices, bool compute_uv,
                                              std::optional<c10::string_view> driver, Tensor& U, Tensor& S, Tensor& Vh) {
  OpScope op("aten::_linalg_svd.U", A);
  const char* name = op.name();
  check_matrix(A, name, "A", false);
  check_float32(A, name, "A");
  const bool tall = A.size(-2) > A.size(-1);
  const Tensor wide = (tall ? A.mT() : A).contiguous();
  const int64_t k = wide.size(-2);
  Tensor s = empty_on(op.device(), with_tail(batch_of(wide), {k}), at::kFloat);
  if (!compute_uv) {
    op.check(mlu::singular_values(op.handle(), desc(wide, name), wide.data_ptr(), desc(s, name), s.data_ptr()),
             "singular_values");
    write_out(std::get<0>(s.sort(-1, /*descending=*/true)), S, name);
    prepare_out(U, op.device(), {0}, name);
    prepare_out(Vh, op.device(), {0}, name);
    return {U, S, Vh};
  }
  Tensor qt = empty_on(op.device(), with_tail(batch_of(wide), {k, k}), at::kFloat);
  Tensor rotated = empty_on(op.device(), wide.sizes(), at::kFloat);
  op.check(mlu::singular_value_rotation(op.handle(), desc(wide, name), wide.data_ptr(), desc(s, name), s.data_ptr(),
                                        desc(qt, name), qt.data_ptr(), desc(rotated, name), rotated.data_ptr()),
           "singular_value_rotation");
  const auto [sorted, order] = s.sort(-1, /*descending=*/true);
  write_out(sorted, S, name);
  // wide = Q diag(s) Vh_wide with Q's columns = qt's rows (libmlu singular_value_rotation).
  const Tensor u_wide = gather_rows(qt, order).mT();
  const Tensor vh_wide = right_singular_vectors(gather_rows(rotated, order), sorted, full_matrices);
  // A tall A is wide^T = Vh_wide^T diag(s) Q^T.
  write_out(tall ? vh_wide.mT() : u_wide, U, name);
  write_out(tall ? u_wide.mT() : vh_wide, Vh, name);
  return {U, S, Vh};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_lu_factor_ex.out", TORCH_FN(lu_factor_ex_out));
  m.impl("lu_unpack.out", TORCH_FN(lu_unpack_out));
  m.impl("linalg_lu.out", TORCH_FN(linalg_lu_out));
  m.impl("linalg_lu_solve.out", TORCH_FN(lu_solve_out));
  m.impl("_linalg_solve_ex.result", TORCH_FN(solve_ex_out));
  m.impl("linalg_inv_ex.inverse", TORCH_FN(inv_ex_out));
  m.impl("_linalg_det.result", TORCH_FN(det_out));
  m.impl("_linalg_slogdet.sign", TORCH_FN(slogdet_out));
  m.impl("linalg_solve_triangular.out", TORCH_FN(solve_triangular_out));
  m.impl("linalg_solve_triangular", TORCH_FN(solve_triangular));
  m.impl("triangular_solve.X", TORCH_FN(triangular_solve_out));
  m.impl("linalg_cholesky_ex.L", TORCH_FN(cholesky_ex_out));
  m.impl("_cholesky_solve_helper", TORCH_FN(cholesky_solve_helper));
  m.impl("cholesky_inverse", TORCH_FN(cholesky_inverse));
  m.impl("cholesky_inverse.out", TORCH_FN(cholesky_inverse_out));
  m.impl("geqrf", TORCH_FN(geqrf));
  m.impl("geqrf.a", TORCH_FN(geqrf_out));
  m.impl("linalg_householder_product", TORCH_FN(householder_product));
  m.impl("linalg_householder_product.out", TORCH_FN(householder_product_out));
  m.impl("linalg_qr.out", TORCH_FN(linalg_qr_out));
  m.impl("ormqr", TORCH_FN(ormqr));
  m.impl("ormqr.out", TORCH_FN(ormqr_out));
  m.impl("_linalg_eigh.eigenvalues", TORCH_FN(eigh_out));
  m.impl("_linalg_svd.U", TORCH_FN(svd_out));
}

}  // namespace mlusim::bridge::ops
