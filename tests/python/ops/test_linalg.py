"""Matrix products on the device (torch_bridge/src/ops/linalg_ops.cpp over libmlu gemm.h): mm,
addmm, _addmm_activation, bmm, baddbmm, addbmm, addmv, mv, dot, vdot in their functional,
in-place and out= forms, and the composite paths that reach them (torch.matmul,
nn.functional.linear, autograd), compared with torch's CPU results."""

import math

import pytest
import torch
import torch.nn.functional as F

import torch_mlu

DTYPES = [torch.float32, torch.float16]


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(tuple(shape), generator=g).to(dtype)


def ref(fn, *args, dtype, **kw):
    """torch's CPU result; CPU has no fp16 GEMM, so fp16 inputs are multiplied in fp32 and
    rounded once (what libmlu computes)."""
    if dtype == torch.float16:
        args = [a.float() if isinstance(a, torch.Tensor) else a for a in args]
        return fn(*args, **kw).half()
    return fn(*args, **kw)


def check(actual, expected, depth=8):
    """fp32: libmlu accumulates in another order than MKL; fp16: one rounding of an fp32 result."""
    assert actual.device.type == "mlu"
    actual = actual.cpu()
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if expected.dtype == torch.float16:
        tol = dict(atol=2e-2 * math.sqrt(max(depth, 1)), rtol=1e-2)
    else:
        tol = dict(atol=1e-4 * math.sqrt(max(depth, 1)), rtol=1e-4)
    torch.testing.assert_close(actual.float(), expected.float(), equal_nan=True, **tol)


def ran_on_device(names, fn):
    torch_mlu.synchronize()
    torch_mlu.reset_stats()
    fn()
    torch_mlu.synchronize()
    ops = {o["name"]: o for o in torch_mlu.cycle_report(format="json")["ops"]}
    for n in names:
        assert n in ops and ops[n]["kernels"] > 0, (n, sorted(ops))


# ---- mm ------------------------------------------------------------------------------------------

MM_SHAPES = [(5, 7, 3), (1, 1, 1), (17, 33, 9), (64, 48, 40), (0, 4, 3), (4, 0, 3), (4, 3, 0)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("mkn", MM_SHAPES, ids=str)
def test_mm(dev, dtype, mkn):
    m, k, n = mkn
    a, b = rand(m, k, dtype=dtype, seed=1), rand(k, n, dtype=dtype, seed=2)
    expected = ref(torch.mm, a, b, dtype=dtype)
    check(torch.mm(a.to(dev), b.to(dev)), expected, k)
    out = torch.empty(0, dtype=dtype, device=dev)  # resized
    r = torch.mm(a.to(dev), b.to(dev), out=out)
    assert r is out
    check(out, expected, k)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_mm_strided_operands_and_out(dev, dtype):
    a, b = rand(9, 13, dtype=dtype, seed=3), rand(20, 11, dtype=dtype, seed=4)
    da, db = a.to(dev), b.to(dev)
    x, y = da.t()[:10], db[::2, 3:9]  # transposed [10, 9] x sliced [10, 6] (rows step 2)
    x, y = x[:, :9], y[:9]
    assert not x.is_contiguous() and not y.is_contiguous()
    expected = ref(torch.mm, a.t()[:10, :9], b[::2, 3:9][:9], dtype=dtype)
    check(torch.mm(x, y), expected, 9)
    out = torch.empty(6, 10, dtype=dtype, device=dev).t()  # a transposed out is written in place
    torch.mm(x, y, out=out)
    assert out.stride() == (1, 10)
    check(out, expected, 9)


def test_mm_column_stepped_operand(dev):
    b = rand(9, 11, seed=4)
    a = rand(5, 9, seed=3)
    check(torch.mm(a.to(dev), b.to(dev)[:, ::2]), a @ b[:, ::2], 9)


def test_mm_runs_on_device(dev):
    a, b = rand(8, 8).to(dev), rand(8, 8).to(dev)
    ran_on_device(["aten::mm"], lambda: torch.mm(a, b))


# ---- addmm / _addmm_activation -------------------------------------------------------------------

SELF_SHAPES = [(6, 5), (5,), (1, 5), (6, 1), (), (1, 1)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("self_shape", SELF_SHAPES, ids=str)
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2), (1, 0.25)])
def test_addmm(dev, dtype, self_shape, beta, alpha):
    s, a, b = rand(*self_shape, dtype=dtype, seed=5), rand(6, 7, dtype=dtype, seed=6), rand(7, 5, dtype=dtype, seed=7)
    expected = ref(torch.addmm, s, a, b, dtype=dtype, beta=beta, alpha=alpha)
    check(torch.addmm(s.to(dev), a.to(dev), b.to(dev), beta=beta, alpha=alpha), expected, 7)
    out = torch.empty(6, 5, dtype=dtype, device=dev)
    torch.addmm(s.to(dev), a.to(dev), b.to(dev), beta=beta, alpha=alpha, out=out)
    check(out, expected, 7)
    if self_shape == (6, 5):
        d = s.to(dev)
        r = d.addmm_(a.to(dev), b.to(dev), beta=beta, alpha=alpha)
        assert r is d
        check(d, expected, 7)


