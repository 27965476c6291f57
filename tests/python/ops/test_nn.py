"""NN kernels on the device (torch_bridge/src/ops/nn_ops.cpp over libmlu softmax.h, loss.h, pool.h,
norm.h, random.h) against torch's CPU results: _softmax / _log_softmax (+ backward), nll_loss(2d)
forward/backward through F.cross_entropy / F.nll_loss, max_pool2d_with_indices, avg_pool2d,
_adaptive_avg_pool2d (+ backward), native_batch_norm, native_layer_norm (+ backward),
native_dropout (+ backward), bernoulli_(p) and F.dropout; functional and out= variants, odd sizes,
non-contiguous and channels-last inputs, empty tensors, fp16 (tolerances below, against the fp32
CPU result), modules forward+backward, dropout statistics and seeding, errors.

The CPU fallback is off (conftest): an op without a device kernel raises NotImplementedError.
Paths that need kernels of other families (elementwise mul/div/add_ for F.dropout and for
BatchNorm's num_batches_tracked) skip while those kernels are missing."""

import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_mlu

A = torch.ops.aten
F16 = dict(atol=3e-3, rtol=3e-3)
F16_LOOSE = dict(atol=2e-2, rtol=2e-2)
F32 = dict(atol=1e-5, rtol=1e-5)
OURS = ("softmax", "nll_loss", "pool2d", "batch_norm", "layer_norm", "dropout", "bernoulli")


def randn(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


def close(got, want, **kw):
    assert got.device.type == "mlu"
    torch.testing.assert_close(got.cpu(), want, equal_nan=True, **kw)


def close_f(got, want, **kw):
    """got (any float dtype, on the device) against the fp32 CPU result."""
    assert got.device.type == "mlu"
    torch.testing.assert_close(got.cpu().float(), want, equal_nan=True, **kw)


def ran_on_device(name):
    torch_mlu.synchronize()
    ops = {o["name"]: o for o in torch_mlu.cycle_report(format="json")["ops"]}
    return name in ops and ops[name]["kernels"] > 0


def transposed(x, dev):
    """x's values on the device in a non-contiguous layout (last two dims swapped in memory)."""
    return x.transpose(-1, -2).contiguous().to(dev).transpose(-1, -2)


def sliced(x, dev, dim=1):
    """x's values on the device as every other element of a twice-as-large tensor along dim."""
    shape = list(x.shape)
    shape[dim] *= 2
    big = torch.zeros(shape, dtype=x.dtype)
    idx = [slice(None)] * x.dim()
    idx[dim] = slice(None, None, 2)
    big[tuple(idx)] = x
    return big.to(dev)[tuple(idx)]


def other_family_missing(fn):
    """Runs fn; skips the test when a kernel of another op family is still missing."""
    try:
        return fn()
    except NotImplementedError as e:
        m = re.search(r"op (aten::\S+) has no kernel", str(e))
        if m and not any(k in m.group(1) for k in OURS):
            pytest.skip(f"needs {m.group(1)} on the device (another op family)")
        raise


def check_usable(dev):
    x = randn(3, 4)
    close(torch.softmax(x.to(dev), 1), torch.softmax(x, 1))


# ---- registration ---------------------------------------------------------------------------------

REGISTERED = [
    "_softmax", "_softmax.out", "_log_softmax", "_log_softmax.out", "_softmax_backward_data",
    "_softmax_backward_data.out", "_log_softmax_backward_data", "_log_softmax_backward_data.out",
    "nll_loss_forward", "nll_loss_forward.output", "nll_loss_backward", "nll_loss_backward.grad_input",
    "nll_loss2d_forward", "nll_loss2d_forward.output", "nll_loss2d_backward", "nll_loss2d_backward.grad_input",
    "max_pool2d_with_indices", "max_pool2d_with_indices.out", "max_pool2d_with_indices_backward",
    "max_pool2d_with_indices_backward.grad_input", "avg_pool2d", "avg_pool2d.out", "avg_pool2d_backward",
    "avg_pool2d_backward.grad_input", "_adaptive_avg_pool2d", "_adaptive_avg_pool2d.out",
    "adaptive_avg_pool2d.out", "_adaptive_avg_pool2d_backward", "_adaptive_avg_pool2d_backward.out",
    "native_batch_norm", "native_batch_norm.out", "native_batch_norm_backward", "native_batch_norm_backward.out",
    "native_layer_norm", "native_layer_norm.out", "native_layer_norm_backward", "native_layer_norm_backward.out",
    "native_dropout", "native_dropout.out", "native_dropout_backward", "native_dropout_backward.out",
    "bernoulli_.float", "bernoulli.float_out",
]


def test_kernels_registered_for_privateuse1():
    missing = [op for op in REGISTERED if "PrivateUse1" not in torch._C._dispatch_dump("aten::" + op)]
    assert missing == []


# ---- softmax -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [torch.softmax, torch.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax_forward_backward(dev, fn):
    torch_mlu.reset_stats()
    for shape, dim in [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 9), -1), ((4, 3, 5), 1), ((), 0)]:
        x = randn(*shape, seed=len(shape) + dim)
        g = randn(*shape, seed=7)
        xc = x.clone().requires_grad_()
        yc = fn(xc, dim)
        yc.backward(g)
        xd = x.to(dev).requires_grad_()
        yd = fn(xd, dim)
        yd.backward(g.to(dev))
        close(yd.detach(), yc.detach(), **F32)
        close(xd.grad, xc.grad, **F32)
    name = "aten::_softmax" if fn is torch.softmax else "aten::_log_softmax"
    assert ran_on_device(name) and ran_on_device(name + "_backward_data")


