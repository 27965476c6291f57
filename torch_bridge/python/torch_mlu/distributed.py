"""torch.distributed backend "cncl" for device "mlu" (NCCL's place on the MLU), across processes.

    dist.init_process_group(backend="cncl")        # under torchrun: one process per rank
    torch.mlu.set_device(local_rank)
    dist.all_reduce(t)                              # t on "mlu"

Each rank process simulates its own chip. A collective's data travels between the processes over
an inner Gloo group (torch.distributed's own TCP transport, on the same store); the bytes move in
and out of the simulated device with untimed copies, and the collective's simulated time comes
from the interconnect model, computed the same way on every rank from all ranks' arrival times:

    end = max over ranks of arrival + model time

so runs are deterministic and `torchrun --nnodes N` spreads a simulated system over real
machines. Rank r stands for chip r of the config's system (its host: r // network.chips_per_host).
The model (the schedules of the cncl C library, cncl/src/algorithms.h), with n ranks, S bytes,
a = link latency + DRAM latency (ns), B = link bandwidth, D = DRAM bandwidth (GB/s = bytes/ns), the
link being the slowest kind a ring of the ranks crosses: the network (network.nic_*) when the
ranks span hosts, else MLU-Link (mlu_link.*) when every chip of the host is linked to its
neighbours (full_mesh or ring), else the host link both ways (half its bandwidth, twice its
latency: an explicit or absent topology leaves some neighbours unlinked):
    all_reduce       ring: 2(n-1) a + (n-1)(S/n) max(1/B, 3/D) + (n-1)(S/n)/B
                     tree: 2 ceil(log2 n) (a + S max(1/B, 3/D)); the smaller (link-only estimate
                     decides, as the C library does)
    reduce_scatter   (n-1) (a + (S_in/n) max(1/B, 3/D))
    all_gather       (n-1) (a + (S_out/n) / B)
    broadcast        (2n-2) (a + (S/n) / B)              (chain of n slices)
    reduce           the reduce-scatter's time + the all-gather's (a bound on the chain)
    all_to_all       a + (n-1) (S/n) / B                 (every rank's port sends n-1 blocks)
    send/recv        a + S / B
    barrier          all_reduce of 4 bytes
A reduce-scatter step's reduction costs a chip 3 bytes of DRAM traffic per byte received (reads
two, writes one); copies over the links are not charged to DRAM (as in the simulator's
interconnect, sim/src/interconnect/interconnect.h). Each collective call also costs the
calling thread one kernel launch of host time (host.launch_overhead_ns), as CNCL launches one
kernel per rank.

Ordering, like ProcessGroupNCCL: a collective reads its input once the calling thread's current
stream has produced it; its result is ready on the group's own stream at the model's end time.
Work.wait() (and futures' callbacks, DDP's included) make the current stream wait for that, so
compute overlaps communication on the device; the host does not block: a rank's arrival is found
by running its simulation ahead to the point its current stream reaches the collective
(mlusimNotifierPeek), not by waiting. What is approximated: with the simulation ahead of the host,
work the host then queues on an idle stream starts no earlier than the arrival; the collective's
link and DRAM traffic does not slow the chip's concurrent kernels.
"""

import datetime
import math

import torch
import torch.distributed as dist
from torch.futures import Future

from . import _C

BACKEND_NAME = "cncl"

_REDUCE_OPS = (
    (dist.ReduceOp.SUM, "sum"),
    (dist.ReduceOp.PRODUCT, "product"),
    (dist.ReduceOp.MAX, "max"),
    (dist.ReduceOp.MIN, "min"),
    (dist.ReduceOp.AVG, "avg"),
)


def _op_name(reduce_op):
    """"sum", "product", "max", "min" or "avg"; None for the others (premul_sum, bitwise ops).
    Options carry a ReduceOp wrapper that compares equal to its RedOpType but does not hash like it."""
    for op, name in _REDUCE_OPS:
        if reduce_op == op:
            return name
    return None


