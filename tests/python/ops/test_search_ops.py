"""Ops composed of other device kernels (src/ops/composite_ops.cpp) against torch's CPU results:
count_nonzero, isin, searchsorted / bucketize (both sides, N-d sequences, sorter, NaN), take,
channel_shuffle, index_add (functional, in-place, out=, 0-dim) and reflection / replication
padding (1d-3d, forward and backward, negative padding)."""

import pytest
import torch

DEV = "mlu"


def same(out, ref):
    assert out.dtype == ref.dtype and out.shape == ref.shape, (out.dtype, out.shape, ref.dtype, ref.shape)
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-6, atol=1e-6, equal_nan=True)


def test_count_nonzero_and_isin(dev):
    x = torch.tensor([[0.0, 1.5, 0.0, -2.0], [3.0, 0.0, float("nan"), 0.0]])
    same(torch.count_nonzero(x.to(DEV)), torch.count_nonzero(x))
    same(torch.count_nonzero(x.to(DEV), dim=1), torch.count_nonzero(x, dim=1))
    e = torch.tensor([[1, 2, 3], [4, 5, 6]])
    t = torch.tensor([2, 6, 9])
    same(torch.isin(e.to(DEV), t.to(DEV)), torch.isin(e, t))
    same(torch.isin(e.to(DEV), t.to(DEV), invert=True), torch.isin(e, t, invert=True))
    same(torch.isin(e.to(DEV), 5), torch.isin(e, 5))
    same(torch.isin(e.to(DEV), torch.tensor([], dtype=torch.int64).to(DEV)), torch.isin(e, torch.tensor([], dtype=torch.int64)))


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize(dev, right):
    seq = torch.tensor([1.0, 2.0, 2.0, 4.0, 7.0])
    x = torch.tensor([[0.5, 2.0, 3.0], [7.0, 8.0, float("nan")]])
    same(torch.searchsorted(seq.to(DEV), x.to(DEV), right=right), torch.searchsorted(seq, x, right=right))
    same(torch.bucketize(x.to(DEV), seq.to(DEV), right=right, out_int32=True),
         torch.bucketize(x, seq, right=right, out_int32=True))
    nd = torch.tensor([[1.0, 3.0, 5.0], [0.0, 0.5, 9.0]])
    v = torch.tensor([[3.0, 6.0], [0.5, -1.0]])
    same(torch.searchsorted(nd.to(DEV), v.to(DEV), side="right" if right else "left"),
         torch.searchsorted(nd, v, side="right" if right else "left"))
    unsorted = torch.tensor([4.0, 1.0, 7.0, 2.0])
    sorter = torch.argsort(unsorted)
    same(torch.searchsorted(unsorted.to(DEV), x.to(DEV), right=right, sorter=sorter.to(DEV)),
         torch.searchsorted(unsorted, x, right=right, sorter=sorter))


def test_take_channel_shuffle_index_add(dev):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, 5, generator=g)
    idx = torch.tensor([[0, -1, 7], [59, 3, -60]])
    same(torch.take(x.to(DEV), idx.to(DEV)), torch.take(x, idx))
    c = torch.randn(2, 6, 3, 3, generator=g)
    same(torch.nn.functional.channel_shuffle(c.to(DEV), 3), torch.nn.functional.channel_shuffle(c, 3))
    base = torch.randn(5, 3, generator=g)
    src = torch.randn(4, 3, generator=g)
    index = torch.tensor([0, 4, 0, 2])
    same(torch.index_add(base.to(DEV), 0, index.to(DEV), src.to(DEV), alpha=2.0), torch.index_add(base, 0, index, src, alpha=2.0))
    cols = torch.randn(5, 2, generator=g)
    same(torch.index_add(base.to(DEV), 1, torch.tensor([2, 2]).to(DEV), cols.to(DEV)),
         torch.index_add(base, 1, torch.tensor([2, 2]), cols))
    d = base.to(DEV)
    d.index_add_(0, index.to(DEV), src.to(DEV))
    same(d, base.clone().index_add_(0, index, src))
    s0 = torch.tensor(1.5)
    same(torch.index_add(s0.to(DEV), 0, torch.tensor([0]).to(DEV), torch.tensor(2.0).to(DEV)),
         torch.index_add(s0, 0, torch.tensor([0]), torch.tensor(2.0)))


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape,pad", [((2, 3, 7), (2, 3)), ((3, 7), (0, 4)), ((1, 2, 5, 6), (1, 2, 3, 4)),
                                       ((1, 2, 3, 4, 5), (1, 1, 2, 0, 2, 1)), ((2, 3, 7), (-2, 3))])
