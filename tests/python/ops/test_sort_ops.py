"""Sorting and selection on the device (src/ops/sort_ops.cpp over libmlu sort) against torch's CPU
results: sort / argsort / msort (stable, both directions, NaN and ties, any dim, non-contiguous,
0-dim, empty, a row longer than one core's chunk), topk, kthvalue, median / nanmedian (with NaN),
fp16 and integers, the sort backward, logcumsumexp and multinomial (src/ops/scan_ops.cpp: cumsum-based),
randperm (a sort of random keys)."""

import pytest
import torch

DEV = "mlu"


def same(out, ref):
    assert out.dtype == ref.dtype and out.shape == ref.shape, (out.dtype, out.shape, ref.dtype, ref.shape)
    torch.testing.assert_close(out.cpu(), ref, rtol=0, atol=0, equal_nan=True)


def ties_and_nans(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-4, 5, shape, generator=g).float() / 2
    flat = x.view(-1)
    flat[:: 7] = float("nan")
    flat[3 :: 11] = float("inf")
    flat[5 :: 13] = -float("inf")
    return x


@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable_nan_ties_any_dim(dev, descending):
    x = ties_and_nans(6, 9, 5)
    for dim in (0, 1, -1):
        v, i = torch.sort(x.to(DEV), dim=dim, descending=descending, stable=True)
        rv, ri = torch.sort(x, dim=dim, descending=descending, stable=True)
        same(v, rv)
        same(i, ri)
    same(torch.argsort(x.to(DEV), dim=1, descending=descending, stable=True),
         torch.argsort(x, dim=1, descending=descending, stable=True))
    xt = x.transpose(0, 2)  # non-contiguous
    same(torch.sort(xt.to(DEV), stable=True, descending=descending)[1], torch.sort(xt, stable=True, descending=descending)[1])
    same(torch.msort(x.to(DEV)), torch.msort(x))


def test_sort_long_row_dtypes_edges(dev):
    x = ties_and_nans(2, 1500, seed=1)  # longer than the tiny preset's NRAM chunk: GDRAM merge stages
    v, i = torch.sort(x.to(DEV), stable=True)
    rv, ri = torch.sort(x, stable=True)
    same(v, rv)
    same(i, ri)
    h = ties_and_nans(3, 17, seed=2).half()
    same(torch.sort(h.to(DEV), stable=True, descending=True)[1], torch.sort(h, stable=True, descending=True)[1])
    n = torch.randint(-1000, 1000, (4, 33), generator=torch.Generator().manual_seed(3))
    for t in (n, n.int(), n.to(torch.int8), n > 0):
        same(torch.sort(t.to(DEV), stable=True)[0], torch.sort(t, stable=True)[0])
        same(torch.sort(t.to(DEV), stable=True)[1], torch.sort(t, stable=True)[1])
    s = torch.tensor(3.5)
    same(torch.sort(s.to(DEV))[0], torch.sort(s)[0])
    same(torch.sort(s.to(DEV))[1], torch.sort(s)[1])
    e = torch.empty(0, 4)
    same(torch.sort(e.to(DEV), dim=0)[0], torch.sort(e, dim=0)[0])
    with pytest.raises(NotImplementedError, match="sort"):
        torch.sort(torch.zeros(3, dtype=torch.float64, device=DEV))


def test_topk_kthvalue_median(dev):
    g = torch.Generator().manual_seed(4)
    x = torch.randn(5, 12, generator=g)
    for largest in (True, False):
        v, i = torch.topk(x.to(DEV), 4, dim=1, largest=largest)
        rv, ri = torch.topk(x, 4, dim=1, largest=largest)
        same(v, rv)
        same(i, ri)
    same(torch.kthvalue(x.to(DEV), 3, dim=0)[0], torch.kthvalue(x, 3, dim=0)[0])
    same(torch.kthvalue(x.to(DEV), 3, dim=1, keepdim=True)[1], torch.kthvalue(x, 3, dim=1, keepdim=True)[1])
    xn = x.clone()
    xn[1, 4] = xn[1, 7] = xn[3, 0] = float("nan")
    xn[4, :11] = float("nan")  # one number left (an all-NaN row's nanmedian index is unspecified)
    for fn in (torch.median, torch.nanmedian):
        same(fn(xn.to(DEV)), fn(xn))
        same(fn(x.to(DEV)), fn(x))
        v, i = fn(xn.to(DEV), dim=1)
        rv, ri = fn(xn, dim=1)
        same(v, rv)
        same(i, ri)
    n = torch.randint(0, 9, (3, 8), generator=g)
    same(torch.median(n.to(DEV), dim=1)[0], torch.median(n, dim=1)[0])
    with pytest.raises(IndexError):
        torch.topk(x.to(DEV), 13, dim=1)


def test_sort_and_topk_backward(dev):
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(5))
    xd = x.to(DEV).requires_grad_()
    xc = x.clone().requires_grad_()
    w = torch.randn(4, 3)
    (torch.topk(xd, 3, dim=1)[0] * w.to(DEV)).sum().backward()
    (torch.topk(xc, 3, dim=1)[0] * w).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xc.grad)
    xd.grad = None
    xc.grad = None
    (torch.sort(xd, dim=0)[0] * x.to(DEV)).sum().backward()
    (torch.sort(xc, dim=0)[0] * x).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xc.grad)