@pytest.mark.parametrize("fn", [torch.softmax, torch.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax_non_contiguous_and_empty(dev, fn):
    x = randn(6, 5)
    for xd in (transposed(x, dev), sliced(x, dev, 1)):
        assert not xd.is_contiguous()
        for dim in (0, 1):
            close(fn(xd, dim), fn(x, dim), **F32)
    e = torch.empty(0, 5)
    close(fn(e.to(dev), 1), fn(e, 1))


def test_softmax_out_variants(dev):
    x = randn(4, 7)
    for op, ref in [(A._softmax, torch.softmax), (A._log_softmax, torch.log_softmax)]:
        out = torch.empty(1, device=dev)  # resized
        r = op.out(x.to(dev), 1, False, out=out)
        assert r is out
        close(out, ref(x, 1), **F32)
    y = torch.softmax(x, 1)
    g = randn(4, 7, seed=3)
    for op, yy, arg in [(A._softmax_backward_data, y, "grad_input"), (A._log_softmax_backward_data, y.log(), "out")]:
        want = op(g, yy, 1, torch.float32)
        got = op(g.to(dev), yy.to(dev), 1, torch.float32)
        close(got, want, **F32)
        out = torch.empty(4, 7, device=dev)
        op.out(g.to(dev), yy.to(dev), 1, torch.float32, **{arg: out})
        close(out, want, **F32)


def test_softmax_fp16_and_half_to_float(dev):
    x = randn(5, 33, dtype=torch.float16)
    for fn in (torch.softmax, torch.log_softmax):
        got = fn(x.to(dev), 1)
        assert got.dtype == torch.float16
        close(got, fn(x.float(), 1).half(), **F16)
    for op, ref in [(A._softmax, torch.softmax), (A._log_softmax, torch.log_softmax)]:
        got = op(x.to(dev), 1, True)  # half_to_float (CUDA semantics; the CPU refuses it)
        assert got.dtype == torch.float32
        close(got, ref(x.float(), 1), **F32)
    # backward of a half_to_float softmax: float grad/output, half grad_input
    y = torch.softmax(x.float(), 1)
    g = randn(5, 33, seed=2)
    got = A._softmax_backward_data(g.to(dev), y.to(dev), 1, torch.float16)
    assert got.dtype == torch.float16
    close(got, A._softmax_backward_data(g, y, 1, torch.float32).half(), **F16)


def test_softmax_errors(dev):
    with pytest.raises(NotImplementedError, match="aten::_softmax"):
        A._softmax(torch.ones(3, dtype=torch.int32).to(dev), 0, False)
    with pytest.raises(IndexError, match="aten::_log_softmax.*out of range"):
        torch.log_softmax(randn(2, 3).to(dev), 2)
    with pytest.raises(RuntimeError, match="aten::_softmax.*Half"):
        A._softmax(randn(2, 3).to(dev), 1, True)
    with pytest.raises(RuntimeError, match="aten::_softmax.out.*dtype"):
        A._softmax.out(randn(2, 3).to(dev), 1, False, out=torch.empty(2, 3, dtype=torch.float16, device=dev))
    check_usable(dev)


# ---- nll loss / cross entropy -------------------------------------------------------------------

def ce_case(dev, shape, classes, reduction, weight, ignore_index, seed=0, target_dtype=torch.int64):
    x = randn(*shape, seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    tshape = (shape[0],) + tuple(shape[2:]) if len(shape) > 1 else ()
    t = torch.randint(0, classes, tshape, generator=g)
    if ignore_index is not None and t.numel() > 1:
        t.view(-1)[::3] = ignore_index
    w = randn(classes, seed=seed + 2).abs() + 0.1 if weight else None
    kw = dict(reduction=reduction)
    if ignore_index is not None:
        kw["ignore_index"] = ignore_index
    xc = x.clone().requires_grad_()
    lc = F.cross_entropy(xc, t, weight=w, **kw)
    go = randn(*lc.shape, seed=seed + 3)
    lc.backward(go)
    xd = x.to(dev).requires_grad_()
    ld = F.cross_entropy(xd, t.to(target_dtype).to(dev), weight=None if w is None else w.to(dev), **kw)
    ld.backward(go.to(dev))
    close(ld.detach(), lc.detach(), atol=1e-5, rtol=1e-5)
    close(xd.grad, xc.grad, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_2d(dev, reduction):
    torch_mlu.reset_stats()
    ce_case(dev, (6, 5), 5, reduction, weight=False, ignore_index=None)
    ce_case(dev, (7, 4), 4, reduction, weight=True, ignore_index=None, seed=1)
    ce_case(dev, (9, 5), 5, reduction, weight=True, ignore_index=2, seed=2)
    ce_case(dev, (9, 5), 5, reduction, weight=False, ignore_index=-100, seed=3)
    ce_case(dev, (5,), 5, reduction, weight=True, ignore_index=None, seed=4)  # unbatched
    assert ran_on_device("aten::nll_loss_forward") and ran_on_device("aten::nll_loss_backward")


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_spatial(dev, reduction):
    torch_mlu.reset_stats()
    ce_case(dev, (2, 4, 3, 5), 4, reduction, weight=False, ignore_index=None)
    ce_case(dev, (2, 3, 5, 3), 3, reduction, weight=True, ignore_index=1, seed=1, target_dtype=torch.int32)
    assert ran_on_device("aten::nll_loss2d_forward") and ran_on_device("aten::nll_loss2d_backward")


def test_cross_entropy_3d_input(dev):
    other_family_missing(lambda: ce_case(dev, (3, 4, 7), 4, "mean", weight=True, ignore_index=0))


def test_nll_loss_direct_and_out_variants(dev):
    lp = torch.log_softmax(randn(6, 5), 1)
    t = torch.tensor([0, 4, 2, 2, 1, 3])
    w = torch.rand(5) + 0.5
    for red in (0, 1, 2):
        want = A.nll_loss_forward(lp, t, w, red, 2)
        got = A.nll_loss_forward(lp.to(dev), t.to(dev), w.to(dev), red, 2)
        close(got[0], want[0], **F32)
        close(got[1], want[1], **F32)
        out, tw = torch.empty(0, device=dev), torch.empty(0, device=dev)
        A.nll_loss_forward.output(lp.to(dev), t.to(dev), w.to(dev), red, 2, output=out, total_weight=tw)
        close(out, want[0], **F32)
        go = torch.ones_like(want[0]) * 0.5
        gwant = A.nll_loss_backward(go, lp, t, w, red, 2, want[1])
        close(A.nll_loss_backward(go.to(dev), lp.to(dev), t.to(dev), w.to(dev), red, 2, want[1].to(dev)), gwant)
        gi = torch.empty(0, device=dev)
        A.nll_loss_backward.grad_input(go.to(dev), lp.to(dev), t.to(dev), w.to(dev), red, 2, want[1].to(dev),
                                       grad_input=gi)
        close(gi, gwant)
    # 2d
    lp4 = torch.log_softmax(randn(2, 3, 4, 5), 1)
    t3 = torch.randint(0, 3, (2, 4, 5), generator=torch.Generator().manual_seed(0))
    for red in (0, 1, 2):
        want = A.nll_loss2d_forward(lp4, t3, None, red, -100)
        out, tw = torch.empty(0, device=dev), torch.empty(0, device=dev)
        A.nll_loss2d_forward.output(lp4.to(dev), t3.to(dev), None, red, -100, output=out, total_weight=tw)
        close(out, want[0], **F32)
        close(tw, want[1], **F32)
        go = torch.full_like(want[0], 0.25)
        gwant = A.nll_loss2d_backward(go, lp4, t3, None, red, -100, want[1])
        gi = torch.empty(0, device=dev)
        A.nll_loss2d_backward.grad_input(go.to(dev), lp4.to(dev), t3.to(dev), None, red, -100, want[1].to(dev),
                                         grad_input=gi)
        close(gi, gwant, **F32)
        close(A.nll_loss2d_backward(go.to(dev), lp4.to(dev), t3.to(dev), None, red, -100, want[1].to(dev)), gwant)


def test_nll_loss_all_ignored_and_noncontiguous(dev):
    lp = torch.log_softmax(randn(4, 3), 1)
    t = torch.full((4,), 1)
    close(F.nll_loss(lp.to(dev), t.to(dev), ignore_index=1), F.nll_loss(lp, t, ignore_index=1))  # NaN
    lpt = transposed(torch.log_softmax(randn(5, 6), 1), dev)
    t = torch.tensor([0, 5, 3, 1, 2])
    close(F.nll_loss(lpt, t.to(dev), reduction="none"), F.nll_loss(lpt.cpu(), t, reduction="none"), **F32)


def test_nll_loss_fp16(dev):
    x = randn(8, 6, dtype=torch.float16)
    t = torch.randint(0, 6, (8,), generator=torch.Generator().manual_seed(1))
    for red in ("none", "mean", "sum"):
        got = F.cross_entropy(x.to(dev), t.to(dev), reduction=red)
        assert got.dtype == torch.float16
        close(got, F.cross_entropy(x.float(), t, reduction=red).half(), **F16_LOOSE)


def test_nll_loss_errors(dev):
    lp = randn(4, 3).to(dev)
    with pytest.raises(RuntimeError, match="aten::nll_loss_forward.*size mismatch"):
        A.nll_loss_forward(lp, torch.tensor([0, 1, 2]).to(dev), None, 1, -100)
    with pytest.raises(RuntimeError, match="aten::nll_loss_forward.*weight"):
        F.nll_loss(lp, torch.tensor([0, 1, 2, 0]).to(dev), weight=torch.ones(4).to(dev))
    with pytest.raises(RuntimeError, match="aten::nll_loss2d_forward.*spatial sizes"):
        F.nll_loss(randn(2, 3, 4, 4).to(dev), torch.zeros(2, 4, 5, dtype=torch.long).to(dev))
    with pytest.raises(NotImplementedError, match="aten::nll_loss_forward.*Double"):
        A.nll_loss_forward(randn(4, 3).double().to(dev), torch.tensor([0, 1, 2, 0]).to(dev), None, 1, -100)
    # a target out of range faults the kernel; reported at the next sync (torch's device-side assert)
    with pytest.raises(RuntimeError, match="out of bounds"):
        F.nll_loss(lp, torch.tensor([0, 1, 5, 0]).to(dev)).cpu()
    check_usable(dev)


def test_nll_loss_empty_batch(dev):
    lp, t = torch.empty(0, 5), torch.empty(0, dtype=torch.long)
    for red in (0, 1, 2):
        want = A.nll_loss_forward(lp, t, None, red, -100)
        got = A.nll_loss_forward(lp.to(dev), t.to(dev), None, red, -100)
        close(got[0], want[0])  # mean: NaN, as on the CPU
        close(got[1], want[1])
        gi = A.nll_loss_backward(torch.ones_like(want[0]).to(dev), lp.to(dev), t.to(dev), None, red, -100, got[1])
        assert gi.shape == (0, 5)


# ---- pooling -------------------------------------------------------------------------------------

MAX_CASES = [
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 0), dilation=(2, 1), ceil_mode=True),
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, ceil_mode=True),
]


@pytest.mark.parametrize("case", range(len(MAX_CASES)))
def test_max_pool2d(dev, case):
    torch_mlu.reset_stats()
    kw = MAX_CASES[case]
    for x in (randn(2, 3, 9, 11, seed=case), randn(3, 8, 7, seed=case)):
        g_shape = F.max_pool2d(x, **kw).shape
        g = randn(*g_shape, seed=5)
        xc = x.clone().requires_grad_()
        yc, ic = F.max_pool2d(xc, return_indices=True, **kw)
        yc.backward(g)
        xd = x.to(dev).requires_grad_()
        yd, idx = F.max_pool2d(xd, return_indices=True, **kw)
        yd.backward(g.to(dev))
        close(yd.detach(), yc.detach())
        close(idx, ic)
        close(xd.grad, xc.grad, **F32)
    assert ran_on_device("aten::max_pool2d_with_indices")
    assert ran_on_device("aten::max_pool2d_with_indices_backward")


AVG_CASES = [
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False, ceil_mode=True),
    dict(kernel_size=(2, 4), stride=(2, 1), padding=(1, 2), divisor_override=5),
    dict(kernel_size=2),
]


