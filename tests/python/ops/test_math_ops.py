"""Math ops computed as libmlu elementwise programs (src/ops/program_ops.cpp) against torch's CPU
results: atan / asin / acos / atan2 (Cephes' atanf after range reduction), sinc, erfc,
special_entr, special_xlog1py, angle, div with rounding modes, floor_divide, fmod, remainder,
prelu, binary_cross_entropy and linspace / logspace; forward and backward (float32), fp16, ints,
out= and in-place forms, and the special values each op defines."""

import pytest
import torch
import torch.nn.functional as F

import torch_mlu

from test_program_ops import DEV, check, special


def randn(*shape, seed=0, scale=1.0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale


@pytest.mark.parametrize("fn", [torch.atan, torch.asin, torch.acos, torch.sinc, torch.erfc, torch.special.entr],
                         ids=lambda f: f.__name__)
def test_unary_forward_and_backward(dev, fn):
    x = randn(200, seed=1, scale=3)
    if fn in (torch.asin, torch.acos):
        x = torch.rand(200, generator=torch.Generator().manual_seed(1)) * 1.98 - 0.99
    if fn is torch.special.entr:
        x = x.abs() + 1e-3
    check(fn, x, rtol=2e-6, atol=2e-6 if fn is not torch.erfc else 5e-7)


def test_inverse_trig_special_values(dev):
    x = torch.tensor([0.0, -0.0, 1.0, -1.0, 1.5, -2.0, 1e-8, 0.41421, 0.41422, 2.41421, 2.41422, 1e30, -1e30,
                      float("inf"), float("-inf"), float("nan")])
    for fn in (torch.atan, torch.asin, torch.acos):
        check(fn, x, rtol=2e-6, atol=1e-7, grad=False)
    check(torch.special.entr, torch.tensor([0.0, -1.0, 2.0, float("inf"), float("nan")]), grad=False)
    check(torch.sinc, torch.tensor([0.0, 1.0, -2.5, 1e-3]), grad=False, rtol=2e-6)
    check(torch.atan, torch.tensor([0.5, -3.0], dtype=torch.float16), grad=False, rtol=1e-3, atol=1e-3)
    ints = torch.arange(-3, 4, dtype=torch.int32)
    check(torch.atan, ints, grad=False, rtol=2e-6)  # integer input: float result


def test_atan2_quadrants_and_zeros(dev):
    y, x = randn(300, seed=2, scale=4), randn(300, seed=3, scale=4)
    check(torch.atan2, y, x, rtol=2e-6, atol=2e-6)
    check(torch.atan2, randn(4, 1, 5, seed=4), randn(6, 1, seed=5), rtol=2e-6, atol=2e-6)  # broadcasting
    z = torch.tensor([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 0.0, -0.0])
    w = torch.tensor([0.0, 0.0, -0.0, -0.0, 0.0, 0.0, 2.0, -2.0])
    check(torch.atan2, z, w, grad=False)
    out = torch.atan2(z.to(DEV), w.to(DEV)).cpu()
    assert torch.equal(out.signbit(), torch.atan2(z, w).signbit())
    check(torch.atan2, torch.tensor([float("nan"), 1.0, float("inf")]), torch.tensor([1.0, float("nan"), 1.0]), grad=False)


def test_rounding_division_and_remainders(dev):
    a, b = randn(8, 9, seed=6, scale=10), randn(9, seed=7, scale=3)
    for fn in (lambda p, q: torch.div(p, q, rounding_mode="trunc"), lambda p, q: torch.div(p, q, rounding_mode="floor"),
               torch.floor_divide, torch.fmod, torch.remainder):
        check(fn, a, b, grad=False, rtol=1e-5, atol=1e-4)
    check(torch.fmod, a, b, rtol=1e-5, atol=1e-4)  # d/da = 1, d/db = -trunc(a / b)
    check(torch.remainder, a, b, rtol=1e-5, atol=1e-4)
    # Signs: fmod follows the dividend, remainder the divisor; exact for small integers in any dtype.
    i = torch.tensor([7, -7, 7, -7, 0, 9, -9], dtype=torch.int32)
    j = torch.tensor([2, 2, -2, -2, 3, 4, 4], dtype=torch.int32)
    for fn in (torch.fmod, torch.remainder, torch.floor_divide, lambda p, q: torch.div(p, q, rounding_mode="trunc")):
        out, ref = fn(i.to(DEV), j.to(DEV)).cpu(), fn(i, j)
        assert out.dtype == ref.dtype and torch.equal(out, ref)
        out64 = fn(i.long().to(DEV), j.long().to(DEV)).cpu()
        assert out64.dtype == torch.int64 and torch.equal(out64, fn(i.long(), j.long()))
    f = torch.tensor([5.5, -5.5, 1.0, 0.0], dtype=torch.float16)
    g = torch.tensor([2.0, 2.0, 0.0, -3.0], dtype=torch.float16)
    for fn in (torch.fmod, torch.remainder):
        check(fn, f, g, grad=False, rtol=0, atol=0)
    check(torch.remainder, a, torch.tensor(2.5), grad=False, rtol=1e-5, atol=1e-4)  # a 0-dim divisor
    d, o = a.to(DEV), torch.empty(0, device=DEV)
    torch.fmod(d, 3.0, out=o)
    torch.testing.assert_close(o.cpu(), torch.fmod(a, 3.0), rtol=1e-5, atol=1e-4)
    d.remainder_(2.0)
    torch.testing.assert_close(d.cpu(), torch.remainder(a, 2.0), rtol=1e-5, atol=1e-4)


def test_xlog1py_angle_prelu_bce(dev):
    x, y = randn(50, seed=8), torch.rand(50, generator=torch.Generator().manual_seed(9)) * 4 - 0.9
    x[:3] = torch.tensor([0.0, 0.0, 1.0])
    y[:3] = torch.tensor([-1.0, float("nan"), 1e-5])
    check(torch.special.xlog1py, x, y, grad=False, rtol=2e-6)
    check(torch.angle, torch.tensor([-2.0, 0.0, 3.0, float("nan"), float("inf"), float("-inf")]), grad=False)
    inp = randn(2, 3, 4, 5, seed=10)
    check(lambda t, w: F.prelu(t, w), inp, torch.tensor([0.25, -0.5, 2.0]))
    check(lambda t, w: F.prelu(t, w), inp, torch.tensor([0.1]))
    p = torch.rand(6, 7, generator=torch.Generator().manual_seed(11)) * 0.98 + 0.01
    t = torch.rand(6, 7, generator=torch.Generator().manual_seed(12))
    w = torch.rand(7, generator=torch.Generator().manual_seed(13))
    for reduction in ("none", "mean", "sum"):
        check(lambda a: F.binary_cross_entropy(a, t.to(a.device), reduction=reduction), p)
        check(lambda a: F.binary_cross_entropy(a, t.to(a.device), weight=w.to(a.device), reduction=reduction), p)
    edges = torch.tensor([0.0, 1.0, 0.5])  # log(0) clamps at -100
    check(lambda a, b: F.binary_cross_entropy(a, b, reduction="none"), edges, torch.tensor([1.0, 0.0, 0.5]), grad=False)


@pytest.mark.parametrize("steps", [0, 1, 2, 7, 50])
def test_linspace_and_logspace(dev, steps):
    for start, end in ((0.0, 1.0), (-3.5, 10.0), (5.0, -5.0)):
        torch.testing.assert_close(torch.linspace(start, end, steps, device=DEV).cpu(), torch.linspace(start, end, steps),
                                   rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(torch.logspace(start / 4, end / 4, steps, base=2.0, device=DEV).cpu(),
                                   torch.logspace(start / 4, end / 4, steps, base=2.0), rtol=1e-5, atol=1e-6)
    out = torch.empty(3, device=DEV)
    torch.linspace(1, 2, 5, out=out)
    assert out.shape == (5,) and torch.equal(out.cpu(), torch.linspace(1, 2, 5))
    assert torch.equal(torch.linspace(0, 10, 6, dtype=torch.int32, device=DEV).cpu(), torch.linspace(0, 10, 6, dtype=torch.int32))


def test_each_op_is_one_program_kernel(dev):
    x = torch.rand(1000).to(DEV)
    for fn, name in ((torch.atan, "aten::atan"), (torch.asin, "aten::asin"), (torch.erfc, "aten::erfc")):
        torch.mlu.synchronize()
        torch_mlu.reset_stats()
        fn(x)
        torch.mlu.synchronize()
        ops = {o["name"]: o for o in torch_mlu.cycle_report(format="json")["ops"]}
        assert ops[name]["kernels"] == 1


@pytest.mark.parametrize("fn", [torch.atan, torch.asin, torch.acos, torch.sinc, torch.erfc, torch.erfinv, torch.lgamma,
                                torch.digamma, torch.angle], ids=lambda f: f.__name__)
def test_fp16_keeps_its_dtype(dev, fn):
    x = torch.tensor([0.25, -0.5, 0.75, 0.1], dtype=torch.float16)
    check(fn, x, grad=False, rtol=2e-3, atol=2e-3)
    y = torch.tensor([-1.5, 2.0, 0.3], dtype=torch.float16)
    check(torch.atan2, x[:3], y, grad=False, rtol=2e-3, atol=2e-3)


def test_gamma_family_and_erfinv(dev):
    x = torch.cat([torch.linspace(-7.7, 12, 200), torch.tensor([0.5, 1.0, 2.0, 1e-3, 30.0, 100.0])])
    check(torch.lgamma, x, rtol=1e-4, atol=1e-4)  # near the poles: sin(pi x)'s fp32 argument rounding
    check(torch.digamma, x, rtol=1e-4, atol=1e-4)
    check(lambda t: torch.polygamma(1, t), x, rtol=1e-4, atol=1e-4, grad=False)  # its gradient is polygamma(2)
    check(lambda t: torch.mvlgamma(t, 3), torch.linspace(1.1, 9, 50), rtol=1e-5, atol=2e-5)
    poles = torch.tensor([0.0, -1.0, -2.0, float("inf"), float("-inf"), float("nan")])
    check(torch.lgamma, poles, grad=False)
    check(torch.digamma, torch.tensor([0.0, -1.0, -3.0, float("inf"), float("nan")]), grad=False)
    check(lambda t: torch.polygamma(2, t), x, rtol=1e-4, atol=1e-4, grad=False)  # as (-1)^3 2! zeta(3, x)
    with pytest.raises(NotImplementedError, match="polygamma: order n = 34"):
        torch.polygamma(34, x.to(DEV))
    u = torch.linspace(-0.999, 0.999, 301)
    check(torch.erfinv, u, rtol=2e-6, atol=1e-6)
    check(torch.erfinv, torch.tensor([1.0, -1.0, 0.0, 1.5, float("nan")]), grad=False)
