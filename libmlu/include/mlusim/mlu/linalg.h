// Dense linear algebra on small batched matrices: LU with partial pivoting (LAPACK getrf), the
// row permutation its pivots describe, triangular solves with many right-hand sides (trsm, left
// side) and Cholesky (potrf, lower). torch.linalg's factorizations and solves are built on these
// (torch_bridge/src/ops/linalg_decomp_ops.cpp).
//
// Every op takes a contiguous row-major batch of matrices [*, rows, cols] of float32 and works on
// one matrix per core at a time: the matrix is loaded whole into NRAM, factored or solved there
// by VFU vector intrinsics and scalar-unit reads of pivots/diagonals, and stored back. Matrices
// are spread over the cores (BLOCK tasks, task t takes matrices t, t + taskDim, ...). A matrix
// that does not fit one core's NRAM is refused with kNotSupported naming its size (no blocked
// GDRAM variant yet). Control flow and costs depend on shapes only, never on values (a zero
// pivot or a non-positive Cholesky diagonal changes info, not the work), so timing-only mode
// gives the same cycles.
//
// Kernels (p = min(m, n) steps; VFU intrinsics per step, whose cycles the VFU formula gives from
// their lengths):
//   lu_factor   right-looking unblocked getf2. Step k: gather column k below the diagonal
//               (strided NRAM copy), |.|, max-reduce, the first row attaining it (compare with
//               the max, mask * -2^22 + iota, min-reduce: LAPACK isamax's first maximum), swap
//               rows k and p (three NRAM row copies, also when p = k), divide the column by the
//               pivot (scattered back), and the rank-1 update of the trailing rows as one
//               vec_matmul (M = m-k-1, K = 1, N = n) accumulating -l x u into them. ~15
//               intrinsics per step; ~m n p - (m + n) p^2 / 2 + p^3 / 3 MACs.
//   triangular_solve  row-oriented substitution: x_i = (b_i - A[i, <i] X[<i]) / A[i, i] (lower;
//               upper runs from the last row): one vec_matmul (M = 1, K = i, N = cols of B) and
//               one division per row; right-hand sides in column chunks when B is wide.
//               n^2 k / 2 MACs.
//   qr_factor   Householder geqr2. Step k: gather column k from the diagonal down, its norm
//               (sum-of-squares reduce), the reflector (LAPACK slarfg's beta, tau and scaled v,
//               computed by the scalar unit), w = v^T A[k:, :] (vec_matmul M = 1, K = r, N = n),
//               w's first k + 1 entries zeroed, A[k:, :] += (-tau v) w (vec_matmul M = r, K = 1,
//               N = n), v and beta scattered into column k. ~2 m n p - (m + n) p^2 + 2 p^3 / 3 MACs.
//   householder_product  LAPACK org2r: Q = I (m x n), then for i = k-1 .. 0 the same two
//               products apply H_i = I - tau_i v_i v_i^T to Q[i:, :].
//   symmetric_eigenvalues  cyclic two-sided Jacobi, a fixed number of sweeps (jacobi_sweeps).
//               Rotation (p, q): a_pp, a_qq, a_pq read by the scalar unit, the rotation (Golub &
//               Van Loan's sym.schur2) computed there; rows p and q rotated on the VFU (4
//               scalings, a subtraction, an addition over n), copied into columns p and q (two
//               strided NRAM copies: the matrix stays symmetric), the 2 x 2 block stored.
//               Eigenvalues = the diagonal. ~12 intrinsics per rotation, n (n-1) / 2 per sweep.
//   singular_values  one-sided (Hestenes) Jacobi on the rows of a k x l matrix (k <= l), the
//               same sweeps: per pair, |w_i|^2 and |w_j|^2 (sum-of-squares reduces) and w_i . w_j
//               (product + reduce), the rotation that makes them orthogonal, the two rows
//               rotated; values = the rows' norms (one row-wise reduce and a sqrt).
//   cholesky    left-looking (Cholesky-Crout) by columns: v = A[j:, j] - L[j:, :] L[j, :]^T
//               (one vec_matmul, M = n-j, K = n over L's rows whose later columns are still
//               zero), sqrt of the diagonal, the column divided by it, scattered into L.
//               n^3 / 6 MACs.
#pragma once

#include <cstdint>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

// LU factorization with partial pivoting of every matrix of a ([*, m, n], fp32, contiguous):
// a[b] = P L U with L unit lower triangular (m x p) and U upper triangular (p x n) packed into
// lu[b] (lu's dims are a's; lu may be a itself). pivots: int32 [*, p], 1-based LAPACK row
// interchanges (row k was swapped with row pivots[k] - 1, in order k = 0, 1, ...); with
// pivot = false no rows are swapped (pivots[k] = k + 1; a zero pivot then gives inf/NaN, as
// cuSOLVER without pivoting). info: int32 [*], 0, or k + 1 for the first exactly zero U[k, k]
// (the factorization is still completed, as LAPACK's getrf).
// kBadParam: dims or dtypes that differ as above; kNotSupported: another dtype, a matrix that
// does not fit one core's NRAM (linalg_max_square_size).
Status lu_factor(Handle* h, const TensorDesc& a, const void* a_ptr, bool pivot, const TensorDesc& lu, void* lu_ptr,
                 const TensorDesc& pivots, void* pivots_ptr, const TensorDesc& info, void* info_ptr);

