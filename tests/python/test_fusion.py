"""torch_mlu.fuse (the torch.fx pass, torch_bridge/python/torch_mlu/fusion.py) on small modules:
which patterns match and which must not (a value used outside the pattern), per-pattern switches,
numerics of the fused module against the unfused one on the device and on the CPU, the fused ops'
CPU kernels running a fused graph, fusion_compare's figures, and the errors. resnet18 is in
models/test_fusion_models.py (it needs the 1 GiB config)."""

import math
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_mlu


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]


def _fused(gm, name):
    return sum(1 for t in _targets(gm) if str(t) == f"mlu.{name}")


def _run(model, *inputs, dev=None):
    with torch.no_grad():
        if dev is None:
            return model(*inputs)
        return model(*[x.to(dev) for x in inputs]).cpu()


def _seed_bn(model):
    g = torch.Generator().manual_seed(3)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.2)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            if m.affine:
                m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.2)
    return model


class ConvNet(nn.Module):
    """Every conv_bn_act form: module/functional conv, module/functional BN, activations as modules,
    functions, methods and in place, conv + activation without BN, conv + BN without activation."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=4, bias=False), nn.BatchNorm2d(8)
        self.c3, self.b3 = nn.Conv2d(8, 6, 1), nn.BatchNorm2d(6, affine=False)
        self.c4 = nn.Conv2d(6, 6, 3, padding=2, dilation=2)
        self.act1, self.act3 = nn.ReLU(inplace=True), nn.ReLU6()
        self.w5 = nn.Parameter(torch.randn(4, 6, 3, 3) * 0.2)
        self.b5 = nn.BatchNorm2d(4)

    def forward(self, x):
        x = self.act1(self.b1(self.c1(x)))                      # module chain, in-place ReLU
        x = F.gelu(self.b2(self.c2(x)), approximate="tanh")      # functional GELU (tanh)
        x = self.act3(self.b3(self.c3(x)))                       # ReLU6, affine-free BN
        x = self.c4(x).sigmoid()                                 # conv + method activation, no BN
        x = self.b5(F.conv2d(x, self.w5, None, 1, 1))            # F.conv2d + BN, no activation
        x = F.batch_norm(F.conv2d(x, self.w5.transpose(0, 1).contiguous()[:4], padding=1),
                         self.b5.running_mean, self.b5.running_var, training=False)
        return torch.relu(x)


def test_conv_bn_act_forms_match_and_keep_numerics(dev):
    torch.manual_seed(0)
    model = _seed_bn(ConvNet()).eval()
    gm = torch_mlu.fuse(model)
    # The last F.conv2d's weight is computed in forward (a transpose of w5) and still fuses.
    assert gm.fusion_matches == {"conv_bn_act": 6, "linear_act": 0, "elementwise": 0}
    assert _fused(gm, "conv_bn_act") == 6
    assert not any(isinstance(m, (nn.ReLU, nn.ReLU6)) for m in gm.modules())
    acts = [d["activation"] for d in torch_mlu.fusion_report(gm)["fused"]]
    assert acts == ["relu", "gelu_tanh", "relu6", "sigmoid", "none", "relu"]
    x = torch.randn(2, 3, 13, 11)
    expect = _run(model, x)
    torch.testing.assert_close(_run(gm, x), expect, rtol=1e-5, atol=1e-5)  # CPU kernels of the fused ops
    model_dev = model.to(dev)
    torch_mlu.set_cpu_fallback(True)  # the unfused ReLU6 (aten::hardtanh) has no device kernel
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            unfused = _run(model_dev, x, dev=dev)
    finally:
        torch_mlu.set_cpu_fallback(False)
    fused = _run(torch_mlu.fuse(model_dev), x, dev=dev)  # no fallback needed: ReLU6 is fused
    torch.testing.assert_close(fused, unfused, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(fused, expect, rtol=1e-3, atol=1e-3)


class Residual(nn.Module):
    """conv -> bn -> relu where values are also used elsewhere."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4)
        self.c2, self.b2 = nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4)

    def forward(self, x):
        y = self.c1(x)                 # the conv output feeds the BN and the residual: no fusion
        z = F.relu(self.b1(y)) + y
        u = self.b2(self.c2(z))        # the BN output feeds the relu and the return: conv+BN only
        return F.relu(u), u


