"""Dense factorizations and solves on the device (torch_bridge/src/ops/linalg_decomp_ops.cpp over
libmlu linalg.h: LU with partial pivoting, triangular solves, Cholesky, one matrix per core in
NRAM) against torch's CPU results: lu_factor(_ex), lu, lu_unpack, lu_solve, solve(_ex), inv(_ex),
det, slogdet, logdet, solve_triangular, triangular_solve, cholesky(_ex), cholesky_solve,
cholesky_inverse, geqrf, householder_product, qr, ormqr, eigvalsh, svdvals (and cond,
matrix_norm, matrix_rank through them), eigh and svd with their vectors (compared up to sign, and
as an orthonormal basis that rebuilds the matrix), pinv, polar, matrix_sqrth, matrix_exp, a
gradient through solve and det, and the refusals (float16/float64, matrices
larger than a core's NRAM)."""

import pytest
import torch

import torch_mlu

TOL = dict(atol=1e-4, rtol=1e-4)


def rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(tuple(shape), generator=g)


def well_conditioned(*shape, seed=0):
    a = rand(*shape, seed=seed)
    return a + 3 * torch.eye(shape[-1])


def spd(*shape, seed=0):
    m = rand(*shape, seed=seed)
    return m @ m.mT + 0.5 * torch.eye(shape[-1])


def dev(t):
    return t.to("mlu")


def close(actual, expected, **tol):
    assert actual.device.type == "mlu"
    torch.testing.assert_close(actual.cpu(), expected, **(tol or TOL))


def kernels_launched(fn):
    torch_mlu.synchronize()
    torch_mlu.reset_stats()
    fn()
    torch_mlu.synchronize()
    return {k["name"] for k in torch_mlu.cycle_report(format="json")["kernels"]}


def test_lu_factor_unpack_and_lu_match_the_cpu():
    for a in (rand(2, 4, 4, seed=1), rand(3, 5, seed=2), rand(5, 3, seed=3)):
        lu, piv, info = torch.linalg.lu_factor_ex(dev(a))
        lu_c, piv_c, info_c = torch.linalg.lu_factor_ex(a)
        assert torch.equal(piv.cpu(), piv_c) and torch.equal(info.cpu(), info_c)
        assert piv.dtype == torch.int32
        close(lu, lu_c)
        for got, want in zip(torch.lu_unpack(lu, piv), torch.lu_unpack(lu_c, piv_c)):
            close(got, want)
        for got, want in zip(torch.linalg.lu(dev(a)), torch.linalg.lu(a)):
            close(got, want)
    # Without pivoting (CUDA's option; the CPU refuses it): A = L U with P empty.
    a = well_conditioned(4, 4, seed=4)
    p, l, u = torch.linalg.lu(dev(a), pivot=False)
    assert p.numel() == 0
    close(l @ u, a)
    # A singular matrix: info names the first zero pivot, the factorization completes.
    s = torch.tensor([[1.0, 2.0], [2.0, 4.0]])
    lu, piv, info = torch.linalg.lu_factor_ex(dev(s))
    assert info.item() == 2 and piv.tolist() == [2, 2]
    with pytest.raises(RuntimeError, match="singular|zero"):
        torch.linalg.lu_factor(dev(s))


def test_solve_inv_det_slogdet_match_the_cpu():
    a, b = well_conditioned(3, 4, 4, seed=5), rand(3, 4, 2, seed=6)
    close(torch.linalg.solve(dev(a), dev(b)), torch.linalg.solve(a, b))
    close(torch.linalg.solve(dev(a), dev(b[..., 0])), torch.linalg.solve(a, b[..., 0]))  # vector rhs
    close(torch.linalg.solve(dev(a), dev(b.mT), left=False), torch.linalg.solve(a, b.mT, left=False))
    close(torch.linalg.solve(dev(a[0]), dev(b)), torch.linalg.solve(a[0], b))  # broadcast A
    close(torch.linalg.inv(dev(a)), torch.linalg.inv(a))
    close(torch.linalg.inv(dev(a.mT)), torch.linalg.inv(a.mT))  # non-contiguous A
    g = rand(2, 3, 3, seed=7)
    close(torch.linalg.det(dev(g)), torch.linalg.det(g))
    close(torch.linalg.det(dev(g.mT)), torch.linalg.det(g.mT))
    for got, want in zip(torch.linalg.slogdet(dev(g)), torch.linalg.slogdet(g)):
        close(got, want)
    close(torch.logdet(dev(spd(3, 3, seed=8))), torch.logdet(spd(3, 3, seed=8)))
    close(torch.linalg.matrix_power(dev(a[0]), -2), torch.linalg.matrix_power(a[0], -2))
    s = torch.tensor([[1.0, 2.0], [2.0, 4.0]])
    assert torch.linalg.det(dev(s)).item() == 0.0
    with pytest.raises(RuntimeError, match="singular"):
        torch.linalg.inv(dev(s))
    inv, info = torch.linalg.inv_ex(dev(s))
    assert info.item() == 2
    # Empty batches and 0 x 0 matrices keep torch's shapes (det of 0 x 0 is 1).
    assert torch.linalg.det(dev(torch.empty(2, 0, 0))).cpu().tolist() == [1.0, 1.0]
    assert torch.linalg.solve(dev(torch.empty(0, 3, 3)), dev(torch.empty(0, 3, 1))).shape == (0, 3, 1)


