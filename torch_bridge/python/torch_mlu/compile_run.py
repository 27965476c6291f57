"""``python -m torch_mlu.compile_run MODEL.pt``: what ``mlusim run MODEL --compile`` runs.

A TorchScript model (what ``mlusim run`` takes; the built-in models are TorchScript files) is
converted to an FX graph module (``torch._export.converter.TS2EPConverter``: TorchScript ->
ExportedProgram, in the mode the run asks for), then run twice on the simulated device with the
same weights and inputs: eagerly, and through ``torch.compile`` with the backend asked for
(Inductor, PyTorch's default, with the device's codegen; or "mlu", the device's Dynamo backend).
The compile happens in untimed warm-up iterations; the measured iterations of each run are timed
from the cycle report. Prints the compiled run's cycle report and, side by side, eager -> compiled:
cycles, simulated time, DRAM bytes, kernel launches, then what the compile produced (generated
kernels and their device launches, GEMM/conv epilogue fusions; for backend "mlu" its graphs and
their fusion matches). ``--report FILE`` writes a run report of the compiled run in the format of
``mlusim run --report`` (docs/cli.md) with a "compile" section, which ``mlusim report`` renders.

The mlusim CLI passes every option resolved (input shapes with the batch filled in, the model's
loss and vocabulary from its sidecar); the options are those of ``mlusim run`` (docs/cli.md).
Exit status: 0, 1 when the run fails (the error on stderr), 2 for bad usage.
"""

import argparse
import copy
import pathlib
import sys
import time

from ._cli import positive_int_type, shape_type


def _parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m torch_mlu.compile_run",
                                description="A TorchScript model on the MLU eagerly and through torch.compile: cycles, "
                                            "time, DRAM bytes and launches side by side (mlusim run --compile).",
                                epilog="See docs/cli.md, 'torch.compile'.")
    p.add_argument("model", type=pathlib.Path, help="TorchScript file (.pt)")
    p.add_argument("--input", type=shape_type("--input"), action="append", required=True,
                   help="shape of one input, batch included (repeat for several inputs)")
    p.add_argument("--vocab", type=positive_int_type("--vocab"), help="inputs are token ids in [0, VOCAB)")
    p.add_argument("--loss", choices=("mse", "cross_entropy"), default="mse", help="training loss (default mse)")
    p.add_argument("--classes", type=positive_int_type("--classes"), help="classes of the cross-entropy labels")
    p.add_argument("--name", help="model name in the report (default: the file's stem)")
    p.add_argument("--description", default="", help="model description in the report")
    p.add_argument("--backend", choices=("inductor", "mlu"), default="inductor",
                   help="torch.compile backend (default inductor: PyTorch's default with the device's codegen)")
    p.add_argument("--config", help="simulated hardware preset or YAML file (default: $MLUSIM_CONFIG or mlu370-x4)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override (repeatable)")
    p.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    p.add_argument("--train", action="store_true", help="one training step per iteration: forward, loss, backward, SGD")
    p.add_argument("--iterations", type=positive_int_type("--iterations"), default=1, help="measured iterations")
    p.add_argument("--warmup", type=int, default=0,
                   help="unmeasured iterations before the measured ones (the compiled run adds one that compiles)")
    p.add_argument("--lr", type=float, default=0.01, help="SGD learning rate for --train")
    p.add_argument("--seed", type=int, default=0, help="seed of the inputs, labels and device generator")
    p.add_argument("--timing-only", action="store_true", help="skip floating-point arithmetic in kernels")
    p.add_argument("--fallback", action="store_true", help="run ops without a device kernel on the CPU (counted)")
    p.add_argument("--trace", type=pathlib.Path, help="Chrome trace of the compiled run's measured iterations")
    p.add_argument("--trace-level", choices=("ops", "intrinsics"), default="ops")
    p.add_argument("--profile", type=pathlib.Path, help="torch.profiler trace of the compiled run's measured iterations")
    p.add_argument("--report", type=pathlib.Path, help="write the run report (JSON) of the compiled run")
    args = p.parse_args(argv)
    if args.warmup < 0:
        p.error(f"--warmup must be >= 0, got {args.warmup}")
    if args.lr < 0:
        p.error(f"--lr must be >= 0, got {args.lr}")
    if args.loss == "cross_entropy" and not args.classes:
        p.error("--loss cross_entropy needs --classes")
    return args


def graph_module_from_torchscript(path, example_inputs, train):
    """The TorchScript model at `path` as an FX graph module (TorchScript -> ExportedProgram ->
    module), traced in train or eval mode (the module keeps that mode: an exported module has no
    train()/eval()); its outputs match the TorchScript model's."""
    import torch
    from torch._export.converter import TS2EPConverter

    scripted = torch.jit.load(str(path), map_location="cpu")
    scripted.train(train)
    program = TS2EPConverter(scripted, tuple(example_inputs)).convert()
    return program.module()