@pytest.mark.parametrize("case", range(len(AVG_CASES)))
def test_avg_pool2d(dev, case):
    torch_mlu.reset_stats()
    kw = AVG_CASES[case]
    for x in (randn(2, 3, 9, 11, seed=case), randn(3, 8, 7, seed=case)):
        g = randn(*F.avg_pool2d(x, **kw).shape, seed=5)
        xc = x.clone().requires_grad_()
        yc = F.avg_pool2d(xc, **kw)
        yc.backward(g)
        xd = x.to(dev).requires_grad_()
        yd = F.avg_pool2d(xd, **kw)
        yd.backward(g.to(dev))
        close(yd.detach(), yc.detach(), **F32)
        close(xd.grad, xc.grad, **F32)
    assert ran_on_device("aten::avg_pool2d") and ran_on_device("aten::avg_pool2d_backward")


@pytest.mark.parametrize("out_size", [(4, 5), (3, 3), (9, 11), (1, 2)])
def test_adaptive_avg_pool2d(dev, out_size):
    torch_mlu.reset_stats()
    x = randn(2, 3, 9, 11)
    g = randn(2, 3, *out_size, seed=1)
    xc = x.clone().requires_grad_()
    yc = F.adaptive_avg_pool2d(xc, out_size)
    yc.backward(g)
    for xd0 in (x.to(dev), transposed(x, dev), sliced(x, dev, 1)):
        xd = xd0.detach().requires_grad_()
        yd = F.adaptive_avg_pool2d(xd, out_size)
        # autograd.grad: no AccumulateGrad, which would re-layout the grad like the strided leaf
        (gx,) = torch.autograd.grad(yd, xd, g.to(dev))
        close(yd.detach(), yc.detach(), **F32)
        close(gx, xc.grad, **F32)
    assert ran_on_device("aten::_adaptive_avg_pool2d") and ran_on_device("aten::_adaptive_avg_pool2d_backward")
    # unbatched
    x3 = randn(3, 7, 6)
    close(F.adaptive_avg_pool2d(x3.to(dev), out_size), F.adaptive_avg_pool2d(x3, out_size), **F32)


def test_adaptive_avg_pool2d_1x1_lowers_to_mean(dev):
    # torch 1.13: adaptive_avg_pool2d with output (1, 1) is x.mean((-1, -2), keepdim=True)
    x = randn(2, 5, 7, 6)
    m = nn.AdaptiveAvgPool2d((1, 1))
    xc = x.clone().requires_grad_()
    m(xc).sum().backward()
    assert type(m(xc).grad_fn).__name__ == "MeanBackward1"
    xd = x.to(dev).requires_grad_()
    yd = other_family_missing(lambda: m(xd))
    close(yd.detach(), m(x), **F32)
    other_family_missing(lambda: yd.backward(torch.ones(2, 5, 1, 1).to(dev)))
    close(xd.grad, xc.grad, **F32)


