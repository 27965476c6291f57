"""int8 post-training quantization with torch.ao's own flow, run on the device's int8 TFU array.

    qmodel = torch_mlu.quantization.quantize_int8(model, example_inputs, calibration_batches)
    y = qmodel(x.to("mlu"))

The flow (torch 2.14: torch.ao.quantization still ships FX graph mode; PT2E's prepare_pt2e /
convert_pt2e moved to the separate torchao package, which this project does not install):

1. prepare: torch.ao.quantization.quantize_fx.prepare_fx with observers (activations per tensor,
   affine int8 [-128, 127]; weights symmetric int8, per output channel or per tensor), a backend
   config that is torch's native one plus an int8-activation dtype config (the native one only
   takes quint8 activations). Conv + batch norm (+ relu) are fused by prepare_fx (eval mode).
2. calibrate: the observers record min/max over `calibration_batches` (on the CPU: calibration is
   model preparation, like computing the scales; nothing of the quantized model runs there).
3. convert: torch.ao's decomposed reference representation
   (quantize_fx._convert_to_reference_decomposed_fx): quantized_decomposed.quantize_per_tensor /
   dequantize_per_tensor around reference Conv2d / Linear modules (fp32 ops on dequantized
   weights). This CPU model is the accuracy reference (`prepare_int8` returns it).
4. lower (`lower_to_mlu`): a torch.fx pass rewrites every dq(x_int8) -> conv/linear[-> relu] ->
   q(scale, zero point) into one int8 module (QConv2d / QLinear: torch.ops.mlu.qconv2d / qlinear,
   libmlu's int8 kernels on the TFU's int8 array, int32 accumulation, requantization), and every
   dq(a) + dq(b) [-> relu] -> q (residual connections) into torch.ops.mlu.qadd, and
   dq -> max pool -> q (shared scale) into torch.ops.mlu.qmax_pool2d; a dequantize right after an
   int8 layer is folded into its store (dequantize_output). What stays unfused
   (average pools, flatten, the final dequantize, layers whose weights are not symmetric)
   runs as the device's quantize / dequantize kernels and fp32 device ops, never on the CPU.

Models torch.fx cannot trace whole (Hugging Face transformers' control flow) are quantized layer
by layer instead: every nn.Linear / nn.Conv2d becomes quantize -> int8 layer -> dequantize
(`granularity="layer"`, chosen automatically when tracing the whole model fails).
"""

import copy
import operator
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

_qd = None  # torch.ops.quantized_decomposed, after its library is loaded


def _ao():
    """torch.ao's FX quantization pieces (imported on first use; torch.ao warns that it is
    deprecated in favour of torchao, which is not installed here)."""
    global _qd
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*torch.ao.quantization is deprecated.*")
        import torch.ao.quantization as aoq
        import torch.ao.quantization.fx._decomposed  # noqa: F401  (defines quantized_decomposed)
        from torch.ao.quantization import quantize_fx
        from torch.ao.quantization.backend_config import BackendConfig, DTypeConfig, get_native_backend_config
        from torch.ao.nn.quantized.reference.modules import utils as ref_utils
        import torch.ao.nn.quantized.reference as nnqr
    _qd = torch.ops.quantized_decomposed
    return aoq, quantize_fx, BackendConfig, DTypeConfig, get_native_backend_config, ref_utils, nnqr


def backend_config():
    """torch's native backend config with int8 (qint8) activations added to every pattern: the
    device computes int8 x int8 on the TFU (the native config takes quint8 activations only)."""
    _, _, BackendConfig, DTypeConfig, get_native_backend_config, _, _ = _ao()
    int8 = DTypeConfig(input_dtype=torch.qint8, output_dtype=torch.qint8, weight_dtype=torch.qint8,
                       bias_dtype=torch.float)
    config = BackendConfig("mlu_int8")
    for pattern in get_native_backend_config().configs:
        pattern.add_dtype_config(int8)
        config.set_backend_pattern_config(pattern)
    return config


