"""Device tensors: creation, host <-> device round trips, views that alias, resize_, set_,
item(), zero/fill (memset for byte patterns, libmlu fill otherwise), printing, pinned memory."""

import pytest
import torch

import torch_mlu

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
          torch.int16, torch.int32, torch.int64, torch.bool]
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 3, 4), (2, 1, 3, 5), (1000,)]


def sample(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 100).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(max(info.min, -1000), min(info.max, 1000), shape, generator=g, dtype=torch.int64).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_round_trip(dev, dtype, shape):
    x = sample(shape, dtype)
    d = x.to(dev)
    assert d.device == dev and d.dtype == dtype and d.shape == x.shape
    assert torch.equal(d.cpu(), x)


def test_round_trip_keeps_strides_of_dense_layouts(dev):
    x = sample((4, 6), torch.float32).t()  # transposed: dense, not contiguous
    d = x.to(dev)
    assert d.stride() == x.stride()
    assert torch.equal(d.cpu(), x)
    c = sample((2, 3, 4, 5), torch.float32).to(memory_format=torch.channels_last)
    dc = c.to(dev)
    assert dc.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(dc.cpu(), c)


def test_non_contiguous_host_to_device(dev):
    x = sample((6, 8), torch.float32)
    for view in (x[:, 1:5], x[::2], x[1:4, ::3], x.t()[2:5], x.expand(2, 6, 8)[1], x[:, 2]):
        d = view.to(dev)
        assert torch.equal(d.cpu(), view)


def test_conversion_on_the_way_in_and_out(dev):
    x = sample((5, 5), torch.float32)
    d = x.to(dev, torch.float16)
    assert d.dtype == torch.float16 and torch.equal(d.cpu(), x.half())
    assert torch.equal(d.to("cpu", torch.float32), x.half().float())
    i = sample((4,), torch.int64).to(dev)
    assert torch.equal(i.to("cpu", torch.float64), i.cpu().double())


def test_device_to_host_into_non_contiguous_destination(dev):
    x = sample((3, 4), torch.float32)
    d = x.to(dev)
    out = torch.zeros(4, 3).t()
    out.copy_(d)
    assert torch.equal(out, x)
    col = torch.zeros(3, 2)
    col[:, 1].copy_(d[:, 0])  # non-dense device source, non-dense host destination
    assert torch.equal(col[:, 1], x[:, 0])


def test_device_to_device_copies(dev):
    x = sample((16, 16), torch.float32)
    d = x.to(dev)
    e = d.clone()
    assert e.data_ptr() != d.data_ptr() and torch.equal(e.cpu(), x)
    f = torch.empty_like(d)
    f.copy_(d)
    assert torch.equal(f.cpu(), x)
    g = torch.empty(16, 16, device=dev)
    g[4:8].copy_(d[0:4])  # dense rows into dense rows
    assert torch.equal(g[4:8].cpu(), x[0:4])


def test_views_alias_their_base(dev):
    x = sample((4, 5), torch.float32)
    d = x.to(dev)
    v = d.view(20)
    assert v.data_ptr() == d.data_ptr() and v.untyped_storage().data_ptr() == d.untyped_storage().data_ptr()
    d[1].zero_()                      # a view's write shows in the base ...
    expected = x.clone()
    expected[1] = 0
    assert torch.equal(d.cpu(), expected)
    assert torch.equal(v.cpu(), expected.view(20))  # ... and in every other view
    d[2].copy_(torch.full((5,), 7.0))  # host -> device into a view
    expected[2] = 7
    assert torch.equal(d.cpu(), expected)
    assert torch.equal(d.t().cpu(), expected.t())
    assert torch.equal(d[:, 1:3].cpu(), expected[:, 1:3])
    assert torch.equal(d.reshape(2, 10).cpu(), expected.reshape(2, 10))
    assert torch.equal(d.as_strided((2, 2), (5, 1), 3).cpu(), expected.as_strided((2, 2), (5, 1), 3))
    assert torch.equal(d.unfold(1, 2, 2).cpu(), expected.unfold(1, 2, 2))
    assert torch.equal(d.unsqueeze(0).expand(3, 4, 5)[2].cpu(), expected)
    assert d.t().is_set_to(d) is False and d.is_set_to(d)


