"""Indexing ops on the device (torch_bridge/src/ops/index_ops.cpp over libmlu index.h) against
torch's CPU results: index_select, gather, scatter_add (functional, in-place, out=), cat
(functional, out=), embedding forward and embedding_dense_backward (F.embedding / nn.Embedding
with padding_idx and scale_grad_by_freq); non-contiguous inputs, int32/int64 indices, 0-dim and
empty tensors, fp16 / integer / bool data, errors (bad shapes / dtypes, out-of-range indices,
which surface at the next synchronisation like CUDA's device-side asserts)."""

import pytest
import torch
import torch.nn.functional as F

import torch_mlu

DTYPES = [torch.float32, torch.float16, torch.int64, torch.int32, torch.int8, torch.bool]


def sample(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-50, 50, shape, generator=g).to(dtype)


def indices(high, shape, dtype=torch.int64, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, high, shape, generator=g).to(dtype)


def close(got, want, **kw):
    assert got.device.type == "mlu"
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, **kw)


def on_device_views(x, dev):
    """x on the device: contiguous, transposed storage, and a strided slice."""
    out = [x.to(dev)]
    if x.dim() >= 2:
        out.append(x.transpose(0, 1).contiguous().to(dev).transpose(0, 1))
        big = torch.zeros((x.shape[0] * 2,) + tuple(x.shape[1:]), dtype=x.dtype)
        big[::2] = x
        out.append(big.to(dev)[::2])
    return out


def ran_on_device(name):
    torch_mlu.synchronize()
    ops = {o["name"]: o for o in torch_mlu.cycle_report(format="json")["ops"]}
    return name in ops and ops[name]["kernels"] > 0


# ---- index_select ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_index_select(dev, dtype):
    x = sample((5, 7, 3), dtype)
    for d in on_device_views(x, dev):
        for dim in (0, 1, -1, 2):
            for idx_dtype in (torch.int64, torch.int32):
                idx = indices(x.shape[dim], (9,), idx_dtype)
                close(d.index_select(dim, idx.to(dev)), x.index_select(dim, idx))
    d = x.to(dev)
    strided_idx = indices(5, (12,)).to(dev)[::3]  # non-contiguous index
    close(d.index_select(0, strided_idx), x.index_select(0, strided_idx.cpu()))
    close(d.index_select(1, torch.tensor(4).to(dev)), x.index_select(1, torch.tensor(4)))  # 0-dim index
    close(d.index_select(1, torch.empty(0, dtype=torch.int64).to(dev)), x.index_select(1, torch.empty(0, dtype=torch.int64)))
    out = torch.empty(0, dtype=dtype, device=dev)
    idx = indices(7, (4,))
    torch.index_select(d, 1, idx.to(dev), out=out)
    close(out, x.index_select(1, idx))


def test_index_select_edge_cases_and_errors(dev):
    s = torch.tensor(3.5)
    close(s.to(dev).index_select(0, torch.tensor([0]).to(dev)), s.index_select(0, torch.tensor([0])))
    e = torch.empty(0, 4)
    close(e.to(dev).index_select(1, torch.tensor([3, 0]).to(dev)), e.index_select(1, torch.tensor([3, 0])))
    x = sample((4, 5), torch.float32)
    d = x.to(dev)
    with pytest.raises(RuntimeError, match="index_select"):
        d.index_select(0, torch.tensor([0.0]).to(dev))
    with pytest.raises(IndexError, match="index_select"):
        d.index_select(0, torch.tensor([[0]]).to(dev))
    with pytest.raises(IndexError, match="out of range"):
        d.index_select(2, torch.tensor([0]).to(dev))
    with pytest.raises(RuntimeError, match="index_select"):
        torch.index_select(d, 0, torch.tensor([0]).to(dev), out=torch.empty(0, dtype=torch.float16, device=dev))
    with pytest.raises(RuntimeError, match="index_select"):
        d.index_select(0, torch.tensor([0]))  # index on the CPU
    # An index out of range faults the kernel: reported at the next synchronisation.
    with pytest.raises(RuntimeError, match="index_select: index 7 is out of range for dim 0 of size 4"):
        d.index_select(0, torch.tensor([1, 7]).to(dev)).cpu()
    with pytest.raises(RuntimeError, match="out of range"):
        d.index_select(1, torch.tensor([-1]).to(dev)).cpu()
    close(d.index_select(0, torch.tensor([3, 1]).to(dev)), x.index_select(0, torch.tensor([3, 1])))  # still usable


