"""Elementwise ATen kernels over libmlu (torch_bridge/src/ops/elementwise_ops.cpp): arithmetic,
activations and their gradients, comparisons, logic, where, clamp, masked_fill, addcmul/addcdiv,
fill_ and the strided/converting device copies behind copy_. Every variant (functional, in-place,
out=) is compared with torch's CPU result."""

import warnings

import pytest
import torch

import torch_mlu
from conftest import run_python

F32, F16, I32, I64, I8, B = torch.float32, torch.float16, torch.int32, torch.int64, torch.int8, torch.bool

# fp16: libmlu computes in fp32 and rounds once; torch's CPU kernels round some intermediates.
TOL = {F32: dict(rtol=1e-5, atol=1e-5), F16: dict(rtol=2e-3, atol=2e-3)}


def sample(shape, dtype, seed=0, low=-3.0, high=3.0):
    g = torch.Generator().manual_seed(seed)
    if dtype == B:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g) * (high - low) + low).to(dtype)
    return torch.randint(int(low) - 5, int(high) + 6, shape, generator=g).to(dtype)


def check(got, expected, tol=None):
    assert isinstance(got, torch.Tensor) and got.device.type == "mlu", got
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    kw = tol or TOL.get(expected.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(got.cpu(), expected, equal_nan=True, **kw)


def ref(fn, *args, **kw):
    """fn on CPU over contiguous copies of the tensor arguments (torch 1.13's CPU gelu_backward
    mishandles mixed strides); fp16 computed in fp32 and rounded where the CPU lacks a Half kernel."""
    args = [a.contiguous() if isinstance(a, torch.Tensor) else a for a in args]
    try:
        return fn(*args, **kw)
    except RuntimeError as e:
        if "'Half'" not in str(e):
            raise
    up = [a.float() if isinstance(a, torch.Tensor) and a.dtype == F16 else a for a in args]
    r = fn(*up, **kw)
    return r.half() if r.dtype == F32 else r


def layouts(shape, dtype, seed=0, **kw):
    """(cpu, device) pairs: contiguous, transposed, sliced."""
    x = sample(shape, dtype, seed, **kw)
    t = sample(shape[::-1], dtype, seed + 1, **kw).t()
    big = sample((shape[0], shape[1] * 2 + 1), dtype, seed + 2, **kw)[:, 1::2]
    return [(c, c.to(dev_of())) for c in (x, t, big)]


def dev_of():
    return torch.device("mlu", 0)


def ran_on_device(op_name, fn):
    torch_mlu.reset_stats()
    fn()
    torch_mlu.synchronize()
    ops = {o["name"]: o for o in torch_mlu.cycle_report(format="json")["ops"]}
    assert op_name in ops and ops[op_name]["kernels"] > 0, sorted(ops)
    assert torch_mlu.cpu_fallback_counts() == {}


# ---- binary arithmetic -----------------------------------------------------------------------------

BINARY = {
    "add": (torch.add, lambda a, b: a.add_(b), True),
    "sub": (torch.sub, lambda a, b: a.sub_(b), True),
    "mul": (torch.mul, lambda a, b: a.mul_(b), False),
    "div": (torch.div, lambda a, b: a.div_(b), False),
    "maximum": (torch.maximum, None, False),
    "minimum": (torch.minimum, None, False),
}


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64], ids=str)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_variants(dev, name, dtype):
    fn, inplace, has_alpha = BINARY[name]
    for (a, da), (b, db) in zip(layouts((5, 7), dtype), layouts((5, 7), dtype, seed=10)):
        if name == "div" and not dtype.is_floating_point:
            b[b == 0] = 1
            db = b.to(dev)
        check(fn(da, db), fn(a, b))
        check(fn(da, db[0]), fn(a, b[0]))            # broadcast (row)
        check(fn(da[:, :1], db), fn(a[:, :1], b))    # broadcast (column, first operand)
        out = torch.empty(3, device=dev, dtype=fn(a, b).dtype)  # resized (with torch's warning)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(da, db, out=out)
        check(out, fn(a, b))
        if inplace and (dtype.is_floating_point or name != "div"):
            d2 = da.clone()
            r = inplace(d2, db)
            assert r is d2
            check(d2, inplace(a.clone(), b))
        if has_alpha:
            alpha = 2 if not dtype.is_floating_point else 0.5
            check(fn(da, db, alpha=alpha), fn(a, b, alpha=alpha))
    # scalars: Python numbers (Scalar overloads), CPU 0-dim tensors on either side
    a, da = layouts((4, 6), dtype)[1]
    s = 3 if not dtype.is_floating_point else 1.5
    if name in ("add", "sub", "mul", "div"):
        check(fn(da, s), fn(a, s))
        aten_op, aten_inplace = getattr(torch.ops.aten, name), getattr(torch.ops.aten, name + "_")
        expected = aten_op.Scalar(a, s)
        check(aten_op.Scalar(da, s), expected)
        out = torch.empty(0, dtype=expected.dtype, device=dev)
        check(aten_op.Scalar_out(da, s, out=out), expected)
        if expected.dtype == dtype:
            check(aten_inplace.Scalar(da.clone(), s), expected)
    for cpu_scalar in (torch.tensor(s), torch.tensor(2.5), torch.tensor(2, dtype=I32)):
        check(fn(da, cpu_scalar), fn(a, cpu_scalar))
        check(fn(cpu_scalar, da), fn(cpu_scalar, a))
    if has_alpha:
        check(fn(torch.tensor(s), da, alpha=2), fn(torch.tensor(s), a, alpha=2))
        check(fn(da, torch.tensor(s), alpha=2), fn(a, torch.tensor(s), alpha=2))
    # empty tensors
    e = torch.empty(0, 3, dtype=dtype)
    check(fn(e.to(dev), e.to(dev)), fn(e, e))


def test_binary_type_promotion_and_out_casts(dev):
    i = sample((3, 4), I32)
    f = sample((3, 4), F32, seed=1)
    h = sample((3, 4), F16, seed=2)
    di, df, dh = i.to(dev), f.to(dev), h.to(dev)
    check(di + df, i + f)
    check(dh * df, h * f)
    check(dh * torch.tensor(2.0), h * torch.tensor(2.0))      # 0-dim fp32 does not promote fp16
    check(dh * torch.tensor(2.0).to(dev), h * torch.tensor(2.0))
    check(di / di.clamp(min=1), i / i.clamp(min=1))           # int / int -> float
    check(di / 4, i / 4)
    check(di + 2.5, i + 2.5)
    check(sample((5,), B).to(dev) + sample((5,), B, 1).to(dev), sample((5,), B) + sample((5,), B, 1))
    check(sample((5,), B).to(dev) * 3, sample((5,), B) * 3)
    # out= with another dtype: computed in the common dtype, then cast (incl. fp64)
    out = torch.empty(3, 4, dtype=torch.float64, device=dev)
    torch.add(df, df, out=out)
    check(out, torch.add(f, f, out=torch.empty(3, 4, dtype=torch.float64)))
    out = torch.empty(3, 4, dtype=F32, device=dev)
    torch.mul(di, di, out=out)
    check(out, (i * i).float())
    with pytest.raises(RuntimeError, match=r"aten::add\.out: result type Float can't be cast to the desired output type Int"):
        torch.add(df, df, out=torch.empty(3, 4, dtype=I32, device=dev))
    with pytest.raises(RuntimeError, match=r"aten::add_\.Tensor: result type Float can't be cast"):
        di.add_(1.5)
    with pytest.raises(RuntimeError, match=r"aten::add_\.Tensor: result type Float can't be cast"):
        di.add_(df)