def test_resize_and_set(dev):
    x = sample((6,), torch.float32)
    d = x.to(dev)
    d.resize_(3)
    assert d.shape == (3,) and torch.equal(d.cpu(), x[:3])
    d.resize_(2, 50)  # grows the storage; the first elements survive
    assert d.shape == (2, 50) and torch.equal(d.view(-1)[:6].cpu(), x)
    e = torch.empty(0, device=dev)
    e.set_(d)
    assert e.data_ptr() == d.data_ptr() and e.shape == d.shape
    # (set_ with a storage argument: torch 1.13's Python binding accepts CPU/CUDA storages only;
    # the C++ test covers it.)
    g = torch.empty(0, device=dev).resize_(4, 4)
    g.zero_()
    assert torch.equal(g.cpu(), torch.zeros(4, 4))


def test_item_and_scalars(dev):
    for dtype in DTYPES:
        x = sample((3,), dtype, seed=3)
        d = x.to(dev)
        assert d[1].item() == x[1].item()
    assert bool(torch.tensor(True).to(dev))


def test_zero_and_byte_pattern_fills_use_memset(dev):
    z = torch.zeros(100, device=dev)
    assert torch.equal(z.cpu(), torch.zeros(100))
    m = torch.full((10,), -1, dtype=torch.int32, device=dev)
    assert torch.equal(m.cpu(), torch.full((10,), -1, dtype=torch.int32))
    b = torch.ones(5, dtype=torch.bool, device=dev)
    assert b.cpu().all()
    u = torch.full((4,), 7, dtype=torch.uint8, device=dev)
    assert torch.equal(u.cpu(), torch.full((4,), 7, dtype=torch.uint8))
    assert torch_mlu.cpu_fallback_counts() == {}


def test_other_fills_and_gapped_zero_run_libmlu_fill(dev):
    torch_mlu.reset_stats()
    o = torch.ones(3, device=dev)  # not a byte pattern
    assert torch.equal(o.cpu(), torch.ones(3))
    g = torch.full((4, 6), 5, dtype=torch.int64, device=dev)
    g[:, 1::2].zero_()  # a view with gaps
    expected = torch.full((4, 6), 5, dtype=torch.int64)
    expected[:, 1::2] = 0
    assert torch.equal(g.cpu(), expected)
    torch_mlu.synchronize()
    ops = {op["name"]: op for op in torch_mlu.cycle_report(format="json")["ops"]}
    assert ops["aten::fill_.Scalar"]["kernels"] > 0 and ops["aten::zero_"]["kernels"] > 0
    assert torch_mlu.cpu_fallback_counts() == {}


def test_printing(dev):
    d = torch.arange(6, dtype=torch.float32).reshape(2, 3).to(dev)
    text = repr(d)
    assert "device='mlu:0'" in text
    assert "[[0., 1., 2.]," in text and "[3., 4., 5.]]" in text
    assert "device='mlu:0'" in repr(torch.empty(0, device=dev))
    assert "dtype=torch.int32" in str(torch.zeros(2, dtype=torch.int32, device=dev))
    assert torch_mlu.cpu_fallback_counts() == {}  # printing runs no device op


def test_pinned_memory(dev):
    x = sample((256,), torch.float32)
    assert not torch_mlu.is_pinned(x)
    p = torch_mlu.pin_memory(x)
    assert torch_mlu.is_pinned(p) and torch.equal(p, x)
    d = p.to(dev, non_blocking=True)
    torch_mlu.synchronize()
    assert torch.equal(d.cpu(), x)
    back = torch_mlu.pin_memory(torch.empty(256))
    back.copy_(d, non_blocking=True)
    torch_mlu.synchronize()
    assert torch.equal(back, x)
    src = sample((4, 6), torch.float32)[:, 1:3]
    t = torch_mlu.pin_memory(src)  # torch 2 keeps the source's strides (as for CUDA)
    assert torch_mlu.is_pinned(t) and torch.equal(t, src)


def test_pinned_copies_are_faster_in_simulated_time(dev):
    x = torch.randn(1 << 20)  # 4 MiB
    p = torch_mlu.pin_memory(x)
    times = []
    for src in (x, p):
        start, end = torch_mlu.Notifier(enable_timing=True), torch_mlu.Notifier(enable_timing=True)
        start.record()
        d = src.to(dev)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
        del d
    assert times[1] < times[0]


def test_complex_tensors_move_and_complex_products_are_refused_clearly(dev):
    # complex storage, copies and views are on the device (ops/test_fft.py); of complex arithmetic
    # only +- and scaling by real values (ops/test_elementwise.py), not complex products
    z = torch.tensor([1 + 2j, -3j], dtype=torch.complex64)
    assert torch.equal(z.to(dev).cpu(), z)
    with pytest.raises(NotImplementedError, match=r"aten::mul\.Tensor: ComplexFloat is supported on device mlu for "
                                                  r"complex \+- complex and complex \* or / a real value only"):
        z.to(dev) * z.to(dev)
