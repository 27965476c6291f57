"""Upsampling on the device (src/ops/composite_ops.cpp: index_select per spatial dim with torch's
source coordinates from a program) against torch's CPU results: F.interpolate nearest,
nearest-exact, linear, bilinear, trilinear with sizes and scale factors, align_corners both ways,
float32 forward and backward and float16 forward."""

import pytest
import torch
import torch.nn.functional as F

DEV = "mlu"


def run(x, rtol=1e-5, atol=1e-5, **kw):
    cx, dx = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    ref, out = F.interpolate(cx, **kw), F.interpolate(dx, **kw)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    torch.testing.assert_close(out.detach().cpu(), ref.detach(), rtol=rtol, atol=atol)
    up = torch.randn(ref.shape, generator=torch.Generator().manual_seed(3))
    ref.backward(up)
    out.backward(up.to(DEV))
    torch.testing.assert_close(dx.grad.cpu(), cx.grad, rtol=rtol, atol=atol)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("shape,kw", [((2, 3, 5), {"size": 9}), ((1, 2, 4, 5), {"size": (7, 3)}),
                                      ((1, 2, 3, 4, 5), {"scale_factor": 1.7}), ((2, 1, 6, 6), {"scale_factor": 0.5})])
def test_nearest(dev, mode, shape, kw):
    run(torch.randn(*shape, generator=torch.Generator().manual_seed(1)), mode=mode, **kw)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("mode,shape,kw", [("linear", (2, 3, 5), {"size": 12}), ("bilinear", (1, 2, 4, 5), {"size": (7, 3)}),
                                           ("bilinear", (2, 3, 6, 6), {"scale_factor": 2.5}),
                                           ("trilinear", (1, 2, 3, 4, 5), {"size": (5, 2, 8)})])
def test_linear_family(dev, align, mode, shape, kw):
    run(torch.randn(*shape, generator=torch.Generator().manual_seed(2)), mode=mode, align_corners=align, **kw)


def test_float16_forward(dev):
    x = torch.randn(1, 2, 4, 4, generator=torch.Generator().manual_seed(4)).half()
    for kw in ({"mode": "nearest"}, {"mode": "bilinear", "align_corners": False}):
        ref = F.interpolate(x.float(), scale_factor=2, **kw).half()
        out = F.interpolate(x.to(DEV), scale_factor=2, **kw).cpu()
        assert out.dtype == torch.float16
        torch.testing.assert_close(out, ref, rtol=1e-3, atol=1e-3)