def _make_inputs(args):
    import torch

    gen = torch.Generator().manual_seed(args.seed)
    if args.vocab:
        return [torch.randint(args.vocab, shape, generator=gen) for shape in args.input]
    return [torch.randn(shape, generator=gen) for shape in args.input]


class _Step:
    """One iteration of `mlusim run`: an inference forward, or forward + loss + backward + SGD
    (cross entropy against fixed random labels, or the mean squared output), as model_runner.cpp."""

    def __init__(self, module, inputs, args, targets):
        self.module, self.inputs, self.args, self.targets = module, inputs, args, targets
        self.params = [p for p in module.parameters() if p.requires_grad]
        self.first = None  # the first measured iteration's output (inference) or loss (training)

    def __call__(self, record=False):
        import torch
        import torch.nn.functional as F

        from .fusion import _first_tensor

        if not self.args.train:
            with torch.no_grad():
                out = self.module(*self.inputs)
            if record and self.first is None:
                self.first = _first_tensor(out).detach()
            return
        out = _first_tensor(self.module(*self.inputs))
        if self.args.loss == "cross_entropy":
            loss = F.cross_entropy(out.flatten(0, 1), self.targets.flatten()) if out.dim() == 3 else \
                F.cross_entropy(out, self.targets)
        else:
            loss = out.mul(out).mean()
        loss.backward()
        if record and self.first is None:
            self.first = loss.detach()
        with torch.no_grad():
            for p in self.params:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-self.args.lr)
                    p.grad = None


def _measure(step, args, device, trace_path=None, profile_path=None):
    """Runs args.warmup untimed iterations, then args.iterations measured ones; returns the cycle
    report (dict) and text of the measured ones and their host seconds."""
    import contextlib

    import torch

    import torch_mlu

    for _ in range(args.warmup):
        step()
    torch_mlu.synchronize(device)
    torch_mlu.reset_stats(device)
    tracing = torch_mlu.trace(trace_path, args.trace_level) if trace_path else contextlib.nullcontext()
    profiling = contextlib.nullcontext()
    if profile_path:
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]
        profiling = torch.profiler.profile(activities=acts)
    torch_mlu.set_timing_only(args.timing_only)
    try:
        with tracing, profiling as prof:
            t0 = time.perf_counter()
            for _ in range(args.iterations):
                step(record=True)
            torch_mlu.synchronize(device)
            host_seconds = time.perf_counter() - t0
    finally:
        torch_mlu.set_timing_only(False)
    if profile_path:
        profile_path.parent.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(profile_path))
    return torch_mlu.cycle_report(device, format="json"), torch_mlu.cycle_report(device), host_seconds


_METRIC_LABELS = {"cycles": "kernel cycles", "simulated_ns": "simulated us", "dram_bytes": "DRAM bytes",
                  "kernel_launches": "kernel launches"}


def comparison_text(eager, compiled, backend, patterns, graphs):
    """The side-by-side table printed after the compiled run's cycle report."""
    lines = [f"\ntorch.compile (backend {backend}): the same run eager -> compiled",
             f"  {'':18} {'eager':>16} {'compiled':>16} {'ratio':>8}"]
    for key, label in _METRIC_LABELS.items():
        a, b = eager[key], compiled[key]
        scale = 1e-3 if key == "simulated_ns" else 1
        ratio = f"{b / a:8.3f}" if a else f"{'-':>8}"
        lines.append(f"  {label:18} {a * scale:16,.{3 if scale != 1 else 0}f} {b * scale:16,.{3 if scale != 1 else 0}f} {ratio}")
    if backend == "inductor":
        lines.append(f"  generated kernels: {patterns['generated_kernels']}; their device launches per call: "
                     + (", ".join(f"{k} {v}" for k, v in sorted(patterns["generated_launches"].items()) if v) or "none"))
        epilogues = {k: v for k, v in patterns.items() if k not in ("generated_kernels", "generated_launches") and v}
        lines.append("  GEMM/conv epilogue fusions: " + (", ".join(f"{k} {v}" for k, v in sorted(epilogues.items()))
                                                         or "none"))
    else:
        for i, g in enumerate(graphs):
            matches = ", ".join(f"{k} {v}" for k, v in sorted(g.get("fusion_matches", {}).items()) if v) or "none"
            lines.append(f"  graph {i}: {g['mode']}, {g['nodes']} calls captured; fusions: {matches}")
    return "\n".join(lines) + "\n"