def test_rsub_and_bool_subtraction(dev):
    a, da = layouts((3, 5), F32)[1]
    b, db = layouts((3, 5), F32, seed=3)[0]
    check(torch.rsub(da, db), torch.rsub(a, b))
    check(torch.rsub(da, db, alpha=3), torch.rsub(a, b, alpha=3))
    check(torch.rsub(da, 2.0), torch.rsub(a, 2.0))
    check(torch.rsub(da, 2.0, alpha=0.5), torch.rsub(a, 2.0, alpha=0.5))
    check(1 - da, 1 - a)
    out = torch.empty(0, device=dev)
    torch.ops.aten.rsub.Tensor_out(da, db, alpha=2, out=out)
    check(out, torch.rsub(a, b, alpha=2))
    i = sample((4,), I32)
    check(torch.rsub(i.to(dev), 7, alpha=2), torch.rsub(i, 7, alpha=2))
    db_ = torch.ones(3, dtype=B, device=dev)
    with pytest.raises(RuntimeError, match=r"aten::sub\.Tensor: Subtraction, the `-` operator, with two bool"):
        db_ - db_
    with pytest.raises(RuntimeError, match=r"aten::rsub\.Scalar: Subtraction, the `-` operator, with a bool"):
        torch.rsub(db_, 1)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        torch.add(i.to(dev), i.to(dev), alpha=0.5)


def test_div_rounding_modes(dev):
    a, da = layouts((3, 4), F32)[0]
    check(torch.div(da, 1.5, rounding_mode=None), torch.div(a, 1.5))
    check(torch.div(da, da + 10, rounding_mode=None), torch.div(a, a + 10))
    for mode in ("trunc", "floor"):  # one program each (program_ops.cpp's rounded_division)
        check(torch.div(da, da + 10, rounding_mode=mode), torch.div(a, a + 10, rounding_mode=mode))
        check(torch.div(da, 1.5, rounding_mode=mode), torch.div(a, 1.5, rounding_mode=mode))
        check(da.clone().div_(2, rounding_mode=mode), a.clone().div_(2, rounding_mode=mode))
    with pytest.raises(RuntimeError, match="expected rounding_mode to be one of None, 'trunc', or 'floor'"):
        torch.div(da, da, rounding_mode="up")
    check(da + 1, a + 1)  # still usable


def test_pow_variants(dev):
    a, da = layouts((4, 5), F32, low=0.1, high=3.0)[1]
    e, de = layouts((4, 5), F32, seed=5, low=-2, high=2)[0]
    check(torch.pow(da, de), torch.pow(a, e))
    check(da.clone().pow_(de), a.clone().pow_(e))
    out = torch.empty(0, device=dev)
    check(torch.pow(da, de, out=out), torch.pow(a, e))
    for s in (2, 3, 0.5, -1, -0.5, 2.5, 0, 1):
        check(torch.pow(da, s), torch.pow(a, s), dict(rtol=1e-5, atol=1e-5))
        check(da.clone().pow_(s), a.clone().pow_(s), dict(rtol=1e-5, atol=1e-5))
    check(torch.pow(2.0, de), torch.pow(2.0, e))
    check(torch.pow(1, de), torch.pow(1, e))
    check(torch.pow(2.0, de, out=torch.empty(0, device=dev)), torch.pow(2.0, e))
    h = a.half()
    check(torch.pow(h.to(dev), 2), torch.pow(h, 2))
    i = torch.tensor([2, 3, -4, 0, 5], dtype=I32)
    ie = torch.tensor([-1, 0, 2, 3, 1], dtype=I32)
    check(torch.pow(i.to(dev), ie.to(dev)), torch.pow(i, ie))
    check(torch.pow(i.to(dev), 3), torch.pow(i, 3))
    check(torch.pow(2, ie.to(dev)), torch.pow(2, ie))
    check(torch.pow(i.to(dev), 0.5), torch.pow(i, 0.5))  # int ** float -> float
    with pytest.raises(RuntimeError, match=r"aten::pow\.Tensor_Scalar: Integers to negative integer powers"):
        torch.pow(i.to(dev), -1)


# ---- unary -------------------------------------------------------------------------------------------

UNARY = {
    "neg": (torch.neg, {}),
    "abs": (torch.abs, {}),
    "relu": (torch.relu, {}),
    "exp": (torch.exp, {}),
    "log": (torch.log, dict(low=0.05, high=4)),
    "sqrt": (torch.sqrt, dict(low=0.0, high=4)),
    "rsqrt": (torch.rsqrt, dict(low=0.05, high=4)),
    "sigmoid": (torch.sigmoid, {}),
    "tanh": (torch.tanh, {}),
    "reciprocal": (torch.reciprocal, dict(low=0.2, high=3)),
    "silu": (torch.nn.functional.silu, {}),
    "gelu": (torch.nn.functional.gelu, {}),
    "gelu_tanh": (lambda x, **kw: torch.nn.functional.gelu(x, approximate="tanh", **kw), {}),
}
INPLACE = {"neg": "neg_", "abs": "abs_", "relu": "relu_", "exp": "exp_", "log": "log_", "sqrt": "sqrt_",
           "rsqrt": "rsqrt_", "sigmoid": "sigmoid_", "tanh": "tanh_", "reciprocal": "reciprocal_"}


@pytest.mark.parametrize("dtype", [F32, F16], ids=str)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_float(dev, name, dtype):
    fn, rng = UNARY[name]
    for x, dx in layouts((6, 9), dtype, seed=3, **rng):
        expected = ref(fn, x)
        check(fn(dx), expected)
        if name in INPLACE:
            d2 = dx.clone()
            assert getattr(d2, INPLACE[name])() is d2
            check(d2, expected)
    x, dx = layouts((6, 9), dtype, seed=4, **rng)[0]
    if name not in ("silu", "gelu", "gelu_tanh", "relu"):
        out = torch.empty(0, dtype=dtype, device=dev)
        getattr(torch, name)(dx, out=out)
        check(out, ref(fn, x))
    e = torch.empty(0, 4, dtype=dtype)
    check(fn(e.to(dev)), ref(fn, e))


def test_unary_integer_and_bool(dev):
    i = sample((5, 6), I32)
    di = i.to(dev)
    for fn in (torch.neg, torch.abs, torch.relu):
        check(fn(di), fn(i))
        check(fn(di.t()), fn(i.t()))
    check(torch.relu(i.long().to(dev)), torch.relu(i.long()))
    for fn in (torch.exp, torch.sigmoid, torch.tanh, torch.reciprocal):  # int -> float
        check(fn(di), fn(i))
    b = sample((7,), B)
    check(torch.exp(b.to(dev)), torch.exp(b))
    with pytest.raises(RuntimeError, match=r"aten::neg: Negation, the `-` operator, on a bool tensor"):
        -b.to(dev)
    with pytest.raises(RuntimeError, match=r"aten::relu: Boolean inputs not supported for relu"):
        torch.relu(b.to(dev))
    with pytest.raises(RuntimeError, match=r"aten::silu: not implemented for 'Int'"):
        torch.nn.functional.silu(di)
    with pytest.raises(RuntimeError, match=r"aten::exp_: result type Float can't be cast"):
        di.clone().exp_()
    # out= variants of the composite-in-1.13 ops
    out = torch.empty(0, dtype=I32, device=dev)
    torch.abs(di, out=out)
    check(out, torch.abs(i))
    out = torch.empty(0, dtype=F32, device=dev)
    torch.exp(di, out=out)
    check(out, torch.exp(i))


