"""Reductions on the device (torch_bridge/src/ops/reduce_ops.cpp over libmlu reduce.h) against
torch's CPU results: sum / mean / prod, amax / amin, max / min (full and with indices), argmax /
argmin, var / std (+ _mean), linalg.vector_norm and norm; functional and out= variants, dtype=,
negative / multiple / empty dim lists, keepdim, 0-dim and empty tensors, non-contiguous inputs,
fp16 (atol/rtol 1e-2 against the fp32 result rounded to fp16), integer and bool inputs, errors."""

import math

import pytest
import torch

import torch_mlu

F16 = dict(atol=1e-2, rtol=1e-2)
F32 = dict(atol=1e-5, rtol=1e-5)


def sample(shape, dtype, seed=0, low=-3, high=4):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(low, high, shape, generator=g).to(dtype)


def tol(dtype):
    return F16 if dtype == torch.float16 else F32


def close(got, want, **kw):
    assert got.device.type == "mlu"
    torch.testing.assert_close(got.cpu(), want, equal_nan=True, **kw)


def ref(fn, x):
    """fn on the CPU; fp16 computes in fp32 and rounds (the CPU lacks some fp16 reductions)."""
    if x.dtype == torch.float16:
        r = fn(x.float())
        return r.half() if r.dtype == torch.float32 else r
    return fn(x)


def device_views(x, dev):
    """x itself on the device plus non-contiguous device views with x's values."""
    out = [x.to(dev)]
    if x.dim() >= 2:
        out.append(x.transpose(0, 1).contiguous().to(dev).transpose(0, 1))  # transposed
        big = torch.zeros((x.shape[0], x.shape[1] * 2) + tuple(x.shape[2:]), dtype=x.dtype)
        big[:, ::2] = x
        out.append(big.to(dev)[:, ::2])  # strided slice
    return out


def ran_on_device(name):
    torch_mlu.synchronize()
    ops = {o["name"]: o for o in torch_mlu.cycle_report(format="json")["ops"]}
    return name in ops and ops[name]["kernels"] > 0


# ---- sum / mean / prod ------------------------------------------------------------------------------

DIMS = [None, 0, -1, (0, 2), (-1, 0), (), (1,)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.int64, torch.int8, torch.bool],
                         ids=str)
def test_sum(dev, dtype):
    x = sample((3, 4, 5), dtype)
    for d in device_views(x, dev):
        for dim in DIMS:
            for keepdim in (False, True):
                if dim is None:
                    got, want = torch.sum(d), ref(torch.sum, x)
                else:
                    got, want = torch.sum(d, dim, keepdim=keepdim), ref(lambda t: torch.sum(t, dim, keepdim=keepdim), x)
                assert got.dtype == want.dtype and got.shape == want.shape
                close(got, want, **tol(dtype))
    # out=: the out dtype is the result dtype (torch's rule); a wrong shape is resized
    d = x.to(dev)
    out = torch.empty(7, dtype=want.dtype, device=dev)
    with pytest.warns(UserWarning, match="resized"):
        torch.sum(d, (0, -1), keepdim=True, out=out)
    close(out, ref(lambda t: torch.sum(t, (0, -1), keepdim=True), x), **tol(dtype))


def test_sum_dtype_argument_and_out_dtype(dev):
    xi = sample((4, 6), torch.int32)
    xf = sample((4, 6), torch.float32) * 3
    xh = sample((4, 6), torch.float16)
    close(torch.sum(xi.to(dev), 1, dtype=torch.float32), torch.sum(xi, 1, dtype=torch.float32))
    close(torch.sum(xf.to(dev), 0, dtype=torch.int64), torch.sum(xf, 0, dtype=torch.int64))  # truncates first
    close(torch.sum(xh.to(dev), dtype=torch.float32), torch.sum(xh, dtype=torch.float32), **F16)
    close(torch.sum(xf.to(dev), 1, dtype=torch.float16), torch.sum(xf, 1, dtype=torch.float16), **F16)
    close(xi.to(dev).sum(dtype=torch.int32), xi.sum(dtype=torch.int32))
    out = torch.empty(0, dtype=torch.float32, device=dev)  # out dtype without dtype=: computes in float
    torch.sum(xi.to(dev), 0, out=out)
    close(out, torch.sum(xi, 0, out=torch.empty(0)))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        torch.sum(xf.to(dev), 0, dtype=torch.float32, out=torch.empty(0, dtype=torch.float16, device=dev))
    out = torch.empty(0, dtype=torch.int64, device=dev)
    torch.ops.aten.sum.out(xi.to(dev), out=out)  # sum.out (all dims)
    close(out, xi.sum())
    close(xf.to(dev).sum(), xf.sum())  # the device is still usable


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_mean(dev, dtype):
    x = sample((3, 4, 5), dtype)
    for d in device_views(x, dev):
        for dim in DIMS:
            for keepdim in (False, True):
                if dim is None:
                    got, want = torch.mean(d), ref(torch.mean, x)
                else:
                    got, want = d.mean(dim, keepdim=keepdim), ref(lambda t: t.mean(dim, keepdim=keepdim), x)
                assert got.dtype == want.dtype and got.shape == want.shape
                close(got, want, **tol(dtype))
    out = torch.empty(0, dtype=dtype, device=dev)
    torch.mean(x.to(dev), [1], out=out)
    close(out, ref(lambda t: t.mean([1]), x), **tol(dtype))


