"""Precision alignment: find the layer where the device's numbers start to differ from the CPU's::

    report = torch_mlu.compare(model, (x,), mode="train")   # forward + backward, three runs
    print(report)                                            # table: per layer rel error, first flagged
    report.origin("backward").name                           # e.g. "conv5.2"
    report.dump("precision.json")                            # JSON (mlusim report shows it)

The model runs three times from the same weights: on the CPU in float64 (the reference), on the
CPU in its own dtype (normally float32: the error that the dtype itself causes) and on the MLU.
Every module is hooked: the forward records each call's inputs and outputs, the backward the
gradients each call's backward produced (for its inputs and its own parameters) and the gradient
it was given (of its outputs). precision_report.py defines the errors and what "flagged" means.

Determinism. The user's model is never modified: each run gets a deep copy (same weights,
buffers, BatchNorm running statistics). ``mode`` puts the copies in "train" or "eval" mode (None:
as the model is). Random numbers cannot match across the CPU and the device (different
generators), so the float64 run checks that no module call changes the state of the CPU's
default generator and raises naming the innermost module that did (dropout, bernoulli, rand*,
...; a model drawing from a generator of its own is not seen). ``dropout="eval"`` puts every
nn.Dropout-like module in eval mode (identity) while the rest keeps ``mode``, so BatchNorm can
train while dropout is off. Functional dropout (F.dropout(training=True)) still raises: use eval
mode or disable it. (The check compares generator states rather than intercepting ops with a
TorchDispatchMode: the first run under such a mode cost 10-25 s here on 2 busy cores.)

Backward attribution without changing the forward. torch's full backward hooks wrap outputs in
a custom Function, which breaks modules followed by in-place ops (ReLU(inplace=True)). Instead,
each call notes the autograd sequence number before and after its forward: the graph nodes
created in between are the module's own. Their edges to nodes outside that range are where its
backward hands gradients out; a hook on those nodes picks the gradients that go to the module's
inputs (the input's grad_fn or, for a leaf, its AccumulateGrad) and to its own parameters. So a
tensor used by two modules gets each module's contribution, not the sum, and the backward order
is the order in which those hooks fire.

``python -m torch_mlu.compare_precision MODEL`` is the command-line form (compare_precision.py)."""

import copy
import itertools
import math
import numbers

import torch
import torch.nn as nn

from .precision_report import LayerDiff, PrecisionReport, tensor_diff

__all__ = ["compare"]

_MODES = (None, "train", "eval")
_DROPOUT = ("error", "eval")


# ---- arguments --------------------------------------------------------------------------------------

