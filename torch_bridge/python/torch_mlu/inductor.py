"""``torch.compile(model)`` with Inductor, PyTorch's default backend, on mlu tensors.

Registers the device with Inductor the way an out-of-tree device does (PyTorch's
test_extension_backend and OpenReg show the hooks):

- a Dynamo ``DeviceInterface`` for "mlu" (devices, streams, events, synchronize: torch.mlu's);
- ``DeviceOpOverrides`` (what the generated wrapper writes to set the device, guard it, sync);
- ``register_backend_for_device("mlu", MluScheduling, PythonWrapperCodegen)``: Inductor's
  lowering, decompositions, fusion decisions and memory planning are its own; the Scheduling
  (torch_mlu/inductor_scheduling.py) turns each fused group into a kernel of libmlu launches
  (torch_mlu/inductor_kernel.py): pointwise chains as one elementwise-program kernel, reductions
  on the device's reduction kernels, matmul/convolution/attention through their ATen ops (extern
  kernels) on libmlu's GEMM/conv kernels. Triton is never involved; nothing runs on the CPU.

``register_on_first_compile()`` runs on ``import torch_mlu``: it costs nothing then (Inductor's
modules take ~1.5 s to load) and runs ``register()`` the moment Inductor's compile_fx module is
first imported, i.e. when the first torch.compile compiles, before AOTAutograd decomposes. The CUDA twin is Inductor's Triton backend; ``backend="mlu"``
(torch_mlu/compile.py) is the device's own Dynamo backend with libmlu's hand-fused kernels.
"""

import importlib.abc
import importlib.util
import sys

import torch

__all__ = ["register", "register_on_first_compile"]

_registered = False


def _interface():
    from torch._dynamo.device_interface import DeviceInterface  # noqa: PLC0415

    class MluInterface(DeviceInterface):
        device = torch.mlu.device
        Event = torch.mlu.Event
        Stream = torch.mlu.Stream

        class Worker:
            @staticmethod
            def set_device(device):
                torch.mlu.set_device(device)

            @staticmethod
            def current_device():
                return torch.mlu.current_device()

            @staticmethod
            def get_device_properties(device=None):
                return torch.mlu.get_device_properties(device)

        current_device = staticmethod(torch.mlu.current_device)
        set_device = staticmethod(torch.mlu.set_device)
        device_count = staticmethod(torch.mlu.device_count)
        stream = staticmethod(torch.mlu.stream)
        current_stream = staticmethod(torch.mlu.current_stream)
        set_stream = staticmethod(torch.mlu.set_stream)
        synchronize = staticmethod(torch.mlu.synchronize)
        get_device_properties = staticmethod(torch.mlu.get_device_properties)
        memory_allocated = staticmethod(torch.mlu.memory_allocated)
        is_bf16_supported = staticmethod(torch.mlu.is_bf16_supported)

        @staticmethod
        def get_raw_stream(device_idx):
            from .inductor_runtime import get_raw_stream  # noqa: PLC0415

            return get_raw_stream(device_idx)

        @staticmethod
        def exchange_device(device):
            previous = torch.mlu.current_device()
            torch.mlu.set_device(device)
            return previous

        @staticmethod
        def maybe_exchange_device(device):
            return MluInterface.exchange_device(device)

        @staticmethod
        def is_available():
            return torch.mlu.is_available()

        @staticmethod
        def get_compute_capability(device=None):
            major, minor = torch.mlu.get_device_capability(device)
            return major * 10 + minor

        @staticmethod
        def is_triton_capable(device=None):
            return False

    return MluInterface


def _op_overrides():
    from torch._inductor.codegen.common import DeviceOpOverrides  # noqa: PLC0415

    class MluDeviceOpOverrides(DeviceOpOverrides):
        def import_get_raw_stream_as(self, name):
            return f"from torch_mlu.inductor_runtime import get_raw_stream as {name}"

        def set_device(self, device_idx):
            return f"torch.mlu.set_device({device_idx})"

        def synchronize(self):
            return "torch.mlu.synchronize()"

        def device_guard(self, device_idx):
            return f"torch.mlu.device({device_idx})"

    return MluDeviceOpOverrides()


