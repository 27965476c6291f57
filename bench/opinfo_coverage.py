#!/usr/bin/env python3
"""torch_mlu benchmark: operator coverage of the simulated MLU, measured with PyTorch's own OpInfo
database (torch.testing._internal.common_methods_invocations.op_db).

For every OpInfo that supports float32 (or --dtype) on the CPU, the first 4 sample inputs
(op.sample_inputs("cpu", torch.float32)) run on the CPU and on "mlu" (tensors in the input, args and
kwargs moved with .to("mlu"), recursively, keeping each view's strides and storage offset; a
device="cpu" argument of a factory op becomes "mlu"). The CPU fallback stays off, so a missing
kernel raises NotImplementedError naming the aten op. Each op lands in one class, decided by its
first sample that does not pass:
  pass             every sample's device result, moved back to the CPU, matches the CPU result
                   (torch.testing.assert_close, atol=1e-4, rtol=1.3e-4 for float32, equal_nan=True),
                   both passed through the sample's output_process_fn_grad first, as PyTorch's own
                   device-vs-CPU test (test_ops.py test_compare_cpu) does: it makes the outputs
                   that are unique only up to sign comparable (svd: |U|, U @ Vh; eigh: |V|);
  not_implemented  NotImplementedError, or "has no kernel" in the message;
  wrong            a numeric mismatch or a wrong shape / dtype / structure;
  error            any other exception (the first line of its message is kept);
  timeout          the op (all its samples) ran past the per-op wall-clock limit;
  cpu_error        the CPU reference itself raised (nothing to compare with: skipped).
Random or uninitialised outputs cannot match the CPU's values: a sample whose CPU result changes
under another seed (OpInfo's random ops, which reseed inside wrapper_set_seed, are rerun with
that reseeding off and up to 4 other seeds), and the ops that return uninitialised memory (empty,
empty_like, new_empty, ...), are compared by shape, dtype and structure only; they still count as
passed when those match, and the JSON marks them ("values_compared": false). A device run that
fails with "... to be on cpu" (tensor_split's indices, a CPU-only tensor argument that the sample
generator makes on the CPU whatever the device) is retried with only the input on the device.
float16: a sample that differs from the CPU beyond the tolerance still passes when the device's
result is no farther from the op's float64 result (same inputs, upcast, on the CPU) than the CPU's
own (PyTorch's rule for low-precision comparisons, test/test_ops.py _ref_test_helper; the CPU's
float16 kernels round intermediates that the device, as CUDA, keeps in float32); the JSON lists
those samples ("closer_than_cpu") and the summary names the ops. float32 samples take the same
rule only when the CPU's result itself fails the tolerance against the float64 result rounded to
float32 (ill-conditioned samples, where no float32 implementation matches the CPU). Outputs that CUDA returns in
float32 for float16 inputs (ACC_TYPE_OUTPUTS: layer and batch norm statistics) are rounded to the
CPU's dtype before the comparison.
sort and argsort without stable=True leave the order of equal values unspecified (torch.sort's
documentation; the CPU's tie order is its algorithm's): their indices pass when they select the
same values from the input as the CPU's (sort's values themselves compared as above).
torch.testing._internal needs the test-only module expecttest (pinned in tools/requirements/torch.txt).

--grad compares float32 gradients instead (the issue's "gradcheck-style comparison for
differentiable ops"), over the OpInfos with supports_autograd and float32 among their CPU forward
and backward dtypes, from op.sample_inputs("cpu", torch.float32, requires_grad=True). Each run of a
sample (CPU and device) takes fresh copies of the sample's tensors, views keeping their strides
(on the device: detached copies moved there), and makes each copy of a tensor that requires grad a
leaf that requires grad; runs the op; passes its outputs through output_process_fn_grad as the
forward mode does; and takes torch.autograd.grad of the floating-point outputs that require grad
with respect to those leaves (allow_unused=True), with one cotangent per output drawn from
torch.Generator().manual_seed(<sample index>) on the CPU (the same values, moved, on the device).
Each input gradient is compared as the forward results are (same float32 tolerances; a None
gradient against a tensor counts as zeros, as gradcheck treats it). The ill-conditioned-sample
rule applies with the gradients of the same sample in float64 on the CPU (inputs and cotangents
upcast). Gradients that change under another seed (random ops: dropout's mask) are compared by
shape, dtype and structure only, like random forward results. A device output that is missing,
does not require grad or has another shape is wrong. A sample without a floating-point output
that requires grad or without an input that requires grad is skipped; an op none of whose first
--samples samples is differentiable is classed no_grad, listed apart and left out of the total.
Messages name the sample and the phase that raised: "sample 0 (backward): NotImplementedError:
... aten::..._backward ..." is a missing backward kernel, "(forward)" a missing forward one.

The ops run in a worker process on the tiny preset with 1 GiB of DRAM
(torch.mlu.load_config("tiny", ["dram.capacity_bytes=1GiB"]); MLUSIM_CONFIG and MLUSIM_CONFIG_DIR
default as in tests/python/conftest.py). A SIGALRM in the worker ends an op past the limit as soon
as control is back in Python; a simulator call that does not return in time (one huge kernel) or
a crash is handled by the parent, which kills or loses the worker, records the op (timeout or
error) and starts a new worker for the next op. After an op whose error leaves the device unable
to synchronize, the worker is replaced too.

Run from the source tree after a build (the venv imports torch_mlu from the build tree):
  .venv/bin/python bench/opinfo_coverage.py [--list] [--json out.json] [--ops name1,name2]
      [--samples 4] [--limit 20] [--dtype float32|float16 | --grad] [--shard K/N] [--fail-on-wrong]
      [--readme torch_bridge/README.md]
--ops takes OpInfo names (all variants of that name) or name.variant keys (e.g. normal.in_place).
--dtype float16 runs the ops that support float16 on the CPU, compared at torch's float16
tolerances (atol 1e-5, rtol 1e-3). --shard K/N runs every N-th op starting at the K-th (0-based,
in op_db's order), so N runs side by side or one after another cover every op once; the test
suite runs shards of it (tests/torch_bridge/CMakeLists.txt). --fail-on-wrong makes the exit status
1 when an op is wrong (a device result that differs from the CPU's). --readme rewrites the block
between the markers "<!-- opinfo-unsupported:begin -->" and "<!-- opinfo-unsupported:end -->" of
that file with the summary and the ops that have no kernel (a full run only); with --grad, the
block between "<!-- opinfo-grad-unsupported:begin -->" and "<!-- opinfo-grad-unsupported:end -->"
(the markers must be there), so that the forward and the gradient lists coexist.
Prints one summary line:
  OpInfo float32, 4 samples/op: P passed, N not implemented, W wrong, E errors, T timeouts,
  C cpu-reference errors of TOTAL ops
("OpInfo float32 gradients, ..." with --grad)
and, with --list, the ops of each class with their messages and the most common missing kernels.
Without --fail-on-wrong this is a measurement: the exit status is 0 whatever the figures.
"""

