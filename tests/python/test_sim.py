"""Configs, traces, the cycle report, seeding, fork and exit."""

import gc
import json
import os

import pytest
import torch

import torch_mlu
from conftest import MiB, run_python


def test_trace_has_copies_and_allocator_events(dev, tmp_path):
    path = tmp_path / "sub" / "trace.json"
    with torch_mlu.trace(path):
        x = torch.randn(1000).to(dev)
        y = x.clone()
        del x
        y.cpu()
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    alloc = [e for e in events if e.get("cat") == "alloc"]
    names = {e["name"] for e in alloc}
    assert {"malloc", "free"} <= names
    assert all(e["pid"] == 1 and e["ph"] == "i" for e in alloc)
    malloc = next(e for e in alloc if e["name"] == "malloc")
    assert malloc["args"]["bytes"] == 4096 and malloc["ts"] == pytest.approx(malloc["args"]["ts_ps"] / 1e6)
    counters = {e["name"] for e in events if e.get("ph") == "C"}
    assert {"memory reserved (bytes)", "torch allocated (bytes)"} <= counters
    tracks = [e for e in events if e.get("ph") == "M" and e["name"] == "thread_name"
              and e["args"]["name"] == "allocator" and e["pid"] == 1]
    assert len(tracks) == 1
    assert any(e.get("cat") == "copy" for e in events)  # the driver's host-link copies


def test_cycle_report(dev):
    torch_mlu.reset_stats()
    x = torch.randn(256, 256).to(dev)
    x.cpu()
    text = torch_mlu.cycle_report()
    for section in ("mlusim cycle report (torch_mlu): device 0, config tiny", "kernels", "engines",
                    "memory traffic", "device memory (caching allocator)", "CPU fallback ops"):
        assert section in text
    report = torch_mlu.cycle_report(format="json")
    assert report["config"] == "tiny" and report["device"] == 0
    assert report["memory_traffic"]["host"]["read_bytes"] >= 256 * 256 * 4
    assert report["allocator"]["allocated_bytes.all.current"] >= 256 * 256 * 4
    assert report["driver_memory"]["allocated_bytes"] == report["allocator"]["reserved_bytes.all.current"]
    with pytest.raises(ValueError):
        torch_mlu.cycle_report(format="html")


def test_l2_hits_show_in_the_cycle_report_and_flush_l2_makes_them_cold(dev):
    # tiny inherits mlu370-x4's l2.cache: an op reading what the previous op read (x, 64 KiB,
    # within the 256 KiB L2) takes it from the L2; after flush_l2 it reads DRAM again.
    x = torch.randn(16384).to(dev)

    def l2_hits_of_one_add():
        torch_mlu.synchronize()
        torch_mlu.reset_stats()
        x + 1.0
        torch_mlu.synchronize()
        report = torch_mlu.cycle_report(format="json")
        gdram = report["memory_traffic"]["GDRAM"]
        return report["memory_traffic"]["L2"]["hit_bytes"], gdram["read_bytes"]

    torch_mlu.flush_l2()
    cold_hits, _ = l2_hits_of_one_add()
    warm_hits, warm_reads = l2_hits_of_one_add()
    assert "L2 hits" in torch_mlu.cycle_report()
    torch_mlu.flush_l2()
    flushed_hits, _ = l2_hits_of_one_add()
    assert cold_hits == 0 and flushed_hits == 0
    assert x.numel() * 4 <= warm_hits <= warm_reads


def test_manual_seed_seeds_the_device_generator():
    torch.manual_seed(1234)
    assert torch_mlu.initial_seed() == 1234
    assert torch.initial_seed() == 1234
    torch_mlu.manual_seed(99)
    assert torch_mlu.initial_seed() == 99
    torch_mlu.manual_seed_all(7)
    assert torch_mlu.initial_seed(0) == 7
    s = torch.seed()
    assert torch_mlu.initial_seed() == s & ((1 << 64) - 1)


def test_load_config(dev):
    gc.collect()
    keep = torch.empty(10, device=dev)
    with pytest.raises(RuntimeError, match="still allocated"):
        torch_mlu.load_config("tiny", {"devices": 2})
    del keep
    torch_mlu.load_config("tiny", {"devices": 2})
    try:
        assert torch_mlu.device_count() == 2 and torch_mlu.config_name() == "tiny"
        assert torch_mlu.memory_stats()["num_device_alloc"] == 0  # statistics restarted
        x = torch.arange(8, dtype=torch.float32).to("mlu:1")
        assert x.device == torch.device("mlu", 1)
        assert torch_mlu.memory_allocated(1) == 512 and torch_mlu.memory_allocated(0) == 0
        assert torch_mlu.device_stats(1)["allocated_bytes"] == 2 * MiB
        y = x.to("mlu:0")  # peer copy
        assert torch.equal(y.cpu(), torch.arange(8, dtype=torch.float32))
        with torch_mlu.device_guard(1):
            q = torch_mlu.Queue()
            assert q.device_index == 1
            z = torch.empty(3)
            assert torch.empty(3, device="mlu").device.index == 1
        del x, y, z
    finally:
        gc.collect()
        torch_mlu.load_config("tiny")
    assert torch_mlu.device_count() == 1


def test_bad_config_names_the_problem():
    with pytest.raises(RuntimeError, match="mlusimLoadConfig failed"):
        torch_mlu.load_config("tiny", {"no_such_key": 1})
    assert torch_mlu.device_count() == 1


def test_fork_child_reinitialises(dev):
    x = torch.arange(5, dtype=torch.float32).to(dev)
    pid = os.fork()
    if pid == 0:  # child: a fresh runtime; inherited device tensors are stale
        code = 1
        try:
            y = torch.arange(3, dtype=torch.float32).to(dev)
            ok = torch.equal(y.cpu(), torch.arange(3, dtype=torch.float32))
            del x  # freeing a stale tensor is a no-op
            code = 0 if ok and torch_mlu.memory_allocated() == 512 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert torch.equal(x.cpu(), torch.arange(5, dtype=torch.float32))  # the parent is untouched


def test_clean_exit_with_live_tensors():
    code = ("import torch, torch_mlu\n"
            "keep = torch.arange(6.).to('mlu')\n"
            "q = torch_mlu.Queue()\n"
            "n = torch_mlu.Notifier(); n.record(q)\n"
            "p = torch_mlu.pin_memory(torch.ones(4))\n"
            "print(keep.cpu().sum().item())\n")
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "15.0"
    assert "failed" not in r.stderr and "error" not in r.stderr.lower()