def test_mean_of_integers_needs_a_dtype(dev):
    x = sample((5, 3), torch.int64)
    close(torch.mean(x.to(dev), 0, dtype=torch.float32), torch.mean(x, 0, dtype=torch.float32))
    close(x.to(dev).mean(dtype=torch.float32), x.mean(dtype=torch.float32))
    with pytest.raises(RuntimeError, match="mean"):
        x.to(dev).mean()
    with pytest.raises(RuntimeError, match="mean"):
        x.to(dev).mean(1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.int64, torch.bool], ids=str)
def test_prod(dev, dtype):
    x = sample((3, 4, 5), dtype, low=-2, high=3)
    if dtype.is_floating_point:
        x = (x.float() * 0.5 + 1).to(dtype)
    for d in device_views(x, dev):
        close(torch.prod(d), ref(torch.prod, x), **tol(dtype))
        for dim in (0, -1, 1):
            for keepdim in (False, True):
                got = torch.prod(d, dim, keepdim=keepdim)
                want = ref(lambda t: torch.prod(t, dim, keepdim=keepdim), x)
                assert got.dtype == want.dtype and got.shape == want.shape
                close(got, want, **tol(dtype))
    d = x.to(dev)
    out = torch.empty(0, dtype=torch.prod(x.float()).dtype if dtype.is_floating_point else torch.int64, device=dev)
    torch.prod(d, 2, out=out)
    close(out, ref(lambda t: torch.prod(t, 2), x).to(out.dtype), **tol(dtype))
    if dtype != torch.float16:
        out_all = torch.empty(3, dtype=torch.prod(x).dtype, device=dev)
        torch.ops.aten.prod.out(d, out=out_all)  # prod.out (all dims)
        close(out_all, torch.prod(x), **tol(dtype))
    close(torch.prod(d, 1, dtype=torch.float32), torch.prod(x.float(), 1), **tol(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32], ids=str)
def test_larger_reductions_split_across_cores(dev, dtype):
    t = dict(atol=0.5, rtol=1e-2) if dtype == torch.float16 else dict(atol=1e-3, rtol=1e-4)
    for shape, dim in (((2, 3000), 1), ((3000, 3), 0), ((40, 50, 6), (0, 2)), ((20000,), None)):
        x = sample(shape, dtype)
        d = x.to(dev)
        close(d.sum(dim) if dim is not None else d.sum(), ref(lambda u: u.sum(dim) if dim is not None else u.sum(), x), **t)
        close(d.amax(dim if dim is not None else ()), x.amax(dim if dim is not None else ()))
        if dim is not None and not isinstance(dim, tuple):
            v, i = d.min(dim)
            close(v, x.min(dim).values)
            close(i, x.min(dim).indices)
        else:
            close(d.argmax(), x.argmax())
        if dtype.is_floating_point:
            close(d.var(dim), ref(lambda u: u.var(dim), x), **t)
            close(torch.linalg.vector_norm(d, 2, dim), ref(lambda u: torch.linalg.vector_norm(u, 2, dim), x), **t)