def test_gelu_silu_variants(dev):
    x, dx = layouts((5, 8), F32, seed=7, low=-6, high=6)[1]
    for approx in ("none", "tanh"):
        F = torch.nn.functional
        check(F.gelu(dx, approximate=approx), F.gelu(x, approximate=approx))
        check(torch.ops.aten.gelu_(dx.clone(), approximate=approx), F.gelu(x, approximate=approx))
        out = torch.empty(0, device=dev)
        torch.ops.aten.gelu.out(dx, approximate=approx, out=out)
        check(out, F.gelu(x, approximate=approx))
    check(torch.nn.functional.silu(dx.clone(), inplace=True), torch.nn.functional.silu(x))
    out = torch.empty(0, device=dev)
    torch.ops.aten.silu.out(dx, out=out)
    check(out, torch.nn.functional.silu(x))
    out = torch.empty(0, device=dev)
    torch.ops.aten.relu.out(dx, out=out)
    check(out, torch.relu(x))
    with pytest.raises(RuntimeError, match=r"aten::gelu: approximate argument must be either none or tanh"):
        torch.nn.functional.gelu(dx, approximate="erf")


# ---- activation gradients ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [F32, F16], ids=str)
def test_activation_backward_ops(dev, dtype):
    g, dg = layouts((4, 7), dtype, seed=8)[1]
    x, dx = layouts((4, 7), dtype, seed=9)[0]
    y = torch.sigmoid(x.float()).to(dtype)
    aten = torch.ops.aten
    cases = [
        (aten.threshold_backward, (g, x, 0.0)), (aten.threshold_backward, (g, x, 0.5)),
        (aten.sigmoid_backward, (g, y)), (aten.tanh_backward, (g, y)),
        (aten.silu_backward, (g, x)),
    ]
    for op, args in cases:
        dargs = tuple(a.to(dev) if isinstance(a, torch.Tensor) else a for a in args)
        expected = ref(op, *args)
        check(op(*dargs), expected)
        out = torch.empty(0, dtype=dtype, device=dev)
        op(*dargs, grad_input=out)
        check(out, expected)
    for approx in ("none", "tanh"):
        expected = ref(aten.gelu_backward, g, x, approximate=approx)
        check(aten.gelu_backward(dg, dx, approximate=approx), expected)
        out = torch.empty(0, dtype=dtype, device=dev)
        aten.gelu_backward(dg, dx, approximate=approx, grad_input=out)
        check(out, expected)
    check(aten.threshold_backward(dg, dx[0], 0.0), ref(aten.threshold_backward, g, x[0], 0.0))  # broadcast
    i = sample((6,), I32)
    check(aten.threshold_backward(i.to(dev), i.to(dev), 1), aten.threshold_backward(i, i, 1))
    with pytest.raises(RuntimeError, match=r"aten::sigmoid_backward: not implemented for 'Int'"):
        aten.sigmoid_backward(i.to(dev), i.to(dev))


def test_autograd_through_activations(dev):
    x = sample((3, 6), F32, seed=11)
    for fn in (torch.relu, torch.sigmoid, torch.tanh, torch.nn.functional.gelu, torch.nn.functional.silu,
               lambda t: torch.nn.functional.gelu(t, approximate="tanh"), lambda t: (t * t + 2 * t) / 3):
        cx = x.clone().requires_grad_()
        fn(cx).backward(torch.ones_like(x))
        dx = x.to(dev).requires_grad_()
        fn(dx).backward(torch.ones(3, 6, device=dev))
        check(dx.grad, cx.grad)


# ---- comparisons and logic ----------------------------------------------------------------------------

CMP = ["eq", "ne", "lt", "le", "gt", "ge"]


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64], ids=str)
def test_comparisons(dev, dtype):
    a = sample((5, 6), dtype, low=-2, high=2)
    b = sample((5, 6), dtype, seed=1, low=-2, high=2)
    b[0] = a[0]  # some equal elements
    da, db = a.to(dev), b.to(dev)
    s = 1 if not dtype.is_floating_point else 0.5
    for name in CMP:
        fn = getattr(torch, name)
        check(fn(da, db), fn(a, b))
        check(fn(da.t(), db.t()), fn(a.t(), b.t()))
        check(fn(da, db[1]), fn(a, b[1]))
        check(fn(da, s), fn(a, s))
        check(fn(da, torch.tensor(s)), fn(a, torch.tensor(s)))
        check(fn(torch.tensor(s), da), fn(torch.tensor(s), a))
        out = torch.empty(0, dtype=B, device=dev)
        check(fn(da, db, out=out), fn(a, b))
        out = torch.empty(5, 6, dtype=F32, device=dev)  # any out dtype: 1/0
        fn(da, s, out=out)
        check(out, fn(a, s, out=torch.empty(5, 6)))
        out = torch.empty(5, 6, dtype=torch.uint8, device=dev)
        fn(da, db, out=out)
        check(out, fn(a, b).to(torch.uint8))
        d2 = da.clone()
        getattr(d2, name + "_")(db)
        check(d2, getattr(a.clone(), name + "_")(b))
        d2 = da.clone()
        getattr(d2, name + "_")(s)
        check(d2, getattr(a.clone(), name + "_")(s))


def test_comparisons_round_the_scalar_like_torch(dev):
    h = torch.tensor([0.1, 0.2, 0.3, 1e4], dtype=F16)
    for s in (0.1, 0.3, 1e4 + 1, 7e4):
        for name in CMP:
            check(getattr(torch, name)(h.to(dev), s), getattr(torch, name)(h, s))
    i = torch.tensor([1, 2, 3], dtype=I32)
    for name in CMP:
        check(getattr(torch, name)(i.to(dev), 2.5), getattr(torch, name)(i, 2.5))
    x = torch.tensor([float("nan"), 1.0, -float("inf")])
    for name in CMP:
        check(getattr(torch, name)(x.to(dev), x.to(dev)), getattr(torch, name)(x, x))


def test_logical_ops(dev):
    a = sample((4, 5), I32, low=-1, high=1)
    b = sample((4, 5), F32, seed=3)
    b[1] = 0
    da, db = a.to(dev), b.to(dev)
    for name in ("logical_and", "logical_or", "logical_xor"):
        fn = getattr(torch, name)
        check(fn(da, db), fn(a, b))
        check(fn(da.t(), db.t()), fn(a.t(), b.t()))
        check(fn(da, db[0]), fn(a, b[0]))
        check(fn(da, torch.tensor(0.0)), fn(a, torch.tensor(0.0)))
        out = torch.empty(0, dtype=F32, device=dev)
        check(fn(da, db, out=out), fn(a, b, out=torch.empty(0)))
        d2 = db.clone()
        getattr(d2, name + "_")(da)
        check(d2, getattr(b.clone(), name + "_")(a))
    check(torch.logical_not(da), torch.logical_not(a))
    check(torch.logical_not(db.t()), torch.logical_not(b.t()))
    check(db.clone().logical_not_(), b.clone().logical_not_())
    out = torch.empty(0, dtype=I32, device=dev)
    check(torch.logical_not(db, out=out), torch.logical_not(b, out=torch.empty(0, dtype=I32)))
    m = sample((9,), B)
    check(torch.logical_not(m.to(dev)), torch.logical_not(m))


# ---- where, masked_fill, clamp, addcmul/addcdiv ---------------------------------------------------------