def test_pool_channels_last_and_empty_batch(dev):
    x = randn(2, 4, 7, 9)
    xd = x.permute(0, 2, 3, 1).contiguous().to(dev).permute(0, 3, 1, 2)  # channels-last strides
    assert xd.is_contiguous(memory_format=torch.channels_last)
    y = F.max_pool2d(xd, 3, 2, 1)
    assert y.is_contiguous(memory_format=torch.channels_last)
    close(y, F.max_pool2d(x, 3, 2, 1))
    close(F.avg_pool2d(xd, 2), F.avg_pool2d(x, 2), **F32)
    close(F.adaptive_avg_pool2d(xd, (3, 4)), F.adaptive_avg_pool2d(x, (3, 4)), **F32)
    e = torch.empty(0, 3, 6, 6)
    assert F.max_pool2d(e.to(dev), 2).shape == (0, 3, 3, 3)
    assert F.avg_pool2d(e.to(dev), 2).shape == (0, 3, 3, 3)


def test_pool_fp16(dev):
    x = randn(2, 3, 9, 10, dtype=torch.float16)
    close(F.max_pool2d(x.to(dev), 3, 2, 1), F.max_pool2d(x.float(), 3, 2, 1).half())
    close(F.avg_pool2d(x.to(dev), 3, 2, 1), F.avg_pool2d(x.float(), 3, 2, 1).half(), **F16)
    close(F.adaptive_avg_pool2d(x.to(dev), (4, 3)), F.adaptive_avg_pool2d(x.float(), (4, 3)).half(), **F16)


def test_pool_out_variants(dev):
    x = randn(2, 3, 8, 9)
    xd = x.to(dev)
    y, i = torch.empty(0, device=dev), torch.empty(0, dtype=torch.long, device=dev)
    A.max_pool2d_with_indices.out(xd, [3, 3], [2, 2], [1, 1], [1, 1], False, out=y, indices=i)
    yc, ic = A.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1], [1, 1], False)
    close(y, yc)
    close(i, ic)
    g = randn(*yc.shape, seed=3)
    gi = torch.empty(0, device=dev)
    A.max_pool2d_with_indices_backward.grad_input(g.to(dev), xd, [3, 3], [2, 2], [1, 1], [1, 1], False, i,
                                                  grad_input=gi)
    close(gi, A.max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [1, 1], [1, 1], False, ic))
    o = torch.empty(0, device=dev)
    A.avg_pool2d.out(xd, [2, 3], [2, 2], [1, 1], True, False, None, out=o)
    oc = A.avg_pool2d(x, [2, 3], [2, 2], [1, 1], True, False, None)
    close(o, oc, **F32)
    g = randn(*oc.shape, seed=4)
    gi = torch.empty(0, device=dev)
    A.avg_pool2d_backward.grad_input(g.to(dev), xd, [2, 3], [2, 2], [1, 1], True, False, None, grad_input=gi)
    close(gi, A.avg_pool2d_backward(g, x, [2, 3], [2, 2], [1, 1], True, False, None), **F32)
    for op in (A._adaptive_avg_pool2d.out, A.adaptive_avg_pool2d.out):
        o = torch.empty(0, device=dev)
        op(xd, [3, 4], out=o)
        close(o, A._adaptive_avg_pool2d(x, [3, 4]), **F32)
    g = randn(2, 3, 3, 4, seed=5)
    gi = torch.empty(0, device=dev)
    A._adaptive_avg_pool2d_backward.out(g.to(dev), xd, out=gi)
    close(gi, A._adaptive_avg_pool2d_backward(g, x), **F32)


