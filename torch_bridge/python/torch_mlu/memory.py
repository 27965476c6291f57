"""The caching allocator's statistics and controls, with torch.cuda's names and keys
(torch.cuda.memory_stats, memory_summary, ...). Settings: MLU_ALLOC_CONF (same syntax as
PYTORCH_CUDA_ALLOC_CONF) or set_allocator_settings()."""

import collections
import json
import pickle
import sys

import torch

from . import _C


def _index(device):
    from . import _device_index

    return _device_index(device)


def memory_stats(device=None):
    """torch.cuda.memory_stats' flat dictionary (sorted keys): allocation / segment / active /
    inactive_split and their *_bytes, each .{all,small_pool,large_pool}.{current,peak,allocated,freed};
    oversize_allocations, oversize_segments, num_alloc_retries, num_ooms, max_split_size; plus
    num_device_alloc / num_device_free (cnrtMalloc / cnrtFree calls, torch 2.x keys)."""
    stats = _C.memory_stats(_index(device))
    return collections.OrderedDict(sorted(stats.items()))


def memory_stats_as_nested_dict(device=None):
    nested = {}
    for key, value in memory_stats(device).items():
        node = nested
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return nested


def memory_allocated(device=None):
    """Bytes of device memory held by tensors (512-byte rounded blocks)."""
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None):
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None):
    """Bytes the caching allocator holds from the driver (= its live cnrtMalloc bytes)."""
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None):
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device=None):
    _C.reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device=None):
    _C.reset_accumulated_memory_stats(_index(device))


def reset_max_memory_allocated(device=None):
    """Deprecated twin of torch.cuda.reset_max_memory_allocated: resets all peaks."""
    reset_peak_memory_stats(device)


def empty_cache():
    """Returns every unused cached segment to the driver (cnrtFree)."""
    _C.empty_cache()


def mem_get_info(device=None):
    """(free, total) bytes of the device's DRAM as the driver sees them (cnrtMemGetInfo)."""
    return tuple(_C.mem_get_info(_index(device)))


def set_per_process_memory_fraction(fraction, device=None):
    """Limits the allocator to fraction x the device's DRAM; above it allocations raise OOM."""
    _C.set_memory_fraction(float(fraction), _index(device))


def get_allocator_settings():
    """The current settings in MLU_ALLOC_CONF syntax ("" = defaults)."""
    return _C.allocator_settings()


def set_allocator_settings(conf):
    """Replaces the settings ("max_split_size_mb:128,garbage_collection_threshold:0.6,
    roundup_power2_divisions:4,caching:False"; "" = defaults). Turning caching off empties the cache."""
    _C.set_allocator_settings(conf)


def memory_cached(device=None):
    """Deprecated twin of torch.cuda.memory_cached: memory_reserved."""
    return memory_reserved(device)


def max_memory_cached(device=None):
    """Deprecated twin of torch.cuda.max_memory_cached: max_memory_reserved."""
    return max_memory_reserved(device)


def reset_max_memory_cached(device=None):
    """Deprecated twin of torch.cuda.reset_max_memory_cached: resets all peaks."""
    reset_peak_memory_stats(device)


def caching_allocator_alloc(size, device=None, stream=None):
    """`size` bytes from the caching allocator on `device` for use on `stream` (default: the
    current stream); returns the device address as an int (torch.cuda.caching_allocator_alloc)."""
    from .streams import current_stream

    index = _index(device)
    if stream is None:
        stream = current_stream(index)
    if not isinstance(stream, torch.Stream):
        raise TypeError("caching_allocator_alloc: stream must be a torch.mlu.Stream or None, got "
                        f"{type(stream).__name__}")
    if stream.device_index != index:
        raise ValueError(f"caching_allocator_alloc: stream is on mlu:{stream.device_index}, not mlu:{index}")
    return _C.caching_allocator_alloc(int(size), index, stream.stream_id)


def caching_allocator_delete(mem_ptr):
    """Gives back memory from caching_allocator_alloc (torch.cuda.caching_allocator_delete)."""
    _C.caching_allocator_delete(int(mem_ptr))


