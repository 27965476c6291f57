#!/usr/bin/env python3
"""torch.compile benchmark: eager vs compiled on the simulated MLU, for the blocks issue 14 names
(a BERT-base encoder layer at sequence 128 and 512, a GPT-2 block, a LLaMA decoder layer, all from
transformers, and torchvision's resnet50), with both compile backends: "inductor" (PyTorch's
default, the device's Inductor codegen) and "mlu" (the device's Dynamo backend with libmlu's
hand-fused kernels). One inference forward each (torch_mlu.compile_compare): simulated kernel
cycles, GDRAM bytes and kernel launches, eager and compiled, and compiled/eager ratios, all from
one run; nothing is asserted. The transformers blocks run their attention as
--attention says: "sdpa" (transformers' default: torch.nn.functional.scaled_dot_product_attention,
the device's fused attention kernel in eager and compiled graphs alike) or "eager" (the
hand-written matmul, softmax, matmul, which Inductor's attention pattern pass may rewrite).

Run from the source tree after building (the package from the build tree):
  PYTHONPATH=build/python MLUSIM_CONFIG_DIR=configs .venv/bin/python bench/compile_models.py
      [--config mlu370-x4] [--models bert-128,gpt2,...] [--backends inductor,mlu] [--attention sdpa|eager]
      [--functional] [--json F]
Timing-only by default (the same cycles, much faster; the outputs are not compared); --functional
computes the numbers too and reports the largest |compiled - eager| of each.
"""

import argparse
import json
import os
import sys
import time

MODELS = ("bert-128", "bert-512", "gpt2", "llama", "resnet50")
BACKENDS = ("inductor", "mlu")


def build(name, attention="sdpa"):
    """(module in eval mode, example inputs) on the CPU; `attention`: transformers' attn_implementation."""
    import torch

    torch.manual_seed(0)
    if name.startswith("bert"):
        from transformers import BertConfig
        from transformers.models.bert.modeling_bert import BertLayer

        seq = int(name.split("-")[1])
        layer = BertLayer(BertConfig(attn_implementation=attention))
        return layer.eval(), (torch.randn(1, seq, 768),)
    if name == "gpt2":
        from transformers import GPT2Config
        from transformers.models.gpt2.modeling_gpt2 import GPT2Block

        block = GPT2Block(GPT2Config(attn_implementation=attention))
        return block.eval(), (torch.randn(1, 128, 768),)
    if name == "llama":
        from transformers import LlamaConfig
        from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

        cfg = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_attention_heads=16, num_key_value_heads=16,
                          attn_implementation=attention)

        class Layer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = LlamaDecoderLayer(cfg, 0)
                self.rope = LlamaRotaryEmbedding(cfg)

            def forward(self, x):
                pos = torch.arange(x.shape[1], device=x.device).unsqueeze(0)
                out = self.layer(x, position_embeddings=self.rope(x, pos), position_ids=pos)
                return out[0] if isinstance(out, tuple) else out

        return Layer().eval(), (torch.randn(1, 128, 1024),)
    if name == "resnet50":
        import torchvision

        return torchvision.models.resnet50().eval(), (torch.randn(1, 3, 224, 224),)
    raise SystemExit(f"compile_models.py: unknown model '{name}' (known: {', '.join(MODELS)})")


def first_output(module):
    """Transformers blocks return tuples; compare and time their first tensor."""
    import torch

    class First(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = module

        def forward(self, *args):
            out = self.inner(*args)
            return out[0] if isinstance(out, (tuple, list)) else out

    return First().eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="mlu370-x4", help="the preset to simulate (default mlu370-x4)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated subset of {','.join(MODELS)}")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated subset of inductor,mlu")
    ap.add_argument("--attention", default="sdpa", choices=("sdpa", "eager"),
                    help="transformers' attn_implementation for the transformer blocks (default sdpa)")
    ap.add_argument("--functional", action="store_true", help="compute results too and compare them (slower)")
    ap.add_argument("--json", help="also write the results to this JSON file")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m]
    backends = [b for b in args.backends.split(",") if b]
    for b in backends:
        if b not in BACKENDS:
            ap.error(f"--backends: unknown backend '{b}' (known: inductor, mlu)")
    for m in models:
        if m not in MODELS:
            ap.error(f"--models: unknown model '{m}' (known: {', '.join(MODELS)})")
    os.environ.setdefault("MLUSIM_CONFIG", args.config)

    import torch

    import torch_mlu

    torch_mlu.load_config(args.config)
    torch_mlu.set_timing_only(not args.functional)
    print(f"torch.compile on {args.config}, fp32 inference, {args.attention} attention, "
          f"{'functional' if args.functional else 'timing-only'}")
    print(f"{'model':<10} {'backend':<9} {'metric':<16} {'eager':>14} {'compiled':>14} {'ratio':>7}")
    results = {}
    for name in models:
        module, inputs = build(name, args.attention)
        module = first_output(module).to("mlu")
        for backend in backends:
            torch._dynamo.reset()
            started = time.time()
            r = torch_mlu.compile_compare(module, inputs, backend=backend)
            results[f"{name}/{backend}"] = {k: v for k, v in r.items() if k != "graphs"} | {
                "graphs": len(r["graphs"]), "host_s": time.time() - started}
            for metric in ("cycles", "dram_bytes", "kernel_launches"):
                t = r["total"][metric]
                ratio = f"{t['ratio']:.3f}" if t["ratio"] is not None else "-"
                print(f"{name:<10} {backend:<9} {metric:<16} {t['unfused']:>14} {t['fused']:>14} {ratio:>7}")
            if args.functional:
                print(f"{name:<10} {backend:<9} max |diff|       {r['max_abs_diff']:.3g}")
            sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)


if __name__ == "__main__":
    main()