def test_pool_errors(dev):
    x = randn(1, 2, 6, 6).to(dev)
    with pytest.raises(RuntimeError, match="aten::max_pool2d_with_indices.*pad should be"):
        F.max_pool2d(x, 2, 1, 2)
    with pytest.raises(RuntimeError, match="aten::avg_pool2d.*3D or 4D"):
        A.avg_pool2d(randn(6, 6).to(dev), [2, 2])
    with pytest.raises(RuntimeError, match="aten::avg_pool2d.*divisor must be not zero"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises((RuntimeError, ValueError), match="aten::max_pool2d_with_indices"):
        F.max_pool2d(x, 8)  # output too small
    with pytest.raises(RuntimeError, match="aten::_adaptive_avg_pool2d.*3D or 4D"):
        A._adaptive_avg_pool2d(randn(6, 6).to(dev), [2, 2])
    with pytest.raises(NotImplementedError, match="aten::max_pool2d_with_indices.*Int"):
        F.max_pool2d(torch.ones(1, 1, 4, 4, dtype=torch.int32).to(dev), 2)
    check_usable(dev)


# ---- batch norm ------------------------------------------------------------------------------------

def bn_case(dev, shape, training, affine=True, stats=True, dtype=torch.float32, tol=F32):
    c = shape[1]
    x = randn(*shape, seed=1).to(dtype)
    w = randn(c, seed=2) if affine else None
    b = randn(c, seed=3) if affine else None
    rm = randn(c, seed=4) * 0.1 if stats else None
    rv = torch.rand(c, generator=torch.Generator().manual_seed(5)) + 0.5 if stats else None
    g = randn(*shape, seed=6)
    xc = x.float().clone().requires_grad_()
    wc = w.clone().requires_grad_() if affine else None
    bc = b.clone().requires_grad_() if affine else None
    rmc = rm.clone() if stats else None
    rvc = rv.clone() if stats else None
    yc = F.batch_norm(xc, rmc, rvc, wc, bc, training=training, momentum=0.2, eps=1e-4)
    yc.backward(g)
    xd = x.to(dev).requires_grad_()
    wd = w.to(dev).requires_grad_() if affine else None
    bd = b.to(dev).requires_grad_() if affine else None
    rmd = rm.to(dev) if stats else None
    rvd = rv.to(dev) if stats else None
    yd = F.batch_norm(xd, rmd, rvd, wd, bd, training=training, momentum=0.2, eps=1e-4)
    yd.backward(g.to(dtype).to(dev))
    assert yd.dtype == dtype
    close_f(yd.detach(), yc.detach(), **tol)
    close_f(xd.grad, xc.grad, **tol)
    if affine:
        close(wd.grad, wc.grad, **tol)
        close(bd.grad, bc.grad, **tol)
    if stats:
        close(rmd, rmc, **tol)  # updated in place in training, unchanged in eval
        close(rvd, rvc, **tol)


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_batch_norm(dev, training):
    torch_mlu.reset_stats()
    bn_case(dev, (4, 3, 5, 7), training)
    bn_case(dev, (6, 5), training)
    bn_case(dev, (3, 4, 9), training, affine=False)
    if training:
        bn_case(dev, (4, 3, 5, 7), training, stats=False)
    assert ran_on_device("aten::native_batch_norm") and ran_on_device("aten::native_batch_norm_backward")


def test_batch_norm_fp16_and_layouts(dev):
    bn_case(dev, (4, 3, 5, 6), True, dtype=torch.float16, tol=F16_LOOSE)
    bn_case(dev, (4, 3, 5, 6), False, dtype=torch.float16, tol=F16_LOOSE)
    x = randn(3, 4, 5, 6)
    rm, rv = torch.zeros(4), torch.ones(4)
    want = F.batch_norm(x, rm.clone(), rv.clone(), training=True)
    for xd in (x.permute(0, 2, 3, 1).contiguous().to(dev).permute(0, 3, 1, 2), transposed(x, dev)):
        rmd, rvd = rm.to(dev), rv.to(dev)
        close(F.batch_norm(xd, rmd, rvd, training=True), want, atol=1e-5, rtol=1e-4)


def test_native_batch_norm_saved_stats_and_out(dev):
    x = randn(4, 3, 5, 5)
    w, b = randn(3, seed=1), randn(3, seed=2)
    rm, rv = torch.zeros(3), torch.ones(3)
    want = A.native_batch_norm(x, w, b, rm.clone(), rv.clone(), True, 0.1, 1e-5)
    got = A.native_batch_norm(x.to(dev), w.to(dev), b.to(dev), rm.to(dev), rv.to(dev), True, 0.1, 1e-5)
    for gt, wt in zip(got, want):
        close(gt, wt, atol=1e-5, rtol=1e-4)
    rmd, rvd = rm.to(dev), rv.to(dev)
    outs = [torch.empty(0, device=dev) for _ in range(3)]
    A.native_batch_norm.out(x.to(dev), w.to(dev), b.to(dev), rmd, rvd, True, 0.1, 1e-5,
                            out=outs[0], save_mean=outs[1], save_invstd=outs[2])
    for gt, wt in zip(outs, want):
        close(gt, wt, atol=1e-5, rtol=1e-4)
    ev = A.native_batch_norm(x.to(dev), w.to(dev), b.to(dev), rm.to(dev), rv.to(dev), False, 0.1, 1e-5)
    assert ev[1].shape == (0,) and ev[2].shape == (0,)
    g = randn(4, 3, 5, 5, seed=9)
    bwant = A.native_batch_norm_backward(g, x, w, rm, rv, want[1], want[2], True, 1e-5, [True, True, True])
    bgot = A.native_batch_norm_backward(g.to(dev), x.to(dev), w.to(dev), rm.to(dev), rv.to(dev), got[1], got[2],
                                        True, 1e-5, [True, True, True])
    for gt, wt in zip(bgot, bwant):
        close(gt, wt, atol=1e-4, rtol=1e-4)
    outs = [torch.empty(0, device=dev) for _ in range(3)]
    A.native_batch_norm_backward.out(g.to(dev), x.to(dev), w.to(dev), rm.to(dev), rv.to(dev), got[1], got[2],
                                     True, 1e-5, [True, True, True], out0=outs[0], out1=outs[1], out2=outs[2])
    for gt, wt in zip(outs, bwant):
        close(gt, wt, atol=1e-4, rtol=1e-4)
    only_dx = A.native_batch_norm_backward(g.to(dev), x.to(dev), w.to(dev), None, None, got[1], got[2], True, 1e-5,
                                           [True, False, False])
    close(only_dx[0], bwant[0], atol=1e-4, rtol=1e-4)


def test_batchnorm2d_module(dev):
    torch.manual_seed(0)
    mc = nn.BatchNorm2d(3)
    with torch.no_grad():
        mc.weight.uniform_(0.5, 1.5)
        mc.bias.uniform_(-0.5, 0.5)
    md = nn.BatchNorm2d(3).to(dev)
    md.load_state_dict(mc.state_dict())
    x = randn(4, 3, 6, 5)
    g = randn(4, 3, 6, 5, seed=1)
    xd = x.to(dev).requires_grad_()
    yd = other_family_missing(lambda: md(xd))  # num_batches_tracked.add_(1)
    xc = x.clone().requires_grad_()
    yc = mc(xc)
    yc.backward(g)
    yd.backward(g.to(dev))
    close(yd.detach(), yc.detach(), atol=1e-5, rtol=1e-4)
    close(xd.grad, xc.grad, atol=1e-5, rtol=1e-4)
    close(md.weight.grad, mc.weight.grad, atol=1e-4, rtol=1e-4)
    close(md.bias.grad, mc.bias.grad, atol=1e-4, rtol=1e-4)
    close(md.running_mean, mc.running_mean, **F32)
    close(md.running_var, mc.running_var, **F32)
    md.eval()
    mc.eval()
    close(md(x.to(dev)).detach(), mc(x).detach(), **F32)


def test_batch_norm_errors(dev):
    x = randn(2, 3, 4, 4).to(dev)
    with pytest.raises(RuntimeError, match="aten::native_batch_norm.*running_mean should contain 3"):
        A.native_batch_norm(x, None, None, torch.zeros(4).to(dev), torch.ones(3).to(dev), True, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="aten::native_batch_norm.*evaluation mode"):
        A.native_batch_norm(x, None, None, None, None, False, 0.1, 1e-5)
    with pytest.raises(NotImplementedError, match="aten::native_batch_norm.*Double"):
        A.native_batch_norm(randn(2, 3).double().to(dev), None, None, None, None, True, 0.1, 1e-5)
    check_usable(dev)


# ---- layer norm ------------------------------------------------------------------------------------

def ln_case(dev, shape, nshape, affine=True, dtype=torch.float32, tol=F32, layout=None):
    x = randn(*shape, seed=1).to(dtype)
    w = randn(*nshape, seed=2) if affine else None
    b = randn(*nshape, seed=3) if affine else None
    g = randn(*shape, seed=4)
    xc = x.float().clone().requires_grad_()
    wc = w.clone().requires_grad_() if affine else None
    bc = b.clone().requires_grad_() if affine else None
    yc = F.layer_norm(xc, nshape, wc, bc, eps=1e-5)
    yc.backward(g)
    xd0 = layout(x, dev) if layout else x.to(dev)
    xd = xd0.detach().requires_grad_()
    wd = w.to(dtype).to(dev).requires_grad_() if affine else None
    bd = b.to(dtype).to(dev).requires_grad_() if affine else None
    yd = F.layer_norm(xd, nshape, wd, bd, eps=1e-5)
    # autograd.grad: no AccumulateGrad, which would re-layout the grad like a strided leaf
    grads = torch.autograd.grad(yd, [xd, wd, bd] if affine else [xd], g.to(dtype).to(dev))
    assert yd.dtype == dtype
    close_f(yd.detach(), yc.detach(), **tol)
    close_f(grads[0], xc.grad, **tol)
    if affine:
        close_f(grads[1], wc.grad, **tol)
        close_f(grads[2], bc.grad, **tol)


def test_layer_norm(dev):
    torch_mlu.reset_stats()
    ln_case(dev, (4, 7), (7,), tol=dict(atol=1e-5, rtol=1e-4))
    ln_case(dev, (2, 3, 5, 6), (5, 6), tol=dict(atol=1e-5, rtol=1e-4))
    ln_case(dev, (3, 9), (9,), affine=False, tol=dict(atol=1e-5, rtol=1e-4))
    ln_case(dev, (3, 5, 6), (6,), layout=transposed, tol=dict(atol=1e-5, rtol=1e-4))
    ln_case(dev, (4, 6, 5), (5,), layout=lambda x, d: sliced(x, d, 1), tol=dict(atol=1e-5, rtol=1e-4))
    ln_case(dev, (4, 33), (33,), dtype=torch.float16, tol=F16_LOOSE)
    assert ran_on_device("aten::native_layer_norm") and ran_on_device("aten::native_layer_norm_backward")


def test_native_layer_norm_stats_and_out(dev):
    x = randn(3, 4, 6)
    w, b = randn(6, seed=1), randn(6, seed=2)
    want = A.native_layer_norm(x, [6], w, b, 1e-5)
    got = A.native_layer_norm(x.to(dev), [6], w.to(dev), b.to(dev), 1e-5)
    for gt, wt in zip(got, want):
        assert gt.shape == wt.shape
        close(gt, wt, atol=1e-5, rtol=1e-4)
    outs = [torch.empty(0, device=dev) for _ in range(3)]
    A.native_layer_norm.out(x.to(dev), [6], w.to(dev), b.to(dev), 1e-5, out0=outs[0], out1=outs[1], out2=outs[2])
    for gt, wt in zip(outs, want):
        close(gt, wt, atol=1e-5, rtol=1e-4)
    g = randn(3, 4, 6, seed=5)
    bwant = A.native_layer_norm_backward(g, x, [6], want[1], want[2], w, b, [True, True, True])
    outs = [torch.empty(0, device=dev) for _ in range(3)]
    A.native_layer_norm_backward.out(g.to(dev), x.to(dev), [6], got[1], got[2], w.to(dev), b.to(dev),
                                     [True, True, True], out0=outs[0], out1=outs[1], out2=outs[2])
    for gt, wt in zip(outs, bwant):
        close(gt, wt, atol=1e-4, rtol=1e-4)
    part = A.native_layer_norm_backward(g.to(dev), x.to(dev), [6], got[1], got[2], w.to(dev), b.to(dev),
                                        [False, True, False])
    assert part[0] is None and part[2] is None
    close(part[1], bwant[1], atol=1e-4, rtol=1e-4)
    h = A.native_layer_norm(randn(2, 8, dtype=torch.float16).to(dev), [8], None, None, 1e-5)
    assert h[0].dtype == torch.float16 and h[1].dtype == torch.float32  # stats in fp32 (CUDA's acc type)
    e = A.native_layer_norm(torch.empty(0, 5).to(dev), [5], None, None, 1e-5)
    assert e[0].shape == (0, 5) and e[1].shape == (0, 1)


def test_layernorm_module(dev):
    torch.manual_seed(0)
    mc = nn.LayerNorm((4, 5))
    with torch.no_grad():
        mc.weight.uniform_(0.5, 1.5)
        mc.bias.uniform_(-0.5, 0.5)
    md = nn.LayerNorm((4, 5)).to(dev)
    md.load_state_dict(mc.state_dict())
    x = randn(3, 4, 5)
    g = randn(3, 4, 5, seed=1)
    xc, xd = x.clone().requires_grad_(), x.to(dev).requires_grad_()
    yc, yd = mc(xc), md(xd)
    yc.backward(g)
    yd.backward(g.to(dev))
    close(yd.detach(), yc.detach(), atol=1e-5, rtol=1e-4)
    close(xd.grad, xc.grad, atol=1e-5, rtol=1e-4)
    close(md.weight.grad, mc.weight.grad, atol=1e-4, rtol=1e-4)
    close(md.bias.grad, mc.bias.grad, atol=1e-4, rtol=1e-4)


def test_layer_norm_errors(dev):
    x = randn(3, 4).to(dev)
    with pytest.raises(RuntimeError, match="aten::native_layer_norm.*normalized_shape"):
        F.layer_norm(x, (5,))
    with pytest.raises(RuntimeError, match="aten::native_layer_norm.*weight"):
        A.native_layer_norm(x, [4], torch.ones(3).to(dev), None, 1e-5)
    check_usable(dev)


# ---- modules: cross entropy, pooling ------------------------------------------------------------

def test_cross_entropy_and_pool_modules(dev):
    torch.manual_seed(0)
    loss_c = nn.CrossEntropyLoss(weight=torch.rand(4) + 0.5, ignore_index=3)
    loss_d = nn.CrossEntropyLoss(weight=loss_c.weight.to(dev), ignore_index=3)
    x = randn(3, 4, 8, 8)
    t = torch.randint(0, 4, (3, 4, 4), generator=torch.Generator().manual_seed(2))
    pools = [nn.MaxPool2d(3, 2, 1), nn.AvgPool2d(2), nn.AdaptiveAvgPool2d((4, 4))]
    for pool in pools:
        xc, xd = x.clone().requires_grad_(), x.to(dev).requires_grad_()
        lc = loss_c(pool(xc), t)
        ld = loss_d(pool(xd), t.to(dev))
        lc.backward()
        ld.backward(torch.tensor(1.0).to(dev))
        close(ld.detach(), lc.detach(), **F32)
        close(xd.grad, xc.grad, **F32)


# ---- dropout, bernoulli ------------------------------------------------------------------------------

def test_bernoulli_statistics_and_dtypes(dev):
    torch_mlu.reset_stats()
    n = 20000
    for p in (0.3, 0.5, 0.9):
        t = torch.empty(n, device=dev).bernoulli_(p)
        v = t.cpu()
        assert set(v.unique().tolist()) <= {0.0, 1.0}
        assert abs(v.mean().item() - p) < 0.02
    assert ran_on_device("aten::bernoulli_.float")
    for dt in (torch.float16, torch.bool, torch.int64, torch.int32, torch.uint8, torch.int8):
        v = torch.empty(4000, dtype=dt, device=dev).bernoulli_(0.25).cpu()
        assert v.dtype == dt
        assert set(v.float().unique().tolist()) <= {0.0, 1.0}
        assert abs(v.float().mean().item() - 0.25) < 0.04
    assert torch.empty(100, device=dev).bernoulli_(0.0).cpu().eq(0).all()
    assert torch.empty(100, device=dev).bernoulli_(1.0).cpu().eq(1).all()
    # non-contiguous self: only the view's elements change
    base = torch.full((40, 30), 7.0).to(dev)
    base.t()[:, ::2].bernoulli_(0.5)
    b = base.cpu()
    assert set(b[::2].unique().tolist()) <= {0.0, 1.0} and b[1::2].eq(7).all()
    e = torch.empty(0, device=dev).bernoulli_(0.5)
    assert e.shape == (0,)
    # bernoulli(x, p) (CompositeImplicit) and the float_out variant
    assert set(torch.bernoulli(torch.empty(50, device=dev), 0.5).cpu().unique().tolist()) <= {0.0, 1.0}
    o = torch.empty(0, device=dev)
    A.bernoulli.float_out(torch.empty(64, device=dev), 0.5, out=o)
    assert o.shape == (64,) and set(o.cpu().unique().tolist()) <= {0.0, 1.0}


def test_bernoulli_seeding(dev):
    torch.manual_seed(123)
    a = torch.empty(1000, device=dev).bernoulli_(0.5).cpu()
    b = torch.empty(1000, device=dev).bernoulli_(0.5).cpu()
    torch.manual_seed(123)
    a2 = torch.empty(1000, device=dev).bernoulli_(0.5).cpu()
    b2 = torch.empty(1000, device=dev).bernoulli_(0.5).cpu()
    assert torch.equal(a, a2) and torch.equal(b, b2)
    assert not torch.equal(a, b)  # the generator advances
    torch.manual_seed(124)
    assert not torch.equal(a, torch.empty(1000, device=dev).bernoulli_(0.5).cpu())
    torch_mlu.manual_seed(123)
    assert torch.equal(a, torch.empty(1000, device=dev).bernoulli_(0.5).cpu())


def test_bernoulli_errors(dev):
    with pytest.raises(RuntimeError, match="aten::bernoulli_.float.*p=1.5"):
        torch.empty(4, device=dev).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="expected a generator of device mlu, got one of cpu"):
        torch.empty(4, device=dev).bernoulli_(0.5, generator=torch.Generator())
    with pytest.raises(RuntimeError, match="more than one element"):
        torch.empty(1, device=dev).expand(4).bernoulli_(0.5)
    check_usable(dev)


