"""Inductor's Scheduling for the device: which nodes fuse into one kernel, and each kernel's code.

Fusion rule: nodes fuse (vertically, producer into consumer, or horizontally, siblings) when they
iterate the same space, i.e. equal ``(sizes, reduction_sizes)``: then every value of one is
available to the other element for element, and the group becomes one MluKernel
(torch_mlu/inductor_kernel.py). Inductor's own legality checks (dependencies, memory) run first;
templates and extern kernels (matmul, convolution, attention: libmlu's kernels through their ATen
ops) never fuse. Buffers written and read only inside a group are not allocated.

Each kernel is a Python function defined in the compiled module's header and called in the
wrapper at its place in the schedule.
"""

from torch._inductor.scheduler import BaseScheduling
from torch._inductor.utils import sympy_product
from torch._inductor.virtualized import V
from torch.utils._ordered_set import OrderedSet

from .inductor_kernel import MluKernel

__all__ = ["MluScheduling", "kernel_sources", "kernel_summaries"]

# name -> source of every kernel generated in this process (tests, debugging).
kernel_sources = {}
# One dict per generated kernel, in generation order (torch_mlu.inductor_kernels()): "name",
# "nodes" (Inductor buffers it computes), "origins" (the ATen ops they came from), "removed" (its
# buffers that stay inside the kernel: no allocation, no DRAM round trip), "launches" (device
# kernels per call by kind, MluKernel.launches()).
kernel_summaries = []


def _ranges(node):
    """The common (sizes, reduction sizes) of a (fused) scheduler node, or None when they differ."""
    seen = set()
    for n in node.get_nodes():
        if not hasattr(n, "get_ranges") or n.is_template() or n.is_extern():
            return None
        sizes, rsizes = n.get_ranges()
        simplify = V.graph.sizevars.simplify
        seen.add((tuple(simplify(s) for s in sizes), tuple(simplify(s) for s in rsizes)))
    return seen.pop() if len(seen) == 1 else None


class MluScheduling(BaseScheduling):
    _counter = 0

    def get_backend_features(self, device):
        return OrderedSet()  # no scan/sort/bucketize in kernels: Inductor keeps those as ATen ops

    def group_fn(self, sizes):
        return tuple(V.graph.sizevars.simplify(sympy_product(s)) for s in sizes)

    def can_fuse_vertical(self, node1, node2):
        r1, r2 = _ranges(node1), _ranges(node2)
        return r1 is not None and r1 == r2

    def can_fuse_horizontal(self, node1, node2):
        return self.can_fuse_vertical(node1, node2)

    def codegen_node(self, node):
        nodes = node.get_nodes()
        sizes, rsizes = _ranges(node)
        kernel = MluKernel(sizes, rsizes)
        kernel.record(nodes)
        kernel.refine_iteration_space()
        with V.set_kernel_handler(kernel):
            kernel.remove_kernel_local_buffers()
        name = f"mlu_kernel_{MluScheduling._counter}"
        MluScheduling._counter += 1
        with V.set_kernel_handler(kernel):
            source = kernel.codegen_function(name)
        kernel_sources[name] = source
        origins = sorted({str(o.target) for n in nodes for o in getattr(n.node, "origins", ()) if o.op == "call_function"})
        kernel_summaries.append({"name": name, "nodes": [n.get_name() for n in nodes], "origins": origins,
                                 "removed": sorted(kernel.removed_buffers), "launches": dict(kernel.launches)})
        wrapper = V.graph.wrapper_code
        wrapper.add_import_once("from torch_mlu.inductor_runtime import _as_tensor, _gather, _scatter, _scatter_add")
        wrapper.header.splice("\n" + source)
        with V.set_kernel_handler(kernel):
            for n in nodes:
                n.mark_run()
        V.graph.removed_buffers |= kernel.removed_buffers
        _, call_args, _, _ = kernel.args.python_argdefs()
        wrapper.writeline(f"{name}({', '.join(str(a) for a in call_args)})")
        self.free_buffers_in_scheduler()

    def codegen_sync(self):
        pass  # kernels run in order on the current queue

    def flush(self):
        pass

    def ready_to_flush(self):
        return False

    def codegen_template(self, template_node, epilogue_nodes, prologue_nodes):
        raise NotImplementedError("torch.compile on mlu: Inductor templates are not generated for the device")

    def benchmark_fused_nodes(self, nodes):
        raise NotImplementedError("torch.compile on mlu: no kernel benchmarking (fusion follows the rule above)")
