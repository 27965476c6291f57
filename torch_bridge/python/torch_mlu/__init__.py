"""torch_mlu: PyTorch tensors on mlusim's simulated MLU devices.

Importing this package registers the PrivateUse1 backend of torch 2.14 under the name "mlu" and
makes this module torch.mlu, the torch.cuda of the simulated device::

    import torch, torch_mlu
    x = torch.randn(4, 4).mlu()             # or .to("mlu:0"), torch.device("mlu", 0)
    with torch.mlu.trace("traces/run.json"):
        y = x.cpu()
    print(torch.mlu.memory_summary())
    print(torch.mlu.cycle_report())

Every allocation and copy advances simulated time; see torch_bridge/README.md for the CUDA twin
of each call, the caching allocator (MLU_ALLOC_CONF) and the CPU-fallback policy
(TORCH_MLU_CPU_FALLBACK).
"""

import sys as _sys

import torch

from . import _C

DEVICE_TYPE = "mlu"
OutOfMemoryError = torch.OutOfMemoryError  # raised by the caching allocator (torch.cuda.OutOfMemoryError)

# libmlusim_torch registers the name "mlu" with c10 when it loads (for C++ programs too); torch's
# Python side learns it here.
if torch.utils.backend_registration._privateuse1_backend_name != DEVICE_TYPE:
    torch.utils.rename_privateuse1_backend(DEVICE_TYPE)

_C.check_environment()  # a bad MLU_ALLOC_CONF / TORCH_MLU_CPU_FALLBACK fails the import, clearly

from ._utils import _get_device_index  # noqa: E402
from . import _utils  # noqa: E402,F401  (torch.serialization looks for torch.mlu._utils)


def _device_index(device=None, optional=True):
    return _get_device_index(device, optional)


def is_available():
    """True when the simulated system has at least one device."""
    return _C.device_count() > 0


def is_initialized():
    """The simulator starts on first use; it is always ready to."""
    return True


def _is_in_bad_fork():
    """Never: a forked child starts a fresh simulated runtime on its first call (torch.random asks
    this before torch.manual_seed seeds the device generators)."""
    return False


def init():
    """Starts the simulated system now (torch.cuda.init); otherwise it starts on first use."""
    _C.device_count()


def device_count():
    """Number of simulated MLU devices (config key `devices`)."""
    return _C.device_count()


def current_device():
    return _C.current_device()


def set_device(device):
    """Makes `device` the calling thread's current MLU (cnrtSetDevice)."""
    index = _device_index(device)
    if index >= 0:
        _C.set_device(index)


class device:
    """Context manager that makes `device` current and restores the previous one (torch.cuda.device).
    Use torch.device("mlu", i) for a device to put tensors on."""

    def __init__(self, device):
        self.idx = _get_device_index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = _C.current_device()
        if self.idx >= 0 and self.idx != self.prev_idx:
            _C.set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.prev_idx != _C.current_device():
            _C.set_device(self.prev_idx)
        return False


