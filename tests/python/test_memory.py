"""The caching allocator seen from Python: statistics consistent with allocations (512-byte
rounded blocks), reserved bytes equal to the driver's live bytes, no driver mallocs in a
steady-state loop, out-of-memory errors that leave the device usable, settings."""

import gc

import pytest
import torch

import torch_mlu
from conftest import MiB

STAT_NAMES = ["allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
              "active_bytes", "inactive_split_bytes"]


def rounded(nbytes):
    return max(512, (nbytes + 511) // 512 * 512)


@pytest.fixture(autouse=True)
def fresh_cache():
    gc.collect()
    torch_mlu.synchronize()
    torch_mlu.empty_cache()
    torch_mlu.reset_peak_memory_stats()
    yield
    gc.collect()
    torch_mlu.empty_cache()


def driver_bytes():
    return int(torch_mlu.device_stats()["allocated_bytes"])


def test_stats_have_torch_cuda_keys():
    stats = torch_mlu.memory_stats()
    for name in STAT_NAMES:
        for pool in ("all", "small_pool", "large_pool"):
            for metric in ("current", "peak", "allocated", "freed"):
                assert f"{name}.{pool}.{metric}" in stats
    for key in ("num_alloc_retries", "num_ooms", "max_split_size", "oversize_allocations.current",
                "oversize_segments.peak", "num_device_alloc", "num_device_free"):
        assert key in stats
    assert list(stats) == sorted(stats)
    nested = torch_mlu.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["current"] == stats["allocated_bytes.all.current"]


def test_stats_follow_allocations(dev):
    base = torch_mlu.memory_allocated()
    before = torch_mlu.memory_stats()
    sizes = [1, 1000, 4096, 100_000 * 4, 3 * MiB + 5]
    tensors = [torch.empty(n, dtype=torch.uint8, device=dev) for n in sizes]
    expected = sum(rounded(n) for n in sizes)
    assert torch_mlu.memory_allocated() == base + expected
    stats = torch_mlu.memory_stats()
    small = sum(rounded(n) for n in sizes if rounded(n) <= MiB)
    for key, value in (("allocated_bytes.small_pool.current", small),
                       ("allocated_bytes.large_pool.current", expected - small),
                       ("allocation.all.current", len(sizes)),
                       ("allocation.all.allocated", len(sizes)),
                       ("active_bytes.all.current", expected)):
        assert stats[key] - before[key] == value, key
    assert torch_mlu.memory_reserved() >= torch_mlu.memory_allocated()
    assert torch_mlu.memory_reserved() == driver_bytes()  # reserved == live driver bytes
    assert torch_mlu.max_memory_allocated() == base + expected
    del tensors
    assert torch_mlu.memory_allocated() == base
    assert torch_mlu.max_memory_allocated() == base + expected
    torch_mlu.reset_peak_memory_stats()
    assert torch_mlu.max_memory_allocated() == base
    torch_mlu.empty_cache()
    assert torch_mlu.memory_reserved() == driver_bytes()
    if base == 0:
        assert driver_bytes() == 0


def test_views_and_copies_allocate_what_torch_would(dev):
    x = torch.empty(1000, device=dev)  # 4000 bytes -> 4096
    base = torch_mlu.memory_allocated()
    v = x.view(10, 100)[2:5]
    assert torch_mlu.memory_allocated() == base  # views allocate nothing
    c = x.clone()
    assert torch_mlu.memory_allocated() == base + 4096
    del v, c


def test_no_driver_mallocs_per_step_after_warm_up(dev):
    host = torch.randn(256, 256)

    def step():
        a = host.to(dev)
        b = torch.empty(3, 1000, device=dev)
        c = torch.zeros(5 * MiB // 4, device=dev)  # large pool
        d = a.clone()
        out = d.cpu()
        del a, b, c, d
        return out

    for _ in range(2):
        step()
    before = torch_mlu.memory_stats()
    live = torch_mlu.device_stats()["live_allocations"]
    for _ in range(10):
        step()
    after = torch_mlu.memory_stats()
    assert after["num_device_alloc"] == before["num_device_alloc"]
    assert after["num_device_free"] == before["num_device_free"]
    assert after["allocation.all.allocated"] - before["allocation.all.allocated"] == 40
    assert torch_mlu.device_stats()["live_allocations"] == live


def test_out_of_memory_raises_and_the_device_stays_usable(dev):
    assert torch_mlu.memory_allocated() == 0, "a device tensor of an earlier test is still alive"
    keep = torch.empty(40 * MiB, dtype=torch.uint8, device=dev)
    before = torch_mlu.memory_stats()  # counters accumulate over the process's earlier tests
    with pytest.raises(RuntimeError, match="out of memory") as info:
        torch.empty(30 * MiB, dtype=torch.uint8, device=dev)
    message = str(info.value)
    assert "Tried to allocate 30.00 MiB (31457280 bytes)" in message
    assert "already allocated" in message and "free" in message and "reserved in total" in message
    assert "40.00 MiB (41943040 bytes) already allocated" in message
    assert isinstance(info.value, torch.cuda.OutOfMemoryError)
    stats = torch_mlu.memory_stats()
    assert stats["num_ooms"] - before["num_ooms"] == 1
    assert stats["num_alloc_retries"] - before["num_alloc_retries"] == 1
    del keep
    x = torch.arange(10, dtype=torch.float32).to(dev)
    assert torch.equal(x.cpu(), torch.arange(10, dtype=torch.float32))
    del x
    # Both segments are cached now (40 MiB, then 2 MiB: the driver's free space is split in two).
    big = torch.empty(50 * MiB, dtype=torch.uint8, device=dev)  # frees the cache, retries
    assert torch_mlu.memory_stats()["num_alloc_retries"] - before["num_alloc_retries"] == 2
    del big


def test_summary_and_snapshot(dev):
    assert torch_mlu.memory_reserved() == 0, "a device tensor of an earlier test is still alive"
    x = torch.empty(1000, device=dev)
    text = torch_mlu.memory_summary()
    assert "PyTorch MLU memory summary, device ID 0" in text and "Allocated memory" in text
    assert "from small pool" in text and "from small pool" not in torch_mlu.memory_summary(abbreviated=True)
    segments = torch_mlu.memory_snapshot()
    assert len(segments) == 1 and segments[0]["segment_type"] == "small"
    assert segments[0]["total_size"] == 2 * MiB
    assert segments[0]["blocks"][0] == {"address": x.data_ptr(), "size": 4096, "requested_size": 4000,
                                        "state": "active_allocated"}
    del x


def test_allocator_settings(dev):
    assert torch_mlu.memory_reserved() == 0, "a device tensor of an earlier test is still alive"
    assert torch_mlu.get_allocator_settings() == ""
    torch_mlu.set_allocator_settings("caching:False")
    assert torch_mlu.get_allocator_settings() == "caching:False"
    x = torch.empty(1000, dtype=torch.uint8, device=dev)
    assert torch_mlu.memory_reserved() == driver_bytes() == 1024  # no 2 MiB segment
    del x
    assert torch_mlu.memory_reserved() == driver_bytes() == 0  # returned at once
    torch_mlu.set_allocator_settings("max_split_size_mb:32,roundup_power2_divisions:4")
    assert torch_mlu.memory_stats()["max_split_size"] == 32 * MiB
    with pytest.raises(ValueError, match="MLU_ALLOC_CONF: option max_split_size_mb:8: too small"):
        torch_mlu.set_allocator_settings("max_split_size_mb:8")
    with pytest.raises(ValueError, match="unrecognized option"):
        torch_mlu.set_allocator_settings("backend:cudaMallocAsync")
    torch_mlu.set_allocator_settings("")


def test_unknown_devices_are_errors():
    with pytest.raises(ValueError, match="MLU device 3 does not exist"):
        torch_mlu.memory_stats(3)
    with pytest.raises(ValueError, match="does not exist"):
        torch_mlu.mem_get_info(3)


def test_memory_fraction(dev):
    torch_mlu.set_per_process_memory_fraction(0.25)  # 16 MiB of 64
    try:
        with pytest.raises(RuntimeError, match="allowed"):
            torch.empty(20 * MiB, dtype=torch.uint8, device=dev)
    finally:
        torch_mlu.set_per_process_memory_fraction(1.0)


def test_record_stream_keeps_a_block_until_the_queue_is_done(dev):
    q = torch_mlu.Queue()
    x = torch.empty(1000, device=dev)
    x.record_stream(q)
    ptr = x.data_ptr()
    del x
    y = torch.empty(1000, device=dev)  # q has no pending work: the block is free again
    assert y.data_ptr() == ptr


def test_bad_environment_fails_the_import_clearly():
    from conftest import run_python

    r = run_python("import torch_mlu", env={"MLU_ALLOC_CONF": "max_split_size_mb:abc"})
    assert r.returncode != 0
    assert "MLU_ALLOC_CONF: option max_split_size_mb:abc: expected a non-negative integer" in r.stderr
    r = run_python("import torch_mlu", env={"MLU_NO_MEMORY_CACHING": "please"})
    assert r.returncode != 0 and "MLU_NO_MEMORY_CACHING=please" in r.stderr
