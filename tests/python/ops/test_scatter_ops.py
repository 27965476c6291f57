"""Overwriting and reducing scatters on the device (src/ops/scatter_ops.cpp over libmlu scatter)
against torch's CPU results: scatter (src / value / add / multiply, duplicates: the last update in
index order wins), scatter_reduce (every reduction, include_self both ways), index_copy,
index_fill_, put_ (accumulate both ways, negative indices), masked_scatter_, index_put_ (last
write wins, accumulate, boolean masks), and the backward of scatter."""

import pytest
import torch

DEV = "mlu"


def same(out, ref):
    assert out.dtype == ref.dtype and out.shape == ref.shape, (out.dtype, out.shape, ref.dtype, ref.shape)
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-6, atol=1e-6, equal_nan=True)


def test_scatter_last_writer_value_and_reduce(dev):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 6, generator=g)
    src = torch.randn(4, 6, generator=g)
    idx = torch.randint(0, 6, (4, 5), generator=g)  # duplicates along dim 1
    same(torch.scatter(x.to(DEV), 1, idx.to(DEV), src.to(DEV)), torch.scatter(x, 1, idx, src))
    same(torch.scatter(x.to(DEV), 1, idx.to(DEV), 2.5), torch.scatter(x, 1, idx, 2.5))
    for reduce in ("add", "multiply"):
        same(torch.scatter(x.to(DEV), 1, idx.to(DEV), src.to(DEV), reduce=reduce), torch.scatter(x, 1, idx, src, reduce=reduce))
    y = x.to(DEV)
    y.scatter_(0, idx[:3, :4].to(DEV) % 4, src.to(DEV))
    same(y, x.clone().scatter_(0, idx[:3, :4] % 4, src))
    b = torch.zeros(3, 4, dtype=torch.bool)
    bi = torch.tensor([[1], [3], [0]])
    same(torch.scatter(b.to(DEV), 1, bi.to(DEV), True), torch.scatter(b, 1, bi, True))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce(dev, reduce):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 5, generator=g)
    src = torch.randn(3, 7, generator=g)
    idx = torch.randint(0, 5, (3, 7), generator=g)
    for include_self in (True, False):
        same(x.to(DEV).scatter_reduce(1, idx.to(DEV), src.to(DEV), reduce, include_self=include_self),
             x.scatter_reduce(1, idx, src, reduce, include_self=include_self))
    n = torch.randint(-9, 9, (3, 5), generator=g)
    ns = torch.randint(-9, 9, (3, 7), generator=g)
    same(n.to(DEV).scatter_reduce(1, idx.to(DEV), ns.to(DEV), reduce, include_self=False),
         n.scatter_reduce(1, idx, ns, reduce, include_self=False))


def test_index_copy_fill_put_masked_scatter(dev):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(5, 4, generator=g)
    src = torch.randn(3, 4, generator=g)
    idx = torch.tensor([4, 0, 2])
    same(x.to(DEV).index_copy(0, idx.to(DEV), src.to(DEV)), x.index_copy(0, idx, src))
    cols = torch.randn(2, 5, generator=g).T  # [5, 2], non-contiguous
    same(x.to(DEV).index_copy(1, torch.tensor([3, 1]).to(DEV), cols.to(DEV)), x.index_copy(1, torch.tensor([3, 1]), cols))
    same(x.to(DEV).index_fill_(1, torch.tensor([0, -1]).to(DEV), -3.0), x.clone().index_fill_(1, torch.tensor([0, -1]), -3.0))
    same(x.to(DEV).index_fill(0, torch.tensor([1]).to(DEV), torch.tensor(7.0).to(DEV)),
         x.index_fill(0, torch.tensor([1]), torch.tensor(7.0)))
    pidx = torch.tensor([[0, -1], [7, 7]])
    pv = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    for acc in (False, True):
        same(x.to(DEV).put_(pidx.to(DEV), pv.to(DEV), accumulate=acc), x.clone().put_(pidx, pv, accumulate=acc))
    same(x.t().to(DEV).put(pidx.to(DEV), pv.to(DEV)), x.t().put(pidx, pv))  # non-contiguous self
    mask = torch.rand(5, 4, generator=g) > 0.5
    source = torch.randn(20, generator=g)
    same(x.to(DEV).masked_scatter(mask.to(DEV), source.to(DEV)), x.masked_scatter(mask, source))
    row = torch.tensor([True, False, True, True])
    same(x.to(DEV).masked_scatter(row.to(DEV), source.to(DEV)), x.masked_scatter(row, source))


