"""A 2-machine "cncl" run: two network namespaces joined by a veth pair stand for two hosts, and
`torchrun --nnodes 2` starts one rank in each (static rendezvous on host A's address; Gloo on
the veth). The config puts one chip on each simulated host (network.chips_per_host = 1), so the
simulated system spans hosts the way the real processes do, and collectives take the network's
figures (network.nic_*). Checks: the seed's all_reduce gives 3.0 on both machines, both compute
the same end time, and that time is the model's for ranks across hosts.

Needs root (CAP_NET_ADMIN) and iproute2 (tools/install-deps.sh installs it); skipped otherwise."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

from torch_mlu import distributed as cncl

NIC_GBPS, NIC_LATENCY_NS = 25.0, 2000.0
PRESETS = pathlib.Path(__file__).resolve().parents[2] / "configs"

CONFIG = f"""
extends: {PRESETS / "mlu370-x8-cluster.yaml"}
name: two-hosts-one-chip-each
devices: 2
mlu_link:
  topology: none
  links: none
network:
  chips_per_host: 1
  nic_bandwidth_gbps: {NIC_GBPS}
  nic_latency_ns: {NIC_LATENCY_NS}
"""

WORKER = textwrap.dedent("""
    import json, os, sys
    import torch
    import torch.distributed as dist
    import torch_mlu
    from torch_mlu import distributed as cncl

    dist.init_process_group(backend="cncl")
    rank = dist.get_rank()
    torch.mlu.set_device(int(os.environ["LOCAL_RANK"]))
    tensor = torch.ones(1).to("mlu") * (rank + 1)
    dist.all_reduce(tensor)
    print(f"rank {rank}: all_reduce result (should be 3.0): {tensor.item()}", flush=True)
    big = torch.full((1 << 18,), float(rank)).to("mlu")   # 1 MiB: bandwidth-bound
    dist.all_reduce(big)
    torch.mlu.synchronize()
    out = {"value": tensor.item(), "big": big[:4].cpu().tolist(),
           "collectives": [list(c) for c in cncl.backend_of().collectives],
           "figures": dict(torch_mlu._C.interconnect_figures())}
    with open(os.path.join(sys.argv[1], f"rank{rank}.json"), "w") as f:
        json.dump(out, f)
    dist.destroy_process_group()
""")


def _ip(*args):
    return subprocess.run(["ip", *args], capture_output=True, text=True)


@pytest.fixture
def two_hosts():
    """Namespaces <a>, <b> with 10.77.<n>.1 and .2 on a veth pair; removed afterwards."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 for network namespaces")
    tag = f"mlusim{os.getpid() % 100000}"
    a, b = f"{tag}a", f"{tag}b"
    subnet = f"10.77.{os.getpid() % 250}"
    if _ip("netns", "add", a).returncode != 0:
        pytest.skip("cannot create network namespaces here (no CAP_NET_ADMIN)")
    try:
        steps = [("netns", "add", b), ("link", "add", f"{tag}x", "type", "veth", "peer", "name", f"{tag}y"),
                 ("link", "set", f"{tag}x", "netns", a), ("link", "set", f"{tag}y", "netns", b),
                 ("-n", a, "addr", "add", f"{subnet}.1/24", "dev", f"{tag}x"),
                 ("-n", b, "addr", "add", f"{subnet}.2/24", "dev", f"{tag}y"),
                 ("-n", a, "link", "set", f"{tag}x", "up"), ("-n", b, "link", "set", f"{tag}y", "up"),
                 ("-n", a, "link", "set", "lo", "up"), ("-n", b, "link", "set", "lo", "up")]
        for step in steps:
            r = _ip(*step)
            assert r.returncode == 0, f"ip {' '.join(step)}: {r.stderr}"
        yield {"a": (a, f"{tag}x"), "b": (b, f"{tag}y"), "master": f"{subnet}.1"}
    finally:
        _ip("netns", "del", a)
        _ip("netns", "del", b)


def test_two_machines_over_a_network_namespace_pair(two_hosts, tmp_path):
    config = tmp_path / "two_hosts.yaml"
    config.write_text(CONFIG)
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    out = tmp_path / "out"
    out.mkdir()
    runs = []
    for node, key in ((0, "a"), (1, "b")):
        ns, ifname = two_hosts[key]
        env = dict(os.environ, MLUSIM_CONFIG=str(config), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME=ifname)
        cmd = ["ip", "netns", "exec", ns, sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
               "--node_rank", str(node), "--nproc_per_node", "1", "--master_addr", two_hosts["master"],
               "--master_port", "29577", str(script), str(out)]
        runs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    logs = [p.communicate(timeout=300)[0] for p in runs]
    for p, log in zip(runs, logs):
        assert p.returncode == 0, log[-4000:]
    assert "rank 0: all_reduce result (should be 3.0): 3.0" in logs[0]
    assert "rank 1: all_reduce result (should be 3.0): 3.0" in logs[1]
    found = [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]
    assert [f["big"] for f in found] == [[1.0] * 4] * 2
    ends = [[c[3] for c in f["collectives"]] for f in found]
    assert ends[0] == ends[1], "both machines compute the same end times"
    fig = found[0]["figures"]
    assert fig["chips_per_host"] == 1 and fig["nic_gbps"] == NIC_GBPS
    # The 1 MiB all-reduce: the later arrival plus the model's time across hosts (the network).
    (_, nbytes, a0, end), (_, _, a1, _) = found[0]["collectives"][-1], found[1]["collectives"][-1]
    assert nbytes == 1 << 20
    assert end - max(a0, a1) == pytest.approx(cncl.model_time_ns("all_reduce", nbytes, 2, fig), rel=1e-9)
    on_one_host = dict(fig, chips_per_host=2, mlu_link_gbps=200.0, mlu_link_topology="full_mesh")
    assert cncl.model_time_ns("all_reduce", nbytes, 2, fig) > 2 * cncl.model_time_ns("all_reduce", nbytes, 2, on_one_host)