def memory_snapshot():
    """torch.cuda.memory_snapshot's list of segments (device, address, total_size, allocated_size,
    active_size, stream, segment_type, blocks[{address, size, requested_size, state}])."""
    return json.loads(_C.memory_snapshot_json())


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None,
                           clear_history=False, compile_context=False, global_record_annotations=False,
                           skip_actions=None):
    """torch.cuda.memory._record_memory_history for the device: records every allocator event
    (alloc, free_requested, free_completed, segment_alloc, segment_free, oom) with the Python stack
    of the call, keeping the newest `max_entries` per device; _snapshot() returns them. enabled=None
    stops recording. stacks "python" and "all" record Python frames (C++ frames are not gathered);
    context must be "all", "alloc", "state" or None (recorded for every action in each case).
    Times in the trace are simulated host time. Recording starts afresh (earlier history dropped)."""
    if enabled not in (None, "all", "state") and not isinstance(enabled, bool):
        raise ValueError(f"enabled must be None, 'state' or 'all', got {enabled!r}")
    if context not in (None, "all", "alloc", "state"):
        raise ValueError(f"context must be None, 'state', 'alloc' or 'all', got {context!r}")
    if stacks not in ("python", "all"):
        raise ValueError(f"stacks must be 'python' or 'all', got {stacks!r}")
    if max_entries <= 0:
        raise ValueError(f"max_entries must be > 0, got {max_entries}")
    on = bool(enabled)
    if on:
        torch._C._profiler.gather_traceback(True, False, False)  # installs torch's Python unwinder
    _C.record_memory_history(on, on and context is not None, min(int(max_entries), sys.maxsize))


def _snapshot(device=None):
    """torch.cuda.memory._snapshot's dict: "segments" (memory_snapshot() with each live block's
    allocation stack as "frames"), "device_traces" (one list of events per device, oldest first)
    and "allocator_settings"; torch.cuda._memory_viz and pytorch.org/memory_viz read it."""
    traces, block_frames = _C.memory_history()
    segments = memory_snapshot()
    for seg in segments:
        seg.setdefault("requested_size", sum(b["requested_size"] for b in seg["blocks"]))
        seg.setdefault("segment_pool_id", (0, 0))
        seg.setdefault("is_expandable", False)
        seg.setdefault("frames", [])
        for b in seg["blocks"]:
            b["frames"] = block_frames.get(b["address"], []) if b["state"] == "active_allocated" else []
    return {"segments": segments, "device_traces": traces,
            "allocator_settings": {"PYTORCH_MLU_ALLOC_CONF": get_allocator_settings()}}


def _dump_snapshot(filename="dump_snapshot.pickle"):
    """Pickles _snapshot() to `filename` (torch.cuda.memory._dump_snapshot): drag it onto
    https://pytorch.org/memory_viz or read it with torch.cuda._memory_viz."""
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)


def memory_summary(device=None, abbreviated=False):
    """A table of the allocator's statistics, in torch.cuda.memory_summary's layout."""
    device = _index(device)
    stats = memory_stats(device)

    def _format_size(sz, pref_sz):
        prefixes = ["B ", "KB", "MB", "GB", "TB", "PB"]
        prefix = prefixes[0]
        for new_prefix in prefixes[1:]:
            if pref_sz < 768 * 1024:
                break
            prefix = new_prefix
            sz //= 1024
            pref_sz /= 1024
        return "{:7d} {}".format(sz, prefix)

    def _format_count(cnt, pref_cnt):
        prefixes = [" ", "K", "M"]
        prefix = prefixes[0]
        for new_prefix in prefixes[1:]:
            if pref_cnt < 750 * 1000:
                break
            prefix = new_prefix
            cnt //= 1000
            pref_cnt /= 1000
        return "{:7d} {} ".format(cnt, prefix)

    metrics = [
        ("allocated_bytes", "Allocated memory", _format_size),
        ("active_bytes", "Active memory", _format_size),
        ("reserved_bytes", "MLU reserved memory", _format_size),
        ("inactive_split_bytes", "Non-releasable memory", _format_size),
        ("allocation", "Allocations", _format_count),
        ("active", "Active allocs", _format_count),
        ("segment", "MLU reserved segments", _format_count),
        ("inactive_split", "Non-releasable allocs", _format_count),
    ]
    lines = ["=" * 75,
             " {:16} PyTorch MLU memory summary, device ID {:<17d} ".format("", device),
             "-" * 75,
             "  {:9} MLU OOMs: {:<12d} | {:6} cnrtMalloc retries: {:<8d}  ".format(
                 "", stats["num_ooms"], "", stats["num_alloc_retries"]),
             "=" * 75,
             "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    for key, name, formatter in metrics:
        lines.append("-" * 75)
        rows = [("all", name)]
        if not abbreviated:
            rows += [("large_pool", "      from large pool"), ("small_pool", "      from small pool")]
        pref = None
        for pool, label in rows:
            prefix = f"{key}.{pool}."
            values = [stats[prefix + m] for m in ("current", "peak", "allocated", "freed")]
            if pref is None:
                pref = values
            lines.append(" {:<21} | {} | {} | {} | {} ".format(
                label, *[formatter(v, p) for v, p in zip(values, pref)]))
    for key, name in (("oversize_allocations", "Oversize allocations"),
                      ("oversize_segments", "Oversize MLU segments")):
        lines.append("-" * 75)
        values = [stats[f"{key}.{m}"] for m in ("current", "peak", "allocated", "freed")]
        lines.append(" {:<21} | {} | {} | {} | {} ".format(name, *[_format_count(v, v) for v in values]))
    lines.append("=" * 75)
    return "|" + "|\n|".join(lines) + "|\n"
