"""Ops computed as one libmlu elementwise program (src/ops/program_ops.cpp) against torch's CPU
results: activations (elu/selu/celu, softplus, mish, hard/soft shrink), sign, isnan, nan_to_num,
xlogy, logit, and the mse / smooth_l1 / huber losses; forward and backward, fp32 and fp16, with
the special values (NaN, +-inf, 0) each op defines."""

import pytest
import torch
import torch.nn.functional as F

import torch_mlu

DEV = "mlu"


def special(n=64, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g) * 3
    x[:6] = torch.tensor([0.0, -0.0, float("nan"), float("inf"), float("-inf"), 25.0])
    return x.to(dtype)


def check(fn, *inputs, rtol=1.3e-4, atol=1e-5, grad=True):
    """fn on the CPU and on the device: same values (NaN where NaN), and for float32 with grad, the
    same input gradients for a random upstream gradient."""
    cpu_in = [t.detach().clone().requires_grad_(grad and t.is_floating_point()) for t in inputs]
    dev_in = [t.detach().to(DEV).requires_grad_(grad and t.is_floating_point()) for t in inputs]
    ref, out = fn(*cpu_in), fn(*dev_in)
    torch.testing.assert_close(out.cpu(), ref, rtol=rtol, atol=atol, equal_nan=True)
    assert out.dtype == ref.dtype
    if grad and ref.requires_grad:
        up = torch.randn(ref.shape, generator=torch.Generator().manual_seed(1), dtype=ref.dtype)
        g_ref = torch.autograd.grad(ref, [t for t in cpu_in if t.requires_grad], up)
        g_out = torch.autograd.grad(out, [t for t in dev_in if t.requires_grad], up.to(DEV))
        for a, b in zip(g_out, g_ref):
            torch.testing.assert_close(a.cpu(), b, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("fn", [
    F.elu, lambda x: F.elu(x, alpha=0.5), F.selu, lambda x: F.celu(x, alpha=2.0),
    F.softplus, lambda x: F.softplus(x, beta=2.0, threshold=5.0), F.mish,
    F.hardshrink, lambda x: F.softshrink(x, 0.7), torch.sign, torch.logit,
    lambda x: torch.logit(x, eps=1e-3),
], ids=["elu", "elu_alpha", "selu", "celu", "softplus", "softplus_beta", "mish", "hardshrink", "softshrink",
        "sign", "logit", "logit_eps"])
def test_unary_fp32_forward_and_backward(dev, fn):
    check(fn, special()[6:])  # gradients away from inf/nan (logit: NaN outside [0, 1] on both sides)


def test_logit_inputs_in_and_out_of_range(dev):
    x = torch.tensor([0.0, 1e-4, 0.3, 0.5, 0.999, 1.0, 1.5, -0.2])
    check(torch.logit, x, grad=False)
    check(lambda t: torch.logit(t, eps=0.01), x)


def test_unary_special_values(dev):
    x = special()
    for fn in (F.elu, F.softplus, F.mish, F.hardshrink, F.softshrink, torch.sign):
        check(fn, x, grad=False)


@pytest.mark.parametrize("fn", [F.elu, F.softplus, F.mish, torch.sign, F.hardshrink])
def test_unary_fp16(dev, fn):
    x = special(dtype=torch.float16)[6:]
    check(fn, x, rtol=2e-3, atol=2e-3, grad=False)


def test_in_place_and_out_variants(dev):
    x = special()[6:]
    y = x.to(DEV)
    torch.nn.functional.elu_(y)
    torch.testing.assert_close(y.cpu(), F.elu(x))
    out = torch.empty(3, device=DEV)
    torch.sign(x.to(DEV), out=out)  # resized like torch's out= ops
    torch.testing.assert_close(out.cpu(), torch.sign(x))


def test_isnan_and_nan_to_num(dev):
    x = special()
    assert torch.equal(torch.isnan(x.to(DEV)).cpu(), torch.isnan(x))
    for kwargs in ({}, {"nan": 1.5, "posinf": 100.0, "neginf": -7.0}):
        check(lambda t: torch.nan_to_num(t, **kwargs), x, grad=False)
    check(torch.nan_to_num, x.half(), grad=False)
    i = torch.arange(-3, 4, dtype=torch.int32)
    assert torch.equal(torch.nan_to_num(i.to(DEV)).cpu(), i)
    assert not torch.isnan(i.to(DEV)).cpu().any()


def test_xlogy_broadcasts_and_keeps_its_special_cases(dev):
    x = torch.tensor([[0.0, 1.0, 2.0, 0.0, 3.0]])
    y = torch.tensor([[0.0], [2.5], [float("nan")]])
    check(torch.xlogy, x, y, grad=False)
    check(torch.xlogy, torch.rand(5, 4) + 0.1, torch.rand(5, 4) + 0.1)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("loss", [
    F.mse_loss, F.smooth_l1_loss, lambda a, b, reduction: F.smooth_l1_loss(a, b, reduction=reduction, beta=0.0),
    lambda a, b, reduction: F.smooth_l1_loss(a, b, reduction=reduction, beta=2.0),
    F.huber_loss, lambda a, b, reduction: F.huber_loss(a, b, reduction=reduction, delta=0.3),
], ids=["mse", "smooth_l1", "smooth_l1_beta0", "smooth_l1_beta2", "huber", "huber_delta"])
def test_losses_forward_and_backward(dev, loss, reduction):
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(6, 7, generator=g) * 2, torch.randn(6, 7, generator=g)
    check(lambda p, q: loss(p, q, reduction=reduction), a, b)


def test_ops_run_as_one_device_kernel_each(dev):
    x = torch.randn(1000).to(DEV)
    torch.mlu.synchronize()
    torch_mlu.reset_stats()
    F.mish(x)
    torch.mlu.synchronize()
    ops = {o["name"]: o for o in torch_mlu.cycle_report(format="json")["ops"]}
    assert ops["aten::mish"]["kernels"] == 1


ROUNDING = [torch.round, torch.floor, torch.ceil, torch.trunc, torch.frac]


@pytest.mark.parametrize("fn", ROUNDING, ids=lambda f: f.__name__)
def test_rounding_ties_specials_and_large_values(dev, fn):
    x = torch.tensor([0.3, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -1.7, 2.7, 3.5, 8388607.5, 8388609.0, 5e9, -5e9,
                      float("nan"), float("inf"), float("-inf")])
    check(fn, x, rtol=0, atol=0, grad=False)
    check(fn, special()[6:], rtol=0, atol=1e-6)  # zero gradients (frac: the identity)
    h = torch.tensor([1025.0, 1024.5, 512.5, 513.5, -0.5, 2.5, 65504.0], dtype=torch.float16)
    check(fn, h, rtol=0, atol=0, grad=False)


@pytest.mark.parametrize("decimals", [1, 3, -2, 40])
def test_round_to_decimals_as_the_cpu(dev, decimals):
    # x * 10^d rounded half to even in fp32, then / 10^d (torch's order; 10^40 is inf in fp32: NaN).
    x = torch.cat([torch.tensor([0.25, 0.35, -1.005, 125.0, -150.0, 1e30, 0.0, float("nan"), float("inf")]),
                   special()[6:] * 37])
    check(lambda t: torch.round(t, decimals=decimals), x, rtol=0, atol=0, grad=False)
    check(lambda t: torch.round(t, decimals=decimals), x[:8].half(), rtol=0, atol=0, grad=False)


@pytest.mark.parametrize("fn", [torch.exp2, torch.log2, torch.log10, torch.expm1, torch.log1p, torch.sinh, torch.cosh,
                                torch.asinh, torch.acosh, torch.atanh, F.logsigmoid], ids=lambda f: f.__name__)
def test_exponentials_and_hyperbolics(dev, fn):
    g = torch.Generator().manual_seed(4)
    x = {torch.acosh: 1 + torch.rand(64, generator=g) * 5, torch.atanh: torch.rand(64, generator=g) * 1.8 - 0.9,
         torch.log2: torch.rand(64, generator=g) * 10, torch.log10: torch.rand(64, generator=g) * 10,
         torch.log1p: torch.rand(64, generator=g) * 5 - 0.9}.get(fn, torch.randn(64, generator=g) * 3)
    x[:4] = torch.tensor([1e-5, -3e-6, 2e-4, 1e-8]) if fn not in (torch.acosh, torch.log2, torch.log10) else x[:4]
    check(fn, x)
    # Small arguments keep their relative precision (no cancellation in exp(x) - 1, log(1 + x), ...).
    if fn in (torch.expm1, torch.log1p, torch.sinh, torch.asinh, torch.atanh):
        tiny = torch.tensor([1e-7, -2e-6, 5e-5, 3e-4])
        torch.testing.assert_close(fn(tiny.to(DEV)).cpu(), fn(tiny), rtol=1e-6, atol=0)


def test_hypot_and_heaviside(dev):
    g = torch.Generator().manual_seed(5)
    check(torch.hypot, torch.randn(5, 6, generator=g), torch.randn(6, generator=g))
    x = torch.tensor([-1.0, 0.0, 2.0, 0.0, float("nan")])
    check(torch.heaviside, x, torch.tensor([0.5]), grad=False)


def test_threshold_glu_fmax_copysign_erf_logaddexp(dev):
    x = special()
    check(lambda t: F.threshold(t, 0.5, -2.0), x, grad=False)
    g = torch.Generator().manual_seed(6)
    check(lambda t: F.glu(t, dim=1), torch.randn(3, 8, 5, generator=g))
    a, b = special(seed=1), special(seed=2)
    a[10], b[11] = float("nan"), float("nan")
    check(torch.fmax, a, b, grad=False)
    check(torch.fmin, a, b, grad=False)
    signs = torch.tensor([1.0, -1.0, 0.0, -0.0, 3.0, -2.0])
    mags = torch.tensor([2.0, 3.0, -4.0, 5.0, -0.0, 0.0])
    assert torch.equal(torch.signbit(signs.to(DEV)).cpu(), torch.signbit(signs))
    assert torch.equal(torch.copysign(mags.to(DEV), signs.to(DEV)).cpu().signbit(), torch.copysign(mags, signs).signbit())
    check(torch.erf, torch.linspace(-5, 5, 101), rtol=0, atol=5e-7)  # A&S 1.5e-7 + fp32 rounding
    check(torch.logaddexp, a[6:], b[6:])
    check(torch.logaddexp2, a[6:], b[6:])
    inf = torch.tensor([float("inf"), float("-inf"), 1.0])
    check(torch.logaddexp, inf, inf, grad=False)
    i = torch.arange(-5, 5, dtype=torch.int32)
    assert torch.equal(torch.bitwise_not(i.to(DEV)).cpu(), torch.bitwise_not(i))


def test_device_compositions(dev):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(4, 5, 6, generator=g)
    d = x.to(DEV)
    assert torch.equal(torch.flip(d, [0, 2]).cpu(), torch.flip(x, [0, 2]))
    assert torch.equal(torch.roll(d, (2, -1), (1, 2)).cpu(), torch.roll(x, (2, -1), (1, 2)))
    assert torch.equal(torch.roll(d, 7).cpu(), torch.roll(x, 7))
    m = torch.randn(5, 5, generator=g)
    torch.testing.assert_close(torch.trace(m.to(DEV)).cpu(), torch.trace(m))
    x[0, 0, 0] = float("nan")
    torch.testing.assert_close(torch.nansum(x.to(DEV), dim=1).cpu(), torch.nansum(x, dim=1))
    lo, hi = torch.aminmax(d, dim=2)
    xc = d.cpu()
    assert torch.equal(lo.cpu(), xc.amin(2)) and torch.equal(hi.cpu(), xc.amax(2))
    lo, hi = torch.aminmax(d)
    assert lo.item() == xc.min().item() and hi.item() == xc.max().item()
    assert torch.equal(torch.eye(3, 4, device=DEV).cpu(), torch.eye(3, 4))
    assert torch.equal(d, d.clone()) and not torch.equal(d, d + 1) and not torch.equal(d, d[:2])
    check(torch.tan, torch.rand(32, generator=g) * 2 - 1)


def test_addr_rounds_each_step_as_torch_kernels(dev):
    g = torch.Generator().manual_seed(4)
    for dtype in (torch.float16, torch.float32):
        s, a, b = (torch.randn(shape, generator=g).to(dtype) * 3 for shape in ((5, 7), (5,), (7,)))
        for beta, alpha in ((0.6, 0.2), (1, 1), (-0.4, 1.7)):
            got = torch.addr(s.to(dev), a.to(dev), b.to(dev), beta=beta, alpha=alpha).cpu()
            # fp16: bit for bit (every step rounded as the CPU rounds it); fp32: the CPU's vector
            # path may fuse the last multiply-add (one rounding fewer).
            tol = {"rtol": 0, "atol": 0} if dtype == torch.float16 else {"rtol": 2e-6, "atol": 1e-6}
            torch.testing.assert_close(got, torch.addr(s, a, b, beta=beta, alpha=alpha), **tol)
        nan_self = torch.full((5, 7), float("nan"), dtype=dtype)  # beta = 0 ignores self
        got = torch.addr(nan_self.to(dev), a.to(dev), b.to(dev), beta=0, alpha=0.3).cpu()
        assert torch.equal(got, torch.addr(nan_self, a, b, beta=0, alpha=0.3))
    bcast = torch.addr(torch.ones(7).to(dev), a.to(dev), b.to(dev)).cpu()
    torch.testing.assert_close(bcast, torch.addr(torch.ones(7), a, b))
    with pytest.raises(RuntimeError, match="1-D argument vec1"):
        torch.addr(s.to(dev), s.to(dev), b.to(dev))


def test_linalg_cross(dev):
    g = torch.Generator().manual_seed(8)
    a, b = torch.randn(4, 3, 5, generator=g), torch.randn(1, 3, 5, generator=g)  # broadcast along dim 0
    torch.testing.assert_close(torch.linalg.cross(a.to(dev), b.to(dev), dim=1).cpu(), torch.linalg.cross(a, b, dim=1))
    c, d = torch.randn(6, 3, generator=g), torch.randn(6, 3, generator=g)
    torch.testing.assert_close(torch.cross(c.to(dev), d.to(dev), dim=-1).cpu(), torch.cross(c, d, dim=-1))
    i, j = torch.randint(-9, 9, (5, 3), generator=g), torch.randint(-9, 9, (5, 3), generator=g)
    assert torch.equal(torch.linalg.cross(i.to(dev), j.to(dev)).cpu(), torch.linalg.cross(i, j))
    with pytest.raises(RuntimeError, match="must have length 3"):
        torch.linalg.cross(torch.ones(2, 4).to(dev), torch.ones(2, 4).to(dev))