def test_where(dev):
    c = sample((4, 6), B)
    a = sample((4, 6), F32, seed=1)
    b = sample((6,), F32, seed=2)
    dc, da, db = c.to(dev), a.to(dev), b.to(dev)
    check(torch.where(dc, da, db), torch.where(c, a, b))
    check(torch.where(dc.t(), da.t(), 0.5), torch.where(c.t(), a.t(), 0.5))
    check(torch.where(dc, 2, da), torch.where(c, 2, a))
    check(torch.where(dc, da, torch.tensor(3.0)), torch.where(c, a, torch.tensor(3.0)))
    i = sample((4, 6), I32)
    check(torch.where(dc, i.to(dev), da), torch.where(c, i, a))     # promotion
    check(torch.where(dc, i.to(dev), 2.5), torch.where(c, i, 2.5))
    out = torch.empty(0, device=dev)
    check(torch.where(dc, da, db, out=out), torch.where(c, a, b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(torch.where(c.to(torch.uint8).to(dev), da, db), torch.where(c, a, b))
    with pytest.raises(RuntimeError, match=r"aten::where\.self: where expected condition to be a boolean tensor"):
        torch.where(da, da, db)
    with pytest.raises(RuntimeError, match=r"aten::where\.self: the size of tensor a"):
        torch.where(dc, da, torch.zeros(5, device=dev))


@pytest.mark.parametrize("dtype", [F32, F16, I32, B], ids=str)
def test_masked_fill(dev, dtype):
    x = sample((5, 6), dtype)
    m = sample((5, 6), B, seed=1)
    dx, dm = x.to(dev), m.to(dev)
    v = 1 if dtype != B else True
    check(dx.masked_fill(dm, v), x.masked_fill(m, v))
    check(dx.t().masked_fill(dm.t(), v), x.t().masked_fill(m.t(), v))
    check(dx.masked_fill(dm[0], v), x.masked_fill(m[0], v))              # mask broadcast
    check(dx[0].masked_fill(dm, v), x[0].masked_fill(m, v))              # self broadcast (functional)
    check(dx.masked_fill(dm, torch.tensor(v)), x.masked_fill(m, torch.tensor(v)))           # CPU value
    check(dx.masked_fill(dm, torch.tensor(v).to(dev)), x.masked_fill(m, torch.tensor(v)))   # device value
    d2 = dx.clone()
    assert d2.masked_fill_(dm, v) is d2
    check(d2, x.clone().masked_fill_(m, v))
    d2 = dx.clone()
    d2.masked_fill_(dm[:, :1], torch.tensor(v, dtype=F32 if dtype != B else B).to(dev))
    check(d2, x.clone().masked_fill_(m[:, :1], torch.tensor(v, dtype=F32 if dtype != B else B)))
    out = torch.empty(0, dtype=dtype, device=dev)
    torch.ops.aten.masked_fill.Scalar_out(dx, dm, v, out=out)
    check(out, x.masked_fill(m, v))
    out = torch.empty(0, dtype=dtype, device=dev)
    torch.ops.aten.masked_fill.Tensor_out(dx, dm, torch.tensor(v).to(dev), out=out)
    check(out, x.masked_fill(m, v))


def test_masked_fill_values_and_errors(dev):
    x = sample((3, 4), F32)
    m = sample((3, 4), B, seed=2)
    dx, dm = x.to(dev), m.to(dev)
    for v in (float("-inf"), float("nan"), -1e30):
        check(dx.masked_fill(dm, v), x.masked_fill(m, v))
    i = sample((3, 4), I32)
    check(i.to(dev).masked_fill(dm, 2.7), i.masked_fill(m, 2.7))
    with pytest.raises(RuntimeError, match=r"aten::masked_fill_\.Tensor: masked_fill_ only supports a 0-dimensional"):
        dx.masked_fill_(dm, torch.ones(1, device=dev))
    with pytest.raises(RuntimeError, match=r"aten::masked_fill_\.Scalar: output with shape \[4\] doesn't match"):
        dx[0].clone().masked_fill_(dm, 0.0)
    with pytest.raises(RuntimeError, match=r"aten::masked_fill.*only supports boolean masks"):
        dx.masked_fill(i.to(dev), 0.0)


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64], ids=str)
def test_clamp_scalar_bounds(dev, dtype):
    for x, dx in layouts((5, 6), dtype):
        for lo, hi in ((-1, 1), (None, 0), (0, None), (2, -2), (-0.3, 0.7)):
            if not dtype.is_floating_point and isinstance(lo, float):
                continue
            expected = ref(torch.clamp, x, lo, hi)
            check(torch.clamp(dx, lo, hi), expected)
            check(dx.clone().clamp_(lo, hi), expected)
            out = torch.empty(0, dtype=dtype, device=dev)
            check(torch.clamp(dx, lo, hi, out=out), expected)
        check(torch.clamp_min(dx, 0), ref(torch.clamp_min, x, 0))
        check(torch.clamp_max(dx, 0), ref(torch.clamp_max, x, 0))
        check(dx.clone().clamp_min_(1), ref(torch.clamp_min, x, 1))
        check(dx.clone().clamp_max_(1), ref(torch.clamp_max, x, 1))
        out = torch.empty(0, dtype=dtype, device=dev)
        check(torch.clamp_min(dx, -1, out=out), ref(torch.clamp_min, x, -1))
        out = torch.empty(0, dtype=dtype, device=dev)
        check(torch.clamp_max(dx, -1, out=out), ref(torch.clamp_max, x, -1))
    if not dtype.is_floating_point:
        x = sample((7,), dtype)
        check(torch.clamp(x.to(dev), 0.5, 2.5), torch.clamp(x, 0.5, 2.5))   # promotes to float
        with pytest.raises(RuntimeError, match=r"aten::clamp_: result type Float can't be cast"):
            x.to(dev).clamp_(0.5)


def test_clamp_tensor_bounds_and_special_values(dev):
    x = sample((4, 5), F32, low=-4, high=4)
    x[0, 0] = float("nan")
    lo = sample((4, 5), F32, seed=1, low=-3, high=0)
    hi = sample((5,), F32, seed=2, low=0, high=3)
    dx, dlo, dhi = x.to(dev), lo.to(dev), hi.to(dev)
    check(torch.clamp(dx, dlo, dhi), torch.clamp(x, lo, hi))
    check(torch.clamp(dx, min=dlo), torch.clamp(x, min=lo))
    check(torch.clamp(dx, max=dhi), torch.clamp(x, max=hi))
    check(dx.clone().clamp_(dlo, dhi), x.clone().clamp_(lo, hi))
    out = torch.empty(0, device=dev)
    check(torch.clamp(dx, dlo, dhi, out=out), torch.clamp(x, lo, hi))
    check(torch.clamp_min(dx, dlo), torch.clamp_min(x, lo))
    check(torch.clamp_max(dx, dhi), torch.clamp_max(x, hi))
    check(dx.clone().clamp_min_(dlo), x.clone().clamp_min_(lo))
    check(dx.clone().clamp_max_(dhi), x.clone().clamp_max_(hi))
    check(torch.clamp_min(dx, dlo, out=torch.empty(0, device=dev)), torch.clamp_min(x, lo))
    check(torch.clamp_max(dx, dhi, out=torch.empty(0, device=dev)), torch.clamp_max(x, hi))
    check(torch.clamp(dx, torch.tensor(-1.0), torch.tensor(1.0)), torch.clamp(x, torch.tensor(-1.0), torch.tensor(1.0)))
    check(torch.clamp(dx, 1.0, -1.0), torch.clamp(x, 1.0, -1.0))  # min > max: max
    check(torch.clamp(dx, -1.0, 1.0), torch.clamp(x, -1.0, 1.0))  # NaN propagates
    with pytest.raises(RuntimeError, match=r"aten::clamp(\.Tensor)?: torch.clamp: At least one of 'min' or 'max'"):
        torch.clamp(dx)


