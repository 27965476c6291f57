"""torch.distributed backend "cncl" across processes (ProcessGroupCNCL, the C++ c10d::Backend of
torch_mlu._C_cncl, registered by torch_mlu/distributed.py): the seed's all_reduce snippet under
torchrun on 2 processes, every collective against the values it must give, errors for bad input,
DDP and FSDP2 steps against single-device training on the whole batch, and simulated end times that
every rank computes identically."""

import json
import math
import os
import pathlib
import subprocess
import sys

import pytest
import torch
import torch.distributed as dist

import torch_mlu
from torch_mlu import distributed as cncl

HERE = pathlib.Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("cncl")
    env = dict(os.environ, MLUSIM_CONFIG="mlu370-x8", OMP_NUM_THREADS="1")
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         str(HERE / "distributed_worker.py"), str(out)],
        env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    found = [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]
    return run.stdout, found


def test_seed_all_reduce_snippet_gives_three(two_ranks):
    stdout, found = two_ranks
    assert "rank 0: all_reduce result (should be 3.0): 3.0" in stdout
    assert "rank 1: all_reduce result (should be 3.0): 3.0" in stdout
    assert [f["all_reduce"] for f in found] == [3.0, 3.0]


def test_every_collective_moves_the_right_values(two_ranks):
    _, found = two_ranks
    for r, f in enumerate(found):
        assert f["broadcast"] == [10.0 + i for i in range(6)], r  # rank 1's arange + 10
        assert f["all_gather"] == [[0.0] * 3, [1.0] * 3]
        assert f["all_gather_into_tensor"] == [0.5] * 4 + [1.5] * 4
        # rank k keeps block k of sum over ranks of arange(4) * (rank + 1) = arange(4) * 3
        assert f["reduce_scatter_tensor"] == [3.0 * (2 * r), 3.0 * (2 * r + 1)]
        assert f["all_reduce_max"] == [1.0, 0.0]
        assert f["all_to_all_single"] == [float(r), 100.0 + r]  # element r of every rank's input
        assert f["all_gather_object"] == [{"rank": 0}, {"rank": 1}]
    assert found[1]["recv"] == [42.0, 43.0]


def test_the_group_runs_on_the_cpp_backend(two_ranks):
    """The "mlu" backend behind dist.group.WORLD is the C++ c10d::Backend subclass, as torch's
    Python type; CPU tensors given to it go through its inner Gloo backend."""
    _, found = two_ranks
    for f in found:
        assert f["backend_type"] == "torch_mlu._C_cncl.ProcessGroupCNCL"
        assert f["backend_is_c10d_backend"]
        assert f["backend_name"] == "cncl"
        assert f["cpu_all_reduce"] == [3.0, 3.0]


def test_reduce_avg_and_the_list_and_coalesced_forms(two_ranks):
    _, found = two_ranks
    assert found[0]["reduce"] == [3.0] * 3  # the root gets the sum
    assert found[1]["reduce"] == [2.0] * 3  # the others keep their input
    for r, f in enumerate(found):
        assert f["all_reduce_avg"] == [0.5, 0.5]
        assert f["reduce_scatter"] == [1.0 + 20.0 * r] * 2  # sum over ranks q of q + 10 r
        assert f["all_gather_single_coalesced"] == [[0.0, 0.0, 1.0, 1.0], [10.0, 11.0]]
        assert f["reduce_scatter_single_coalesced"] == [[2.0 * r], [2.0, 2.0]]
        assert f["allreduce_coalesced"] == [[2.0], [4.0, 4.0]]


def test_bad_input_raises_a_value_error_naming_the_collective(two_ranks):
    _, found = two_ranks
    for r, f in enumerate(found):
        e = f["errors"]
        assert e["band"].startswith("ValueError: cncl all_reduce: reduce op BAND is not supported"), e
        assert e["premul_sum"].startswith("ValueError: cncl all_reduce: reduce op PREMUL_SUM is not supported"), e
        assert e["reduce_avg"].startswith("ValueError: cncl reduce: reduce op AVG is not supported"), e
        assert e["non_contiguous"].startswith("ValueError: cncl all_reduce: tensors must be contiguous"), e
        assert e["mixed_devices"] == ("ValueError: cncl all_reduce: tensors must all be on one mlu device, "
                                      f"got ['cpu', 'mlu:{r}']"), e
        assert e["all_gather_mixed"].startswith("ValueError: cncl all_gather: tensors must all be on one mlu"), e
        assert e["all_gather_into_tensor_size"].startswith(
            "ValueError: cncl all_gather_into_tensor: output has 3 elements, expected 2 ranks x 2"), e


def test_ddp_and_fsdp2_steps_match_single_device_training_on_the_whole_batch(two_ranks):
    _, found = two_ranks
    for f in found:
        assert f["ddp_max_param_diff"] < 1e-6
        assert f["fsdp2_max_param_diff"] < 1e-6


def test_ddp_buckets_report_their_all_reduces(two_ranks):
    """Six buckets: six all-reduces in the second iteration, with nccl-tests' bus bandwidth, and
    overlapping backward: each bucket's all-reduce runs on the group's stream while the kernels of
    the earlier layers go on, except the last bucket's (nothing is left to compute), so about 5/6
    of the all-reduce time is under kernels (83%). The share does not depend on how the autograd
    thread and the simulation interleave in real time: the collective's hold (mlusimQueueWaitUntil)
    does not pull the simulation ahead on its own (driver/src/runtime.h)."""
    _, found = two_ranks
    for f in found:
        ar = f["overlap_report"]["all_reduce"]
        assert ar["calls"] == 6, ar
        assert ar["bytes"] == 6 * (512 * 512 + 512) * 4
        assert ar["busbw_gbps"] == pytest.approx(ar["algbw_gbps"] * 2 * (2 - 1) / 2)
        assert 0.7 <= ar["overlap"] < 1.0, ar


