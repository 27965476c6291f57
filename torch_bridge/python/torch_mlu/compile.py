"""``torch.compile(model, backend="mlu")``: a TorchDynamo backend for the device.

Dynamo captures the model's Python into FX graphs (graph breaks run eagerly, guards and recompiles
are Dynamo's own). Each graph is compiled by what grad mode asks for:

- **Inference** (compiled under ``torch.no_grad()`` / ``torch.inference_mode()``): the graph is
  rewritten with the fusion passes of ``torch_mlu.fuse`` (conv+BN+activation, linear+activation,
  elementwise chains -> the fused kernels ``torch.ops.mlu.*``), after residual connections
  ``linear(x) + r`` went into the GEMM's epilogue (``mlu::linear_residual``,
  fusion.fuse_residual_linears) and LLaMA's RMSNorm into one kernel (``mlu::rms_norm``,
  fusion.fuse_rms_norms), and runs as that graph: fewer kernels, intermediates kept on chip.
- **Training**: the graph goes through AOTAutograd (functionalised ATen forward and backward
  graphs) and runs them with the device's eager kernels; the fused kernels have no backward, so
  training graphs are not fused yet.

``compiled_graphs()`` lists what each compiled graph became (mode, fusion matches) and
``reset_compiled_graphs()`` clears the list; ``compile_compare(model, inputs)`` measures one
inference forward eager and compiled (kernels, cycles, DRAM bytes, simulated time). The CUDA twin is Inductor's default backend; Inductor
itself does not know the device (see torch_bridge/README.md)."""

import torch
from torch._dynamo import register_backend
from torch._dynamo.backends.common import aot_autograd

from .fusion import (PATTERNS, _delta, _first_tensor, _fuse_graph, _measure, _to_device, fuse_residual_linears,
                     fuse_rms_norms, fuse_shared_input_linears)

__all__ = ["compile_compare", "compile_for_report", "compiled_graphs", "inductor_kernels", "reset_compiled_graphs"]

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
    # Before the elementwise groups could take their adds and multiplies:
    residual, rms = fuse_residual_linears(gm, []), fuse_rms_norms(gm, [])
    grouped = fuse_shared_input_linears(gm, [])  # the linears no epilogue took
    fused = _fuse_graph(gm, PATTERNS)
    _graphs.append({"mode": "inference", "nodes": nodes,
                    "fusion_matches": {**fused.fusion_matches, "linear_residual": residual, "rms_norm": rms,
                                       "grouped_linear": grouped}})
    return fused.forward


def compile_for_report(module, backend):
    """``torch.compile(module)`` with `backend` ("mlu" or "inductor"), plus a function that, after
    the compiled module ran, returns what this compile produced: (graphs, patterns). graphs: the
    new compiled_graphs() entries (backend "mlu") or the new inductor_kernels() entries (Inductor);
    patterns: None for backend "mlu" (its graphs carry their fusion matches), for Inductor the GEMM/
    conv epilogue fusions of the device pass ({pattern: count}) plus "generated_kernels" and
    "generated_launches" ({launch kind: device launches per call}). Inductor's FX graph cache is
    bypassed while the returned module compiles, so that its kernels are generated and listed."""
    if backend not in ("mlu", "inductor"):
        raise ValueError(f"torch_mlu: backend must be 'mlu' or 'inductor', got {backend!r}")
    if backend == "mlu":
        start = len(_graphs)
        return torch.compile(module, backend="mlu"), lambda: ([dict(g) for g in _graphs[start:]], None)

    from .inductor_passes import epilogue_matches
    from .inductor_scheduling import kernel_summaries

    start, start_matches = len(kernel_summaries), len(epilogue_matches)
    compiled = torch.compile(module, options={"fx_graph_cache": False})

    def collect():
        kernels = [dict(k) for k in kernel_summaries[start:]]
        patterns, launches = {}, {}
        for m in epilogue_matches[start_matches:]:
            for k, v in m.items():
                patterns[k] = patterns.get(k, 0) + v
        for k in kernels:
            for kind, n in k["launches"].items():
                launches[kind] = launches.get(kind, 0) + n
        return kernels, {**patterns, "generated_kernels": len(kernels), "generated_launches": launches}

    return compiled, collect


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

    compiled, collect = compile_for_report(module, backend)  # lazy: compiles on its first call
    dev = torch.device("mlu", _device_index(device))
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    inputs = tuple(_to_device(v, dev) for v in example_inputs)
    eager, out_ref = _measure(module, inputs, dev)
    with torch.no_grad():
        compiled(*inputs)  # compiles
    fused, out = _measure(compiled, inputs, dev)
    ref, got = _first_tensor(out_ref), _first_tensor(out)
    diff = float((got.cpu().float() - ref.cpu().float()).abs().max()) if ref is not None and ref.numel() else 0.0
    graphs, patterns = collect()
    result = {"eager": eager, "compiled": fused, "total": _delta(eager, fused), "graphs": graphs,
              "max_abs_diff": diff}
    if patterns is not None:
        result["patterns"] = patterns
    return result


def inductor_kernels():
    """One dict per kernel Inductor generated for mlu tensors in this process (newest last):
    "name", "nodes" (Inductor buffers it computes), "origins" (their ATen ops), "removed" (buffers
    kept inside the kernel), "launches" (device kernels per call: program, reduction, eager,
    gather, scatter, copy). Graphs loaded from Inductor's FX graph cache generate none."""
    from .inductor_scheduling import kernel_summaries

    return [dict(k) for k in kernel_summaries]