# ---- gather ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gather(dev, dtype):
    x = sample((5, 6, 4), dtype)
    for d in on_device_views(x, dev):
        for dim in (0, 1, -1):
            shape = [3, 4, 2]
            shape[dim] = 8  # along dim the index may be longer than self
            idx = indices(x.shape[dim], tuple(shape))
            close(torch.gather(d, dim, idx.to(dev)), torch.gather(x, dim, idx))
            idx_t = idx.transpose(0, 2).contiguous().to(dev).transpose(0, 2)  # non-contiguous index
            close(torch.gather(d, dim, idx_t), torch.gather(x, dim, idx))
    out = torch.empty(0, dtype=dtype, device=dev)
    idx = indices(6, (5, 2, 4))
    torch.gather(x.to(dev), 1, idx.to(dev), out=out)
    close(out, torch.gather(x, 1, idx))


def test_gather_edge_cases_and_errors(dev):
    s = torch.tensor(2.0)
    close(torch.gather(s.to(dev), 0, torch.tensor(0).to(dev)), torch.gather(s, 0, torch.tensor(0)))
    close(torch.gather(s.to(dev), 0, torch.tensor([0, 0]).to(dev)), torch.gather(s, 0, torch.tensor([0, 0])))
    x = sample((3, 4), torch.float32)
    d = x.to(dev)
    empty_idx = torch.empty(0, 4, dtype=torch.int64)
    close(torch.gather(d, 0, empty_idx.to(dev)), torch.gather(x, 0, empty_idx))
    i32 = torch.tensor([[2, 0, 1, 1]], dtype=torch.int32)  # torch 2 takes int32 indices too
    close(torch.gather(d, 0, i32.to(dev)), torch.gather(x, 0, i32))
    with pytest.raises(RuntimeError, match="gather\\(\\): Expected dtype int32/int64 for index"):
        torch.gather(d, 0, torch.zeros(1, 1, dtype=torch.int16).to(dev))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        torch.gather(d, 0, torch.zeros(2, dtype=torch.int64).to(dev))
    with pytest.raises(RuntimeError, match="Size does not match at dimension 0"):
        torch.gather(d, 1, torch.zeros(5, 2, dtype=torch.int64).to(dev))
    with pytest.raises(RuntimeError, match="gather: index 4 is out of range"):
        torch.gather(d, 1, torch.tensor([[0, 4]]).to(dev)).cpu()
    close(torch.gather(d, 1, torch.tensor([[3, 0]]).to(dev)), torch.gather(x, 1, torch.tensor([[3, 0]])))


# ---- scatter_add -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.int32, torch.int8], ids=str)
def test_scatter_add(dev, dtype):
    x = sample((5, 6, 4), dtype)
    src = sample((7, 6, 5), dtype, seed=3)
    kw = dict(atol=1e-2, rtol=1e-2) if dtype == torch.float16 else {}
    for d in on_device_views(x, dev):
        for dim in (0, 1, -1):
            shape = [4, 5, 3]
            shape[dim] = 5
            idx = indices(x.shape[dim], tuple(shape))  # duplicates accumulate
            want = torch.scatter_add(x, dim, idx, src)
            close(torch.scatter_add(d, dim, idx.to(dev), src.to(dev)), want, **kw)
            close(d, x)  # the functional form leaves self alone
            for t in on_device_views(x, dev):  # in place, also into transposed / strided views
                r = t.scatter_add_(dim, idx.to(dev), src.to(dev))
                assert r is t
                close(t, want, **kw)
    d = x.to(dev)
    idx = indices(5, (3, 6, 4))
    out = torch.empty(0, dtype=dtype, device=dev)
    torch.scatter_add(d, 0, idx.to(dev), src.to(dev), out=out)
    close(out, torch.scatter_add(x, 0, idx, src), **kw)
    close(d, x)  # self untouched by the functional / out= forms


