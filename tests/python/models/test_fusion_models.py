"""torch_mlu.fuse on whole torchvision models in eval mode (64x64 inputs): match counts, outputs of
the fused model on the device against the unfused model on the device and on the CPU, and
fusion_compare's figures (fewer kernels and DRAM bytes). Runs on the tiny preset with 1 GiB of
DRAM (resnet18's weights alone are 47 MB), like test_models.py."""

import copy

import pytest
import torch
import torch.nn as nn
import torch_mlu

torchvision = pytest.importorskip("torchvision")
pytestmark = pytest.mark.usefixtures("big_dram")


def _eval_model(make, seed=0):
    """The model in eval mode with non-trivial batch norm statistics and affine parameters."""
    torch.manual_seed(seed)
    model = make().eval()
    g = torch.Generator().manual_seed(seed + 1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)
    return model


def test_resnet18_fused_matches_unfused_and_saves_kernels_and_bytes():
    dev = torch.device("mlu", 0)
    cpu = _eval_model(lambda: torchvision.models.resnet18(num_classes=10))
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        expect = cpu(x)
    model = copy.deepcopy(cpu).to(dev)

    gm = torch_mlu.fuse(model)
    assert gm.fusion_matches == {"conv_bn_act": 20, "linear_act": 0, "elementwise": 8}
    report = torch_mlu.fusion_report(gm)
    acts = sorted(d["activation"] for d in report["fused"] if d["pattern"] == "conv_bn_act")
    assert acts == ["none"] * 11 + ["relu"] * 9  # 8 second convs + 3 downsample convs feed the residual add
    assert {d["program"] for d in report["fused"] if d["pattern"] == "elementwise"} == {"relu(add($0, $1))"}
    assert not any(isinstance(m, nn.ReLU) for m in gm.modules())

    result = torch_mlu.fusion_compare(model, (x,))
    assert result["matches"] == gm.fusion_matches
    assert result["max_abs_diff"] < 1e-4  # fused vs unfused, both on the device
    with torch.no_grad():
        got = gm(x.to(dev)).cpu()
    torch.testing.assert_close(got, expect, rtol=1e-3, atol=1e-3)

    total = result["total"]
    # Unfused: 20 conv + 20 batch norm + 17 relu + 8 add kernel groups; fused: 20 + 8.
    assert total["kernel_launches"]["fused"] <= total["kernel_launches"]["unfused"] - 37
    assert total["dram_bytes"]["fused"] < total["dram_bytes"]["unfused"]
    assert total["op_dram_bytes"]["fused"] < total["op_dram_bytes"]["unfused"]
    fused_ops, unfused_ops = result["fused"]["ops"], result["unfused"]["ops"]
    assert fused_ops["mlu::conv_bn_act"]["calls"] == 20 and fused_ops["mlu::elementwise"]["calls"] == 8
    assert "aten::native_batch_norm" not in fused_ops and "aten::native_batch_norm" in unfused_ops
    per = result["patterns"]
    assert per["conv_bn_act"]["matches"] == 20 and per["elementwise"]["matches"] == 8
    assert per["linear_act"]["delta"]["kernel_launches"]["saved"] == 0
    assert per["conv_bn_act"]["delta"]["kernel_launches"]["saved"] == 20 + 9  # the BN and conv-side relu kernels
    assert per["elementwise"]["delta"]["kernel_launches"]["saved"] == 8           # one per add + relu
    assert per["elementwise"]["delta"]["dram_bytes"]["saved"] > 0


def test_mobilenet_v2_relu6_and_depthwise_fuse():
    dev = torch.device("mlu", 0)
    cpu = _eval_model(lambda: torchvision.models.mobilenet_v2(num_classes=10))
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        expect = cpu(x)
    gm = torch_mlu.fuse(copy.deepcopy(cpu).to(dev))
    # 35 conv + BN + ReLU6, 17 conv + BN (projections); the residual adds are single ops.
    assert gm.fusion_matches == {"conv_bn_act": 52, "linear_act": 0, "elementwise": 0}
    acts = [d["activation"] for d in torch_mlu.fusion_report(gm)["fused"]]
    assert acts.count("relu6") == 35 and acts.count("none") == 17
    with torch.no_grad():
        got = gm(x.to(dev)).cpu()
    torch.testing.assert_close(got, expect, rtol=1e-3, atol=1e-3)