def test_native_dropout(dev):
    torch_mlu.reset_stats()
    x = randn(100, 81) + 5.0  # no zeros
    for p in (0.2, 0.5):
        out, mask = torch.native_dropout(x.to(dev), p, True)
        assert mask.dtype == torch.bool and out.shape == x.shape
        o, m = out.cpu(), mask.cpu()
        assert abs(m.float().mean().item() - (1 - p)) < 0.02
        torch.testing.assert_close(o, x * m / (1 - p), atol=1e-5, rtol=1e-6)
        g = randn(100, 81, seed=3)
        close(A.native_dropout_backward(g.to(dev), mask, 1 / (1 - p)), g * m / (1 - p), atol=1e-5, rtol=1e-6)
        gi = torch.empty(0, device=dev)
        A.native_dropout_backward.out(g.to(dev), mask, 1 / (1 - p), out=gi)
        close(gi, g * m / (1 - p), atol=1e-5, rtol=1e-6)
        # uint8 masks as the CPU accepts them
        close(A.native_dropout_backward(g.to(dev), m.to(torch.uint8).to(dev), 2.0), g * m * 2.0)
    assert ran_on_device("aten::native_dropout") and ran_on_device("aten::native_dropout_backward")
    # autograd: the backward uses the forward's mask
    xd = x.to(dev).requires_grad_()
    out, mask = torch.native_dropout(xd, 0.3, True)
    out.backward(torch.ones(100, 81).to(dev))
    close(xd.grad, mask.cpu().float() / 0.7, atol=1e-5, rtol=1e-6)
    # eval: identity, all-true mask; p = 0 and p = 1; non-contiguous input; fp16; empty
    out, mask = torch.native_dropout(x.to(dev), 0.5, False)
    close(out, x)
    assert mask.cpu().all()
    close(torch.native_dropout(x.to(dev), 0.0, True)[0], x)
    o1, m1 = torch.native_dropout(x.to(dev), 1.0, True)
    assert o1.cpu().eq(0).all() and not m1.cpu().any()
    xt = transposed(x[:20, :30], dev)
    o, m = torch.native_dropout(xt, 0.5, True)
    torch.testing.assert_close(o.cpu(), x[:20, :30] * m.cpu() / 0.5)
    h = (randn(64, 33) + 3).half()
    o, m = torch.native_dropout(h.to(dev), 0.4, True)
    assert o.dtype == torch.float16
    torch.testing.assert_close(o.cpu(), (h.float() * m.cpu() / 0.6).half(), **F16)
    eo, em = torch.native_dropout(torch.empty(0, 3).to(dev), 0.5, True)
    assert eo.shape == (0, 3) and em.shape == (0, 3)
    # out= variant
    o, m = torch.empty(0, device=dev), torch.empty(0, dtype=torch.bool, device=dev)
    A.native_dropout.out(x.to(dev), 0.5, True, out0=o, out1=m)
    torch.testing.assert_close(o.cpu(), x * m.cpu() / 0.5)