def test_scatter_add_edge_cases_and_errors(dev):
    x = sample((3, 4), torch.float32)
    d = x.to(dev)
    empty_idx = torch.empty(0, dtype=torch.int64)
    close(torch.scatter_add(d, 0, empty_idx.to(dev), torch.empty(0).to(dev)), torch.scatter_add(x, 0, empty_idx, torch.empty(0)))
    s = torch.tensor(1.5)
    close(torch.scatter_add(s.to(dev), 0, torch.tensor(0).to(dev), torch.tensor(2.0).to(dev)),
          torch.scatter_add(s, 0, torch.tensor(0), torch.tensor(2.0)))
    i32 = torch.tensor([[2, 0, 1, 1]], dtype=torch.int32)
    close(torch.scatter_add(d, 0, i32.to(dev), torch.ones(1, 4).to(dev)), torch.scatter_add(x, 0, i32, torch.ones(1, 4)))
    with pytest.raises(RuntimeError, match="scatter\\(\\): Expected dtype int32/int64 for index"):
        d.scatter_add(0, torch.zeros(1, 1, dtype=torch.int16).to(dev), d)
    with pytest.raises(RuntimeError, match="scatter\\(\\): Expected self.dtype to be equal to src.dtype"):
        d.scatter_add(0, torch.zeros(1, 1, dtype=torch.int64).to(dev), d.cpu().half().to(dev))
    with pytest.raises(RuntimeError, match="smaller"):
        d.scatter_add(0, torch.zeros(2, 5, dtype=torch.int64).to(dev), torch.zeros(2, 2).to(dev))
    with pytest.raises(NotImplementedError, match="scatter_add"):
        torch.zeros(3, dtype=torch.bool).to(dev).scatter_add(0, torch.tensor([0]).to(dev),
                                                             torch.ones(1, dtype=torch.bool).to(dev))
    with pytest.raises(RuntimeError, match="scatter_add: index 3 is out of range"):
        d.scatter_add(0, torch.tensor([[3]]).to(dev), d).cpu()
    close(d.scatter_add(0, torch.tensor([[2]]).to(dev), d), x.scatter_add(0, torch.tensor([[2]]), x))


# ---- cat ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cat(dev, dtype):
    a, b, c = sample((3, 4, 2), dtype), sample((3, 5, 2), dtype, 1), sample((3, 1, 2), dtype, 2)
    for da, db in zip(on_device_views(a, dev), on_device_views(b, dev)):
        close(torch.cat([da, db, c.to(dev)], 1), torch.cat([a, b, c], 1))
        close(torch.cat([da, db, c.to(dev)], -2), torch.cat([a, b, c], -2))
    close(torch.cat([a.to(dev), a.to(dev)], 0), torch.cat([a, a], 0))
    close(torch.cat([a.to(dev), a.to(dev)], 2), torch.cat([a, a], 2))
    close(torch.cat([a.to(dev)]), torch.cat([a]))
    out = torch.empty(0, dtype=dtype, device=dev)
    torch.cat([a.to(dev), c.to(dev)], 1, out=out)
    close(out, torch.cat([a, c], 1))


def test_cat_promotion_empty_inputs_and_layouts(dev):
    a, b = sample((2, 3), torch.float32), sample((2, 3), torch.int32)
    close(torch.cat([a.to(dev), b.to(dev)]), torch.cat([a, b]))  # promotes to float32
    h = sample((1, 3), torch.float16)
    close(torch.cat([h.to(dev), a.to(dev)]), torch.cat([h, a]))
    out = torch.empty(0, dtype=torch.float32, device=dev)
    torch.cat([b.to(dev), b.to(dev)], 1, out=out)  # int -> float out
    close(out, torch.cat([b, b], 1, out=torch.empty(0)))
    legacy = torch.empty(0)
    close(torch.cat([a.to(dev), legacy.to(dev), a.to(dev)], 1), torch.cat([a, legacy, a], 1))  # skipped
    close(torch.cat([legacy.to(dev), legacy.to(dev)]), torch.cat([legacy, legacy]))
    z = torch.empty(0, 3)
    close(torch.cat([z.to(dev), a.to(dev), z.to(dev)]), torch.cat([z, a, z]))
    many = [sample((1, 2), torch.float32, i) for i in range(12)]
    close(torch.cat([m.to(dev) for m in many]), torch.cat(many))
    close(torch.stack([a.to(dev), a.to(dev)], 1), torch.stack([a, a], 1))  # stack -> cat
    cl = sample((2, 3, 4, 5), torch.float32).to(memory_format=torch.channels_last)
    got = torch.cat([cl.to(dev), cl.to(dev)], 1)
    assert got.is_contiguous(memory_format=torch.channels_last)
    close(got, torch.cat([cl, cl], 1))


