"""torch.compile(model) with Inductor (PyTorch's default backend) on mlu tensors
(torch_mlu/inductor*.py): results against the CPU, what the generated kernels launch, training
through AOTAutograd, graph breaks, dynamic shapes, random numbers, and no CPU fallback."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from test_compile import kernel_launches
from torch._inductor import config as inductor_config

import torch_mlu


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    torch_mlu.reset_cpu_fallback_counts()
    with inductor_config.patch(fx_graph_cache=False):  # generate kernels (the tests read them)
        yield
    assert torch_mlu.cpu_fallback_counts() == {}, "a compiled graph ran an op on the CPU"
    torch._dynamo.reset()


def new_kernels(fn, *args):
    """fn(*args) compiled, and the kernels Inductor generated for it."""
    start = len(torch_mlu.inductor_kernels())
    out = torch.compile(fn)(*args)
    return out, torch_mlu.inductor_kernels()[start:]


def test_a_pointwise_chain_is_one_program_kernel(dev):
    def f(x, y):
        return torch.sigmoid(torch.relu(x * 2 + y)) - 0.5

    x, y = torch.randn(4, 8), torch.randn(8)
    out, kernels = new_kernels(f, x.to(dev), y.to(dev))
    torch.testing.assert_close(out.cpu(), f(x, y), rtol=1e-5, atol=1e-6)
    assert len(kernels) == 1
    assert kernels[0]["launches"]["program"] == 1 and kernels[0]["launches"]["eager"] == 0
    assert set(kernels[0]["origins"]) >= {"aten.mul.Tensor", "aten.add.Tensor", "aten.relu.default",
                                          "aten.sigmoid.default", "aten.sub.Tensor"}
    compiled = torch.compile(f)
    _, eager_kernels = kernel_launches(f, x.to(dev), y.to(dev))
    _, compiled_kernels = kernel_launches(compiled, x.to(dev), y.to(dev))
    assert eager_kernels == 5 and compiled_kernels < eager_kernels


@pytest.mark.parametrize("name, fn", [
    ("sum", lambda x: x.sum(1)),
    ("mean of a product", lambda x: (x * x).mean()),
    ("amax", lambda x: x.amax(0)),
    ("argmax", lambda x: x.argmax(1)),
    ("var_mean", lambda x: torch.var_mean(x, 1)),
    ("max with indices", lambda x: x.max(1)),
])
def test_reductions_match_the_cpu(dev, name, fn):
    x = torch.randn(6, 40)
    out = torch.compile(fn)(x.to(dev))
    ref = fn(x)
    for o, r in zip(out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)):
        torch.testing.assert_close(o.cpu(), r, rtol=1e-5, atol=1e-5, msg=name)


@pytest.mark.parametrize("name, fn, args", [
    ("cat (masked loads)", lambda x, y: torch.cat([x, y], 1) * 2, (torch.randn(3, 5), torch.randn(3, 4))),
    ("constant pad", lambda x: F.pad(x, (1, 2, 0, 1)) + 1, (torch.randn(3, 5),)),
    ("embedding (indirect load)", lambda i, w: F.embedding(i, w) * 2, (torch.tensor([3, 0, 9, 3]), torch.randn(10, 4))),
    ("transpose (strided view)", lambda x, y: x.t() + y, (torch.randn(8, 4), torch.randn(4, 8))),
    ("permuted reshape", lambda x: (x.view(2, 2, 6).permute(1, 0, 2) * 3).reshape(4, 6), (torch.randn(4, 6),)),
    ("index_add (atomic store)", lambda x, i, v: x.index_add(0, i, v),
     (torch.randn(6, 3), torch.tensor([4, 1, 4]), torch.randn(3, 3))),
    ("iota", lambda x: x + torch.arange(6, device=x.device), (torch.randn(2, 6),)),
    ("erf (no program op)", lambda x: torch.erf(x) * 2 + 1, (torch.randn(16),)),
])
def test_indexing_and_ops_match_the_cpu(dev, name, fn, args):
    out = torch.compile(fn)(*[a.to(dev) for a in args])
    torch.testing.assert_close(out.cpu(), fn(*args), rtol=1e-5, atol=1e-5, msg=name)


def test_fp16_chains_round_once_as_inductor_kernels_do(dev):
    """A fused fp16 chain keeps its intermediates in fp32 and rounds once on store, as Inductor's
    Triton kernels do (eager rounds every op): equal to fp32 math rounded once, within one fp16
    ulp of eager."""
    x = torch.randn(64)

    def f(x):
        return (x.half() * 3).relu() + 1

    out = torch.compile(f)(x.to(dev)).cpu()
    assert out.dtype == torch.float16
    once = ((x.half().float() * 3).relu() + 1).half()
    torch.testing.assert_close(out, once, rtol=0, atol=0)
    torch.testing.assert_close(out, f(x), rtol=1e-3, atol=1e-3)


def test_softmax_and_layer_norm_stay_whole_kernels(dev):
    """libmlu's softmax and layer_norm are single kernels: on mlu Inductor calls them instead of
    decomposing them into reductions and programs."""
    w, b = torch.randn(16), torch.randn(16)

    def f(x):
        return F.layer_norm(torch.softmax(x, -1) + x, (16,), w.to(x.device), b.to(x.device))

    x = torch.randn(4, 16)
    out, kernels = new_kernels(f, x.to(dev))
    torch.testing.assert_close(out.cpu(), f(x), rtol=1e-4, atol=1e-5)
    assert all(k["launches"]["reduction"] == 0 for k in kernels)
    torch.mlu.synchronize()
    torch_mlu.reset_stats()
    torch.compile(f)(x.to(dev))
    ops = {o["name"] for o in torch_mlu.cycle_report(format="json")["ops"]}
    assert any("softmax" in o for o in ops) and any("layer_norm" in o for o in ops)


def test_training_step_matches_the_cpu(dev):
    torch.manual_seed(0)
    cpu = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 5))
    model = copy.deepcopy(cpu)
    x, t = torch.randn(2, 3, 8, 8), torch.tensor([1, 3])
    F.cross_entropy(cpu(x), t).backward()
    model = model.to(dev)
    loss = F.cross_entropy(torch.compile(model)(x.to(dev)), t.to(dev))
    loss.backward()
    for (name, p), q in zip(model.named_parameters(), cpu.parameters()):
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-4, atol=1e-5, msg=name)
    torch.testing.assert_close(model[1].running_mean.cpu(), cpu[1].running_mean, rtol=1e-5, atol=1e-6)


def test_dropout_draws_on_the_device(dev):
    torch.manual_seed(0)
    f = torch.compile(lambda x: F.dropout(x, 0.5, training=True))
    x = torch.ones(64, 64, device=dev)
    out = f(x).cpu()
    kept = out != 0
    assert 0.4 < kept.float().mean().item() < 0.6
    torch.testing.assert_close(out[kept], torch.full_like(out[kept], 2.0))


def test_a_graph_break_runs_both_graphs_on_the_device(dev):
    def f(x):
        y = torch.sin(x) * 2
        torch._dynamo.graph_break()
        return torch.cos(y + 1)

    x = torch.randn(4, 4)
    out, kernels = new_kernels(f, x.to(dev))
    torch.testing.assert_close(out.cpu(), f(x), rtol=1e-5, atol=1e-6)
    assert len(kernels) == 2


def test_dynamic_shapes_compile_once_with_symbolic_sizes(dev):
    f = torch.compile(lambda x: (x * 2).sum(-1), dynamic=True)
    start = len(torch_mlu.inductor_kernels())
    for n in (5, 7, 9):
        x = torch.randn(3, n)
        torch.testing.assert_close(f(x.to(dev)).cpu(), (x * 2).sum(-1), rtol=1e-5, atol=1e-5)
    assert len(torch_mlu.inductor_kernels()) - start == 1


def test_in_place_update_of_an_input(dev):
    def f(x, y):
        x.add_(y)
        return x * 2

    x, y = torch.randn(4, 4), torch.randn(4, 4)
    xd = x.to(dev)
    out = torch.compile(f)(xd, y.to(dev))
    torch.testing.assert_close(xd.cpu(), x + y)
    torch.testing.assert_close(out.cpu(), (x + y) * 2)


def test_compile_compare_reports_eager_and_inductor(dev):
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16)).to(dev).eval()
    result = torch_mlu.compile_compare(block, (torch.randn(4, 16),), backend="inductor")
    assert result["max_abs_diff"] < 1e-5
    assert result["total"]["kernel_launches"]["fused"] <= result["total"]["kernel_launches"]["unfused"]
    assert all("launches" in k for k in result["graphs"])
    assert result["patterns"]["linear_act"] == 1  # linear + ReLU: one GEMM with the ReLU epilogue
    with pytest.raises(ValueError, match="backend must be"):
        torch_mlu.compile_compare(block, (torch.randn(4, 16),), backend="triton")


def test_an_op_without_a_program_step_runs_its_device_kernel(dev):
    """Inductor ops outside the elementwise program language (here lgamma and atan2) run as the
    device's ATen kernels inside the generated kernel, never on the CPU."""
    def f(x, y):
        return torch.lgamma(x.abs() + 1) + torch.atan2(x, y) * 2

    x, y = torch.rand(32) + 0.1, torch.rand(32) + 0.1
    out, kernels = new_kernels(f, x.to(dev), y.to(dev))
    torch.testing.assert_close(out.cpu(), f(x, y), rtol=1e-4, atol=1e-5)
    assert sum(k["launches"]["eager"] for k in kernels) >= 2