def test_lu_solve_left_right_adjoint_match_the_cpu():
    a, b = rand(2, 4, 4, seed=9), rand(2, 4, 3, seed=10)
    lu, piv = torch.linalg.lu_factor(a)
    for left in (True, False):
        for adjoint in (False, True):
            rhs = b if left else b.mT
            close(torch.linalg.lu_solve(dev(lu), dev(piv), dev(rhs), left=left, adjoint=adjoint),
                  torch.linalg.lu_solve(lu, piv, rhs, left=left, adjoint=adjoint))


def test_triangular_solves_match_the_cpu():
    a, b = well_conditioned(2, 4, 4, seed=11), rand(2, 4, 3, seed=12)
    for upper in (False, True):
        for left in (True, False):
            for unit in (False, True):
                rhs = b if left else b.mT
                close(torch.linalg.solve_triangular(dev(a), dev(rhs), upper=upper, left=left, unitriangular=unit),
                      torch.linalg.solve_triangular(a, rhs, upper=upper, left=left, unitriangular=unit))
        for transpose in (False, True):
            got = torch.triangular_solve(dev(b), dev(a[0]), upper=upper, transpose=transpose)  # broadcast A
            want = torch.triangular_solve(b, a[0], upper=upper, transpose=transpose)
            close(got.solution, want.solution)
            close(got.cloned_coefficient, want.cloned_coefficient)


def test_cholesky_family_matches_the_cpu():
    a = spd(2, 5, 5, seed=13)
    for upper in (False, True):
        close(torch.linalg.cholesky(dev(a), upper=upper), torch.linalg.cholesky(a, upper=upper))
        f = torch.linalg.cholesky(a, upper=upper)
        b = rand(2, 5, 2, seed=14)
        close(torch.cholesky_solve(dev(b), dev(f), upper=upper), torch.cholesky_solve(b, f, upper=upper))
        close(torch.cholesky_inverse(dev(f[0]), upper=upper), torch.cholesky_inverse(f[0], upper=upper))
    bad = a.clone()
    bad[1, 2, 2] = -50.0
    _, info = torch.linalg.cholesky_ex(dev(bad))
    assert info.cpu().tolist() == torch.linalg.cholesky_ex(bad).info.tolist() == [0, 3]
    with pytest.raises(RuntimeError, match="positive-definite"):
        torch.linalg.cholesky(dev(bad))


def test_qr_family_matches_the_cpu():
    # LAPACK's reflector convention on the device too, so Q and R match the CPU's signs.
    for a in (rand(2, 5, 3, seed=18), rand(3, 4, seed=19), rand(4, 4, seed=20)):
        for mode in ("reduced", "complete", "r"):
            for got, want in zip(torch.linalg.qr(dev(a), mode=mode), torch.linalg.qr(a, mode=mode)):
                close(got, want)
        for got, want in zip(torch.geqrf(dev(a)), torch.geqrf(a)):
            close(got, want)
    v, tau = torch.geqrf(rand(2, 5, 3, seed=21))
    close(torch.linalg.householder_product(dev(v), dev(tau[..., :2])), torch.linalg.householder_product(v, tau[..., :2]))
    c = rand(2, 5, 2, seed=22)
    for left in (True, False):
        for transpose in (False, True):
            other = c if left else c.mT
            close(torch.ormqr(dev(v), dev(tau), dev(other), left=left, transpose=transpose),
                  torch.ormqr(v, tau, other, left=left, transpose=transpose))


def test_eigenvalues_and_singular_values_match_the_cpu():
    h = spd(2, 5, 5, seed=23) - 2 * torch.eye(5)  # indefinite
    close(torch.linalg.eigvalsh(dev(h)), torch.linalg.eigvalsh(h))
    close(torch.linalg.eigvalsh(dev(h.triu()), UPLO="U"), torch.linalg.eigvalsh(h.triu(), UPLO="U"))
    for a in (rand(2, 4, 6, seed=24), rand(6, 3, seed=25)):
        close(torch.linalg.svdvals(dev(a)), torch.linalg.svdvals(a))
        close(torch.linalg.matrix_norm(dev(a), ord="nuc"), torch.linalg.matrix_norm(a, ord="nuc"))
        close(torch.linalg.matrix_norm(dev(a), ord=2), torch.linalg.matrix_norm(a, ord=2))
    close(torch.linalg.cond(dev(h[0])), torch.linalg.cond(h[0]), rtol=1e-3, atol=1e-4)
    close(torch.linalg.matrix_rank(dev(h)), torch.linalg.matrix_rank(h))