def test_addmm_beta_zero_ignores_nan(dev):
    s = torch.full((4, 3), float("nan"))
    a, b = rand(4, 5), rand(5, 3)
    expected = torch.addmm(s, a, b, beta=0)
    assert not expected.isnan().any()
    check(torch.addmm(s.to(dev), a.to(dev), b.to(dev), beta=0), expected, 5)
    d = s.to(dev)
    d.addmm_(a.to(dev), b.to(dev), beta=0, alpha=3)
    check(d, torch.addmm(s, a, b, beta=0, alpha=3), 5)


def test_addmm_strided_self_and_empty_depth(dev):
    s = rand(5, 8)[:, ::2]  # [5, 4] with gaps
    a, b = rand(5, 0), rand(0, 4)
    check(torch.addmm(s.to(dev)[:, :], a.to(dev), b.to(dev), beta=2), torch.addmm(s, a, b, beta=2), 1)
    s2 = rand(8, 5).t()  # transposed self
    a2, b2 = rand(5, 3), rand(3, 8)
    check(torch.addmm(s2.to(dev), a2.to(dev), b2.to(dev), beta=0.5), torch.addmm(s2, a2, b2, beta=0.5), 3)


def test_addmm_in_place_aliasing_an_operand(dev):
    x, y = rand(6, 6, seed=8), rand(6, 6, seed=9)
    expected = torch.addmm(x, x, y, beta=0.5)
    d = x.to(dev)
    d.addmm_(d, y.to(dev), beta=0.5)  # self is also mat1: computed through a temporary
    check(d, expected, 6)
    out = x.to(dev)
    torch.mm(out, y.to(dev), out=out)  # out is mat1
    check(out, x @ y, 6)


@pytest.mark.parametrize("use_gelu", [False, True])
def test_addmm_activation(dev, use_gelu):
    s, a, b = rand(5, seed=10), rand(4, 6, seed=11), rand(6, 5, seed=12)
    expected = torch._addmm_activation(s, a, b, beta=0.5, alpha=2, use_gelu=use_gelu)
    check(torch._addmm_activation(s.to(dev), a.to(dev), b.to(dev), beta=0.5, alpha=2, use_gelu=use_gelu), expected, 6)
    out = torch.empty(4, 5, device=dev)
    torch._addmm_activation(s.to(dev), a.to(dev), b.to(dev), beta=0.5, alpha=2, use_gelu=use_gelu, out=out)
    check(out, expected, 6)


# ---- bmm / baddbmm / addbmm ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("bmkn", [(3, 5, 7, 4), (1, 1, 1, 1), (2, 17, 9, 33), (0, 3, 4, 5), (2, 3, 0, 5)], ids=str)
def test_bmm(dev, dtype, bmkn):
    bt, m, k, n = bmkn
    a, b = rand(bt, m, k, dtype=dtype, seed=13), rand(bt, k, n, dtype=dtype, seed=14)
    expected = ref(torch.bmm, a, b, dtype=dtype)
    check(torch.bmm(a.to(dev), b.to(dev)), expected, k)
    out = torch.empty(1, dtype=dtype, device=dev)
    with pytest.warns(UserWarning, match="resized"):
        torch.bmm(a.to(dev), b.to(dev), out=out)
    check(out, expected, k)