def test_gemm_and_conv_epilogues_use_the_fused_kernels(dev):
    """Inference: conv + batch norm + ReLU and linear + GELU become libmlu's conv_bn_act and
    linear_act (the activation in the GEMM/convolution output stage), as backend="mlu" does."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 16), torch.nn.GELU(),
                                torch.nn.Linear(16, 4)).eval()
    model[1].running_mean.uniform_(-1, 1)
    model[1].running_var.uniform_(0.5, 2)
    x = torch.randn(2, 3, 4, 4)
    with torch.no_grad():
        ref = model(x)
        compiled = torch.compile(model.to(dev))
        compiled(x.to(dev))
        torch.mlu.synchronize()
        torch_mlu.reset_stats()
        out = compiled(x.to(dev))
        torch.mlu.synchronize()
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-4, atol=1e-5)
    ops = {o["name"]: o["calls"] for o in torch_mlu.cycle_report(format="json")["ops"]}
    assert ops.get("mlu::conv_bn_act") == 1 and ops.get("mlu::linear_act") == 1, ops


def test_elementwise_into_stores_into_a_strided_view_and_checks_out(dev):
    """mlu::elementwise_into, what Inductor's kernels store with: one program kernel writing the
    output view in place (no copy), inputs broadcast to out's shape, clear errors otherwise."""
    x = torch.randn(4, 3)
    out = torch.zeros(4, 6, device=dev)
    torch.ops.mlu.elementwise_into([x.to(dev)], "add(mul($0, 2.0), 1.0)", out[:, ::2])
    torch.testing.assert_close(out[:, ::2].cpu(), x * 2 + 1)
    assert (out[:, 1::2].cpu() == 0).all()
    row = torch.randn(3)
    full = torch.empty(4, 3, device=dev)
    torch.ops.mlu.elementwise_into([row.to(dev)], "neg($0)", full)  # broadcast to out's shape
    torch.testing.assert_close(full.cpu(), (-row).expand(4, 3))
    with pytest.raises(ValueError, match="cannot be cast to out's dtype"):
        torch.ops.mlu.elementwise_into([x.to(dev)], "add($0, 1.0)", torch.empty(4, 3, dtype=torch.int32, device=dev))
    with pytest.raises(ValueError, match="does not broadcast to out's shape"):
        torch.ops.mlu.elementwise_into([x.to(dev)], "neg($0)", torch.empty(2, 3, device=dev))