def _device_pass():
    """The device's post-grad pass (Inductor runs it on every graph that touches mlu): 0-dim CPU
    tensors read by mlu ops onto the device (inductor_passes.place_cpu_scalars), then GEMM and
    convolution epilogues onto libmlu's fused kernels (inductor_passes.fuse_epilogues). Its uuid()
    is a hash of the device codegen's source: Inductor's FX graph cache keys on it, so a cached
    compiled graph is never reused across codegen changes."""
    import hashlib  # noqa: PLC0415
    import pathlib  # noqa: PLC0415

    from torch._inductor.custom_graph_pass import CustomGraphModulePass  # noqa: PLC0415

    here = pathlib.Path(__file__).parent
    digest = hashlib.sha256()
    for name in ("inductor.py", "inductor_kernel.py", "inductor_passes.py", "inductor_scheduling.py",
                 "inductor_runtime.py"):
        digest.update((here / name).read_bytes())

    from .inductor_passes import fuse_epilogues, place_cpu_scalars  # noqa: PLC0415

    class DevicePass(CustomGraphModulePass):
        def __call__(self, gm):
            place_cpu_scalars(gm)
            fuse_epilogues(gm)

        def uuid(self):
            return digest.hexdigest()

    return DevicePass()


# Ops libmlu runs as one fused kernel that beats Inductor's decomposition into reductions and
# elementwise programs (softmax: 1 kernel instead of amax + program + sum + program; layer_norm
# likewise; gelu's erf has no program op). On mlu tensors Inductor keeps them whole (its
# decomposition returns NotImplemented, as Inductor does for MTIA's layer_norm) and calls the ATen
# op as an extern kernel; on every other device the decomposition is unchanged.
# Inference batch norm stays whole too, for the epilogue pass (inductor_passes.py) to fold it into
# the convolution before it.
# embedding_dense_backward likewise: libmlu adds whole rows (one kernel), where the decomposition's
# element-wise scatter-add was measured at 1.4 M cycles for a GPT-2 step's two (eager: a few
# thousand).
_KEEP_WHOLE = ("_softmax.default", "_log_softmax.default", "_softmax_backward_data.default",
               "_log_softmax_backward_data.default", "native_layer_norm.default",
               "native_layer_norm_backward.default", "gelu.default", "gelu_backward.default",
               "_native_batch_norm_legit_no_training.default", "embedding_dense_backward.default",
               "max_pool2d_with_indices.default")

# Ops Inductor lowers itself that the device runs better whole: the embedding lookup is one
# row-gather kernel on the device, where Inductor's indirect load becomes index arithmetic plus an
# element gather; pooling windows are one libmlu pooling kernel, where Inductor's window loads
# become a clamped gather per tap (measured on resnet18's max pool at 112x112: 120 k cycles for
# 4 gathers vs 9 k for the device kernel).
_EXTERN_ON_DEVICE = ("embedding.default", "max_pool2d_with_indices.default",
                     "max_pool2d_with_indices_backward.default", "avg_pool2d.default",
                     "avg_pool2d_backward.default")


def _aten_op(name):
    """torch.ops.aten's OpOverload for "packet.overload"."""
    packet, overload = name.split(".")
    return getattr(getattr(torch.ops.aten, packet), overload)


def _on_device(values):
    """Whether the first Inductor IR value among `values` lives on mlu (lowerings see IR nodes)."""
    first = next((v for v in values if hasattr(v, "get_device")), None)
    device = first.get_device() if first is not None else None
    return device is not None and device.type == "mlu"


def _lower_on_device(original, on_device, is_device):
    """Puts a lowering in the place of `original` (under every op key it serves) that runs
    on_device(*args, **kwargs) where is_device(args, kwargs) says the op is on mlu and `original`
    elsewhere. Idempotent: an already wrapped lowering is left alone."""
    from torch._inductor import lowering  # noqa: PLC0415

    if original is None or getattr(original, "_mlu_aware", False):
        return

    def lower(*args, **kwargs):
        if is_device(args, kwargs):
            return on_device(*args, **kwargs)
        return original(*args, **kwargs)

    lower._mlu_aware = True
    for key, fn in list(lowering.lowerings.items()):
        if fn is original:
            lowering.lowerings[key] = lower


