"""The fused ops torch.ops.mlu.conv_bn_act / linear_act / elementwise (torch_bridge/src/ops/
fused_ops.cpp over libmlu's fused.h): the device kernels against the CPU kernels (the unfused
reference with ordinary ops), against plain torch on the CPU and against the unfused sequence of
ops on the device; fp32 and fp16, odd sizes, strided inputs; the program format; errors; the cycle
report (one kernel instead of several, fewer DRAM bytes); inference-only autograd behaviour."""

import json

import pytest
import torch
import torch.nn.functional as F
import torch_mlu

ACTS = {
    "none": lambda y: y,
    "relu": F.relu,
    "relu6": F.relu6,
    "gelu": F.gelu,
    "gelu_tanh": lambda y: F.gelu(y, approximate="tanh"),
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
}

TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float16: dict(rtol=1e-2, atol=1e-2)}


def _report():
    torch_mlu.synchronize()
    return torch_mlu.cycle_report(format="json")


def _ops(report):
    return {o["name"]: o for o in report["ops"]}


def _bn_params(c, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(c, generator=g) + 0.5, torch.randn(c, generator=g), torch.randn(c, generator=g) * 0.3,
            torch.rand(c, generator=g) + 0.5)


def _to(dev, *ts):
    return [t.to(dev) if isinstance(t, torch.Tensor) else t for t in ts]


# ---- conv_bn_act ---------------------------------------------------------------------------------------

