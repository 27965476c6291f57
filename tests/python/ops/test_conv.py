"""Convolutions on the device (torch_bridge/src/ops/conv_ops.cpp over libmlu conv.h):
convolution_overrideable and convolution_backward_overrideable, reached through
nn.functional.conv1d / conv2d / conv_transpose2d and nn.Conv2d, forward and backward, compared
with torch's CPU results."""

import math

import pytest
import torch
import torch.nn.functional as F

import torch_mlu


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(tuple(shape), generator=g).to(dtype)


def check(actual, expected, depth):
    """fp32: another summation order than the CPU; fp16: fp32 accumulation, one rounding."""
    assert actual.device.type == "mlu"
    actual = actual.cpu()
    assert actual.shape == expected.shape
    if actual.dtype == torch.float16:
        tol = dict(atol=1e-2 * math.sqrt(depth), rtol=1e-2)
    else:
        tol = dict(atol=1e-4 * math.sqrt(depth), rtol=1e-4)
    torch.testing.assert_close(actual.float(), expected.float(), **tol)


def run_both(fn, x, w, b, grad_seed=99, mask=(True, True, True), **kw):
    """fn on the device and on the CPU (fp16 inputs are convolved in fp32 on the CPU, which has no
    fp16 convolution), forward and backward with the same output gradient. Returns pairs
    (device, cpu) for y, dx, dw, db (None where not requested)."""
    dtype = x.dtype
    dev = torch.device("mlu", 0)

    def leaf(t, want, device, cast):
        if t is None:
            return None
        t = t.float() if cast else t
        t = t.to(device) if device is not None else t.clone()
        return t.requires_grad_(want)

    xd, wd, bd = leaf(x, mask[0], dev, False), leaf(w, mask[1], dev, False), leaf(b, mask[2], dev, False)
    cast = dtype == torch.float16
    xc, wc, bc = leaf(x, mask[0], None, cast), leaf(w, mask[1], None, cast), leaf(b, mask[2], None, cast)
    yd, yc = fn(xd, wd, bd, **kw), fn(xc, wc, bc, **kw)
    g = rand(*yc.shape, seed=grad_seed).to(dtype)
    yd.backward(g.to(dev))
    yc.backward(g.float() if cast else g)
    pairs = [(yd.detach(), yc.detach().to(dtype))]
    for d, c in [(xd, xc), (wd, wc), (bd, bc)]:
        pairs.append(None if d is None or not d.requires_grad else (d.grad, c.grad.to(dtype)))
    return pairs


def check_all(pairs, depths):
    for p, depth in zip(pairs, depths):
        if p is not None:
            check(p[0], p[1], depth)


# (N, C, H, W), OC, (KH, KW), stride, padding, dilation, groups
CASES = [
    ((2, 3, 9, 7), 4, (3, 3), 1, 0, 1, 1),
    ((1, 5, 11, 13), 6, (3, 5), (2, 1), (1, 2), 1, 1),
    ((2, 4, 10, 9), 6, (3, 2), (1, 2), (2, 0), (2, 1), 2),       # grouped, dilated
    ((2, 6, 8, 8), 6, (3, 3), 1, 1, 1, 6),                       # depthwise
    ((1, 4, 9, 9), 8, (3, 3), 2, 1, 1, 4),                       # depthwise multiplier 2
    ((3, 7, 5, 6), 5, (1, 1), 1, 0, 1, 1),                       # 1x1
    ((1, 3, 17, 15), 2, (5, 5), 3, 2, 2, 1),                     # stride > 1 with dilation
    ((2, 16, 12, 12), 32, (3, 3), 1, 1, 1, 1),
]


def conv_depths(case):
    (n, c, h, w), oc, (kh, kw), stride, padding, dilation, groups = case
    cg = c // groups
    return [cg * kh * kw, oc // groups * kh * kw, n * h * w, n * h * w]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_conv2d_forward_backward(dev, case, bias, dtype):
    shape, oc, k, stride, padding, dilation, groups = case
    x = rand(*shape, dtype=dtype, seed=1)
    w = rand(oc, shape[1] // groups, *k, dtype=dtype, seed=2) * 0.5
    b = rand(oc, dtype=dtype, seed=3) if bias else None
    pairs = run_both(F.conv2d, x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    check_all(pairs, conv_depths(case))


@pytest.mark.parametrize("weight_cl", [False, True])
def test_conv2d_channels_last(dev, weight_cl):
    x = rand(2, 5, 9, 8, seed=4).to(memory_format=torch.channels_last)
    w = rand(6, 5, 3, 3, seed=5)
    if weight_cl:
        w = w.to(memory_format=torch.channels_last)
    b = rand(6, seed=6)
    pairs = run_both(F.conv2d, x, w, b, stride=(1, 2), padding=1)
    y_dev, y_cpu = pairs[0]
    assert y_dev.is_contiguous(memory_format=torch.channels_last)
    assert y_cpu.is_contiguous(memory_format=torch.channels_last)
    check_all(pairs, [45, 54, 144, 144])
    # channels_last input with contiguous weights and vice versa: the gradients keep the leaves' layouts
    dx, dw = pairs[1][0], pairs[2][0]
    assert dx.is_contiguous(memory_format=torch.channels_last)
    assert dw.is_contiguous(memory_format=torch.channels_last) == weight_cl


def test_conv2d_channels_last_groups_fp16(dev):
    x = rand(2, 8, 7, 7, dtype=torch.float16, seed=7).to(memory_format=torch.channels_last)
    w = rand(8, 2, 3, 3, dtype=torch.float16, seed=8).to(memory_format=torch.channels_last)
    check_all(run_both(F.conv2d, x, w, rand(8, dtype=torch.float16), padding=1, groups=4), [18, 18, 98, 98])


def test_conv2d_non_contiguous_input(dev):
    base = rand(2, 6, 12, 11, seed=9)
    w, b = rand(4, 3, 3, 3, seed=10), rand(4, seed=11)
    xd = base.to(dev)[:, 1:4, 1:10, 2:9]  # channel, row and column slices
    assert not xd.is_contiguous()
    expected = F.conv2d(base[:, 1:4, 1:10, 2:9], w, b, padding=1)
    check(F.conv2d(xd, w.to(dev), b.to(dev), padding=1), expected, 27)


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, False), (False, True, True)], ids=str)
def test_conv2d_partial_gradients(dev, mask):
    x, w, b = rand(2, 3, 8, 8, seed=12), rand(5, 3, 3, 3, seed=13), rand(5, seed=14)
    pairs = run_both(F.conv2d, x, w, b, mask=mask, padding=1, stride=2)
    for want, p in zip(mask, pairs[1:]):
        assert (p is not None) == want
    check_all(pairs, [27, 45, 128, 128])