def _check_args(model, inputs, loss_fn, threshold, cpu_margin, mode, dropout):
    if isinstance(model, torch.jit.ScriptModule):
        raise TypeError("compare: TorchScript modules cannot be hooked per layer; pass the eager nn.Module "
                        "(e.g. the torchvision or transformers model before torch.jit.script/trace)")
    if not isinstance(model, nn.Module):
        raise TypeError(f"compare: model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(inputs, (torch.Tensor, tuple, list, dict)):
        raise TypeError("compare: inputs must be a Tensor, a tuple/list of positional arguments or a dict of "
                        f"keyword arguments, got {type(inputs).__name__}")
    if isinstance(inputs, dict) and not all(isinstance(k, str) for k in inputs):
        raise TypeError("compare: a dict of inputs is keyword arguments: its keys must be strings")
    if loss_fn is not None and not callable(loss_fn):
        raise TypeError(f"compare: loss_fn must be callable (outputs -> scalar tensor), got {type(loss_fn).__name__}")
    for name, value, allow_zero in (("threshold", threshold, False), ("cpu_margin", cpu_margin, True)):
        if name == "cpu_margin" and value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
                or value < 0 or (value == 0 and not allow_zero):
            bound = ">= 0" if allow_zero else "> 0"
            raise ValueError(f"compare: {name} must be a finite number {bound}, got {value!r}")
    if mode not in _MODES:
        raise ValueError(f"compare: mode must be 'train', 'eval' or None (keep the model's), got {mode!r}")
    if dropout not in _DROPOUT:
        raise ValueError(f"compare: dropout must be 'error' or 'eval', got {dropout!r}")


def _convert(obj, device, dtype):
    """`obj` (nested tuples/lists/dicts of tensors and other values) with tensors moved to `device`
    and floating ones cast to `dtype` (None: kept); requires_grad is kept, as fresh leaves."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach().to(device=device, dtype=dtype if (dtype is not None and obj.is_floating_point()) else None,
                            copy=True)
        return t.requires_grad_(obj.requires_grad)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_convert(v, device, dtype) for v in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(_convert(v, device, dtype) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _convert(v, device, dtype)) for k, v in obj.items())
    return obj


def _tensors(obj, prefix):
    """(name, tensor) of the floating-point tensors in `obj`: "output", "output[1]", "output.logits"."""
    if isinstance(obj, torch.Tensor):
        if obj.is_floating_point():
            yield prefix, obj
    elif isinstance(obj, (tuple, list)):
        for i, v in enumerate(obj):
            yield from _tensors(v, f"{prefix}[{i}]")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _tensors(v, f"{prefix}.{k}" if isinstance(k, str) and k.isidentifier() else f"{prefix}[{k!r}]")


def _call_tensors(args, kwargs):
    """The floating tensors among a call's arguments, named "input" (one positional argument),
    "input[i]" or by keyword."""
    if len(args) == 1 and not kwargs:
        yield from _tensors(args[0], "input")
    else:
        for i, a in enumerate(args):
            yield from _tensors(a, f"input[{i}]")
    for k, v in kwargs.items():
        yield from _tensors(v, k)


def _host64(t):
    """A float64 host copy (always a copy: a later in-place op must not change what was recorded)."""
    return t.detach().to("cpu", torch.float64, copy=True)


def _default_loss(outputs):
    """Sum of all floating outputs: every output element gets gradient 1."""
    parts = [t.sum() for _, t in _tensors(outputs, "output") if t.requires_grad]
    if not parts:
        raise RuntimeError("compare: no model output requires grad, so there is no backward to compare "
                           "(pass backward=False, or a loss_fn)")
    return torch.stack(parts).sum() if len(parts) > 1 else parts[0]


# ---- random ops ---------------------------------------------------------------------------------------

def _random_error(what):
    return RuntimeError(
        f"compare: {what} drew random numbers in its forward (dropout in train mode?), which cannot match between "
        "the CPU and the device. Turn the randomness off: dropout='eval' puts nn.Dropout modules in eval mode, "
        "mode='eval' the whole model; functional dropout (F.dropout(training=True)) needs p=0.")


# ---- one run ------------------------------------------------------------------------------------------

class _Run:
    """Hooks every module of `model` and records one forward (+ backward) of it. All recorded
    tensors are float64 host copies taken when the hook fires (later in-place ops cannot change them)."""

    def __init__(self, model, backward, watch_random=False):
        self.backward = backward
        # The float64 run checks that no module draws from the CPU's default generator: a module
        # whose call changed its state drew random numbers (the innermost one is named).
        self.watch_random = watch_random
        self.forward_calls = {}   # (module name, call) -> {"order", "type", "parent", "inputs", "outputs"}
        self.backward_calls = {}  # (module name, call) -> {"order": when its last gradient hook fired,
        #                                                  "grads": {name: t}, "grad_outputs": {name: t}}
        self._calls = {}          # module name -> calls so far
        self._pending = {}        # id(module) -> stack of pre-hook states (recursion, shared modules)
        self._active = []         # pre-hook states of the calls running now, outermost first
        self._fwd_order = itertools.count()
        self._bwd_order = itertools.count()
        self._handles = []
        for name, module in model.named_modules():
            self._handles.append(module.register_forward_pre_hook(self._pre_hook(name), with_kwargs=True))
            self._handles.append(module.register_forward_hook(self._post_hook(name), with_kwargs=True))

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def _pre_hook(self, name):
        def hook(module, args, kwargs):
            inputs = list(_call_tensors(args, kwargs))
            state = {"inputs": [(n, _host64(t)) for n, t in inputs],
                     # Autograd nodes created from here to the forward hook belong to this call.
                     "seq": torch._C._autograd._get_sequence_nr(),
                     # Where the gradient of each input goes: its grad_fn (as it is now, before
                     # any in-place op of this module) or, for a leaf, its AccumulateGrad.
                     "grad_targets": [(n, t.grad_fn, t.output_nr, t) for n, t in inputs if t.requires_grad]}
            state["parent"] = self._active[-1] if self._active else None
            if self.watch_random:
                state["rng"] = torch.random.get_rng_state()
            self._pending.setdefault(id(module), []).append(state)
            self._active.append(state)
        return hook

    def _post_hook(self, name):
        def hook(module, args, kwargs, output):
            state = self._pending[id(module)].pop()
            del self._active[next(i for i, st in enumerate(self._active) if st is state)]
            if self.watch_random and not torch.equal(state["rng"], torch.random.get_rng_state()):
                raise _random_error(f"module '{name or '(model)'}' ({type(module).__name__})")
            call = self._calls.get(name, 0)
            self._calls[name] = call + 1
            key = (name, call)
            state["key"] = key  # children finish first, so a parent's key is set after theirs
            parent = state["parent"]
            self.forward_calls[key] = {"order": next(self._fwd_order), "type": type(module).__name__,
                                       "parent": parent,
                                       "inputs": state["inputs"],
                                       "outputs": [(n, _host64(t)) for n, t in _tensors(output, "output")]}
            if self.backward and torch.is_grad_enabled():
                self._hook_backward(key, module, state, output)
            del state["grad_targets"]  # do not keep the inputs alive
        return hook

    def _hook_backward(self, key, module, state, output):
        record = {"order": None, "grads": {}, "grad_outputs": {}}
        first, last = state["seq"], torch._C._autograd._get_sequence_nr()
        outs = [(n, t) for n, t in _tensors(output, "output") if t.requires_grad and t.grad_fn is not None]
        # Gradient of the outputs (what this call's backward is given). A tensor hook registered now
        # stays with the output's current value even if a later module modifies it in place.
        for n, t in outs:
            t.register_hook(self._grad_output_hook(record, f"grad({n})"))

        params = {id(p): f"grad({pn})" for pn, p in module.named_parameters(recurse=False) if p.requires_grad}
        targets = state["grad_targets"]

        def wanted(node, nr):
            """The gradient name for an edge leaving this call's nodes, or None (a value computed
            before the call that is not one of its inputs, e.g. a captured mask)."""
            if type(node).__name__ == "AccumulateGrad":
                var = node.variable
                if id(var) in params:
                    return params[id(var)]
                return next((f"grad({n})" for n, _, _, t in targets if t is var), None)
            return next((f"grad({n})" for n, fn, onr, _ in targets if fn is node and onr == nr), None)

        # Walk this call's own nodes (sequence numbers in [first, last)) from its outputs; hook the
        # nodes with edges out of the range.
        # (An output made before the call, e.g. nn.Identity's, is not this call's work: not walked.)
        seen, stack = set(), [t.grad_fn for _, t in outs if first <= t.grad_fn._sequence_nr() < last]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            picks = []
            for i, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                seq = nxt._sequence_nr() if type(nxt).__name__ != "AccumulateGrad" else -1
                if first <= seq < last:
                    stack.append(nxt)
                else:
                    grad_name = wanted(nxt, nr)
                    if grad_name is not None:
                        picks.append((i, grad_name))
            if picks:
                node.register_hook(self._node_hook(record, picks))
        if outs:
            self.backward_calls[key] = record

    def _grad_output_hook(self, record, name):
        def hook(grad):
            record["grad_outputs"][name] = _host64(grad)
        return hook

    def _node_hook(self, record, picks):
        def hook(grad_inputs, grad_outputs):
            for i, name in picks:
                g = grad_inputs[i]
                if g is None:
                    continue
                g = _host64(g)
                record["grads"][name] = record["grads"][name] + g if name in record["grads"] else g
            # A call's backward has finished when its last hook fired.
            record["order"] = next(self._bwd_order)
        return hook


def _run(model, inputs, device, dtype, loss_fn, backward, seed, watch_random):
    """One forward (+ backward) of a copy of `model` on `device` in `dtype` (None: as it is);
    returns (run, {param name: grad as float64 host tensor})."""
    model = copy.deepcopy(model).to(device=device, dtype=dtype)
    args = _convert(inputs, device, dtype)
    run = _Run(model, backward, watch_random)
    torch.manual_seed(seed)
    try:
        with torch.set_grad_enabled(backward):
            out = model(**args) if isinstance(args, dict) else (
                model(args) if isinstance(args, torch.Tensor) else model(*args))
            grads = {}
            if backward:
                loss = (loss_fn or _default_loss)(out)
                if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                    raise TypeError("compare: loss_fn must return a scalar tensor, got "
                                    + (f"a tensor of shape {list(loss.shape)}" if isinstance(loss, torch.Tensor)
                                       else type(loss).__name__))
                loss.backward()
                grads = {n: _host64(p.grad) for n, p in model.named_parameters() if p.grad is not None}
    finally:
        run.remove()
    return run, grads



def _kink_check(grads, fwd_ref, fwd_dev, ref_grads, cpu_grads, dev_grads, diff):
    """Explains a flagged input gradient of an elementwise module (one input, one output of the
    same shape: ReLU, LeakyReLU, ...) by a kink at 0, when that is what happened: where the
    device's forward input is on the other side of 0 than float64's, a piecewise activation took
    the other branch and that element's gradient jumps (ReLU: 0 instead of the full output
    gradient). One such element can put the whole gradient percent off, and everything the
    backward computes from it after. If the gradient without those elements is not flagged, the
    TensorDiff records how many there were and the error without them: the model is that
    sensitive at this input, no kernel is at fault (the CPU's float32 run can cross too, at other
    inputs)."""
    ins, outs = fwd_ref["inputs"], fwd_ref["outputs"]
    if len(ins) != 1 or len(outs) != 1 or tuple(ins[0][1].shape) != tuple(outs[0][1].shape):
        return
    name, ref_in = ins[0]
    dev_in = dict(fwd_dev.get("inputs", ())).get(name)
    for g in grads:
        if not g.flagged or g.name != f"grad({name})" or dev_in is None or tuple(dev_in.shape) != tuple(ref_in.shape):
            continue
        crossed = (ref_in > 0) != (dev_in > 0)
        n = int(crossed.sum())
        ref_g, dev_g, cpu_g = ref_grads.get(g.name), dev_grads.get(g.name), cpu_grads.get(g.name)
        if n == 0 or n == crossed.numel() or ref_g is None or dev_g is None or cpu_g is None:
            continue
        keep = ~crossed
        rest = diff(g.name, ref_g[keep], cpu_g[keep], dev_g[keep])
        g.kink_elements = n
        if not rest.flagged:
            g.rel_err_without_kink = rest.rel_err
            g.note = (f"{n} element(s) with the forward input on the other side of 0 than in float64 (kink); "
                      f"rel {rest.rel_err:.2e} without them")


def _backward_order(run):
    """The calls of `run` whose backward produced gradients, in the order their backwards finished:
    a call's last gradient hook, or later if a call nested in it (a child module) finished later
    (the parent's backward is not done before its children's)."""
    children = {}
    for key, call in run.forward_calls.items():
        parent = call["parent"]
        if parent is not None:
            children.setdefault(parent["key"], []).append(key)

    finished = {}

    def finish(key):
        if key not in finished:
            own = run.backward_calls.get(key, {}).get("order")
            finished[key] = max([own if own is not None else -1] + [finish(k) for k in children.get(key, ())])
        return finished[key]

    keys = [k for k, r in run.backward_calls.items() if r["order"] is not None]
    return sorted(keys, key=finish)


def _setup_modes(model, mode, dropout):
    if mode == "train":
        model.train()
    elif mode == "eval":
        model.eval()
    if dropout == "eval":
        for m in model.modules():
            if isinstance(m, (nn.modules.dropout._DropoutNd, nn.AlphaDropout, nn.FeatureAlphaDropout)):
                m.eval()
    return model


# ---- compare --------------------------------------------------------------------------------------------

def compare(model, inputs, *, loss_fn=None, backward=True, mode=None, dropout="error", threshold=1e-5,
            cpu_margin=10.0, device=None, seed=0):
    """Runs `model` on the CPU in float64 (reference), on the CPU in its own dtype and on the MLU
    `device` (default: the current one), hooking every module, and returns a PrecisionReport:
    per layer (module call) and phase the max abs and relative error of the device and of the CPU
    against float64, their ratio, which layers are flagged and where the error starts.

    inputs: a Tensor (one argument), a tuple/list (positional arguments) or a dict (keyword
    arguments, e.g. transformers' input_ids=...); tensors may be nested and are copied to each
    run's device (floating ones cast to float64 for the reference). Outputs may be tensors or
    nested tuples/dicts/ModelOutputs of them.
    loss_fn(outputs) -> scalar tensor for the backward (default: the sum of all floating outputs).
    It receives each run's outputs (CPU float64, CPU, device); move its own tensors with
    ``.to(out.device)``. backward=False compares the forward only (under no_grad).
    mode: "train", "eval" or None (the model's own); dropout: "error" (raise if the model draws
    random numbers) or "eval" (dropout modules off, the rest in `mode`).
    threshold (> 0, default 1e-5) and cpu_margin (>= 0 or None, default 10): a tensor is flagged
    when its relative error exceeds threshold and cpu_margin times the CPU's own (see
    precision_report.py). seed: torch.manual_seed before each run."""
    from . import _device_index, cpu_fallback_counts, synchronize

    _check_args(model, inputs, loss_fn, threshold, cpu_margin, mode, dropout)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"compare: seed must be an int, got {type(seed).__name__}")
    dev = torch.device("mlu", _device_index(device))
    base = _setup_modes(copy.deepcopy(model), mode, dropout)
    params = [p for p in base.parameters()] + [b for b in base.buffers()]
    dtype = next((t.dtype for t in params if t.is_floating_point()), torch.get_default_dtype())
    base = base.to("cpu")

    ref, grads_ref = _run(base, inputs, "cpu", torch.float64, loss_fn, backward, seed, watch_random=True)
    cpu, grads_cpu = _run(base, inputs, "cpu", None, loss_fn, backward, seed, watch_random=False)
    fallback_before = cpu_fallback_counts()
    got, grads_dev = _run(base, inputs, dev, None, loss_fn, backward, seed, watch_random=False)
    synchronize(dev)
    fallback = {op: n - fallback_before.get(op, 0) for op, n in cpu_fallback_counts().items()
                if n > fallback_before.get(op, 0)}

    u = torch.finfo(dtype).eps / 2
    diff = lambda name, r, c, d: tensor_diff(name, r, c, d, threshold, cpu_margin, u)  # noqa: E731

    def tensors(ref_list, cpu_list, dev_list):
        cpu_map, dev_map = dict(cpu_list or ()), dict(dev_list or ())
        return [diff(n, r, cpu_map.get(n), dev_map.get(n)) for n, r in ref_list]

    forward = []
    for key, r in sorted(ref.forward_calls.items(), key=lambda kv: kv[1]["order"]):
        c, d = cpu.forward_calls.get(key, {}), got.forward_calls.get(key, {})
        outs = tensors(r["outputs"], c.get("outputs"), d.get("outputs"))
        if outs:
            forward.append(LayerDiff("forward", len(forward), key[0], key[1], r["type"], outs,
                                     tensors(r["inputs"], c.get("inputs"), d.get("inputs"))))

    backward_layers = []
    for key in _backward_order(ref):
        r, c, d = ref.backward_calls[key], cpu.backward_calls.get(key, {}), got.backward_calls.get(key, {})
        grads = tensors(sorted(r["grads"].items()), (c.get("grads") or {}).items(), (d.get("grads") or {}).items())
        if not grads:
            continue  # nothing computed by this call's backward (e.g. only non-differentiable inputs)
        # What this call's backward depends on: the gradient of its outputs and its forward values.
        given = tensors(sorted(r["grad_outputs"].items()), (c.get("grad_outputs") or {}).items(),
                        (d.get("grad_outputs") or {}).items())
        fr, fc, fd = ref.forward_calls[key], cpu.forward_calls.get(key, {}), got.forward_calls.get(key, {})
        for part in ("inputs", "outputs"):
            named = lambda run: [("forward " + n, t) for n, t in run.get(part, ())]  # noqa: E731
            given += tensors(named(fr), named(fc), named(fd))
        _kink_check(grads, fr, fd, r["grads"], c.get("grads") or {}, d.get("grads") or {}, diff)
        backward_layers.append(LayerDiff("backward", len(backward_layers), key[0], key[1], fr["type"], grads, given))

    parameters = [diff(n, g, grads_cpu.get(n), grads_dev.get(n)) for n, g in grads_ref.items()]
    from .sim import config_name

    settings = {"model": type(model).__name__, "device": str(dev), "config": config_name(),
                "mode": mode or ("train" if model.training else "eval"), "dropout": dropout,
                "dtype": str(dtype).replace("torch.", ""), "backward": bool(backward),
                "loss": "sum of outputs" if loss_fn is None else getattr(loss_fn, "__name__", "loss_fn"),
                "threshold": float(threshold), "cpu_margin": float(cpu_margin) if cpu_margin else 0.0, "seed": seed}
    return PrecisionReport(forward, backward_layers, parameters, settings, fallback)
