"""Data-parallel training of real models on 2 simulated chips (examples/ddp_train.py under
torchrun, backend "cncl", mlu370-x8): a transformers GPT-2 with DDP and with FSDP2, and a
torchvision resnet18 with DDP and SyncBatchNorm, each against one device training on the
concatenated batch. The 4- and 8-chip runs are in bench/ddp_scaling.py (too slow for the suite
on 2 cores)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


def train(tmp_path, *args):
    out = tmp_path / "out"
    env = dict(os.environ, MLUSIM_CONFIG="mlu370-x8", OMP_NUM_THREADS="1")
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         str(ROOT / "examples" / "ddp_train.py"), "--check", "--out", str(out), *args],
        env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout, [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def spans(trace_path):
    """{track name: [(name, start us, end us)]} of a torch_mlu.sim.trace file."""
    events = json.loads(trace_path.read_text())["traceEvents"]
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    out = {}
    for e in events:
        if e.get("ph") == "X":
            out.setdefault(tracks.get((e["pid"], e["tid"]), "?"), []).append((e["name"], e["ts"], e["ts"] + e["dur"]))
    return out


@pytest.mark.parametrize("mode", ["ddp", "fsdp2"])
def test_gpt2_step_matches_one_device_on_the_whole_batch(tmp_path, mode):
    stdout, ranks = train(tmp_path, "--model", "gpt2", "--mode", mode, "--steps", "2", "--trace")
    assert f"gpt2 {mode} x2" in stdout
    for f in ranks:
        assert f["mean_rank_loss"] == pytest.approx(f["reference_loss"], rel=1e-6)
        assert f["max_param_diff"] < 1e-6, f
        assert f["rel_param_diff"] < 1e-4, f
        assert f["step_ms"][0] > 0
    comm = ranks[0]["comm"]
    # DDP all-reduces its gradient buckets; FSDP2 all-gathers parameters and reduce-scatters gradients.
    want = {"all_reduce"} if mode == "ddp" else {"all_gather", "reduce_scatter"}
    assert want <= set(comm), comm
    for op in want:
        assert comm[op]["busbw_gbps"] > 0 and 0.0 <= comm[op]["overlap"] <= 1.0
    # The cycle report's communication section gives the same numbers.
    assert ranks[1]["cycle_report_communication"]["rank"] == 1
    assert ranks[0]["cycle_report_communication"]["ranks"] == 2
    assert ranks[0]["cycle_report_communication"]["collectives"] == comm
    text = ranks[0]["cycle_report_text"]
    assert text.startswith("communication (cncl, rank 0 of 2") and "busbw GB/s" in text
    assert all(op in text for op in want)
    # The trace of the second step: the collectives are spans on the group's own queue, and
    # (DDP) gradient all-reduces overlap the backward's work on the training queue.
    tracks = spans(tmp_path / "out" / "trace_rank0.json")
    comm_tracks = {t for t, ss in tracks.items() if any(n.startswith("cncl ") for n, _, _ in ss)}
    assert comm_tracks and "default queue" not in comm_tracks, sorted(tracks)
    if mode == "ddp":
        reduces = [(a, b) for t in comm_tracks for n, a, b in tracks[t] if n.startswith("cncl all_reduce")]
        busy = tracks["default queue"]
        assert any(s < b and e > a for a, b in reduces for _, s, e in busy), "no all-reduce overlaps the training queue"


def test_resnet_ddp_with_sync_batch_norm_matches_one_device(tmp_path):
    """SyncBatchNorm makes the statistics those of the whole batch (its five ATen ops run on the
    device, and its all-gather of per-rank statistics is a cncl all_gather_into_tensor). resnet18
    at 64x64: the same SyncBatchNorm and DDP code paths as resnet50 at less than half the
    simulation time. The loss matches to fp32 rounding; the parameters after the step are
    5.2e-6 (relative norm) off the single-device step on the whole batch."""
    _, ranks = train(tmp_path, "--model", "resnet18", "--mode", "ddp", "--image-size", "64")
    for f in ranks:
        assert f["mean_rank_loss"] == pytest.approx(f["reference_loss"], rel=1e-5)
        assert f["rel_param_diff"] < 1e-4, f
    comm = ranks[0]["comm"]
    assert comm["all_gather"]["calls"] == 20  # one per SyncBatchNorm layer in forward
    assert comm["all_reduce"]["calls"] >= 20  # one per layer in backward, and DDP's buckets