def test_values_used_outside_a_pattern_are_not_fused(dev):
    torch.manual_seed(1)
    model = _seed_bn(Residual()).eval()
    gm = torch_mlu.fuse(model, ["conv_bn_act"])
    assert gm.fusion_matches["conv_bn_act"] == 1
    fused = torch_mlu.fusion_report(gm)["fused"]
    assert fused == [{"pattern": "conv_bn_act", "node": fused[0]["node"], "batch_norm": True, "activation": "none"}]
    targets = _targets(gm)
    assert "c1" in targets and "b1" in targets and F.relu in targets  # left alone
    assert "c2" not in targets and "b2" not in targets
    x = torch.randn(1, 4, 6, 6)
    expect = _run(model, x)
    for got, want in zip(_run(gm, x), expect):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    gm_dev = torch_mlu.fuse(model.to(dev), ["conv_bn_act"])
    with torch.no_grad():
        got = [t.cpu() for t in gm_dev(x.to(dev))]
    for g, want in zip(got, expect):
        torch.testing.assert_close(g, want, rtol=1e-3, atol=1e-3)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3, self.fc4 = nn.Linear(12, 16), nn.Linear(16, 16), nn.Linear(16, 8), nn.Linear(8, 8)
        self.w = nn.Parameter(torch.randn(8, 8) * 0.3)

    def forward(self, x):
        h = F.gelu(self.fc1(x))                  # Linear + GELU
        h = nn.functional.silu(self.fc2(h))      # Linear + SiLU
        y = self.fc3(h)
        h = F.relu(F.linear(y, self.w))          # F.linear + ReLU
        return self.fc4(h) + y                   # fc3's output is used twice: fc3 stays unfused


def test_linear_act(dev):
    torch.manual_seed(2)
    model = Mlp().eval()
    gm = torch_mlu.fuse(model, ["linear_act"])
    assert gm.fusion_matches == {"conv_bn_act": 0, "linear_act": 3, "elementwise": 0}
    assert [d["activation"] for d in torch_mlu.fusion_report(gm)["fused"]] == ["gelu", "silu", "relu"]
    assert "fc3" in _targets(gm) and "fc4" in _targets(gm)
    x = torch.randn(5, 12)
    expect = _run(model, x)
    torch.testing.assert_close(_run(gm, x), expect)
    gm_dev = torch_mlu.fuse(model.to(dev), ["linear_act"])
    torch.testing.assert_close(_run(gm_dev, x, dev=dev), expect, rtol=1e-4, atol=1e-4)


