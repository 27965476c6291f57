"""Margin losses on the device (src/ops/margin_loss_ops.cpp) against torch's CPU results:
multi_margin_loss (p = 1, 2, margin, class weights, every reduction, unbatched) and
multilabel_margin_loss (targets ended by -1, repeated targets), forward and backward."""

import pytest
import torch
import torch.nn.functional as F

DEV = "mlu"


def check(fn, x, *args):
    cx, dx = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    ref, out = fn(cx, *args), fn(dx, *[a.to(DEV) if isinstance(a, torch.Tensor) else a for a in args])
    assert out.shape == ref.shape
    torch.testing.assert_close(out.detach().cpu(), ref.detach(), rtol=1e-5, atol=1e-6)
    up = torch.randn(ref.shape, generator=torch.Generator().manual_seed(9))
    ref.backward(up)
    out.backward(up.to(DEV))
    torch.testing.assert_close(dx.grad.cpu(), cx.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multi_margin_loss(reduction):
    g = torch.Generator().manual_seed(1)
    x, y, w = torch.randn(5, 4, generator=g), torch.tensor([0, 3, 1, 1, 2]), torch.rand(4, generator=g)
    check(lambda a, t: F.multi_margin_loss(a, t, reduction=reduction), x, y)
    check(lambda a, t, ww: F.multi_margin_loss(a, t, p=2, margin=0.7, weight=ww, reduction=reduction), x, y, w)
    check(lambda a, t: F.multi_margin_loss(a, t, reduction=reduction), x[0], y[:1].reshape(()))
    check(lambda a, t: F.multi_margin_loss(a, t, reduction=reduction), x[0, 0], torch.tensor(0))  # 0-d: one class


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_margin_loss(reduction):
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(2))
    y = torch.tensor([[3, 0, -1, 1, 2], [1, 1, 4, 2, 0], [-1, 2, 2, 2, 2]])  # -1 ends the list; repeats count
    check(lambda a, t: F.multilabel_margin_loss(a, t, reduction=reduction), x, y)
    check(lambda a, t: F.multilabel_margin_loss(a, t, reduction=reduction), x[0], y[0])
