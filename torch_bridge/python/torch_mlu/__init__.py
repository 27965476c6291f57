"""torch_mlu: PyTorch tensors on mlusim's simulated MLU devices.

Importing this package registers the PrivateUse1 backend of libtorch 1.13 (the device type
torch names "privateuseone") and gives the torch.cuda-like module users expect::

    import torch, torch_mlu
    dev = torch_mlu.device(0)                 # torch.device("privateuseone", 0)
    x = torch.randn(4, 4).to(dev)
    with torch_mlu.trace("traces/run.json"):
        y = x.cpu()
    print(torch_mlu.memory_summary())
    print(torch_mlu.cycle_report())

Every allocation and copy advances simulated time; see torch_bridge/README.md for the CUDA twin
of each call, the caching allocator (MLU_ALLOC_CONF) and the CPU-fallback policy
(TORCH_MLU_CPU_FALLBACK).
"""

import sys as _sys

import torch

from . import _C

# torch 1.13 names the device type "privateuseone"; torch >= 2.1 can rename it (DESIGN.md).
if hasattr(torch.utils, "rename_privateuse1_backend"):  # pragma: no cover (not on Debian 12)
    if torch._C._get_privateuse1_backend_name() != "mlu":
        torch.utils.rename_privateuse1_backend("mlu")
    DEVICE_TYPE = "mlu"
else:
    DEVICE_TYPE = "privateuseone"

_C.check_environment()  # a bad MLU_ALLOC_CONF / TORCH_MLU_CPU_FALLBACK fails the import, clearly


def _device_index(device=None, optional=True):
    """The device ordinal named by an int, a string, a torch.device or None (current device)."""
    if device is None:
        if not optional:
            raise ValueError("a device is required")
        return _C.current_device()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != DEVICE_TYPE:
            raise ValueError(f"expected a {DEVICE_TYPE} (MLU) device, got {device}")
        return _C.current_device() if device.index is None else device.index
    if isinstance(device, int):
        return device
    raise TypeError(f"cannot interpret {device!r} as an MLU device")


def is_available():
    """True when the simulated system has at least one device."""
    return _C.device_count() > 0


def device_count():
    """Number of simulated MLU devices (config key `devices`)."""
    return _C.device_count()


def current_device():
    return _C.current_device()


def set_device(device):
    """Makes `device` the calling thread's current MLU (cnrtSetDevice)."""
    _C.set_device(_device_index(device))


def device(index=None):
    """The torch.device of MLU `index` (default: the current device): torch.device("privateuseone", i)."""
    return torch.device(DEVICE_TYPE, _device_index(index))


class device_guard:
    """Context manager that makes `device` current and restores the previous one (torch.cuda.device)."""

    def __init__(self, device):
        self.index = _device_index(device)
        self.previous = None

    def __enter__(self):
        self.previous = _C.current_device()
        _C.set_device(self.index)
        return self

    def __exit__(self, *exc):
        _C.set_device(self.previous)
        return False


def synchronize(device=None):
    """Waits for all work queued on every queue of the device (cnrtSyncDevice)."""
    _C.synchronize(_device_index(device))


def get_device_properties(device=None):
    """The device's properties from the config (name, total_memory, clusters, ...), as a dict."""
    return _C.device_properties(_device_index(device))


def get_device_name(device=None):
    return get_device_properties(device)["name"]


def set_cpu_fallback(enabled):
    """Runs ops without a device kernel on the CPU (warning once per op, counted) instead of raising."""
    _C.set_cpu_fallback(bool(enabled))


def cpu_fallback_enabled():
    return _C.cpu_fallback_enabled()


def cpu_fallback_counts():
    """{"aten::op.overload": calls} of the ops that ran on the CPU through the fallback."""
    return dict(_C.cpu_fallback_counts())


def reset_cpu_fallback_counts():
    _C.reset_cpu_fallback_counts()


def pin_memory(tensor):
    """A copy of CPU `tensor` in pinned host memory (cnrtHostMalloc): faster host<->device copies."""
    return tensor.pin_memory(DEVICE_TYPE)


def is_pinned(tensor):
    return tensor.is_pinned(DEVICE_TYPE)


from .streams import Notifier, Queue, current_queue, default_queue, queue, set_queue  # noqa: E402
from .memory import (  # noqa: E402
    empty_cache,
    get_allocator_settings,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
    set_allocator_settings,
    set_per_process_memory_fraction,
)
from .random import initial_seed, manual_seed, manual_seed_all, seed, seed_all  # noqa: E402
from .sim import (  # noqa: E402
    config_name, cycle_report, device_stats, load_config, reset_stats, set_timing_only, trace)
from .fusion import fuse, fusion_compare, fusion_report  # noqa: E402
from . import _patches  # noqa: E402

_patches.install(_sys.modules[__name__])

__all__ = [
    "DEVICE_TYPE", "Notifier", "Queue", "config_name", "cpu_fallback_counts", "cpu_fallback_enabled",
    "current_device", "current_queue", "cycle_report", "default_queue", "device", "device_count",
    "device_guard", "device_stats", "empty_cache", "fuse", "fusion_compare", "fusion_report",
    "get_allocator_settings", "get_device_name",
    "get_device_properties", "initial_seed", "is_available", "is_pinned", "load_config", "manual_seed",
    "manual_seed_all", "max_memory_allocated", "max_memory_reserved", "mem_get_info", "memory_allocated",
    "memory_reserved", "memory_snapshot", "memory_stats", "memory_stats_as_nested_dict", "memory_summary",
    "pin_memory", "queue", "reset_accumulated_memory_stats", "reset_cpu_fallback_counts",
    "reset_max_memory_allocated", "reset_peak_memory_stats", "reset_stats", "seed", "seed_all",
    "set_allocator_settings", "set_cpu_fallback", "set_device", "set_per_process_memory_fraction",
    "set_queue", "synchronize", "trace",
]
