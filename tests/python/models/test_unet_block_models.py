"""A diffusers-style UNet level on the device with the CPU fallback off, against the CPU: a ResNet
block with a timestep embedding (group_norm, SiLU), self-attention over the pixels (SDPA) and a
nearest 2x upsample with a convolution, forward and backward (native_group_norm_backward among the
gradients)."""

import copy

import pytest
import torch
import torch.nn.functional as F
import torch_mlu

pytestmark = pytest.mark.usefixtures("big_dram")
DEV = torch.device("mlu", 0)


class UNetBlock(torch.nn.Module):
    """A diffusers-style level: a ResNet block with a timestep embedding, a self-attention block
    over the pixels, and a nearest 2x upsample with a convolution."""

    def __init__(self, ch=32, temb=16, heads=2):
        super().__init__()
        self.heads = heads
        self.norm1, self.conv1 = torch.nn.GroupNorm(8, ch), torch.nn.Conv2d(ch, ch, 3, padding=1)
        self.temb = torch.nn.Linear(temb, ch)
        self.norm2, self.conv2 = torch.nn.GroupNorm(8, ch), torch.nn.Conv2d(ch, ch, 3, padding=1)
        self.norm_attn, self.qkv, self.proj = torch.nn.GroupNorm(8, ch), torch.nn.Linear(ch, 3 * ch), torch.nn.Linear(ch, ch)
        self.up = torch.nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x, t):
        h = self.conv1(F.silu(self.norm1(x))) + self.temb(F.silu(t))[:, :, None, None]
        x = x + self.conv2(F.silu(self.norm2(h)))
        n, c, hh, ww = x.shape
        a = self.norm_attn(x).flatten(2).transpose(1, 2)  # [N, HW, C]
        q, k, v = self.qkv(a).view(n, hh * ww, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(n, hh * ww, c)
        x = x + self.proj(o).transpose(1, 2).view(n, c, hh, ww)
        return self.up(F.interpolate(x, scale_factor=2.0, mode="nearest"))


def test_unet_block_forward_backward_matches_cpu():
    torch.manual_seed(0)
    cpu = UNetBlock()
    dev = copy.deepcopy(cpu).to(DEV)
    x, t = torch.randn(2, 32, 8, 8), torch.randn(2, 16)
    want = cpu(x, t)
    got = dev(x.to(DEV), t.to(DEV))
    torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=1e-4, atol=1e-4)
    want.square().mean().backward()
    got.square().mean().backward()
    for (name, p_cpu), (_, p_dev) in zip(cpu.named_parameters(), dev.named_parameters()):
        torch.testing.assert_close(p_dev.grad.cpu(), p_cpu.grad, rtol=1e-3, atol=1e-5,
                                   msg=lambda m, n=name: f"grad of {n}: {m}")
    assert torch_mlu.cpu_fallback_counts() == {}
