"""torch.mlu._utils: what torch itself looks up on a device module (torch.serialization calls
_get_device_index when torch.load maps storages to "mlu:i")."""

import torch

from . import _C


def _get_device_index(device, optional=False, allow_cpu=False):
    """The device ordinal named by an int, a string ("mlu", "mlu:1"), a torch.device or None (the
    current device when `optional`), as torch.cuda._utils._get_device_index."""
    if device is None:
        if not optional:
            raise ValueError("Expected an MLU device, but got None")
        return _C.current_device()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if allow_cpu and device.type == "cpu":
            return -1
        if device.type != "mlu":
            raise ValueError(f"Expected an MLU device, but got: {device}")
        if device.index is None:
            if not optional:
                raise ValueError(f"Expected an MLU device with a specified index or an integer, but got: {device}")
            return _C.current_device()
        return device.index
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    raise TypeError(f"cannot interpret {device!r} as an MLU device")