def test_empty_and_zero_dim_identities(dev):
    e = torch.empty(0, 3)
    de = e.to(dev)
    close(de.sum(0), e.sum(0))
    close(de.sum(1), e.sum(1))
    close(de.sum(), e.sum())
    close(de.prod(0), e.prod(0))
    close(de.mean(0), e.mean(0))
    close(de.var(0), e.var(0))
    close(torch.linalg.vector_norm(de, dim=0), torch.linalg.vector_norm(e, dim=0))
    close(torch.empty(0, dtype=torch.int32).to(dev).sum(), torch.tensor(0))
    s = torch.tensor(2.5)
    ds = s.to(dev)
    for fn in (lambda t: t.sum(), lambda t: t.sum(0), lambda t: t.sum(-1, keepdim=True), lambda t: t.mean(0),
               lambda t: t.prod(0), lambda t: t.amax(), lambda t: t.amin([0]), lambda t: t.max(),
               lambda t: torch.linalg.vector_norm(t, 3), lambda t: t.var(0, correction=0),
               lambda t: t.argmax(), lambda t: t.argmin(0)):
        got, want = fn(ds), fn(s)
        assert got.shape == want.shape == ()
        close(got, want)
    v, i = ds.max(0)
    assert v.shape == () and i.shape == () and i.dtype == torch.int64
    close(v, s)
    close(i, torch.tensor(0))


def test_reduce_errors(dev):
    x = sample((3, 4), torch.float32).to(dev)
    with pytest.raises(IndexError, match="out of range"):
        x.sum(2)
    with pytest.raises(IndexError, match="out of range"):
        x.amax(-3)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        x.sum([0, -2])
    with pytest.raises(NotImplementedError, match="sum.*ComplexFloat"):
        torch.sum(x.to(torch.complex64), 0)
    close(x.sum(0), x.cpu().sum(0))  # the device is still usable


# ---- amax / amin / max / min ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.int8, torch.bool], ids=str)
def test_amax_amin_max_min(dev, dtype):
    x = sample((3, 5, 4), dtype)
    for d in device_views(x, dev):
        for fn in (torch.amax, torch.amin):
            for dim in ((), 0, -1, (0, 2), (1, -1)):
                for keepdim in (False, True):
                    close(fn(d, dim, keepdim), fn(x, dim, keepdim))
        close(torch.max(d), torch.max(x))
        close(torch.min(d), torch.min(x))
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                for fn in (torch.max, torch.min):
                    v, i = fn(d, dim, keepdim)
                    wv, wi = fn(x, dim, keepdim)
                    assert i.dtype == torch.int64 and v.dtype == dtype
                    close(v, wv)
                    close(i, wi)  # ties: the first index, as the CPU
    d = x.to(dev)
    out = torch.empty(0, dtype=dtype, device=dev)
    torch.amax(d, (0, 1), out=out)
    close(out, torch.amax(x, (0, 1)))
    out = torch.empty(0, dtype=dtype, device=dev)
    torch.amin(d, 2, True, out=out)
    close(out, torch.amin(x, 2, True))
    v, i = torch.empty(0, dtype=dtype, device=dev), torch.empty(0, dtype=torch.int64, device=dev)
    torch.max(d, 1, out=(v, i))
    close(v, torch.max(x, 1).values)
    close(i, torch.max(x, 1).indices)
    v, i = torch.empty(0, dtype=dtype, device=dev), torch.empty(0, dtype=torch.int64, device=dev)
    torch.min(d, -1, keepdim=True, out=(v, i))
    close(v, torch.min(x, -1, keepdim=True).values)
    close(i, torch.min(x, -1, keepdim=True).indices)


def test_max_min_nan_and_errors(dev):
    x = torch.tensor([[1.0, float("nan"), 3.0], [4.0, 5.0, -1.0]])
    d = x.to(dev)
    close(d.max(), x.max())
    close(d.amax(1), x.amax(1))
    close(d.amin(0), x.amin(0))
    for fn in (torch.max, torch.min):
        v, i = fn(d, 1)
        close(v, fn(x, 1).values)
        close(i, fn(x, 1).indices)
    e = torch.empty(0, 3).to(dev)
    with pytest.raises(RuntimeError, match="max\\(\\)"):
        e.max()
    with pytest.raises(RuntimeError, match="min\\(\\)"):
        e.min()
    with pytest.raises(IndexError, match="max\\(\\): Expected reduction dim 0"):
        e.max(0)
    with pytest.raises(IndexError, match="amax\\(\\): Expected reduction dim 0"):
        e.amax(0)
    with pytest.raises(IndexError, match="argmax"):
        e.argmax()
    v, i = e.max(1)  # reduces a non-empty dim of an empty tensor
    assert v.shape == (0,) and i.shape == (0,)
    assert e.amin(1).shape == (0,)
    with pytest.raises(RuntimeError, match="dtype"):
        torch.amax(d, 0, out=torch.empty(0, dtype=torch.float16, device=dev))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        torch.max(d, 0, out=(torch.empty(0, device=dev), torch.empty(0, dtype=torch.int32, device=dev)))
    close(d.amax(0), x.amax(0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64], ids=str)
