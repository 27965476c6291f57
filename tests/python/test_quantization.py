"""int8 quantization on the device (torch_mlu.quantization, torch_bridge/src/ops/quant_ops.cpp):
torch.ao's quantized_decomposed ops against the CPU's own kernels, bit for bit; their error
paths; the int8 conv/linear refused on a preset without an int8 TFU array; a small quantized
model end to end against the CPU's converted reference model (torch.ao's reference
representation), with its conv/linear layers on the int8 TFU array."""

import pytest
import torch
import torch.nn as nn
import torch_mlu
import torch_mlu.quantization as mq

mq._ao()  # loads torch.ops.quantized_decomposed
qd = torch.ops.quantized_decomposed


def _ties(n, scale, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g) * 2
    x[:8] = torch.tensor([2.5, 3.5, -2.5, -3.5, 0.5, 1e9, -1e9, 0.0]) * scale  # exact ties, saturation
    return x


@pytest.mark.parametrize("zp", [0, -7, 100])
def test_quantize_dequantize_per_tensor_match_cpu_exactly(dev, zp):
    scale = 1 / 32
    x = _ties(3000, scale, 1).reshape(2, 3, 25, 20)
    q_cpu = qd.quantize_per_tensor(x, scale, zp, -128, 127, torch.int8)
    q_dev = qd.quantize_per_tensor(x.to(dev), scale, zp, -128, 127, torch.int8)
    assert q_dev.dtype == torch.int8 and q_dev.device == dev
    assert torch.equal(q_dev.cpu(), q_cpu)
    # channels_last keeps its strides (memory order is all an elementwise op needs)
    x_cl = x.contiguous(memory_format=torch.channels_last)
    q_cl = qd.quantize_per_tensor(x_cl.to(dev), 0.013, zp, -128, 127, torch.int8)
    assert q_cl.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(q_cl.cpu(), qd.quantize_per_tensor(x_cl, 0.013, zp, -128, 127, torch.int8))
    d_cpu = qd.dequantize_per_tensor(q_cpu, 0.013, zp, -128, 127, torch.int8)
    d_dev = qd.dequantize_per_tensor(q_cpu.to(dev), 0.013, zp, -128, 127, torch.int8)
    assert torch.equal(d_dev.cpu(), d_cpu)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_per_channel_match_cpu_exactly(dev, axis):
    x = torch.randn(4, 6, 5) * 3
    c = x.shape[axis]
    scales = torch.rand(c) * 0.05 + 0.005
    zps = torch.randint(-20, 20, (c,))
    q_cpu = qd.quantize_per_channel(x, scales, zps, axis % 3, -128, 127, torch.int8)
    q_dev = qd.quantize_per_channel(x.to(dev), scales.to(dev), zps.to(dev), axis % 3, -128, 127, torch.int8)
    assert torch.equal(q_dev.cpu(), q_cpu)
    d_cpu = qd.dequantize_per_channel(q_cpu, scales, zps, axis % 3, -128, 127, torch.int8)
    d_dev = qd.dequantize_per_channel(q_cpu.to(dev), scales.to(dev), zps.to(dev), axis % 3, -128, 127, torch.int8)
    assert torch.equal(d_dev.cpu(), d_cpu)


@pytest.mark.parametrize("relu", [False, True])
def test_qadd_matches_the_cpu_reference_chain(dev, relu):
    a = torch.randint(-128, 128, (2, 8, 5, 7), dtype=torch.int8)
    b = torch.randint(-128, 128, (2, 8, 5, 7), dtype=torch.int8)
    v = qd.dequantize_per_tensor(a, 0.02, -128, -128, 127, torch.int8) + \
        qd.dequantize_per_tensor(b, 0.035, 3, -128, 127, torch.int8)
    ref = qd.quantize_per_tensor(torch.relu(v) if relu else v, 0.041, -7, -128, 127, torch.int8)
    a_cl = a.contiguous(memory_format=torch.channels_last).to(dev)  # b is copied to a's strides
    y = torch.ops.mlu.qadd(a_cl, b.to(dev), 0.02, -128, 0.035, 3, 0.041, -7, relu)
    assert y.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(y.cpu(), ref)


def test_qmax_pool2d_matches_the_cpu_reference_chain(dev):
    x = torch.randint(-128, 128, (2, 6, 9, 10), dtype=torch.int8)
    ref = qd.quantize_per_tensor(torch.nn.functional.max_pool2d(
        qd.dequantize_per_tensor(x, 0.013, -5, -128, 127, torch.int8), 3, 2, 1), 0.013, -5, -128, 127, torch.int8)
    y = torch.ops.mlu.qmax_pool2d(x.to(dev), [3, 3], [2, 2], [1, 1], [1, 1])
    assert y.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(y.cpu(), ref)