def test_scatter_backward(dev):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 5, generator=g)
    src = torch.randn(3, 3, generator=g)
    idx = torch.argsort(torch.rand(3, 5, generator=g), dim=1)[:, :3]  # distinct positions per row
    xd, sd = x.to(DEV).requires_grad_(), src.to(DEV).requires_grad_()
    xc, sc = x.clone().requires_grad_(), src.clone().requires_grad_()
    w = torch.randn(3, 5, generator=g)
    (torch.scatter(xd, 1, idx.to(DEV), sd) * w.to(DEV)).sum().backward()
    (torch.scatter(xc, 1, idx, sc) * w).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xc.grad)
    torch.testing.assert_close(sd.grad.cpu(), sc.grad)


def test_index_put(dev):
    g = torch.Generator().manual_seed(4)
    x = torch.randn(4, 5, 3, generator=g)
    rows = torch.tensor([0, 2, 2, 3])
    cols = torch.tensor([1, 4, 4, 0])
    v = torch.randn(4, 3, generator=g)
    for acc in (False, True):  # duplicates (2, 4): the last write wins / both add
        same(x.to(DEV).index_put_((rows.to(DEV), cols.to(DEV)), v.to(DEV), accumulate=acc),
             x.clone().index_put_((rows, cols), v, accumulate=acc))
    y = x.to(DEV)
    y[torch.tensor([3, 1]).to(DEV)] = 7.0  # index tensors on the leading dims (index.Tensor's limit)
    r = x.clone()
    r[torch.tensor([3, 1])] = 7.0
    same(y, r)
    mask = x > 0.5
    y = x.to(DEV)
    y[mask.to(DEV)] = -1.0
    r = x.clone()
    r[mask] = -1.0
    same(y, r)


def test_scatter_family_shares_torchs_argument_checks(dev):
    """scatter / scatter_reduce / scatter_add run one checking function (ops/scatter_checks.h):
    torch's dtype and shape rules with its messages, before any kernel."""
    x = torch.zeros(3, 4).to(DEV)
    big = torch.zeros(2, 5, dtype=torch.long).to(DEV)  # wider than src (and self) in dim 1
    for fn in (lambda: x.scatter(0, big, torch.ones(2, 2).to(DEV)),
               lambda: x.scatter_reduce(0, big, torch.ones(2, 2).to(DEV), "sum"),
               lambda: x.scatter_add(0, big, torch.ones(2, 2).to(DEV))):
        with pytest.raises(RuntimeError, match="to be smaller than self"):
            fn()
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        x.scatter(0, torch.zeros(1, 1, dtype=torch.int16).to(DEV), 1.0)
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        x.scatter(0, torch.zeros(1, 1, dtype=torch.long).to(DEV), torch.ones(1, 1, dtype=torch.half).to(DEV))
    with pytest.raises(RuntimeError, match="same number of dimensions as self"):
        x.scatter(0, torch.zeros(2, dtype=torch.long).to(DEV), 1.0)
    # a value scatter checks no src shape; an empty index checks no shapes at all
    same(x.scatter(1, torch.tensor([[3], [0]]).to(DEV), 2.0), torch.zeros(3, 4).scatter(1, torch.tensor([[3], [0]]), 2.0))
    same(x.scatter(0, torch.empty(0, 9, dtype=torch.long).to(DEV), torch.ones(1, 1).to(DEV)), torch.zeros(3, 4))