@pytest.mark.parametrize("dtype", [F32, F16], ids=str)
def test_addcmul_addcdiv(dev, dtype):
    s, ds = layouts((4, 6), dtype)[1]
    a, da = layouts((4, 6), dtype, seed=4)[2]
    b = sample((6,), dtype, seed=5, low=0.5, high=2)
    db = b.to(dev)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == F32 else dict(rtol=5e-3, atol=5e-3)
    for fn in (torch.addcmul, torch.addcdiv):
        for value in (1, 0.5, -2):
            expected = ref(fn, s, a, b, value=value)
            check(fn(ds, da, db, value=value), expected, tol)
            d2 = ds.clone()
            assert getattr(d2, fn.__name__ + "_")(da, db, value=value) is d2
            check(d2, expected, tol)
            out = torch.empty(0, dtype=dtype, device=dev)
            check(fn(ds, da, db, value=value, out=out), expected, tol)
        check(fn(ds[0], da, db), ref(fn, s[0], a, b), tol)  # self broadcast
    i = sample((4, 6), I32)
    check(torch.addcmul(i.to(dev), i.to(dev), i.to(dev), value=2), torch.addcmul(i, i, i, value=2))
    with pytest.raises(RuntimeError, match=r"aten::addcdiv: Integer division with addcdiv is no longer supported"):
        torch.addcdiv(ds, i.to(dev), i.to(dev))


# ---- fill_, zero_, copies ---------------------------------------------------------------------------------

def test_fills(dev):
    for dtype, value in ((F32, 1.0), (F32, -2.75), (F16, 0.1), (I32, 7), (I64, -123456789012), (I8, -5),
                         (torch.float64, 1 / 3), (B, True), (I64, 2 ** 62 + 1), (I64, 2 ** 63 - 1)):
        d = torch.full((5, 7), value, dtype=dtype, device=dev)
        check(d, torch.full((5, 7), value, dtype=dtype))
        d.t()[1:4].fill_(value if dtype == B else 0)  # non-contiguous
        e = torch.full((5, 7), value, dtype=dtype)
        e.t()[1:4].fill_(value if dtype == B else 0)
        check(d, e)
    for dtype in (torch.uint8, torch.int16, torch.bfloat16):  # dtypes libmlu lacks: raw broadcast copy
        d = torch.zeros(4, 6, dtype=dtype, device=dev)
        d[:, ::2].fill_(-1 if dtype != torch.uint8 else 200)
        e = torch.zeros(4, 6, dtype=dtype)
        e[:, ::2].fill_(-1 if dtype != torch.uint8 else 200)
        check(d, e)
    x = sample((6, 4), F32)
    d = x.to(dev)
    d[:, 1].zero_()
    x[:, 1].zero_()
    check(d, x)
    z = torch.zeros(3, device=dev).expand(4, 3)   # expanded: each element written once
    z.fill_(2.0)
    check(z, torch.full((4, 3), 2.0))
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
        torch.zeros(3, dtype=I8, device=dev).fill_(300)
    ran_on_device("aten::fill_.Scalar", lambda: torch.full((5,), 3.5, device=dev))
    ran_on_device("aten::zero_", lambda: torch.ones(4, 4, device=dev)[:, 1].zero_())


def test_fill_with_a_tensor_value(dev):
    d = torch.zeros(4, 5, device=dev)
    d.fill_(torch.tensor(2.5))                       # CPU value: read on the host
    check(d, torch.full((4, 5), 2.5))
    d.t()[::2].fill_(torch.tensor(-1, dtype=I32).to(dev))   # device value: broadcast copy, converted
    e = torch.full((4, 5), 2.5)
    e.t()[::2].fill_(-1)
    check(d, e)
    d.fill_(d[1, 1])                                  # a view of self
    check(d, torch.full((4, 5), e[1, 1].item()))
    i = torch.zeros(3, dtype=I32, device=dev)
    i.fill_(torch.tensor(3.7).to(dev))
    check(i, torch.full((3,), 3, dtype=I32))
    with pytest.raises(RuntimeError, match=r"aten::fill_\.Tensor: fill_ only supports 0-dimension value tensor"):
        d.fill_(torch.ones(2, device=dev))
    ran_on_device("aten::fill_.Tensor", lambda: d.fill_(torch.tensor(1.0, device=dev)))


COPY_DTYPES = [F32, F16, torch.float64, I8, I32, I64, B]


def test_device_copies_convert_and_relayout(dev):
    x = sample((6, 10), F32, low=-100, high=100)
    for src_dtype in COPY_DTYPES:
        s = x.to(src_dtype)
        ds = s.to(dev)
        for dst_dtype in COPY_DTYPES:
            check(ds.to(dst_dtype), s.to(dst_dtype))
        check(ds.t().contiguous(), s.t().contiguous())                  # transposed source
        check(ds[::2, 1:7].contiguous(), s[::2, 1:7].contiguous())      # sliced source
        dst = torch.zeros(10, 6, dtype=F16, device=dev).t()             # transposed destination
        dst.copy_(ds)
        check(dst, s.to(F16))
        big = torch.zeros(6, 21, dtype=I32, device=dev)
        big[:, 1::2].copy_(ds)                                          # gaps in the destination
        ref = torch.zeros(6, 21, dtype=I32)
        ref[:, 1::2].copy_(s)
        check(big, ref)
    row = sample((10,), F32).to(dev)
    e = torch.empty(6, 10, device=dev)
    e.copy_(row)                                                        # broadcast source
    check(e, row.cpu().expand(6, 10).contiguous())
    c = sample((2, 3, 4, 5), F32)
    check(c.to(dev).contiguous(memory_format=torch.channels_last), c.contiguous(memory_format=torch.channels_last))
    ran_on_device("aten::_copy_from", lambda: row.to(F16))


def test_same_dtype_copies_of_dtypes_libmlu_lacks(dev):
    u = torch.randint(0, 256, (6, 8), dtype=torch.uint8)
    s16 = torch.randint(-32768, 32767, (6, 8), dtype=torch.int16)
    s16[0, :4] = torch.tensor([-1, 0x7C01, -0x400, 0x7FFF], dtype=torch.int16)  # fp16 NaN/inf bit patterns
    bf = (torch.randn(6, 8) * 1e30).to(torch.bfloat16)
    for t in (u, s16, bf):
        check(t.to(dev).t().contiguous(), t.t().contiguous())
        check(t.to(dev)[:, ::3].contiguous(), t[:, ::3].contiguous())
    m = sample((6, 8), B)
    check(m.to(dev).to(torch.uint8), m.to(torch.uint8))
    check(u.to(dev).t().to(B), u.t().to(B))
    check(u.to(dev).to(F32), u.to(F32))
    with pytest.raises(NotImplementedError, match=r"aten::_copy_from: copying Double to Byte is not supported on device mlu"):
        m.double().to(dev).to(torch.uint8)