// The permutation that lu_factor's pivots describe: perm[b, i] = the row of a[b] that lands in
// row i of P^T a[b] (start from 0..m-1, swap entries k and pivots[b, k] - 1 for k = 0, 1, ...).
// pivots: int32 [*, p] contiguous, p <= m; perm: int64 [*, m] contiguous, the same batch.
// A pivot outside [k + 1, m] faults the kernel naming it (as LAPACK's laswp would read out of
// the matrix). Scalar unit: two loads and two stores per pivot.
Status lu_permutation(Handle* h, const TensorDesc& pivots, const void* pivots_ptr, std::int64_t m,
                      const TensorDesc& perm, void* perm_ptr);

enum class Triangle : std::uint8_t { kLower, kUpper };

// x[b] = a[b]^-1 b[b] for triangular a[b] ([*, n, n], only the `triangle` half and the diagonal
// are read; unit_diagonal: the diagonal is taken as ones and not read); b, x: [*, n, k], the same
// batch; x may be b itself. fp32, contiguous. A zero diagonal gives inf/NaN (no error, as trsm).
// kNotSupported: another dtype; n x n plus n x 1 not fitting one core's NRAM.
Status triangular_solve(Handle* h, const TensorDesc& a, const void* a_ptr, Triangle triangle, bool unit_diagonal,
                        const TensorDesc& b, const void* b_ptr, const TensorDesc& x, void* x_ptr);

// Cholesky factor of every symmetric positive-definite matrix of a ([*, n, n], fp32,
// contiguous; only the lower triangle is read): a[b] = L L^T, L lower triangular with a positive
// diagonal, its upper triangle zero. info: int32 [*]: 0, or j + 1 for the first column whose
// diagonal A[j, j] - |L[j, :j]|^2 is not positive (or NaN) (LAPACK potrf's minor order); the
// columns from there on are then NaN/garbage, as LAPACK leaves them unspecified.
Status cholesky(Handle* h, const TensorDesc& a, const void* a_ptr, const TensorDesc& l, void* l_ptr,
                const TensorDesc& info, void* info_ptr);

// Householder QR of every matrix of a ([*, m, n], fp32, contiguous) as LAPACK's geqrf stores it:
// qr[b] holds R on and above the diagonal and the reflectors' vectors v_k below it (v_k[k] = 1
// implied); tau: [*, min(m, n)] fp32. a[b] = H_0 H_1 ... H_{p-1} R with H_k = I - tau_k v_k v_k^T,
// beta = -sign(alpha) ||x|| as LAPACK's slarfg (tau_k = 0 where the column below is zero), so
// R's signs and Q are LAPACK's. qr may be a itself.
Status qr_factor(Handle* h, const TensorDesc& a, const void* a_ptr, const TensorDesc& qr, void* qr_ptr,
                 const TensorDesc& tau, void* tau_ptr);

// q[b] = the first n columns of H_0 ... H_{k-1} (torch.linalg.householder_product, LAPACK orgqr):
// v: [*, m, n] fp32 with m >= n, the vectors below the diagonal of its first k columns (the
// diagonal taken as 1, the rest not read); tau: [*, k] fp32, k <= n; q: [*, m, n].
Status householder_product(Handle* h, const TensorDesc& v, const void* v_ptr, const TensorDesc& tau,
                           const void* tau_ptr, const TensorDesc& q, void* q_ptr);

// Eigenvalues of every symmetric matrix of a ([*, n, n], fp32, contiguous; both triangles are read
// and must agree) into w ([*, n], fp32), in no particular order (the caller sorts): the diagonal
// after jacobi_sweeps(n) cyclic Jacobi sweeps.
Status symmetric_eigenvalues(Handle* h, const TensorDesc& a, const void* a_ptr, const TensorDesc& w, void* w_ptr);

// symmetric_eigenvalues plus the eigenvectors: v ([*, n, n], fp32, contiguous) receives them as
// rows (v[b][i] is the unit eigenvector of w[b][i]; V = v^T is orthogonal): the product of the
// sweeps' rotations, accumulated in NRAM beside the matrix (n^2 more floats per core).
Status symmetric_eigen(Handle* h, const TensorDesc& a, const void* a_ptr, const TensorDesc& w, void* w_ptr,
                       const TensorDesc& v, void* v_ptr);

// Singular values of every matrix of a ([*, k, l], fp32, contiguous, k <= l: pass A^T for a tall
// A) into s ([*, k], fp32), in no particular order: the row norms after jacobi_sweeps(k) sweeps of
// one-sided Jacobi.
Status singular_values(Handle* h, const TensorDesc& a, const void* a_ptr, const TensorDesc& s, void* s_ptr);

// singular_values plus what the vectors are made of: qt ([*, k, k], fp32, contiguous) the product
// Q^T of the sweeps' rotations (orthogonal) and rotated ([*, k, l]) the rows after the sweeps,
// rotated = Q^T a, orthogonal, with norms s. So a = Q diag(s) Vh with U = Q (U's columns are qt's
// rows) and Vh's rows = rotated's rows / s (the caller normalises, sorts and completes them; a
// zero singular value leaves a zero row). NRAM: k^2 more floats per core.
Status singular_value_rotation(Handle* h, const TensorDesc& a, const void* a_ptr, const TensorDesc& s, void* s_ptr,
                               const TensorDesc& qt, void* qt_ptr, const TensorDesc& rotated, void* rotated_ptr);

// The fixed number of Jacobi sweeps for n x n (or n rows): 5 + 2 ceil(log2 n). Cyclic Jacobi
// converges quadratically once the off-diagonal part is small, typically in 5-10 sweeps for the
// sizes that fit NRAM; a fixed count keeps the work independent of values.
std::int64_t jacobi_sweeps(std::int64_t n);

// Largest n such that an n x n matrix fits one core's NRAM for lu_factor, cholesky and
// triangular_solve (one right-hand side) on this handle's cores; 0 for a null handle.
std::int64_t linalg_max_square_size(const Handle* h);

}  // namespace mlusim::mlu