def test_bmm_transposed_operands(dev):
    a, b = rand(3, 7, 5, seed=15), rand(4, 3, 7, seed=16)
    x = a.to(dev).transpose(1, 2)  # [3, 5, 7]
    y = b.to(dev).permute(1, 0, 2).transpose(1, 2)  # [3, 7, 4], batch stride 7
    check(torch.bmm(x, y), torch.bmm(a.transpose(1, 2), b.permute(1, 0, 2).transpose(1, 2)), 7)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("self_shape", [(3, 4, 5), (5,), (4, 5), (3, 1, 5), (1, 4, 1), ()], ids=str)
def test_baddbmm(dev, dtype, self_shape):
    s = rand(*self_shape, dtype=dtype, seed=17)
    a, b = rand(3, 4, 6, dtype=dtype, seed=18), rand(3, 6, 5, dtype=dtype, seed=19)
    for beta, alpha in [(1, 1), (0.5, 2), (0, 1)]:
        expected = ref(torch.baddbmm, s, a, b, dtype=dtype, beta=beta, alpha=alpha)
        check(torch.baddbmm(s.to(dev), a.to(dev), b.to(dev), beta=beta, alpha=alpha), expected, 6)
        out = torch.empty(3, 4, 5, dtype=dtype, device=dev)
        torch.baddbmm(s.to(dev), a.to(dev), b.to(dev), beta=beta, alpha=alpha, out=out)
        check(out, expected, 6)
        if self_shape == (3, 4, 5):
            d = s.to(dev)
            d.baddbmm_(a.to(dev), b.to(dev), beta=beta, alpha=alpha)
            check(d, expected, 6)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batches", [3, 1, 0])
def test_addbmm(dev, dtype, batches):
    a, b = rand(batches, 4, 6, dtype=dtype, seed=20), rand(batches, 6, 5, dtype=dtype, seed=21)
    for self_shape in [(4, 5), (5,)]:
        s = rand(*self_shape, dtype=dtype, seed=22)
        for beta, alpha in [(1, 1), (0.5, -1), (0, 2)]:
            expected = ref(torch.addbmm, s, a, b, dtype=dtype, beta=beta, alpha=alpha)
            check(torch.addbmm(s.to(dev), a.to(dev), b.to(dev), beta=beta, alpha=alpha), expected, 6 * max(batches, 1))
            out = torch.empty(4, 5, dtype=dtype, device=dev)
            torch.addbmm(s.to(dev), a.to(dev), b.to(dev), beta=beta, alpha=alpha, out=out)
            check(out, expected, 6 * max(batches, 1))
            if self_shape == (4, 5):
                d = s.to(dev)
                d.addbmm_(a.to(dev), b.to(dev), beta=beta, alpha=alpha)
                check(d, expected, 6 * max(batches, 1))


# ---- addmv / mv / dot / vdot ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("self_shape", [(6,), (1,), ()], ids=str)
def test_addmv_mv(dev, dtype, self_shape):
    s, m, v = rand(*self_shape, dtype=dtype, seed=23), rand(6, 9, dtype=dtype, seed=24), rand(9, dtype=dtype, seed=25)
    for beta, alpha in [(1, 1), (0.5, 2), (0, 1)]:
        expected = ref(torch.addmv, s, m, v, dtype=dtype, beta=beta, alpha=alpha)
        check(torch.addmv(s.to(dev), m.to(dev), v.to(dev), beta=beta, alpha=alpha), expected, 9)
        out = torch.empty(6, dtype=dtype, device=dev)
        torch.addmv(s.to(dev), m.to(dev), v.to(dev), beta=beta, alpha=alpha, out=out)
        check(out, expected, 9)
        if self_shape == (6,):
            d = s.to(dev)
            d.addmv_(m.to(dev), v.to(dev), beta=beta, alpha=alpha)
            check(d, expected, 9)
    expected = ref(torch.mv, m, v, dtype=dtype)
    check(torch.mv(m.to(dev), v.to(dev)), expected, 9)
    out = torch.empty(0, dtype=dtype, device=dev)
    torch.mv(m.to(dev), v.to(dev), out=out)
    check(out, expected, 9)
    # transposed matrix, strided vector
    m2, v2 = rand(18, 6, dtype=dtype, seed=26), rand(12, dtype=dtype, seed=27)
    check(torch.mv(m2.to(dev).t()[:, ::3], v2.to(dev)[::2]), ref(torch.mv, m2.t()[:, ::3], v2[::2], dtype=dtype), 6)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [1, 7, 100, 0])