class Chains(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.SiLU()
        self.register_buffer("mask", torch.tensor([True, False, True, False, False]))

    def forward(self, x, y):
        a = (x * 0.5 + y) * torch.sigmoid(x * 0.5 + y)
        b = torch.tanh(-a)                               # a is used twice, both times inside the chain
        c = a.relu() / 3 - b
        d = torch.where(x > 0, c, 2.0 - y).masked_fill(self.mask, -1e4)
        e = self.act(d) + x.size(0) * 2                  # x.size(0) * 2 is Python arithmetic, not fused
        single = torch.exp(e)                            # a lone op is not a chain
        return single, torch.add(e, y, alpha=2).abs_()


def test_elementwise_chains(dev):
    model = Chains().eval()
    gm = torch_mlu.fuse(model, ["elementwise"])
    programs = [d["program"] for d in torch_mlu.fusion_report(gm)["fused"]]
    assert gm.fusion_matches["elementwise"] == 2
    assert programs == ["abs(add($0, $1, 2))",  # abs_ modifies the add's own result
                        "t0 = mul(add(mul($0, 0.5), $1), sigmoid(add(mul($0, 0.5), $1))); "
                        "t1 = where(gt($0, 0), sub(div(relu(t0), 3), tanh(neg(t0))), sub(2.0, $1)); "
                        "silu(cast_like(where($2, -10000.0, t1), t1))"]
    # exp(e) alone and the Python int arithmetic stay.
    assert torch.exp in _targets(gm)
    assert any(n.op == "call_method" and n.target == "size" for n in gm.graph.nodes)
    torch.manual_seed(3)
    x, y = torch.randn(3, 5), torch.randn(5)
    expect = _run(model, x, y)
    for got, want in zip(_run(gm, x, y), expect):
        torch.testing.assert_close(got, want)
    model_dev = model.to(dev)
    gm_dev = torch_mlu.fuse(model_dev, ["elementwise"])
    with torch.no_grad():
        got = [t.cpu() for t in gm_dev(x.to(dev), y.to(dev))]
        unfused = [t.cpu() for t in model_dev(x.to(dev), y.to(dev))]
    for g, u, want in zip(got, unfused, expect):
        torch.testing.assert_close(g, u, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(g, want, rtol=1e-4, atol=1e-4)


def test_intermediate_used_outside_stays_a_value():
    def f(x, y):
        t = x * 2 + y
        return torch.relu(t) * 3, t   # t is returned too: it cannot live inside relu's chain

    gm = torch_mlu.fuse(torch.fx.symbolic_trace(f).eval(), ["elementwise"])
    assert [d["program"] for d in torch_mlu.fusion_report(gm)["fused"]] == ["mul(relu($0), 3)", "add(mul($0, 2), $1)"]
    x, y = torch.randn(3, 4), torch.randn(4)
    for got, want in zip(gm(x, y), f(x, y)):
        torch.testing.assert_close(got, want)


class InPlace(nn.Module):
    def forward(self, x, y):
        t = x * 2
        t.add_(y)                 # in place on the chain's own value: fuses (the result keeps t's dtype)
        u = F.relu(t, inplace=True)
        v = y.mul_(3).sigmoid()   # in place on an input: left alone (the caller sees y change)
        return u, v


def test_in_place_nodes(dev):
    gm = torch_mlu.fuse(InPlace().eval(), ["elementwise"])
    programs = [d["program"] for d in torch_mlu.fusion_report(gm)["fused"]]
    # t has two users in fx (add_ and relu read the same t), so it cannot be hidden: no group
    # contains mul(x, 2) together with add_ ... and y.mul_ stays.
    assert any(n.op == "call_method" and n.target == "mul_" for n in gm.graph.nodes)
    x, y = torch.randn(4), torch.randn(4)
    y1, y2 = y.clone(), y.clone()
    expect = InPlace()(x, y1)
    got = gm(x, y2)
    torch.testing.assert_close(y2, y1)  # the input was modified as before
    for g, e in zip(got, expect):
        torch.testing.assert_close(g, e)
    assert all("mul_" not in p for p in programs)


def test_switches_change_only_their_pattern():
    torch.manual_seed(4)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 8),
                          nn.GELU(), nn.Sigmoid(), nn.Tanh()).eval()
    everything = torch_mlu.fuse(model).fusion_matches
    assert everything == {"conv_bn_act": 1, "linear_act": 1, "elementwise": 1}
    for p in torch_mlu.fusion.PATTERNS:
        alone = torch_mlu.fuse(model, [p]).fusion_matches
        assert alone == {q: (everything[q] if q == p else 0) for q in everything}, p
    # Without linear_act, the GELU joins the elementwise chain instead.
    no_linear = torch_mlu.fuse(model, ["conv_bn_act", "elementwise"])
    assert no_linear.fusion_matches == {"conv_bn_act": 1, "linear_act": 0, "elementwise": 1}
    assert torch_mlu.fusion_report(no_linear)["fused"][1]["program"] == "tanh(sigmoid(gelu($0)))"
    x = torch.randn(2, 3, 6, 6)
    for p in (None, ["elementwise"], "conv_bn_act"):
        torch.testing.assert_close(_run(torch_mlu.fuse(model, p), x), _run(model, x))
    assert torch_mlu.fuse(model, []).fusion_matches == {"conv_bn_act": 0, "linear_act": 0, "elementwise": 0}