def test_reflection_and_replication_pad_forward_and_backward(dev, mode, shape, pad):
    if mode == "reflect" and min(pad) < 0:
        pytest.skip("reflect takes no negative padding on the CPU either")
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    cx, dx = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    ref, out = torch.nn.functional.pad(cx, pad, mode=mode), torch.nn.functional.pad(dx, pad, mode=mode)
    same(out.detach(), ref.detach())
    up = torch.randn(ref.shape, generator=torch.Generator().manual_seed(2))
    ref.backward(up)
    out.backward(up.to(DEV))
    torch.testing.assert_close(dx.grad.cpu(), cx.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(dev, reduce, include_self):
    g = torch.Generator().manual_seed(5)
    x, src = torch.randn(5, 3, generator=g), torch.randn(4, 3, generator=g)
    idx = torch.tensor([0, 4, 0, 2])  # a repeated target and untouched rows
    ref = x.index_reduce(0, idx, src, reduce, include_self=include_self)
    same(x.to(DEV).index_reduce(0, idx.to(DEV), src.to(DEV), reduce, include_self=include_self), ref)
    same(x.t().to(DEV).index_reduce(1, idx.to(DEV), src.t().to(DEV), reduce, include_self=include_self),
         x.t().index_reduce(1, idx, src.t(), reduce, include_self=include_self))


def test_repeat_interleave_renorm_rrelu(dev):
    r = torch.tensor([2, 0, 3, 1])
    same(torch.repeat_interleave(r.to(DEV)), torch.repeat_interleave(r))
    same(torch.repeat_interleave(r.int().to(DEV)), torch.repeat_interleave(r.int()))
    x = torch.arange(8.0).view(4, 2)
    same(torch.repeat_interleave(x.to(DEV), r.to(DEV), dim=0), torch.repeat_interleave(x, r, dim=0))
    same(torch.repeat_interleave(r.to(DEV), output_size=6), torch.repeat_interleave(r, output_size=6))
    same(torch.repeat_interleave(torch.zeros(0, dtype=torch.long).to(DEV)), torch.zeros(0, dtype=torch.long))
    with pytest.raises(RuntimeError, match="negative"):
        torch.repeat_interleave(torch.tensor([1, -1]).to(DEV))
    y = torch.randn(3, 4, 2, generator=torch.Generator().manual_seed(6)) * 3
    for p, dim, maxnorm in ((2, 0, 2.0), (1, 1, 5.0), (3.5, -1, 0.5)):
        torch.testing.assert_close(torch.renorm(y.to(DEV), p, dim, maxnorm).cpu(), torch.renorm(y, p, dim, maxnorm))
    # rrelu: eval is leaky_relu with the mean slope; training draws a slope in [lower, upper] for x <= 0
    z = torch.randn(200, generator=torch.Generator().manual_seed(7))
    same(torch.nn.functional.rrelu(z.to(DEV), 0.1, 0.3, training=False), torch.nn.functional.rrelu(z, 0.1, 0.3, training=False))
    zd = z.to(DEV).requires_grad_()
    out = torch.nn.functional.rrelu(zd, 0.1, 0.3, training=True)
    slope = (out / zd).detach().cpu()
    neg = z <= 0
    assert torch.equal(slope[~neg], torch.ones(int((~neg).sum())))
    assert slope[neg].min() >= 0.1 and slope[neg].max() <= 0.3 and slope[neg].std() > 0.02
    out.sum().backward()
    torch.testing.assert_close(zd.grad.cpu(), slope)


def test_histc(dev):
    x = torch.randn(300, generator=torch.Generator().manual_seed(8)) * 2
    x[0], x[1], x[2] = 1.0, float("nan"), -1.0  # the edges themselves (max lands in the last bin), NaN not counted
    for bins, lo, hi in ((10, -1.0, 1.0), (1, -5.0, 5.0), (13, 0.3, 2.9)):
        same(torch.histc(x.to(DEV), bins, lo, hi), torch.histc(x, bins, lo, hi))
    same(torch.histc(x[3:].to(DEV), 7), torch.histc(x[3:], 7))  # the data's own range
    same(torch.histc(torch.full((4,), 2.5).to(DEV), 4), torch.histc(torch.full((4,), 2.5), 4))
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(x.to(DEV), 5, 2.0, 1.0)