def test_copy_errors_leave_the_device_usable(dev):
    x = torch.arange(16, dtype=F32).to(dev).view(4, 4)
    with pytest.raises(RuntimeError, match=r"unsupported operation: some elements of the input"):
        x.copy_(x.t())
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x[0, :1].expand(4).copy_(torch.ones(4, dtype=F16, device=dev))
    check(x + 1, torch.arange(16, dtype=F32).view(4, 4) + 1)


def test_cross_device_copies_with_conversion():
    code = """
import torch, torch_mlu
torch_mlu.load_config("tiny", {"devices": 2})
x = torch.randn(6, 8)
a = x.to("mlu:0")
b = a.t().to("mlu:1")                  # layout change across devices
assert b.device.index == 1 and torch.equal(b.cpu(), x.t().contiguous())
c = a.to("mlu:1", torch.float16)        # dtype change across devices
assert torch.equal(c.cpu(), x.half())
d = torch.zeros(8, 13, device="mlu:1")
d[:, 1::2].copy_(a.t())                           # destination with gaps on the other device
ref = torch.zeros(8, 13); ref[:, 1::2].copy_(x.t())
assert torch.equal(d.cpu(), ref)
e = torch.empty(8, 6, dtype=torch.int32, device="mlu:0").t()
e.copy_(c)                                        # back, converted, into a transposed view
assert torch.equal(e.cpu(), x.half().int())
print("ok")
"""
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


# ---- errors, report -----------------------------------------------------------------------------------------

def test_errors_name_the_op_and_keep_the_device_usable(dev):
    a = torch.ones(2, 3, device=dev)
    with pytest.raises(RuntimeError, match=r"aten::add\.Tensor: the size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1"):
        a + torch.ones(4, device=dev)
    with pytest.raises(RuntimeError, match=r"aten::mul_\.Tensor: output with shape \[2, 3\] doesn't match the "
                                           r"broadcast shape \[4, 2, 3\]"):
        a.mul_(torch.ones(4, 2, 3, device=dev))
    with pytest.raises(RuntimeError, match=r"aten::add\.Tensor: expected other on mlu:0"):
        a + torch.ones(2, 3)
    # float64 unary ops compute in fp32 on the device (no fp64 VFU arithmetic) and return float64
    d64 = torch.tensor([0.5, 2.0, -3.0], dtype=torch.float64)
    for fn in (torch.exp, torch.reciprocal, torch.sin):
        got = fn(d64.to(dev))
        assert got.dtype == torch.float64
        torch.testing.assert_close(got.cpu(), fn(d64), rtol=1e-6, atol=1e-7)
    # float64 binary ops too (narrow_float64: a finite value beyond fp32's range is refused), and a
    # 0-dim float64 operand beside float32 keeps torch's float32 result (cast first, as TensorIterator)
    got = d64.to(dev) * torch.tensor([1.5, -2.0, 4.0], dtype=torch.float64, device=dev)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got.cpu(), d64 * torch.tensor([1.5, -2.0, 4.0], dtype=torch.float64))
    mixed = torch.tensor(0.25, dtype=torch.float64, device=dev) * torch.ones(3, device=dev)
    assert mixed.dtype == torch.float32
    torch.testing.assert_close(mixed.cpu(), torch.full((3,), 0.25))
    with pytest.raises(ValueError, match=r"aten::add\.Tensor: .*float32"):
        torch.full((3,), 1e300, dtype=torch.float64, device=dev) + torch.ones(3, dtype=torch.float64, device=dev)
    with pytest.raises(NotImplementedError, match=r"aten::sqrt: dtype ComplexFloat is not supported on device mlu"):
        torch.ones(3, dtype=torch.complex64, device=dev).sqrt()
    with pytest.raises(RuntimeError, match=r"aten::add_\.Tensor: unsupported operation: some elements of the input"):
        x = torch.arange(5.0).to(dev)
        x[1:].add_(x[:-1])
    check(a * 2 + 1, torch.full((2, 3), 3.0))


def test_ops_run_on_the_device(dev):
    a = sample((8, 8), F32).to(dev)
    ran_on_device("aten::add.Tensor", lambda: a + a)
    ran_on_device("aten::mul_.Tensor", lambda: a.clone().mul_(2.0))  # Python numbers come wrapped
    ran_on_device("aten::mul_.Scalar", lambda: torch.ops.aten.mul_.Scalar(a.clone(), 2.0))
    ran_on_device("aten::gelu", lambda: torch.nn.functional.gelu(a))
    ran_on_device("aten::where.self", lambda: torch.where(a > 0, a, a * 2))
    ran_on_device("aten::lt.Scalar", lambda: a < 0.5)
    ran_on_device("aten::masked_fill_.Scalar", lambda: a.clone().masked_fill_(a > 0, 0.0))
    ran_on_device("aten::addcmul_", lambda: a.clone().addcmul_(a, a, value=0.5))
    ran_on_device("aten::clamp", lambda: a.clamp(-1, 1))
    ran_on_device("aten::threshold_backward", lambda: torch.ops.aten.threshold_backward(a, a, 0.0))


# ---- hardtanh / relu6 ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [F32, F16])
def test_hardtanh_and_relu6_forward_backward(dev, dtype):
    F = torch.nn.functional
    for c, d in layouts((7, 9), dtype, seed=40):
        c = c * 4
        d = c.to(dev)
        check(F.hardtanh(d, -0.5, 2.0), ref(F.hardtanh, c, -0.5, 2.0))
        check(F.relu6(d), ref(F.relu6, c))
        check(F.hardtanh(d.clone(), -1.0, 1.0).add_(0), ref(F.hardtanh, c, -1.0, 1.0))
        out = torch.empty_like(d)
        torch._C._nn.hardtanh(d, -0.5, 2.0, out=out)
        check(out, ref(F.hardtanh, c, -0.5, 2.0))
    # Gradient: passes only strictly inside (min, max); exact bound values get 0, as torch.
    x = torch.tensor([-7.0, -1.0, -0.5, 0.0, 3.0, 6.0, 6.5], dtype=dtype)
    g = torch.arange(1.0, 8.0, dtype=dtype)
    xd = x.to(dev).requires_grad_()
    F.relu6(xd).backward(g.to(dev))
    xc = x.clone().requires_grad_()
    F.relu6(xc.float() if dtype == F16 else xc).backward(g.float() if dtype == F16 else g)
    check(xd.grad, xc.grad)
    grad_in = torch.empty_like(xd.detach())
    torch.ops.aten.hardtanh_backward.grad_input(g.to(dev), x.to(dev), -1.0, 3.0, grad_input=grad_in)
    check(grad_in, ref(torch.ops.aten.hardtanh_backward, g, x, -1.0, 3.0))
    ran_on_device("aten::hardtanh_backward", lambda: torch.ops.aten.hardtanh_backward(g.to(dev), x.to(dev), 0.0, 6.0))
    ran_on_device("aten::hardtanh", lambda: F.relu6(x.to(dev)))


# ---- hardswish / hardsigmoid / leaky_relu (elementwise programs) -------------------------------------