def test_every_rank_computes_the_same_end_times(two_ranks):
    _, found = two_ranks
    ends = [[c[3] for c in f["collectives"] if c[0] != "send_recv"] for f in found]
    assert len(ends[0]) == len(ends[1]) > 10
    assert ends[0] == ends[1], "the end time of a collective is a function of everyone's arrivals"
    for f in found:
        assert all(c[3] >= c[2] for c in f["collectives"]), "a collective never ends before its rank arrives"
        assert f["comm_ns"] > 0


MISMATCH = """
import os
import torch.distributed as dist
import torch_mlu
rank = int(os.environ["RANK"])
if rank == 1:  # a slower MLU-Link than rank 0's
    torch_mlu.load_config("mlu370-x8", ["mlu_link.bandwidth_gbps=100"])
try:
    dist.init_process_group(backend="cncl")
    print(f"rank {rank}: no error", flush=True)
except RuntimeError as e:
    print(f"rank {rank}: {e}", flush=True)
"""


def test_ranks_that_simulate_different_systems_are_refused(tmp_path):
    script = tmp_path / "mismatch.py"
    script.write_text(MISMATCH)
    env = dict(os.environ, MLUSIM_CONFIG="mlu370-x8", OMP_NUM_THREADS="1")
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                          str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "no error" not in run.stdout
    assert ("rank 0: cncl: rank 1 simulates a different interconnect (mlu_link_gbps, mlu_link_latency_ns, "
            "dram_gbps, host_link_gbps, chips_per_host, nic_gbps = [100, ") in run.stdout, run.stdout
    assert "rank 1: cncl: rank 0 simulates a different interconnect" in run.stdout, run.stdout
    assert "load the same config on every rank" in run.stdout


def test_time_model_formulas():
    """model_time_ns is the C++ model (collective_time_model.h) through torch_mlu._C_cncl."""
    fig = {"mlu_link_gbps": 200.0, "mlu_link_latency_ns": 1000.0, "dram_latency_ns": 120.0, "dram_gbps": 307.2,
           "host_link_gbps": 26.0, "host_link_latency_ns": 1000.0}
    a, s, n = 1120.0, 64 * 2**20, 8
    ring = 2 * (n - 1) * a + (n - 1) * (s / n) * (3 / 307.2) + (n - 1) * (s / n) * (1 / 200.0)
    assert cncl.model_time_ns("all_reduce", s, n, fig) == pytest.approx(ring)
    # 8 bytes on 8 ranks: latency-bound, the tree (3 levels up and down) wins.
    assert cncl.model_time_ns("all_reduce", 8, n, fig) == pytest.approx(2 * 3 * (a + 8 * 3 / 307.2))
    assert cncl.model_time_ns("all_gather", s, n, fig) == pytest.approx((n - 1) * (a + s / n / 200.0))
    assert cncl.model_time_ns("all_reduce", s, 1, fig) == 0.0
    # Without MLU-Link, through the host: half the host link's bandwidth, twice its latency.
    host = dict(fig, mlu_link_gbps=0.0)
    assert cncl.model_time_ns("send_recv", 1000, 2, host) == pytest.approx(2 * (1000 + 120) + 1000 / 13.0)
    # Ranks across hosts: the network's figures.
    cluster = dict(fig, chips_per_host=4, nic_gbps=25.0, nic_latency_ns=2000.0)
    assert cncl.model_time_ns("all_gather", s, n, cluster) == pytest.approx((n - 1) * (2120.0 + s / n / 25.0))
    # Explicit links (some neighbours unlinked): the host link.
    sparse = dict(fig, mlu_link_topology="explicit")
    assert cncl.model_time_ns("send_recv", 1000, 2, sparse) == pytest.approx(2 * (1000 + 120) + 1000 / 13.0)
    with pytest.raises(ValueError, match="no time model"):
        cncl.model_time_ns("gather", 8, 2, fig)
    assert math.isfinite(cncl.model_time_ns("reduce_scatter", s, n, fig))


def test_backend_is_registered_for_mlu():
    assert "CNCL" in dist.Backend._plugins
    assert dist.Backend._plugins["CNCL"].creator_fn is torch_mlu._C_cncl.create_process_group
    assert dist.Backend.backend_capability["cncl"] == ["mlu"]
    assert torch_mlu.distributed.BACKEND_NAME == "cncl"
    assert issubclass(cncl.ProcessGroupCNCL, torch._C._distributed_c10d.Backend)


def test_bus_factors_are_nccl_tests_definitions():
    n = 8
    assert torch_mlu._C_cncl.bus_factor("all_reduce", n) == pytest.approx(2 * (n - 1) / n)
    for op in ("all_gather", "reduce_scatter", "all_to_all"):
        assert torch_mlu._C_cncl.bus_factor(op, n) == pytest.approx((n - 1) / n)
    for op in ("broadcast", "reduce", "send_recv"):
        assert torch_mlu._C_cncl.bus_factor(op, n) == 1.0
    assert set(cncl.COLLECTIVES) == {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce",
                                     "all_to_all", "send_recv"}
    with pytest.raises(ValueError, match="no time model for 'gather'"):
        torch_mlu._C_cncl.bus_factor("gather", n)
