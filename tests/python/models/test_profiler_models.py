"""The seed's profiler recipe on a resnet18 training loop, verbatim with the MLU: activities CPU +
MLU, schedule(wait=1, warmup=1, active=3), tensorboard_trace_handler. The written trace must be
valid trace-event JSON that TensorBoard's profiler plug-in reads (one *.pt.trace.json per worker
and cycle), its device events must add up to the simulated kernel time of the active steps (1%),
and every device event must be correlated to an ATen op."""

import glob
import json

import pytest
import torch
import torch.nn.functional as F
import torchvision
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

import torch_mlu

pytestmark = pytest.mark.usefixtures("big_dram")


def test_resnet18_training_profile_with_schedule_and_tensorboard_handler(tmp_path):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).to("mlu")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, t = torch.randn(2, 3, 32, 32).to("mlu"), torch.randint(0, 10, (2,)).to("mlu")

    def train_step():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), t)
        loss.backward()
        optimizer.step()
        return loss

    kernel_ns_of_active_steps = 0.0
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.MLU],
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(str(tmp_path), worker_name="worker0")) as prof:
        for step in range(5):
            torch.mlu.synchronize()
            torch_mlu.reset_stats()
            train_step().item()  # the loss read is the loop's one sync
            if step >= 2:  # the active steps
                kernel_ns_of_active_steps += sum(k["time_ns"] for k in torch_mlu.cycle_report(format="json")["kernels"])
            prof.step()

    files = glob.glob(str(tmp_path / "worker0.*.pt.trace.json"))
    assert len(files) == 1, files
    with open(files[0]) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    assert trace.get("deviceProperties") is not None or "schemaVersion" in trace  # Kineto's trace header
    device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    kernels = [e for e in device if e["cat"] == "kernel"]
    assert len(kernels) > 100
    assert sum(e["dur"] for e in kernels) * 1e3 == pytest.approx(kernel_ns_of_active_steps, rel=0.01)
    ops = {e["args"]["External id"] for e in events if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    unlinked = [e for e in device if e["args"].get("External id") not in ops]
    assert not unlinked, unlinked[:3]
    steps = [e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
    assert sorted(e["name"] for e in steps) == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    syncs = [e for e in events if e.get("cat") == "privateuse1_runtime"]
    assert len(syncs) == 3  # one .item() per active step, each a host-side span with its wait
    assert all(e["args"]["host wait us"] > 0 for e in syncs)

    # The device's share of the ops: convolutions lead a resnet's device time.
    top = sorted(prof.key_averages(), key=lambda e: e.self_device_time_total, reverse=True)[0]
    assert top.key in ("aten::convolution_overrideable", "aten::convolution_backward_overrideable")
