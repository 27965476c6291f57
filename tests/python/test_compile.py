"""torch.compile(model, backend="mlu") (torch_mlu/compile.py): inference graphs fused onto the
fused kernels, training graphs through AOTAutograd on the device's eager kernels; graph breaks and
recompiles as Dynamo does them."""

import copy

import pytest
import torch

import torch_mlu


def convnet():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.SiLU(),
        torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))


def kernel_launches(fn, *args):
    torch.mlu.synchronize()
    torch_mlu.reset_stats()
    out = fn(*args)
    torch.mlu.synchronize()
    return out, torch_mlu.cycle_report(format="json")["kernel_launches"]


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    torch_mlu.reset_compiled_graphs()
    yield
    torch._dynamo.reset()


def test_the_backend_is_registered():
    assert "mlu" in torch._dynamo.list_backends()


def test_inference_graph_is_fused_and_matches_eager(dev):
    model = convnet().eval().to(dev)
    x = torch.randn(2, 3, 8, 8).to(dev)
    compiled = torch.compile(model, backend="mlu")
    with torch.no_grad():
        ref, eager_kernels = kernel_launches(model, x)
        out, compiled_kernels = kernel_launches(compiled, x)
    torch.testing.assert_close(out.cpu(), ref.cpu(), rtol=1e-4, atol=1e-5)
    graphs = torch_mlu.compiled_graphs()
    assert len(graphs) == 1 and graphs[0]["mode"] == "inference"
    assert graphs[0]["fusion_matches"] == {"conv_bn_act": 2, "linear_act": 1, "elementwise": 0,
                                           "linear_residual": 0, "rms_norm": 0, "grouped_linear": 0}
    assert compiled_kernels < eager_kernels


def test_training_graph_matches_eager_gradients_and_running_stats(dev):
    model = convnet().train().to(dev)
    twin = copy.deepcopy(model)
    compiled = torch.compile(model, backend="mlu")
    x = torch.randn(4, 3, 8, 8).to(dev)
    t = torch.randint(0, 4, (4,)).to(dev)
    for m in (compiled, twin):
        torch.nn.functional.cross_entropy(m(x), t).backward()
    assert torch_mlu.compiled_graphs()[0]["mode"] == "training"
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(p.grad.cpu(), q.grad.cpu(), rtol=1e-5, atol=1e-6, msg=name)
    torch.testing.assert_close(model[1].running_mean.cpu(), twin[1].running_mean.cpu())
    torch.testing.assert_close(model[1].running_var.cpu(), twin[1].running_var.cpu())


