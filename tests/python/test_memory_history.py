"""Memory history for PyTorch's memory tools: torch.mlu.memory._record_memory_history(),
_snapshot() and _dump_snapshot() in CUDA's format, read by torch.cuda._memory_viz (the same code
as https://pytorch.org/memory_viz)."""

import gc
import pickle

import pytest
import torch
from torch.cuda import _memory_viz

import torch_mlu
from conftest import MiB


@pytest.fixture(autouse=True)
def recording():
    gc.collect()
    torch_mlu.empty_cache()
    torch.mlu.memory._record_memory_history(max_entries=1000)
    yield
    torch.mlu.memory._record_memory_history(enabled=None)
    gc.collect()
    torch_mlu.empty_cache()


def allocate_activation(dev):
    return torch.ones(1000, 250, device=dev)  # 1,000,000 bytes


def test_trace_has_cuda_actions_with_python_frames(dev):
    x = allocate_activation(dev)
    y = x * 2
    del x
    torch.mlu.synchronize()
    snap = torch.mlu.memory._snapshot()
    trace = snap["device_traces"][0]
    actions = [e["action"] for e in trace]
    assert actions[:2] == ["segment_alloc", "alloc"]
    assert "free_requested" in actions and "free_completed" in actions
    first = trace[1]
    assert first["size"] == 1000448  # 1,000,000 rounded to the allocator's 512-byte blocks
    assert first["frames"][0]["name"] == "allocate_activation"
    assert first["frames"][0]["filename"].endswith("test_memory_history.py")
    assert first["frames"][1]["name"] == "test_trace_has_cuda_actions_with_python_frames"
    times = [e["time_us"] for e in trace]
    assert times == sorted(times)  # simulated host time only moves forward
    # The live block of y carries its allocation stack.
    blocks = [b for s in snap["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
    assert any(b["address"] == y.data_ptr() and b["frames"][0]["name"] == "test_trace_has_cuda_actions_with_python_frames"
               for b in blocks)


def test_out_of_memory_is_in_the_trace(dev):
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(100 * MiB, dtype=torch.uint8, device=dev)  # tiny has 64 MiB
    oom = [e for e in torch.mlu.memory._snapshot()["device_traces"][0] if e["action"] == "oom"]
    assert len(oom) == 1 and oom[0]["size"] == 100 * MiB and oom[0]["device_free"] > 0


def test_dump_snapshot_reads_with_torchs_memory_viz(dev, tmp_path):
    keep = [allocate_activation(dev) for _ in range(3)]
    del keep[1]
    path = tmp_path / "snapshot.pickle"
    torch.mlu.memory._dump_snapshot(str(path))
    with open(path, "rb") as f:
        snap = pickle.load(f)
    text = _memory_viz.trace(snap)
    assert "cudaMalloc" in text and "del " in text  # memory_viz names device mallocs its own way
    assert "<html>" in _memory_viz.trace_plot(snap).lower() or len(_memory_viz.trace_plot(snap)) > 1000
    assert len(_memory_viz.segment_plot(snap)) > 1000
    reserved = sum(seg["total_size"] for seg in snap["segments"])
    assert reserved == torch_mlu.memory_reserved()
    assert f"total_reserved: {_memory_viz._format_size(reserved)}" in _memory_viz.segsum(snap)
    flame = _memory_viz.memory(snap, format_flamegraph=lambda lines: lines)
    assert "allocate_activation" in flame


def test_stopping_keeps_the_history_and_bad_arguments_are_named(dev):
    x = allocate_activation(dev)
    torch.mlu.memory._record_memory_history(enabled=None)
    y = allocate_activation(dev)
    allocs = [e for e in torch.mlu.memory._snapshot()["device_traces"][0] if e["action"] == "alloc"]
    assert [e["addr"] for e in allocs] == [x.data_ptr()]
    with pytest.raises(ValueError, match="stacks must be 'python' or 'all'"):
        torch.mlu.memory._record_memory_history(stacks="cpp")
    with pytest.raises(ValueError, match="max_entries must be > 0"):
        torch.mlu.memory._record_memory_history(max_entries=0)
    del x, y


def test_max_entries_keeps_the_newest(dev):
    torch.mlu.memory._record_memory_history(max_entries=4)
    for _ in range(5):
        allocate_activation(dev)
    trace = torch.mlu.memory._snapshot()["device_traces"][0]
    assert len(trace) == 4 and trace[-1]["action"] == "free_completed"