def test_unique_and_unique_consecutive(dev):
    x = torch.tensor([[3.0, 1.0, float("nan")], [1.0, 3.0, 2.0], [2.0, 2.0, float("nan")]])
    for sorted_ in (True, False):
        got = torch.unique(x.to(DEV), sorted=sorted_, return_inverse=True, return_counts=True)
        ref = torch.unique(x, sorted=sorted_, return_inverse=True, return_counts=True)
        for g, r in zip(got, ref):
            same(g, r)
    n = torch.tensor([5, 5, 1, 1, 1, 5, 2, 2])
    for g, r in zip(torch.unique_consecutive(n.to(DEV), return_inverse=True, return_counts=True),
                    torch.unique_consecutive(n, return_inverse=True, return_counts=True)):
        same(g, r)
    same(torch.unique(n.to(DEV)), torch.unique(n))
    same(torch.unique(torch.empty(0).to(DEV)), torch.unique(torch.empty(0)))


def test_logcumsumexp(dev):
    x = torch.randn(4, 7, generator=torch.Generator().manual_seed(6)) * 3
    x[1, 2] = -float("inf")
    x[2] = -float("inf")
    for dim in (0, 1):
        torch.testing.assert_close(torch.logcumsumexp(x.to(DEV), dim).cpu(), torch.logcumsumexp(x, dim), equal_nan=True)
    h = x.half()
    torch.testing.assert_close(torch.logcumsumexp(h.to(DEV), 1).cpu(), torch.logcumsumexp(h, 1), equal_nan=True)


def test_multinomial_inverse_cdf(dev):
    torch.manual_seed(0)
    p = torch.tensor([[0.1, 0.0, 0.6, 0.3], [0.0, 0.0, 2.0, 0.0]])  # unnormalised rows, zero weights
    s = torch.multinomial(p.to(DEV), 4000, replacement=True)
    assert s.dtype == torch.int64 and s.shape == (2, 4000)
    freq = torch.bincount(s[0].cpu(), minlength=4) / 4000.0
    torch.testing.assert_close(freq, p[0] / p[0].sum(), atol=0.03, rtol=0)
    assert freq[1] == 0 and (s[1].cpu() == 2).all()
    assert torch.multinomial(p[0].to(DEV), 1).shape == (1,)
    # without replacement: distinct categories of positive weight (test_distance_and_selection.py
    # has the frequencies); a row with fewer positive weights than samples is refused, as torch
    assert sorted(torch.multinomial(p[0].to(DEV), 3).cpu().tolist()) == [0, 2, 3]
    with pytest.raises(RuntimeError, match="not enough non-negative category"):
        torch.multinomial(p.to(DEV), 2)


def test_randperm_is_a_uniform_permutation_from_the_device_generator(dev):
    g = torch.Generator(DEV)
    g.manual_seed(7)
    a = torch.randperm(1000, device=DEV, generator=g)
    g.manual_seed(7)
    assert torch.equal(torch.randperm(1000, device=DEV, generator=g), a)  # the generator's stream
    assert a.dtype == torch.int64 and torch.equal(a.sort()[0].cpu(), torch.arange(1000))
    # Position of element 0 over 3000 permutations of 6: uniform (chi-square, 5 dof, p > 0.001).
    counts = torch.zeros(6)
    for _ in range(3000):
        counts[int((torch.randperm(6, device=DEV) == 0).nonzero()[0])] += 1
    chi2 = ((counts - 500.0) ** 2 / 500.0).sum().item()
    assert chi2 < 20.5, counts
    f = torch.randperm(7, device=DEV, dtype=torch.float16)
    assert f.dtype == torch.float16 and torch.equal(f.sort()[0].cpu(), torch.arange(7, dtype=torch.float16))
    out = torch.empty(0, dtype=torch.int32, device=DEV)
    torch.randperm(5, out=out)
    assert out.shape == (5,) and sorted(out.cpu().tolist()) == [0, 1, 2, 3, 4]
    assert torch.randperm(0, device=DEV).shape == (0,)
    with pytest.raises(RuntimeError, match="not exactly representable"):
        torch.randperm(3000, device=DEV, dtype=torch.float16)


def test_unique_old_entry_point(dev):
    """aten::_unique (index_fill's backward calls it): sorted values and the inverse in self's shape."""
    x = torch.tensor([[3, 1, 3], [2, 1, 7]])
    got, want = torch.ops.aten._unique(x.to(dev), True, True), torch.ops.aten._unique(x, True, True)
    assert torch.equal(got[0].cpu(), want[0]) and torch.equal(got[1].cpu(), want[1])
    xf = torch.randn(5, requires_grad=True)
    xd = xf.detach().to(dev).requires_grad_()
    idx = torch.tensor([1, 3, 1])
    xf.index_fill(0, idx, 2.0).pow(2).sum().backward()
    xd.index_fill(0, idx.to(dev), 2.0).pow(2).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xf.grad)
