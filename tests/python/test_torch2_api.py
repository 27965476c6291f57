"""What a user migrating from CUDA writes on PyTorch 2, with "cuda" replaced by "mlu": generated
methods (Tensor.mlu(), is_mlu, Module.mlu(), storages), generators and RNG state, torch.save /
torch.load of device tensors, torch.accelerator's memory API, pinned memory, storage resizing."""

import io

import pytest
import torch
import torch.nn as nn

import torch_mlu  # noqa: F401  (registers torch.mlu)


def test_generated_tensor_and_module_methods(dev):
    x = torch.randn(3, 4)
    y = x.mlu()
    assert y.is_mlu and y.device == dev and torch.equal(y.cpu(), x)
    assert x.to("mlu:0").device == dev
    assert torch.equal(torch.ones(2, device=torch.device("mlu:0")).cpu(), torch.ones(2))
    cpu_model = nn.Linear(4, 2)
    m = nn.Linear(4, 2)
    m.load_state_dict(cpu_model.state_dict())
    m = m.mlu()
    assert all(p.is_mlu for p in m.parameters())
    assert torch.allclose(m(y).cpu(), cpu_model(x), atol=1e-5)


def test_storages_move_and_resize(dev):
    s = torch.arange(6, dtype=torch.float32).untyped_storage()
    d = s.mlu()
    assert d.is_mlu and d.device == dev and d.nbytes() == 24
    assert torch.equal(torch.tensor([], dtype=torch.float32).set_(d.cpu()), torch.arange(6.0))
    d.resize_(40)  # hooks: resizePrivateUse1Bytes keeps the first 24 bytes
    assert d.nbytes() == 40
    t = torch.tensor([], dtype=torch.float32, device=dev).set_(d)
    assert torch.equal(t[:6].cpu(), torch.arange(6.0))
    d.resize_(8)
    assert torch.equal(torch.tensor([], dtype=torch.float32, device=dev).set_(d).cpu(), torch.arange(2.0))


def test_manual_seed_reaches_device_generators(dev):
    torch.manual_seed(42)  # torch seeds torch.mlu through manual_seed_all
    assert torch.mlu.initial_seed() == 42
    a = torch.empty(1000, device=dev).bernoulli_(0.5).cpu()
    torch.mlu.manual_seed(42)
    b = torch.empty(1000, device=dev).bernoulli_(0.5).cpu()
    assert torch.equal(a, b) and 300 < int(a.sum()) < 700
    state = torch.mlu.get_rng_state()
    assert state.dtype == torch.uint8 and state.numel() == 16
    c = torch.empty(1000, device=dev).bernoulli_(0.5).cpu()
    torch.mlu.set_rng_state(state)
    assert torch.equal(torch.empty(1000, device=dev).bernoulli_(0.5).cpu(), c)
    assert not torch.equal(b, c)  # the offset moved on
    assert len(torch.mlu.get_rng_state_all()) == torch.mlu.device_count()
    with pytest.raises(ValueError, match="16-byte uint8"):
        torch.mlu.set_rng_state(torch.zeros(3, dtype=torch.uint8))
    torch.mlu.seed()
    assert torch.mlu.initial_seed() != 42


def test_explicit_generators(dev):
    g1 = torch.Generator(device="mlu")
    g2 = torch.Generator(device="mlu")
    assert g1.device == dev
    g1.manual_seed(7)
    g2.manual_seed(7)
    a = torch.empty(500, device=dev).bernoulli_(0.3, generator=g1).cpu()
    b = torch.empty(500, device=dev).bernoulli_(0.3, generator=g2).cpu()
    assert torch.equal(a, b)
    state = g1.get_state()
    c = torch.empty(500, device=dev).bernoulli_(0.3, generator=g1).cpu()
    g1.set_state(state)
    assert torch.equal(torch.empty(500, device=dev).bernoulli_(0.3, generator=g1).cpu(), c)
    with pytest.raises(RuntimeError, match="generator"):
        torch.empty(5, device=dev).bernoulli_(0.3, generator=torch.Generator())


def test_save_and_load_device_tensors(dev):
    x = torch.randn(4, 5).mlu()
    state = {"w": x, "b": torch.arange(3).mlu()}
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    loaded = torch.load(buf)  # weights_only=True by default; lands on mlu:0 again
    assert loaded["w"].device == dev and torch.equal(loaded["w"].cpu(), x.cpu())
    assert torch.equal(loaded["b"].cpu(), torch.arange(3))
    buf.seek(0)
    cpu = torch.load(buf, map_location="cpu", weights_only=True)
    assert cpu["w"].device.type == "cpu" and torch.equal(cpu["w"], x.cpu())
    buf2 = io.BytesIO()
    torch.save(cpu, buf2)
    buf2.seek(0)
    moved = torch.load(buf2, map_location="mlu:0")
    assert moved["w"].is_mlu and torch.equal(moved["w"].cpu(), x.cpu())
    buf.seek(0)
    with pytest.raises(RuntimeError, match="device_count"):
        torch.load(buf, map_location="mlu:3")