def test_argmax_argmin(dev, dtype):
    x = sample((4, 3, 5), dtype)
    for d in device_views(x, dev):
        for fn in (torch.argmax, torch.argmin):
            for keepdim in (False, True):
                for dim in (None, 0, 1, -1):
                    got, want = fn(d, dim, keepdim), fn(x, dim, keepdim)
                    assert got.dtype == torch.int64 and got.shape == want.shape
                    close(got, want)
    out = torch.empty(0, dtype=torch.int64, device=dev)
    torch.argmax(x.to(dev), 1, out=out)
    close(out, torch.argmax(x, 1))
    out = torch.empty(0, dtype=torch.int64, device=dev)
    torch.argmin(x.to(dev), out=out)
    close(out, torch.argmin(x))
    with pytest.raises(RuntimeError, match="(?i)long"):
        torch.argmax(x.to(dev), 0, out=torch.empty(0, dtype=torch.int32, device=dev))


# ---- var / std ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_var_std(dev, dtype):
    x = (sample((4, 6, 5), dtype).float() * 2 + 1).to(dtype)
    t = tol(dtype)
    for d in device_views(x, dev):
        for dim in (None, 0, -1, (0, 2), ()):
            for correction in (0, 1, 2):
                for keepdim in (False, True):
                    for fn in (torch.var, torch.std):
                        got = fn(d, dim, correction=correction, keepdim=keepdim)
                        want = ref(lambda u: fn(u, dim, correction=correction, keepdim=keepdim), x)
                        assert got.shape == want.shape and got.dtype == dtype
                        close(got, want, **t)
        for fn in (torch.var_mean, torch.std_mean):
            for dim, unbiased in ((1, False), ((0, 1), True)):
                gv, gm = fn(d, dim, unbiased=unbiased, keepdim=True)
                wv, wm = ref(lambda u: fn(u, dim, unbiased=unbiased, keepdim=True)[0], x), \
                    ref(lambda u: fn(u, dim, unbiased=unbiased, keepdim=True)[1], x)
                close(gv, wv, **t)
                close(gm, wm, **t)
        close(d.var(), ref(torch.var, x), **t)  # unbiased overloads are composites over .correction
        close(d.std(1, unbiased=False), ref(lambda u: u.std(1, unbiased=False), x), **t)
    dd = x.to(dev)
    out = torch.empty(0, dtype=dtype, device=dev)
    torch.var(dd, 1, out=out)
    close(out, ref(lambda u: torch.var(u, 1), x), **t)
    out = torch.empty(0, dtype=dtype, device=dev)
    torch.std(dd, (0, 2), correction=0, out=out)
    close(out, ref(lambda u: torch.std(u, (0, 2), correction=0), x), **t)
    o1, o2 = torch.empty(0, dtype=dtype, device=dev), torch.empty(0, dtype=dtype, device=dev)
    torch.ops.aten.var_mean.correction_out(dd, [0], correction=1, out0=o1, out1=o2)  # composite
    close(o1, ref(lambda u: torch.var(u, 0), x), **t)
    close(o2, ref(lambda u: torch.mean(u, 0), x), **t)


def test_var_edge_cases_and_errors(dev):
    one = torch.randn(1, 3)
    close(one.to(dev).var(0), one.var(0))  # N - correction = 0: NaN
    close(one.to(dev).var(0, correction=0), one.var(0, correction=0))
    with pytest.raises(RuntimeError, match="std and var"):
        torch.arange(6).to(dev).var()
    x = torch.randn(3, 4)
    close(x.to(dev).std(1), x.std(1))