def qconfig_mapping(per_channel=True, observer="minmax"):
    """Activations per tensor (affine int8, MinMaxObserver or HistogramObserver), weights
    symmetric int8 per output channel (PerChannelMinMaxObserver) or per tensor."""
    aoq, *_ = _ao()
    from torch.ao.quantization.observer import (HistogramObserver, MinMaxObserver,
                                                PerChannelMinMaxObserver)
    observers = {"minmax": MinMaxObserver, "histogram": HistogramObserver}
    if observer not in observers:
        raise ValueError(f"observer must be one of {sorted(observers)}, got {observer!r}")
    act = observers[observer].with_args(dtype=torch.qint8, qscheme=torch.per_tensor_affine,
                                        quant_min=-128, quant_max=127)
    if per_channel:
        weight = PerChannelMinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_channel_symmetric,
                                                    quant_min=-127, quant_max=127)
    else:
        weight = MinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric,
                                          quant_min=-127, quant_max=127)
    return aoq.QConfigMapping().set_global(aoq.QConfig(activation=act, weight=weight))


def _batches(calibration_batches):
    for b in calibration_batches:
        yield b if isinstance(b, (tuple, list)) else (b,)


class _Leaf(nn.Module):
    """One nn.Linear / nn.Conv2d as a module prepare_fx can trace (layer-by-layer mode)."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x)


def _fx_traceable(model, example_inputs):
    try:
        torch.fx.symbolic_trace(model)
        return True
    except Exception:  # torch.fx raises TraceError, TypeError, ... on data-dependent control flow
        return False


def prepare_int8(model, example_inputs, calibration_batches, per_channel=True, observer="minmax",
                 granularity="auto"):
    """Steps 1-3 of the module docstring on the CPU: returns torch.ao's reference quantized model
    (quantized_decomposed ops around fp32 reference layers), calibrated on `calibration_batches`
    (an iterable of input tuples or tensors). granularity: "model" (prepare_fx over the whole
    model), "layer" (each Linear / Conv2d on its own), or "auto" (model when torch.fx can trace
    it, else layer)."""
    _, quantize_fx, *_ = _ao()
    if granularity not in ("auto", "model", "layer"):
        raise ValueError(f"granularity must be 'auto', 'model' or 'layer', got {granularity!r}")
    example_inputs = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    model = copy.deepcopy(model).cpu().eval()
    mapping, config = qconfig_mapping(per_channel, observer), backend_config()
    if granularity == "auto":
        granularity = "model" if _fx_traceable(model, example_inputs) else "layer"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if granularity == "model":
            prepared = quantize_fx.prepare_fx(model, mapping, example_inputs, backend_config=config)
            with torch.no_grad():
                for batch in _batches(calibration_batches):
                    prepared(*batch)
            return quantize_fx._convert_to_reference_decomposed_fx(prepared, backend_config=config)
        # Layer by layer: each layer's example input comes from a forward pass over example_inputs.
        seen = {}
        hooks = [m.register_forward_pre_hook(lambda m, args, n=name: seen.setdefault(n, args[0]))
                 for name, m in model.named_modules() if type(m) in (nn.Linear, nn.Conv2d)]
        with torch.no_grad():
            model(*example_inputs)
        for h in hooks:
            h.remove()
        for name, x in seen.items():
            parent, _, attr = name.rpartition(".")
            owner = model.get_submodule(parent) if parent else model
            setattr(owner, attr, quantize_fx.prepare_fx(_Leaf(getattr(owner, attr)), mapping, (x,),
                                                        backend_config=config))
        with torch.no_grad():
            for batch in _batches(calibration_batches):
                model(*batch)
        for name in seen:
            parent, _, attr = name.rpartition(".")
            owner = model.get_submodule(parent) if parent else model
            setattr(owner, attr, quantize_fx._convert_to_reference_decomposed_fx(getattr(owner, attr),
                                                                                backend_config=config))
        return model


# ---- the int8 device modules ------------------------------------------------------------------

class _Int8Layer(nn.Module):
    """Shared state of QConv2d / QLinear: int8 weights (symmetric), fp32 per-channel weight scales
    (a per-tensor scale repeated), fp32 bias, the input and output quantization. The weight sums
    (the input zero point's correction) are computed on the device at the first call
    (torch.ops.mlu.int8_weight_sums) and kept."""

    def __init__(self, ref, x_scale, x_zero_point, y_scale, y_zero_point, relu):
        super().__init__()
        *_, ref_utils, _ = _ao()
        w = ref_utils._quantize_weight_decomposed(
            ref.weight.detach(), ref.weight_qscheme, ref.weight_dtype, ref.weight_scale, ref.weight_zero_point,
            ref.weight_axis_int, ref.weight_quant_min, ref.weight_quant_max)
        scale = ref.weight_scale.detach().to(torch.float32).reshape(-1)
        self.register_buffer("weight", w.contiguous())
        self.register_buffer("w_scales", scale.expand(w.shape[0]).contiguous() if scale.numel() == 1 else scale)
        self.register_buffer("bias", None if ref.bias is None else ref.bias.detach().to(torch.float32).clone())
        self.register_buffer("w_sums", None)
        self.x_scale, self.x_zero_point = float(x_scale), int(x_zero_point)
        self.y_scale, self.y_zero_point = float(y_scale), int(y_zero_point)
        self.relu = bool(relu)
        self.dequantize_output = False  # set by the lowering when a dequantize follows: y is fp32

    def _sums(self):
        if self.x_zero_point == 0:
            return None
        if self.w_sums is None or self.w_sums.device != self.weight.device:
            self.w_sums = torch.ops.mlu.int8_weight_sums(self.weight)
        return self.w_sums

    def extra_repr(self):
        return (f"x=({self.x_scale:.4g}, {self.x_zero_point}), y=({self.y_scale:.4g}, {self.y_zero_point}), "
                f"relu={self.relu}, weight={tuple(self.weight.shape)}")


class QConv2d(_Int8Layer):
    """int8 x -> int8 y: torch.ops.mlu.qconv2d (groups 1)."""

    def __init__(self, ref, x_scale, x_zero_point, y_scale, y_zero_point, relu):
        super().__init__(ref, x_scale, x_zero_point, y_scale, y_zero_point, relu)
        self.weight = self.weight.contiguous(memory_format=torch.channels_last)
        self.stride, self.padding, self.dilation = list(ref.stride), list(ref.padding), list(ref.dilation)

    def forward(self, x):
        return torch.ops.mlu.qconv2d(x, self.weight, self.w_scales, self._sums(), self.bias, self.stride,
                                     self.padding, self.dilation, self.x_scale, self.x_zero_point, self.y_scale,
                                     self.y_zero_point, self.relu, self.dequantize_output)


class QLinear(_Int8Layer):
    """int8 x [..., K] -> int8 y [..., N]: torch.ops.mlu.qlinear."""

    def forward(self, x):
        return torch.ops.mlu.qlinear(x, self.weight, self.w_scales, self._sums(), self.bias, self.x_scale,
                                     self.x_zero_point, self.y_scale, self.y_zero_point, self.relu,
                                     self.dequantize_output)


# ---- the lowering pass ------------------------------------------------------------------------

def _is(node, target):
    return node.op == "call_function" and node.target == target


def _int8_args(node):
    """(scale, zero point) of a quantize/dequantize_per_tensor.default node on int8 [-128, 127]."""
    _, scale, zp, qmin, qmax, dtype = node.args[:6]
    if dtype != torch.int8 or qmin != -128 or qmax != 127 or node.kwargs.get("out_dtype") not in (None, torch.float32):
        return None
    if not isinstance(scale, float) or not isinstance(zp, int):
        return None
    return scale, zp


def _layer_of(module):
    """(reference Conv2d / Linear, fused relu) for the modules convert produces, else None."""
    *_, nnqr = _ao()
    relu = False
    if isinstance(module, nn.Sequential) and len(module) == 2 and isinstance(module[1], nn.ReLU):
        module, relu = module[0], True
    if type(module) is nnqr.Conv2d and module.groups == 1 and module.padding_mode == "zeros" \
            and not isinstance(module.padding, str):
        return module, relu
    if type(module) is nnqr.Linear:
        return module, relu
    return None


def _relu_node(node):
    return (node.op == "call_function" and node.target in (F.relu, torch.relu)) or \
        (node.op == "call_method" and node.target == "relu")


def _is_max_pool(gm, node):
    if node.op == "call_module":
        return isinstance(gm.get_submodule(node.target), nn.MaxPool2d)
    return node.op == "call_function" and node.target in (F.max_pool2d, torch.max_pool2d)


def _pair(v):
    return list(v) if isinstance(v, (tuple, list)) else [v, v]


def _fuse_max_pools(gm):
    """dq(x) -> MaxPool2d -> q with the same (scale, zero point) -> torch.ops.mlu.qmax_pool2d(x):
    the max of int8 values is the int8 of the max (quantize(dequantize(v)) == v), so the pool runs
    on the int8 tensor, channels_last as the int8 convolutions leave it."""
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op != "call_module" or len(node.args) != 1 or node.kwargs:
            continue
        pool = gm.get_submodule(node.target)
        if type(pool) is not nn.MaxPool2d or pool.ceil_mode or pool.return_indices:
            continue
        dq, users = node.args[0], list(node.users)
        if not (isinstance(dq, torch.fx.Node) and _is(dq, _qd.dequantize_per_tensor.default)) or len(users) != 1 \
                or not _is(users[0], _qd.quantize_per_tensor.default):
            continue
        q = users[0]
        if _int8_args(dq) is None or _int8_args(dq) != _int8_args(q):
            continue
        stride = pool.stride if pool.stride is not None else pool.kernel_size
        with graph.inserting_before(q):
            new = graph.call_function(torch.ops.mlu.qmax_pool2d.default,
                                      (dq.args[0], _pair(pool.kernel_size), _pair(stride), _pair(pool.padding),
                                       _pair(pool.dilation)))
        q.replace_all_uses_with(new)
        graph.erase_node(q)
        graph.erase_node(node)
        if not dq.users:
            graph.erase_node(dq)


def _fold_output_dequantize(gm, layers):
    """An int8 layer whose every user is a dequantize with its own (scale, zero point) stores fp32
    itself (dequantize_output): one kernel and one DRAM round trip of the int8 tensor fewer."""
    for node in layers:
        mod, users = gm.get_submodule(node.target), list(node.users)
        if not users or not all(_is(u, _qd.dequantize_per_tensor.default) and
                                _int8_args(u) == (mod.y_scale, mod.y_zero_point) for u in users):
            continue
        mod.dequantize_output = True
        for u in users:
            u.replace_all_uses_with(node)
            gm.graph.erase_node(u)


def _pool_inputs_contiguous(gm):
    """For the max pools _fuse_max_pools leaves in fp32: the int8 convolutions return channels_last
    tensors, and the device's fp32 max pool is several times faster on contiguous (NCHW) input
    (measured on resnet18: 256 k vs 27 k cycles at 112x112, batch 4). So an int8 tensor that is
    dequantized for a max pool is made contiguous first, in int8 (a quarter of the bytes of doing
    it after the dequantize)."""
    for node in list(gm.graph.nodes):
        if _is(node, _qd.dequantize_per_tensor.default) and any(_is_max_pool(gm, u) for u in node.users):
            with gm.graph.inserting_before(node):
                node.args = (gm.graph.call_method("contiguous", (node.args[0],)),) + tuple(node.args[1:])


def _relu_user(gm, node):
    """node's single user when it is a relu (module, function or method), else None."""
    users = list(node.users)
    if len(users) != 1:
        return None
    u = users[0]
    if u.op == "call_module" and isinstance(gm.get_submodule(u.target), nn.ReLU):
        return u
    return u if _relu_node(u) or (u.op == "call_function" and u.target is torch.relu_) else None


def _fuse_adds(gm):
    """dq(a) + dq(b) [-> relu] -> q (a residual connection) -> torch.ops.mlu.qadd(a, b, ...):
    one pass over int8 tensors instead of two dequantizes, an fp32 add, a relu and a quantize.
    Returns how many were fused."""
    graph, fused = gm.graph, 0
    for node in list(graph.nodes):
        if not (node.op == "call_function" and node.target in (operator.add, torch.add) and len(node.args) == 2
                and not node.kwargs):
            continue
        a, b = node.args
        if not all(isinstance(t, torch.fx.Node) and _is(t, _qd.dequantize_per_tensor.default) for t in (a, b)):
            continue
        tail, relu = node, False
        r = _relu_user(gm, node)
        if r is not None:
            tail, relu = r, True
        users = list(tail.users)
        if len(users) != 1 or not _is(users[0], _qd.quantize_per_tensor.default) or len(node.users) != 1:
            continue
        q = users[0]
        qa, qb, qy = _int8_args(a), _int8_args(b), _int8_args(q)
        if qa is None or qb is None or qy is None:
            continue
        with graph.inserting_before(q):
            new = graph.call_function(torch.ops.mlu.qadd.default,
                                      (a.args[0], b.args[0], qa[0], qa[1], qb[0], qb[1], qy[0], qy[1], relu))
        q.replace_all_uses_with(new)
        graph.erase_node(q)
        if tail is not node:
            graph.erase_node(tail)
        graph.erase_node(node)
        for d in {a, b}:
            if not d.users:
                graph.erase_node(d)
        fused += 1
    return fused


def lower_graph(gm):
    """The pass of step 4 over one converted GraphModule (in place). Returns the number of
    conv/linear layers turned into int8 device modules."""
    _ao()
    graph, fused, layers = gm.graph, 0, []
    for node in list(graph.nodes):
        if node.op != "call_module" or len(node.args) != 1 or node.kwargs:
            continue
        layer = _layer_of(gm.get_submodule(node.target))
        dq = node.args[0]
        if layer is None or not isinstance(dq, torch.fx.Node) or not _is(dq, _qd.dequantize_per_tensor.default):
            continue
        ref, relu = layer
        qw = ref.weight_zero_point
        if ref.weight_dtype != torch.qint8 or bool(torch.as_tensor(qw).ne(0).any()):
            continue  # not symmetric int8 weights: stays dequantize + fp32 layer on the device
        tail = node
        users = list(tail.users)
        if not relu and len(users) == 1 and _relu_node(users[0]) and len(users[0].args) == 1:
            tail, relu = users[0], True
            users = list(tail.users)
        if len(users) != 1 or not _is(users[0], _qd.quantize_per_tensor.default):
            continue
        q = users[0]
        xq, yq = _int8_args(dq), _int8_args(q)
        if xq is None or yq is None:
            continue
        cls = QConv2d if isinstance(ref, nn.Conv2d) else QLinear
        name = f"{node.target.replace('.', '_')}_int8"
        gm.add_submodule(name, cls(ref, xq[0], xq[1], yq[0], yq[1], relu))
        with graph.inserting_before(q):
            new = graph.call_module(name, (dq.args[0],))
        layers.append(new)
        q.replace_all_uses_with(new)
        graph.erase_node(q)
        if tail is not node:
            graph.erase_node(tail)
        graph.erase_node(node)
        if not dq.users:
            graph.erase_node(dq)
        fused += 1
    _fuse_adds(gm)
    _fuse_max_pools(gm)
    _fold_output_dequantize(gm, layers)
    _pool_inputs_contiguous(gm)
    graph.eliminate_dead_code()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return fused


def lower_to_mlu(reference_model, device="mlu"):
    """Step 4: a copy of torch.ao's reference model (from prepare_int8) with its conv/linear
    patterns as int8 device modules, moved to `device`. Every converted GraphModule inside it
    (the model itself, or each layer in layer-by-layer mode) is lowered; the count of int8 layers
    is in the result's `int8_layers` attribute."""
    model = copy.deepcopy(reference_model)
    count = 0
    graphs = [model] if isinstance(model, torch.fx.GraphModule) else []
    graphs += [m for _, m in model.named_modules() if isinstance(m, torch.fx.GraphModule) and m is not model]
    for gm in graphs:
        count += lower_graph(gm)
    model = model.to(device)
    model.int8_layers = count
    return model


def quantize_int8(model, example_inputs, calibration_batches, per_channel=True, observer="minmax",
                  granularity="auto", device="mlu"):
    """int8 post-training quantization of `model` for the device: prepare_fx with torch.ao
    observers, calibration on `calibration_batches`, torch.ao's reference conversion, then the
    lowering to int8 device kernels (module docstring). Returns the quantized model on `device`
    (int8_layers: how many conv/linear layers run on the int8 TFU array).

    per_channel: weight scales per output channel (else one per tensor). observer: "minmax" or
    "histogram" for activations. granularity: "auto", "model" or "layer" (see prepare_int8)."""
    ref = prepare_int8(model, example_inputs, calibration_batches, per_channel, observer, granularity)
    return lower_to_mlu(ref, device)
