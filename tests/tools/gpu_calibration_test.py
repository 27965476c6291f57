"""bench/gpu_calibration.py without a GPU: --device cpu runs every kind of a small table and
writes it back with the measured column filled; bad tables and options are errors naming what
was wrong. Usage: gpu_calibration_test.py SCRIPT TABLE WORKDIR"""
import csv
import os
import subprocess
import sys

script, table, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)


def run(*args):
    p = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def expect_error(args, message):
    rc, out = run(*args)
    assert rc == 2, f"{args}: rc {rc}\n{out}"
    assert message in out, f"{args}: expected '{message}' in:\n{out}"


out_csv = os.path.join(work, "out.csv")
rc, out = run(table, "--device", "cpu", "--out", out_csv, "--warmup", "1", "--reps", "3",
              "--json", os.path.join(work, "out.json"))
assert rc == 0, out
lines = open(out_csv).read().splitlines()
assert lines[0].startswith("# A small table"), "comment lines are kept"
rows = list(csv.DictReader(l for l in lines if not l.startswith("#")))
with open(table) as f:
    expected = [l.split(",")[0] for l in f if l.strip() and not l.startswith("#")][1:]
assert [r["workload"] for r in rows] == expected, rows
for r in rows:
    assert float(r["gpu_us"]) > 0, r  # every row measured
    assert "sm_mhz" in r and "kernels" in r
# -w measures one row; the others stay empty.
rc, out = run(table, "--device", "cpu", "--out", out_csv, "--reps", "1", "-w", "g")
assert rc == 0, out
rows = list(csv.DictReader(l for l in open(out_csv) if not l.startswith("#")))
assert float(rows[0]["gpu_us"]) > 0 and all(r["gpu_us"] == "" for r in rows[1:]), rows

bad = os.path.join(work, "bad.csv")
header = "workload,kind,dtype,M_or_B,K_or_H,N_or_W,Cin,Cout,kernel,stride,pad,gpu_us\n"
for body, message in [
    ("x,matmul,fp32,1,2,3,,,,,,\n", "bad.csv:2: column 'kind': 'matmul' is not a kind this script runs"),
    ("x,gemm,fp64,1,2,3,,,,,,\n", "bad.csv:2: column 'dtype': expected fp32, fp16 or bf16, got 'fp64'"),
    ("x,gemm,fp32,1,,3,,,,,,\n", "bad.csv:2: column 'K_or_H' is empty"),
    ("x,gemm,fp32,1,two,3,,,,,,\n", "bad.csv:2: column 'K_or_H': expected an integer >= 1, got 'two'"),
    ("x,gemm,fp32,1,0,3,,,,,,\n", "bad.csv:2: column 'K_or_H': expected an integer >= 1, got '0'"),
    ("x,conv2d,fp32,1,2,2,4,4,7,1,1,\n", "bad.csv:2: column 'kernel': 7 is larger than the padded input"),
    ("x,model:resnet18,fp16,1,,,,,,,,\n", "bad.csv:2: column 'dtype': model rows run in fp32, not fp16"),
    ("x,gemm,fp32,1,2,3,,,,,\n", "bad.csv:2: 11 fields, the header has 12"),
    # A bad row after a good one: refused before anything is measured.
    ("ok,gemm,fp32,4,4,4,,,,,,\nx,relu,fp32,4,,,,,,,,\n", "bad.csv:3: column 'N_or_W' is empty"),
]:
    open(bad, "w").write(header + body)
    if os.path.exists(out_csv):
        os.remove(out_csv)
    expect_error([bad, "--device", "cpu", "--out", out_csv], message)
    assert not os.path.exists(out_csv), "nothing is written for a bad table"
open(bad, "w").write(header.replace("gpu_us", "gpu_cycles") + "x,gemm,fp32,1,2,3,,,,,,\n")
expect_error([bad, "--device", "cpu", "--out", out_csv], "expected exactly one '<hw>_us' column")
expect_error([table, "--device", "cpu", "--out", out_csv, "-w", "nope"], "--workload: 'nope' is not a row of")
expect_error([os.path.join(work, "missing.csv"), "--device", "cpu", "--out", out_csv], "missing.csv")
rc, out = run(table, "--device", "cpu", "--out", out_csv, "--reps", "0")
assert rc == 2 and "--reps >= 1" in out, out
import torch  # noqa: E402
if not torch.cuda.is_available():
    expect_error([table, "--out", out_csv], "no CUDA device (use --device cpu to check a table)")
print("gpu_calibration: ok")
