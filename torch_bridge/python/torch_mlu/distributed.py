"""torch.distributed backend "cncl" for device "mlu" (NCCL's place on the MLU), across processes.

    dist.init_process_group(backend="cncl")        # under torchrun: one process per rank
    torch.mlu.set_device(local_rank)
    dist.all_reduce(t)                              # t on "mlu"

The backend is ProcessGroupCNCL, a c10d::Backend written in C++ as ProcessGroupNCCL is
(torch_bridge/src/distributed/process_group_cncl.h: transport, timing, ordering, the collectives
and their errors), built into torch_mlu._C_cncl as a subclass of torch's Backend type. This module
registers it for device "mlu" and reads its per-rank log:

    backend = backend_of(dist.group.WORLD)          # = group._get_backend(torch.device("mlu"))
    backend.collectives                             # [(op, bytes, arrival ns, end ns)], oldest first
    backend.comm_ns                                 # their simulated time (end - arrival), summed
    comm_report(dist.group.WORLD)                   # per op: calls, bytes, time, algbw, busbw, overlap

In short: each rank process simulates its own chip (rank r stands for chip r of the config's
system); a collective's bytes travel between the processes over an inner Gloo backend on the
group's store and in and out of the device with untimed copies; it ends at the same simulated time
on every rank, max over ranks of arrival + model time, on the group's own stream, which Work.wait()
and the Work's future make the caller's stream wait for (compute overlaps communication; the host
does not block). The model's formulas (ring or tree all-reduce with a DRAM term, ring
all-gather/reduce-scatter, chain broadcast, over MLU-Link, the network across hosts, or the host
link) are written once, in torch_bridge/src/distributed/collective_time_model.h, and reached from
Python through model_time_ns and the bus factors of comm_report.
"""

import torch
import torch.distributed as dist

from . import _C, _C_cncl

BACKEND_NAME = "cncl"

ProcessGroupCNCL = _C_cncl.ProcessGroupCNCL
COLLECTIVES = tuple(_C_cncl.COLLECTIVES)


def model_time_ns(op, nbytes, ranks, fig):
    """Simulated ns of collective `op` (one of COLLECTIVES) over `ranks` ranks, `nbytes` as the model
    defines S for it (collective_time_model.h); 0 for one rank; ValueError for an op without a model.
    `fig` holds torch_mlu._C.interconnect_figures()'s keys (mlu_link_topology defaults to full_mesh,
    chips_per_host to 16, the network's to none)."""
    return _C_cncl.model_time_ns(op, nbytes, ranks, fig)


def backend_of(group=None):
    """The ProcessGroupCNCL behind `group` (default: the world group); ValueError if its "mlu"
    backend is another one."""
    group = group if group is not None else dist.group.WORLD
    backend = group._get_backend(torch.device("mlu"))
    if not isinstance(backend, ProcessGroupCNCL):
        raise ValueError(f"cncl: the group's mlu backend is {type(backend).__name__}, not ProcessGroupCNCL")
    return backend


def comm_report(group=None, device=None):
    """Per collective kind, this rank's calls in `group` (default: the world group): {op: {calls,
    bytes, time_us, algbw_gbps, busbw_gbps, overlap}} with time = end - arrival summed (simulated),
    algbw = bytes / time, busbw = algbw x the nccl-tests factor of the op (2(n-1)/n for all_reduce,
    (n-1)/n for all_gather / reduce_scatter / all_to_all, 1 for broadcast, reduce and send/recv), and
    overlap = the share of that time during which the rank's device ran kernels (compute hidden
    behind communication, as DDP's bucketing aims for; kernels since the last
    torch_mlu.reset_stats()). Clear the log with backend_of(group).clear_collectives()."""
    backend = backend_of(group)
    index = torch.mlu.current_device() if device is None else torch.device(device).index
    merged = []
    for start, end in sorted(_C.kernel_spans(index)):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])

    def busy(a, b):
        return sum(max(0.0, min(b, e) - max(a, s)) for s, e in merged)

    out = {}
    for op, nbytes, arrival, end in backend.collectives:
        r = out.setdefault(op, {"calls": 0, "bytes": 0, "time_us": 0.0, "_busy_us": 0.0})
        r["calls"] += 1
        r["bytes"] += nbytes
        r["time_us"] += (end - arrival) / 1e3
        r["_busy_us"] += busy(arrival, end) / 1e3
    for op, r in out.items():
        busy_us = r.pop("_busy_us")
        algbw = r["bytes"] / (r["time_us"] * 1e3) if r["time_us"] > 0 else 0.0
        r["algbw_gbps"] = algbw
        r["busbw_gbps"] = algbw * _C_cncl.bus_factor(op, backend.size())
        r["overlap"] = busy_us / r["time_us"] if r["time_us"] > 0 else 0.0
    return out


def _register():
    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        # The plain creator API: (store, rank, size, timeout) -> the C++ backend.
        dist.Backend.register_backend(BACKEND_NAME, _C_cncl.create_process_group, devices=["mlu"])


if dist.is_available():
    _register()
