"""torch.special functions on the device (src/ops/special_ops.cpp: one elementwise program each,
torch's Cephes algorithms in fp32) against torch's CPU kernels: Bessel functions, Airy Ai, ndtri,
erfcx, log_ndtr, Hurwitz zeta and polygamma n >= 2, and the orthogonal polynomials, with the
special values each defines (0, negatives, large arguments, +-inf, NaN, poles), fp16 where the CPU
computes it, and the NotImplementedError for what the device leaves out."""

import pytest
import torch

import torch_mlu  # noqa: F401

DEV = "mlu"


def values(dtype=torch.float32):
    """Random arguments in [-12, 12] plus the edge values."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(48, generator=g) * 24 - 12
    edges = [0.0, -0.0, 1e-6, -1e-6, 0.5, -0.5, 1.0, -1.0, 2.0, 2.09, -2.09, 5.0, -5.0, 8.0, -8.0, 30.0, -30.0,
             120.0, 1e4, -1e4, float("inf"), float("-inf"), float("nan")]
    return torch.cat([torch.tensor(edges), x]).to(dtype)


def check(fn, *inputs, rtol=1.3e-4, atol=1e-5):
    ref = fn(*inputs)
    out = fn(*[t.to(DEV) if isinstance(t, torch.Tensor) else t for t in inputs])
    assert out.dtype == ref.dtype
    torch.testing.assert_close(out.cpu(), ref, rtol=rtol, atol=atol, equal_nan=True)


UNARY = [
    torch.i0, torch.special.i0e, torch.special.i1, torch.special.i1e, torch.special.modified_bessel_i0,
    torch.special.modified_bessel_i1, torch.special.modified_bessel_k0, torch.special.modified_bessel_k1,
    torch.special.scaled_modified_bessel_k0, torch.special.scaled_modified_bessel_k1, torch.special.bessel_j0,
    torch.special.bessel_j1, torch.special.bessel_y0, torch.special.bessel_y1, torch.special.spherical_bessel_j0,
    torch.special.airy_ai, torch.special.erfcx, torch.special.log_ndtr,
]


@pytest.mark.parametrize("fn", UNARY, ids=lambda f: f.__name__)
def test_unary_special_functions_match_the_cpu(fn):
    check(fn, values())


def test_ndtri_on_its_domain_and_outside():
    p = torch.cat([torch.tensor([0.0, 1.0, -0.5, 1.5, float("nan"), 1e-30, 1e-10, 0.135, 0.5, 0.865, 1 - 1e-7]),
                   torch.rand(32, generator=torch.Generator().manual_seed(1))])
    check(torch.special.ndtri, p)


def test_half_inputs_compute_in_float_and_round_once():
    x = values(torch.float16)
    x = x[torch.isfinite(x) & (x.abs() < 1000)]
    for fn in (torch.i0, torch.special.i0e, torch.special.i1, torch.special.i1e):
        check(fn, x, rtol=1e-3, atol=1e-5)


def test_integer_inputs_give_float():
    check(torch.special.bessel_j0, torch.arange(-6, 7, dtype=torch.int32))
    check(torch.i0, torch.arange(-3, 4))


def test_out_and_in_place():
    x = values()[:20]
    out = torch.empty(20, device=DEV)
    torch.special.bessel_j1(x.to(DEV), out=out)
    torch.testing.assert_close(out.cpu(), torch.special.bessel_j1(x), rtol=1.3e-4, atol=1e-5, equal_nan=True)
    y = x.to(DEV)
    y.i0_()
    torch.testing.assert_close(y.cpu(), torch.i0(x), rtol=1.3e-4, atol=1e-5, equal_nan=True)


def test_zeta_and_polygamma():
    g = torch.Generator().manual_seed(2)
    s = torch.cat([torch.tensor([1.0, 0.5, -1.0, 2.0, 3.0, 4.0, 2.5, 30.0, float("nan"), 2.0, 3.0, 2.0]),
                   torch.rand(20, generator=g) * 6 + 1])
    q = torch.cat([torch.tensor([1.0, 1.0, 1.0, 0.0, -2.0, -1.5, -1.5, 0.5, 1.0, float("nan"), -8.47, float("inf")]),
                   torch.rand(20, generator=g) * 10])
    check(torch.special.zeta, s, q)
    check(lambda a: torch.special.zeta(a, 2.0), s)
    check(lambda a: torch.special.zeta(3.0, a), q)
    x = torch.cat([torch.tensor([0.0, -1.0, -2.0, 0.5, -0.5, 10.0, float("inf"), float("nan")]),
                   torch.rand(24, generator=g) * 17 - 8.5])
    for n in (2, 3, 4, 7):
        check(lambda a: torch.polygamma(n, a), x, rtol=2e-4)
    with pytest.raises(NotImplementedError, match="zeta"):
        torch.special.zeta(torch.tensor([3.0], device=DEV), torch.tensor([-100.5], device=DEV))


POLYNOMIALS = [
    torch.special.chebyshev_polynomial_t, torch.special.chebyshev_polynomial_u, torch.special.chebyshev_polynomial_v,
    torch.special.chebyshev_polynomial_w, torch.special.shifted_chebyshev_polynomial_t,
    torch.special.shifted_chebyshev_polynomial_u, torch.special.shifted_chebyshev_polynomial_v,
    torch.special.shifted_chebyshev_polynomial_w, torch.special.hermite_polynomial_h,
    torch.special.hermite_polynomial_he, torch.special.laguerre_polynomial_l, torch.special.legendre_polynomial_p,
]


@pytest.mark.parametrize("fn", POLYNOMIALS, ids=lambda f: f.__name__)
def test_orthogonal_polynomials_match_the_cpu(fn):
    g = torch.Generator().manual_seed(3)
    x = torch.cat([torch.tensor([1.0, -1.0, 0.0, 0.5, 2.0, -3.0, float("nan"), 0.999]), torch.rand(24, generator=g) * 4 - 2])
    n = torch.cat([torch.tensor([3.0, 4.0, 5.0, 2.0, -1.0, 7.9, 2.0, 20.0]), (torch.rand(24, generator=g) * 12).floor()])
    check(fn, x.view(-1, 1), n.view(1, -1))  # broadcast: every x with every degree
    check(fn, x, torch.full_like(x, 9).long())  # integer degrees
    check(fn, x, float("nan"))  # a non-finite degree counts as n < 0
    check(fn, 0.25, n)  # a Python scalar x


def test_polynomial_degrees_beyond_the_unrolled_recurrence_are_refused():
    x = torch.tensor([0.5], device=DEV)
    with pytest.raises(NotImplementedError, match="chebyshev_polynomial_t.*degree"):
        torch.special.chebyshev_polynomial_t(x, torch.tensor([1000.0], device=DEV))
    # Hermite polynomials are NaN above degree 128 in torch: no limit needed.
    check(torch.special.hermite_polynomial_h, torch.tensor([0.5, 1.0]), torch.tensor([1000.0, 10.0]))


def test_float64_is_refused_with_the_dtype():
    with pytest.raises(NotImplementedError, match="(?i)(float64|double|fp64)"):
        torch.special.bessel_j0(torch.ones(3, dtype=torch.float64, device=DEV))
