"""Data-parallel scaling on simulated chips: examples/ddp_train.py under torchrun at 1, 2, 4 and 8
ranks (one process per chip), per model and mode, in one run.

    .venv/bin/python bench/ddp_scaling.py                       # resnet50 + gpt2, ddp, 1/2/4/8 chips
    .venv/bin/python bench/ddp_scaling.py --modes ddp fsdp2 --check --ranks 2 4 8

Weak scaling: every rank trains --batch-per-rank samples, so the global batch grows with the
ranks. Per point it reports the simulated time of the last training step (the exposed part of the
gradient all-reduce included), its communication (collective time, bus bandwidth by nccl-tests'
definition, share overlapped by kernels) and
    scaling efficiency = T(1 chip) / T(n chips)       (1.0 = perfect weak scaling)
With --check every point also trains one device on the whole global batch and reports the
parameters' relative difference (examples/ddp_train.py). ResNet-50 runs with BatchNorm per rank
(--local-bn, the usual throughput setup) unless --check asks for SyncBatchNorm.

Config: --config (default mlu370-x8-server: 8 boards of 2 chips, MLU-Link within a board, PCIe
between boards, so 4 and 8 ranks cross boards through the host link). Real time grows with the
ranks: every rank is a process simulating its chip, and 8 share this machine's cores.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_point(args, model, mode, ranks, out):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(ranks),
           str(ROOT / "examples" / "ddp_train.py"), "--model", model, "--mode", mode, "--steps", str(args.steps),
           "--batch-per-rank", str(args.batch_per_rank), "--out", str(out)]
    if model == "resnet50":
        cmd += ["--image-size", str(args.image_size)] + ([] if args.check else ["--local-bn"])
    if args.check:
        cmd.append("--check")
    env = dict(os.environ, MLUSIM_CONFIG=args.config, OMP_NUM_THREADS="1")
    env.setdefault("MLUSIM_CONFIG_DIR", str(ROOT / "configs"))
    started = time.monotonic()
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"ddp_scaling: {model} {mode} x{ranks} failed:\n{run.stdout[-2000:]}{run.stderr[-3000:]}")
    found = [json.loads((out / f"rank{r}.json").read_text()) for r in range(ranks)]
    step_ms = max(f["step_ms"][-1] for f in found)  # the slowest rank sets the step
    comm = found[0]["comm"]
    point = {"model": model, "mode": mode, "ranks": ranks, "step_ms": step_ms, "wall_s": time.monotonic() - started,
             "comm": comm}
    if args.check:
        point["rel_param_diff"] = max(f["rel_param_diff"] for f in found)
        point["loss_diff"] = max(abs(f["mean_rank_loss"] - f["reference_loss"]) for f in found)
    return point


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", choices=("resnet50", "gpt2"), default=["resnet50", "gpt2"])
    p.add_argument("--modes", nargs="+", choices=("ddp", "fsdp2"), default=["ddp"])
    p.add_argument("--ranks", nargs="+", type=int, default=[1, 2, 4, 8])
    p.add_argument("--config", default="mlu370-x8-server")
    p.add_argument("--steps", type=int, default=2, help="steps per point; the last is measured (default 2)")
    p.add_argument("--batch-per-rank", type=int, default=2)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--check", action="store_true", help="compare every point with one device on the whole batch")
    p.add_argument("--json", type=pathlib.Path, help="also write the points here")
    args = p.parse_args(argv)
    if any(n < 1 for n in args.ranks):
        p.error(f"--ranks must be >= 1, got {args.ranks}")
    if args.steps < 1:
        p.error(f"--steps must be >= 1, got {args.steps}")

    points = []
    print(f"{'model':9} {'mode':5} {'chips':>5} {'step ms':>9} {'eff':>5} {'comm us':>9} {'busbw':>7} {'overlap':>7}"
          + (f" {'param diff':>10}" if args.check else ""), flush=True)
    for model in args.models:
        for mode in args.modes:
            base = None
            for n in sorted(args.ranks):
                with tempfile.TemporaryDirectory() as tmp:
                    pt = run_point(args, model, mode, n, pathlib.Path(tmp))
                base = pt["step_ms"] if n == 1 else base
                pt["efficiency"] = base / pt["step_ms"] if base else None
                grads = pt["comm"].get("all_reduce") or pt["comm"].get("reduce_scatter") or {}
                comm_us = sum(c["time_us"] for c in pt["comm"].values())
                eff = f"{pt['efficiency']:.2f}" if pt["efficiency"] else "-"
                print(f"{model:9} {mode:5} {n:5d} {pt['step_ms']:9.3f} {eff:>5} {comm_us:9.1f} "
                      f"{grads.get('busbw_gbps', 0.0):7.1f} {grads.get('overlap', 0.0):7.2f}"
                      + (f" {pt['rel_param_diff']:10.2e}" if args.check else ""), flush=True)
                points.append(pt)
    if args.json:
        args.json.write_text(json.dumps(points, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