def test_eigenvectors_are_an_orthonormal_eigenbasis_matching_the_cpu_up_to_sign():
    h = spd(2, 6, 6, seed=26) - 3 * torch.eye(6)
    w, v = torch.linalg.eigh(dev(h))
    w_ref, v_ref = torch.linalg.eigh(h)
    close(w, w_ref)
    # Eigenvectors are unique up to sign for distinct eigenvalues: |V| is the CPU's, and A V = V diag(w).
    close(v.abs(), v_ref.abs())
    close(dev(h) @ v, (v * w.unsqueeze(-2)).cpu())
    close(v.mT @ v, torch.eye(6).expand(2, 6, 6))
    close(torch.linalg.pinv(dev(h), hermitian=True), torch.linalg.pinv(h, hermitian=True), atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (2, 5, 5), (3, 0)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd_reconstructs_the_matrix_with_orthonormal_vectors(shape, full_matrices):
    a = rand(*shape, seed=27)
    u, s, vh = torch.linalg.svd(dev(a), full_matrices=full_matrices)
    u_ref, s_ref, vh_ref = torch.linalg.svd(a, full_matrices=full_matrices)
    assert (u.shape, s.shape, vh.shape) == (u_ref.shape, s_ref.shape, vh_ref.shape)
    close(s, s_ref)
    k = s.shape[-1]
    # The leading k columns of U / rows of Vh match the CPU's up to sign; the completions of
    # full_matrices are any orthonormal basis of the rest.
    close(u[..., :k].abs(), u_ref[..., :k].abs())
    close(vh[..., :k, :].abs(), vh_ref[..., :k, :].abs())
    close((u[..., :k] * s.unsqueeze(-2)) @ vh[..., :k, :], a)
    close(u.mT @ u, torch.eye(u.shape[-1]).expand(u.shape[:-2] + (u.shape[-1],) * 2))
    close(vh @ vh.mT, torch.eye(vh.shape[-2]).expand(vh.shape[:-1] + (vh.shape[-2],)))


def test_svd_of_a_rank_deficient_matrix_completes_the_basis():
    a = rand(5, 2, seed=28) @ rand(2, 4, seed=29)  # rank 2
    u, s, vh = torch.linalg.svd(dev(a))
    close(s, torch.linalg.svdvals(a))
    close((u[:, :4] * s) @ vh, a)
    close(u.mT @ u, torch.eye(5))
    close(vh @ vh.mT, torch.eye(4))
    close(torch.linalg.pinv(dev(a)), torch.linalg.pinv(a), atol=1e-4, rtol=1e-3)


def test_matrix_functions_polar_sqrth_and_exp():
    a = rand(2, 5, 3, seed=30)
    u, h = torch.linalg.polar(dev(a))
    u_ref, h_ref = torch.linalg.polar(a)
    close(u, u_ref)
    close(h, h_ref)
    s = spd(2, 4, 4, seed=31)
    close(torch.linalg.matrix_sqrth(dev(s)), torch.linalg.matrix_sqrth(s))
    # per-matrix scaling: a batch with norms from 1e-8 (degree 1) to ~40 (5 squarings)
    m = torch.stack([rand(4, 4, seed=32) * 1e-8, rand(4, 4, seed=33) * 0.3, rand(4, 4, seed=34) * 10])
    close(torch.linalg.matrix_exp(dev(m)), torch.linalg.matrix_exp(m), atol=1e-4, rtol=1e-4)
    close(torch.linalg.matrix_exp(dev(torch.zeros(3, 3))), torch.eye(3))


def test_gradients_through_solve_and_det_match_the_cpu():
    a, b = well_conditioned(3, 3, seed=15), rand(3, 2, seed=16)
    grads = []
    for device in ("cpu", "mlu"):
        ad = a.detach().clone().to(device).requires_grad_()
        bd = b.detach().clone().to(device).requires_grad_()
        (torch.linalg.solve(ad, bd).sum() + torch.linalg.det(ad)).backward()
        grads.append((ad.grad.cpu(), bd.grad.cpu()))
    for got, want in zip(grads[1], grads[0]):
        torch.testing.assert_close(got, want, **TOL)


def test_kernels_run_on_the_device():
    a = dev(well_conditioned(4, 4, seed=17))
    names = kernels_launched(lambda: torch.linalg.solve(a, a))
    assert {"lu_factor", "lu_permutation", "triangular_solve"} <= names, names
    assert "cholesky" in kernels_launched(lambda: torch.linalg.cholesky(a @ a.mT))
    assert {"qr_factor", "householder_product"} <= kernels_launched(lambda: torch.linalg.qr(a))
    assert torch_mlu.cpu_fallback_counts() == {}


def test_refusals_name_op_and_dtype():
    a = torch.eye(3)
    for dtype, name in ((torch.float16, "Half"), (torch.float64, "Double")):
        with pytest.raises(NotImplementedError, match="linalg_lu_factor_ex.*" + name):
            torch.linalg.lu_factor(dev(a.to(dtype)))
        with pytest.raises(NotImplementedError, match="cholesky"):
            torch.linalg.cholesky(dev(a.to(dtype)))
    big = torch.eye(200)  # 160 KB of fp32: more than one core's NRAM on the tiny preset
    with pytest.raises(NotImplementedError, match="does not fit one core's NRAM"):
        torch.linalg.inv(dev(big))
