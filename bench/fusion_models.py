#!/usr/bin/env python3
"""Fusion benchmark: resnet50 inference and one BERT-base encoder layer on the simulated MLU,
unfused vs fused (`mlusim run --fuse`: the TorchScript fusion pass, then the fused libmlu
kernels). Reports simulated cycles, GDRAM bytes and kernel launches of both and their ratios,
all from one run of each model; nothing is asserted.

Run from the source tree after building:
  MLUSIM_CONFIG_DIR=configs .venv/bin/python bench/fusion_models.py [--mlusim build/tools/mlusim/mlusim]
      [--config mlu370-x4] [--batch 1] [--functional]
Timing-only by default (same cycles, faster); --functional computes the numbers too.
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

MODELS = ["resnet50", "bert-base"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mlusim", default="build/tools/mlusim/mlusim", help="the mlusim program")
    ap.add_argument("--config", default="mlu370-x4")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--functional", action="store_true", help="compute results too (slower; same cycles)")
    args = ap.parse_args()
    print(f"fusion on {args.config}, batch {args.batch}, fp32 inference")
    print(f"{'model':<12} {'metric':<16} {'unfused':>16} {'fused':>16} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for model in MODELS:
            report = pathlib.Path(tmp) / f"{model}.json"
            cmd = [args.mlusim, "run", model, "--config", args.config, "--batch", str(args.batch), "--fuse",
                   "--no-trace", "--no-progress", "--report", str(report)]
            if not args.functional:
                cmd.append("--timing-only")
            done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if done.returncode != 0:
                print(f"{model}: mlusim failed: {done.stderr.strip()}", file=sys.stderr)
                return 1
            fusion = json.loads(report.read_text())["fusion"]
            for metric in ("cycles", "GDRAM bytes", "kernel launches"):
                t = fusion["totals"][metric]
                ratio = t["fused"] / t["unfused"] if t["unfused"] else 0.0
                print(f"{model:<12} {metric:<16} {t['unfused']:>16.0f} {t['fused']:>16.0f} {ratio:>7.3f}")
            matches = ", ".join(f"{k} {v['matches']}" for k, v in fusion["patterns"].items())
            print(f"{model:<12} {'fused nodes':<16} {matches}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