def test_cat_errors(dev):
    x = sample((3, 4), torch.float32).to(dev)
    with pytest.raises(ValueError, match="non-empty list"):
        torch.cat([])
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        torch.cat([x, torch.zeros(3, 5).to(dev)])
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        torch.cat([x, torch.zeros(3).to(dev)])
    with pytest.raises(RuntimeError, match="zero-dimensional tensor"):
        torch.cat([x, torch.tensor(1.0).to(dev)])
    with pytest.raises(IndexError, match="out of range"):
        torch.cat([x, x], 2)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.cat([x, x], out=torch.empty(0, dtype=torch.int64, device=dev))
    with pytest.raises(RuntimeError, match="cat"):
        torch.cat([x, torch.zeros(3, 4)])  # a CPU input
    close(torch.cat([x, x]), torch.cat([x.cpu(), x.cpu()]))


# ---- embedding -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
@pytest.mark.parametrize("idx_dtype", [torch.int64, torch.int32], ids=str)
def test_embedding_forward_backward(dev, dtype, idx_dtype):
    kw = dict(atol=1e-2, rtol=1e-2) if dtype == torch.float16 else {}
    w = sample((10, 6), dtype)
    idx = indices(10, (4, 5), idx_dtype)
    idx[0, :3] = 2  # repeated rows accumulate
    grad = sample((4, 5, 6), dtype, seed=7)
    for padding_idx in (None, 2, -1):
        for scale in (False, True):
            wc = w.clone().requires_grad_()
            wd = w.to(dev).requires_grad_()
            want = F.embedding(idx, wc.float() if dtype == torch.float16 else wc, padding_idx, scale_grad_by_freq=scale)
            got = F.embedding(idx.to(dev), wd, padding_idx, scale_grad_by_freq=scale)
            close(got, want.to(dtype), **kw)
            want.backward(grad.float() if dtype == torch.float16 else grad)
            got.backward(grad.to(dev))
            close(wd.grad, wc.grad, **kw)


def test_embedding_module_and_errors(dev):
    torch.manual_seed(0)
    emb = torch.nn.Embedding(7, 3, padding_idx=0)
    emb_d = torch.nn.Embedding(7, 3, padding_idx=0)
    emb_d.load_state_dict(emb.state_dict())
    emb_d = emb_d.to(dev)
    idx = torch.tensor([[0, 1, 6], [6, 6, 0]])
    out, out_d = emb(idx), emb_d(idx.to(dev))
    close(out_d, out.detach())
    g = torch.randn(2, 3, 3)
    out.backward(g)
    out_d.backward(g.to(dev))
    close(emb_d.weight.grad, emb.weight.grad)
    assert torch.count_nonzero(emb_d.weight.grad.cpu()[0]) == 0  # the padding row gets no gradient
    # empty indices
    e = torch.empty(0, dtype=torch.int64)
    wd = torch.randn(4, 2).to(dev).requires_grad_()
    r = F.embedding(e.to(dev), wd)
    assert r.shape == (0, 2)
    r.backward(torch.empty(0, 2).to(dev))
    close(wd.grad, torch.zeros(4, 2))
    # bad arguments
    w = torch.randn(5, 3).to(dev)
    with pytest.raises(RuntimeError, match="indices"):
        torch.embedding(w, torch.tensor([0.0]).to(dev))
    with pytest.raises(RuntimeError, match="2-D"):
        torch.embedding(torch.randn(5).to(dev), torch.tensor([0]).to(dev))
    with pytest.raises(RuntimeError, match="embedding: index 5 is out of range"):
        F.embedding(torch.tensor([5]).to(dev), w).cpu()
    close(F.embedding(torch.tensor([4]).to(dev), w), w.cpu()[4:5])


# ---- it runs on the device ---------------------------------------------------------------------------------------

def test_kernels_ran_on_the_device(dev):
    x = sample((4, 5), torch.float32).to(dev)
    i = torch.tensor([[0, 1, 2, 3, 0]]).to(dev)
    torch_mlu.reset_stats()
    x.index_select(0, i[0, :2])
    x.gather(0, i)
    x.scatter_add(0, i, x)
    torch.cat([x, x])
    w = x.clone().requires_grad_()
    F.embedding(i, w).backward(torch.randn(1, 5, 5).to(dev))
    for name in ("aten::index_select", "aten::gather", "aten::scatter_add", "aten::cat", "aten::embedding",
                 "aten::embedding_dense_backward"):
        assert ran_on_device(name), name
    assert torch_mlu.cpu_fallback_counts() == {}