def run(args):
    """The whole run; returns the run report (dict) and the text to print."""
    import torch

    import torch_mlu

    from .compile import compile_for_report
    from .fusion import report_totals

    if args.config or args.set:
        torch_mlu.load_config(args.config or torch_mlu.config_name(), args.set)
    torch_mlu.set_cpu_fallback(args.fallback)
    device = torch.device("mlu", torch_mlu.current_device())
    dtype = torch.float16 if args.dtype == "float16" else torch.float32
    inputs = _make_inputs(args)
    gm = graph_module_from_torchscript(args.model, inputs, args.train)
    targets = None
    if args.train and args.loss == "cross_entropy":
        gen = torch.Generator().manual_seed(args.seed + 1)
        shape = inputs[0].shape if args.vocab else (inputs[0].shape[0],)
        targets = torch.randint(args.classes, shape, generator=gen).to(device)
    compiled_base = copy.deepcopy(gm).to(device, dtype)  # same starting weights: SGD updates each run's own
    eager_module = gm.to(device, dtype)
    dev_inputs = [x.to(device) if args.vocab else x.to(device, dtype) for x in inputs]
    torch_mlu.manual_seed(args.seed)

    eager_step = _Step(eager_module, dev_inputs, args, targets)
    eager_report, _, _ = _measure(eager_step, args, device)

    compiled, collect = compile_for_report(compiled_base, args.backend)
    compiled_step = _Step(compiled, dev_inputs, args, targets)
    torch_mlu.manual_seed(args.seed)
    t0 = time.perf_counter()
    compiled_step()  # compiles (untimed)
    torch_mlu.synchronize(device)
    compile_seconds = time.perf_counter() - t0
    report, text, host_seconds = _measure(compiled_step, args, device, args.trace, args.profile)
    graphs, patterns = collect()

    eager, comp = report_totals(eager_report), report_totals(report)
    diff = float((compiled_step.first.float().cpu() - eager_step.first.float().cpu()).abs().max())
    props = torch_mlu.get_device_properties(device)
    cycles = int(comp["simulated_ns"] * props.clock_rate_mhz / 1000.0)
    name = args.name or args.model.stem
    macs = {m["dtype"]: m["peak_macs_per_s"] for m in report.get("multiplies_by_dtype", [])}
    run_report = {
        "mlusim_run": 1, "model": name, "model_file": str(args.model), "description": args.description,
        "inputs": [list(x.shape) for x in inputs], "config": torch_mlu.config_name(), "batch": args.input[0][0],
        "dtype": args.dtype, "mode": "train" if args.train else "inference", "iterations": args.iterations,
        "timing_only": args.timing_only, "simulated_ns": comp["simulated_ns"],
        "simulated_ns_per_iteration": comp["simulated_ns"] / args.iterations, "cycles": cycles,
        "core_clock_mhz": props.clock_rate_mhz, "host_seconds": host_seconds,
        "trace": str(args.trace.resolve()) if args.trace else None,
        "profile": str(args.profile.resolve()) if args.profile else None,
        "peaks": {"dram_bytes_per_s": report.get("dram_peak_bytes_per_s", 0), "macs_per_s": macs},
        "fused": False, "compiled": True,
        "compile": {"backend": args.backend, "compile_seconds": compile_seconds,
                    "totals": {k: {"eager": eager[k], "compiled": comp[k]} for k in _METRIC_LABELS},
                    "patterns": patterns if patterns is not None else {}, "graphs": graphs,
                    "max_abs_diff": diff, "compared": "loss" if args.train else "first output"},
        "report": report,
    }
    head = (f"model {name} ({args.description or args.model}), "
            f"{'training step (forward + backward + SGD)' if args.train else 'inference'}, batch {args.input[0][0]}, "
            f"{args.dtype}, {args.iterations} iteration{'' if args.iterations == 1 else 's'}"
            f"{', timing-only' if args.timing_only else ''}, compiled ({args.backend}, {compile_seconds:.1f} s to "
            f"compile)\n"
            f"simulated time {comp['simulated_ns'] / 1e6:.3f} ms ({comp['simulated_ns'] / 1e6 / args.iterations:.3f} ms "
            f"per iteration, {cycles} cycles at {props.clock_rate_mhz:.0f} MHz); host time {host_seconds:.2f} s\n"
            + "".join(f"input {i}: [{', '.join(map(str, x.shape))}]\n" for i, x in enumerate(inputs)))
    compared = "loss" if args.train else "first output"
    tail = comparison_text(eager, comp, args.backend, patterns, graphs)
    tail += f"  max |compiled - eager| of the {compared}: {diff:.3g}\n"
    return run_report, head + "\n" + text + tail


def main(argv=None):
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    import json

    try:
        report, text = run(args)
    except Exception as e:  # noqa: BLE001  (a CLI: the error, not a Python traceback)
        print(f"mlusim run --compile: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    if args.trace:
        print(f"\ntrace: {args.trace} (open in https://ui.perfetto.dev or chrome://tracing)")
    if args.profile:
        print(f"profile: {args.profile} (torch.profiler trace: TensorBoard's profiler plug-in, Perfetto)")
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report, indent=1))
        print(f"report: {args.report} (mlusim report {args.report} renders it as HTML)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
