"""Pools over gathered windows on the device (src/ops/window_pool_ops.cpp): max_pool3d, avg_pool3d,
adaptive_avg_pool3d, adaptive_max_pool1d/2d/3d and max_unpool1d/2d/3d against torch's CPU results,
values, indices and gradients, float32 (channels_last_3d, unbatched and empty inputs included)."""

import pytest
import torch
import torch.nn.functional as F

DEV = "mlu"


def gen(seed):
    return torch.Generator().manual_seed(seed)


def check(fn, x, rtol=1e-5, atol=1e-6):
    cx, dx = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    ref, out = fn(cx), fn(dx)
    refs, outs = (ref, out) if isinstance(ref, tuple) else ((ref,), (out,))
    for r, o in zip(refs, outs):
        assert o.shape == r.shape and o.dtype == r.dtype
        torch.testing.assert_close(o.detach().cpu(), r.detach(), rtol=rtol, atol=atol)
    up = torch.randn(refs[0].shape, generator=gen(9))
    refs[0].backward(up)
    outs[0].backward(up.to(DEV))
    torch.testing.assert_close(dx.grad.cpu(), cx.grad, rtol=rtol, atol=atol)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=(3, 2, 2), stride=(2, 1, 2), padding=(1, 0, 1)),
                                dict(kernel_size=2, stride=2, dilation=2, ceil_mode=True)])
def test_max_pool3d(kw):
    x = torch.randn(2, 2, 5, 6, 5, generator=gen(1))
    check(lambda a: F.max_pool3d(a, return_indices=True, **kw), x)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                dict(kernel_size=(2, 3, 2), padding=1, ceil_mode=True, divisor_override=5)])
def test_avg_pool3d(kw):
    x = torch.randn(1, 3, 5, 4, 6, generator=gen(2))
    check(lambda a: F.avg_pool3d(a, **kw), x)


def test_adaptive_pools():
    x3 = torch.randn(2, 2, 5, 7, 6, generator=gen(3))
    check(lambda a: F.adaptive_avg_pool3d(a, (3, 4, 2)), x3)
    check(lambda a: F.adaptive_max_pool3d(a, (2, 3, 4), return_indices=True), x3)
    x2 = torch.randn(2, 3, 7, 5, generator=gen(4))
    check(lambda a: F.adaptive_max_pool2d(a, (3, 4), return_indices=True), x2)
    check(lambda a: F.adaptive_max_pool2d(a, (7, 5), return_indices=True), x2)  # identity windows
    check(lambda a: F.adaptive_max_pool1d(a, 4, return_indices=True), torch.randn(2, 3, 9, generator=gen(5)))
    # unbatched, channels_last_3d
    check(lambda a: F.adaptive_max_pool2d(a, 2), x2[0])
    cl = x3.contiguous(memory_format=torch.channels_last_3d)
    torch.testing.assert_close(F.adaptive_avg_pool3d(cl.to(DEV), 2).cpu(), F.adaptive_avg_pool3d(cl, 2))


def test_max_unpool_roundtrip():
    x2 = torch.randn(2, 3, 6, 4, generator=gen(6))
    v, i = F.max_pool2d(x2, 2, return_indices=True)
    check(lambda a: F.max_unpool2d(a, i.to(a.device), 2), v)
    v1, i1 = F.max_pool1d(x2[:, :, :, 0], 2, return_indices=True)
    check(lambda a: F.max_unpool1d(a, i1.to(a.device), 2), v1)
    x3 = torch.randn(1, 2, 4, 4, 6, generator=gen(7))
    v3, i3 = F.max_pool3d(x3, 2, return_indices=True)
    check(lambda a: F.max_unpool3d(a, i3.to(a.device), 2), v3)


def test_empty_and_errors():
    e = F.max_pool3d(torch.randn(0, 2, 4, 4, 4).to(DEV), 2)
    assert e.shape == (0, 2, 2, 2, 2)
    with pytest.raises(RuntimeError, match="pad should be"):
        F.max_pool3d(torch.randn(1, 1, 4, 4, 4).to(DEV), 2, padding=2)
    with pytest.raises(NotImplementedError, match="adaptive_max_pool2d: dtype Long"):
        F.adaptive_max_pool2d(torch.ones(1, 2, 3, 3, dtype=torch.long).to(DEV), 2)
