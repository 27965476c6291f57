"""Text generation with Hugging Face transformers on the device (GPT-2 and Llama from small configs
with seeded random weights; nothing is downloaded), the CPU fallback off.

generate() exercises what a forward pass does not: the KV cache growing by one token per step,
the stopping criteria (int64 & bool bitwise ops, all/any), the logits processors (temperature,
top-k via topk, top-p via sort + softmax + cumsum + scatter) and multinomial sampling.
- greedy decoding is token-exact against the CPU (a batch with left padding and its attention mask);
- sampling is reproducible under torch.mlu.manual_seed, and every sampled token is one the
  top-k / top-p filters allow: it lies among the CPU model's top_k next-token logits for the
  sequence the device generated, teacher-forced through the CPU model."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # random weights from configs: never touch the network

import pytest  # noqa: E402
import torch  # noqa: E402
import torch_mlu  # noqa: E402,F401  (registers the device)
import transformers  # noqa: E402

pytestmark = pytest.mark.usefixtures("big_dram")

DEV = torch.device("mlu", 0)
VOCAB, NEW_TOKENS, PAD = 128, 8, 0
# Two prompts of different lengths, left-padded (decoder-only generation pads on the left).
PROMPTS = torch.tensor([[5, 17, 99, 3, 64, 21], [PAD, PAD, 42, 7, 7, 120]])
MASK = (PROMPTS != PAD).long()
_TINY = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4)


def _gpt2():
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        **{k: v for k, v in _TINY.items() if k not in ("hidden_size", "num_hidden_layers", "num_attention_heads")},
        n_embd=64, n_layer=2, n_head=4, n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        pad_token_id=PAD, bos_token_id=1, eos_token_id=2))


def _llama():
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        **_TINY, intermediate_size=128, num_key_value_heads=2, max_position_embeddings=64,
        pad_token_id=PAD, bos_token_id=1, eos_token_id=2))


MODELS = {"gpt2": _gpt2, "llama": _llama}


def _pair(name):
    torch.manual_seed(0)
    cpu = MODELS[name]().eval()
    dev = MODELS[name]().eval()
    dev.load_state_dict(cpu.state_dict())
    return cpu, dev.to(DEV)


def _generate(model, device, **kwargs):
    with torch.no_grad():
        return model.generate(input_ids=PROMPTS.to(device), attention_mask=MASK.to(device), max_new_tokens=NEW_TOKENS,
                              min_new_tokens=NEW_TOKENS, pad_token_id=PAD, **kwargs)


@pytest.mark.parametrize("name", list(MODELS))
def test_greedy_generation_matches_cpu_token_for_token(name):
    cpu, dev = _pair(name)
    want = _generate(cpu, "cpu", do_sample=False)
    got = _generate(dev, DEV, do_sample=False)
    assert got.device.type == "mlu"
    assert got.shape == (2, PROMPTS.shape[1] + NEW_TOKENS)
    assert torch.equal(got.cpu(), want), f"device {got.cpu().tolist()} vs CPU {want.tolist()}"


@pytest.mark.parametrize("name", list(MODELS))
def test_sampling_is_seeded_and_respects_top_k(name):
    cpu, dev = _pair(name)
    top_k = 5
    sample = dict(do_sample=True, top_k=top_k, top_p=0.95, temperature=0.7)
    torch.mlu.manual_seed(1234)
    first = _generate(dev, DEV, **sample).cpu()
    torch.mlu.manual_seed(1234)
    again = _generate(dev, DEV, **sample).cpu()
    assert torch.equal(first, again), "the same device seed must give the same tokens"
    torch.mlu.manual_seed(4321)
    others = [_generate(dev, DEV, **sample).cpu() for _ in range(2)]
    assert any(not torch.equal(first, o) for o in others), "other seeds never changed a sampled token"
    # Every new token is among the top_k of the CPU model's logits at its step.
    # Positions as generate() derives them for left padding (a plain forward counts from 0).
    mask = torch.cat([MASK, torch.ones(2, NEW_TOKENS, dtype=torch.long)], 1)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        logits = cpu(input_ids=first, attention_mask=mask, position_ids=positions).logits
    start = PROMPTS.shape[1]
    for step in range(NEW_TOKENS):
        allowed = logits[:, start + step - 1].topk(top_k, dim=-1).indices
        token = first[:, start + step]
        assert (allowed == token[:, None]).any(dim=1).all(), f"step {step}: {token.tolist()} not in {allowed.tolist()}"