def test_nn_conv2d_module(dev):
    torch.manual_seed(0)
    m = torch.nn.Conv2d(3, 8, kernel_size=3, stride=2, padding=1, groups=1)
    md = torch.nn.Conv2d(3, 8, kernel_size=3, stride=2, padding=1)
    md.load_state_dict(m.state_dict())
    md = md.to(dev)
    x = rand(2, 3, 13, 11, seed=15)
    xd = x.to(dev).requires_grad_()
    xc = x.clone().requires_grad_()
    yd, yc = md(xd), m(xc)
    g = rand(*yc.shape, seed=16)
    yd.backward(g.to(dev))
    yc.backward(g)
    check(yd.detach(), yc.detach(), 27)
    check(xd.grad, xc.grad, 72)
    check(md.weight.grad, m.weight.grad, 2 * 42)
    check(md.bias.grad, m.bias.grad, 2 * 42)


def test_conv1d(dev):
    x, w, b = rand(2, 4, 19, seed=17), rand(6, 2, 3, seed=18), rand(6, seed=19)
    pairs = run_both(F.conv1d, x, w, b, stride=2, padding=1, dilation=2, groups=2)
    check_all(pairs, [6, 9, 38, 38])
    # a non-contiguous 1-d input: torch makes it contiguous (a device copy) before viewing it as 2-d
    xt = rand(2, 19, 4, seed=20)
    check(F.conv1d(xt.to(dev).transpose(1, 2), w.to(dev), b.to(dev), groups=2),
          F.conv1d(xt.transpose(1, 2), w, b, groups=2), 6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1, groups=2),
                                dict(stride=(2, 3), padding=(0, 1), dilation=(1, 2), output_padding=(1, 2)),
                                # output_padding >= stride (allowed below the dilation): the transposed
                                # input is zero-extended for the device's backward-data convolution
                                dict(stride=(3, 2), padding=(1, 2), dilation=(4, 4), output_padding=(2, 3), groups=2)],
                         ids=str)
def test_conv_transpose2d(dev, dtype, kw):
    groups = kw.get("groups", 1)
    x = rand(2, 4, 5, 6, dtype=dtype, seed=20)
    w = rand(4, 3, 3, 3, dtype=dtype, seed=21)
    b = rand(3 * groups, dtype=dtype, seed=22)
    check_all(run_both(F.conv_transpose2d, x, w, b, **kw), [36, 27, 240, 240])


def test_conv_runs_on_device(dev):
    x, w, b = rand(1, 3, 8, 8).to(dev).requires_grad_(), rand(4, 3, 3, 3).to(dev).requires_grad_(), rand(4).to(dev)
    torch_mlu.synchronize()
    torch_mlu.reset_stats()
    y = F.conv2d(x, w, b.requires_grad_(), padding=1)
    y.backward(rand(1, 4, 8, 8).to(dev))
    torch_mlu.synchronize()
    ops = {o["name"]: o for o in torch_mlu.cycle_report(format="json")["ops"]}
    for name in ("aten::convolution_overrideable", "aten::convolution_backward_overrideable"):
        assert name in ops and ops[name]["kernels"] > 0 and ops[name]["macs"] > 0, sorted(ops)


def test_conv_errors_name_the_op_and_leave_the_device_usable(dev):
    x, w = rand(1, 3, 6, 6).to(dev), rand(4, 3, 3, 3).to(dev)
    with pytest.raises(RuntimeError, match=r"aten::convolution_overrideable.*Input type \(Float\) and weight type "
                                           r"\(Half\)"):
        F.conv2d(x, rand(4, 3, 3, 3).half().to(dev))
    with pytest.raises(RuntimeError, match=r"bias type"):  # torch checks the bias before the backend
        F.conv2d(x, w, rand(4).half().to(dev))
    with pytest.raises(NotImplementedError, match=r"aten::convolution_overrideable.*Double.*mlu"):
        F.conv2d(rand(1, 3, 6, 6).double().to(dev), rand(4, 3, 3, 3).double().to(dev))
    with pytest.raises(NotImplementedError, match=r"aten::convolution_overrideable.*1-d and 2-d"):
        F.conv3d(rand(1, 2, 4, 4, 4).to(dev), rand(3, 2, 2, 2, 2).to(dev))
    with pytest.raises(RuntimeError):  # torch's own shape check, before the device
        F.conv2d(x, rand(4, 2, 3, 3).to(dev))
    # still usable
    check(F.conv2d(x, w, padding=1), F.conv2d(x.cpu(), w.cpu(), padding=1), 27)