CONV_CASES = [
    # N, C, H, W, OC, k, stride, padding, dilation, groups, bias
    (1, 3, 9, 7, 5, 3, 1, 1, 1, 1, True),
    (2, 4, 11, 10, 6, 3, 2, 0, 1, 2, False),
    (1, 8, 7, 9, 8, 3, 1, 2, 2, 8, True),     # depthwise, dilated
    (2, 5, 6, 6, 7, 1, 1, 0, 1, 1, False),    # 1x1
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_bn_act_matches_cpu_and_unfused_device(dev, case, dtype):
    n, c, h, w, oc, k, s, p, d, g, has_bias = case
    torch.manual_seed(1)
    x = torch.randn(n, c, h, w).to(dtype)
    wt = (torch.randn(oc, c // g, k, k) * 0.3).to(dtype)
    b = torch.randn(oc).to(dtype) if has_bias else None
    gamma, beta, mean, var = _bn_params(oc)
    args = (1e-5, [s, s], [p, p], [d, d], g)
    for act in ("relu", "silu"):
        cpu = torch.ops.mlu.conv_bn_act(x, wt, b, gamma, beta, mean, var, *args, act)
        # The CPU kernel is the unfused computation in fp32.
        ref = ACTS[act](F.batch_norm(F.conv2d(x.float(), wt.float(), None if b is None else b.float(), s, p, d, g),
                                     mean, var, gamma, beta, False, 0.0, 1e-5)).to(dtype)
        torch.testing.assert_close(cpu, ref, **TOL[dtype])
        got = torch.ops.mlu.conv_bn_act(*_to(dev, x, wt, b, gamma, beta, mean, var), *args, act)
        assert got.device == dev and got.dtype == dtype and got.shape == ref.shape
        torch.testing.assert_close(got.cpu(), cpu, **TOL[dtype])
    # The unfused sequence on the device (BN tensors in x's dtype, as model.half() makes them).
    xd, wd, bd = _to(dev, x, wt, b)
    bn = [t.to(dtype).to(dev) for t in (mean, var, gamma, beta)]
    unfused = F.relu(F.batch_norm(F.conv2d(xd, wd, bd, s, p, d, g), *bn, False, 0.0, 1e-5))
    got = torch.ops.mlu.conv_bn_act(xd, wd, bd, bn[2], bn[3], bn[0], bn[1], *args, "relu")
    torch.testing.assert_close(got.cpu(), unfused.cpu(), **TOL[dtype])


@pytest.mark.parametrize("act", list(ACTS))
def test_conv_bn_act_activations(dev, act):
    torch.manual_seed(2)
    x, wt, b = torch.randn(1, 3, 6, 5) * 2, torch.randn(4, 3, 3, 3) * 0.5, torch.randn(4)
    gamma, beta, mean, var = _bn_params(4, seed=3)
    ref = ACTS[act](F.batch_norm(F.conv2d(x, wt, b, 1, 1), mean, var, gamma, beta, False, 0.0, 1e-3))
    args = (1e-3, [1, 1], [1, 1], [1, 1], 1, act)
    torch.testing.assert_close(torch.ops.mlu.conv_bn_act(x, wt, b, gamma, beta, mean, var, *args), ref)
    got = torch.ops.mlu.conv_bn_act(*_to(dev, x, wt, b, gamma, beta, mean, var), *args)
    torch.testing.assert_close(got.cpu(), ref, rtol=1e-4, atol=1e-4)


def test_conv_bn_act_without_or_with_partial_batch_norm(dev):
    torch.manual_seed(4)
    x, wt, b = torch.randn(2, 3, 5, 5), torch.randn(4, 3, 3, 3), torch.randn(4)
    gamma, beta, mean, var = _bn_params(4)
    args = (1e-5, [1, 1], [0, 0], [1, 1], 1)
    # No batch norm at all: conv + bias + activation.
    ref = torch.tanh(F.conv2d(x, wt, b))
    got = torch.ops.mlu.conv_bn_act(*_to(dev, x, wt, b), None, None, None, None, *args, "tanh")
    torch.testing.assert_close(got.cpu(), ref, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(torch.ops.mlu.conv_bn_act(x, wt, b, None, None, None, None, *args, "tanh"), ref)
    # Affine-free batch norm (weight/bias None), as BatchNorm2d(affine=False).
    ref = F.batch_norm(F.conv2d(x, wt, b), mean, var, None, None, False, 0.0, 1e-5)
    got = torch.ops.mlu.conv_bn_act(*_to(dev, x, wt, b), None, None, *_to(dev, mean, var), *args, "none")
    torch.testing.assert_close(got.cpu(), ref, rtol=1e-4, atol=1e-4)
    # Only gamma and beta (libmlu's definition: no normalisation without running_var).
    ref = F.conv2d(x, wt, b) * gamma.view(1, 4, 1, 1) + beta.view(1, 4, 1, 1)
    got = torch.ops.mlu.conv_bn_act(*_to(dev, x, wt, b, gamma, beta), None, None, *args, "none")
    torch.testing.assert_close(got.cpu(), ref, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(torch.ops.mlu.conv_bn_act(x, wt, b, gamma, beta, None, None, *args, "none"), ref)


def test_conv_bn_act_layouts_and_unbatched(dev):
    torch.manual_seed(5)
    x, wt = torch.randn(2, 4, 7, 6), torch.randn(3, 4, 3, 3)
    gamma, beta, mean, var = _bn_params(3)
    args = (1e-5, [1, 1], [1, 1], [1, 1], 1, "relu")
    ref = torch.ops.mlu.conv_bn_act(x, wt, None, gamma, beta, mean, var, *args)
    params = _to(dev, gamma, beta, mean, var)
    # channels_last input gives a channels_last result, as the convolution does.
    xcl = x.to(dev).to(memory_format=torch.channels_last)
    got = torch.ops.mlu.conv_bn_act(xcl, wt.to(dev), None, *params, *args)
    assert got.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(got.cpu(), ref, rtol=1e-4, atol=1e-4)
    # A non-contiguous (sliced) input.
    big = torch.randn(2, 8, 7, 6)
    big[:, ::2] = x
    got = torch.ops.mlu.conv_bn_act(big.to(dev)[:, ::2], wt.to(dev), None, *params, *args)
    torch.testing.assert_close(got.cpu(), ref, rtol=1e-4, atol=1e-4)
    # Unbatched [C, H, W], as conv2d accepts.
    got = torch.ops.mlu.conv_bn_act(x[0].to(dev), wt.to(dev), None, *params, *args)
    torch.testing.assert_close(got.cpu(), ref[0], rtol=1e-4, atol=1e-4)


def test_conv_bn_act_runs_one_op_with_fewer_bytes(dev):
    torch.manual_seed(6)
    x, wt = torch.randn(1, 8, 16, 16).to(dev), torch.randn(8, 8, 3, 3).to(dev)
    gamma, beta, mean, var = _to(dev, *_bn_params(8))
    torch_mlu.synchronize()
    torch_mlu.reset_stats()
    torch_mlu.flush_l2()
    F.relu(F.batch_norm(F.conv2d(x, wt, None, 1, 1), mean, var, gamma, beta, False, 0.0, 1e-5))
    unfused = _report()
    torch_mlu.reset_stats()
    torch_mlu.flush_l2()
    torch.ops.mlu.conv_bn_act(x, wt, None, gamma, beta, mean, var, 1e-5, [1, 1], [1, 1], [1, 1], 1, "relu")
    fused = _report()
    op = _ops(fused)["mlu::conv_bn_act"]
    assert op["calls"] == 1 and op["kernels"] >= 1
    assert fused["kernel_launches"] < unfused["kernel_launches"]
    dram = lambda r: r["memory_traffic"]["GDRAM"]["read_bytes"] + r["memory_traffic"]["GDRAM"]["write_bytes"]
    assert dram(fused) < dram(unfused)


def test_conv_bn_act_errors(dev):
    x, wt = torch.randn(1, 3, 5, 5).to(dev), torch.randn(4, 3, 3, 3).to(dev)
    gamma = torch.ones(4).to(dev)
    args = [1e-5, [1, 1], [0, 0], [1, 1], 1, "relu"]
    with pytest.raises(ValueError, match=r"mlu::conv_bn_act: unknown activation 'swish'"):
        torch.ops.mlu.conv_bn_act(x, wt, None, gamma, None, None, None, *args[:-1], "swish")
    with pytest.raises(RuntimeError, match=r"mlu::conv_bn_act: expected input .* to have 2 channels"):
        torch.ops.mlu.conv_bn_act(x, torch.randn(4, 2, 3, 3).to(dev), None, None, None, None, None, *args)
    with pytest.raises(RuntimeError, match=r"mlu::conv_bn_act: expected bn_weight of shape \[4\]"):
        torch.ops.mlu.conv_bn_act(x, wt, None, torch.ones(5).to(dev), None, None, None, *args)
    with pytest.raises(RuntimeError, match=r"mlu::conv_bn_act: expected bn_mean on .*got a tensor on cpu"):
        torch.ops.mlu.conv_bn_act(x, wt, None, None, None, torch.zeros(4), None, *args)
    with pytest.raises(RuntimeError, match=r"mlu::conv_bn_act: Input type \(Float\) and weight type \(Half\)"):
        torch.ops.mlu.conv_bn_act(x, wt.half(), None, None, None, None, None, *args)
    with pytest.raises(NotImplementedError, match=r"mlu::conv_bn_act: dtype Int"):
        torch.ops.mlu.conv_bn_act(x.int(), wt.int(), None, None, None, None, None, *args)
    with pytest.raises(RuntimeError, match=r"mlu::conv_bn_act: the kernel .* is larger than the padded input"):
        torch.ops.mlu.conv_bn_act(x[..., :2, :2], wt, None, None, None, None, None, *args)
    with pytest.raises(RuntimeError, match=r"mlu::conv_bn_act: eps must be finite"):
        torch.ops.mlu.conv_bn_act(x, wt, None, None, None, None, None, -1.0, *args[1:])
    # The device is still usable.
    out = torch.ops.mlu.conv_bn_act(x, wt, None, gamma, None, None, None, *args)
    torch.testing.assert_close(out.cpu(), F.relu(F.conv2d(x.cpu(), wt.cpu())), rtol=1e-4, atol=1e-4)


# ---- linear_act ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", [(7,), (5, 13), (2, 3, 13)])
def test_linear_act_matches_cpu_and_unfused_device(dev, shape, dtype):
    torch.manual_seed(7)
    k = shape[-1]
    x = torch.randn(*shape).to(dtype)
    w, b = (torch.randn(9, k) * 0.3).to(dtype), torch.randn(9).to(dtype)
    for act, bias in (("gelu", b), ("relu", None), ("gelu_tanh", b)):
        ref = ACTS[act](F.linear(x.float(), w.float(), None if bias is None else bias.float())).to(dtype)
        cpu = torch.ops.mlu.linear_act(x, w, bias, act)
        torch.testing.assert_close(cpu, ref, **TOL[dtype])
        got = torch.ops.mlu.linear_act(*_to(dev, x, w, bias), act)
        assert got.dtype == dtype and got.shape == ref.shape
        torch.testing.assert_close(got.cpu(), ref, **TOL[dtype])
    unfused = F.gelu(F.linear(*_to(dev, x, w, b)))
    torch.testing.assert_close(torch.ops.mlu.linear_act(*_to(dev, x, w, b), "gelu").cpu(), unfused.cpu(),
                               **TOL[dtype])


@pytest.mark.parametrize("act", list(ACTS))
def test_linear_act_activations_and_strided_operands(dev, act):
    torch.manual_seed(8)
    xt, wt, b = torch.randn(11, 6) * 2, torch.randn(10, 5), torch.randn(5)
    x, w = xt.t()[:, :10], wt.t()  # transposed views: x [6, 10] (sliced), w [5, 10]
    ref = ACTS[act](F.linear(x, w, b))
    got = torch.ops.mlu.linear_act(xt.to(dev).t()[:, :10], wt.to(dev).t(), b.to(dev), act)
    torch.testing.assert_close(got.cpu(), ref, rtol=1e-4, atol=1e-4)


def test_linear_act_report_and_errors(dev):
    x, w, b = torch.randn(4, 8).to(dev), torch.randn(6, 8).to(dev), torch.randn(6).to(dev)
    torch_mlu.synchronize()
    torch_mlu.reset_stats()
    torch.ops.mlu.linear_act(x, w, b, "relu")
    op = _ops(_report())["mlu::linear_act"]
    assert op["calls"] == 1 and op["kernels"] >= 1 and op["macs"] == 4 * 6 * 8
    with pytest.raises(RuntimeError, match=r"mlu::linear_act: mat1 and mat2 shapes cannot be multiplied"):
        torch.ops.mlu.linear_act(x, torch.randn(6, 7).to(dev), None, "relu")
    with pytest.raises(RuntimeError, match=r"mlu::linear_act: expected bias of shape \[6\]"):
        torch.ops.mlu.linear_act(x, w, torch.randn(5).to(dev), "relu")
    with pytest.raises(ValueError, match=r"mlu::linear_act: unknown activation 'elu'"):
        torch.ops.mlu.linear_act(x, w, b, "elu")
    with pytest.raises(RuntimeError, match=r"mlu::linear_act: expected weight on .*got a tensor on cpu"):
        torch.ops.mlu.linear_act(x, w.cpu(), b, "relu")
    empty = torch.ops.mlu.linear_act(torch.randn(0, 8).to(dev), w, b, "relu")
    assert empty.shape == (0, 6)


# ---- elementwise ----------------------------------------------------------------------------------------

def _eager(program):
    """Plain torch chains on the CPU, independent of the op's CPU kernel (the oracle)."""
    return {
        "relu(add($0, $1))": lambda a, b: torch.relu(a + b),
        "t = add($0, $1); mul(t, sigmoid(t))": lambda a, b: (a + b) * torch.sigmoid(a + b),
        "sub(2.0, mul($0, $1))": lambda a, b: 2.0 - a * b,
        "add($0, $1, 3)": lambda a, b: torch.add(a, b, alpha=3),
        "where(gt($0, 0.5), $1, neg($0))": lambda a, b: torch.where(a > 0.5, b, -a),
        "gelu_tanh(div($0, maximum($1, 0.25)))": lambda a, b: F.gelu(a / torch.clamp_min(b, 0.25), approximate="tanh"),
        "tanh(exp(neg(abs($0))))": lambda a: torch.tanh(torch.exp(-a.abs())),
        "rsqrt(add(square($0), 1e-05))": lambda a: torch.rsqrt(a * a + 1e-5),
    }[program]


BINARY_PROGRAMS = ["relu(add($0, $1))", "t = add($0, $1); mul(t, sigmoid(t))", "sub(2.0, mul($0, $1))",
                   "add($0, $1, 3)", "where(gt($0, 0.5), $1, neg($0))", "gelu_tanh(div($0, maximum($1, 0.25)))"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("program", BINARY_PROGRAMS)
def test_elementwise_programs_broadcast(dev, program, dtype):
    torch.manual_seed(9)
    a, b = torch.randn(3, 5, 7).to(dtype), torch.randn(5, 1).abs().to(dtype)
    expect = _eager(program)(a.float(), b.float()).to(dtype)
    cpu = torch.ops.mlu.elementwise([a, b], program)
    got = torch.ops.mlu.elementwise([a.to(dev), b.to(dev)], program)
    assert got.dtype == dtype and got.shape == (3, 5, 7)
    torch.testing.assert_close(cpu, expect, **TOL[dtype])
    torch.testing.assert_close(got.cpu(), cpu, **TOL[dtype])
    # The unfused chain on the device.
    unfused = _eager(program)(a.to(dev), b.to(dev)) if dtype == torch.float32 else None
    if unfused is not None:
        torch.testing.assert_close(got.cpu(), unfused.cpu(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("program", ["tanh(exp(neg(abs($0))))", "rsqrt(add(square($0), 1e-05))"])
def test_elementwise_unary_chains_on_strided_inputs(dev, program):
    torch.manual_seed(10)
    base = torch.randn(6, 9)
    a = base.t()[1:, ::2]  # transposed and sliced
    got = torch.ops.mlu.elementwise([base.to(dev).t()[1:, ::2]], program)
    torch.testing.assert_close(got.cpu(), _eager(program)(a), rtol=1e-5, atol=1e-5)
    assert got.shape == a.shape


def test_elementwise_result_dtypes_follow_torch(dev):
    i32 = torch.arange(-3, 5, dtype=torch.int32)
    f16 = torch.randn(8).half()
    f32 = torch.randn(8)
    cases = [
        ([i32], "div($0, 2)", lambda a: a / 2),                          # int / int -> float32
        ([i32], "add(mul($0, 3), 1)", lambda a: a * 3 + 1),              # stays int32
        ([i32], "mul($0, 1.5)", lambda a: a * 1.5),                      # int * float -> float32
        ([f16], "add(mul($0, 2.0), 1)", lambda a: a * 2.0 + 1),          # Python scalars do not promote fp16
        ([f16, f32], "relu(add($0, $1))", lambda a, b: torch.relu(a + b)),  # fp16 + fp32 -> fp32
        ([f16], "mul($0, 2.0:f32)", lambda a: a * torch.tensor(2.0)),     # zero-dim fp32 tensor: fp16
        ([f32], "cast(gt($0, 0), f16)", lambda a: (a > 0).half()),
        ([f32, i32], "cast_like(add($0, 1), $1)", lambda a, b: (a + 1).to(torch.int32)),
        ([f32], "logical_not(logical_or(lt($0, -1), ge($0, 1)))", lambda a: ~((a < -1) | (a >= 1))),
        ([f32], "where(ne($0, $0), 0.0, minimum($0, inf))", lambda a: a),
    ]
    for inputs, program, fn in cases:
        expect = fn(*inputs)  # torch's own chain on the CPU: its values and its dtype
        cpu = torch.ops.mlu.elementwise(inputs, program)
        got = torch.ops.mlu.elementwise([t.to(dev) for t in inputs], program)
        assert cpu.dtype == expect.dtype and got.dtype == expect.dtype, program
        torch.testing.assert_close(cpu, expect, rtol=1e-3, atol=1e-3, msg=program)
        torch.testing.assert_close(got.cpu(), expect, rtol=1e-3, atol=1e-3, msg=program)


def test_elementwise_scalars_empty_and_layout(dev):
    torch.manual_seed(11)
    a = torch.randn(2, 3, 4, 5)
    s0 = torch.tensor(0.5)
    # A zero-dim CPU tensor is a scalar operand (uploaded), as in torch's TensorIterator.
    got = torch.ops.mlu.elementwise([a.to(dev), s0], "mul(add($0, $1), $1)")
    torch.testing.assert_close(got.cpu(), (a + 0.5) * 0.5)
    # Empty tensors: an empty result, no kernel.
    e = torch.ops.mlu.elementwise([torch.randn(0, 3).to(dev), torch.randn(3).to(dev)], "relu(add($0, $1))")
    assert e.shape == (0, 3)
    # A channels_last input of the result's shape gives a channels_last result.
    cl = a.to(dev).to(memory_format=torch.channels_last)
    got = torch.ops.mlu.elementwise([cl, torch.randn(5).to(dev)], "sigmoid(sub($0, $1))")
    assert got.is_contiguous(memory_format=torch.channels_last)


def test_elementwise_runs_one_kernel(dev):
    a, b = torch.randn(64, 33).to(dev), torch.randn(33).to(dev)
    torch_mlu.synchronize()
    torch_mlu.reset_stats()
    torch_mlu.flush_l2()  # both runs from a cold L2 (tiny's l2.cache): nothing served from before
    t = a * 0.5 + b
    t * torch.sigmoid(t)
    unfused = _report()
    torch_mlu.reset_stats()
    torch_mlu.flush_l2()
    torch.ops.mlu.elementwise([a, b], "t = add(mul($0, 0.5), $1); mul(t, sigmoid(t))")
    fused = _report()
    op = _ops(fused)["mlu::elementwise"]
    assert op["calls"] == 1 and op["kernels"] == 1
    assert unfused["kernel_launches"] == 4 and fused["kernel_launches"] == 1
    # Minimum: inputs read once and the output written once, (64*33 + 33 + 64*33) floats; the
    # tiles' re-reads of the broadcast row hit in the L2 and add no DRAM bytes.
    assert op["min_dram_bytes"] == 4 * (64 * 33 * 2 + 33)
    assert op["min_dram_bytes"] <= op["dram_bytes"] < sum(o["dram_bytes"] for o in unfused["ops"])


@pytest.mark.parametrize("program,message", [
    ("foo($0)", r"unknown op 'foo'"),
    ("relu($2)", r"input \$2 does not exist \(1 inputs given\)"),
    ("relu($0) extra", r"unexpected 'e' after the output expression"),
    ("add(1, 2)", r"add: needs at least one tensor operand"),
    ("add($0, $0, $0)", r"add: alpha \(the third operand\) must be a number literal"),
    ("mul($0)", r"mul takes 2 operands, got 1"),
    ("cast($0, f64)", r"cast: unknown dtype 'f64'"),
    ("t = relu($0); sigmoid(u)", r"unknown name 'u'"),
    ("relu = neg($0); relu", r"'relu' is reserved"),
    ("relu(add($0, 1)", r"expected '\)'"),
    ("cast_like($0, 2)", r"cast_like: the second operand must be a tensor"),
])
def test_elementwise_program_errors(dev, program, message):
    x = torch.randn(3).to(dev)
    with pytest.raises(ValueError, match=r"mlu::elementwise: program .*" + message):
        torch.ops.mlu.elementwise([x], program)
    with pytest.raises(ValueError, match=message):
        torch.ops.mlu.elementwise([x.cpu()], program)


def test_elementwise_errors(dev):
    x = torch.randn(3, 4).to(dev)
    with pytest.raises(ValueError, match=r"input \$1 is not used"):
        torch.ops.mlu.elementwise([x, x], "relu($0)")
    with pytest.raises(RuntimeError, match=r"(?i)size|broadcast|shape"):
        torch.ops.mlu.elementwise([x, torch.randn(5).to(dev)], "add($0, $1)")
    with pytest.raises(RuntimeError, match=r"mlu::elementwise: expected input 1 on .*got a tensor on cpu"):
        torch.ops.mlu.elementwise([x, torch.randn(3, 4)], "add($0, $1)")
    with pytest.raises(NotImplementedError, match=r"no tensor arguments"):  # the dispatcher's own check
        torch.ops.mlu.elementwise([], "relu($0)")
    got = torch.ops.mlu.elementwise([x], "relu(neg($0))")  # still usable
    torch.testing.assert_close(got.cpu(), torch.relu(-x.cpu()))


def test_fused_ops_are_inference_only(dev):
    w = torch.randn(6, 8, requires_grad=True)
    x = torch.randn(4, 8)
    for t in (w, w.detach().to(dev).requires_grad_()):
        xx = x.to(t.device)
        with pytest.raises(RuntimeError, match=r"mlu::linear_act: argument 'weight' requires grad.*torch.no_grad"):
            torch.ops.mlu.linear_act(xx, t, None, "relu")
        with torch.no_grad():
            assert torch.ops.mlu.linear_act(xx, t, None, "relu").shape == (4, 6)
        with torch.inference_mode():
            assert torch.ops.mlu.linear_act(xx, t, None, "relu").shape == (4, 6)
    with pytest.raises(RuntimeError, match=r"mlu::elementwise: argument 'inputs' requires grad"):
        torch.ops.mlu.elementwise([torch.randn(3, requires_grad=True).to(dev)], "relu(neg($0))")