def test_out_into_non_contiguous_views(dev):
    a, b = torch.randn(3, 6), torch.randn(5, 6)
    big = torch.zeros(8, 12).to(dev)
    out = big[:, ::2]
    torch.cat([a.to(dev), b.to(dev)], out=out)
    close(out, torch.cat([a, b]))
    assert torch.count_nonzero(big.cpu()[:, 1::2]) == 0  # the gaps are untouched
    x = torch.randn(4, 5)
    idx = torch.tensor([4, 0, 1, 1, 2])
    out = torch.zeros(4, 10).to(dev)[:, ::2]
    torch.index_select(x.to(dev), 1, idx.to(dev), out=out)
    close(out, x.index_select(1, idx))
    out = torch.zeros(10, 5).to(dev)[::2]
    g = torch.tensor([[0, 1, 2, 3, 0]] * 5)
    torch.gather(x.to(dev), 0, g.to(dev), out=out)
    close(out, torch.gather(x, 0, g))


def test_advanced_indexing_on_leading_dims(dev):
    x = torch.randn(3, 4, 5)
    xd = x.to(dev)
    i = torch.tensor([2, 0, -1])
    assert torch.equal(xd[i.to(dev)].cpu(), x[i])
    assert torch.equal(xd[i].cpu(), x[i])  # CPU indices are allowed, as for CUDA
    b, k = torch.arange(3)[:, None], torch.tensor([[1, 3, -4]])
    assert torch.equal(xd[b.to(dev), k.to(dev)].cpu(), x[b, k])  # broadcast index tensors (HF masks)
    j = torch.tensor([[0, 1], [2, 2]], dtype=torch.int32)
    assert torch.equal(xd[j.to(dev)].cpu(), x[j.long()])
    mask = torch.tensor([True, False, True])
    assert torch.equal(xd[mask.to(dev)].cpu(), x[mask])  # Python turns masks into nonzero() first
    out = torch.empty(0).to(dev)
    torch.ops.aten.index.Tensor_out(xd, [mask.to(dev)], out=out)  # the kernel takes a mask itself too
    assert torch.equal(out.cpu(), x[mask])
    with pytest.raises(NotImplementedError, match="after a None"):
        xd[:, i.to(dev)]


