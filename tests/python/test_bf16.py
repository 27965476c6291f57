"""torch.bfloat16 on the device where the preset has bf16 (mlu590, compute capability 5): casts,
elementwise, reductions, softmax, layer norm, matmul and linear against the CPU in bfloat16,
autocast(dtype=torch.bfloat16) on a small model, and the cycle report's bf16 multiplies. On an
MLU300-class preset (mlu370-x4) bf16 is storage only: compute raises NotImplementedError naming
the op and the preset, and bf16 autocast is refused."""

import warnings

import pytest
import torch
import torch.nn.functional as F

import torch_mlu

# torch's own assert_close tolerance for bfloat16 (one rounding is up to 2^-8 relative; a few
# roundings in a chain stay under it).
BF16 = dict(rtol=1.6e-2, atol=1e-2)


@pytest.fixture
def mlu590():
    torch_mlu.load_config("mlu590")
    yield torch.device("mlu", 0)
    torch_mlu.load_config("tiny")


@pytest.fixture
def mlu370():
    torch_mlu.load_config("mlu370-x4")
    yield torch.device("mlu", 0)
    torch_mlu.load_config("tiny")


def rand(*shape, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).to(torch.bfloat16)


def test_mlu590_reports_bf16(mlu590):
    assert torch.mlu.get_device_capability() == (5, 0)
    assert torch.mlu.is_bf16_supported()
    assert torch.mlu.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]


def test_casts_and_elementwise_equal_the_cpu(mlu590):
    x = torch.randn(1000, generator=torch.Generator().manual_seed(1)) * 100
    d = x.to(mlu590).to(torch.bfloat16)  # cast on the device
    assert d.dtype == torch.bfloat16 and torch.equal(d.cpu(), x.to(torch.bfloat16))  # round to nearest even
    assert torch.equal(d.float().cpu(), x.to(torch.bfloat16).float())  # widening is exact
    assert torch.equal(d.half().cpu(), x.to(torch.bfloat16).half())
    a, b = rand(64, 33, seed=2), rand(33, seed=3)
    da, db = a.to(mlu590), b.to(mlu590)
    # One fp32 operation and one rounding, as the CPU's bfloat16 kernels do: bit-identical.
    assert torch.equal((da + db).cpu(), a + b)
    assert torch.equal((da * db).cpu(), a * b)
    assert torch.equal(torch.relu(da).cpu(), torch.relu(a))
    assert torch.equal((da * 0.5 - 1.0).cpu(), a * 0.5 - 1.0)
    assert (da + db.float()).dtype == torch.float32  # promotion as torch
    torch.testing.assert_close(torch.exp(da).cpu(), torch.exp(a), **BF16)
    torch.testing.assert_close(F.gelu(da).cpu(), F.gelu(a), **BF16)


def test_reductions_softmax_layer_norm_match_the_cpu(mlu590):
    x = rand(8, 300, seed=4)
    d = x.to(mlu590)
    torch.testing.assert_close(d.sum(dim=1).cpu(), x.sum(dim=1), **BF16)
    torch.testing.assert_close(d.float().sum().cpu(), x.float().sum(), rtol=1e-5, atol=1e-3)
    assert torch.equal(d.amax(dim=0).cpu(), x.amax(dim=0))
    torch.testing.assert_close(torch.softmax(d, dim=-1).cpu(), torch.softmax(x, dim=-1), **BF16)
    w, b = rand(300, seed=5), rand(300, seed=6)
    torch.testing.assert_close(F.layer_norm(d, (300,), w.to(mlu590), b.to(mlu590)).cpu(),
                               F.layer_norm(x, (300,), w, b), **BF16)


