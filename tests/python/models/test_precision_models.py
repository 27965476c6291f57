"""torch_mlu.compare on a whole model: torchvision's shufflenet_v2_x0_5, one training step (batch 2,
64x64, loss = sum of the logits), issue 12's case.

In train mode this model is ill-conditioned at this size: by stage4 every BatchNorm normalises 8
values per channel, which amplifies float32 rounding to ~1e-4 of the activations, and a ReLU
input that float64 puts within that distance of 0 can land on the other side. Its gradient then
jumps by the full output gradient (0 instead of ~1e-2 here), and every gradient computed from it
is percent off: the "2.5-3.5% off from conv5 upward" of the issue. With seed 0 the device crosses
at conv5.2 (1 of 8192 inputs) and stage4.3.branch2.7 (1 of 768: float64 -2.7e-5, device +6.4e-5);
before the VFU's sqrt was made exact it crossed only at the second, and the CPU's float32 run
crosses too at other seeds (3: 2.8e-2). Which elements cross changes with any change of rounding;
no kernel is at fault: each layer alone, on the same inputs, is within a few float32 roundings of
float64. So the train-mode test checks what holds at any seed: the forward is clean, and the
backward error, if any, starts at an activation kink. The eval-mode step (running statistics, no
amplification) must match float64 tightly."""

import pytest
import torch
import torch_mlu

torchvision = pytest.importorskip("torchvision")
pytestmark = pytest.mark.usefixtures("big_dram")


def _shufflenet(seed=0):
    torch.manual_seed(seed)
    model = torchvision.models.shufflenet_v2_x0_5(num_classes=10)
    return model, torch.randn(2, 3, 64, 64)


def test_shufflenet_eval_step_gradients_match_float64():
    model, x = _shufflenet()
    report = torch_mlu.compare(model, x, mode="eval")
    assert report.ok, report.table()
    assert len(report.parameters) == len(list(model.parameters()))
    # Measured: at most 3.1e-6 over seeds 0-3 (CPU float32: 4.2e-6).
    for p in report.parameters:
        assert p.rel_err < 2e-5, p
    assert max(layer.rel_err for layer in report.forward) < 2e-5


def test_shufflenet_train_step_errors_start_only_at_a_kink():
    model, x = _shufflenet()
    report = torch_mlu.compare(model, x, mode="train")
    assert report.first_flagged("forward") is None, report.table()
    origin = report.origin("backward")
    if origin is None:  # no input crossed a kink this time: nothing may be flagged at all
        assert report.first_flagged("backward") is None, report.table()
        return
    assert origin.explained_by_kink, report.table()
    w = origin.worst
    assert w.kink_elements <= 2 and w.rel_err_without_kink < 1e-3
    # What the backward computed before reaching the kink (fc, conv5) is within float32 noise.
    before = report.backward[:origin.order]
    assert before and not any(layer.flagged for layer in before)
    for layer in before:
        for t in layer.tensors:
            assert t.rel_err < 1e-3, (layer, t)
