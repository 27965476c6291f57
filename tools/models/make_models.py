#!/usr/bin/env python3
"""Writes the built-in models of `mlusim run` as TorchScript files, with seeded random weights
(no downloads), and one JSON sidecar per model naming its inputs and its training loss. Runs with
the project venv's python (torch, torchvision, transformers from PyPI).

  resnet18, resnet50, mobilenet_v2   torchvision classifiers (1000 classes), input [B,3,224,224]
  bert-base                          one BERT-base encoder layer (hidden 768, 12 heads, FFN 3072,
                                     GELU, post-norm), input hidden states [B,128,768]
  gpt2-small                         one GPT-2 small block (hidden 768, 12 heads, causal mask,
                                     pre-norm, MLP 3072 with tanh GELU), input [B,128,768]
  mlp                                784-1024-1024-10 ReLU classifier, input [B,784]
  llama, hf-gpt2, hf-bert            Hugging Face transformers models from small configs (see
                                     HF_MODELS): token ids [B,128] in, logits / hidden states out
  hf-vit                             transformers ViT-Base/16 with 2 layers, input [B,3,224,224]

Sidecar <name>.json: {"inputs": [[-1, 3, 224, 224]], "loss": "cross_entropy", "classes": 1000,
"description": ...}; -1 is the batch; "vocab": V marks integer token inputs drawn from [0, V).
torch.nn models are scripted (torch.jit.script), so .train() and .eval() keep working from C++
(batch norm, dropout); transformers models are traced (their forward is not scriptable) with
dropout 0, with batch and sequence sizes kept symbolic.

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


class _LogitsOnly(nn.Module):
    """A transformers model as a tensor -> tensor module (return_dict=False, no KV cache)."""

    def __init__(self, model, key):
        super().__init__()
        self.model = model
        self.key = key

    def forward(self, x):
        return self.model(**{self.key: x}, use_cache=False, return_dict=False)[0] if self.key == "input_ids" \
            else self.model(**{self.key: x}, return_dict=False)[0]


# transformers models: (config class, model class, config kwargs, example input). Dropout is 0 so
# traced training steps are deterministic and comparable with the CPU.
HF_MODELS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM",
              dict(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=2,
                   num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=2048,
                   attention_dropout=0.0)),
    "hf-gpt2": ("GPT2Config", "GPT2LMHeadModel",
                dict(vocab_size=50257, n_embd=768, n_layer=2, n_head=12, n_positions=1024,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)),
    "hf-bert": ("BertConfig", "BertModel",
                dict(vocab_size=30522, hidden_size=768, num_hidden_layers=2, num_attention_heads=12,
                     intermediate_size=3072, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                     add_pooling_layer=False)),
    "hf-vit": ("ViTConfig", "ViTForImageClassification",
               dict(hidden_size=768, num_hidden_layers=2, num_attention_heads=12, intermediate_size=3072,
                    image_size=224, patch_size=16, num_labels=1000, hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0)),
}


def hf_model(name):
    import os
    import warnings

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers

    config_cls, model_cls, kwargs = HF_MODELS[name]
    kwargs = dict(kwargs)
    extra = {"add_pooling_layer": kwargs.pop("add_pooling_layer")} if "add_pooling_layer" in kwargs else {}
    config = getattr(transformers, config_cls)(**kwargs, attn_implementation="sdpa")
    model = getattr(transformers, model_cls)(config, **extra).eval()
    key = "pixel_values" if name == "hf-vit" else "input_ids"
    example = torch.randn(2, 3, 224, 224) if key == "pixel_values" else torch.randint(0, 1000, (2, 128))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about Python control flow on sizes
        return torch.jit.trace(_LogitsOnly(model, key), example, strict=False, check_trace=False)


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
    "llama": (lambda: hf_model("llama"), [[-1, 128]], "cross_entropy", 32000,
              "transformers LlamaForCausalLM: 2 layers, hidden 768, 12 heads / 4 KV heads (GQA), SwiGLU 2048, "
              "RoPE, RMSNorm, vocab 32000, sequence 128 (62M parameters)"),
    "hf-gpt2": (lambda: hf_model("hf-gpt2"), [[-1, 128]], "cross_entropy", 50257,
                "transformers GPT2LMHeadModel: 2 GPT-2 small layers, vocab 50257 (tied), sequence 128 (53M parameters)"),
    "hf-bert": (lambda: hf_model("hf-bert"), [[-1, 128]], "mse", 0,
                "transformers BertModel: 2 BERT-base layers with embeddings, sequence 128 (38M parameters)"),
    "hf-vit": (lambda: hf_model("hf-vit"), [[-1, 3, 224, 224]], "cross_entropy", 1000,
               "transformers ViTForImageClassification: ViT-Base/16 with 2 layers (16M parameters)"),
}

# Built-ins whose inputs are token ids: the vocabulary they are drawn from.
VOCAB = {"llama": 32000, "hf-gpt2": 50257, "hf-bert": 30522}


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
        module = make()
        if not isinstance(module, torch.jit.ScriptModule):
            module = torch.jit.script(module.eval())
        module.save(str(out / f"{name}.pt"))
        sidecar = {"name": name, "inputs": inputs, "loss": loss, "classes": classes, "description": description}
        if name in VOCAB:
            sidecar["vocab"] = VOCAB[name]
        (out / f"{name}.json").write_text(json.dumps(sidecar, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
