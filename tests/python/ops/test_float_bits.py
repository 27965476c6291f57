"""Ops on the bits of fp32 values (src/ops/float_bits_ops.cpp: programs over the storage read as
int32) against torch's CPU: nextafter and frexp, bit for bit, with zeros, subnormals, the largest
values, infinities and NaN; and the float64 ops computed in float32 with the range check
(narrow_float64: softmax / log_softmax with dtype=float64)."""

import pytest
import torch
import torch.nn.functional as F

import torch_mlu  # noqa: F401

DEV = "mlu"
TINY = torch.finfo(torch.float32).tiny  # smallest normal
SUB = 1.401298464324817e-45  # smallest subnormal
BIG = torch.finfo(torch.float32).max


def edges():
    v = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -7.25, TINY, -TINY, SUB, -SUB, 3 * SUB, TINY / 3, BIG, -BIG, 1e-30, 6e5,
         float("inf"), float("-inf"), float("nan")]
    g = torch.Generator().manual_seed(0)
    return torch.cat([torch.tensor(v), torch.randn(40, generator=g) * 10])


def test_nextafter_steps_one_ulp_like_the_cpu():
    x = edges()
    for y in (torch.zeros_like(x), torch.full_like(x, float("inf")), torch.full_like(x, float("-inf")), x.flip(0),
              x.clone(), torch.full_like(x, float("nan"))):
        out = torch.nextafter(x.to(DEV), y.to(DEV)).cpu()
        ref = torch.nextafter(x, y)
        torch.testing.assert_close(out, ref, rtol=0, atol=0, equal_nan=True)
    # broadcasting and out=
    out = torch.empty(3, 4, device=DEV)
    torch.nextafter(x[:4].to(DEV), x[4:7].view(3, 1).to(DEV), out=out)
    torch.testing.assert_close(out.cpu(), torch.nextafter(x[:4], x[4:7].view(3, 1)), rtol=0, atol=0)


def test_nextafter_refuses_half_naming_the_dtype():
    with pytest.raises(NotImplementedError, match="nextafter.*Half"):
        torch.nextafter(torch.ones(2, dtype=torch.float16, device=DEV), torch.zeros(2, dtype=torch.float16, device=DEV))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_frexp_matches_the_cpu(dtype):
    x = edges()
    if dtype == torch.float16:
        x = torch.cat([x[x.abs() < 6e4], torch.tensor([6e-8, -6e-8, 6.1e-5, 65504.0])]).half()
    m, e = torch.frexp(x.to(DEV))
    rm, re = torch.frexp(x)
    assert m.dtype == rm.dtype and e.dtype == torch.int32
    torch.testing.assert_close(m.cpu(), rm, rtol=0, atol=0, equal_nan=True)
    finite = torch.isfinite(x)  # the exponent of inf / NaN is unspecified (glibc: 0, as here)
    assert torch.equal(e.cpu()[finite], re[finite])
    assert torch.equal(torch.ldexp(m.cpu()[finite].float(), e.cpu()[finite]), x[finite].float())


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax, F.softmin])
def test_float64_softmax_computes_in_float32(fn):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(5, 7, generator=g) * 4
    out = fn(x.to(DEV), dim=1, dtype=torch.float64)
    ref = fn(x, dim=1, dtype=torch.float64)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out.cpu(), ref, rtol=2e-6, atol=1e-7)  # float32's precision, not float64's
    xd = x.double().to(DEV)
    torch.testing.assert_close(fn(xd, dim=0).cpu(), fn(x.double(), dim=0), rtol=2e-6, atol=1e-7)


def test_float64_beyond_float32_range_is_a_clear_error():
    x = torch.tensor([1.0, 1e300, 2.0], dtype=torch.float64, device=DEV)
    with pytest.raises(ValueError, match="_softmax.*float32's range"):
        F.softmax(x, dim=0)
    # infinities are in range (they stay infinities)
    y = torch.tensor([1.0, float("-inf"), 2.0], dtype=torch.float64)
    torch.testing.assert_close(F.softmax(y.to(DEV), dim=0).cpu(), F.softmax(y, dim=0), rtol=2e-6, atol=1e-7)


def test_float_power_computes_in_float32_and_returns_float64():
    g = torch.Generator().manual_seed(2)
    a, b = torch.rand(4, 5, generator=g) * 8 + 0.01, torch.rand(5, generator=g) * 6
    for args in ((a, b), (a, 2.5), (a[0, 0], b)):  # tensor-tensor (broadcast), tensor-scalar, 0-dim base
        dev_args = [t.to(DEV) if isinstance(t, torch.Tensor) else t for t in args]
        out, ref = torch.float_power(*dev_args), torch.float_power(*args)
        assert out.dtype == torch.float64
        torch.testing.assert_close(out.cpu(), ref, rtol=2e-6, atol=0)