def test_cpu_scalar_tensors_with_device_tensors_run_on_the_device(dev):
    # Eager mixes 0-dim CPU tensors with device tensors. Inductor would run `cpu_scalar * x` as a
    # CPU kernel over device memory (it picks a pointwise kernel's device from its first input when
    # none is a GPU type); on mlu the CPU scalars are placed on the device first.
    x = torch.randn(4, 8)
    s = torch.tensor(2.5)

    def scalar_first(s, x):
        return s * x + 1

    out, kernels = new_kernels(scalar_first, s, x.to(dev))
    assert out.device == x.to(dev).device
    torch.testing.assert_close(out.cpu(), scalar_first(s, x))
    assert len(kernels) == 1 and kernels[0]["launches"]["program"] == 1

    def scalar_last(x, s):
        return x * s - s

    out = torch.compile(scalar_last)(x.to(dev), s)
    torch.testing.assert_close(out.cpu(), scalar_last(x, s))

    # A scalar the graph itself builds (torch.scalar_tensor defaults to the CPU) is built on mlu.
    def built(x):
        return torch.scalar_tensor(3.0) + x.sum(1)

    torch.testing.assert_close(torch.compile(built)(x.to(dev)).cpu(), built(x), rtol=1e-5, atol=1e-5)
    # An integer 0-dim CPU tensor keeps type promotion as eager: int scalar * float tensor -> float.
    n = torch.tensor(3)
    torch.testing.assert_close(torch.compile(scalar_first)(n, x.to(dev)).cpu(), scalar_first(n, x))