def _keep_whole_on_device():
    from torch._inductor import decomposition  # noqa: PLC0415
    from torch._inductor.lowering import lowerings, make_fallback  # noqa: PLC0415

    for op in map(_aten_op, _KEEP_WHOLE):
        original = decomposition.decompositions.get(op)
        if original is None or getattr(original, "_mlu_keeps_whole", False):
            continue

        def decomp(*args, _original=original, **kwargs):
            first = next((a for a in args if isinstance(a, torch.Tensor)), None)
            if first is not None and first.device.type == "mlu":
                return NotImplemented
            return _original(*args, **kwargs)

        decomp._mlu_keeps_whole = True
        decomposition.decompositions[op] = decomp
        if op not in lowerings:  # only reached on mlu: elsewhere the decomposition ran first
            make_fallback(op, warn=False, override_decomp=True)


def _extern_on_device():
    """On mlu, the ops of _EXTERN_ON_DEVICE run as their ATen op (an extern kernel); elsewhere
    Inductor's own lowering is unchanged."""
    from torch._inductor import lowering  # noqa: PLC0415

    for op in map(_aten_op, _EXTERN_ON_DEVICE):
        _lower_on_device(lowering.lowerings.get(op), lowering.fallback_handler(op, add_to_fallback_set=False),
                         lambda args, kwargs: _on_device(args))


def _concat_kernels_on_device():
    """On mlu, torch.cat lowers to Inductor's ConcatKernel (each input computed or copied into its
    slice of the output: views), as on the CPU, never to a pointwise cat: that one reads every
    input under a mask at every output point, which the device can only do with clamped gathers
    (measured on LLaMA's rotate_half: 4 gathers, 24 k cycles, where eager's cat is 2.8 k)."""
    from torch._inductor import config, lowering  # noqa: PLC0415

    original = lowering.lowerings[torch.ops.aten.cat.default]

    def cat(inputs, dim=0):
        with config.patch(max_pointwise_cat_inputs=0, max_complex_pointwise_cat_inputs=0, force_pointwise_cat=False):
            return original(inputs, dim)

    _lower_on_device(original, cat, lambda args, kwargs: _on_device(args[0] if args else kwargs["inputs"]))


def _no_layout_opt_on_device():
    """Inductor's layout optimization turns convolution operands channels_last (a cuDNN/oneDNN
    win). On mlu it is off: libmlu's convolution takes NCHW directly and would pay layout-move
    kernels, and the device returns channels_last outputs for channels_last operands where
    FakeTensor's model of a PrivateUse1 ("Overrideable") convolution says contiguous, so the
    compiled graph's stride checks would fail."""
    from torch._inductor.graph import GraphLowering  # noqa: PLC0415

    original = GraphLowering.decide_layout_opt
    if getattr(original, "_mlu_aware", False):
        return

    def decide_layout_opt(gm, *, is_inference):
        for node in gm.graph.nodes:
            val = node.meta.get("val")
            if isinstance(val, torch.Tensor) and val.device.type == "mlu":
                return False
        return original(gm, is_inference=is_inference)

    decide_layout_opt._mlu_aware = True
    GraphLowering.decide_layout_opt = staticmethod(decide_layout_opt)


