"""Helpers the code of Inductor's device kernels calls (torch_mlu/inductor_kernel.py). Every one
launches device kernels only (views, index_select, index_copy/index_add); none touches the CPU."""

import torch

__all__ = ["_as_tensor", "_gather", "_scatter", "_scatter_add", "get_raw_stream"]


def get_raw_stream(device_index):
    """The queue handle of the device's current stream (Inductor's wrapper asks for one)."""
    return torch.mlu.current_stream(device_index).stream_id


def _as_tensor(value, like):
    """value as a tensor on like's device (Python scalars from constant-only expressions)."""
    if isinstance(value, torch.Tensor):
        return value
    return torch.tensor(value, device=like.device)


def _span(buf):
    """Elements from buf's first to its last addressable element (its flat extent in storage)."""
    if buf.numel() == 0:
        return 0
    return 1 + sum((s - 1) * st for s, st in zip(buf.shape, buf.stride()))


def _flat(buf):
    return buf.as_strided((_span(buf),), (1,), buf.storage_offset())


def _gather(buf, index, clamp):
    """buf's elements at the flat indices of tensor `index` (same shape). clamp: first clamp the
    indices into the buffer (a load under a mask computes indices outside it for the lanes the
    mask discards)."""
    flat = _flat(buf)
    index = torch.as_tensor(index, device=buf.device)
    if clamp:
        index = index.clamp(0, max(flat.numel() - 1, 0))
    return flat.index_select(0, index.reshape(-1)).view(index.shape)


def _scatter(out, index, value):
    """out.flat[index] = value (broadcast together)."""
    index, value = torch.broadcast_tensors(torch.as_tensor(index, device=out.device), value)
    _flat(out).index_copy_(0, index.reshape(-1), value.reshape(-1).to(out.dtype))


def _scatter_add(out, index, value):
    """out.flat[index] += value (duplicates accumulate: Inductor's atomic_add store)."""
    index, value = torch.broadcast_tensors(torch.as_tensor(index, device=out.device), value)
    _flat(out).index_add_(0, index.reshape(-1), value.reshape(-1).to(out.dtype))
