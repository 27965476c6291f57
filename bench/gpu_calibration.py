#!/usr/bin/env python3
"""Measures a calibration table's workloads on an NVIDIA GPU through PyTorch.

Reads a table in data/calibration's format (tools/mlusim/calibration_table.h: `#` comments, a
header naming workload, kind, dtype, M_or_B, K_or_H, N_or_W, Cin, Cout, kernel, stride, pad and
one `<hw>_us` column), runs every row's workload on the GPU and writes the same table with the
measured column filled (microseconds) plus `sm_mhz` (the mean SM clock while the row was timed)
and `kernels` (GPU kernels per run), and a JSON file beside it with every sample and the kernels'
names. `mlusim validate` then compares a preset with the written table.

How a row is timed (the method of triton.testing.do_bench): before each run a 256 MiB buffer is
zeroed, so the run starts with none of its operands in the L2 (as a fresh simulated device) and
the host has queued the run's kernels while the GPU was still zeroing (no host launch gap inside
the run); CUDA events recorded just before and after the run give its device time. The row's
value is the median over --reps runs after --warmup runs (cuDNN's autotuner, torch.backends.
cudnn.benchmark, picks the convolution algorithm during the warm-up, as in training scripts).
Model rows capture one inference in a CUDA graph and time its replay the same way.

What each kind runs (the shapes of tools/mlusim/validate_runner.h):
  gemm       torch.mm(A[M,K], B[K,N])
  conv2d     F.conv2d, x [B,Cin,H,W] and w [Cout,Cin,k,k] in channels_last, no bias
  layernorm  F.layer_norm over the last dim with weight and bias (eps 1e-5)
  softmax    torch.softmax along dim 1
  attention  baddbmm(k, q^T, alpha 1/sqrt(D)), softmax along dim -2, bmm(v^T, p)
  add        a + b, both [M,N];  relu, gelu  F.relu / F.gelu (erf) of an [M,N] input
  model:NAME torchvision's NAME (random weights), eval, channels_last, conv+BN folded
             (torch.fx.experimental.optimization.fuse), batch M_or_B at 224 x 224
dtype fp16 or bf16 runs in that dtype; fp32 with TF32 on for matmuls and convolutions (what the
tensor cores run for fp32 inputs; torch's default for cuDNN, set here for cuBLAS too).

--device cpu runs every row on the CPU with wall-clock timing, for checking a table and this
script without a GPU (its times are not a measurement of anything).
"""
import argparse
import csv
import io
import json
import math
import statistics
import sys
import threading
import time

import torch
import torch.nn.functional as F

FLUSH_BYTES = 256 << 20  # several times any current GPU's L2 (H100/H200: 50/60 MB)
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
SIZE_COLUMNS = ["M_or_B", "K_or_H", "N_or_W", "Cin", "Cout", "kernel", "stride", "pad"]


class TableError(Exception):
    pass