# ---- norms --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_linalg_vector_norm(dev, dtype):
    x = sample((3, 4, 5), dtype)
    t = dict(atol=2e-2, rtol=2e-2) if dtype == torch.float16 else dict(atol=1e-4, rtol=1e-4)
    for d in device_views(x, dev):
        for ord in (2, 1, math.inf, -math.inf, 0, 3, 0.5, -1):
            for dim in (None, 0, (-1, 0), ()):
                for keepdim in (False, True):
                    got = torch.linalg.vector_norm(d, ord, dim, keepdim)
                    want = ref(lambda u: torch.linalg.vector_norm(u, ord, dim, keepdim), x)
                    assert got.shape == want.shape and got.dtype == dtype
                    close(got, want, **t)
    dd = x.to(dev)
    out = torch.empty(0, dtype=dtype, device=dev)
    torch.linalg.vector_norm(dd, 2, 1, out=out)
    close(out, ref(lambda u: torch.linalg.vector_norm(u, 2, 1), x), **t)
    got = torch.linalg.vector_norm(dd, 2, dtype=torch.float32)
    assert got.dtype == torch.float32
    close(got, torch.linalg.vector_norm(x, 2, dtype=torch.float32), **t)


def test_norm_overloads(dev):
    x = sample((4, 6), torch.float32)
    d = x.to(dev)
    vf = torch._C._VariableFunctions
    close(vf.norm(d, 2, [1], False), vf.norm(x, 2, [1], False), **F32)  # norm.ScalarOpt_dim
    close(vf.norm(d, None, [], True), vf.norm(x, None, [], True), **F32)
    close(vf.norm(d, 3), vf.norm(x, 3), **F32)  # norm.Scalar (composite)
    close(vf.norm(d, 1, [0], False, dtype=torch.float32), vf.norm(x, 1, [0], False, dtype=torch.float32))
    h = x.half().to(dev)
    got = vf.norm(h, 2, [0], False, dtype=torch.float32)  # norm.ScalarOpt_dim_dtype
    assert got.dtype == torch.float32
    close(got, vf.norm(x.half().float(), 2, [0], False), **F16)
    out = torch.empty(0, device=dev)
    vf.norm(d, 2, [0], True, out=out)  # norm.out
    close(out, vf.norm(x, 2, [0], True), **F32)
    out = torch.empty(0, device=dev)
    vf.norm(d, math.inf, [1], False, dtype=torch.float32, out=out)  # norm.dtype_out
    close(out, vf.norm(x, math.inf, [1], False), **F32)
    close(torch.norm(d), torch.norm(x), **F32)  # python torch.norm -> linalg_vector_norm
    close(d.norm(p=1, dim=1), x.norm(p=1, dim=1), **F32)


def test_norm_errors(dev):
    with pytest.raises(RuntimeError, match="vector_norm"):
        torch.linalg.vector_norm(torch.arange(4).to(dev))
    with pytest.raises(RuntimeError, match="vector_norm"):
        torch.linalg.vector_norm(torch.randn(3).to(dev), dtype=torch.int64)
    with pytest.raises(RuntimeError, match="norm\\(\\)"):
        torch._C._VariableFunctions.norm(torch.arange(4).to(dev), 2)
    e = torch.empty(0, 3).to(dev)
    with pytest.raises(RuntimeError, match="inf norm"):
        torch.linalg.vector_norm(e, math.inf)
    with pytest.raises(RuntimeError, match="inf norm"):
        torch.linalg.vector_norm(e, math.inf, dim=0)
    assert torch.linalg.vector_norm(e, math.inf, dim=1).shape == (0,)
    x = torch.randn(5)
    close(torch.linalg.vector_norm(x.to(dev)), torch.linalg.vector_norm(x))


# ---- it runs on the device -----------------------------------------------------------------------------------

def test_kernels_ran_on_the_device(dev):
    x = sample((4, 5), torch.float32).to(dev)
    torch_mlu.reset_stats()
    x.sum(0)
    x.mean()
    x.amax(1)
    x.max(1)
    x.argmin()
    x.var(0)
    torch.linalg.vector_norm(x)
    for name in ("aten::sum.dim_IntList", "aten::mean", "aten::amax", "aten::max.dim", "aten::argmin",
                 "aten::var.correction", "aten::linalg_vector_norm"):
        assert ran_on_device(name), name
    assert torch_mlu.cpu_fallback_counts() == {}


def test_out_into_non_contiguous_views(dev):
    x = sample((4, 5, 6), torch.float32)
    d = x.to(dev)
    o = torch.zeros(6, 10).to(dev)[:, ::2].t()  # (5, 6), strided and transposed
    torch.sum(d, 0, out=o)
    close(o, x.sum(0), **F32)
    v = torch.zeros(6, 10).to(dev)[:, ::2].t()
    i = torch.zeros(6, 10, dtype=torch.int64).to(dev)[:, ::2].t()
    torch.max(d, 0, out=(v, i))
    close(v, x.max(0).values)
    close(i, x.max(0).indices)