def _link(fig, ranks):
    """(a ns, B GB/s, D GB/s) of the model for `ranks` ranks (chips 0..ranks-1)."""
    per_host = fig.get("chips_per_host", 16)
    if ranks > per_host:
        a, b = fig["nic_latency_ns"] + fig["dram_latency_ns"], fig["nic_gbps"]
    elif fig["mlu_link_gbps"] > 0 and fig.get("mlu_link_topology", "full_mesh") in ("full_mesh", "ring"):
        a, b = fig["mlu_link_latency_ns"] + fig["dram_latency_ns"], fig["mlu_link_gbps"]
    else:
        a, b = 2 * (fig["host_link_latency_ns"] + fig["dram_latency_ns"]), fig["host_link_gbps"] / 2
    return a, b, fig["dram_gbps"]


def model_time_ns(op, nbytes, ranks, fig):
    """Simulated time of collective `op` over `ranks` ranks, `nbytes` as the model defines S for it
    (see the module docstring); 0 for one rank."""
    n = ranks
    if n <= 1:
        return 0.0
    a, b, d = _link(fig, n)
    s = float(nbytes)
    if op == "all_reduce":
        ring = 2 * (n - 1) * a + (n - 1) * (s / n) * max(1 / b, 3 / d) + (n - 1) * (s / n) / b
        steps = math.ceil(math.log2(n))
        tree = 2 * steps * (a + s * max(1 / b, 3 / d))
        ring_link_only = 2 * (n - 1) * (a + s / n / b)
        tree_link_only = 2 * steps * (a + s / b)
        return ring if ring_link_only < tree_link_only else tree
    if op == "reduce_scatter":
        return (n - 1) * (a + (s / n) * max(1 / b, 3 / d))
    if op == "all_gather":
        return (n - 1) * (a + (s / n) / b)
    if op == "broadcast":
        return (2 * n - 2) * (a + (s / n) / b)
    if op == "reduce":
        return (n - 1) * (a + (s / n) * max(1 / b, 3 / d)) + (n - 1) * (a + (s / n) / b)
    if op == "all_to_all":
        return a + (n - 1) * (s / n) / b
    if op == "send_recv":
        return a + s / b
    raise ValueError(f"cncl: no time model for {op!r}")


class _CnclWork(dist._Work):
    """A collective enqueued on the group's stream: its result is ready when `event` completes."""

    def __init__(self, result, event, device):
        super().__init__()
        self._result = result
        self._event = event
        self._future = Future(devices=[device])
        with torch.mlu.device(device):
            # Completed on the group's stream (the current stream while `event` was recorded):
            # the future's callbacks wait for the stream, not for the host.
            self._future.set_result(result)

    def is_completed(self):
        return self._event.query()

    def is_success(self):
        return True

    def wait(self, timeout=None):
        torch.mlu.current_stream(self._event.device).wait_event(self._event)
        return True

    def synchronize(self):
        self._event.synchronize()

    def result(self):
        return self._result

    def get_future(self):
        return self._future