class _Conv1DNewGelu(torch.nn.Module):
    """GPT-2's MLP input: a Conv1D (addmm with a [in, out] weight) then gelu_new, the tanh GELU
    written out (transformers' NewGELUActivation)."""

    def __init__(self, d_in=16, d_out=24):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(d_in, d_out) / d_in ** 0.5)
        self.bias = torch.nn.Parameter(torch.randn(d_out))

    def forward(self, x):
        h = torch.addmm(self.bias, x.view(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], -1)
        return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))


@pytest.mark.parametrize("name", ["linear_silu", "conv1d_gelu_new"])
def test_decomposed_activations_go_into_the_gemm_epilogue(dev, name):
    """Activations the post-grad graph holds as arithmetic still go into the GEMM epilogue: SiLU,
    which Inductor decomposes into x / (1 + exp(-x)) (LLaMA's gate projection, a 3-D input), and
    GPT-2's gelu_new written out after its Conv1D: one mlu::linear_act launch each, within fp32
    tolerance of the CPU."""
    from torch_mlu.inductor_passes import epilogue_matches

    torch.manual_seed(0)
    model = (torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.SiLU()) if name == "linear_silu"
             else _Conv1DNewGelu()).eval()
    x = torch.randn(2, 3, 16)
    with torch.no_grad():
        ref = model(x)
        model.to(dev)
        start = len(epilogue_matches)
        compiled = torch.compile(model)
        compiled(x.to(dev))
        out, launches = kernel_launches(compiled, x.to(dev))
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-4, atol=1e-5)
    assert epilogue_matches[start]["linear_act"] == 1, epilogue_matches[start]
    ops = {o["name"]: o["calls"] for o in torch_mlu.cycle_report(format="json")["ops"]}
    assert launches == 1 and ops == {"mlu::linear_act": 1}, (launches, ops)


class _ResidualBlock(torch.nn.Module):
    """The residual patterns of the transformer blocks in bench/compile_models.py, small: a BERT
    post-norm (LayerNorm(dense(x) + x)), a GPT-2 Conv1D (addmm(b, x, W).view + h), LLaMA's
    decomposed RMSNorm, and an add + LayerNorm whose add is not a GEMM's."""

    def __init__(self, d=32):
        super().__init__()
        self.dense = torch.nn.Linear(d, d)
        self.ln = torch.nn.LayerNorm(d)
        self.w_conv1d = torch.nn.Parameter(torch.randn(d, d) / d ** 0.5)
        self.b_conv1d = torch.nn.Parameter(torch.randn(d))
        self.rms_weight = torch.nn.Parameter(torch.rand(d) + 0.5)
        self.ln2 = torch.nn.LayerNorm(d)

    def forward(self, x, e):
        h = self.ln(self.dense(x) + x)
        h = torch.addmm(self.b_conv1d, h.view(-1, h.shape[-1]), self.w_conv1d).view(h.shape) + h
        r = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        r = self.rms_weight * r
        return self.ln2(r * 2.0 + e) + h


