"""Random ops on the device (src/ops/program_ops.cpp over libmlu random_uniform): uniform_,
normal_ (and normal with tensor mean/std), log_normal_, exponential_, cauchy_, geometric_,
random_ (from/to), bernoulli_(p tensor) and the factories over them (rand, randn, randint,
*_like). The device's draws are not the CPU's, so each is checked by its distribution (moments,
range, integrality), by reproducibility under torch.manual_seed / a Generator, and by dtype,
shape and layout."""

import math

import pytest
import torch

import torch_mlu

DEV = "mlu"
N = 20000


def moments(t):
    t = t.double().cpu().flatten()
    return t.mean().item(), t.std().item()


def test_uniform_range_mean_and_reproducibility(dev):
    torch.manual_seed(1)
    a = torch.empty(N, device=DEV).uniform_(-2.0, 3.0)
    mean, std = moments(a)
    assert abs(mean - 0.5) < 0.05 and abs(std - 5 / math.sqrt(12)) < 0.05
    assert a.min().item() >= -2.0 and a.max().item() < 3.0
    torch.manual_seed(1)
    assert torch.equal(torch.empty(N, device=DEV).uniform_(-2.0, 3.0).cpu(), a.cpu())
    assert not torch.equal(torch.empty(N, device=DEV).uniform_(-2.0, 3.0).cpu(), a.cpu())  # the stream moved on
    g = torch.Generator(device=DEV).manual_seed(7)
    b = torch.rand(5, 6, generator=g, device=DEV)
    g.manual_seed(7)
    assert torch.equal(torch.rand(5, 6, generator=g, device=DEV).cpu(), b.cpu())
    # Any layout and fp16 / float64: same logical values for the same seed.
    torch.manual_seed(3)
    c = torch.empty(40, 50, device=DEV).uniform_()
    torch.manual_seed(3)
    t = torch.empty(50, 40, device=DEV).t().uniform_()
    assert torch.equal(c.cpu(), t.cpu())
    torch.manual_seed(3)
    h = torch.empty(40, 50, device=DEV, dtype=torch.float16).uniform_()
    assert h.dtype == torch.float16 and torch.equal(h.cpu(), c.cpu().half())
    torch.manual_seed(3)
    d = torch.empty(40, 50, device=DEV, dtype=torch.float64).uniform_()
    assert torch.equal(d.cpu(), c.cpu().double())


def test_normal_family(dev):
    torch.manual_seed(2)
    z = torch.randn(N, device=DEV)
    mean, std = moments(z)
    assert abs(mean) < 0.05 and abs(std - 1) < 0.05
    assert torch.isfinite(z).all().item()
    n = torch.empty(N, device=DEV).normal_(3.0, 0.5)
    mean, std = moments(n)
    assert abs(mean - 3) < 0.03 and abs(std - 0.5) < 0.03
    m = torch.tensor([0.0, 100.0], device=DEV).repeat(N // 2)
    s = torch.tensor([1.0, 0.1], device=DEV).repeat(N // 2)
    tt = torch.normal(m, s)
    assert tt.shape == m.shape
    assert abs(moments(tt[1::2])[0] - 100) < 0.01 and abs(moments(tt[1::2])[1] - 0.1) < 0.01
    tf = torch.normal(m, 2.0)
    assert abs(moments(tf[0::2])[1] - 2.0) < 0.1
    ft = torch.normal(5.0, s)
    assert abs(moments(ft[0::2])[0] - 5.0) < 0.05
    o = torch.empty(0, device=DEV)
    torch.normal(m, s, out=o)
    assert o.shape == m.shape
    ln = torch.empty(N, device=DEV).log_normal_(0.0, 0.25)
    assert (ln > 0).all().item() and abs(moments(ln.log())[1] - 0.25) < 0.02
    with pytest.raises(RuntimeError, match="std"):
        torch.empty(3, device=DEV).normal_(0.0, -1.0)


def test_exponential_cauchy_geometric(dev):
    torch.manual_seed(4)
    e = torch.empty(N, device=DEV).exponential_(2.0)
    assert (e >= 0).all().item() and abs(moments(e)[0] - 0.5) < 0.03
    c = torch.empty(N, device=DEV).cauchy_(1.0, 2.0)
    assert abs(c.cpu().median().item() - 1.0) < 0.1  # the median; the mean does not exist
    q = torch.empty(N, device=DEV).geometric_(0.25)
    qc = q.cpu()
    assert (qc >= 1).all() and torch.equal(qc, qc.round()) and abs(qc.mean().item() - 4.0) < 0.15
    qi = torch.empty(100, device=DEV, dtype=torch.int32).geometric_(0.5)
    assert qi.dtype == torch.int32 and (qi.cpu() >= 1).all()


def test_random_integers_and_bernoulli(dev):
    torch.manual_seed(5)
    r = torch.randint(-3, 7, (N,), device=DEV)
    rc = r.cpu()
    assert r.dtype == torch.int64 and rc.min().item() == -3 and rc.max().item() == 6
    assert torch.equal(torch.bincount(rc + 3).clamp(max=1), torch.ones(10, dtype=torch.int64))
    f = torch.empty(1000, device=DEV).random_(0, 5)
    fc = f.cpu()
    assert torch.equal(fc, fc.floor()) and fc.min() >= 0 and fc.max() <= 4
    b8 = torch.empty(1000, device=DEV, dtype=torch.uint8).random_()
    assert b8.cpu().max().item() > 200
    bo = torch.empty(1000, device=DEV, dtype=torch.bool).random_()
    assert 300 < bo.cpu().sum().item() < 700
    rl = torch.randint_like(torch.empty(4, 5, device=DEV, dtype=torch.int32), 10)
    assert rl.dtype == torch.int32 and rl.shape == (4, 5)
    p = torch.tensor([0.0, 1.0, 0.3], device=DEV).repeat(N // 3)
    x = torch.bernoulli(p).cpu()
    assert torch.equal(x[0::3], torch.zeros(N // 3)) and torch.equal(x[1::3], torch.ones(N // 3))
    assert abs(x[2::3].mean().item() - 0.3) < 0.03
    with pytest.raises(NotImplementedError, match="int32"):
        torch.empty(3, device=DEV, dtype=torch.int64).random_(0, 2**40)


def test_empty_tensors_and_unsupported_dtypes(dev):
    for fill in (lambda t: t.uniform_(), lambda t: t.normal_(), lambda t: t.exponential_(), lambda t: t.random_(0, 3)):
        assert fill(torch.empty(0, 3, device=DEV)).shape == (0, 3)
    with pytest.raises(NotImplementedError, match="uniform_.*Int"):
        torch.empty(3, device=DEV, dtype=torch.int32).uniform_()


def test_uniform_is_one_device_kernel(dev):
    t = torch.empty(10000, device=DEV)
    torch.mlu.synchronize()
    torch_mlu.reset_stats()
    t.uniform_()
    torch.mlu.synchronize()
    ops = {o["name"]: o for o in torch_mlu.cycle_report(format="json")["ops"]}
    assert ops["aten::uniform_"]["kernels"] == 1