class device_of(device):
    """Context manager that makes the device of tensor `obj` current (torch.cuda.device_of); a
    CPU tensor changes nothing."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.device.type == DEVICE_TYPE else -1)


def synchronize(device=None):
    """Waits for all work queued on every stream of the device (cnrtSyncDevice)."""
    _C.synchronize(_device_index(device))


class _DeviceProperties:
    """torch.cuda.get_device_properties' object: name, total_memory, major, minor,
    multi_processor_count (clusters x cores), plus the simulator's cluster and clock figures."""

    def __init__(self, props):
        self.name = props["name"]
        self.total_memory = props["total_memory"]
        self.major = props["major"]
        self.minor = props["minor"]
        self.cluster_count = props["clusters"]
        self.cores_per_cluster = props["cores_per_cluster"]
        self.multi_processor_count = props["clusters"] * props["cores_per_cluster"]
        self.clock_rate_mhz = props["core_clock_mhz"]

    def __repr__(self):
        return (f"_MLUDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None):
    """The device's properties from the loaded config (torch.cuda.get_device_properties)."""
    return _DeviceProperties(_C.device_properties(_device_index(device)))


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    """(major, minor) from the preset's compute_capability keys: 3.0 for the MLU300-class presets
    (mlu370-*; also mlu270, tiny and tpu-v3, which keep the default), 5.0 for mlu590
    (torch.cuda.get_device_capability)."""
    p = get_device_properties(device)
    return p.major, p.minor


def is_bf16_supported(including_emulation=True):
    """bfloat16 compute exists from compute capability 5 (MLU500 class) on, as Cambricon's
    torch_mlu reports; the simulated presets below that have no bf16 arithmetic."""
    return is_available() and get_device_capability()[0] >= 5


def get_amp_supported_dtype():
    """The dtypes torch.autocast("mlu", dtype=...) accepts."""
    dtypes = [torch.float16]
    if is_bf16_supported():
        dtypes.append(torch.bfloat16)
    return dtypes


def is_current_stream_capturing():
    """Always False: the simulated device has no graph capture (torch.cuda.is_current_stream_capturing)."""
    return False


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
    return tensor.pin_memory()


def is_pinned(tensor):
    return tensor.is_pinned()


from .streams import (  # noqa: E402
    Event, Notifier, Queue, Stream, StreamContext, current_queue, current_stream, default_queue,
    default_stream, queue, set_queue, set_stream, stream)
from .memory import (  # noqa: E402
    caching_allocator_alloc,
    caching_allocator_delete,
    empty_cache,
    get_allocator_settings,
    max_memory_allocated,
    max_memory_cached,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_cached,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_memory_stats,
    set_allocator_settings,
    set_per_process_memory_fraction,
)
from .random import (  # noqa: E402
    get_rng_state, get_rng_state_all, initial_seed, manual_seed, manual_seed_all, seed, seed_all,
    set_rng_state, set_rng_state_all)
from .sim import (  # noqa: E402
    config_name, cycle_report, device_stats, flush_l2, inject_kernel_fault, load_config, reset_stats, set_timing_only,
    trace)
from .fusion import fuse, fusion_compare, fusion_report  # noqa: E402
from .compile import compile_compare, compiled_graphs, inductor_kernels, reset_compiled_graphs  # noqa: E402  (registers torch.compile backend "mlu")
from . import inductor as _inductor  # noqa: E402

_inductor.register_on_first_compile()  # torch.compile(model) with Inductor on mlu tensors
from .precision import compare  # noqa: E402  (layer-by-layer precision against the CPU in float64)
from . import amp  # noqa: E402  (torch.mlu.amp.autocast / GradScaler)
from . import quantization  # noqa: E402  (int8: quantize_int8, torch.ao's flow lowered to the int8 TFU)
from . import distributed  # noqa: E402  (registers the torch.distributed backend "cncl" for "mlu")
from . import _patches  # noqa: E402

device_guard = device  # mlusim's name before torch 2

_patches.install()

# torch.mlu is this module; Tensor.mlu(), Tensor.is_mlu, Module.mlu(), storages' .mlu() and
# torch.save/torch.load of device tensors come from torch's PrivateUse1 registration.
if getattr(torch, DEVICE_TYPE, None) is None:
    torch._register_device_module(DEVICE_TYPE, _sys.modules[__name__])
if not hasattr(torch.Tensor, "is_" + DEVICE_TYPE):
    torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True,
                                                         for_packed_sequence=True, for_storage=True)
# torch.autocast("mlu") without a dtype means float16, as on CUDA (torch's default for a
# PrivateUse1 device is bfloat16, which the MLU300 class does not compute).
torch.set_autocast_dtype(DEVICE_TYPE, torch.float16)

__all__ = [
    "DEVICE_TYPE", "Event", "OutOfMemoryError", "amp", "is_current_stream_capturing", "Notifier", "Queue", "Stream", "StreamContext", "caching_allocator_alloc",
    "caching_allocator_delete", "compare", "config_name", "cpu_fallback_counts", "cpu_fallback_enabled",
    "current_device", "current_queue", "current_stream", "cycle_report", "default_queue", "default_stream",
    "device", "device_count", "device_guard", "device_of", "device_stats", "empty_cache", "flush_l2", "fuse",
    "fusion_compare", "fusion_report", "get_allocator_settings", "get_amp_supported_dtype",
    "get_device_capability", "get_device_name", "get_device_properties", "get_rng_state",
    "get_rng_state_all", "init", "initial_seed", "is_available", "is_bf16_supported", "is_initialized",
    "is_pinned", "load_config", "manual_seed", "manual_seed_all", "max_memory_allocated",
    "max_memory_cached", "max_memory_reserved", "mem_get_info", "memory_allocated", "memory_cached",
    "memory_reserved", "memory_snapshot", "memory_stats", "memory_stats_as_nested_dict", "memory_summary",
    "pin_memory", "queue", "reset_accumulated_memory_stats", "reset_cpu_fallback_counts",
    "reset_max_memory_allocated", "reset_max_memory_cached", "reset_peak_memory_stats", "reset_stats",
    "seed", "seed_all", "set_allocator_settings", "set_cpu_fallback", "set_device",
    "set_per_process_memory_fraction", "set_queue", "set_rng_state", "set_rng_state_all", "set_stream",
    "set_timing_only", "stream", "synchronize", "trace",
]
