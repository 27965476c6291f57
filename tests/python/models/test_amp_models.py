"""Autocast on a real model: resnet18 forward and backward under torch.autocast("mlu", float16)
against the same under torch.autocast("cpu", float16). fp16 training gradients of a randomly
initialised network differ from fp32 by several percent on any device, so the device is held to
the CPU's own standard: its autocast gradients must be about as close to the fp32 gradients as the
CPU's autocast gradients are (and the forward within fp16 rounding of the CPU's)."""

import copy

import pytest
import torch
import torch.nn.functional as F
import torchvision

import torch_mlu  # noqa: F401

pytestmark = pytest.mark.usefixtures("big_dram")


def _grads(model, x, t, device, amp):
    m = copy.deepcopy(model).to(device)
    with torch.autocast(device, dtype=torch.float16, enabled=amp):
        logits = m(x.to(device))
        loss = F.cross_entropy(logits, t.to(device))
    (loss * 1024).backward()  # GradScaler-like scaling keeps small fp16 gradients representable
    return logits.detach().cpu().float(), {n: p.grad.detach().cpu().float() for n, p in m.named_parameters()}


def test_resnet18_autocast_gradients_are_as_close_to_fp32_as_the_cpus():
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    # 64x64 and batch 8: layer4's batch norms normalise 16 values per channel (32x32 gives 4, which
    # makes fp16 gradients too noisy to compare)
    x, t = torch.randn(8, 3, 64, 64), torch.randint(0, 10, (8,))
    _, fp32 = _grads(model, x, t, "cpu", False)
    cpu_logits, cpu_amp = _grads(model, x, t, "cpu", True)
    dev_logits, dev_amp = _grads(model, x, t, "mlu", True)
    torch.testing.assert_close(dev_logits, cpu_logits, rtol=0, atol=5e-3)
    for name in ("fc.weight", "layer4.1.bn2.bias", "layer3.0.conv1.weight", "layer1.0.conv1.weight", "conv1.weight"):
        ref = fp32[name]
        cpu_err = ((cpu_amp[name] - ref).norm() / ref.norm()).item()
        dev_err = ((dev_amp[name] - ref).norm() / ref.norm()).item()
        assert dev_err <= 1.25 * cpu_err + 2e-3, f"{name}: device autocast {dev_err:.3g} vs CPU autocast {cpu_err:.3g}"