def test_matmul_and_linear_match_the_cpu_and_count_bf16_macs(mlu590):
    a, b = rand(48, 96, seed=7), rand(96, 40, seed=8)
    w, bias = rand(24, 96, seed=9), rand(24, seed=10)
    torch_mlu.reset_stats()
    y = a.to(mlu590) @ b.to(mlu590)
    lin = F.linear(a.to(mlu590), w.to(mlu590), bias.to(mlu590))
    assert y.dtype == torch.bfloat16 and lin.dtype == torch.bfloat16
    torch.testing.assert_close(y.cpu(), a @ b, **BF16)
    torch.testing.assert_close(lin.cpu(), F.linear(a, w, bias), **BF16)
    report = torch_mlu.cycle_report(format="json")
    rows = {m["dtype"]: m for m in report["multiplies_by_dtype"]}
    assert rows["bf16"]["macs"] == 48 * 96 * 40 + 48 * 96 * 24
    # The bf16 TFU array's peak: 32 cores x 32 x 64 MACs x 1.6 GHz.
    assert rows["bf16"]["peak_macs_per_s"] == pytest.approx(32 * 32 * 64 * 1.6e9)
    assert 0 < rows["bf16"]["macs_per_s"] <= rows["bf16"]["peak_macs_per_s"]
    assert "fp32" not in rows and "fp16" not in rows
    assert "\n  bf16 " in torch_mlu.cycle_report()


def _tiny_model_step(device, dtype):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64),
                                torch.nn.Linear(64, 8)).to(device)
    x = torch.randn(16, 32).to(device)
    t = torch.randint(0, 8, (16,)).to(device)
    with torch.autocast(device.type if isinstance(device, torch.device) else device, dtype=dtype):
        out = model(x)
        loss = F.cross_entropy(out, t)
    loss.backward()
    return out, loss, [p.grad.cpu() for p in model.parameters()]


def test_autocast_bf16_trains_a_small_model_like_the_cpu(mlu590):
    out, loss, grads = _tiny_model_step(mlu590, torch.bfloat16)
    ref_out, ref_loss, ref_grads = _tiny_model_step(torch.device("cpu"), torch.bfloat16)
    assert out.dtype == torch.bfloat16 and loss.dtype == torch.float32  # CUDA's lists: linear low, loss fp32
    torch.testing.assert_close(out.cpu(), ref_out, **BF16)
    torch.testing.assert_close(loss.cpu(), ref_loss, rtol=1e-2, atol=1e-2)
    for g, r in zip(grads, ref_grads):
        assert g.dtype == torch.float32  # fp32 master weights
        torch.testing.assert_close(g, r, rtol=5e-2, atol=5e-3)
    with torch.mlu.amp.autocast(dtype=torch.bfloat16):
        assert (torch.randn(4, 4).to(mlu590) @ torch.randn(4, 4).to(mlu590)).dtype == torch.bfloat16