@pytest.mark.parametrize("dtype", [F32, F16])
def test_hard_activations_and_leaky_relu(dev, dtype):
    F = torch.nn.functional
    special = torch.tensor([-4.0, -3.0, -2.5, 0.0, 2.5, 3.0, 4.0], dtype=dtype)
    for c, _ in layouts((6, 10), dtype, seed=50):
        c = c * 5
        for x in (c, special):
            d = x.to(dev)
            check(F.hardswish(d), ref(F.hardswish, x))
            check(F.hardsigmoid(d), ref(F.hardsigmoid, x))
            check(F.leaky_relu(d, 0.2), ref(F.leaky_relu, x, 0.2))
            check(F.hardswish(d.clone(), inplace=True), ref(F.hardswish, x))
            check(F.leaky_relu(d.clone(), 0.1, inplace=True), ref(F.leaky_relu, x, 0.1))
            out = torch.empty_like(d)
            torch._C._nn.hardsigmoid(d, out=out)
            check(out, ref(F.hardsigmoid, x))
            g = torch.randn(x.shape, dtype=dtype)
            check(torch.ops.aten.hardswish_backward(g.to(dev), d), ref(torch.ops.aten.hardswish_backward, g, x))
            check(torch.ops.aten.hardsigmoid_backward(g.to(dev), d), ref(torch.ops.aten.hardsigmoid_backward, g, x))
            check(torch.ops.aten.leaky_relu_backward(g.to(dev), d, 0.2, False),
                  ref(torch.ops.aten.leaky_relu_backward, g, x, 0.2, False))
    # Autograd end to end, and the in-place-with-negative-slope rule.
    x = (torch.randn(5, 7) * 4).to(dtype)
    xd = x.to(dev).requires_grad_()
    (F.hardswish(xd) + F.leaky_relu(xd, 0.3)).sum().backward()
    xc = x.float().requires_grad_()
    (F.hardswish(xc) + F.leaky_relu(xc, 0.3)).sum().backward()
    check(xd.grad, xc.grad.to(dtype), dict(rtol=2e-3, atol=2e-3) if dtype == F16 else None)
    with pytest.raises(RuntimeError, match="negative slope"):
        torch.ops.aten.leaky_relu_backward(x.to(dev), x.to(dev), -0.1, True)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.hardswish(torch.arange(4).to(dev))
    ran_on_device("aten::hardswish", lambda: F.hardswish(x.to(dev)))


# ---- arange -------------------------------------------------------------------------------------------


def test_arange_on_device(dev):
    cases = [((10,), {}), ((3, 17), {}), ((5, -7, -2), {}), ((0, 1000, 7), {}), ((0.5, 9.7, 0.3), {}),
             ((-2.0, 2.0, 0.25), dict(dtype=F16)), ((4,), dict(dtype=I32)), ((-3, 9, 4), dict(dtype=I8)),
             ((0, 5000), dict(dtype=F32)), ((0,), {}), ((2, 2), {})]
    for args, kw in cases:
        got = torch.arange(*args, device=dev, **kw)
        want = torch.arange(*args, **kw)
        check(got, want)
    out = torch.empty(3, dtype=I64, device=dev)
    torch.arange(1, 40, 3, out=out)
    check(out, torch.arange(1, 40, 3))
    # GPT-2 style position ids, then an embedding lookup, all on the device.
    pos = torch.arange(0, 6, dtype=torch.long, device=dev).unsqueeze(0)
    emb = torch.nn.Embedding(16, 4)
    want = emb(pos.cpu()).detach()
    check(emb.to(dev)(pos).detach(), want, dict(rtol=0, atol=0))
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        torch.arange(0, 4, 0, device=dev)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        torch.arange(0, 4, -1, device=dev)
    with pytest.raises(NotImplementedError, match="arange.start_out: dtype"):
        torch.arange(4, dtype=torch.float64, device=dev)
    ran_on_device("aten::arange.start_out", lambda: torch.arange(100, device=dev))


@pytest.mark.parametrize("dtype", [F32, F16])
def test_lerp_scalar_weight(dev, dtype):
    a, b = torch.randn(37, 5).to(dtype), torch.randn(37, 5).to(dtype)
    for w in (0.0, 0.25, 0.5, 0.9, 1.0, -1.5):
        check(torch.lerp(a.to(dev), b.to(dev), w), torch.lerp(a.float(), b.float(), w).to(dtype))
        d = a.to(dev)
        d.lerp_(b.to(dev), w)
        check(d, torch.lerp(a.float(), b.float(), w).to(dtype))
    assert torch.equal(torch.lerp(a.to(dev), b.to(dev), 1.0).cpu(), b)  # exact at the end point


def test_isneginf_isposinf(dev):
    x = torch.tensor([-float("inf"), -1.0, 0.0, float("inf"), float("nan")])
    assert torch.equal(torch.isneginf(x.to(dev)).cpu(), torch.isneginf(x))
    assert torch.equal(torch.isposinf(x.to(dev)).cpu(), torch.isposinf(x))
    assert torch.equal(torch.isneginf(x.half().to(dev)).cpu(), torch.isneginf(x.half()))
    i = torch.tensor([-3, 0, 7], dtype=torch.int32)
    assert torch.equal(torch.isposinf(i.to(dev)).cpu(), torch.zeros(3, dtype=torch.bool))


@pytest.mark.parametrize("dtype", [F32, F16])
def test_sin_cos(dev, dtype):
    x = (torch.randn(33, 17) * 4).to(dtype)
    for fn in (torch.sin, torch.cos):
        check(fn(x.to(dev)), fn(x.float()).to(dtype), dict(atol=1e-5, rtol=1e-5) if dtype == F32 else None)
    d = x.to(dev)
    d.sin_()
    check(d, torch.sin(x.float()).to(dtype), dict(atol=1e-5, rtol=1e-5) if dtype == F32 else None)
    xd = x.float().to(dev).requires_grad_()
    torch.cos(xd).sum().backward()  # autograd: -sin(x) on the device
    torch.testing.assert_close(xd.grad.cpu(), -torch.sin(x.float()), atol=1e-5, rtol=1e-5)


def test_bitwise_ops_on_bool(dev):
    a, b = torch.rand(4, 5) > 0.5, torch.rand(5) > 0.5
    for fn in (torch.bitwise_and, torch.bitwise_or, torch.bitwise_xor):
        assert torch.equal(fn(a.to(dev), b.to(dev)).cpu(), fn(a, b))
    assert torch.equal((a.to(dev) & True).cpu(), a)
    # bool with an integer promotes (transformers' stopping criteria: int64 & bool)
    i = torch.arange(5)
    assert torch.equal((i.to(dev) & b.to(dev)).cpu(), i & b)


