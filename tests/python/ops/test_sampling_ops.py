"""Resampling on the device (src/ops/sampling_ops.cpp: F.grid_sample and bicubic interpolation;
fold_ops.cpp: F.unfold / F.fold and Tensor.unfold's backward; antialias_resize_ops.cpp: interpolate
with antialias=True) against torch's CPU results, forward and backward (input and grid
gradients), float32, with non-contiguous / channels_last inputs, empty batches and float16."""

import pytest
import torch
import torch.nn.functional as F

DEV = "mlu"


def gen(seed):
    return torch.Generator().manual_seed(seed)


def check_fwd_bwd(fn, *inputs, rtol=1e-4, atol=1e-5):
    """fn on CPU and device copies of inputs (all requiring grad), outputs and every gradient compared."""
    cpu = [t.clone().requires_grad_() for t in inputs]
    dev = [t.to(DEV).requires_grad_() for t in inputs]
    ref, out = fn(*cpu), fn(*dev)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    torch.testing.assert_close(out.detach().cpu(), ref.detach(), rtol=rtol, atol=atol)
    up = torch.randn(ref.shape, generator=gen(9))
    ref.backward(up)
    out.backward(up.to(DEV))
    for c, d in zip(cpu, dev):
        torch.testing.assert_close(d.grad.cpu(), c.grad, rtol=rtol, atol=atol)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_matches_cpu(mode, padding, align):
    x = torch.randn(2, 3, 5, 4, generator=gen(1))
    # Coordinates beyond [-1, 1] exercise the padding modes (reflection folds them back twice).
    grid = torch.rand(2, 3, 6, 2, generator=gen(2)) * 3.2 - 1.6
    check_fwd_bwd(lambda a, g: F.grid_sample(a, g, mode=mode, padding_mode=padding, align_corners=align), x, grid)


def test_grid_sample_layouts_and_edges():
    x = torch.randn(1, 2, 4, 6, generator=gen(3))
    grid = torch.rand(1, 5, 3, 2, generator=gen(4)) * 2.4 - 1.2
    # channels_last input, a transposed (non-contiguous) grid
    xd = x.to(DEV).contiguous(memory_format=torch.channels_last)
    gd = grid.transpose(1, 2).contiguous().transpose(1, 2).to(DEV)
    torch.testing.assert_close(F.grid_sample(xd, gd, align_corners=False).cpu(), F.grid_sample(x, grid, align_corners=False),
                               rtol=1e-4, atol=1e-5)
    # a single-pixel image with align_corners (reflection maps everything to 0), inf in the input
    one = torch.tensor([[[[2.5]]]])
    g1 = torch.tensor([[[[0.3, -0.7], [1.5, 2.0]]]])
    for pad in ("zeros", "border", "reflection"):
        ref = F.grid_sample(one, g1, padding_mode=pad, align_corners=True)
        torch.testing.assert_close(F.grid_sample(one.to(DEV), g1.to(DEV), padding_mode=pad, align_corners=True).cpu(), ref)
    xi = x.clone()
    xi[0, 0, 0, 0] = float("inf")  # far from the sampled points: must not leak NaN into them
    g2 = torch.full((1, 1, 1, 2), 0.9)
    torch.testing.assert_close(F.grid_sample(xi.to(DEV), g2.to(DEV), align_corners=True).cpu(),
                               F.grid_sample(xi, g2, align_corners=True))
    # empty batch, and float16 (computed in fp32, one rounding) against the fp32 CPU result
    e = F.grid_sample(torch.randn(0, 2, 3, 3).to(DEV), torch.zeros(0, 2, 2, 2).to(DEV), align_corners=False)
    assert e.shape == (0, 2, 2, 2)
    h = F.grid_sample(x.half().to(DEV), grid.half().to(DEV), mode="bicubic", align_corners=False).cpu()
    assert h.dtype == torch.float16
    torch.testing.assert_close(h.float(), F.grid_sample(x.half().float(), grid.half().float(), mode="bicubic",
                                                        align_corners=False), rtol=2e-3, atol=2e-3)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.grid_sample(x.to(DEV), grid.half().to(DEV), align_corners=False)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("kw", [{"size": (7, 3)}, {"scale_factor": 1.5}, {"scale_factor": 0.6}])
def test_bicubic_matches_cpu(align, kw):
    x = torch.randn(2, 2, 4, 5, generator=gen(5))
    check_fwd_bwd(lambda a: F.interpolate(a, mode="bicubic", align_corners=align, **kw), x)


def test_bicubic_channels_last_and_half():
    x = torch.randn(1, 3, 5, 4, generator=gen(6))
    out = F.interpolate(x.to(DEV).contiguous(memory_format=torch.channels_last), size=(6, 9), mode="bicubic",
                        align_corners=False)
    torch.testing.assert_close(out.cpu(), F.interpolate(x, size=(6, 9), mode="bicubic", align_corners=False),
                               rtol=1e-4, atol=1e-5)
    h = F.interpolate(x.half().to(DEV), scale_factor=2, mode="bicubic", align_corners=True).cpu()
    torch.testing.assert_close(h, F.interpolate(x.half().float(), scale_factor=2, mode="bicubic", align_corners=True).half(),
                               rtol=1e-3, atol=2e-3)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("kw", [{"size": (3, 7)}, {"scale_factor": 0.4}, {"scale_factor": 1.7}])
def test_antialiased_resize_matches_cpu(mode, align, kw):
    # antialias=True: the separable filter as two GEMMs (antialias_resize_ops.cpp), down- and upsampling
    x = torch.randn(2, 3, 9, 8, generator=gen(11))
    check_fwd_bwd(lambda a: F.interpolate(a, mode=mode, antialias=True, align_corners=align, **kw), x)


def test_unfold_backward_is_overlap_add():
    # Tensor.unfold's backward (istft's overlap-add): overlapping windows accumulate
    x = torch.randn(3, 11, generator=gen(12))
    check_fwd_bwd(lambda a: a.unfold(1, 4, 2), x)
    check_fwd_bwd(lambda a: a.unfold(0, 2, 1), x)


@pytest.mark.parametrize("args", [dict(kernel_size=2), dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
                                  dict(kernel_size=3, padding=1, stride=2)])
def test_unfold_and_fold_match_cpu(args):
    x = torch.randn(2, 3, 5, 6, generator=gen(7))
    check_fwd_bwd(lambda a: F.unfold(a, **args), x)
    cols = F.unfold(x, **args)
    check_fwd_bwd(lambda c: F.fold(c, output_size=(5, 6), **args), cols)
    # unbatched input, non-contiguous (transposed) image
    xt = torch.randn(3, 6, 5, generator=gen(8)).transpose(1, 2)
    torch.testing.assert_close(F.unfold(xt.to(DEV), **args).cpu(), F.unfold(xt, **args))