def test_native_dropout_seeding_and_errors(dev):
    x = randn(50, 40).to(dev)
    torch.manual_seed(7)
    m1 = torch.native_dropout(x, 0.5, True)[1].cpu()
    torch.manual_seed(7)
    m2 = torch.native_dropout(x, 0.5, True)[1].cpu()
    assert torch.equal(m1, m2)
    with pytest.raises(ValueError, match="aten::native_dropout.*between 0 and 1"):
        torch.native_dropout(x, 1.5, True)
    with pytest.raises(NotImplementedError, match="aten::native_dropout_backward.*Float"):
        A.native_dropout_backward(x, x, 2.0)
    check_usable(dev)


def test_functional_dropout(dev):
    # torch 2 sends dropout on an accelerator to native_dropout (one kernel: mask and scale)
    torch_mlu.reset_stats()
    p = 0.3
    x = randn(120, 50) + 4.0  # no zeros
    xd = x.to(dev).requires_grad_()
    torch.manual_seed(11)
    y = other_family_missing(lambda: F.dropout(xd, p, training=True))
    assert "CompositeImplicitAutograd" in torch._C._dispatch_dump("aten::dropout")
    assert ran_on_device("aten::native_dropout") and not ran_on_device("aten::bernoulli_.float")
    yc = y.detach().cpu()
    kept = yc != 0
    assert abs(kept.float().mean().item() - (1 - p)) < 0.02
    torch.testing.assert_close(yc[kept], x[kept] / (1 - p), atol=1e-5, rtol=1e-5)
    # backward uses the same mask
    other_family_missing(lambda: y.backward(torch.ones(120, 50).to(dev)))
    torch.testing.assert_close(xd.grad.cpu(), kept.float() / (1 - p), atol=1e-5, rtol=1e-5)
    # reproducible after torch.manual_seed; the module path too
    torch.manual_seed(11)
    y2 = F.dropout(x.to(dev), p, training=True).cpu()
    assert torch.equal(y2, yc)
    drop = nn.Dropout(p)
    torch.manual_seed(11)
    assert torch.equal(drop(x.to(dev)).cpu(), yc)
    assert not torch.equal(drop(x.to(dev)).cpu(), yc)
    drop.eval()
    close(drop(x.to(dev)), x)


