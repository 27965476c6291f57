"""Whole models on the device against the same models on the CPU: torchvision's resnet18 and an
nn.TransformerEncoder stack, forward, backward and an SGD step; and the caching allocator's
promise that a training loop stops calling the driver's malloc after warm-up.

Runs in its own ctest process (torch_mlu_pytest_models) on the tiny preset with 1 GiB of DRAM:
training resnet18 holds ~200 MB of weights, gradients and momentum. Inputs are small (32x32
images, 6 tokens) so the simulated kernels finish in seconds; every op runs on the device (the
CPU fallback is off, so a missing kernel fails the test)."""

import copy

import pytest
import torch
import torch.nn.functional as F
import torch_mlu

torchvision = pytest.importorskip("torchvision")
pytestmark = pytest.mark.usefixtures("big_dram")


def _pair(model, seed=0):
    torch.manual_seed(seed)
    cpu = model()
    dev = copy.deepcopy(cpu).to(torch.device("mlu", 0))
    return cpu, dev


def _assert_params_close(cpu, dev, rtol, atol, what):
    for (name, p_cpu), (_, p_dev) in zip(cpu.named_parameters(), dev.named_parameters()):
        torch.testing.assert_close(p_dev.detach().cpu(), p_cpu.detach(), rtol=rtol, atol=atol,
                                   msg=lambda m, n=name: f"{what} {n}: {m}")


def _assert_grads_close(cpu, dev, rtol, atol):
    for (name, p_cpu), (_, p_dev) in zip(cpu.named_parameters(), dev.named_parameters()):
        assert p_dev.grad is not None, f"no gradient for {name} on the device"
        assert p_dev.grad.device == p_dev.device
        torch.testing.assert_close(p_dev.grad.cpu(), p_cpu.grad, rtol=rtol, atol=atol,
                                   msg=lambda m, n=name: f"grad of {n}: {m}")


def _train_step(model, x, target, lr=0.1, momentum=0.9):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    opt.zero_grad()
    out = model(x)
    loss = F.cross_entropy(out, target)
    loss.backward()
    opt.step()
    return out, loss


def test_resnet18_inference_matches_cpu():
    cpu, dev = _pair(lambda: torchvision.models.resnet18(num_classes=10).eval())
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        expect = cpu(x)
        got = dev(x.to(torch.device("mlu", 0)))
    assert got.device.type == "mlu"
    torch.testing.assert_close(got.cpu(), expect, rtol=1e-3, atol=1e-3)


