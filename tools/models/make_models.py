#!/usr/bin/python3
"""Writes the built-in models of `mlusim run` as TorchScript files, with seeded random weights
(no downloads), and one JSON sidecar per model naming its inputs and its training loss.

  resnet18, resnet50, mobilenet_v2   torchvision 0.14 classifiers (1000 classes), input [B,3,224,224]
  bert-base                          one BERT-base encoder layer (hidden 768, 12 heads, FFN 3072,
                                     GELU, post-norm), input hidden states [B,128,768]
  gpt2-small                         one GPT-2 small block (hidden 768, 12 heads, causal mask,
                                     pre-norm, MLP 3072 with tanh GELU), input [B,128,768]
  mlp                                784-1024-1024-10 ReLU classifier, input [B,784]

Sidecar <name>.json: {"inputs": [[-1, 3, 224, 224]], "loss": "cross_entropy", "classes": 1000,
"description": ...}; -1 is the batch. Models are scripted (torch.jit.script), so .train() and
.eval() keep working from C++ (batch norm, dropout).

Usage: make_models.py OUT_DIR [NAME ...]   (all models by default)
"""

import json
import math
import pathlib
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    """Multi-head self-attention written out (q/k/v projections, scaled dot products, softmax),
    as BERT and GPT-2 do it; `causal` masks future positions with a large negative bias."""

    def __init__(self, hidden: int, heads: int, causal: bool, max_positions: int = 1024):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.causal = causal
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        # As GPT-2 implementations keep it: a buffer of the causal mask (True above the diagonal),
        # sliced to the sequence length, instead of building it on every forward.
        mask = torch.ones(max_positions, max_positions, dtype=torch.bool).triu(1) if causal else torch.zeros(0, 0, dtype=torch.bool)
        self.register_buffer("causal_mask", mask)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        if self.causal:
            scores = scores.masked_fill(self.causal_mask[:t, :t], -1e4)
        attn = F.softmax(scores, dim=-1)
        y = torch.matmul(attn, v).transpose(1, 2).contiguous().view(b, t, c)
        return self.out(y)


class BertLayer(nn.Module):
    def __init__(self, hidden: int = 768, heads: int = 12, ffn: int = 3072):
        super().__init__()
        self.attn = SelfAttention(hidden, heads, causal=False)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class Gpt2Block(nn.Module):
    def __init__(self, hidden: int = 768, heads: int = 12):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = SelfAttention(hidden, heads, causal=True)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def mlp():
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


def torchvision_model(name):
    import torchvision
    return getattr(torchvision.models, name)(weights=None)


MODELS = {
    "resnet18": (lambda: torchvision_model("resnet18"), [[-1, 3, 224, 224]], "cross_entropy", 1000,
                 "torchvision resnet18 (11.7M parameters)"),
    "resnet50": (lambda: torchvision_model("resnet50"), [[-1, 3, 224, 224]], "cross_entropy", 1000,
                 "torchvision resnet50 (25.6M parameters)"),
    "mobilenet_v2": (lambda: torchvision_model("mobilenet_v2"), [[-1, 3, 224, 224]], "cross_entropy", 1000,
                     "torchvision mobilenet_v2 (3.5M parameters, depthwise convolutions)"),
    "bert-base": (BertLayer, [[-1, 128, 768]], "mse", 0,
                  "one BERT-base encoder layer, sequence 128 (7.1M parameters)"),
    "gpt2-small": (Gpt2Block, [[-1, 128, 768]], "mse", 0,
                   "one GPT-2 small block, sequence 128, causal (7.1M parameters)"),
    "mlp": (mlp, [[-1, 784]], "cross_entropy", 10, "784-1024-1024-10 ReLU MLP (1.9M parameters)"),
}


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    out = pathlib.Path(argv[1])
    names = argv[2:] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print(f"make_models.py: unknown model(s) {unknown}; known: {list(MODELS)}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        make, inputs, loss, classes, description = MODELS[name]
        torch.manual_seed(0)
        module = torch.jit.script(make().eval())
        module.save(str(out / f"{name}.pt"))
        sidecar = {"name": name, "inputs": inputs, "loss": loss, "classes": classes, "description": description}
        (out / f"{name}.json").write_text(json.dumps(sidecar, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