def test_native_group_norm_rounds_once_as_the_cpu(dev):
    """group_norm's own kernel (fp32 statistics, y = x * a + b per (n, c) rounded once): fp16 equal
    to the CPU's bit for bit (torch's composite over batch norm rounded twice), mean/rstd [N, G]."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 6, 5, 4, generator=g) * 4 + 1
    w, b = torch.randn(6, generator=g), torch.randn(6, generator=g)
    for dtype in (torch.float16, torch.float32):
        xs, ws, bs = x.to(dtype), w.to(dtype), b.to(dtype)
        got = torch.native_group_norm(xs.to(dev), ws.to(dev), bs.to(dev), 3, 6, 20, 3, 1e-5)
        ref = torch.native_group_norm(xs, ws, bs, 3, 6, 20, 3, 1e-5)
        exact = {"rtol": 0, "atol": 0} if dtype == torch.float16 else {"rtol": 1e-5, "atol": 1e-5}
        torch.testing.assert_close(got[0].cpu(), ref[0], **exact)
        for o, r in zip(got[1:], ref[1:]):
            assert o.dtype == r.dtype and o.shape == (3, 3)
            torch.testing.assert_close(o.cpu(), r, rtol=1e-3, atol=1e-3)
    y = torch.nn.functional.group_norm(x.half().to(dev), 2)  # no affine
    torch.testing.assert_close(y.cpu(), torch.nn.functional.group_norm(x.half(), 2), rtol=0, atol=0)
    mixed = torch.native_group_norm(x.half().to(dev), w.to(dev), b.to(dev), 3, 6, 20, 2, 1e-5)
    assert mixed[0].dtype == torch.float16 and mixed[1].dtype == torch.float32
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        torch.nn.functional.group_norm(x.to(dev), 4)


def test_group_norm_backward_matches_the_cpu(dev):
    """native_group_norm_backward (GroupNormKernel's formulas in fp32): dx, dweight, dbias against
    the CPU, with and without the affine, one group and one channel per group, fp16, and an
    output_mask that asks only for dx."""
    g = torch.Generator().manual_seed(9)
    x = torch.randn(2, 6, 5, 3, generator=g) * 3 + 1
    up = torch.randn(x.shape, generator=g)
    w, b = torch.randn(6, generator=g), torch.randn(6, generator=g)
    for groups, affine, dtype in [(3, True, torch.float32), (1, True, torch.float32), (6, False, torch.float32),
                                  (2, True, torch.float16)]:
        tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {"rtol": 1e-2, "atol": 1e-2}
        leaves = [t.to(dtype).clone().requires_grad_() for t in ([x, w, b] if affine else [x])]
        dev_leaves = [t.detach().to(dev).requires_grad_() for t in leaves]
        for ls, u in ((leaves, up.to(dtype)), (dev_leaves, up.to(dtype).to(dev))):
            y = F.group_norm(ls[0], groups, *(ls[1:] if affine else []))
            y.backward(u)
        for want, got in zip(leaves, dev_leaves):
            assert got.grad.dtype == want.grad.dtype
            torch.testing.assert_close(got.grad.cpu(), want.grad, **tol)
    rstd = torch.rand(2, 3) + 0.5
    only_dx = torch.ops.aten.native_group_norm_backward(up.to(dev), x.to(dev), torch.zeros(2, 3, device=dev),
                                                        rstd.to(dev), w.to(dev), 2, 6, 15, 3, [True, False, False])
    want = torch.ops.aten.native_group_norm_backward(up, x, torch.zeros(2, 3), rstd, w, 2, 6, 15, 3,
                                                     [True, False, False])
    assert only_dx[1] is None and only_dx[2] is None
    torch.testing.assert_close(only_dx[0].cpu(), want[0], rtol=1e-4, atol=1e-4)


def test_batch_norm_with_update_and_no_update(dev):
    """torch 2's _batch_norm_with_update / _batch_norm_no_update: native_batch_norm's outputs and
    running-statistics update, plus an empty uint8 reserve (CUDA's, without cuDNN)."""
    g = torch.Generator().manual_seed(7)
    x, w, b = torch.randn(4, 3, 5, generator=g), torch.randn(3, generator=g), torch.randn(3, generator=g)
    rm, rv = torch.zeros(3), torch.ones(3)
    drm, drv = rm.to(dev), rv.to(dev)
    got = torch.ops.aten._batch_norm_with_update(x.to(dev), w.to(dev), b.to(dev), drm, drv, 0.1, 1e-5)
    ref = torch.ops.aten._batch_norm_with_update(x, w, b, rm, rv, 0.1, 1e-5)
    for o, r in zip(got[:3], ref[:3]):
        torch.testing.assert_close(o.cpu(), r, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(drm.cpu(), rm, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(drv.cpu(), rv, rtol=1e-6, atol=1e-6)
    assert got[3].dtype == torch.uint8 and got[3].numel() == 0
    out = torch.ops.aten._batch_norm_no_update(x.to(dev), w.to(dev), b.to(dev), drm, drv, 0.1, 1e-5)[0]
    torch.testing.assert_close(out.cpu(), torch.ops.aten._batch_norm_no_update(x, w, b, rm, rv, 0.1, 1e-5)[0],
                               rtol=1e-5, atol=1e-5)


def test_backward_paths_torch2_reaches():
    """Backward entry points autograd takes in torch 2: softmax(x, dtype=float64)'s float64
    _softmax_backward_data, _batch_norm_with_update's batch_norm_backward, a 0-dim tensor's unfold."""
    dev = torch.device("mlu")
    x = randn(3, 5, seed=4).requires_grad_()
    xd = x.detach().to(dev).requires_grad_()
    cot = randn(3, 5, seed=5, dtype=torch.float64)
    for fn in (torch.softmax, torch.log_softmax):
        (fn(x, 1, dtype=torch.float64) * cot).sum().backward()
        (fn(xd, 1, dtype=torch.float64) * cot.to(dev)).sum().backward()
        assert xd.grad.dtype == torch.float32
        torch.testing.assert_close(xd.grad.cpu(), x.grad, **F32)
        x.grad = xd.grad = None
    b = randn(4, 3, 2, 2, seed=6).requires_grad_()
    w, bias = randn(3, seed=7).requires_grad_(), randn(3, seed=8).requires_grad_()
    bd, wd, biasd = (t.detach().to(dev).requires_grad_() for t in (b, w, bias))
    rm, rv = torch.zeros(3), torch.ones(3)
    rmd, rvd = rm.to(dev), rv.to(dev)
    torch.ops.aten._batch_norm_with_update(b, w, bias, rm, rv, 0.1, 1e-5)[0].pow(2).sum().backward()
    torch.ops.aten._batch_norm_with_update(bd, wd, biasd, rmd, rvd, 0.1, 1e-5)[0].pow(2).sum().backward()
    for d, c in ((bd, b), (wd, w), (biasd, bias)):
        torch.testing.assert_close(d.grad.cpu(), c.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(rmd.cpu(), rm, **F32)
    s = torch.tensor(2.5, requires_grad=True)
    sd = s.detach().to(dev).requires_grad_()
    (s.unfold(0, 1, 1) * 3).sum().backward()
    (sd.unfold(0, 1, 1) * 3).sum().backward()
    assert sd.grad.shape == () and sd.grad.item() == s.grad.item() == 3.0


def test_efficientzerotensor_gradients():
    """sgn's gradient of a real input is autograd's storage-less zero tensor: on the device it
    reads as zeros wherever an op consumes it."""
    dev = torch.device("mlu")
    x = randn(4, 3, seed=11).to(dev).requires_grad_()
    (torch.sgn(x) * 2 + x).sum().backward()
    assert torch.equal(x.grad.cpu(), torch.ones(4, 3))
    z = torch._efficientzerotensor((2, 3), device=dev)
    assert z.device.type == "mlu" and z._is_zerotensor()
    y = randn(2, 3, seed=12)
    torch.testing.assert_close((z + y.to(dev)).cpu(), y)
    assert torch.equal(z.cpu(), torch.zeros(2, 3))
