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

import torch_mlu

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
    # 64x64 and batch 4: layer4's batch norms normalise 16 values per channel (32x32 gives 4, which
    # makes fp16 gradients too noisy to compare). Measured: the device's errors are 0.93-1.07x the
    # CPU's on these five gradients (batch 8 gives the same ratios at twice the time, mostly the
    # CPU's own fp16 autocast)
    x, t = torch.randn(4, 3, 64, 64), torch.randint(0, 10, (4,))
    _, fp32 = _grads(model, x, t, "cpu", False)
    cpu_logits, cpu_amp = _grads(model, x, t, "cpu", True)
    dev_logits, dev_amp = _grads(model, x, t, "mlu", True)
    torch.testing.assert_close(dev_logits, cpu_logits, rtol=0, atol=5e-3)
    for name in ("fc.weight", "layer4.1.bn2.bias", "layer3.0.conv1.weight", "layer1.0.conv1.weight", "conv1.weight"):
        ref = fp32[name]
        cpu_err = ((cpu_amp[name] - ref).norm() / ref.norm()).item()
        dev_err = ((dev_amp[name] - ref).norm() / ref.norm()).item()
        assert dev_err <= 1.25 * cpu_err + 2e-3, f"{name}: device autocast {dev_err:.3g} vs CPU autocast {cpu_err:.3g}"


def _bert_amp_training(device, steps):
    """A transformers BERT classifier (2 layers, hidden 64, 16 tokens) trained under
    torch.autocast(fp16) with torch.amp.GradScaler and AdamW; returns the losses, the scales and the
    parameters after the last step."""
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, max_position_embeddings=32, num_labels=3,
                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = transformers.BertForSequenceClassification(config).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler(device, init_scale=2.0 ** 12, growth_interval=2)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 128, (2, 16), generator=g)
    labels = torch.randint(0, 3, (2,), generator=g)
    losses, scales = [], []
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast(device, dtype=torch.float16):
            loss = model(input_ids=ids.to(device), labels=labels.to(device)).loss
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
        scales.append(scaler.get_scale())
    return losses, scales, {n: p.detach().cpu() for n, p in model.named_parameters()}


def test_bert_autocast_grad_scaler_training_matches_the_cpu():
    """Four AdamW steps of BERT under autocast + GradScaler on the device and on the CPU (the CPU's
    own fp16 autocast): the same scale schedule, losses within fp16 rounding, parameters within
    a few fp16 ulps of the update; the cycle report shows the multiplies ran in fp16."""
    torch_mlu.reset_stats()
    losses, scales, params = _bert_amp_training("mlu", 4)
    report = torch_mlu.cycle_report(format="json")
    ref_losses, ref_scales, ref_params = _bert_amp_training("cpu", 4)
    assert scales == ref_scales == [4096.0, 8192.0, 8192.0, 16384.0]
    for got, ref in zip(losses, ref_losses):
        assert got == pytest.approx(ref, abs=5e-3), (losses, ref_losses)
    for name, p in params.items():
        torch.testing.assert_close(p, ref_params[name], rtol=0, atol=2e-3, msg=name)
    fp16 = [m for m in report["multiplies_by_dtype"] if m["dtype"] == "fp16"]
    assert fp16 and fp16[0]["macs"] > 0 and fp16[0]["macs_per_s"] > 0
    assert "fp16" in torch_mlu.cycle_report().split("multiplies by dtype")[1].split("engines")[0]