import argparse
import collections
import contextlib
import json
import multiprocessing
import os
import pathlib
import re
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLASSES = ("pass", "not_implemented", "wrong", "error", "timeout", "cpu_error")
# Tolerances per dtype: the float32 figures; torch's defaults for float16.
TOLERANCES = {"float32": (1e-4, 1.3e-4), "float16": (1e-5, 1e-3)}
README_BEGIN, README_END = "<!-- opinfo-unsupported:begin -->", "<!-- opinfo-unsupported:end -->"
# --grad --readme rewrites its own block, so that the forward and the gradient lists coexist.
README_GRAD_BEGIN, README_GRAD_END = "<!-- opinfo-grad-unsupported:begin -->", "<!-- opinfo-grad-unsupported:end -->"
# Sorts whose order among equal values PyTorch leaves unspecified unless stable=True ("the order
# of equivalent elements" is not preserved): where their indices differ from the CPU's, the sample
# passes when the device's indices pick the same values (the values output is still compared).
UNSTABLE_SORTS = {"sort", "argsort"}
# Ops whose result is uninitialised memory: equal values would be luck (PyTorch's own CPU
# comparison, TestCommon.test_compare_cpu, skips them as "non-deterministic").
UNINITIALISED = {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty",
                 "new_empty_strided"}
MISSING_KERNEL = re.compile(r"\b(aten::[A-Za-z0-9_.]+)")
# Outputs that CUDA (whose semantics the device follows) returns in the accumulate type, float32,
# for float16 and bfloat16 inputs, where the CPU returns the input's dtype: native_layer_norm's mean
# and rstd (layer_norm_kernel.cu: at::toAccumulateType) and batch norm's save_mean and save_invstd
# (Normalization.cu). They are compared after rounding to the CPU's dtype.
ACC_TYPE_OUTPUTS = {"native_layer_norm": (1, 2), "native_batch_norm": (1, 2), "_native_batch_norm_legit": (1, 2),
                    "_batch_norm_with_update": (1, 2)}


# ----------------------------------------------------------------------------------------------
# Worker: imports torch, runs ops on request.
# ----------------------------------------------------------------------------------------------

class OpTimeout(BaseException):
    """Raised by SIGALRM; a BaseException so that no `except Exception` in PyTorch swallows it."""


class GradStructure(Exception):
    """--grad: the device's outputs differ from the CPU's in structure, shape or differentiability
    (no gradient to compare; the op is wrong)."""


def _first_line(exc):
    text = str(exc).strip()
    line = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {line}" if line else type(exc).__name__


def _compact(text, limit=400):
    text = "; ".join(line.strip() for line in str(text).splitlines() if line.strip())
    return text if len(text) <= limit else text[:limit] + " ..."


def _import_op_db():
    from torch.testing._internal.common_methods_invocations import op_db
    return op_db


def _op_key(op):
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


