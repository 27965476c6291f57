#!/usr/bin/env python3
"""Measures an NVIDIA GPU's fixed cost per kernel launch, as seen by CUDA events.

The source of the `h200` preset's scheduler.launch_latency_ns (configs/h200.yaml): a microbenchmark
of the launch path alone, separate from the calibration rows it is then compared with.

Method (as bench/gpu_calibration.py times its rows): each sample zeroes a 256 MiB buffer first, so
the GPU is busy while the host queues the sample, then records a CUDA event, runs N launches of a
one-element kernel (torch.add on a 1-element tensor: the smallest kernel PyTorch launches, one
thread block), and records a second event. Reported per N (1, 2, 4, 16, 64), replayed from a CUDA
graph (graph_*: one launch of the host, so no host gap inside a sample) and launched eagerly
(eager_*: once the host's N launches outlast the zeroing, ~65 us on an H200, the sample waits for
the host: from N = 16 on these are host-bound, not the device's cost): the median of --reps
samples in microseconds. The slope over the last two N is the cost each further launch adds back
to back; the intercept (N = 1 less one slope) is what a single kernel's event-timed span carries
beyond it (event processing and the kernel's completion). `empty_us` is the two events alone.
"""
import argparse
import json
import statistics
import sys

import torch

COUNTS = [1, 2, 4, 16, 64]


def median_us(fn, flush, reps):
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, end in events:
        flush.zero_()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in events)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=50, help="samples per point (default 50)")
    p.add_argument("--json", help="also write the results here")
    a = p.parse_args(argv)
    if a.reps < 1:
        p.error("--reps must be >= 1")
    if not torch.cuda.is_available():
        print("gpu_launch_latency: no CUDA device", file=sys.stderr)
        return 2
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    x = torch.zeros(1, device="cuda")
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "empty_us": None,
           "eager_us": {}, "graph_us": {}}
    for _ in range(10):
        x.add_(1)
    out["empty_us"] = median_us(lambda: None, flush, a.reps)  # two events, nothing between
    for n in COUNTS:
        def eager(n=n):
            for _ in range(n):
                x.add_(1)
        eager()
        out["eager_us"][n] = median_us(eager, flush, a.reps)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            eager()
        graph.replay()
        out["graph_us"][n] = median_us(graph.replay, flush, a.reps)
    for mode in ("eager_us", "graph_us"):
        t = out[mode]
        slope = (t[COUNTS[-1]] - t[COUNTS[-2]]) / (COUNTS[-1] - COUNTS[-2])
        out[mode.replace("_us", "_slope_us")] = slope
        out[mode.replace("_us", "_intercept_us")] = t[1] - slope
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
