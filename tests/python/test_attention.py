"""scaled_dot_product_attention on mlu (torch_bridge/src/ops/attention_ops.cpp): the fused device
kernel (libmlu attention_forward / attention_backward) when it applies, the device composite
(matmul, softmax, dropout, matmul) otherwise; forward and gradients against the CPU in fp64,
eager and through torch.compile (Inductor and backend="mlu"), never an op on the CPU."""

import pytest
import torch
import torch.nn.functional as F
from torch._inductor import config as inductor_config

import torch_mlu

FUSED_FORWARD = "attention_forward"
FUSED_BACKWARD = {"attention_backward_dq", "attention_backward_dkdv"}


@pytest.fixture(autouse=True)
def no_cpu_ops():
    torch._dynamo.reset()
    yield
    assert torch_mlu.cpu_fallback_counts() == {}, "an op ran on the CPU"
    torch._dynamo.reset()


def kernels_of(fn, *args):
    """fn(*args) and the names of the device kernels it launched."""
    torch.mlu.synchronize()
    torch_mlu.reset_stats()
    out = fn(*args)
    torch.mlu.synchronize()
    return out, {k["name"] for k in torch_mlu.cycle_report(format="json")["kernels"]}


def qkv(shape_q, shape_kv, dtype=torch.float32, seed=0, transposed=False):
    """CPU fp64 q, k, v (requiring grad) and their device copies in `dtype` (leaves too). With
    `transposed`, the device q is a [B, L, H, D] tensor's transpose(1, 2), as attention layers
    make it."""
    g = torch.Generator().manual_seed(seed)
    host = [torch.randn(s, generator=g, dtype=torch.float64) for s in (shape_q, shape_kv, shape_kv)]
    dev = [t.to(dtype).to("mlu") for t in host]
    if transposed:
        dev[0] = dev[0].transpose(1, 2).contiguous().transpose(1, 2)
    host = [t.to(dtype).double().requires_grad_() for t in host]
    dev = [t.detach().requires_grad_() for t in dev]
    return host, dev