def read_table(path):
    """Returns (comment lines, header, rows as dicts, measured column name)."""
    comments, header, rows = [], None, []
    with open(path, newline="") as f:
        for number, line in enumerate(f, 1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                if header is None:
                    comments.append(line.rstrip("\n"))
                continue
            fields = [x.strip() for x in next(csv.reader([stripped]))]
            if header is None:
                header = fields
                missing = [c for c in ["workload", "kind"] + SIZE_COLUMNS if c not in header]
                if missing:
                    raise TableError(f"{path}:{number}: header lacks column '{missing[0]}'")
                measured = [c for c in header if c.endswith("_us")]
                if len(measured) != 1:
                    raise TableError(f"{path}:{number}: expected exactly one '<hw>_us' column, got {measured}")
                continue
            if len(fields) != len(header):
                raise TableError(f"{path}:{number}: {len(fields)} fields, the header has {len(header)}")
            row = dict(zip(header, fields))
            row["_line"] = number
            rows.append(row)
    if header is None:
        raise TableError(f"{path}: no header line")
    return comments, header, rows, measured[0]


# Columns each kind reads, as (column, minimum); the others are ignored (tools/mlusim/calibration_table.h).
KIND_COLUMNS = {
    "gemm": [("M_or_B", 1), ("K_or_H", 1), ("N_or_W", 1)],
    "conv2d": [("M_or_B", 1), ("K_or_H", 1), ("N_or_W", 1), ("Cin", 1), ("Cout", 1), ("kernel", 1),
               ("stride", 1), ("pad", 0)],
    "attention": [("M_or_B", 1), ("K_or_H", 1), ("N_or_W", 1)],
    "model": [("M_or_B", 1)],
}
for _kind in ("layernorm", "softmax", "add", "relu", "gelu"):
    KIND_COLUMNS[_kind] = [("M_or_B", 1), ("N_or_W", 1)]


def check_row(row, path):
    """The row's kind, dtype and sizes, or a TableError naming the file, line and column."""
    where = f"{path}:{row['_line']}"
    kind = row["kind"]
    base = "model" if kind.startswith("model:") else kind
    if base not in KIND_COLUMNS or (base == "model" and kind == "model:"):
        raise TableError(f"{where}: column 'kind': '{kind}' is not a kind this script runs "
                         f"(gemm, conv2d, layernorm, softmax, add, relu, gelu, attention, model:NAME)")
    dtype = row.get("dtype", "") or "fp32"
    if dtype not in DTYPES:
        raise TableError(f"{where}: column 'dtype': expected fp32, fp16 or bf16, got '{dtype}'")
    if base == "model" and dtype != "fp32":
        raise TableError(f"{where}: column 'dtype': model rows run in fp32, not {dtype}")
    sizes = {}
    for column, minimum in KIND_COLUMNS[base]:
        text = row.get(column, "")
        if text == "":
            raise TableError(f"{where}: column '{column}' is empty")
        if not text.isdigit() or int(text) < minimum:
            raise TableError(f"{where}: column '{column}': expected an integer >= {minimum}, got '{text}'")
        sizes[column] = int(text)
    if base == "conv2d":
        for axis in ("K_or_H", "N_or_W"):
            if sizes[axis] + 2 * sizes["pad"] < sizes["kernel"]:
                raise TableError(f"{where}: column 'kernel': {sizes['kernel']} is larger than the padded input")
    return {"kind": kind, "dtype": DTYPES[dtype], "sizes": sizes}


def build(spec, device):
    """A callable that runs the checked row `spec` (check_row) once."""
    kind, dt, z = spec["kind"], spec["dtype"], spec["sizes"]
    opts = dict(device=device, dtype=dt)
    if kind == "gemm":
        a, b = torch.randn(z["M_or_B"], z["K_or_H"], **opts), torch.randn(z["K_or_H"], z["N_or_W"], **opts)
        out = torch.empty(z["M_or_B"], z["N_or_W"], **opts)
        return lambda: torch.mm(a, b, out=out)
    if kind == "conv2d":
        cl = torch.channels_last
        x = torch.randn(z["M_or_B"], z["Cin"], z["K_or_H"], z["N_or_W"], **opts).contiguous(memory_format=cl)
        wt = torch.randn(z["Cout"], z["Cin"], z["kernel"], z["kernel"], **opts).contiguous(memory_format=cl)
        return lambda: F.conv2d(x, wt, None, z["stride"], z["pad"])
    if kind in ("layernorm", "softmax", "add", "relu", "gelu"):
        m, n = z["M_or_B"], z["N_or_W"]
        x = torch.randn(m, n, **opts)
        if kind == "layernorm":
            weight, bias = torch.randn(n, **opts), torch.randn(n, **opts)
            return lambda: F.layer_norm(x, (n,), weight, bias, 1e-5)
        if kind == "softmax":
            return lambda: torch.softmax(x, 1)
        if kind == "add":
            y = torch.randn(m, n, **opts)
            return lambda: torch.add(x, y)
        return (lambda: F.relu(x)) if kind == "relu" else (lambda: F.gelu(x))
    if kind == "attention":
        bsz, seq, dim = z["M_or_B"], z["K_or_H"], z["N_or_W"]
        q, k, v = (torch.randn(bsz, seq, dim, **opts) for _ in range(3))
        scores = torch.empty(bsz, seq, seq, **opts)
        scale = 1.0 / math.sqrt(dim)

        def attention():
            s = torch.baddbmm(scores, k, q.transpose(1, 2), beta=0, alpha=scale)
            p = torch.softmax(s, -2)
            return torch.bmm(v.transpose(1, 2), p)
        return attention
    import torchvision
    name = kind[len("model:"):]
    if not hasattr(torchvision.models, name):
        raise TableError(f"column 'kind': torchvision has no model '{name}'")
    model = getattr(torchvision.models, name)(weights=None).eval()
    from torch.fx.experimental.optimization import fuse
    model = fuse(model).to(device=device, dtype=dt, memory_format=torch.channels_last)
    x = torch.randn(z["M_or_B"], 3, 224, 224, **opts).contiguous(memory_format=torch.channels_last)
    if device == "cpu":
        return lambda: model(x)
    with torch.no_grad():
        for _ in range(3):  # cuDNN autotuning and lazy init outside the capture
            model(x)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model(x)
    return graph.replay


class ClockSampler:
    """Samples the GPU's SM clock (NVML) every millisecond while active, for the row's mean."""

    def __init__(self, device_index):
        self.samples, self._stop, self._thread, self._nvml = [], threading.Event(), None, None
        try:
            import pynvml
            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
        except Exception:  # no NVML: the clock column stays empty
            self._nvml = None

    def clock_mhz(self):
        return self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM) if self._nvml else None

    def __enter__(self):
        self.samples, self._stop = [], threading.Event()
        if self._nvml:
            def loop():
                while not self._stop.is_set():
                    self.samples.append(self.clock_mhz())
                    time.sleep(0.001)
            self._thread = threading.Thread(target=loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread:
            self._thread.join()

    def mean(self):
        return statistics.fmean(self.samples) if self.samples else None


def kernel_names(run, device):
    """The GPU kernels one run launches (names), from the profiler."""
    if device == "cpu":
        return []
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def time_row(run, device, warmup, reps, flush, sampler):
    """Device times of `reps` runs in microseconds, each after an L2 flush."""
    with torch.no_grad():
        for _ in range(warmup):
            run()
        if device == "cpu":
            samples = []
            for _ in range(reps):
                t0 = time.perf_counter()
                run()
                samples.append((time.perf_counter() - t0) * 1e6)
            return samples, None
        torch.cuda.synchronize()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        with sampler:
            for start, end in events:
                flush.zero_()
                start.record()
                run()
                end.record()
            torch.cuda.synchronize()
        return [s.elapsed_time(e) * 1e3 for s, e in events], sampler.mean()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("table", help="workloads table (data/calibration/*-workloads.csv)")
    p.add_argument("--out", required=True, help="CSV to write (the table with the measured column filled)")
    p.add_argument("--json", help="also write every sample and kernel name here")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                   help="cuda (a measurement) or cpu (checks the table and the script; not a measurement)")
    p.add_argument("--warmup", type=int, default=5, help="untimed runs per row (default 5)")
    p.add_argument("--reps", type=int, default=30, help="timed runs per row; the row's value is their median")
    p.add_argument("-w", "--workload", action="append", default=[], help="measure only this row (repeatable)")
    a = p.parse_args(argv)
    if a.warmup < 0 or a.reps < 1:
        p.error("--warmup must be >= 0 and --reps >= 1")
    try:
        comments, header, rows, measured = read_table(a.table)
    except (OSError, TableError) as e:
        print(f"gpu_calibration: {e}", file=sys.stderr)
        return 2
    unknown = set(a.workload) - {r["workload"] for r in rows}
    if unknown:
        print(f"gpu_calibration: --workload: '{sorted(unknown)[0]}' is not a row of {a.table}", file=sys.stderr)
        return 2
    if a.device == "cuda":
        if not torch.cuda.is_available():
            print("gpu_calibration: no CUDA device (use --device cpu to check a table)", file=sys.stderr)
            return 2
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(0)
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=a.device) if a.device == "cuda" else None
    sampler = ClockSampler(torch.cuda.current_device() if a.device == "cuda" else 0)
    env = {"device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu",
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if a.device == "cuda" else None,
           "idle_sm_mhz": sampler.clock_mhz() if a.device == "cuda" else None,
           "warmup": a.warmup, "reps": a.reps}
    if a.device == "cuda":
        prop = torch.cuda.get_device_properties(0)
        env.update(sms=prop.multi_processor_count, memory_bytes=prop.total_memory,
                   l2_bytes=getattr(prop, "L2_cache_size", None))
    print(json.dumps(env), flush=True)
    selected = [r for r in rows if not a.workload or r["workload"] in a.workload]
    try:  # every selected row is checked before anything is measured
        specs = [check_row(r, a.table) for r in selected]
    except TableError as e:
        print(f"gpu_calibration: {e}", file=sys.stderr)
        return 2
    results = []
    for row, spec in zip(selected, specs):
        try:
            run = build(spec, a.device)
            samples, mhz = time_row(run, a.device, a.warmup, a.reps, flush, sampler)
        except Exception as e:  # a row that cannot run (e.g. out of memory) is reported, the rest go on
            print(f"{row['workload']}: FAILED: {type(e).__name__}: {e}", flush=True)
            results.append((row, None, None, [], str(e)))
            continue
        try:
            names = kernel_names(run, a.device)
        except Exception as e:  # the profiler is optional: the timing stands without the names
            print(f"{row['workload']}: no kernel names ({type(e).__name__}: {e})", flush=True)
            names = []
        median = statistics.median(samples)
        row[measured] = f"{median:.3f}"
        row["sm_mhz"] = f"{mhz:.0f}" if mhz else ""
        row["kernels"] = str(len(names)) if names else ""
        print(f"{row['workload']:34s} {median:12.3f} us  min {min(samples):10.3f}  max {max(samples):10.3f}"
              f"  sm {row['sm_mhz'] or '-':>5} MHz  kernels {len(names)}", flush=True)
        results.append((row, samples, mhz, names, None))
        if a.device == "cuda":
            torch.cuda.empty_cache()
    out_header = header + [c for c in ("sm_mhz", "kernels") if c not in header]
    buf = io.StringIO()
    for c in comments:
        buf.write(c + "\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(out_header)
    for row in rows:
        w.writerow([row.get(c, "") for c in out_header])
    with open(a.out, "w") as f:
        f.write(buf.getvalue())
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"environment": env, "rows": [
                {"workload": r["workload"], "samples_us": s, "sm_mhz": m, "kernels": n, "error": err}
                for r, s, m, n, err in results]}, f, indent=1)
    return 1 if any(err for *_, err in results) else 0


if __name__ == "__main__":
    sys.exit(main())