def test_dot_vdot(dev, dtype, n):
    a, b = rand(2 * n, dtype=dtype, seed=28)[::2], rand(n, dtype=dtype, seed=29)
    for fn in (torch.dot, torch.vdot):
        expected = ref(fn, a, b, dtype=dtype)
        check(fn(a.to(dev)[:], b.to(dev)), expected, n)
        check(fn(rand(2 * n, dtype=dtype, seed=28).to(dev)[::2], b.to(dev)), expected, n)
        out = torch.empty(3, dtype=dtype, device=dev)
        with pytest.warns(UserWarning, match="resized"):
            fn(a.to(dev), b.to(dev), out=out)
        check(out, expected, n)


def test_vector_ops_run_on_device(dev):
    m, v = rand(4, 4).to(dev), rand(4).to(dev)
    ran_on_device(["aten::mv", "aten::dot", "aten::addmv"],
                  lambda: (torch.mv(m, v), torch.dot(v, v), torch.addmv(v, m, v, beta=0.5)))


# ---- composites: matmul, linear, autograd ----------------------------------------------------------

MATMUL_SHAPES = [
    ((7,), (7,)), ((5, 7), (7,)), ((7,), (7, 3)), ((5, 7), (7, 3)),
    ((2, 5, 7), (7, 3)), ((2, 5, 7), (7,)), ((2, 5, 7), (2, 7, 3)), ((3, 2, 5, 7), (3, 2, 7, 4)),
]

