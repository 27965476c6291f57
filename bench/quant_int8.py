#!/usr/bin/env python3
"""torch_mlu benchmark: int8 (torch_mlu.quantization) vs fp16 and fp32 inference on the simulated MLU.

For torchvision resnet18 and a Hugging Face BERT encoder layer (random weights, small config), one
forward pass each in fp32, fp16 (model.half()) and int8 (quantize_int8: torch.ao observers
calibrated on random batches, conv/linear on the TFU's int8 array), all on the device. Figures
(measured in this run, reported as ratios; nothing is asserted):
  - kernel cycles of the forward (sum over the cycle report's kernels) and the simulated time;
  - the conv/linear share: cycles of the ops that carry MACs (aten::convolution / addmm / mm /
    mlu::qconv2d / qlinear ...), and what quantize / dequantize cost on top;
  - int8 accuracy against fp32: top-1 agreement and relative logits error (resnet18, per channel
    and per tensor weight scales), relative error (BERT).

Run from a build tree:
  MLUSIM_CONFIG_DIR=configs .venv/bin/python bench/quant_int8.py [--config mlu370-x4] \
      [--image 112] [--batch 4] [--seq 64] [--hidden 256]
"""

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import torch_mlu  # noqa: E402
import torch_mlu.quantization as mq  # noqa: E402
import torchvision  # noqa: E402
import transformers  # noqa: E402

DEV = torch.device("mlu", 0)


def measure(fn):
    """(output, kernel cycles, simulated ns, {op: cycles}) of one call of fn on the device, after
    one warm-up call (first-use work: the int8 layers' weight sums, allocator segments)."""
    with torch.no_grad():
        fn()
    torch_mlu.synchronize()
    torch_mlu.reset_stats()
    with torch.no_grad():
        out = fn()
    torch_mlu.synchronize()
    report = torch_mlu.cycle_report(format="json")
    cycles = sum(k["cycles"] for k in report["kernels"])
    ops = {op["name"]: op["cycles"] for op in report["ops"]}
    return out, cycles, report["elapsed_ns"], ops


def quant_share(ops):
    return sum(c for name, c in ops.items() if "quantize" in name)


def mac_ops(ops):
    keys = ("conv", "addmm", "mm", "linear", "qlinear", "bmm", "matmul")
    return sum(c for name, c in ops.items() if any(k in name for k in keys) and "quantize" not in name)


def row(label, cycles, ns, ops, base):
    print(f"  {label:26} {cycles:14,d} cycles {ns / 1e3:10.1f} us   conv/linear {mac_ops(ops):13,d}"
          f"   q/dq {quant_share(ops):11,d}   fp32/this {base / cycles:5.2f}x")


def resnet(args):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=100).eval()
    calib = [torch.randn(args.batch, 3, args.image, args.image) for _ in range(4)]
    x = torch.randn(args.batch, 3, args.image, args.image)
    with torch.no_grad():
        ref32 = model(x)
    m32 = model.to(DEV)
    y32, c32, ns32, ops32 = measure(lambda: m32(x.to(DEV)))
    m16 = torchvision.models.resnet18(num_classes=100).eval()
    m16.load_state_dict(model.state_dict())
    m16 = m16.half().to(DEV)
    _, c16, ns16, ops16 = measure(lambda: m16(x.half().to(DEV)))
    print(f"resnet18, batch {args.batch}, {args.image}x{args.image}, config {torch_mlu.config_name()}")
    row("fp32", c32, ns32, ops32, c32)
    row("fp16", c16, ns16, ops16, c32)
    model = model.cpu()
    for per_channel in (True, False):
        q = mq.quantize_int8(model, (x,), calib, per_channel=per_channel)
        y8, c8, ns8, ops8 = measure(lambda: q(x.to(DEV)))
        y8 = y8.cpu()
        top1 = (y8.argmax(1) == ref32.argmax(1)).float().mean().item()
        rel = ((y8 - ref32).norm() / ref32.norm()).item()
        label = f"int8 ({'per channel' if per_channel else 'per tensor'})"
        row(label, c8, ns8, ops8, c32)
        print(f"  {'':26} top-1 agreement {top1 * 100:5.1f}%, relative logits error {rel:.4f},"
              f" {q.int8_layers} int8 layers, int8/fp16 cycles {c8 / c16:.3f}")
    del m32, m16


def bert(args):
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=1000, hidden_size=args.hidden, num_hidden_layers=1,
                                  num_attention_heads=max(1, args.hidden // 64),
                                  intermediate_size=4 * args.hidden, max_position_embeddings=args.seq,
                                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    layer = transformers.models.bert.modeling_bert.BertLayer(cfg).eval()
    h = torch.randn(args.batch, args.seq, args.hidden)
    calib = [torch.randn(args.batch, args.seq, args.hidden) for _ in range(4)]

    class Layer(torch.nn.Module):  # the hidden states in, the hidden states out
        def __init__(self, layer):
            super().__init__()
            self.layer = layer

        def forward(self, x):
            out = self.layer(x)
            return out[0] if isinstance(out, tuple) else out

    model = Layer(layer).eval()
    with torch.no_grad():
        ref32 = model(h)
    m32 = Layer(layer).eval().to(DEV)
    _, c32, ns32, ops32 = measure(lambda: m32(h.to(DEV)))
    import copy
    m16 = copy.deepcopy(model).half().to(DEV)
    _, c16, ns16, ops16 = measure(lambda: m16(h.half().to(DEV)))
    print(f"BERT layer, batch {args.batch}, seq {args.seq}, hidden {args.hidden}, config {torch_mlu.config_name()}")
    row("fp32", c32, ns32, ops32, c32)
    row("fp16", c16, ns16, ops16, c32)
    q = mq.quantize_int8(copy.deepcopy(model).cpu(), (h,), calib, granularity="layer")
    y8, c8, ns8, ops8 = measure(lambda: q(h.to(DEV)))
    rel = ((y8.cpu() - ref32).norm() / ref32.norm()).item()
    row("int8 (per channel)", c8, ns8, ops8, c32)
    print(f"  {'':26} relative error {rel:.4f}, {q.int8_layers} int8 layers, int8/fp16 cycles {c8 / c16:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="mlu370-x4", help="hardware preset or YAML path (default mlu370-x4)")
    ap.add_argument("--image", type=int, default=112, help="resnet18 image size (default 112)")
    ap.add_argument("--batch", type=int, default=4, help="batch size (default 4)")
    ap.add_argument("--seq", type=int, default=64, help="BERT sequence length (default 64)")
    ap.add_argument("--hidden", type=int, default=256, help="BERT hidden size (default 256)")
    args = ap.parse_args()
    torch_mlu.load_config(args.config)
    resnet(args)
    bert(args)


if __name__ == "__main__":
    main()
