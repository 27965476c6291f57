"""A small model for `mlusim compare-precision` tests: FILE.py:FUNC returns (module, inputs)."""
import torch


def mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    return model, torch.randn(3, 16)