def test_graph_breaks_and_recompiles(dev):
    class WithBreak(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

        def forward(self, x):
            y = torch.relu(self.a(x))
            if y.sum().item() > -1e9:  # data-dependent control flow: a graph break
                y = y * 2
            return torch.sigmoid(self.b(y))

    torch.manual_seed(0)
    model = WithBreak().eval().to(dev)
    compiled = torch.compile(model, backend="mlu")
    with torch.no_grad():
        for batch in (4, 4, 7):  # the new batch size recompiles
            x = torch.randn(batch, 8).to(dev)
            torch.testing.assert_close(compiled(x).cpu(), model(x).cpu(), rtol=1e-5, atol=1e-6)
    graphs = torch_mlu.compiled_graphs()
    assert len(graphs) >= 3  # two graphs around the break, then at least one recompile
    assert all(g["mode"] == "inference" for g in graphs)
    assert sum(g["fusion_matches"]["linear_act"] for g in graphs) >= 2


def test_compile_compare_reports_eager_and_compiled(dev):
    model = convnet().eval().to(dev)
    x = torch.randn(2, 3, 8, 8)
    result = torch_mlu.compile_compare(model, (x,))
    assert result["graphs"][0]["fusion_matches"]["conv_bn_act"] == 2
    total = result["total"]
    assert total["kernel_launches"]["fused"] < total["kernel_launches"]["unfused"]
    assert total["dram_bytes"]["fused"] < total["dram_bytes"]["unfused"]  # intermediates stay on chip
    assert result["compiled"]["kernel_launches"] == total["kernel_launches"]["fused"]
    assert result["max_abs_diff"] < 1e-4


class _Residuals(torch.nn.Module):
    """BERT's `LayerNorm(dropout(dense(x)) + x)`, GPT-2's Conv1D residual
    `torch.addmm(b, h.view(-1, K), W).view(h.shape) + h` and LLaMA's RMSNorm, small."""

    def __init__(self, d=24):
        super().__init__()
        self.dense = torch.nn.Linear(d, d)
        self.drop = torch.nn.Dropout(0.1)
        self.ln = torch.nn.LayerNorm(d)
        self.w = torch.nn.Parameter(torch.randn(d, d) / d ** 0.5)
        self.b = torch.nn.Parameter(torch.randn(d))

        self.rms_weight = torch.nn.Parameter(torch.rand(d) + 0.5)

    def forward(self, x):
        h = self.ln(self.drop(self.dense(x)) + x)
        h = h + torch.addmm(self.b, h.view(-1, h.shape[-1]), self.w).view(h.shape)
        r = h.to(torch.float32)  # LLaMA's RMSNorm, as transformers writes it
        r = r * torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.rms_weight * r.to(torch.float32)


def test_residual_adds_go_into_the_gemm_epilogue_and_rms_norm_is_one_kernel(dev):
    """Inference: a linear (nn.Linear through an eval dropout, or GPT-2's addmm with its [K, N]
    weight) whose output is added to a residual becomes mlu::linear_residual: the add runs in the
    GEMM epilogue; the RMSNorm becomes mlu::rms_norm. Results as eager's."""
    torch.manual_seed(0)
    model = _Residuals().eval().to(dev)
    x = torch.randn(2, 6, 24).to(dev)
    compiled = torch.compile(model, backend="mlu")
    with torch.no_grad():
        ref, eager_kernels = kernel_launches(model, x)
        out, compiled_kernels = kernel_launches(compiled, x)
        ops = {o["name"]: o["calls"] for o in torch_mlu.cycle_report(format="json")["ops"]}
    torch.testing.assert_close(out.cpu(), ref.cpu(), rtol=1e-4, atol=1e-5)
    matches = torch_mlu.compiled_graphs()[0]["fusion_matches"]
    assert (matches["linear_residual"], matches["rms_norm"]) == (2, 1), matches
    assert ops.get("mlu::linear_residual") == 2 and ops.get("mlu::rms_norm") == 1, ops
    assert compiled_kernels < eager_kernels


class _Attention(torch.nn.Module):
    """Q, K and V projections of one input (with biases), and a bias-free pair (LLaMA's gate and up)."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(24, 24) for _ in range(3))
        self.gate, self.up = torch.nn.Linear(24, 40, bias=False), torch.nn.Linear(24, 40, bias=False)

    def forward(self, x):
        q, k, v = (p(x).view(*x.shape[:-1], 4, 6).transpose(-3, -2) for p in (self.q, self.k, self.v))
        a = torch.softmax(q @ k.transpose(-1, -2), -1) @ v
        h = a.transpose(-3, -2).reshape(x.shape)
        return torch.sigmoid(self.gate(h)) * self.up(h)


def test_linears_of_one_input_run_as_one_gemm_and_follow_weight_updates(dev):
    """Inference: linears that read the same input become one GEMM over their concatenated weights
    (kept between calls), split back into the linears' outputs; an in-place weight update is seen."""
    torch.manual_seed(0)
    model = _Attention().eval().to(dev)
    x = torch.randn(2, 5, 24).to(dev)
    compiled = torch.compile(model, backend="mlu")
    with torch.no_grad():
        ref, eager_kernels = kernel_launches(model, x)
        out, _ = kernel_launches(compiled, x)
        out, compiled_kernels = kernel_launches(compiled, x)  # the concatenated weights are reused
        torch.testing.assert_close(out.cpu(), ref.cpu(), rtol=1e-4, atol=1e-5)
        assert torch_mlu.compiled_graphs()[0]["fusion_matches"]["grouped_linear"] == 2
        assert compiled_kernels < eager_kernels
        model.k.weight.mul_(-2.0)  # optimizer-style in-place update: the next call concatenates again
        model.up.weight.add_(0.5)
        torch.testing.assert_close(compiled(x).cpu(), model(x).cpu(), rtol=1e-4, atol=1e-5)