CASES = {
    "plain, q strided": dict(q=(2, 3, 37, 16), kv=(2, 3, 29, 16), transposed=True),
    "causal": dict(q=(1, 2, 45, 8), kv=(1, 2, 45, 8), causal=True),
    "float mask [B, 1, L, S]": dict(q=(2, 2, 19, 8), kv=(2, 2, 27, 8), mask=("float", (2, 1, 19, 27))),
    "bool mask [L, S]": dict(q=(1, 2, 21, 8), kv=(1, 2, 17, 8), mask=("bool", (21, 17))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_fused_forward_and_gradients_match_the_cpu(name):
    c = CASES[name]
    (q, k, v), (dq, dk, dv) = qkv(c["q"], c["kv"], transposed=c.get("transposed", False))
    mask = dmask = None
    if "mask" in c:
        kind, shape = c["mask"]
        g = torch.Generator().manual_seed(5)
        mask = torch.rand(shape, generator=g) > 0.3 if kind == "bool" else torch.randn(shape, generator=g).double()
        dmask = mask.to("mlu") if kind == "bool" else mask.float().to("mlu")
    causal = c.get("causal", False)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    grad = torch.randn(ref.shape, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    ref.backward(grad)
    out, fwd_kernels = kernels_of(lambda: F.scaled_dot_product_attention(dq, dk, dv, attn_mask=dmask,
                                                                         is_causal=causal))
    assert FUSED_FORWARD in fwd_kernels and not any("softmax" in n for n in fwd_kernels), fwd_kernels
    _, bwd_kernels = kernels_of(lambda: out.backward(grad.float().to("mlu")))
    assert FUSED_BACKWARD <= bwd_kernels, bwd_kernels
    torch.testing.assert_close(out.cpu().double(), ref.detach(), rtol=1e-4, atol=1e-5)
    for got, want in ((dq, q), (dk, k), (dv, v)):
        torch.testing.assert_close(got.grad.cpu().double(), want.grad, rtol=1e-4, atol=1e-4)


def test_fp16_causal_forward_and_gradients():
    (q, k, v), (dq, dk, dv) = qkv((1, 2, 40, 16), (1, 2, 40, 16), dtype=torch.float16, seed=3)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    ref.sum().backward()
    out, names = kernels_of(lambda: F.scaled_dot_product_attention(dq, dk, dv, is_causal=True))
    assert FUSED_FORWARD in names and out.dtype == torch.float16
    out.float().sum().backward()
    torch.testing.assert_close(out.cpu().double(), ref.detach(), rtol=1e-2, atol=1e-2)
    for got, want in ((dq, q), (dk, k), (dv, v)):
        torch.testing.assert_close(got.grad.cpu().double(), want.grad, rtol=2e-2, atol=2e-2)


def test_dropout_and_a_mask_that_needs_grad_take_the_device_composite():
    (q, k, v), (dq, dk, dv) = qkv((1, 2, 12, 8), (1, 2, 12, 8), seed=4)
    torch.manual_seed(0)
    out, names = kernels_of(lambda: F.scaled_dot_product_attention(dq, dk, dv, dropout_p=0.5))
    assert FUSED_FORWARD not in names and any("softmax" in n for n in names), names
    assert out.shape == (1, 2, 12, 8) and torch.isfinite(out).all()
    # A learnable additive mask: its gradient is the score gradient, which the composite computes.
    mask = torch.randn(12, 12, dtype=torch.float64, requires_grad=True)
    dmask = mask.detach().float().to("mlu").requires_grad_()
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    ref.sum().backward()
    out, names = kernels_of(lambda: F.scaled_dot_product_attention(dq, dk, dv, attn_mask=dmask))
    assert FUSED_FORWARD not in names
    out.sum().backward()
    torch.testing.assert_close(dmask.grad.cpu().double(), mask.grad, rtol=1e-4, atol=1e-5)


def attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True) * 2


@pytest.mark.parametrize("backend", ["inductor", "mlu"])
def test_compiled_training_graphs_call_the_fused_kernels(backend):
    (q, k, v), (dq, dk, dv) = qkv((2, 2, 24, 8), (2, 2, 24, 8), seed=6)
    ref = attention(q, k, v)
    ref.sum().backward()
    compiled = torch.compile(attention, backend=backend)
    with inductor_config.patch(fx_graph_cache=False):
        compiled(dq, dk, dv)  # compiles
        out, names = kernels_of(compiled, dq, dk, dv)
    assert FUSED_FORWARD in names and not any("softmax" in n for n in names), names
    for t in (dq, dk, dv):
        t.grad = None
    _, names = kernels_of(lambda: out.sum().backward())
    assert FUSED_BACKWARD <= names, names
    torch.testing.assert_close(out.detach().cpu().double(), ref.detach(), rtol=1e-4, atol=1e-5)
    for got, want in ((dq, q), (dk, k), (dv, v)):
        torch.testing.assert_close(got.grad.cpu().double(), want.grad, rtol=1e-4, atol=1e-4)


def handwritten_attention(q, k, v):
    return torch.matmul(q, k.transpose(-2, -1)).div(3.0).softmax(dim=-1).matmul(v)


def test_inductor_rewrites_handwritten_attention_to_the_fused_kernel():
    (q, k, v), (dq, dk, dv) = qkv((1, 4, 32, 16), (1, 4, 32, 16), seed=8)
    with torch.no_grad(), inductor_config.patch(fx_graph_cache=False):
        compiled = torch.compile(handwritten_attention)
        compiled(dq, dk, dv)
        out, names = kernels_of(compiled, dq, dk, dv)
    assert FUSED_FORWARD in names and "softmax_forward" not in names, names
    torch.testing.assert_close(out.cpu().double(), handwritten_attention(q, k, v).detach(), rtol=1e-4, atol=1e-5)