def _device_seeds():
    """Inductor's random ops read per-graph seeds from inductor_seeds(), an int64 randint over the
    full 64-bit range. The device computes integers in int32 (no such range), and its kernels draw
    from the device generator anyway (inductor_kernel.py: rand/randn), so on mlu the seeds are a
    zero-filled buffer Inductor can index; elsewhere the lowering is unchanged."""
    from torch._inductor import inductor_prims, lowering  # noqa: PLC0415
    from torch._inductor.utils import decode_device  # noqa: PLC0415

    def seeds(count, device):
        buffer = lowering.full([count], 0, dtype=torch.int64, device=decode_device(device))
        buffer.realize()  # a named buffer: inductor_lookup_seed loads from it by name
        return buffer

    def on_mlu(args, kwargs):
        device = args[1] if len(args) > 1 else kwargs["device"]
        return decode_device(device).type == "mlu"

    _lower_on_device(lowering.lowerings[inductor_prims.seeds], seeds, on_mlu)


def _attention_patterns_on_device():
    """Inductor's attention pass (fx_passes/fuse_attention.py: matmul, scale, mask, softmax, matmul
    -> scaled_dot_product_attention, which on mlu is the fused attention kernel) on mlu graphs. Its
    precompiled patterns are traced with softmax decomposed; on mlu softmax stays whole
    (_KEEP_WHOLE), so they never match there. The same patterns traced on mlu (the inference forms,
    fp32; training graphs are not rewritten) join the same pass the first time a graph on mlu
    has a softmax: tracing them takes several seconds, once per process, and only processes
    that compile attention-like graphs pay it."""
    from torch._inductor import compile_fx  # noqa: PLC0415
    from torch._inductor.pattern_matcher import init_once_fakemode, register_replacement  # noqa: PLC0415

    original = compile_fx.joint_graph_passes
    if getattr(original, "_mlu_aware", False):
        return

    @init_once_fakemode
    def register_patterns():
        from torch._inductor.fx_passes.fuse_attention import _get_sfdp_patterns  # noqa: PLC0415

        for key, kwargs in _get_sfdp_patterns(torch.device("mlu")):
            if key.endswith("_inference") and "_half" not in key:
                register_replacement(**kwargs)

    softmax = (torch.ops.aten._softmax.default, torch.ops.aten.softmax.int)

    def joint_graph_passes(graph, input_device=None, *args, **kwargs):
        if input_device is not None and torch.device(input_device).type == "mlu" and any(
                n.target in softmax for n in graph.graph.nodes):
            register_patterns()
        return original(graph, input_device, *args, **kwargs)

    joint_graph_passes._mlu_aware = True
    compile_fx.joint_graph_passes = joint_graph_passes


def register():
    """Registers "mlu" with Dynamo's device interfaces and Inductor's codegen (idempotent)."""
    global _registered
    if _registered:
        return
    from torch._dynamo.device_interface import register_interface_for_device  # noqa: PLC0415
    from torch._inductor.codegen.common import (  # noqa: PLC0415
        register_backend_for_device,
        register_device_op_overrides,
    )
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen  # noqa: PLC0415

    from .inductor_scheduling import MluScheduling  # noqa: PLC0415

    register_interface_for_device("mlu", _interface())
    for i in range(torch.mlu.device_count()):
        register_interface_for_device(f"mlu:{i}", _interface())
    register_device_op_overrides("mlu", _op_overrides())
    _keep_whole_on_device()
    from .inductor_passes import register_fake_kernels  # noqa: PLC0415

    register_fake_kernels()
    _no_layout_opt_on_device()
    _device_seeds()
    _extern_on_device()
    _concat_kernels_on_device()
    _attention_patterns_on_device()
    register_backend_for_device("mlu", MluScheduling, PythonWrapperCodegen,
                                device_custom_pass=_device_pass())
    _registered = True


class _RegisterAfterImport(importlib.abc.MetaPathFinder):
    """Finds torch._inductor.compile_fx with the other finders and runs register() once its module
    has executed (a post-import hook: Python has none built in)."""

    target = "torch._inductor.compile_fx"

    def find_spec(self, name, path, target=None):
        if name != self.target:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_register(module):
            exec_module(module)
            register()

        spec.loader.exec_module = exec_then_register
        return spec


def register_on_first_compile():
    """register() now if Inductor is loaded, else when it loads (see the module doc)."""
    if _RegisterAfterImport.target in sys.modules:
        register()
    elif not any(isinstance(f, _RegisterAfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterImport())
