"""The simulator's side: configs, traces, statistics and the cycle report."""

import contextlib
import gc
import json
import os

from . import _C

_TRACE_LEVELS = {"ops": 1, "intrinsics": 2}


def _index(device):
    from . import _device_index

    return _device_index(device)


def load_config(name="mlu370-x4", overrides=None):
    """Replaces the simulated system by the preset or YAML file `name`, with `overrides`
    ({"devices": 2} or ["devices=2"]). Device tensors must be gone first (it raises otherwise:
    they would point into the old system's memory); unreachable ones are collected here. Queues
    and notifiers of the old system become invalid; statistics restart."""
    if isinstance(overrides, dict):
        overrides = [f"{k}={v}" for k, v in overrides.items()]
    gc.collect()
    _C.load_config(str(name), list(overrides or []))


def config_name():
    """The loaded config's name."""
    return _C.config_name()


def set_timing_only(enabled):
    """Timing-only mode: kernels take the same simulated time but skip floating-point arithmetic
    (float results are garbage; integer results and copies stay exact). For fast performance runs."""
    _C.set_timing_only(bool(enabled))


def inject_kernel_fault(nth=1, device=None):
    """Test-only fault injection: the `nth` device kernel launched from now (1 = the next) faults
    when it runs, as a kernel with a bad memory access would. Kernels run asynchronously, so the op
    that launched it returns normally; the next synchronisation (torch.mlu.synchronize(), .item(),
    .cpu(), a blocking copy) raises RuntimeError naming the kernel and the ATen op that launched
    it. Later ops run normally. nth=0 disarms."""
    if nth < 0:
        raise ValueError(f"nth must be >= 0, got {nth}")
    _C.inject_kernel_fault(_index(device), int(nth))


@contextlib.contextmanager
def trace(path, level="ops"):
    """Records a timeline while the block runs and writes it to `path` (Chrome trace-event JSON;
    open in Perfetto): kernels, copies, queue operations and, from the caching allocator, malloc /
    free / segment events with "memory reserved" and "torch allocated" counters. level="intrinsics"
    adds every engine intrinsic (large). All devices are synchronised before the trace is written."""
    if level not in _TRACE_LEVELS:
        raise ValueError(f"trace level must be one of {sorted(_TRACE_LEVELS)}, got {level!r}")
    _C.trace_begin(_TRACE_LEVELS[level])
    try:
        yield
    finally:
        try:
            for d in range(_C.device_count()):
                _C.synchronize(d)
        finally:
            _C.trace_end()
            _C.trace_write(os.fspath(path))


def cycle_report(device=None, format="text"):
    """The cycle report of the device since the last reset_stats(): kernels (cycles, share),
    engine utilisation, memory traffic per level, the caching allocator's statistics, the ops
    that ran on the CPU fallback and, in a process of a "cncl" process group, the communication
    of this rank (torch_mlu.distributed.comm_report: per collective calls, bytes, time, algbw,
    busbw, overlap with kernels). format="json" returns a dict (the communication under
    "communication")."""
    index = _index(device)
    comm = _communication(index)
    if format == "text":
        return _C.cycle_report(index) + (_communication_text(comm) if comm is not None else "")
    if format == "json":
        report = json.loads(_C.cycle_report_json(index))
        if comm is not None:
            report["communication"] = comm
        return report
    raise ValueError(f"format must be 'text' or 'json', got {format!r}")


def _communication(index):
    """This rank's comm_report on device `index` when the world group has a cncl backend, else None."""
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized():
        return None
    from . import distributed as cncl

    try:
        backend = cncl.backend_of()
    except (ValueError, RuntimeError):  # no "mlu" backend in the world group, or another one
        return None
    return {"rank": backend.rank(), "ranks": backend.size(), "collectives": cncl.comm_report(device=index)}


def _communication_text(comm):
    lines = ["", f"communication (cncl, rank {comm['rank']} of {comm['ranks']}; nccl-tests' algbw/busbw)",
             f"  {'collective':16} {'calls':>6} {'bytes':>14} {'time us':>11} {'algbw GB/s':>11} {'busbw GB/s':>11}"
             f" {'overlap':>8}"]
    for op, r in sorted(comm["collectives"].items()):
        lines.append(f"  {op:16} {r['calls']:6d} {r['bytes']:14d} {r['time_us']:11.3f} {r['algbw_gbps']:11.2f}"
                     f" {r['busbw_gbps']:11.2f} {r['overlap'] * 100:7.1f}%")
    if not comm["collectives"]:
        lines.append("  (none)")
    return "\n".join(lines) + "\n"


def reset_stats(device=None):
    """Starts a new statistics epoch on the device and clears the CPU-fallback counts."""
    _C.reset_stats(_index(device))


def flush_l2(device=None):
    """Drops every line of the device's L2 cache (configs with l2.cache), so the next op reads
    DRAM as after a cold start: what a benchmark does before timing one op (as CUDA benchmarks
    overwrite the L2). Costs no simulated time."""
    _C.flush_l2(_index(device))


def device_stats(device=None):
    """The driver's statistics of the device: elapsed_ns, kernels, allocated_bytes (live
    cnrtMalloc bytes), peak_allocated_bytes, live_allocations, host/GDRAM traffic."""
    return dict(_C.device_stats(_index(device)))