def test_int64_values_beyond_int32_fault(dev):
    """libmlu narrows int64 inputs to int32 with a range check: a value beyond int32 faults the
    kernel (reported at the next synchronisation) instead of giving a wrong sum."""
    with pytest.raises(RuntimeError, match="out of range"):
        torch.tensor([2 ** 40, 1]).to(dev).sum().cpu()
    close(torch.tensor([2 ** 30, 1]).to(dev).sum(), torch.tensor(2 ** 30 + 1))  # still usable


@pytest.mark.xfail(strict=True, reason="libmlu accumulates integral sums in int32 (wrapping); torch sums in int64")
def test_int32_sum_overflowing_int32(dev):
    x = torch.tensor([2 ** 31 - 1, 1], dtype=torch.int32)
    close(x.to(dev).sum(), x.sum())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.bool])
def test_all_any(dev, dtype):
    x = (torch.randn(6, 9) > -1.0).to(dtype)
    x[2] = 0
    x[:, 4] = 1
    d = x.to(dev)
    for fn in (torch.all, torch.any):
        assert torch.equal(fn(d).cpu(), fn(x))
        for dim in (0, 1, -1):
            assert torch.equal(fn(d, dim).cpu(), fn(x, dim))
            assert torch.equal(fn(d, dim, keepdim=True).cpu(), fn(x, dim, keepdim=True))
        assert torch.equal(fn(d, dim=(0, 1)).cpu(), fn(x, dim=(0, 1)))
    empty = torch.empty(0, 3, dtype=dtype)
    assert torch.equal(torch.all(empty.to(dev)).cpu(), torch.tensor(True))
    assert torch.equal(torch.any(empty.to(dev), 0).cpu(), torch.zeros(3, dtype=torch.bool))


@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 10), 1), ((3, 10), 0), ((2, 600, 3), 1), ((1, 1100), -1)])
def test_cumsum(dev, shape, dim):
    x = torch.randn(shape)
    torch.testing.assert_close(torch.cumsum(x.to(dev), dim).cpu(), torch.cumsum(x, dim), atol=1e-4, rtol=1e-5)
    h = x.half()
    torch.testing.assert_close(torch.cumsum(h.to(dev), dim).cpu(), torch.cumsum(h, dim), atol=2e-2, rtol=2e-3)
    m = (x > 0).long()  # attention-mask style: position ids
    got = torch.cumsum(m.to(dev), dim)
    assert got.dtype == torch.int64 and torch.equal(got.cpu(), torch.cumsum(m, dim))
    b = torch.cumsum((x > 0).to(dev), dim, dtype=torch.int32)
    assert b.dtype == torch.int32 and torch.equal(b.cpu(), torch.cumsum(x > 0, dim, dtype=torch.int32))


def test_cumsum_refuses_inexact_integer_sums(dev):
    big = torch.full((4,), 1 << 29, dtype=torch.int32)  # partial sums up to 2^31: beyond the VFU's int32
    with pytest.raises(NotImplementedError, match="2\\^31"):
        torch.cumsum(big.to(dev), 0)
    ok = torch.full((3,), 1 << 29, dtype=torch.int32)  # 1.5 * 2^30: exact
    assert torch.equal(torch.cumsum(ok.to(dev), 0).cpu(), torch.cumsum(ok, 0))


def test_float64_sums_and_norms_compute_in_float32(dev):
    """float64 sum / mean / vector_norm (renorm's backward asks for float64 sums): narrowed with the
    range check, reduced in float32, returned as float64."""
    x = torch.randn(4, 6, dtype=torch.float64)
    for got, want in ((x.to(dev).sum(1), x.sum(1)), (x.to(dev).mean(), x.mean()),
                      (torch.linalg.vector_norm(x.to(dev), 3, dim=0), torch.linalg.vector_norm(x, 3, dim=0)),
                      (x.float().to(dev).sum(0, dtype=torch.float64), x.float().sum(0, dtype=torch.float64))):
        assert got.dtype == torch.float64 and got.device.type == "mlu"
        torch.testing.assert_close(got.cpu(), want, rtol=1e-6, atol=1e-6)
    out = torch.empty(0, dtype=torch.float64, device=dev)
    torch.sum(x.to(dev), 0, out=out)
    torch.testing.assert_close(out.cpu(), x.sum(0), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="float32"):
        torch.tensor([1e300], dtype=torch.float64).to(dev).sum()
