"""``torch.compile(model, backend="mlu")``: a TorchDynamo backend for the device.

Dynamo captures the model's Python into FX graphs (graph breaks run eagerly, guards and recompiles
are Dynamo's own). Each graph is compiled by what grad mode asks for:

- **Inference** (compiled under ``torch.no_grad()`` / ``torch.inference_mode()``): the graph is
  rewritten with the fusion passes of ``torch_mlu.fuse`` (conv+BN+activation, linear+activation,
  elementwise chains -> the fused kernels ``torch.ops.mlu.*``) and runs as that graph: fewer
  kernels, intermediates kept on chip.
- **Training**: the graph goes through AOTAutograd (functionalised ATen forward and backward
  graphs) and runs them with the device's eager kernels; the fused kernels have no backward, so
  training graphs are not fused yet.

``compiled_graphs()`` lists what each compiled graph became (mode, fusion matches) and
``reset_compiled_graphs()`` clears the list; ``compile_compare(model, inputs)`` measures one
inference forward eager and compiled (kernels, cycles, GDRAM bytes, simulated time). The CUDA twin is Inductor's default backend; Inductor
itself does not know the device (see torch_bridge/README.md)."""

import torch
from torch._dynamo import register_backend
from torch._dynamo.backends.common import aot_autograd

from .fusion import PATTERNS, _delta, _first_tensor, _fuse_graph, _measure, _to_device

__all__ = ["compile_compare", "compiled_graphs", "inductor_kernels", "reset_compiled_graphs"]

_graphs = []


def compiled_graphs():
    """One dict per graph compiled with backend="mlu" since the last reset: "mode" ("inference" or
    "training"), "nodes" (calls in the captured graph), "fusion_matches" ({pattern: count}, inference)."""
    return [dict(g) for g in _graphs]


def reset_compiled_graphs():
    _graphs.clear()


def _count_calls(gm):
    return sum(n.op in ("call_function", "call_method", "call_module") for n in gm.graph.nodes)


def _run_as_is(gm, example_inputs):
    from functorch.compile import make_boxed_func

    return make_boxed_func(gm.forward)


_training = aot_autograd(fw_compiler=_run_as_is, bw_compiler=_run_as_is)


@register_backend(name="mlu")
def mlu_backend(gm, example_inputs):
    nodes = _count_calls(gm)
    if torch.is_grad_enabled():
        _graphs.append({"mode": "training", "nodes": nodes})
        return _training(gm, example_inputs)
    fused = _fuse_graph(gm, PATTERNS)
    _graphs.append({"mode": "inference", "nodes": nodes, "fusion_matches": dict(fused.fusion_matches)})
    return fused.forward


def compile_compare(module, example_inputs, device=None, backend="mlu"):
    """One inference forward of `module` eager and compiled (after a warm-up call that compiles),
    on the MLU `device`, from the cycle report::

        {"eager": {"cycles", "time_ns", "dram_bytes", "op_dram_bytes", "kernel_launches", "ops"},
         "compiled": {...}, "total": {metric: {"unfused", "fused", "saved", "ratio"}},
         "graphs": what each compiled graph became, "max_abs_diff": of the first output}

    (the same figures as fusion_compare; "unfused" is eager, "fused" compiled). backend: "mlu"
    (the device's Dynamo backend; "graphs" = compiled_graphs() of this compile) or "inductor"
    (PyTorch's default backend with the device's Inductor codegen; "graphs" = the kernels it
    generated, inductor_kernels(); the FX graph cache is bypassed so that they are generated, and
    "patterns" counts the GEMM/conv epilogue fusions and the generated kernels' launches by kind)."""
    from . import _device_index

    if backend not in ("mlu", "inductor"):
        raise ValueError(f"torch_mlu.compile_compare: backend must be 'mlu' or 'inductor', got {backend!r}")
    dev = torch.device("mlu", _device_index(device))
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    inputs = tuple(_to_device(v, dev) for v in example_inputs)
    eager, out_ref = _measure(module, inputs, dev)
    if backend == "mlu":
        start = len(_graphs)
        compiled = torch.compile(module, backend="mlu")
        with torch.no_grad():
            compiled(*inputs)  # compiles
        graphs = lambda: [dict(g) for g in _graphs[start:]]  # noqa: E731
    else:
        from torch._inductor import config as inductor_config

        from .inductor_passes import epilogue_matches
        from .inductor_scheduling import kernel_summaries

        start, start_matches = len(kernel_summaries), len(epilogue_matches)
        compiled = torch.compile(module)
        with torch.no_grad(), inductor_config.patch(fx_graph_cache=False):
            compiled(*inputs)  # compiles
        graphs = lambda: [dict(k) for k in kernel_summaries[start:]]  # noqa: E731
        matches = {}
        for m in epilogue_matches[start_matches:]:
            for k, v in m.items():
                matches[k] = matches.get(k, 0) + v
    fused, out = _measure(compiled, inputs, dev)
    ref, got = _first_tensor(out_ref), _first_tensor(out)
    diff = float((got.cpu().float() - ref.cpu().float()).abs().max()) if ref is not None and ref.numel() else 0.0
    result = {"eager": eager, "compiled": fused, "total": _delta(eager, fused), "graphs": graphs(),
              "max_abs_diff": diff}
    if backend == "inductor":
        kernels = result["graphs"]
        launches = {}
        for k in kernels:
            for kind, n in k["launches"].items():
                launches[kind] = launches.get(kind, 0) + n
        # Per fusion pattern: GEMM/conv epilogues (the device pass) and Inductor's generated
        # kernels, with the device launches they make per forward.
        result["patterns"] = {**matches, "generated_kernels": len(kernels), "generated_launches": launches}
    return result


def inductor_kernels():
    """One dict per kernel Inductor generated for mlu tensors in this process (newest last):
    "name", "nodes" (Inductor buffers it computes), "origins" (their ATen ops), "removed" (buffers
    kept inside the kernel), "launches" (device kernels per call: program, reduction, eager,
    gather, scatter, copy). Graphs loaded from Inductor's FX graph cache generate none."""
    from .inductor_scheduling import kernel_summaries

    return [dict(k) for k in kernel_summaries]
