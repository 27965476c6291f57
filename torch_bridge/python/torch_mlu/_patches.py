"""What importing torch_mlu changes in torch 1.13 (each is the smallest change that makes the
device behave like a built-in one):

- torch.manual_seed / torch.seed also seed the MLU generators (1.13 seeds only CPU and CUDA).
- Printing a device tensor formats a host copy (as torch does for XLA/lazy tensors): formatting
  runs comparisons and reductions, which should neither need device kernels nor show up in the
  cycle report.
- torch._register_device_module("privateuseone", torch_mlu), so torch.privateuseone is this
  module.
"""

import torch
import torch._tensor_str

from . import _C

_MASK = (1 << 64) - 1


def _patch_seeding():
    original_manual_seed = torch.random.manual_seed
    original_seed = torch.random.seed
    if getattr(original_manual_seed, "_torch_mlu", False):
        return

    def manual_seed(seed):
        generator = original_manual_seed(seed)
        _C.manual_seed(int(seed) & _MASK)
        return generator

    def seed():
        value = original_seed()
        _C.manual_seed(int(value) & _MASK)
        return value

    for fn, original in ((manual_seed, original_manual_seed), (seed, original_seed)):
        fn.__doc__ = original.__doc__
        fn.__wrapped__ = original
        fn._torch_mlu = True
    torch.manual_seed = torch.random.manual_seed = manual_seed
    torch.seed = torch.random.seed = seed


def _patch_printing(device_type):
    original = torch._tensor_str._tensor_str
    if getattr(original, "_torch_mlu", False):
        return

    def _tensor_str(self, indent):
        if self.device.type == device_type:
            self = self.to("cpu")
        return original(self, indent)

    _tensor_str._torch_mlu = True
    torch._tensor_str._tensor_str = _tensor_str


def install(module):
    _patch_seeding()
    _patch_printing(module.DEVICE_TYPE)
    if getattr(torch, module.DEVICE_TYPE, None) is None:
        torch._register_device_module(module.DEVICE_TYPE, module)