def test_resnet18_training_step_matches_cpu():
    cpu, dev = _pair(lambda: torchvision.models.resnet18(num_classes=10).train())
    x = torch.randn(4, 3, 32, 32)
    target = torch.tensor([1, 7, 3, 3])
    out_c, loss_c = _train_step(cpu, x, target)
    out_d, loss_d = _train_step(dev, x.to(torch.device("mlu", 0)), target.to(torch.device("mlu", 0)))
    torch.testing.assert_close(out_d.detach().cpu(), out_c.detach(), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(loss_d.detach().cpu(), loss_c.detach(), rtol=1e-4, atol=1e-4)
    _assert_grads_close(cpu, dev, rtol=1e-2, atol=1e-3)
    _assert_params_close(cpu, dev, rtol=1e-3, atol=1e-3, what="after the SGD step,")
    # Batch norm running statistics were updated on the device as on the CPU.
    torch.testing.assert_close(dev.bn1.running_mean.cpu(), cpu.bn1.running_mean, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(dev.bn1.running_var.cpu(), cpu.bn1.running_var, rtol=1e-4, atol=1e-5)


def _encoder(norm_first, activation):
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                             activation=activation, batch_first=True, norm_first=norm_first)
    return torch.nn.Sequential(torch.nn.TransformerEncoder(layer, num_layers=2), torch.nn.Flatten(),
                               torch.nn.Linear(6 * 32, 5))


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_training_step_matches_cpu(norm_first, activation):
    cpu, dev = _pair(lambda: _encoder(norm_first, activation).train())
    x = torch.randn(3, 6, 32)
    target = torch.tensor([0, 4, 2])
    out_c, loss_c = _train_step(cpu, x, target, lr=0.05)
    out_d, loss_d = _train_step(dev, x.to(torch.device("mlu", 0)), target.to(torch.device("mlu", 0)), lr=0.05)
    torch.testing.assert_close(out_d.detach().cpu(), out_c.detach(), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(loss_d.detach().cpu(), loss_c.detach(), rtol=1e-5, atol=1e-5)
    _assert_grads_close(cpu, dev, rtol=1e-3, atol=1e-4)
    _assert_params_close(cpu, dev, rtol=1e-4, atol=1e-5, what="after the SGD step,")


def test_training_loop_makes_no_driver_mallocs_after_warmup():
    cpu, dev = _pair(lambda: torchvision.models.resnet18(num_classes=10).train())
    del cpu
    d = torch.device("mlu", 0)
    opt = torch.optim.SGD(dev.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(2, 3, 32, 32).to(d)
    target = torch.tensor([3, 8]).to(d)
    mallocs = []
    for _ in range(4):
        opt.zero_grad()
        F.cross_entropy(dev(x), target).backward()
        opt.step()
        torch_mlu.synchronize()
        mallocs.append(torch_mlu.memory_stats()["num_device_alloc"])
    steps = [b - a for a, b in zip(mallocs, mallocs[1:])]
    assert mallocs[0] > 0
    assert steps[1:] == [0, 0], f"driver mallocs per step after warm-up: {steps}"
    # The allocator's view agrees with the driver's: every reserved byte is a live driver byte.
    stats = torch_mlu.memory_stats()
    driver = dict(torch_mlu.device_stats())
    assert stats["reserved_bytes.all.current"] == driver["allocated_bytes"]
    assert stats["allocated_bytes.all.current"] <= stats["reserved_bytes.all.current"]


def test_model_ops_are_in_the_cycle_report():
    _, dev = _pair(lambda: torchvision.models.resnet18(num_classes=10).eval())
    x = torch.randn(1, 3, 32, 32).to(torch.device("mlu", 0))
    torch_mlu.synchronize()
    torch_mlu.reset_stats()
    with torch.no_grad():
        dev(x)
    torch_mlu.synchronize()
    report = torch_mlu.cycle_report(format="json")
    ops = {o["name"]: o for o in report["ops"]}
    conv = ops["aten::convolution_overrideable"]
    assert conv["calls"] == 20  # resnet18: 17 3x3/7x7 convs + 3 downsample 1x1 convs
    assert conv["kernels"] >= conv["calls"] and conv["cycles"] > 0
    assert conv["macs"] > 0 and conv["roofline_bound_ns"] <= conv["time_ns"]
    assert sum(o["cycles"] for o in report["ops"]) <= sum(k["cycles"] for k in report["kernels"])
    assert report["cpu_fallback"] == {}


@pytest.mark.parametrize("name", ["mobilenet_v3_small", "efficientnet_b0"])
def test_other_torchvision_models_training_step_matches_cpu(name):
    # Hardswish/hardsigmoid/SiLU, squeeze-excitation (adaptive pooling + sigmoid gates), depthwise
    # convolutions; dropout off so both sides compute the same thing.
    def make():
        m = getattr(torchvision.models, name)(num_classes=10)
        for mod in m.modules():
            if isinstance(mod, torch.nn.Dropout):
                mod.p = 0.0
        return m.train()

    cpu, dev = _pair(make)
    if name == "efficientnet_b0":  # stochastic depth draws random numbers in training: keep it off
        for m in (cpu, dev):
            for mod in m.modules():
                if type(mod).__name__ == "StochasticDepth":
                    mod.p = 0.0
    x = torch.randn(4, 3, 32, 32)
    target = torch.tensor([1, 7, 3, 3])
    out_c, loss_c = _train_step(cpu, x, target, lr=0.05, momentum=0.0)
    out_d, loss_d = _train_step(dev, x.to(torch.device("mlu", 0)), target.to(torch.device("mlu", 0)), lr=0.05, momentum=0.0)
    torch.testing.assert_close(out_d.detach().cpu(), out_c.detach(), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(loss_d.detach().cpu(), loss_c.detach(), rtol=1e-4, atol=1e-4)
    # Untrained, these nets have gradients up to ~1e3 in their stems (batch norm over 1x1 maps
    # at 32x32 inputs): fp32 summation order alone moves them by ~1e-3 of that, so the tolerance
    # scales with each gradient's largest magnitude.
    for (pname, p_cpu), (_, p_dev) in zip(cpu.named_parameters(), dev.named_parameters()):
        scale = max(p_cpu.grad.abs().max().item(), 1.0)
        torch.testing.assert_close(p_dev.grad.cpu(), p_cpu.grad, rtol=1e-2, atol=2e-3 * scale,
                                   msg=lambda m, n=pname: f"grad of {n}: {m}")