def test_module_to_device_keeps_tied_parameters(dev):
    emb = torch.nn.Embedding(4, 3)
    head = torch.nn.Linear(3, 4, bias=False)
    head.weight = emb.weight
    m = torch.nn.ModuleDict({"emb": emb, "head": head}).to(dev)
    assert m.emb.weight is m.head.weight and m.emb.weight.is_mlu
    m.to("cpu")
    assert m.emb.weight is m.head.weight and not m.emb.weight.is_mlu


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(dev, mode):
    """F.embedding_bag / _embedding_bag on the device (composite_ops.cpp: searchsorted bags,
    index_select rows, scatter_add / scatter_reduce per bag): an empty bag, padding_idx, 2-D input,
    include_last_offset, per_sample_weights (sum), and torch's four outputs."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(10, 3, generator=g)
    idx, off = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0, 0]), torch.tensor([0, 4, 4, 7])
    for pad in (None, 4):
        torch.testing.assert_close(F.embedding_bag(idx.to(dev), w.to(dev), off.to(dev), mode=mode, padding_idx=pad).cpu(),
                                   F.embedding_bag(idx, w, off, mode=mode, padding_idx=pad))
    two_d = torch.randint(0, 10, (3, 4), generator=g)
    torch.testing.assert_close(F.embedding_bag(two_d.to(dev), w.to(dev), mode=mode).cpu(), F.embedding_bag(two_d, w, mode=mode))
    last = torch.tensor([0, 3, 10])
    torch.testing.assert_close(F.embedding_bag(idx.to(dev), w.to(dev), last.to(dev), mode=mode, include_last_offset=True).cpu(),
                               F.embedding_bag(idx, w, last, mode=mode, include_last_offset=True))
    mode_id = {"sum": 0, "mean": 1, "max": 2}[mode]
    ref = torch.ops.aten._embedding_bag(w, idx, off, False, mode_id, False, None, False, -1)
    got = torch.ops.aten._embedding_bag(w.to(dev), idx.to(dev), off.to(dev), False, mode_id, False, None, False, -1)
    torch.testing.assert_close(got[0].cpu(), ref[0])
    if mode != "sum":  # the CPU leaves offset2bag and bag_size unset for plain sums (CUDA, as the device, fills them)
        assert torch.equal(got[1].cpu(), ref[1]) and torch.equal(got[2].cpu(), ref[2])
    h = F.embedding_bag(idx.to(dev), w.half().to(dev), off.to(dev), mode=mode).cpu()  # fp16: accumulated in fp32
    exact = {"rtol": 0, "atol": 0} if mode != "mean" else {}  # the CPU rounds the fp16 sum before dividing
    torch.testing.assert_close(h, F.embedding_bag(idx, w.half(), off, mode=mode), **exact)
    if mode == "max":
        assert torch.equal(got[3].cpu(), ref[3])
    if mode == "sum":
        psw = torch.rand(10, generator=g)
        torch.testing.assert_close(F.embedding_bag(idx.to(dev), w.to(dev), off.to(dev), mode="sum",
                                                   per_sample_weights=psw.to(dev)).cpu(),
                                   F.embedding_bag(idx, w, off, mode="sum", per_sample_weights=psw))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_backward(dev, mode):
    """The weight gradient (_embedding_bag_backward: index_add / scatter_add of gathered gradient
    rows) with an empty bag, padding_idx and scale_grad_by_freq, and per_sample_weights' gradient
    (row dot products) against the CPU's."""
    g = torch.Generator().manual_seed(1)
    idx, off = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0, 0]), torch.tensor([0, 4, 4, 7])
    cot = torch.randn(4, 3, generator=g)
    for pad, freq in ((None, False), (4, False), (None, True)):
        if mode == "max" and freq:
            continue
        w = torch.randn(10, 3, generator=g, requires_grad=True)
        wd = w.detach().to(dev).requires_grad_()
        psw = torch.rand(10, generator=g, requires_grad=True) if mode == "sum" else None
        pswd = psw.detach().to(dev).requires_grad_() if psw is not None else None
        (F.embedding_bag(idx, w, off, mode=mode, padding_idx=pad, scale_grad_by_freq=freq, per_sample_weights=psw)
         * cot).sum().backward()
        (F.embedding_bag(idx.to(dev), wd, off.to(dev), mode=mode, padding_idx=pad, scale_grad_by_freq=freq,
                         per_sample_weights=pswd) * cot.to(dev)).sum().backward()
        torch.testing.assert_close(wd.grad.cpu(), w.grad, msg=f"padding_idx={pad} scale_grad_by_freq={freq}")
        if psw is not None:
            torch.testing.assert_close(pswd.grad.cpu(), psw.grad)
    if mode != "max":  # (max takes no sparse=True at all)
        with pytest.raises(NotImplementedError, match="sparse gradients"):
            wd = torch.randn(10, 3).to(dev).requires_grad_()
            F.embedding_bag(idx.to(dev), wd, off.to(dev), mode=mode, sparse=True).sum().backward()


def test_uint8_values_move_as_bytes(dev):
    """cat / stack, index_select, gather, boolean-mask indexing and where between uint8 values move
    the bytes as int8 (no conversion happens): values above 127 survive."""
    a = torch.tensor([1, 0, 200, 255], dtype=torch.uint8)
    b = torch.tensor([0, 255, 1, 128], dtype=torch.uint8)
    m = torch.tensor([True, False, True, True])
    ad, bd, md = a.to(dev), b.to(dev), m.to(dev)
    for got, want in ((torch.cat([ad, bd]), torch.cat([a, b])), (torch.cat([ad, md]), torch.cat([a, m])),
                      (torch.stack([ad, bd]), torch.stack([a, b])), (ad[bd.bool()], a[b.bool()]),
                      (ad[torch.tensor([3, 0]).to(dev)], a[torch.tensor([3, 0])]),
                      (ad.gather(0, torch.tensor([2, 3]).to(dev)), a.gather(0, torch.tensor([2, 3]))),
                      (torch.where(md, ad, bd), torch.where(m, a, b)), (torch.where(md, ad, 7), torch.where(m, a, 7)),
                      (ad | bd, a | b)):
        assert got.dtype == torch.uint8 and torch.equal(got.cpu(), want)