def test_residual_adds_go_into_gemm_epilogues_and_norm_kernels(dev):
    """Inference: linear + residual add -> mlu::linear_residual (the add in the GEMM epilogue, also
    for GPT-2's addmm with a [K, N] weight), the decomposed RMSNorm -> mlu::rms_norm, an add
    feeding a LayerNorm -> mlu::add_layer_norm (sum and normalized output from one kernel);
    results as the CPU's within fp32 tolerance, fewer kernels than eager."""
    from torch_mlu.inductor_passes import epilogue_matches

    torch.manual_seed(0)
    model = _ResidualBlock().eval()
    x, e = torch.randn(2, 8, 32), torch.randn(32)
    with torch.no_grad():
        ref = model(x, e)
        model.to(dev)
        start = len(epilogue_matches)
        compiled = torch.compile(model)
        compiled(x.to(dev), e.to(dev))
        _, eager_kernels = kernel_launches(model, x.to(dev), e.to(dev))
        out, compiled_kernels = kernel_launches(compiled, x.to(dev), e.to(dev))
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-4, atol=1e-5)
    matches = epilogue_matches[start]
    assert (matches["linear_residual"], matches["rms_norm"], matches["add_layer_norm"]) == (2, 1, 1), matches
    ops = {o["name"]: o["calls"] for o in torch_mlu.cycle_report(format="json")["ops"]}
    assert ops.get("mlu::linear_residual") == 2 and ops.get("mlu::rms_norm") == 1, ops
    assert ops.get("mlu::add_layer_norm") == 1, ops
    assert compiled_kernels < eager_kernels


def test_residual_norm_ops_match_the_cpu_and_name_bad_input(dev):
    """The fused ops themselves, device against their CPU kernels (the unfused at:: ops): the sum
    and the normalized output, a broadcast residual, fp16; errors name the op and the argument."""
    torch.manual_seed(0)
    x, r = torch.randn(3, 5, 48), torch.randn(48)
    w, b = torch.rand(48) + 0.5, torch.randn(48)
    for dtype, tol in ((torch.float32, 1e-5), (torch.float16, 2e-3)):
        args = [t.to(dtype) for t in (x, r, w, b)]
        dargs = [t.to(dev) for t in args]
        for got, want in ((torch.ops.mlu.add_layer_norm(dargs[0], dargs[1], [48], dargs[2], dargs[3], 1e-5),
                           torch.ops.mlu.add_layer_norm(*args[:2], [48], *args[2:], 1e-5)),
                          (torch.ops.mlu.add_rms_norm(dargs[0], dargs[1], [48], dargs[2], 1e-6),
                           torch.ops.mlu.add_rms_norm(*args[:2], [48], args[2], 1e-6))):
            for g, ref in zip(got, want):
                torch.testing.assert_close(g.cpu(), ref, rtol=tol, atol=tol)
    w2, res = torch.randn(40, 48), torch.randn(40)  # a residual row broadcast over x's rows
    y = torch.ops.mlu.linear_residual(x.to(dev), w2.to(dev), None, res.to(dev), "relu")
    torch.testing.assert_close(y.cpu(), torch.relu(x @ w2.T + res), rtol=1e-4, atol=1e-4)
    with pytest.raises(RuntimeError, match="mlu::add_rms_norm: residual of shape"):
        torch.ops.mlu.add_rms_norm(x.to(dev), torch.randn(7).to(dev), [48], None, 1e-6)
    with pytest.raises(RuntimeError, match="mlu::linear_residual: expected input and residual to have the same"):
        torch.ops.mlu.linear_residual(x.to(dev), w.view(1, 48).to(dev), None, torch.randn(1).half().to(dev), "none")