class Runner:
    def __init__(self, samples, limit, dtype_name, grad=False):
        import torch
        import torch_mlu
        self.torch = torch
        self.torch_mlu = torch_mlu
        self.samples = samples
        self.limit = limit
        self.dtype = getattr(torch, dtype_name)
        self.atol, self.rtol = TOLERANCES[dtype_name]
        self.dev = torch.device("mlu", 0)
        torch.mlu.load_config("tiny", ["dram.capacity_bytes=1GiB"])
        torch_mlu.set_cpu_fallback(False)
        self.ops = {}
        for op in _import_op_db():
            if op.supports_dtype(self.dtype, "cpu") and (not grad or (
                    op.supports_autograd and self.dtype in op.supported_backward_dtypes("cpu"))):
                self.ops[_op_key(op)] = op
        # The worker collects garbage after every op (device tensors held in reference cycles
        # would otherwise pile up in the device's memory). torch and op_db are ~430k objects that
        # live as long as the worker: frozen, a collection skips them (0.37 s of CPU per op
        # without, which was three quarters of a one-sample run's time).
        import gc
        gc.collect()
        gc.freeze()

    # --- moving arguments --------------------------------------------------------------------

    def _relocate(self, t, flat_fn):
        """`t` re-created from flat_fn(its whole storage as a flat tensor) with its own size,
        strides and offset, so that views (as_strided's partial views) keep their layout."""
        torch = self.torch
        if (t.layout != torch.strided or t.is_quantized or t.numel() == 0
                or (t.is_contiguous() and t.storage_offset() == 0
                    and t.untyped_storage().nbytes() == t.numel() * t.element_size())):
            return None
        storage = t.untyped_storage()
        flat = t.new_empty(0).set_(storage, 0, (storage.nbytes() // t.element_size(),), (1,))
        return flat_fn(flat).as_strided(t.size(), t.stride(), t.storage_offset())

    def _map(self, x, tensor_fn, device_fn=None):
        torch = self.torch
        if isinstance(x, torch.Tensor):
            return tensor_fn(x)
        if device_fn is not None and isinstance(x, torch.device):
            return device_fn(x)
        if isinstance(x, dict):
            return {k: (device_fn(v) if device_fn is not None and k == "device" and isinstance(v, str)
                        else self._map(v, tensor_fn, device_fn)) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            items = [self._map(v, tensor_fn, device_fn) for v in x]
            if isinstance(x, list):
                return items
            if hasattr(x, "_fields"):  # namedtuple
                return type(x)(*items)
            try:
                return type(x)(items)  # tuple, torch.Size, structseq
            except TypeError:
                return tuple(items)
        return x

    def to_device(self, x, tensors=True):
        """x with its tensors (tensors=False: none of them) on the device and device="cpu" as mlu."""
        torch = self.torch

        def tensor_fn(t):
            if not tensors:
                return t
            moved = self._relocate(t, lambda flat: flat.to(self.dev))
            return t.to(self.dev) if moved is None else moved

        def device_fn(d):
            return self.dev if torch.device(d).type == "cpu" else d

        return self._map(x, tensor_fn, device_fn)

    def device_args(self, original, all_tensors):
        """The sample's (input, args, kwargs) for the device run. all_tensors=False keeps the
        tensors of args and kwargs on the CPU: a few ops take CPU-only tensor arguments
        (tensor_split's indices_or_sections: "expected ... to be on cpu"), which the OpInfo
        sample generator makes on the CPU whatever the device."""
        if all_tensors:
            return self.to_device(original)
        inp, args, kwargs = original
        return (self.to_device(inp), self.to_device(args, tensors=False), self.to_device(kwargs, tensors=False))

    def clone(self, x):
        def tensor_fn(t):
            copy = self._relocate(t, lambda flat: flat.clone())
            return t.clone() if copy is None else copy

        return self._map(x, tensor_fn)

    def to_cpu(self, x):
        torch = self.torch
        if isinstance(x, torch.Tensor):
            return x.cpu()
        if isinstance(x, dict):
            return {k: self.to_cpu(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
            return [self.to_cpu(v) for v in x] if isinstance(x, list) else tuple(self.to_cpu(v) for v in x)
        return x

    # --- comparing ---------------------------------------------------------------------------

    def _meta(self, x):
        torch = self.torch
        if isinstance(x, torch.Tensor):
            return ("tensor", tuple(x.shape), str(x.dtype))
        if isinstance(x, dict):
            return {k: self._meta(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
            return [self._meta(v) for v in x]
        return type(x).__name__

    def _same(self, a, b):
        """True when a and b are exactly equal (NaNs equal): the CPU's determinism check."""
        try:
            self.torch.testing.assert_close(a, b, atol=0, rtol=0, equal_nan=True)
            return True
        except AssertionError:
            return False
        except Exception:
            try:
                return bool(a == b)
            except Exception:
                return False

    def _same_tie_order_free(self, op, original, out, ref):
        """An unstable sort (UNSTABLE_SORTS, stable not requested) whose indices select the same
        values as the CPU's (its sorted values compared as usual)."""
        torch = self.torch
        x, args, kwargs = original
        if op.name not in UNSTABLE_SORTS or kwargs.get("stable") or not isinstance(x, torch.Tensor) or x.dim() == 0:
            return False
        dim = args[0] if args else kwargs.get("dim", -1)
        try:
            if op.name == "sort":
                if self.compare(out[0], ref[0], True) is not None:
                    return False
                got, want = out[1], ref[1]
            else:
                got, want = out, ref
            return self._same(x.gather(dim, got), x.gather(dim, want))
        except Exception:
            return False

    def _as_cpu_dtypes(self, key, out, ref):
        """out with the ACC_TYPE_OUTPUTS of op `key` rounded to the CPU result's dtype."""
        torch = self.torch
        if key not in ACC_TYPE_OUTPUTS or self.dtype not in (torch.float16, torch.bfloat16):
            return out
        if not isinstance(out, (list, tuple)) or not isinstance(ref, (list, tuple)) or len(out) != len(ref):
            return out
        items = list(out)
        for i in ACC_TYPE_OUTPUTS[key]:
            o, r = items[i], ref[i]
            if isinstance(o, torch.Tensor) and isinstance(r, torch.Tensor) and o.dtype == torch.float32 \
                    and r.dtype == self.dtype:
                items[i] = o.to(r.dtype)
        return type(out)(items) if isinstance(out, list) else tuple(items)

    @staticmethod
    def _distance(torch, a, b):
        """Summed absolute difference of a and b (float64); equal infinities and NaN pairs count 0,
        a NaN against a number counts inf."""
        a, b = a.double(), b.double()
        same = (a == b) | (torch.isnan(a) & torch.isnan(b))
        d = torch.where(same, torch.zeros_like(a), (a - b).abs())
        return torch.nan_to_num(d, nan=float("inf")).sum().item()

    def closer_than_cpu(self, op, original, out, ref, process=lambda r: r):
        """A float16/bfloat16 sample whose device result differs from the CPU's beyond the
        tolerance passes when it is no farther from the op's float64 result (the same inputs,
        upcast, on the CPU) than the CPU's own result: PyTorch's rule for comparing a lower-precision
        result with another implementation (test/test_ops.py, _ref_test_helper: the reference must
        not be "farther from the precise computation" than torch's result; distance = summed
        absolute difference). The CPU's float16 kernels round intermediates to float16 where the
        device, as CUDA, keeps float32 (col2im's adds in conv_transpose, batch norm's saved
        statistics, ...): such a device result is closer to the exact one and still differs from
        the CPU's. Shapes, dtypes and every non-floating output must match exactly.
        float32 takes the rule only where the CPU's own result is outside the tolerance of the
        float64 result rounded to float32 (an ill-conditioned sample: matrix_exp of a matrix of
        norm ~27 has entries up to 9e4 and the CPU's fp32 error reaches 5e-2 there), so that no
        float32 implementation could match the CPU except by repeating its roundings."""
        torch = self.torch
        from torch.utils._pytree import tree_flatten
        if self._meta(out) != self._meta(ref):
            return False
        try:
            precise = process(self._call(op, self._map(self.clone(original), lambda t: t.double() if t.is_floating_point() else t)))
        except Exception:
            return False
        return self._closer(tree_flatten(out)[0], tree_flatten(ref)[0], tree_flatten(self.to_cpu(precise))[0])

    def _closer(self, outs, refs, precs):
        """closer_than_cpu's rule on flat lists: the device's results `outs`, the CPU's `refs` and
        the float64 results `precs` (all on the CPU)."""
        torch = self.torch
        if not len(outs) == len(refs) == len(precs):
            return False
        if self.dtype not in (torch.float16, torch.bfloat16):
            rounded = [p.to(r.dtype) if isinstance(p, torch.Tensor) and isinstance(r, torch.Tensor) else p
                       for p, r in zip(precs, refs)]
            if self.compare(refs, rounded, True) is None:
                return False  # the CPU matches the exact result: the plain comparison decides
        dev_d = cpu_d = 0.0
        for o, r, p in zip(outs, refs, precs):
            if not isinstance(o, torch.Tensor) or not o.is_floating_point():
                if not self._same(o, r):
                    return False
                continue
            if not isinstance(p, torch.Tensor) or p.shape != o.shape:
                return False
            dev_d += self._distance(torch, o, p)
            cpu_d += self._distance(torch, r, p)
        return dev_d <= cpu_d

    def compare(self, out, ref, values):
        """None when `out` (on the CPU) matches `ref`, else the mismatch in words."""
        if not values:
            got, want = self._meta(out), self._meta(ref)
            return None if got == want else f"shape/dtype/structure {got} != CPU's {want}"
        try:
            self.torch.testing.assert_close(out, ref, atol=self.atol, rtol=self.rtol, equal_nan=True)
            return None
        except AssertionError as exc:
            return _compact(exc)
        except Exception as exc:  # no comparison pair for these types: plain equality then
            try:
                if bool(out == ref):
                    return None
            except Exception:
                pass
            return f"{_first_line(exc)} (device {out!r:.120} vs CPU {ref!r:.120})"

    # --- one op ------------------------------------------------------------------------------

    def _call(self, op, args):
        inp, a, kw = args
        return op(inp, *a, **kw)

    @contextlib.contextmanager
    def _unseeded(self, op):
        """OpInfo wraps random ops in wrapper_set_seed (torch.manual_seed(42) around the call), so
        two plain runs agree; while this is active the wrapper only calls, so that the seed set
        before the call decides and a random sample shows by differing. Yields whether the op is
        one of those."""
        fn = op.op
        scope = getattr(fn, "__globals__", None)
        names = getattr(getattr(fn, "__code__", None), "co_names", ())
        if scope is None or "wrapper_set_seed" not in names or "wrapper_set_seed" not in scope:
            yield False
            return
        saved = scope["wrapper_set_seed"]
        scope["wrapper_set_seed"] = lambda f, *args, **kwargs: f(*args, **kwargs)
        try:
            yield True
        finally:
            scope["wrapper_set_seed"] = saved

    def _sync_ok(self):
        try:
            self.torch.mlu.synchronize()
            return True
        except Exception:
            return False

    def _guarded(self, body):
        """The result of body(result, where) for one op, under the per-op alarm: the outcome
        handling run() and run_grad() share. `where` (stage, sample; grad: the phase too) names the run a
        timeout interrupted; after any outcome the worker is replaced if the device cannot sync."""
        import signal

        result = {"class": "pass", "message": "", "samples": 0, "values_compared": True,
                  "restart": False}
        where = {"stage": "cpu", "grad": False, "sample": 0}

        def on_alarm(signum, frame):
            raise OpTimeout()

        signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(self.limit)
        try:
            return body(result, where)
        except OpTimeout:
            run = where["stage"] + (" " + self.phase if where["grad"] else "")
            result.update({"class": "timeout",
                           "message": f"over {self.limit} s (in the {run} run of sample {where['sample']})"})
            result["restart"] = not self._sync_ok()
            return result
        finally:
            signal.alarm(0)
            if not result["restart"]:
                result["restart"] = not self._sync_ok()

    def _first_samples(self, op, result, **kwargs):
        """The op's first --samples CPU sample inputs, or None with `result` marked cpu_error."""
        import itertools

        try:
            samples = list(itertools.islice(op.sample_inputs("cpu", self.dtype, **kwargs), self.samples))
        except Exception as exc:
            result.update({"class": "cpu_error", "message": "sample_inputs: " + _first_line(exc)})
            return None
        if not samples:
            result.update({"class": "cpu_error", "message": f"no {self.dtype} sample inputs"})
            return None
        return samples

    def _device_failure(self, result, exc, label):
        """`result` for a device run that raised: not_implemented for NotImplementedError and
        "has no kernel", otherwise error (and a worker restart if the device cannot sync)."""
        if isinstance(exc, NotImplementedError):
            result.update({"class": "not_implemented", "message": f"{label}: " + _first_line(exc)})
            return result
        cls = "not_implemented" if "has no kernel" in str(exc) else "error"
        result.update({"class": cls, "message": f"{label}: " + _first_line(exc)})
        result["restart"] = not self._sync_ok()
        return result

    def run(self, key):
        """{"class", "message", "samples", "values_compared", "restart"} for the op `key`."""
        return self._guarded(lambda result, where: self._run_forward(key, result, where))

    def _run_forward(self, key, result, where):
        torch = self.torch
        op = self.ops[key]
        samples = self._first_samples(op, result)
        if samples is None:
            return result
        for index, sample in enumerate(samples):
            original = (sample.input, sample.args, sample.kwargs)
            where.update(stage="cpu", sample=index)
            # Copies first: an op may write into its inputs (resize_, embedding's max_norm).
            cpu_args = self.clone(original)
            try:
                torch.manual_seed(0)
                ref = self._call(op, cpu_args)
                # Determinism check: the same sample under other seeds. An op that OpInfo
                # marks random (wrapper_set_seed) gets several tries, since a random result
                # can repeat by chance (dropout3d drops 1 of 5 channels: 1 in 32).
                values = op.name not in UNINITIALISED
                with self._unseeded(op) as random_op:
                    for seed in range(1, 5 if random_op else 2):
                        if not values:
                            break
                        torch.manual_seed(seed)
                        values = self._same(ref, self._call(op, self.clone(original)))
            except Exception as exc:
                result.update({"class": "cpu_error", "message": f"sample {index}: " + _first_line(exc)})
                return result
            result["values_compared"] = result["values_compared"] and values
            where["stage"] = "device"
            try:
                try:
                    torch.manual_seed(0)
                    out = self.to_cpu(self._call(op, self.device_args(original, True)))
                except RuntimeError as exc:
                    if "to be on cpu" not in str(exc):
                        raise
                    torch.manual_seed(0)
                    out = self.to_cpu(self._call(op, self.device_args(original, False)))
                torch.mlu.synchronize()
            except Exception as exc:
                return self._device_failure(result, exc, f"sample {index}")
            where["stage"] = "compare"
            # OpInfo's output_process_fn_grad on both results, as test_ops.py test_compare_cpu
            # does: linalg ops whose outputs are unique only up to sign (svd's U and V, eigh's
            # vectors) are compared through it (|U|, U @ Vh, ...).
            process = sample.output_process_fn_grad
            out, ref = process(out), process(ref)
            out = self._as_cpu_dtypes(key, out, ref)
            mismatch = self.compare(out, ref, values)
            if mismatch is not None and values and self._same_tie_order_free(op, original, out, ref):
                mismatch = None
            if mismatch is not None and values and self.closer_than_cpu(op, original, out, ref, process):
                mismatch = None
                result["closer_than_cpu"] = result.get("closer_than_cpu", []) + [index]
            if mismatch is not None:
                result.update({"class": "wrong", "message": f"sample {index}: {mismatch}"})
                return result
            result["samples"] = index + 1
        return result

    # --- gradients (--grad) ------------------------------------------------------------------

    def _paths(self, x, path, out):
        """Appends to `out` the names of x's tensors ("input", "args[1]", "kwargs['weight']"), in
        the order in which _map visits them."""
        torch = self.torch
        if isinstance(x, torch.Tensor):
            out.append(path)
        elif isinstance(x, dict):
            for k, v in x.items():
                self._paths(v, f"{path}[{k!r}]", out)
        elif isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
            for i, v in enumerate(x):
                self._paths(v, f"{path}[{i}]", out)
        return out

    def _grad_leaves(self, original, move, device_fn=None, move_args=None):
        """((input, args, kwargs), leaves, names) for one run of a sample: each tensor replaced by
        move(its detached copy) (move_args for those of args and kwargs when given), views keeping
        their strides and offset as _relocate does; the copy of a tensor that requires grad is a
        fresh leaf that requires grad, listed in `leaves` with its name in `names`."""
        names_all = []
        for part, name in zip(original, ("input", "args", "kwargs")):
            self._paths(part, name, names_all)
        names_iter = iter(names_all)
        leaves, names = [], []

        def copier(fn):
            def tensor_fn(t):
                name = next(names_iter)
                base = t.detach()
                copy = self._relocate(base, fn)
                copy = fn(base) if copy is None else copy
                if t.requires_grad:
                    copy.requires_grad_(True)
                    leaves.append(copy)
                    names.append(name)
                return copy
            return tensor_fn

        inp, args, kwargs = original
        moved = (self._map(inp, copier(move), device_fn), self._map(args, copier(move_args or move), device_fn),
                 self._map(kwargs, copier(move_args or move), device_fn))
        return moved, leaves, names

    def _flat(self, x, out):
        torch = self.torch
        if isinstance(x, dict):
            for v in x.values():
                self._flat(v, out)
        elif isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
            for v in x:
                self._flat(v, out)
        else:
            out.append(x)
        return out

    def _backward(self, op, args, leaves, process, seed=0, cotangents=None, mask=None):
        """(gradients on the CPU, mask, cotangents) of one run: op on args, its outputs through
        `process` (output_process_fn_grad), torch.autograd.grad of the floating-point outputs that
        require grad (positions `mask` in the flattened outputs; found here when None) with respect
        to `leaves` (allow_unused: None for a leaf that does not reach an output), the cotangents
        drawn from torch.Generator().manual_seed(seed) when not given (moved to each output's device
        and dtype). Gradients None when no output is differentiable or no leaf requires grad.
        Sets self.phase to "forward" or "backward" for the messages."""
        torch = self.torch
        self.phase = "forward"
        flat = self._flat(process(self._call(op, args)), [])
        if mask is None:
            mask = [i for i, o in enumerate(flat) if isinstance(o, torch.Tensor) and o.requires_grad
                    and (o.is_floating_point() or o.is_complex())]
        else:
            if len(flat) <= (max(mask) if mask else -1):
                raise GradStructure(f"{len(flat)} outputs, the CPU's has more")
            for i, c in zip(mask, cotangents or [None] * len(mask)):
                o = flat[i]
                if not isinstance(o, torch.Tensor) or not o.requires_grad:
                    raise GradStructure(f"output {i} is {type(o).__name__}"
                                        + (" that does not require grad" if isinstance(o, torch.Tensor) else "")
                                        + ", the CPU's a tensor that requires grad")
                if c is not None and o.shape != c.shape:
                    raise GradStructure(f"output {i} has shape {tuple(o.shape)}, the CPU's {tuple(c.shape)}")
        outs = [flat[i] for i in mask]
        if not outs or not leaves:
            return None, mask, cotangents
        if cotangents is None:
            gen = torch.Generator().manual_seed(seed)
            cotangents = [torch.randn(o.shape, dtype=o.dtype, generator=gen) for o in outs]
        self.phase = "backward"
        grads = torch.autograd.grad(outs, leaves, [c.to(device=o.device, dtype=o.dtype) for c, o in zip(cotangents, outs)],
                                    allow_unused=True)
        return [None if g is None else g.cpu() for g in grads], mask, cotangents

    def _grads_closer(self, op, original, process, cotangents, mask, out, ref):
        """closer_than_cpu for gradients: the same sample's gradients in float64 on the CPU (inputs
        and cotangents upcast) decide when the CPU's float32 gradients fail the tolerance."""
        torch = self.torch

        def upcast(t):
            return t.to(torch.float64) if t.is_floating_point() else t.clone()

        try:
            args, leaves, _ = self._grad_leaves(original, upcast)
            torch.manual_seed(0)
            precise = self._backward(op, args, leaves, process, cotangents=cotangents, mask=mask)[0]
        except Exception:
            return False
        if precise is None or len(precise) != len(ref):
            return False
        precise = [torch.zeros_like(r, dtype=torch.float64) if p is None and r is not None else p
                   for p, r in zip(precise, ref)]
        return self._closer(out, ref, precise)

    def run_grad(self, key):
        """run() for --grad: the op's float32 gradients on the device against the CPU's."""
        return self._guarded(lambda result, where: self._run_gradients(key, result, where))

    def _run_gradients(self, key, result, where):
        torch = self.torch
        op = self.ops[key]

        def on_cpu(t):
            return t.clone()

        def on_device(t):
            return t.to(self.dev)

        def device_fn(d):
            return self.dev if torch.device(d).type == "cpu" else d

        self.phase = "forward"
        where["grad"] = True
        samples = self._first_samples(op, result, requires_grad=True)
        if samples is None:
            return result
        for index, sample in enumerate(samples):
            original = (sample.input, sample.args, sample.kwargs)
            process = sample.output_process_fn_grad
            where.update(stage="cpu", sample=index)
            try:
                args, leaves, names = self._grad_leaves(original, on_cpu)
                torch.manual_seed(0)
                ref, mask, cotangents = self._backward(op, args, leaves, process, seed=index)
                if ref is None:
                    continue  # nothing differentiable in this sample
                # Determinism check, as run()'s: gradients of random ops (dropout's mask) differ
                # under another seed and are compared by shape only.
                values = op.name not in UNINITIALISED
                with self._unseeded(op) as random_op:
                    for seed in range(1, 5 if random_op else 2):
                        if not values:
                            break
                        again, again_leaves, _ = self._grad_leaves(original, on_cpu)
                        torch.manual_seed(seed)
                        values = self._same(ref, self._backward(op, again, again_leaves, process,
                                                                cotangents=cotangents, mask=mask)[0])
            except Exception as exc:
                result.update({"class": "cpu_error",
                               "message": f"sample {index} ({self.phase}): " + _first_line(exc)})
                return result
            result["values_compared"] = result["values_compared"] and values
            where["stage"] = "device"
            try:
                try:
                    args, leaves, _ = self._grad_leaves(original, on_device, device_fn)
                    torch.manual_seed(0)
                    out = self._backward(op, args, leaves, process, cotangents=cotangents, mask=mask)[0]
                except RuntimeError as exc:
                    if "to be on cpu" not in str(exc):
                        raise
                    args, leaves, _ = self._grad_leaves(original, on_device, device_fn, move_args=on_cpu)
                    torch.manual_seed(0)
                    out = self._backward(op, args, leaves, process, cotangents=cotangents, mask=mask)[0]
                torch.mlu.synchronize()
            except GradStructure as exc:
                result.update({"class": "wrong", "message": f"sample {index}: {exc}"})
                return result
            except Exception as exc:
                return self._device_failure(result, exc, f"sample {index} ({self.phase})")
            where["stage"] = "compare"
            # A gradient that is None on one side only (an input that one implementation does
            # not use) is compared as zeros, as gradcheck treats None.
            out = [torch.zeros_like(r) if o is None and r is not None else o for o, r in zip(out, ref)]
            ref_z = [torch.zeros_like(o) if r is None and o is not None else r for o, r in zip(out, ref)]
            mismatch = None
            for name, o, r in zip(names, out, ref_z):
                m = self.compare(o, r, values)
                if m is not None:
                    mismatch = f"grad of {name}: {m}"
                    break
            if mismatch is not None and values and self._grads_closer(op, original, process, cotangents, mask,
                                                                      out, ref_z):
                mismatch = None
                result["closer_than_cpu"] = result.get("closer_than_cpu", []) + [index]
            if mismatch is not None:
                result.update({"class": "wrong", "message": f"sample {index}: {mismatch}"})
                return result
            result["samples"] += 1
        if result["samples"] == 0:
            result.update({"class": "no_grad", "message": f"none of the first {len(samples)} samples has a "
                           "floating-point output that requires grad and an input that requires grad"})
        return result


def worker_main(conn, samples, limit, dtype_name, log_path, grad=False):
    # The worker's stdout/stderr (PyTorch warnings, a simulator's dying words) go to a log that
    # the parent reads when the worker dies.
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    import gc
    import warnings
    warnings.simplefilter("ignore")
    try:
        runner = Runner(samples, limit, dtype_name, grad)
    except BaseException as exc:
        conn.send(("failed", _first_line(exc)))
        return
    conn.send(("ready", {"ops": {k: op.name for k, op in runner.ops.items()},
                         "torch": runner.torch.__version__, "config": runner.torch.mlu.config_name()}))
    while True:
        try:
            key = conn.recv()
        except EOFError:
            return
        if key is None:
            return
        start = time.perf_counter()
        result = runner.run_grad(key) if grad else runner.run(key)
        result["seconds"] = round(time.perf_counter() - start, 3)
        gc.collect()
        conn.send(("result", result))
        if result["restart"]:
            return


# ----------------------------------------------------------------------------------------------
# Parent: hands ops to a worker, replaces it when it hangs or dies.
# ----------------------------------------------------------------------------------------------

class Worker:
    START_TIMEOUT_S = 300

    def __init__(self, samples, limit, dtype_name, log_path, grad=False):
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.log_path = log_path
        self.proc = ctx.Process(target=worker_main, args=(child, samples, limit, dtype_name, log_path, grad),
                                daemon=True)
        self.proc.start()
        child.close()
        if not self.conn.poll(self.START_TIMEOUT_S):
            self.kill()
            raise RuntimeError(f"the worker did not start within {self.START_TIMEOUT_S} s")
        kind, payload = self.conn.recv()
        if kind != "ready":
            self.kill()
            raise RuntimeError(f"the worker failed to start: {payload}")
        self.info = payload
        self.ops = payload["ops"]

    def last_log_line(self):
        try:
            lines = [ln.strip() for ln in pathlib.Path(self.log_path).read_text(errors="replace").splitlines()]
            lines = [ln for ln in lines if ln]
            return lines[-1] if lines else ""
        except OSError:
            return ""

    def kill(self):
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(10)

    def close(self):
        try:
            self.conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self.proc.join(30)
        self.kill()

    def run(self, key, hard_limit):
        """(result dict, alive) for op `key`; kills the worker past hard_limit seconds."""
        start = time.perf_counter()
        try:
            self.conn.send(key)
            ready = self.conn.poll(hard_limit)
        except (OSError, BrokenPipeError):
            ready = True  # dead: recv below raises
        if not ready:
            self.kill()
            return ({"class": "timeout", "message": f"killed after {hard_limit:.0f} s in one simulator call",
                     "samples": 0, "values_compared": True, "seconds": round(time.perf_counter() - start, 3)},
                    False)
        try:
            kind, result = self.conn.recv()
            alive = not result.pop("restart", False)
            if not alive:
                self.proc.join(30)
                self.kill()
            return result, alive
        except (EOFError, OSError):
            self.proc.join(10)
            code = self.proc.exitcode
            how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
            last = self.last_log_line()
            return ({"class": "error", "message": f"worker process died ({how})" + (f": {last}" if last else ""),
                     "samples": 0, "values_compared": True, "seconds": round(time.perf_counter() - start, 3)},
                    False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="print the ops of each class")
    ap.add_argument("--json", metavar="PATH", help="write every op's class and message to PATH")
    ap.add_argument("--ops", help="comma-separated OpInfo names or name.variant keys (default: all)")
    ap.add_argument("--samples", type=int, default=4, help="sample inputs per op (default 4)")
    ap.add_argument("--limit", type=int, default=20, help="wall-clock seconds per op (default 20)")
    ap.add_argument("--grace", type=int, default=100,
                    help="seconds past --limit before a worker stuck in one simulator call is killed (default 100)")
    ap.add_argument("--progress", action="store_true", help="print each op's class as it finishes (stderr)")
    ap.add_argument("--dtype", choices=sorted(TOLERANCES), default="float32", help="sample dtype (default float32)")
    ap.add_argument("--grad", action="store_true",
                    help="compare float32 gradients (torch.autograd.grad) instead of forward results")
    ap.add_argument("--shard", metavar="K/N", help="run every N-th op starting at the K-th (0 <= K < N)")
    ap.add_argument("--fail-on-wrong", action="store_true", help="exit status 1 when an op is wrong")
    ap.add_argument("--readme", metavar="PATH",
                    help="rewrite PATH's block between the opinfo-unsupported markers with the ops that have no kernel")
    args = ap.parse_args()
    if args.samples < 1 or args.limit < 1 or args.grace < 1:
        ap.error("--samples, --limit and --grace must be >= 1")
    shard = None
    if args.shard:
        try:
            k, n = (int(v) for v in args.shard.split("/"))
        except ValueError:
            ap.error(f"--shard takes K/N with integers K and N, got {args.shard!r}")
        if not 0 <= k < n:
            ap.error(f"--shard {args.shard}: expected 0 <= K < N")
        shard = (k, n)
    if args.readme and (args.shard or args.ops):
        ap.error("--readme needs a full run (no --shard, no --ops)")
    if args.grad and args.dtype != "float32":
        ap.error(f"--grad compares float32 gradients only (not --dtype {args.dtype})")

    os.environ.setdefault("MLUSIM_CONFIG", "tiny")
    os.environ.setdefault("MLUSIM_CONFIG_DIR", str(ROOT / "configs"))
    os.environ.setdefault("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1")
    os.environ.pop("TORCH_MLU_CPU_FALLBACK", None)

    import tempfile
    log_dir = tempfile.mkdtemp(prefix="opinfo_coverage.")
    log_path = os.path.join(log_dir, "worker.log")
    started = time.perf_counter()
    worker = Worker(args.samples, args.limit, args.dtype, log_path, args.grad)
    all_ops = worker.ops  # key -> OpInfo name
    worker_info = worker.info
    if args.ops:
        wanted = [w.strip() for w in args.ops.split(",") if w.strip()]
        keys = [k for k, name in all_ops.items() if k in wanted or name in wanted]
        unknown = [w for w in wanted if w not in all_ops and w not in all_ops.values()]
        if unknown:
            what = " or without float32 autograd" if args.grad else ""
            print(f"not in op_db or not {args.dtype} on the CPU{what}: {', '.join(unknown)}", file=sys.stderr)
    else:
        keys = list(all_ops)
    if shard:
        keys = keys[shard[0]::shard[1]]

    results = {}
    hard_limit = args.limit + args.grace
    for n, key in enumerate(keys, 1):
        if worker is None:
            worker = Worker(args.samples, args.limit, args.dtype, log_path, args.grad)
        result, alive = worker.run(key, hard_limit)
        results[key] = result
        if not alive:
            worker = None
        if args.progress:
            print(f"[{n}/{len(keys)}] {key}: {result['class']} ({result['seconds']:.1f} s) {result['message']}",
                  file=sys.stderr, flush=True)
        elif n % 50 == 0:
            print(f"[{n}/{len(keys)}] {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    if worker is not None:
        worker.close()
    elapsed = time.perf_counter() - started

    counts = collections.Counter(r["class"] for r in results.values())
    # --grad: ops none of whose samples has anything to differentiate are left out of the total.
    no_grad = sorted(k for k, r in results.items() if r["class"] == "no_grad")
    total = len(results) - len(no_grad)
    missing = collections.Counter()
    for r in results.values():
        if r["class"] == "not_implemented":
            m = MISSING_KERNEL.search(r["message"])
            missing[m.group(1) if m else r["message"]] += 1
    unvalued = sorted(k for k, r in results.items() if r["class"] == "pass" and not r["values_compared"])
    scope = f" shard {args.shard}" if args.shard else ""
    mode = " gradients" if args.grad else ""
    summary = (f"OpInfo {args.dtype}{mode}{scope}, {args.samples} samples/op: {counts['pass']} passed, "
               f"{counts['not_implemented']} not implemented, {counts['wrong']} wrong, {counts['error']} errors, "
               f"{counts['timeout']} timeouts, {counts['cpu_error']} cpu-reference errors of {total} ops")

    if args.list:
        titles = {"pass": "passed", "not_implemented": "not implemented", "wrong": "wrong", "error": "errors",
                  "timeout": "timeouts", "cpu_error": "cpu-reference errors"}
        for cls in CLASSES:
            names = sorted(k for k, r in results.items() if r["class"] == cls)
            print(f"== {titles[cls]} ({len(names)})")
            for k in names:
                msg = results[k]["message"].split("; set TORCH_MLU_CPU_FALLBACK")[0]
                if cls == "pass":
                    msg = "" if results[k]["values_compared"] else "(random or uninitialised samples: shape/dtype only)"
                print(f"  {k}" + (f": {msg}" if msg else ""))
        if args.grad:
            print(f"== no differentiable sample, left out of the total ({len(no_grad)})")
            for k in no_grad:
                print(f"  {k}")
        print(f"== most common missing kernels ({len(missing)} distinct)")
        for name, count in missing.most_common(20):
            print(f"  {count:4d}  {name}")
    if unvalued:
        print(f"({len(unvalued)} of the passed ops have random or uninitialised results and were compared by "
              f"shape/dtype only: {', '.join(unvalued)})")
    closer = sorted(k for k, r in results.items() if r["class"] == "pass" and r.get("closer_than_cpu"))
    if closer:
        print(f"({len(closer)} of the passed ops differ from the CPU beyond the tolerance in some sample and are "
              f"closer to the float64 result than the CPU's: {', '.join(closer)})")
    print(f"run time {elapsed:.0f} s")
    print(summary)

    if args.json:
        atol, rtol = TOLERANCES[args.dtype]
        report = {"summary": summary, "counts": {cls: counts[cls] for cls in CLASSES}, "total": total,
                  "mode": "grad" if args.grad else "forward", "no_grad": no_grad, "dtype": args.dtype, "shard": args.shard,
                  "samples_per_op": args.samples, "limit_s": args.limit, "atol": atol, "rtol": rtol,
                  "torch": worker_info["torch"], "config": worker_info["config"], "run_time_s": round(elapsed, 1),
                  "missing_kernels": dict(missing.most_common()), "ops": results}
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    if args.readme:
        write_readme(pathlib.Path(args.readme), summary, results, args.grad)
    if args.fail_on_wrong and counts["wrong"]:
        wrong = sorted(k for k, r in results.items() if r["class"] == "wrong")
        print(f"FAILED: {len(wrong)} ops give results that differ from the CPU's: {', '.join(wrong)}")
        return 1
    return 0


def write_readme(path, summary, results, grad=False):
    """Replaces the block between README_BEGIN and README_END (--grad: README_GRAD_BEGIN and
    README_GRAD_END) in `path` with the summary, the not-implemented ops (each with the first
    missing kernel; --grad: and whether the forward or the backward misses it) and the ops that
    fail otherwise."""
    begin_marker, end_marker = (README_GRAD_BEGIN, README_GRAD_END) if grad else (README_BEGIN, README_END)
    text = path.read_text()
    if begin_marker not in text or end_marker not in text:
        raise SystemExit(f"{path}: no {begin_marker} ... {end_marker} block to rewrite")
    command = "bench/opinfo_coverage.py --grad --readme" if grad else "bench/opinfo_coverage.py --readme"
    lines = [begin_marker, "", f"`{summary}` (generated by `{command}`).", ""]
    missing = sorted(k for k, r in results.items() if r["class"] == "not_implemented")
    what = "a device kernel for their forward or backward" if grad else "a device kernel"
    lines.append(f"Ops without {what} ({len(missing)}; the op and the first missing ATen kernel or reason):")
    lines.append("")
    for key in missing:
        msg = results[key]["message"].split("; set TORCH_MLU_CPU_FALLBACK")[0]
        msg = msg.split(" This could be because the operator doesn't exist")[0]  # the dispatcher's own words
        m = MISSING_KERNEL.search(msg)
        phase = re.match(r"^sample \d+ \((\w+)\)", msg)
        why = (m.group(1) if m and "has no kernel" in msg
               else re.sub(r"^sample \d+(?: \(\w+\))?: NotImplementedError: ", "", msg))
        lines.append(f"- `{key}`: {why}" + (f" ({phase.group(1)})" if grad and phase else ""))
    failing = sorted(k for k, r in results.items() if r["class"] in ("error", "timeout"))
    if failing:
        lines += ["", f"Ops that fail with another error or time out ({len(failing)}; not counted as passed):", ""]
        sample_prefix = re.compile(r"^sample \d+(?: \(\w+\))?: ")
        lines += [f"- `{key}`: " + sample_prefix.sub("", results[key]["message"]) for key in failing]
    lines += ["", end_marker]
    begin, end = text.index(begin_marker), text.index(end_marker) + len(end_marker)
    path.write_text(text[:begin] + "\n".join(lines) + text[end:])


if __name__ == "__main__":
    sys.exit(main())
