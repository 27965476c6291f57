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