def test_errors_name_the_op_and_argument(dev):
    x = torch.randn(8).to(dev)
    with pytest.raises(NotImplementedError, match="quantized_decomposed::quantize_per_tensor: dtype Byte is not supported on device mlu \\(int8 only"):
        qd.quantize_per_tensor(x, 0.1, 0, 0, 255, torch.uint8)
    with pytest.raises(ValueError, match="scale 0.000000 must be finite and > 0"):
        qd.quantize_per_tensor(x, 0.0, 0, -128, 127, torch.int8)
    with pytest.raises(ValueError, match="zero point 200 is outside \\[-128, 127\\]"):
        qd.quantize_per_tensor(x, 0.1, 200, -128, 127, torch.int8)
    with pytest.raises(RuntimeError, match="Expecting input to have dtype"):
        qd.dequantize_per_tensor(x, 0.1, 0, -128, 127, torch.int8)
    q = torch.zeros(4, 8, dtype=torch.int8, device=dev)
    w = torch.zeros(3, 8, dtype=torch.int8, device=dev)
    with pytest.raises(ValueError, match="mlu::qlinear.*y scale -1.000000 must be finite and > 0"):
        torch.ops.mlu.qlinear(q, w, torch.ones(3, device=dev), None, None, 0.1, 0, -1.0, 0, False)
    with pytest.raises(NotImplementedError, match="mlu::qlinear: x Float"):
        torch.ops.mlu.qlinear(x.reshape(1, 8), w, torch.ones(3, device=dev), None, None, 0.1, 0, 1.0, 0, False)


def test_preset_without_int8_array_is_refused():
    torch_mlu.load_config("tiny", ["tfu.int8.rows=0", "tfu.int8.cols=0"])
    try:
        dev = torch.device("mlu", 0)
        q = torch.zeros(4, 8, dtype=torch.int8, device=dev)
        w = torch.zeros(3, 8, dtype=torch.int8, device=dev)
        with pytest.raises(NotImplementedError, match="qlinear: config 'tiny' has no int8 TFU array"):
            torch.ops.mlu.qlinear(q, w, torch.ones(3, device=dev), None, None, 0.1, 0, 1.0, 0, False)
        del q, w
    finally:
        torch_mlu.load_config("tiny")


class _Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(16, 24, 3, stride=2, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(24 * 4 * 4, 10)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.pool(self.conv2(x) + 0.5)
        return self.fc(torch.flatten(x, 1))


@pytest.mark.parametrize("per_channel", [True, False])
def test_small_model_matches_cpu_reference(dev, per_channel):
    torch.manual_seed(0)
    model = _Small().eval()
    with torch.no_grad():  # non-trivial batch norm statistics
        model.bn1.running_mean.uniform_(-0.2, 0.2)
        model.bn1.running_var.uniform_(0.5, 1.5)
    calib = [torch.randn(4, 3, 16, 16) for _ in range(3)]
    x = torch.randn(4, 3, 16, 16)
    ref = mq.prepare_int8(model, (x,), calib, per_channel=per_channel)
    qmodel = mq.lower_to_mlu(ref, dev)
    assert qmodel.int8_layers == 3  # conv1+bn+relu, conv2, fc
    torch_mlu.reset_stats()
    with torch.no_grad():
        y_dev = qmodel(x.to(dev)).cpu()
        y_ref = ref(x)
    # Outputs are dequantized int8: multiples of the last scale. The device sums exactly in int32
    # where the reference rounds fp32 convolutions, so a value may sit one step away, rarely.
    step = qmodel.fc_int8.y_scale
    steps = ((y_dev - y_ref).abs() / step).round()
    assert steps.max() <= 1, steps.max()
    assert (steps == 0).float().mean() >= 0.95
    # and the fp32 model is close (int8 error)
    with torch.no_grad():
        y32 = model(x)
    assert (y_dev - y32).norm() / y32.norm() < 0.1
    report = torch_mlu.cycle_report(format="json")
    int8 = [d for d in report["multiplies_by_dtype"] if d["dtype"] == "int8"]
    assert int8 and int8[0]["macs"] == 4 * (16 * 16 * 16 * 27 + 8 * 8 * 24 * 16 * 9 + 10 * 384)
