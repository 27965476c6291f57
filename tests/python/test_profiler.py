"""torch.profiler with the simulated device (src/profiler/activity_profiler.cpp, a Kineto
plug-in): device kernels and copies with their simulated durations, linked to the ATen ops that
launched them; blocking calls as host-side spans; the cycle report's sync count."""

import json

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import torch_mlu


def small_step(model, x):
    y = model(x).relu().sum()
    y.backward()
    return y


@pytest.fixture
def model_and_input(dev):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(dev)
    x = torch.randn(32, 64).to(dev)
    torch.mlu.synchronize()
    return model, x


def test_mlu_is_the_privateuse1_activity():
    assert ProfilerActivity.MLU == ProfilerActivity.PrivateUse1
    assert ProfilerActivity.MLU in torch.profiler.supported_activities()


def test_device_events_are_linked_to_ops_and_match_the_kernel_records(dev, model_and_input, tmp_path):
    model, x = model_and_input
    torch_mlu.reset_stats()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.MLU]) as prof:
        for _ in range(2):
            small_step(model, x)
        torch.mlu.synchronize()
    report = torch_mlu.cycle_report(format="json")

    # key_averages: device time per op, adding up to the kernels' simulated time.
    averages = prof.key_averages()
    mm = [e for e in averages if e.key == "aten::mm"]
    assert mm and mm[0].self_device_time_total > 0
    kernel_us = sum(k["time_ns"] for k in report["kernels"]) / 1e3
    device_self_us = sum(e.self_device_time_total for e in averages if e.key.startswith("aten::"))
    assert device_self_us == pytest.approx(kernel_us, rel=0.01)

    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    ops = {e["args"]["External id"]: e["name"] for e in events if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert len(kernels) == report["kernel_launches"]
    # Durations are the simulated ones: their sum is the cycle report's kernel time.
    assert sum(k["dur"] for k in kernels) == pytest.approx(kernel_us, rel=0.01)
    for k in kernels:
        assert k["pid"] == 0  # device 0's row
        # Each kernel is linked to the innermost ATen op that launched it; its "op" tag is the
        # outermost one (the launch tag the cycle report groups by), with the overload.
        assert ops.get(k["args"].get("External id"), "").startswith("aten::"), k
    linked_by_name = sum(ops[k["args"]["External id"]] == k["args"]["op"].split(".")[0] for k in kernels)
    assert linked_by_name >= len(kernels) // 2  # most kernels' op launches no nested op
    assert {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name" and e["pid"] == 0} \
        == {"mlu0 (mlusim, simulated time)"}


def test_blocking_calls_are_host_spans_and_counted(dev, model_and_input):
    model, x = model_and_input
    torch_mlu.reset_stats()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.MLU]) as prof:
        y = small_step(model, x)
        value = y.item()  # a sync: the host waits for the backward's kernels
        z = (x * 2).cpu()  # a blocking copy
        torch.mlu.synchronize()  # nothing left to wait for: not a sync
    assert value == pytest.approx(value) and z.shape == (32, 64)
    syncs = [e for e in prof.events() if e.name in ("cnrtQueueSync", "cnrtSyncDevice") or e.name.startswith("cnrtMemcpy")]
    stats = torch_mlu.device_stats()
    assert stats["host_syncs"] == len(syncs) >= 2
    assert stats["host_sync_wait_ns"] > 0
    text = torch_mlu.cycle_report()
    assert f"host syncs: {int(stats['host_syncs'])} blocking calls waited" in text
    assert torch_mlu.cycle_report(format="json")["host_syncs"] == stats["host_syncs"]


def test_cpu_only_profile_has_no_device_events(dev, model_and_input):
    model, x = model_and_input
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        small_step(model, x)
        torch.mlu.synchronize()
    assert all(e.device_type == torch.device("cpu").type or str(e.device_type) == "DeviceType.CPU"
               for e in prof.events())
    assert sum(e.self_device_time_total for e in prof.key_averages()) == 0


def test_schedule_records_only_the_active_steps(dev, model_and_input, tmp_path):
    model, x = model_and_input
    traces = []
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.MLU], schedule=schedule,
                 on_trace_ready=lambda p: traces.append(([e.name for e in p.events()],
                                                         sum(e.self_device_time_total for e in p.key_averages())))) as prof:
        for _ in range(5):
            small_step(model, x)
            torch.mlu.synchronize()
            prof.step()
    assert len(traces) == 1
    names, device_us = traces[0]
    assert sum(n.startswith("ProfilerStep") for n in names) == 2  # steps 2 and 3 ("ProfilerStep*" in 2.x)
    assert names.count("cnrtSyncDevice") == 2  # one sync per recorded step
    assert device_us > 0