def test_accelerator_memory_api_matches_torch_mlu(dev):
    torch.mlu.empty_cache()
    torch.accelerator.reset_peak_memory_stats()
    before = torch.accelerator.memory_allocated()
    x = torch.empty(1000, device=dev)  # 4000 bytes -> one 4096-byte block
    assert torch.accelerator.memory_allocated() - before == 4096
    assert torch.accelerator.memory_allocated() == torch.mlu.memory_allocated()
    assert torch.accelerator.memory_reserved() == torch.mlu.memory_reserved()
    assert torch.accelerator.max_memory_allocated() >= torch.accelerator.memory_allocated()
    stats = torch.accelerator.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.mlu.memory_stats()["allocated_bytes.all.current"]
    assert stats["requested_bytes.all.current"] - torch.mlu.memory_stats()["requested_bytes.all.current"] == 0
    del x
    torch.accelerator.empty_cache()
    assert torch.mlu.memory_reserved() == torch.mlu.memory_stats()["reserved_bytes.all.current"]
    free, total = torch.accelerator.get_memory_info()
    assert (free, total) == torch.mlu.mem_get_info()


def test_requested_bytes_count_unrounded_sizes(dev):
    base = torch.mlu.memory_stats()["requested_bytes.all.current"]
    x = torch.empty(1001, dtype=torch.uint8, device=dev)
    s = torch.mlu.memory_stats()
    assert s["requested_bytes.all.current"] - base == 1001
    del x
    assert torch.mlu.memory_stats()["requested_bytes.all.current"] == base


def test_caching_allocator_alloc_and_delete(dev):
    before = torch.mlu.memory_allocated()
    ptr = torch.mlu.caching_allocator_alloc(1 << 20)
    assert ptr != 0 and torch.mlu.memory_allocated() - before == 1 << 20
    torch.mlu.caching_allocator_delete(ptr)
    assert torch.mlu.memory_allocated() == before
    s = torch.mlu.Stream()
    ptr = torch.mlu.caching_allocator_alloc(512, device=0, stream=s)
    torch.mlu.caching_allocator_delete(ptr)
    with pytest.raises(ValueError, match="did not allocate"):
        torch.mlu.caching_allocator_delete(ptr)  # already given back
    with pytest.raises(TypeError, match="stream"):
        torch.mlu.caching_allocator_alloc(512, stream=3)


def test_dataloader_pins_batches_and_oom_is_torchs(dev):
    data = torch.utils.data.TensorDataset(torch.randn(10, 3), torch.arange(10))
    for x, y in torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True):
        assert x.is_pinned() and y.is_pinned()
        assert torch.equal(x.to(dev, non_blocking=True).cpu(), x)
    with pytest.raises(torch.mlu.OutOfMemoryError, match="MLU out of memory"):
        torch.empty(1 << 40, device=dev)
    assert torch.mlu.OutOfMemoryError is torch.OutOfMemoryError
    assert not torch.mlu.is_current_stream_capturing()
    torch.ones(3, device=dev)  # the allocator is still usable


def test_pin_memory_without_a_device_argument(dev):
    x = torch.randn(256)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned()
    assert torch.equal(p, x)
    p2 = torch.empty(16, pin_memory=True)
    assert p2.is_pinned()
    d = p.to(dev, non_blocking=True)
    torch.mlu.synchronize()
    assert torch.equal(d.cpu(), x)


def test_generators_of_every_device_after_a_reload():
    torch.mlu.load_config("tiny", ["devices=2"])
    try:
        torch.manual_seed(5)
        assert [torch.mlu.initial_seed(i) for i in range(2)] == [5, 5]
        torch.mlu.manual_seed(9, device=1)
        assert torch.mlu.initial_seed(0) == 5 and torch.mlu.initial_seed(1) == 9
        assert torch.equal(torch.mlu.get_rng_state(0)[8:], torch.zeros(8, dtype=torch.uint8))  # offset 0
        g = torch.Generator(device="mlu:1")
        assert g.device == torch.device("mlu:1")
        a = torch.empty(64, device="mlu:1").bernoulli_(0.5).cpu()
        torch.mlu.manual_seed(9, device=1)
        assert torch.equal(torch.empty(64, device="mlu:1").bernoulli_(0.5).cpu(), a)
        del a
    finally:
        torch.mlu.load_config("tiny")