@pytest.mark.parametrize("dtype", [I8, torch.uint8, torch.int16, I32, I64])
def test_bitwise_ops_on_integers(dev, dtype):
    """and/or/xor and shifts as torch's CPU kernels: broadcasting, scalars on either side, in-place
    and out=, shift counts outside [0, width) (0 for <<, the sign for >>)."""
    info = torch.iinfo(dtype)
    g = torch.Generator().manual_seed(3)
    lo, hi = max(info.min, -(2**31)), min(info.max, 2**31 - 1)  # int64 computes in int32 lanes
    a = torch.randint(lo, hi, (6, 9), generator=g, dtype=torch.int64).to(dtype)
    b = torch.randint(lo, hi, (9,), generator=g, dtype=torch.int64).to(dtype)
    width = info.bits
    counts = torch.randint(0 if dtype == torch.uint8 else -3, width + 3, (9,), generator=g).to(dtype)
    ad, bd, cd = a.to(dev), b.to(dev), counts.to(dev)
    for fn in (torch.bitwise_and, torch.bitwise_or, torch.bitwise_xor):
        assert torch.equal(fn(ad, bd).cpu(), fn(a, b)), fn
        assert torch.equal(fn(ad, 5).cpu(), fn(a, 5)), fn
    assert torch.equal(torch.bitwise_right_shift(ad, cd).cpu(), torch.bitwise_right_shift(a, counts))
    assert torch.equal((ad >> 3).cpu(), a >> 3)
    assert torch.equal(torch.bitwise_right_shift(-9, cd).cpu(), torch.bitwise_right_shift(-9, counts))  # scalar first
    # int64 computes in int32 lanes: left shifts wrap modulo 2^32, not 2^64 (documented), so int64
    # is compared where the results fit int32
    sa, sc = (a.remainder(1000) - 500, counts.clamp(max=20)) if dtype == I64 else (a, counts)
    assert torch.equal((sa.to(dev) << sc.to(dev)).cpu(), sa << sc)
    assert torch.equal(torch.bitwise_left_shift(sa.to(dev), 3).cpu(), torch.bitwise_left_shift(sa, 3))
    assert torch.equal(torch.bitwise_left_shift(3, sc.to(dev)).cpu(), torch.bitwise_left_shift(3, sc))
    x = ad.clone()
    x ^= bd
    x >>= 1
    assert torch.equal(x.cpu(), (a ^ b) >> 1)
    out = torch.empty(0, dtype=dtype, device=dev)
    torch.bitwise_or(ad, bd, out=out)
    assert torch.equal(out.cpu(), a | b)
    # non-contiguous operands
    assert torch.equal((ad.t() & bd[:6]).cpu(), a.t() & b[:6])
    assert torch.equal((~ad).cpu(), ~a) if dtype != torch.uint8 else True


def test_bitwise_ops_reject_floating_and_bool_shifts(dev):
    f = torch.ones(3, device=dev)
    with pytest.raises(RuntimeError, match="bitwise_and.*not implemented for 'Float'"):
        f & f
    with pytest.raises(RuntimeError, match="bitwise_left_shift.*not implemented for 'Bool'"):
        torch.bitwise_left_shift(torch.ones(3, dtype=B, device=dev), torch.ones(3, dtype=B, device=dev))
    # the device stays usable
    assert torch.equal((torch.arange(4, device=dev) | 1).cpu(), torch.arange(4) | 1)


@pytest.mark.parametrize("dtype", [F32, F16, B, I32])
def test_tril_triu(dev, dtype):
    x = (torch.randn(2, 5, 7) * 10).to(dtype)
    for k in (-2, 0, 1, 9):
        assert torch.equal(torch.tril(x.to(dev), k).cpu(), torch.tril(x, k))
        assert torch.equal(torch.triu(x.to(dev), k).cpu(), torch.triu(x, k))
    d = x.to(dev)
    d.tril_(1)
    assert torch.equal(d.cpu(), torch.tril(x, 1))
    causal = torch.ones(6, 6, dtype=torch.bool, device=dev).tril()
    assert torch.equal(causal.cpu(), torch.ones(6, 6, dtype=torch.bool).tril())
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.tril(torch.ones(3).to(dev))


def test_complex_arithmetic_on_pairs(dev):
    """complex +- complex and complex * or / a real value on the (re, im) pairs (the FFT backward
    scales complex gradients); complex * complex raises NotImplementedError naming the op."""
    g = torch.Generator().manual_seed(5)
    z = torch.complex(torch.randn(3, 4, generator=g), torch.randn(3, 4, generator=g))
    w = torch.complex(torch.randn(4, generator=g), torch.randn(4, generator=g))
    r = torch.randn(3, 1, generator=g)
    zd, wd = z.to(dev), w.to(dev)
    for got, want in ((zd + wd, z + w), (zd - 2 * wd, z - 2 * w), (zd * 0.5, z * 0.5), (3 * zd, 3 * z),
                      (zd / 4, z / 4), (zd * r.to(dev), z * r), (zd / r.to(dev), z / r)):
        assert got.device.type == "mlu" and got.dtype == want.dtype
        torch.testing.assert_close(got.cpu(), want)
    x = zd.clone()
    x.mul_(-2.0)
    torch.testing.assert_close(x.cpu(), z * -2.0)
    with pytest.raises(NotImplementedError, match="aten::mul.*complex"):
        zd * wd


def test_where_on_float64_selects_exact_bits(dev):
    """float64 where moves the two int32 words of each value: exact beyond float32's precision."""
    a = torch.tensor([1.0 + 2**-40, -3.5, 1e300, float("nan")], dtype=torch.float64)
    b = torch.tensor([7.0, 2**-1070, -0.0, 1.0], dtype=torch.float64)
    c = torch.tensor([True, False, True, False])
    got = torch.where(c.to(dev), a.to(dev), b.to(dev)).cpu()
    assert torch.equal(got.view(torch.int64), torch.where(c, a, b).view(torch.int64))
    got = torch.where(c.to(dev), a.to(dev), 0.25).cpu()  # a host scalar, broadcast
    assert torch.equal(got.view(torch.int64), torch.where(c, a, 0.25).view(torch.int64))
    f32 = torch.tensor([1.5, 2.5, 3.5, 4.5])
    assert torch.equal(torch.where(c.to(dev), a.to(dev), f32.to(dev)).cpu(), torch.where(c, a, f32))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16])
def test_narrow_integers_compute_in_int32_lanes(dev, dtype):
    """uint8 / int16 (not libmlu dtypes) compute on int32 copies, narrowed back as torch wraps:
    arithmetic, host scalars cast to the dtype first (x > 300 on uint8 compares with 44),
    comparisons, unary ops, clamp, masked_fill, floor_divide / remainder / fmod, reductions,
    sort / topk."""
    g = torch.Generator().manual_seed(7)
    lo, hi = (0, 256) if dtype == torch.uint8 else (-30000, 30000)
    a = torch.randint(lo, hi, (3, 5), generator=g).to(dtype)
    b = torch.randint(lo, hi, (5,), generator=g).to(dtype)
    ad, bd = a.to(dev), b.to(dev)
    cases = {
        "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y, "rsub": lambda x, y: 5 - x,
        "add_scalar": lambda x, y: x + 300, "mul_float": lambda x, y: x * 0.5, "div": lambda x, y: x / 7,
        "eq": lambda x, y: x == y, "gt_scalar": lambda x, y: x > 300, "eq_minus_one": lambda x, y: x == -1,
        "maximum": lambda x, y: torch.maximum(x, y), "neg": lambda x, y: -x, "abs": lambda x, y: x.abs(),
        "exp": lambda x, y: (x * 0.001).exp(),
        "clamp": lambda x, y: x.clamp(10, 100), "masked_fill": lambda x, y: x.masked_fill(y > 100, 9),
        "sum": lambda x, y: x.sum(0), "prod": lambda x, y: x[0, :2].prod(),  # int64 results wrap at 32 bits on the device
        "amax": lambda x, y: x.amax(1),
        "max_dim": lambda x, y: x.max(1), "argmin": lambda x, y: x.argmin(), "sort": lambda x, y: x.sort(1),
        "topk": lambda x, y: x.topk(2, 1), "mixed_int8": lambda x, y: x + y.to(torch.int8),
        "floor_divide": lambda x, y: x // (y % 7 + 1), "remainder": lambda x, y: x % 13, "fmod": lambda x, y: x.fmod(5),
    }
    for name, fn in cases.items():
        want, got = fn(a, b), fn(ad, bd)
        for w, d in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
            assert d.device.type == "mlu" and d.dtype == w.dtype, name
            assert torch.allclose(d.cpu().double(), w.double(), equal_nan=True), name
    x = ad.clone()
    x.add_(bd).mul_(3)
    assert torch.equal(x.cpu(), (a + b) * 3)