def test_mlu370_keeps_bf16_as_storage_and_refuses_compute(mlu370):
    assert torch.mlu.get_device_capability() == (3, 0)
    assert not torch.mlu.is_bf16_supported()
    assert torch.mlu.get_amp_supported_dtype() == [torch.float16]
    x = rand(8, 8, seed=11)
    d = x.to(mlu370)  # a byte copy: storage works everywhere
    assert torch.equal(d.cpu(), x) and torch.equal(d.t().contiguous().cpu(), x.t().contiguous())
    assert torch.equal(torch.full((3,), 1.5, dtype=torch.bfloat16, device=mlu370).cpu(),
                       torch.full((3,), 1.5, dtype=torch.bfloat16))  # fill writes bytes built on the host
    with pytest.raises(NotImplementedError, match=r"aten::add.*add: a is bf16, which config 'mlu370-x4' does not compute"):
        d + d
    with pytest.raises(NotImplementedError, match=r"matmul: a is bf16, which config 'mlu370-x4' does not compute"):
        d @ d
    with pytest.raises(NotImplementedError, match=r"config 'mlu370-x4'"):
        torch.randn(4).to(mlu370).to(torch.bfloat16)  # a conversion needs the VFU
    with pytest.raises(RuntimeError, match=r"preset 'mlu370-x4', compute capability 3\.0\) does not support bfloat16"):
        torch.mlu.amp.autocast(dtype=torch.bfloat16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autocast("mlu", dtype=torch.bfloat16):  # torch's rule: warn and disable
            y = torch.randn(4, 4).to(mlu370) @ torch.randn(4, 4).to(mlu370)
    assert y.dtype == torch.float32
    assert any("target dtype is not supported" in str(w.message) for w in caught)


# ---- convolution, batch norm, pooling, losses and dropout in bf16 on mlu590 ---------------------
# The device computes each in fp32 and rounds once to bf16; the CPU's bf16 kernels do the same up to
# accumulation order, so the bf16 tolerance holds. Gradients are checked against fp32 CPU autograd
# on the same bf16 values (a bf16 result is within a rounding of it).

def _grads_close(dev_tensors, ref_tensors, **tol):
    for d, r in zip(dev_tensors, ref_tensors):
        assert d.grad.dtype == torch.bfloat16
        torch.testing.assert_close(d.grad.cpu().float(), r.grad, **tol)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_conv2d_forward_and_backward_match_the_cpu(mlu590, channels_last):
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    x, w, b = rand(2, 6, 9, 8, seed=20), rand(8, 6, 3, 3, seed=21, scale=0.3), rand(8, seed=22)
    dw_x, dw_w = rand(2, 4, 7, 7, seed=23), rand(4, 1, 3, 3, seed=24)  # depthwise
    dev = [t.to(mlu590).contiguous(memory_format=fmt if t.dim() == 4 else torch.contiguous_format).requires_grad_()
           for t in (x, w, b, dw_x, dw_w)]
    ref = [t.float().requires_grad_() for t in (x, w, b, dw_x, dw_w)]
    outs = []
    for ts, cast in ((dev, lambda t: t.to(mlu590)), (ref, torch.Tensor.float)):
        y = F.conv2d(ts[0], ts[1], ts[2], stride=(1, 2), padding=1)
        z = F.conv2d(ts[3], ts[4], stride=1, padding=1, groups=4)
        outs.append((y, z))
        torch.autograd.backward([y, z], [cast(rand(*y.shape, seed=25)), cast(rand(*z.shape, seed=26))])
    (y, z), (ry, rz) = outs
    assert y.dtype == torch.bfloat16 and z.dtype == torch.bfloat16
    torch.testing.assert_close(y.cpu(), F.conv2d(x, w, b, stride=(1, 2), padding=1), **BF16)  # CPU in bf16
    torch.testing.assert_close(y.cpu().float(), ry.detach(), **BF16)
    torch.testing.assert_close(z.cpu().float(), rz.detach(), **BF16)
    _grads_close(dev, ref, **BF16)


def test_batch_norm_training_inference_and_backward_match_the_cpu(mlu590):
    x, g = rand(4, 5, 6, 6, seed=30, scale=2.0) + 1, rand(4, 5, 6, 6, seed=31)
    bn_cpu = torch.nn.BatchNorm2d(5).to(torch.bfloat16)
    with torch.no_grad():
        bn_cpu.weight.copy_(rand(5, seed=32)), bn_cpu.bias.copy_(rand(5, seed=33))
    bn_dev = torch.nn.BatchNorm2d(5).to(torch.bfloat16).to(mlu590)
    bn_dev.load_state_dict(bn_cpu.state_dict())
    xd, xc = x.to(mlu590).requires_grad_(), x.clone().requires_grad_()
    yd, yc = bn_dev(xd), bn_cpu(xc)
    assert yd.dtype == torch.bfloat16
    torch.testing.assert_close(yd.cpu(), yc, **BF16)
    yd.backward(g.to(mlu590)), yc.backward(g)
    torch.testing.assert_close(xd.grad.cpu(), xc.grad, rtol=3e-2, atol=3e-2)
    torch.testing.assert_close(bn_dev.weight.grad.cpu(), bn_cpu.weight.grad, rtol=3e-2, atol=1e-1)
    torch.testing.assert_close(bn_dev.bias.grad.cpu(), bn_cpu.bias.grad, rtol=3e-2, atol=1e-1)
    torch.testing.assert_close(bn_dev.running_mean.cpu(), bn_cpu.running_mean, **BF16)
    torch.testing.assert_close(bn_dev.running_var.cpu(), bn_cpu.running_var, **BF16)
    bn_dev.eval(), bn_cpu.eval()
    with torch.no_grad():
        torch.testing.assert_close(bn_dev(x.to(mlu590)).cpu(), bn_cpu(x), **BF16)


def test_pooling_losses_and_dropout_match_the_cpu(mlu590):
    x = rand(2, 3, 9, 8, seed=40)
    for pool in (lambda t: F.max_pool2d(t, 3, 2, 1), lambda t: F.avg_pool2d(t, 2)):
        xd, xc = x.to(mlu590).requires_grad_(), x.clone().requires_grad_()
        yd, yc = pool(xd), pool(xc)
        assert yd.dtype == torch.bfloat16
        torch.testing.assert_close(yd.cpu(), yc, **BF16)
        g = rand(*yc.shape, seed=41)
        yd.backward(g.to(mlu590)), yc.backward(g)
        torch.testing.assert_close(xd.grad.cpu(), xc.grad, **BF16)
    logits, target = rand(6, 10, seed=42, scale=2.0), torch.tensor([1, 0, 9, 3, -100, 3])
    ld, lc = logits.to(mlu590).requires_grad_(), logits.clone().requires_grad_()
    loss_d, loss_c = F.cross_entropy(ld, target.to(mlu590)), F.cross_entropy(lc, target)
    assert loss_d.dtype == torch.bfloat16
    torch.testing.assert_close(loss_d.cpu(), loss_c, **BF16)
    loss_d.backward(), loss_c.backward()
    torch.testing.assert_close(ld.grad.cpu(), lc.grad, **BF16)
    xd = rand(1000, seed=43).to(mlu590).requires_grad_()
    yd = F.dropout(xd, 0.25, training=True)
    kept = yd != 0
    assert yd.dtype == torch.bfloat16 and 0.65 < kept.float().mean().item() < 0.85
    torch.testing.assert_close(yd.cpu(), torch.where(kept.cpu(), xd.detach().cpu() / 0.75, 0).to(torch.bfloat16),
                               **BF16)
    yd.sum().backward()
    assert torch.equal(xd.grad.cpu(), torch.where(kept.cpu(), torch.tensor(1 / 0.75), 0).to(torch.bfloat16))


def test_random_fills_are_the_fp32_draws_rounded_to_bf16(mlu590):
    torch.manual_seed(5)
    u = torch.rand(2000, device=mlu590, dtype=torch.bfloat16)
    torch.manual_seed(5)
    u32 = torch.rand(2000, device=mlu590)
    assert u.dtype == torch.bfloat16 and torch.equal(u.cpu(), u32.cpu().to(torch.bfloat16))
    z = torch.randn(4000, device=mlu590, dtype=torch.bfloat16).float().cpu()
    assert abs(z.mean().item()) < 0.1 and abs(z.std().item() - 1) < 0.1


def test_embedding_backward_adds_rows_in_index_order_like_the_cpu(mlu590):
    w, g = rand(10, 16, seed=55), rand(3, 7, 16, seed=56)
    idx = torch.tensor([[1, 3, 1, 9, 0, 1, 3], [2, 2, 2, 2, 5, 5, 1], [0, 0, 7, 7, 1, 3, 8]])  # repeats accumulate
    wd, wc = w.to(mlu590).requires_grad_(), w.clone().requires_grad_()
    F.embedding(idx.to(mlu590), wd, padding_idx=5).backward(g.to(mlu590))
    F.embedding(idx, wc, padding_idx=5).backward(g)
    assert wd.grad.dtype == torch.bfloat16 and not wd.grad.cpu()[5].any()
    torch.testing.assert_close(wd.grad.cpu(), wc.grad, **BF16)


def test_sort_topk_and_cumsum_match_the_cpu(mlu590):
    x = rand(5, 40, seed=57, scale=3.0)
    x[0, :4] = x[0, 4]  # ties (sorted stably, as the CPU with stable=True)
    d = x.to(mlu590)
    v, i = d.sort(dim=1, descending=True, stable=True)
    rv, ri = x.sort(dim=1, descending=True, stable=True)
    assert v.dtype == torch.bfloat16 and torch.equal(v.cpu(), rv) and torch.equal(i.cpu(), ri)  # exact: a permutation
    tv, _ = d.topk(6, dim=1)
    assert torch.equal(tv.cpu(), x.topk(6, dim=1).values)
    c = d.cumsum(dim=1)
    assert c.dtype == torch.bfloat16
    # fp32 running sums, each output rounded once: within a bf16 rounding of the exact prefix sums.
    torch.testing.assert_close(c.cpu().float(), x.double().cumsum(dim=1).float(), rtol=2 ** -8, atol=1e-5)


def test_scatter_and_index_put_match_the_cpu(mlu590):
    x, src = rand(4, 6, seed=58), rand(4, 6, seed=59)
    idx = torch.tensor([[0, 1, 0, 3, 1, 0]] * 4)  # repeated targets: updates in index order, rounded each
    d, ds, di = x.to(mlu590), src.to(mlu590), idx.to(mlu590)
    torch.testing.assert_close(d.scatter_add(0, di, ds).cpu(), x.scatter_add(0, idx, src), **BF16)
    assert torch.equal(d.scatter(0, di, ds).cpu(), x.scatter(0, idx, src))  # assignment: the last update wins
    assert torch.equal(d.scatter_reduce(0, di, ds, "amax").cpu(), x.scatter_reduce(0, idx, src, "amax"))
    rows = torch.tensor([2, 0])
    assert torch.equal(d.index_put((rows.to(mlu590),), ds[:2]).cpu(), x.index_put((rows,), src[:2]))


class _TinyResBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        y = F.dropout(y, 0.0, self.training)  # p = 0: drawn but deterministic, so the CPU run matches
        return self.fc(y.flatten(1))


def test_resnet_style_block_trains_in_bf16_on_the_device(mlu590):
    torch.manual_seed(0)
    cpu = _TinyResBlock().to(torch.bfloat16)
    dev = _TinyResBlock().to(torch.bfloat16).to(mlu590)
    dev.load_state_dict(cpu.state_dict())
    x, t = rand(4, 3, 8, 8, seed=50), torch.tensor([0, 4, 2, 1])
    torch_mlu.reset_cpu_fallback_counts()
    torch_mlu.reset_stats()
    losses = []
    for model, xs, ts in ((dev, x.to(mlu590), t.to(mlu590)), (cpu, x, t)):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = F.cross_entropy(model(xs), ts)
        loss.backward()
        opt.step()
        losses.append(loss)
    assert torch_mlu.cpu_fallback_counts() == {}
    torch.testing.assert_close(losses[0].cpu(), losses[1], **BF16)
    for (name, pd), pc in zip(dev.named_parameters(), cpu.parameters()):
        assert pd.dtype == torch.bfloat16, name
        torch.testing.assert_close(pd.grad.cpu(), pc.grad, rtol=5e-2, atol=2e-2, msg=name)
        torch.testing.assert_close(pd.detach().cpu(), pc.detach(), rtol=2e-2, atol=1e-2, msg=name)
    rows = {m["dtype"]: m for m in torch_mlu.cycle_report(format="json")["multiplies_by_dtype"]}
    # conv forward + backward-weight (x needs no gradient) and linear's three products on the bf16
    # array (batch norm's per-channel broadcasts are fp32 K=1 products, as in fp16).
    conv_macs, linear_macs = 4 * 8 * 8 * 8 * 3 * 9, 4 * 128 * 5
    assert rows["bf16"]["macs"] >= 2 * conv_macs + 3 * linear_macs and "fp16" not in rows


def test_mlu370_refuses_bf16_conv_batch_norm_pool_and_loss(mlu370):
    x = rand(1, 2, 4, 4, seed=60).to(mlu370)
    with pytest.raises(NotImplementedError, match=r"conv2d_forward: x is bf16, which config 'mlu370-x4' does not compute"):
        F.conv2d(x, rand(2, 2, 1, 1, seed=61).to(mlu370))
    # (named by the workspace query, the first libmlu call batch norm's training forward makes)
    with pytest.raises(NotImplementedError,
                       match=r"batch_norm_forward_training(_workspace_size)?: x is bf16, which config 'mlu370-x4'"):
        F.batch_norm(x, None, None, training=True)
    with pytest.raises(NotImplementedError, match=r"max_pool2d_forward: x is bf16, which config 'mlu370-x4'"):
        F.max_pool2d(x, 2)
    with pytest.raises(NotImplementedError, match=r"nll_loss_forward: input is bf16, which config 'mlu370-x4'"):
        F.nll_loss(x.flatten(1), torch.tensor([0]).to(mlu370))
