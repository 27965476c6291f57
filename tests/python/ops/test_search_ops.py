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
