"""Determinism at scale: the same model run in separate processes gives byte-identical traces and
cycle reports, whatever the host's thread count or load.

Usage: determinism_test.py MLUSIM WORKDIR

For resnet18 (64x64 inputs) and one BERT-base encoder layer (bert-base, 128 tokens), on tiny with
1 GiB of DRAM, three `mlusim run` processes:
  a  as the environment gives it,
  b  with one host thread for torch's CPU work (OMP_NUM_THREADS=1),
  c  with two host threads while two busy processes load the machine.
Their trace files must be identical byte for byte, so must the cycle reports inside the run
reports (the "report" object: kernels, cycles, engines, traffic, allocator), and the printed
reports must be equal except for the host-time figure and the output file names. Exit status 0
when all hold; otherwise the first difference is printed.
"""

import json
import multiprocessing
import os
import re
import subprocess
import sys
import time

CASES = {
    "resnet18": ["run", "resnet18", "--input-shape", "B,3,64,64"],
    "bert-layer": ["run", "bert-base"],
}
COMMON = ["--config", "tiny", "--set", "dram.capacity_bytes=1GiB", "--no-progress"]


def busy(stop_at):
    while time.time() < stop_at:
        pass


def run(mlusim, workdir, case, variant, env_extra, load):
    out = os.path.join(workdir, f"{case}-{variant}")
    args = [mlusim] + CASES[case] + COMMON + ["--trace", out + ".trace.json", "--report", out + ".json"]
    env = dict(os.environ)
    env.update(env_extra)
    hogs = []
    if load:
        stop_at = time.time() + 120
        hogs = [multiprocessing.Process(target=busy, args=(stop_at,), daemon=True) for _ in range(load)]
        for h in hogs:
            h.start()
    try:
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    finally:
        for h in hogs:
            h.terminate()
            h.join()
    if done.returncode != 0:
        sys.exit(f"{case}/{variant}: mlusim failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    with open(out + ".trace.json", "rb") as f:
        trace = f.read()
    with open(out + ".json") as f:
        report = json.load(f)
    # Host wall time and this run's own file names are the only things allowed to differ.
    text = re.sub(r"host time [0-9.]+ s", "host time <t> s", done.stdout).replace(f"{case}-{variant}", "<run>")
    return trace, report, text


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    mlusim, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    variants = {"a": ({}, 0), "b": ({"OMP_NUM_THREADS": "1"}, 0), "c": ({"OMP_NUM_THREADS": "2"}, 2)}
    failed = False
    for case in CASES:
        runs = {v: run(mlusim, workdir, case, v, env, load) for v, (env, load) in variants.items()}
        trace_a, report_a, text_a = runs["a"]
        cycle_report_a = json.dumps(report_a["report"], sort_keys=True)
        for v in ("b", "c"):
            trace, report, text = runs[v]
            if trace != trace_a:
                i = first_difference(trace, trace_a)
                print(f"{case}: trace of run {v} differs from run a at byte {i}: "
                      f"{trace_a[max(0, i - 80):i + 80]!r} vs {trace[max(0, i - 80):i + 80]!r}")
                failed = True
            cycle_report = json.dumps(report["report"], sort_keys=True)
            if cycle_report != cycle_report_a:
                i = first_difference(cycle_report, cycle_report_a)
                print(f"{case}: cycle report of run {v} differs from run a at {i}: "
                      f"{cycle_report_a[max(0, i - 80):i + 80]} vs {cycle_report[max(0, i - 80):i + 80]}")
                failed = True
            if text != text_a:
                print(f"{case}: printed report of run {v} differs from run a:\n{text_a}\n---\n{text}")
                failed = True
        cycles = report_a["cycles"]
        kernels = report_a["report"]["kernel_launches"]
        print(f"{case}: 3 processes, {len(trace_a)} trace bytes, {kernels} kernels, {cycles} cycles: "
              f"{'identical' if not failed else 'DIFFERENT'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