# Broadcast batch dims: torch 1.13's matmul expands and reshapes an operand, which copies it on the
# device (aten::_copy_from with a strided layout) before bmm.
MATMUL_BROADCAST_SHAPES = [((7,), (2, 7, 3)), ((5, 7), (2, 7, 3)), ((2, 1, 5, 7), (3, 7, 4)), ((4, 2, 5, 7), (2, 7, 4))]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES + MATMUL_BROADCAST_SHAPES, ids=str)
def test_matmul(dev, dtype, shapes):
    x, y = rand(*shapes[0], dtype=dtype, seed=30), rand(*shapes[1], dtype=dtype, seed=31)
    check(torch.matmul(x.to(dev), y.to(dev)), ref(torch.matmul, x, y, dtype=dtype), 7)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("in_shape", [(6, 9), (2, 3, 9), (1, 9), (3, 2, 9)], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_linear(dev, dtype, in_shape, bias):
    x, w = rand(*in_shape, dtype=dtype, seed=32), rand(5, 9, dtype=dtype, seed=33)
    if in_shape == (3, 2, 9):  # a non-contiguous 3-d input takes matmul (+ add_) instead of addmm
        x = x.transpose(0, 1)
    b = rand(5, dtype=dtype, seed=34) if bias else None
    expected = ref(F.linear, x, w, b, dtype=dtype)
    xd = x.to(dev) if x.is_contiguous() else x.transpose(0, 1).to(dev).transpose(0, 1)
    assert xd.stride() == x.stride()
    check(F.linear(xd, w.to(dev), b.to(dev) if bias else None), expected, 9)


def test_linear_runs_addmm_on_device(dev):
    x, w, b = rand(4, 8).to(dev), rand(3, 8).to(dev), rand(3).to(dev)
    ran_on_device(["aten::addmm"], lambda: F.linear(x, w, b))


def test_autograd_through_matmul_and_bmm(dev):
    a, b = rand(5, 7, seed=35), rand(7, 3, seed=36)
    g = rand(5, 3, seed=37)
    da, db = a.to(dev).requires_grad_(), b.to(dev).requires_grad_()
    ca, cb = a.clone().requires_grad_(), b.clone().requires_grad_()
    torch.matmul(da, db).backward(g.to(dev))
    torch.matmul(ca, cb).backward(g)
    check(da.grad, ca.grad, 3)
    check(db.grad, cb.grad, 5)

    x, y, gy = rand(2, 4, 6, seed=38), rand(2, 6, 3, seed=39), rand(2, 4, 3, seed=40)
    dx, dy = x.to(dev).requires_grad_(), y.to(dev).requires_grad_()
    cx, cy = x.clone().requires_grad_(), y.clone().requires_grad_()
    torch.bmm(dx, dy).backward(gy.to(dev))
    torch.bmm(cx, cy).backward(gy)
    check(dx.grad, cx.grad, 3)
    check(dy.grad, cy.grad, 4)

    # linear without bias on a 3-d input: matmul folds to mm; its backward is mm too
    w = rand(5, 6, seed=41)
    dxx, dw = x.to(dev).requires_grad_(), w.to(dev).requires_grad_()
    cxx, cw = x.clone().requires_grad_(), w.clone().requires_grad_()
    go = rand(2, 4, 5, seed=42)
    F.linear(dxx, dw).backward(go.to(dev))
    F.linear(cxx, cw).backward(go)
    check(dxx.grad, cxx.grad, 5)
    check(dw.grad, cw.grad, 8)


# ---- errors ----------------------------------------------------------------------------------------

def test_errors_name_the_op_and_leave_the_device_usable(dev):
    a, b = rand(3, 4).to(dev), rand(5, 6).to(dev)
    with pytest.raises(RuntimeError, match=r"aten::mm.*cannot be multiplied \(3x4 and 5x6\)"):
        torch.mm(a, b)
    with pytest.raises(RuntimeError, match=r"aten::mm.*must be a matrix"):
        torch.mm(rand(3).to(dev), b)
    with pytest.raises(RuntimeError, match=r"aten::mm.*same dtype"):
        torch.mm(a, rand(4, 2).half().to(dev))
    with pytest.raises(NotImplementedError, match=r"aten::mm.*Int.*mlu"):
        torch.mm(torch.ones(3, 4, dtype=torch.int32).to(dev), torch.ones(4, 2, dtype=torch.int32).to(dev))
    with pytest.raises(NotImplementedError, match=r"aten::bmm.*Double.*mlu"):
        torch.bmm(rand(2, 3, 4).double().to(dev), rand(2, 4, 2).double().to(dev))
    with pytest.raises(RuntimeError, match=r"aten::bmm.*same number of batches"):
        torch.bmm(rand(2, 3, 4).to(dev), rand(3, 4, 2).to(dev))
    with pytest.raises(RuntimeError, match=r"aten::addmm.*cannot be broadcast"):
        torch.addmm(rand(4).to(dev), a, rand(4, 5).to(dev))
    with pytest.raises(RuntimeError, match=r"aten::addmm_.*in-place result"):
        rand(3, 1).to(dev).addmm_(a, rand(4, 5).to(dev))
    with pytest.raises(RuntimeError, match=r"aten::mm.out.*dtype"):
        torch.mm(a, rand(4, 2).to(dev), out=torch.empty(3, 2, dtype=torch.float16, device=dev))
    with pytest.raises(RuntimeError, match=r"aten::dot.*1D tensors expected"):
        torch.dot(a, a)
    with pytest.raises(RuntimeError, match=r"aten::dot.*inconsistent tensor size"):
        torch.dot(rand(3).to(dev), rand(4).to(dev))
    with pytest.raises(RuntimeError, match=r"aten::mv.*size mismatch"):
        torch.mv(a, rand(3).to(dev))
    with pytest.raises(RuntimeError, match=r"aten::mm.*expected mat2 on mlu:0"):
        torch.mm(a, rand(4, 2))
    # still usable
    check(torch.mm(a, rand(4, 2).to(dev)), rand(3, 4) @ rand(4, 2), 4)
