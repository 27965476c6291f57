"""The five ATen ops behind torch.nn.SyncBatchNorm (torch_bridge/src/ops/sync_batch_norm_ops.cpp),
on the device, checked the way SyncBatchNorm uses them: a batch split over "ranks" (here: slices
in one process; the all-gather and all-reduce done by hand) must give exactly what batch norm
over the whole batch gives on the CPU, forward (output, running statistics) and backward (input,
weight and bias gradients). The CPU fallback is off (conftest)."""

import pytest
import torch
import torch.nn.functional as F

EPS, MOMENTUM = 1e-5, 0.1
TOL = dict(atol=2e-5, rtol=2e-5)


def split_batch_norm(x, w, b, rm, rv, dy, ranks):
    """SyncBatchNorm's forward and backward (torch/nn/modules/_functions.py) over `ranks` slices of
    the batch, on x's device. Returns y, dx, dw, db."""
    parts, dys = x.chunk(ranks), dy.chunk(ranks)
    stats = [torch.batch_norm_stats(p, EPS) for p in parts]
    counts = torch.tensor([float(p.numel() // p.size(1)) for p in parts], device=x.device)
    mean_all = torch.stack([m for m, _ in stats])
    invstd_all = torch.stack([s for _, s in stats])
    mean, invstd = torch.batch_norm_gather_stats_with_counts(x, mean_all, invstd_all, rm, rv, MOMENTUM, EPS, counts)
    y = torch.cat([torch.batch_norm_elemt(p, w, b, mean, invstd, EPS) for p in parts])
    reduced = [torch.batch_norm_backward_reduce(g, p, mean, invstd, w, True, True, True) for g, p in zip(dys, parts)]
    sum_dy = sum(r[0] for r in reduced)          # the all-reduce
    sum_dy_xmu = sum(r[1] for r in reduced)
    dw = sum(r[2] for r in reduced)              # DDP's gradient all-reduce
    db = sum(r[3] for r in reduced)
    count_i32 = counts.to(torch.int32)
    dx = torch.cat([torch.batch_norm_backward_elemt(g, p, mean, invstd, w, sum_dy, sum_dy_xmu, count_i32)
                    for g, p in zip(dys, parts)])
    return y, dx, dw, db


def cpu_batch_norm(x, w, b, rm, rv, dy):
    x, w, b = (t.detach().clone().requires_grad_() for t in (x, w, b))
    y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=MOMENTUM, eps=EPS)
    y.backward(dy)
    return y.detach(), x.grad, w.grad, b.grad


@pytest.mark.parametrize("shape,ranks", [((8, 5, 3, 4), 2), ((6, 7), 3), ((4, 3, 9), 4)])
def test_split_batch_equals_batch_norm_of_the_whole_batch(dev, shape, ranks):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(shape, generator=g) * 2 + 0.5
    x[: shape[0] // ranks] += 3.0  # ranks with different means: the merge's spread term matters
    dy = torch.randn(shape, generator=g)
    c = shape[1]
    w, b = torch.rand(c, generator=g) + 0.5, torch.randn(c, generator=g)
    rm, rv = torch.randn(c, generator=g), torch.rand(c, generator=g) + 0.5
    want = cpu_batch_norm(x, w, b, rm_cpu := rm.clone(), rv_cpu := rv.clone(), dy)
    rm_dev, rv_dev = rm.to(dev), rv.to(dev)
    got = split_batch_norm(x.to(dev), w.to(dev), b.to(dev), rm_dev, rv_dev, dy.to(dev), ranks)
    for name, a, e in zip(("y", "dx", "dw", "db"), got, want):
        torch.testing.assert_close(a.cpu(), e, **TOL, msg=lambda m: f"{name}: {m}")
    torch.testing.assert_close(rm_dev.cpu(), rm_cpu, **TOL)
    torch.testing.assert_close(rv_dev.cpu(), rv_cpu, **TOL)  # unbiased over the whole batch


def test_backward_reduce_returns_only_what_was_asked(dev):
    x = torch.randn(4, 3, 2).to(dev)
    mean, invstd = torch.batch_norm_stats(x, EPS)
    w = torch.ones(3, device=dev)
    sum_dy, sum_dy_xmu, dw, db = torch.batch_norm_backward_reduce(x, x, mean, invstd, w, False, True, False)
    assert sum_dy is None and sum_dy_xmu is None and db is None
    assert dw.shape == (3,)


def test_bad_shapes_name_the_op(dev):
    with pytest.raises(RuntimeError, match="batch_norm_stats: expected an input with channels at dim 1"):
        torch.batch_norm_stats(torch.randn(5).to(dev), EPS)
    x = torch.randn(4, 3).to(dev)
    mean, invstd = torch.batch_norm_stats(x, EPS)
    with pytest.raises(RuntimeError, match="batch_norm_gather_stats_with_counts: counts has 3 entries for 1 ranks"):
        torch.batch_norm_gather_stats_with_counts(x, mean[None], invstd[None], None, None, 0.1, EPS,
                                                  torch.ones(3, device=dev))


def test_sync_batch_norm_module_in_one_process_is_batch_norm(dev):
    """nn.SyncBatchNorm outside a process group runs as plain BatchNorm (its own fallback): the
    converted model must still run on the device."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU())
    x = torch.randn(2, 3, 6, 6)
    want = model(x)
    sync = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert isinstance(sync[1], torch.nn.SyncBatchNorm)
    torch.testing.assert_close(sync.to(dev)(x.to(dev)).cpu(), want, atol=1e-5, rtol=1e-5)