def test_errors(dev):
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    with pytest.raises(ValueError, match=r"torch_mlu.fuse: the module is in training mode .* call module.eval\(\)"):
        torch_mlu.fuse(model)
    model.eval()
    with pytest.raises(ValueError, match=r"unknown pattern\(s\) \['conv_relu'\]"):
        torch_mlu.fuse(model, ["conv_relu"])
    with pytest.raises(TypeError, match=r"expected an nn.Module"):
        torch_mlu.fuse(lambda x: x)
    with pytest.raises(ValueError, match=r"expected a module returned by torch_mlu.fuse"):
        torch_mlu.fusion_report(model)
    gm = torch_mlu.fuse(model.to(dev))
    x = torch.randn(2, 4).to(dev)
    # The fused ops have no backward: with grad mode on and parameters requiring grad, a clear error.
    with pytest.raises(RuntimeError, match=r"mlu::linear_act: argument 'weight' requires grad.*torch.no_grad"):
        gm(x)
    with torch.inference_mode():
        torch.testing.assert_close(gm(x).cpu(), model(x).cpu(), rtol=1e-5, atol=1e-5)
    # A fused GraphModule can be fused again (nothing left to match) and the original is untouched.
    assert torch_mlu.fuse(gm.eval()).fusion_matches == {"conv_bn_act": 0, "linear_act": 0, "elementwise": 0}
    assert isinstance(model[1], nn.ReLU)


class BertBlock(nn.Module):
    """A small BERT-like block (fx-traceable): attention with a causal mask, Linear + GELU FFN,
    elementwise tail."""

    def __init__(self, hidden=32, heads=2, ffn=64, seq=7):
        super().__init__()
        self.heads, self.hd = heads, hidden // heads
        self.qkv, self.out = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.fc1, self.fc2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
        self.register_buffer("mask", torch.ones(seq, seq, dtype=torch.bool).triu(1))

    def forward(self, x):
        b, t, c = x.shape[0], x.shape[1], x.shape[2]
        qkv = self.qkv(x)
        q, k, v = [qkv[..., i * c:(i + 1) * c].reshape(b, t, self.heads, self.hd).transpose(1, 2) for i in range(3)]
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.hd)
        attn = F.softmax(scores.masked_fill(self.mask, -1e4), dim=-1)
        x = self.ln1(x + self.out(torch.matmul(attn, v).transpose(1, 2).reshape(b, t, c)))
        y = self.fc2(F.gelu(self.fc1(x))) * 0.5 + x
        return self.ln2(y * torch.sigmoid(y))


def test_bert_block_fused_and_compared(dev):
    torch.manual_seed(5)
    model = BertBlock().eval()
    gm = torch_mlu.fuse(model)
    assert gm.fusion_matches == {"conv_bn_act": 0, "linear_act": 1, "elementwise": 2}
    programs = sorted(d["program"] for d in torch_mlu.fusion_report(gm)["fused"] if d["pattern"] == "elementwise")
    assert programs == ["t0 = add(mul($0, 0.5), $1); mul(t0, sigmoid(t0))",
                        "t0 = div($0, 4.0); cast_like(where($1, -10000.0, t0), t0)"]  # masked_fill keeps the dtype
    x = torch.randn(2, 7, 32)
    expect = _run(model, x)
    torch.testing.assert_close(_run(gm, x), expect, rtol=1e-5, atol=1e-5)

    result = torch_mlu.fusion_compare(model, (x,))
    assert result["matches"] == gm.fusion_matches
    assert result["max_abs_diff"] < 1e-4
    total = result["total"]
    assert total["kernel_launches"]["fused"] < total["kernel_launches"]["unfused"]
    assert total["dram_bytes"]["fused"] < total["dram_bytes"]["unfused"]
    assert total["op_dram_bytes"]["fused"] < total["op_dram_bytes"]["unfused"]
    assert total["cycles"]["saved"] == total["cycles"]["unfused"] - total["cycles"]["fused"]
    assert set(result["patterns"]) == {"conv_bn_act", "linear_act", "elementwise"}
    lin = result["patterns"]["linear_act"]
    assert lin["matches"] == 1 and lin["delta"]["kernel_launches"]["saved"] >= 1
    assert "mlu::linear_act" in lin["fused"]["ops"] and "mlu::elementwise" not in lin["fused"]["ops"]
    ew = result["patterns"]["elementwise"]
    assert ew["matches"] == 2 and ew["fused"]["ops"]["mlu::elementwise"]["calls"] == 2
    assert result["patterns"]["conv_bn_act"]["delta"]["kernel_launches"]["saved"] == 0
    assert "mlu::linear_act" in result["fused"]["ops"] and "aten::gelu" in result["unfused"]["ops"]