class ProcessGroupCNCL(dist.ProcessGroup):
    """The "cncl" process group (see the module docstring). Create it through
    dist.init_process_group(backend="cncl") or dist.new_group(backend="cncl")."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore("cncl_transport", store), rank, size, timeout)
        self._fig = dict(_C.interconnect_figures())
        self._streams = {}
        self._check_same_system()
        if self._fig["nic_gbps"] <= 0 and size > self._fig["chips_per_host"]:
            raise RuntimeError(f"cncl: {size} ranks need {size} chips, more than one host of "
                               f"{self._fig['chips_per_host']} chips and config {self._fig['config_name']} "
                               "has no network (network.nic_bandwidth_gbps)")
        self.comm_ns = 0.0     # simulated time of this rank's collectives (arrival to end), summed
        self.collectives = []  # per collective: (op, bytes, arrival_ns, end_ns)

    def getBackendName(self):
        return BACKEND_NAME

    # The group's name and description (init_process_group / new_group set them; DeviceMesh and
    # FSDP read them back through the C++ ProcessGroup, which asks the Python subclass).
    def setGroupName(self, name):
        self._group_name = name

    def getGroupName(self):
        return getattr(self, "_group_name", "")

    def setGroupDesc(self, desc):
        self._group_desc = desc

    def getGroupDesc(self):
        return getattr(self, "_group_desc", "")

    # nccl-tests' bus-bandwidth factors: what each rank's link carries per byte of the operation.
    _BUS_FACTOR = {
        "all_reduce": lambda n: 2 * (n - 1) / n,
        "reduce_scatter": lambda n: (n - 1) / n,
        "all_gather": lambda n: (n - 1) / n,
        "all_to_all": lambda n: (n - 1) / n,
        "broadcast": lambda n: 1.0,
        "reduce": lambda n: 1.0,
        "send_recv": lambda n: 1.0,
    }

    def comm_report(self, device=None):
        """Per collective kind, this rank's calls: {op: {calls, bytes, time_us, algbw_gbps,
        busbw_gbps, overlap}} with time = end - arrival summed (simulated), algbw = bytes / time,
        busbw = algbw x the nccl-tests factor of the op (2(n-1)/n for all_reduce, (n-1)/n for
        all_gather / reduce_scatter / all_to_all, 1 for broadcast, reduce and send/recv), and
        overlap = the share of that time during which the rank's device ran kernels (compute
        hidden behind communication, as DDP's bucketing aims for; kernels since the last
        torch_mlu.reset_stats())."""
        index = torch.mlu.current_device() if device is None else torch.device(device).index
        spans = sorted(_C.kernel_spans(index))
        merged = []
        for start, end in spans:
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])

        def busy(a, b):
            return sum(max(0.0, min(b, e) - max(a, s)) for s, e in merged)

        out = {}
        for op, nbytes, arrival, end in self.collectives:
            r = out.setdefault(op, {"calls": 0, "bytes": 0, "time_us": 0.0, "_busy_us": 0.0})
            r["calls"] += 1
            r["bytes"] += nbytes
            r["time_us"] += (end - arrival) / 1e3
            r["_busy_us"] += busy(arrival, end) / 1e3
        for op, r in out.items():
            algbw = r["bytes"] / (r["time_us"] * 1e3) if r["time_us"] > 0 else 0.0
            r["algbw_gbps"] = algbw
            r["busbw_gbps"] = algbw * self._BUS_FACTOR[op](self.size())
            r["overlap"] = r.pop("_busy_us") / r["time_us"] if r["time_us"] > 0 else 0.0
        return out

    def _check_same_system(self):
        """Every rank must simulate the same config: the model's figures must agree."""
        mine = torch.tensor([self._fig["mlu_link_gbps"], self._fig["mlu_link_latency_ns"], self._fig["dram_gbps"],
                             self._fig["host_link_gbps"], self._fig["chips_per_host"], self._fig["nic_gbps"]],
                            dtype=torch.float64)
        everyone = [torch.empty_like(mine) for _ in range(self.size())]
        self._gloo.allgather([everyone], [mine]).wait()
        for r, other in enumerate(everyone):
            if not torch.equal(other, mine):
                raise RuntimeError(f"cncl: rank {r} simulates a different interconnect ({other.tolist()}) than rank "
                                   f"{self.rank()} ({mine.tolist()}); load the same config on every rank")

    # ---- the common path --------------------------------------------------------------------------

    def _stream(self, device):
        if device.index not in self._streams:
            self._streams[device.index] = torch.mlu.Stream(device)
        return self._streams[device.index]

    @staticmethod
    def _on_cpu(tensors):
        """CPU tensors (object collectives pick "cpu" for a Python process group) go straight to
        the inner Gloo group: host memory, no simulated time, as a "cpu:gloo" backend would."""
        return all(t.device.type == "cpu" for t in tensors)

    @staticmethod
    def _device_of(tensors, what):
        devices = {t.device for t in tensors}
        if len(devices) != 1 or next(iter(devices)).type != "mlu":
            raise ValueError(f"cncl {what}: tensors must all be on one mlu device, got {sorted(map(str, devices))}")
        for t in tensors:
            if not t.is_contiguous():
                raise ValueError(f"cncl {what}: tensors must be contiguous")
        return next(iter(devices))

    def _arrive(self, device):
        """This rank's arrival: the simulated time its current stream reaches the collective, or
        the host's time after the launch cost if later. Found by running the simulation ahead
        (mlusimNotifierPeek): the host does not wait, so it goes on queuing work (backward
        kernels) that overlaps the collective, as with a real device."""
        _C.host_advance(self._fig["launch_overhead_ns"])
        marker = _C.notifier_create(device.index, False)
        try:
            _C.notifier_record(marker, device.index, torch.mlu.current_stream(device).stream_id)
            return max(_C.notifier_peek_ns(marker), _C.host_time_ns())
        finally:
            _C.notifier_destroy(marker)

    def _finish(self, op, nbytes, arrival, device, result):
        """Everyone's arrivals -> the end time; the group's stream holds until then."""
        mine = torch.tensor([arrival], dtype=torch.float64)
        everyone = torch.empty(self.size(), dtype=torch.float64)
        self._gloo._allgather_base(everyone, mine).wait()
        end = float(everyone.max()) + model_time_ns(op, nbytes, self.size(), self._fig)
        return self._hold(op, nbytes, arrival, end, device, result)

    def _hold(self, op, nbytes, arrival, end, device, result):
        """The group's stream waits for the caller's current stream, then holds until `end`; the
        Work (and its future) complete there; the result's memory stays in use until then."""
        stream = self._stream(device)
        stream.wait_stream(torch.mlu.current_stream(device))
        _C.queue_hold_until(device.index, stream.stream_id, end)
        with torch.mlu.stream(stream):
            event = torch.mlu.Event()
            event.record(stream)
            work = _CnclWork(result, event, device)
        for t in result if isinstance(result, list) else [result]:
            if isinstance(t, torch.Tensor) and t.device.type == "mlu":
                t.record_stream(stream)
        self.comm_ns += end - arrival
        self.collectives.append((op, nbytes, arrival, end))
        return work

    @staticmethod
    def _reduce_op(opts, what):
        """The op's name ("sum", ..., "avg"); ValueError naming the collective for the others."""
        op = _op_name(opts.reduceOp)
        if op is None:
            raise ValueError(f"cncl {what}: reduce op {opts.reduceOp} is not supported")
        return op

    def _host_all_reduce(self, hosts, reduce_op, op):
        """Gloo all-reduce of host tensors in place; avg is a sum divided by the group size."""
        gloo_opts = dist.AllreduceOptions()
        gloo_opts.reduceOp = dist.ReduceOp.SUM if op == "avg" else reduce_op
        self._gloo.allreduce(hosts, gloo_opts).wait()
        if op == "avg":
            for h in hosts:
                h.div_(self.size())

    @staticmethod
    def _to_host(t):
        host = torch.empty(t.shape, dtype=t.dtype)
        if t.numel():
            _C.memcpy_untimed(host.data_ptr(), t.data_ptr(), t.numel() * t.element_size(), False)
        return host

    @staticmethod
    def _to_device(host, t):
        if t.numel():
            _C.memcpy_untimed(t.data_ptr(), host.data_ptr(), t.numel() * t.element_size(), True)

    # ---- collectives -----------------------------------------------------------------------------

    def allreduce(self, tensors, opts):
        if self._on_cpu(tensors):
            return self._gloo.allreduce(tensors, opts)
        device = self._device_of(tensors, "all_reduce")
        op = self._reduce_op(opts, "all_reduce")
        arrival = self._arrive(device)
        hosts = [self._to_host(t) for t in tensors]
        self._host_all_reduce(hosts, opts.reduceOp, op)
        for h, t in zip(hosts, tensors):
            self._to_device(h, t)
        nbytes = sum(t.numel() * t.element_size() for t in tensors)
        return self._finish("all_reduce", nbytes, arrival, device, tensors)

    def allreduce_coalesced(self, tensors, opts):
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors, opts):
        if self._on_cpu(tensors):
            return self._gloo.broadcast(tensors, opts)
        device = self._device_of(tensors, "broadcast")
        arrival = self._arrive(device)
        hosts = [self._to_host(t) for t in tensors]
        gloo_opts = dist.BroadcastOptions()
        gloo_opts.rootRank = opts.rootRank
        gloo_opts.rootTensor = opts.rootTensor
        self._gloo.broadcast(hosts, gloo_opts).wait()
        for h, t in zip(hosts, tensors):
            self._to_device(h, t)
        nbytes = sum(t.numel() * t.element_size() for t in tensors)
        return self._finish("broadcast", nbytes, arrival, device, tensors)

    def allgather(self, output_lists, inputs, opts=None):
        if self._on_cpu(list(inputs) + [t for out in output_lists for t in out]):
            return self._gloo.allgather(output_lists, inputs)
        device = self._device_of(list(inputs) + [t for out in output_lists for t in out], "all_gather")
        arrival = self._arrive(device)
        host_in = [self._to_host(t) for t in inputs]
        host_out = [[torch.empty(t.shape, dtype=t.dtype) for t in out] for out in output_lists]
        self._gloo.allgather(host_out, host_in).wait()
        for hs, ts in zip(host_out, output_lists):
            for h, t in zip(hs, ts):
                self._to_device(h, t)
        nbytes = sum(t.numel() * t.element_size() for out in output_lists for t in out)
        return self._finish("all_gather", nbytes, arrival, device, output_lists)

    def _allgather_base(self, output, input, opts=None):
        if self._on_cpu([output, input]):
            return self._gloo._allgather_base(output, input)
        device = self._device_of([output, input], "all_gather_into_tensor")
        if output.numel() != self.size() * input.numel():
            raise ValueError(f"cncl all_gather_into_tensor: output has {output.numel()} elements, expected "
                             f"{self.size()} ranks x {input.numel()}")
        arrival = self._arrive(device)
        # Flat buffers, as NCCL takes them (SyncBatchNorm gathers a [C] vector into a [1, W*C] one).
        host_out = torch.empty(output.numel(), dtype=output.dtype)
        self._gloo._allgather_base(host_out, self._to_host(input).reshape(-1)).wait()
        self._to_device(host_out, output)
        return self._finish("all_gather", output.numel() * output.element_size(), arrival, device, [output])

    def reduce_scatter(self, outputs, input_lists, opts):
        device = self._device_of(list(outputs) + [t for ins in input_lists for t in ins], "reduce_scatter")
        arrival = self._arrive(device)
        for out, ins in zip(outputs, input_lists):
            host_in = torch.cat([self._to_host(t).reshape(-1) for t in ins])
            host_out = torch.empty(out.numel(), dtype=out.dtype)
            self._reduce_scatter_host(host_out, host_in, opts)
            self._to_device(host_out, out)
        nbytes = sum(t.numel() * t.element_size() for ins in input_lists for t in ins)
        return self._finish("reduce_scatter", nbytes, arrival, device, outputs)

    def _reduce_scatter_base(self, output, input, opts):
        device = self._device_of([output, input], "reduce_scatter_tensor")
        arrival = self._arrive(device)
        host_out = torch.empty(output.numel(), dtype=output.dtype)
        self._reduce_scatter_host(host_out, self._to_host(input).reshape(-1), opts)
        self._to_device(host_out, output)
        return self._finish("reduce_scatter", input.numel() * input.element_size(), arrival, device, [output])

    def _reduce_scatter_host(self, host_out, host_in, opts):
        # Gloo has no reduce-scatter for every dtype: all-reduce, then keep this rank's block.
        self._host_all_reduce([host_in], opts.reduceOp, self._reduce_op(opts, "reduce_scatter"))
        block = host_out.numel()
        host_out.copy_(host_in[self.rank() * block:(self.rank() + 1) * block])

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts):
        device = self._device_of([output, input], "all_to_all_single")
        arrival = self._arrive(device)
        host_out = torch.empty(output.shape, dtype=output.dtype)
        self._gloo.alltoall_base(host_out, self._to_host(input), output_split_sizes, input_split_sizes,
                                 dist.AllToAllOptions()).wait()
        self._to_device(host_out, output)
        return self._finish("all_to_all", input.numel() * input.element_size(), arrival, device, [output])

    # PyTorch 2.14's names for the single-tensor collectives (all_gather_into_tensor,
    # reduce_scatter_tensor, all_to_all_single call these), and their coalesced forms.
    def all_gather_single(self, output, input, opts=None):
        return self._allgather_base(output, input, opts)

    def reduce_scatter_single(self, output, input, opts):
        return self._reduce_scatter_base(output, input, opts)

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        return self.alltoall_base(output, input, output_split_sizes, input_split_sizes, opts)

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        return self._coalesced([self._allgather_base(o, i, opts) for o, i in zip(outputs, inputs)], outputs)

    allgather_into_tensor_coalesced = all_gather_single_coalesced

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts):
        return self._coalesced([self._reduce_scatter_base(o, i, opts) for o, i in zip(outputs, inputs)], outputs)

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    def _coalesced(self, works, outputs):
        """One Work for several: the last one's stream event follows all of them (one stream)."""
        return works[-1] if works else _CnclWork(outputs, torch.mlu.Event(), torch.device("mlu", torch.mlu.current_device()))

    def reduce(self, tensors, opts):
        if self._on_cpu(tensors):
            return self._gloo.reduce(tensors, opts)
        device = self._device_of(tensors, "reduce")
        if self._reduce_op(opts, "reduce") == "avg":  # Gloo's reduce has no avg
            raise ValueError(f"cncl reduce: reduce op {opts.reduceOp} is not supported")
        arrival = self._arrive(device)
        hosts = [self._to_host(t) for t in tensors]
        gloo_opts = dist.ReduceOptions()
        gloo_opts.reduceOp = opts.reduceOp
        gloo_opts.rootRank = opts.rootRank
        gloo_opts.rootTensor = opts.rootTensor
        self._gloo.reduce(hosts, gloo_opts).wait()
        if self.rank() == opts.rootRank:
            for h, t in zip(hosts, tensors):
                self._to_device(h, t)
        # A chain toward the root (the C library's schedule) costs what the broadcast chain does,
        # with the reduction's DRAM term on every hop: modelled as a reduce-scatter of the whole
        # buffer followed by a gather of it, the ring's upper bound.
        nbytes = sum(t.numel() * t.element_size() for t in tensors)
        return self._finish("reduce", nbytes, arrival, device, tensors)

    def barrier(self, opts=None):
        device = torch.device("mlu", torch.mlu.current_device())
        token = torch.zeros(1, device=device)
        return self.allreduce([token], dist.AllreduceOptions())

    def send(self, tensors, dst, tag):
        if self._on_cpu(tensors):
            return self._gloo.send(tensors, dst, tag)
        device = self._device_of(tensors, "send")
        arrival = self._arrive(device)
        self._gloo.send([self._to_host(t) for t in tensors], dst, tag).wait()
        # The receiver's end time needs the sender's arrival: it travels after the data.
        self._gloo.send([torch.tensor([arrival], dtype=torch.float64)], dst, tag).wait()
        nbytes = sum(t.numel() * t.element_size() for t in tensors)
        return self._finish_p2p(nbytes, arrival, arrival, device, tensors)

    def recv(self, tensors, src, tag):
        if self._on_cpu(tensors):
            return self._gloo.recv(tensors, src, tag)
        device = self._device_of(tensors, "recv")
        arrival = self._arrive(device)
        hosts = [torch.empty(t.shape, dtype=t.dtype) for t in tensors]
        self._gloo.recv(hosts, src, tag).wait()
        sent = torch.empty(1, dtype=torch.float64)
        self._gloo.recv([sent], src, tag).wait()
        for h, t in zip(hosts, tensors):
            self._to_device(h, t)
        nbytes = sum(t.numel() * t.element_size() for t in tensors)
        return self._finish_p2p(nbytes, arrival, max(arrival, float(sent)), device, tensors)

    def _finish_p2p(self, nbytes, arrival, start, device, result):
        end = start + model_time_ns("send_recv", nbytes, 2, self._fig)
        return self._hold("send_recv", nbytes, arrival, end, device, result)


def _create(store, rank, size, timeout):
    return ProcessGroupCNCL(store, rank, size, timeout)


def _register():
    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND_NAME, _create, devices=["mlu"])


if dist.is_available():
    _register()
