"""What importing torch_mlu changes in torch (each is the smallest change that makes the device
behave like a built-in one):

- Printing a device tensor formats a host copy (as torch does for XLA/lazy tensors): formatting
  runs comparisons and reductions, which should neither need device kernels nor show up in the
  cycle report.
"""

import torch
import torch._tensor_str


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


def install():
    _patch_printing("mlu")
