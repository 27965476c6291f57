"""Inductor's post-grad graph passes for the device: 0-dim CPU tensors that mlu ops read are
placed on the device (place_cpu_scalars), and GEMM and convolution epilogues go onto libmlu's
fused kernels (fuse_epilogues: the device's answer to Inductor's GEMM/conv templates with
epilogues).

Runs on every post-grad ATen graph that touches mlu (registered as the device's custom backend
pass, torch_mlu/inductor.py), before Inductor lowers it:

- A 0-dim CPU tensor read by an op whose result is on mlu (``torch.tensor(2.0) * x``, a
  ``scalar_tensor`` the graph builds, a Python number Dynamo passes as a 0-dim CPU tensor): eager
  mixes such "CPU scalars" with device tensors, but Inductor picks a pointwise kernel's device from
  its first GPU-type input, else from its first input (``make_pointwise``), and "mlu" is not one
  of its GPU types: ``cpu_scalar * x`` would become a CPU kernel reading device memory. A
  constructor whose every user is on mlu is built on mlu instead; any other such tensor gets one
  ``prims.device_put`` to mlu (a host-to-device copy of one element) that the mlu users read.
- ``act(addmm(bias, x, w2))`` and ``act(mm(x, w2))`` (view optional; ``w2`` F.linear's
  ``permute(w, [1, 0])`` or any 2-D matrix, e.g. GPT-2's Conv1D weight) ->
  ``mlu::linear_act(x, w, bias, act)``: one GEMM whose epilogue adds the bias and applies the
  activation before its one store (libmlu linear_act), instead of a GEMM plus a kernel.
- ``act(_native_batch_norm_legit_no_training(convolution(x, w, b, ...))[0])`` (and a convolution
  followed by the activation alone, or by the batch norm alone) -> ``mlu::conv_bn_act``: the
  convolution's output stage applies the folded batch norm and the activation (libmlu
  conv2d_bn_act_forward). On mlu Inductor keeps inference batch norm whole for this
  (inductor.py), rather than decomposing it into arithmetic.

- ``add(view(addmm(bias, x, w2)), r)`` and ``add(view(mm(x, w2)), r)`` (either operand order, view
  optional; ``w2`` F.linear's ``permute(w, [1, 0])`` or any 2-D matrix, e.g. GPT-2's Conv1D weight)
  -> ``mlu::linear_residual(x, w, bias, r, "none")``: the residual connection's add in the GEMM
  epilogue (libmlu linear_residual), ``r`` read block by block on chip instead of an elementwise
  pass that reads the GEMM's output back.
- the decomposed RMSNorm ``[w *] (x * rsqrt(mean(x ** 2, -1, keepdim) + eps))`` (LLaMA's
  LlamaRMSNorm) -> ``mlu::rms_norm``: one kernel (libmlu rms_norm_forward) for what Inductor makes
  a square, a row reduction and a scaling program.
- ``native_layer_norm(add(a, b))[0]`` where the add is not a GEMM's residual (matched above) ->
  ``mlu::add_layer_norm(a, b, ...)``: one kernel writes the sum (for its other users) and the
  normalized output (libmlu add_layer_norm_forward). A GEMM's residual add goes into the GEMM
  instead, even before a LayerNorm: measured on the BERT-128 layer (bench/compile_models.py,
  mlu370-x4), compiled/eager 0.954 with both adds in the GEMM epilogues, 0.965 with them in
  add_layer_norm (the epilogue's extra read costs about 2.6 k cycles per GEMM, the add kernel it
  replaces 4.7 k; add_layer_norm saves about 2 k of an add's plus a norm's 9.3 k).

act: relu, relu6 (hardtanh(0, 6)), gelu (both approximations), sigmoid, tanh, silu, or none for
the conv + batch norm pair. Inductor decomposes aten.silu before this pass runs (into
``x / (1 + exp(-x))``), so silu is matched in that form too, and as ``x * sigmoid(x)``: both x the
same node, the inner nodes read by the silu only (_decomposed_silu). In LLaMA's MLP this moves the
silu into the gate GEMM's epilogue but saves no kernel: Inductor had fused the decomposed silu into
the ``silu(gate) * up`` pointwise kernel, which stays (bench/compile_models.py, LLaMA layer,
mlu370-x4: compiled/eager cycles 481410 -> 481314, 0.878 both). GPT-2's gelu_new, the tanh GELU
written out in Python, is matched as gelu_tanh (_written_out_gelu_tanh: the same constants, the
same x): its Conv1D and gelu become one kernel (GPT-2 block, compiled/eager 0.738 -> 0.715,
launches 9 -> 8). A match needs the GEMM/convolution (and batch norm) result to have no other
user: a value saved for a backward graph or read elsewhere keeps the unfused form. Training
graphs therefore fuse nothing (their activations' inputs are saved for the backward); the fused
ops have no backward. New nodes carry FakeTensor metadata from the fused ops' fake kernels.
"""

import math
import operator

import torch

__all__ = ["epilogue_matches", "fuse_epilogues", "place_cpu_scalars", "register_fake_kernels"]

aten = torch.ops.aten

# One {pattern: matches} per graph the pass ran on, in order (compile_compare reports them).
epilogue_matches = []


def _activation(node):
    """The activation name of `node` (applied to its first argument alone), else None."""
    if node.op != "call_function":
        return None
    t = node.target
    names = {aten.relu.default: "relu", aten.sigmoid.default: "sigmoid", aten.tanh.default: "tanh",
             aten.silu.default: "silu"}
    if t in names:
        return names[t]
    if t == aten.gelu.default:
        approximate = node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none")
        return {"none": "gelu", "tanh": "gelu_tanh"}.get(approximate)
    if t == aten.hardtanh.default:
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min_val", -1.0)
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max_val", 1.0)
        return "relu6" if (lo, hi) == (0.0, 6.0) else None
    return None


_VIEWS = (aten.view.default, aten.reshape.default, aten._unsafe_view.default)


def _only_user(node, user):
    """node's users are exactly `user`: one node, or the set of nodes one activation reads node
    with (the decomposed SiLU reads its input twice)."""
    return set(node.users) == (user if isinstance(user, (set, frozenset)) else {user})


def _is_one(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 1


def _decomposed_silu(node):
    """(x, reads of x, inner nodes) when node computes silu(x) = x * sigmoid(x) in a form Inductor
    leaves in the post-grad graph, with both x the same node and every inner node read by this
    silu only: Inductor decomposes aten.silu before the post-grad passes into
    ``div(x, add(exp(neg(x)), 1))`` (torch/_inductor/decomposition.py, x / (1 + exp(-x))); ATen's
    own decomposition is ``mul(x, sigmoid(x))``. Mathematically silu both; else None."""
    if node.op != "call_function" or len(node.args) != 2 or node.kwargs:
        return None
    a, b = node.args
    if node.target == aten.div.Tensor and isinstance(b, torch.fx.Node):
        add = b
        if (add.op != "call_function" or add.target != aten.add.Tensor or not _only_user(add, node)
                or add.kwargs.get("alpha", 1) != 1 or len(add.args) != 2):
            return None
        exp = add.args[0] if _is_one(add.args[1]) else add.args[1] if _is_one(add.args[0]) else None
        if (not isinstance(exp, torch.fx.Node) or exp.op != "call_function" or exp.target != aten.exp.default
                or not _only_user(exp, add)):
            return None
        neg = exp.args[0]
        if (not isinstance(neg, torch.fx.Node) or neg.op != "call_function" or neg.target != aten.neg.default
                or not _only_user(neg, exp) or neg.args[0] is not a):
            return None
        return a, {neg, node}, (add, exp, neg)
    if node.target == aten.mul.Tensor:
        for x, sig in ((a, b), (b, a)):
            if (isinstance(sig, torch.fx.Node) and sig.op == "call_function" and sig.target == aten.sigmoid.default
                    and sig.args[0] is x and _only_user(sig, node)):
                return x, {sig, node}, (sig,)
    return None


def _scalar_operand(node, target, value):
    """The tensor operand of node when node is target(t, value) (or target(value, t): add and mul
    commute), value a Python number equal to `value`; else None."""
    if (not isinstance(node, torch.fx.Node) or node.op != "call_function" or node.target != target
            or len(node.args) != 2 or node.kwargs):
        return None
    for t, c in (node.args, reversed(node.args)):
        if (isinstance(t, torch.fx.Node) and isinstance(c, (int, float)) and not isinstance(c, bool)
                and c == value):
            return t
    return None


# sqrt(2 / pi), the tanh approximation's constant as Python computes it (transformers' gelu_new,
# math.sqrt(2.0 / math.pi)) and as ATen's gelu(approximate="tanh") uses it (M_SQRT2 * M_2_SQRTPI / 2).
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _written_out_gelu_tanh(node):
    """(x, reads of x, inner nodes) when node computes gelu(x, approximate="tanh") written out as
    0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3))) (GPT-2's gelu_new as the post-grad
    graph holds it: mul(mul(x, 0.5), add(tanh(mul(add(x, mul(pow(x, 3), 0.044715)), c)), 1))), the
    same constants and the same x throughout, every inner node read by this gelu only; else None."""
    if node.op != "call_function" or node.target != aten.mul.Tensor or len(node.args) != 2 or node.kwargs:
        return None
    for half, one_plus in (node.args, reversed(node.args)):
        x = _scalar_operand(half, aten.mul.Tensor, 0.5)
        th = _scalar_operand(one_plus, aten.add.Tensor, 1)
        if x is None or th is None or not th.op == "call_function" or th.target != aten.tanh.default:
            continue
        scaled = _scalar_operand(th.args[0], aten.mul.Tensor, _SQRT_2_OVER_PI)
        inner = th.args[0]
        if scaled is None or scaled.target != aten.add.Tensor or len(scaled.args) != 2 or scaled.kwargs:
            continue
        for x2, cubic in (scaled.args, reversed(scaled.args)):
            cube = _scalar_operand(cubic, aten.mul.Tensor, 0.044715)
            if (x2 is not x or cube is None or cube.op != "call_function"
                    or cube.target != aten.pow.Tensor_Scalar or cube.args[0] is not x or cube.args[1] != 3):
                continue
            chain = ((half, node), (one_plus, node), (th, one_plus), (inner, th), (scaled, inner),
                     (cubic, scaled), (cube, cubic))
            if all(_only_user(n, u) for n, u in chain):
                return x, {half, scaled, cube}, (one_plus, half, th, inner, scaled, cubic, cube)
    return None


def _activation_use(node):
    """(act, x, reads of x, inner nodes) when node is the last node of an activation of x that the
    fused kernels apply: an ATen activation op, or a decomposed silu (its inner nodes die with it)."""
    act = _activation(node)
    if act is not None:
        return act, node.args[0], {node}, ()
    silu = _decomposed_silu(node)
    if silu is not None:
        return ("silu", *silu)
    gelu = _written_out_gelu_tanh(node)
    return None if gelu is None else ("gelu_tanh", *gelu)


def _transposed_weight(node):
    """w when node is permute(w, [1, 0]) of a 2-D w (F.linear's weight as Inductor sees it)."""
    if node.op == "call_function" and node.target == aten.permute.default and list(node.args[1]) == [1, 0]:
        w = node.args[0]
        val = w.meta.get("val") if hasattr(w, "meta") else None
        if val is not None and val.dim() == 2:
            return w
    return None


def _linear(act_node, src):
    """(x, w2, bias) when src is addmm(bias, x, w2) / mm(x, w2) with a 2-D w2 (F.linear's
    permute(w, [1, 0]) or any matrix, e.g. GPT-2's Conv1D weight), feeding act_node only."""
    if src.op != "call_function" or not _only_user(src, act_node):
        return None
    if src.target == aten.addmm.default:
        if src.kwargs.get("beta", 1) != 1 or src.kwargs.get("alpha", 1) != 1:
            return None
        bias, x, wt = src.args[:3]
        bias_val = bias.meta.get("val")
        if bias_val is None or bias_val.dim() != 1:
            return None
    elif src.target == aten.mm.default:
        (x, wt), bias = src.args[:2], None
    else:
        return None
    val = _val(wt) if isinstance(wt, torch.fx.Node) else None
    return None if val is None or val.dim() != 2 else (x, wt, bias)


def _linear_weight(graph, w2):
    """linear_act's [out, in] weight for a GEMM's [in, out] operand w2 (at the insertion point):
    F.linear's w when w2 is permute(w, [1, 0]), else a permute of w2 (a strided view the fused
    kernels read as it is)."""
    w = _transposed_weight(w2)
    return w if w is not None else _call(graph, aten.permute.default, (w2, [1, 0]))


def _conv(user, src):
    """The convolution node's args when src is a 2-D, non-transposed convolution feeding user only."""
    if src.op != "call_function" or src.target != aten.convolution.default or not _only_user(src, user):
        return None
    x, w, b, stride, padding, dilation, transposed, output_padding, groups = src.args
    if transposed or len(stride) != 2 or w.meta["val"].dim() != 4:
        return None
    return x, w, b, list(stride), list(padding), list(dilation), groups


def _batch_norm(act_node, src):
    """(conv args, (weight, bias, mean, var, eps)) when src is getitem 0 of an inference batch norm
    of a convolution, feeding act_node only."""
    if src.op != "call_function" or src.target != operator.getitem or src.args[1] != 0:
        return None
    bn = src.args[0]
    if bn.op != "call_function" or bn.target != aten._native_batch_norm_legit_no_training.default:
        return None
    if not _only_user(src, act_node) or len(bn.users) != 1:
        return None
    x, weight, bias, mean, var, _momentum, eps = bn.args
    conv = _conv(bn, x)
    return None if conv is None else (conv, (weight, bias, mean, var, eps))


def _replace(graph, old, target, args):
    with graph.inserting_before(old):
        new = graph.call_function(target, tuple(args))
    new.meta["val"] = target(*[a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args])
    old.replace_all_uses_with(new)
    return new


def _erase(graph, act_node, inner):
    """Drops a replaced activation's last node and its inner nodes (last first), so that the
    later matches count the fused GEMM's input's users without them."""
    for n in (act_node, *inner):
        graph.erase_node(n)


def _device_of(node):
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val.device if isinstance(val, torch.Tensor) else None


def _is_cpu_scalar(node):
    device = _device_of(node)
    return device is not None and device.type == "cpu" and node.meta["val"].dim() == 0


def place_cpu_scalars(gm):
    """Places the 0-dim CPU tensors that mlu ops read on the device (see the module docstring);
    returns how many were moved (constructors) or copied."""
    from torch._subclasses.fake_tensor import _is_tensor_constructor  # noqa: PLC0415

    graph = gm.graph
    copies = {}  # (cpu node, device) -> its copy on the device
    moved = 0
    for node in list(graph.nodes):
        device = _device_of(node)
        if node.op != "call_function" or device is None or device.type != "mlu":
            continue
        for arg in [a for a in node.all_input_nodes if _is_cpu_scalar(a)]:
            val = arg.meta["val"]
            constructor = (arg.op == "call_function" and isinstance(arg.target, torch._ops.OpOverload)
                           and _is_tensor_constructor(arg.target))
            if constructor and all(_device_of(u) == device for u in arg.users):
                arg.kwargs = {**arg.kwargs, "device": device}
                with val.fake_mode:
                    arg.meta["val"] = val.to(device)
                moved += 1
                continue
            if (arg, device) not in copies:
                with graph.inserting_after(arg):
                    copy = graph.call_function(torch.ops.prims.device_put.default, (arg, device))
                with val.fake_mode:
                    copy.meta["val"] = val.to(device)
                copies[(arg, device)] = copy
            node.replace_input_with(arg, copies[(arg, device)])
    if moved or copies:
        gm.recompile()
    return moved + len(copies)


def _val(node):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _float_on_mlu(node):
    val = _val(node)
    return (isinstance(val, torch.Tensor) and val.device.type == "mlu"
            and val.dtype in (torch.float32, torch.float16))


def _call(graph, target, args, kwargs=None):
    """A new call node (at the graph's insertion point) with its FakeTensor value."""
    node = graph.call_function(target, tuple(args), dict(kwargs or {}))
    unwrap = (lambda a: _val(a) if isinstance(a, torch.fx.Node) else a)
    node.meta["val"] = target(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in (kwargs or {}).items()})
    return node


def _gemm_of(node, user):
    """(x, w2, bias, view) when node (optionally a view of it) is addmm(bias, x, w2) / mm(x, w2)
    feeding `user` only, with 1-D bias, alpha = beta = 1."""
    view = None
    if node.op == "call_function" and node.target in _VIEWS and _only_user(node, user):
        view, user, node = node, node, node.args[0]
    if not isinstance(node, torch.fx.Node) or node.op != "call_function" or not _only_user(node, user):
        return None
    if node.target == aten.addmm.default:
        if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
            return None
        bias, x, w2 = node.args[:3]
        if _val(bias) is None or _val(bias).dim() != 1:
            return None
    elif node.target == aten.mm.default:
        (x, w2), bias = node.args[:2], None
    else:
        return None
    return x, w2, bias, view


def _linear_residual(graph, add):
    """Rewrites add(linear, r) into mlu::linear_residual; True when it did."""
    if add.kwargs.get("alpha", 1) != 1 or len(add.args) != 2 or not _float_on_mlu(add):
        return False
    out = _val(add)
    for lin_side, res in (add.args, reversed(add.args)):
        if not isinstance(lin_side, torch.fx.Node) or not isinstance(res, torch.fx.Node):
            continue
        gemm = _gemm_of(lin_side, add)
        rv = _val(res)
        if gemm is None or rv is None or rv.dtype != out.dtype or rv.device != out.device:
            continue
        x, w2, bias, view = gemm
        if _val(lin_side).shape != out.shape or not torch.broadcast_shapes(rv.shape, out.shape) == out.shape:
            continue
        with graph.inserting_before(add):
            w = _transposed_weight(w2)
            if w is None:
                w = _call(graph, aten.permute.default, (w2, [1, 0]))
            k = _val(x).shape[-1]
            xv = _call(graph, aten.reshape.default, (x, [*out.shape[:-1], k])) if out.dim() != 2 else x
            fused = _call(graph, torch.ops.mlu.linear_residual.default, (xv, w, bias, res, "none"))
        add.replace_all_uses_with(fused)
        graph.erase_node(add)
        if view is not None:
            graph.erase_node(view)
        return True
    return False


def _rms_norm(graph, rsqrt):
    """Rewrites [w *] (x * rsqrt(mean(x ** 2, [-1], keepdim=True) + eps)) at its rsqrt node."""
    (eps_add,) = rsqrt.args
    if (eps_add.op != "call_function" or eps_add.target != aten.add.Scalar and eps_add.target != aten.add.Tensor
            or not _only_user(eps_add, rsqrt) or not isinstance(eps_add.args[1], (int, float))):
        return False
    mean, eps = eps_add.args[0], float(eps_add.args[1])
    if (mean.op != "call_function" or mean.target != aten.mean.dim or not _only_user(mean, eps_add)
            or list(mean.args[1]) not in ([-1], [_val(mean).dim() - 1]) or not (
                mean.args[2] if len(mean.args) > 2 else mean.kwargs.get("keepdim", False))):
        return False
    sq = mean.args[0]
    if sq.op != "call_function" or not _only_user(sq, mean):
        return False
    if sq.target == aten.pow.Tensor_Scalar and sq.args[1] == 2:
        x = sq.args[0]
    elif sq.target == aten.mul.Tensor and sq.args[0] is sq.args[1]:
        x = sq.args[0]
    else:
        return False
    users = list(rsqrt.users)
    if len(users) != 1 or users[0].target != aten.mul.Tensor or set(users[0].args) != {x, rsqrt}:
        return False
    scaled = users[0]
    xv = _val(x)
    if xv is None or not _float_on_mlu(x) or _val(scaled).shape != xv.shape or xv.shape[-1] > 4096:
        return False
    last, weight = scaled, None
    after = list(scaled.users)
    if len(after) == 1 and after[0].op == "call_function" and after[0].target == aten.mul.Tensor:
        other = [a for a in after[0].args if a is not scaled]
        wv = _val(other[0]) if len(other) == 1 else None
        if (isinstance(wv, torch.Tensor) and wv.dim() == 1 and wv.shape[0] == xv.shape[-1] and wv.dtype == xv.dtype
                and _val(after[0]).shape == xv.shape):
            last, weight = after[0], other[0]
    with graph.inserting_before(last):
        fused = _call(graph, torch.ops.mlu.rms_norm.default, (x, [xv.shape[-1]], weight, eps))
    last.replace_all_uses_with(fused)
    for n in (last, scaled, rsqrt, eps_add, mean, sq):
        if not n.users:
            graph.erase_node(n)
    return True


def _add_layer_norm(graph, ln, order):
    """Rewrites native_layer_norm(add(a, b))[0] into mlu::add_layer_norm; True when it did."""
    add, shape, weight, bias, eps = ln.args
    if (add.op != "call_function" or add.target != aten.add.Tensor or add.kwargs.get("alpha", 1) != 1
            or not _float_on_mlu(add) or len(add.args) != 2):
        return False
    a, b = add.args
    if not all(isinstance(v, torch.fx.Node) and _val(v) is not None for v in (a, b)):
        return False
    if _val(a).shape != _val(add).shape or _val(b).dtype != _val(a).dtype or math.prod(shape) > 4096:
        return False
    getitems = list(ln.users)
    if any(g.target != operator.getitem or g.args[1] != 0 for g in getitems):
        return False  # mean / rstd wanted (a backward): not this op's outputs
    # The fused node takes the add's place: the norm's weight and bias must already exist there.
    if any(isinstance(t, torch.fx.Node) and order[t] > order[add] for t in (weight, bias)):
        return False
    with graph.inserting_after(add):
        fused = _call(graph, torch.ops.mlu.add_layer_norm.default, (a, b, list(shape), weight, bias, eps))
    with graph.inserting_after(fused):
        total = _call(graph, operator.getitem, (fused, 0))
    with graph.inserting_after(total):
        normed = _call(graph, operator.getitem, (fused, 1))
    for g in getitems:
        g.replace_all_uses_with(normed)
        graph.erase_node(g)
    graph.erase_node(ln)
    add.replace_all_uses_with(total)
    graph.erase_node(add)
    return True


def fuse_epilogues(gm):
    """Rewrites gm (a post-grad ATen GraphModule) in place; returns {pattern: matches}."""
    from torch._guards import detect_fake_mode  # noqa: PLC0415

    graph = gm.graph
    counts = {"linear_act": 0, "conv_bn_act": 0, "linear_residual": 0, "rms_norm": 0, "add_layer_norm": 0}
    fake_mode = detect_fake_mode([n.meta.get("val") for n in graph.nodes if "val" in n.meta])
    with fake_mode if fake_mode is not None else torch._subclasses.fake_tensor.unset_fake_temporarily():
        for node in list(graph.nodes):
            use = _activation_use(node)
            if use is not None:
                act, src, reads, inner = use
                if not isinstance(src, torch.fx.Node):
                    continue
                lin = _linear(reads, src)
                if lin is not None and src.meta["val"].device.type == "mlu":
                    x, w2, bias = lin
                    with graph.inserting_before(node):
                        w = _linear_weight(graph, w2)
                    _replace(graph, node, torch.ops.mlu.linear_act.default, (x, w, bias, act))
                    _erase(graph, node, inner)
                    counts["linear_act"] += 1
                    continue
                # A linear on a 3-D input: view(addmm(...)) feeds the activation. The activation
                # commutes with the view: view(linear_act(...)).
                if (src.op == "call_function" and src.target in _VIEWS and _only_user(src, reads)
                        and isinstance(src.args[0], torch.fx.Node)):
                    lin = _linear(src, src.args[0])
                    if lin is not None and src.meta["val"].device.type == "mlu":
                        x, w2, bias = lin
                        with graph.inserting_before(node):
                            fused = _call(graph, torch.ops.mlu.linear_act.default,
                                          (x, _linear_weight(graph, w2), bias, act))
                            viewed = graph.call_function(src.target, (fused, *src.args[1:]), dict(src.kwargs))
                            viewed.meta["val"] = src.target(fused.meta["val"], *src.args[1:], **src.kwargs)
                        node.replace_all_uses_with(viewed)
                        _erase(graph, node, inner)
                        counts["linear_act"] += 1
                        continue
                bn = _batch_norm(reads, src)
                conv = _conv(reads, src) if bn is None else bn[0]
                if conv is not None and src.meta["val"].device.type == "mlu":
                    x, w, b, stride, padding, dilation, groups = conv
                    bw, bb, mean, var, eps = bn[1] if bn else (None, None, None, None, 0.0)
                    _replace(graph, node, torch.ops.mlu.conv_bn_act.default,
                             (x, w, b, bw, bb, mean, var, eps, stride, padding, dilation, groups, act))
                    _erase(graph, node, inner)
                    counts["conv_bn_act"] += 1
                    continue
            elif (node.op == "call_function" and node.target == operator.getitem and node.args[1] == 0
                  and node.meta.get("val") is not None and node.meta["val"].device.type == "mlu"):
                # A batch norm without an activation (one followed by an activation is matched at
                # the activation, later in topological order).
                parent = node.args[0]
                users = set(node.users)
                if any((u := _activation_use(user)) is not None and u[1] is node and u[2] == users
                       for user in users):
                    continue
                if (parent.op == "call_function"
                        and parent.target == aten._native_batch_norm_legit_no_training.default
                        and len(parent.users) == 1):
                    x, weight, bias, mean, var, _momentum, eps = parent.args
                    conv = _conv(parent, x)
                    if conv is not None:
                        x, w, b, stride, padding, dilation, groups = conv
                        _replace(graph, node, torch.ops.mlu.conv_bn_act.default,
                                 (x, w, b, weight, bias, mean, var, eps, stride, padding, dilation, groups, "none"))
                        counts["conv_bn_act"] += 1
        # Residual adds into the GEMMs before them, then the norms (an add a GEMM took is gone).
        for node in list(graph.nodes):
            if node.op == "call_function" and node.target == aten.add.Tensor and _linear_residual(graph, node):
                counts["linear_residual"] += 1
        for node in list(graph.nodes):
            if node.op == "call_function" and node.target == aten.rsqrt.default and _rms_norm(graph, node):
                counts["rms_norm"] += 1
        order = {n: i for i, n in enumerate(graph.nodes)}
        for node in list(graph.nodes):
            if (node.op == "call_function" and node.target == aten.native_layer_norm.default
                    and _add_layer_norm(graph, node, order)):
                counts["add_layer_norm"] += 1
        graph.eliminate_dead_code()
    gm.recompile()
    epilogue_matches.append(dict(counts))
    return counts


def register_fake_kernels():
    """FakeTensor kernels of the fused ops (shapes, dtypes and contiguous strides, as the device
    kernels produce), so that graphs containing them can be traced and lowered."""
    from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: PLC0415,F401

    if getattr(register_fake_kernels, "_done", False):
        return

    @torch.library.register_fake("mlu::linear_act")
    def _linear_act(input, weight, bias, activation):
        return input.new_empty((*input.shape[:-1], weight.shape[0]))

    @torch.library.register_fake("mlu::conv_bn_act")
    def _conv_bn_act(input, weight, bias, bn_weight, bn_bias, bn_mean, bn_var, eps, stride, padding, dilation,
                     groups, activation):
        n, _, h, w = input.shape
        kh, kw = weight.shape[2], weight.shape[3]
        oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
        return input.new_empty((n, weight.shape[0], oh, ow))

    @torch.library.register_fake("mlu::linear_residual")
    def _linear_residual(input, weight, bias, residual, activation):
        return input.new_empty((*input.shape[:-1], weight.shape[0]))

    @torch.library.register_fake("mlu::add_layer_norm")
    def _add_layer_norm(input, residual, normalized_shape, weight, bias, eps):
        return input.new_empty(input.shape), input.new_empty(input.shape)

    @torch.library.register_fake("mlu::add_rms_norm")
    def _add_rms_norm(input, residual, normalized_shape, weight, eps):
        return input.new_empty(input.shape), input.new_empty(input.shape)

    @torch.library.register_fake("mlu::rms_norm")
    def _rms_norm(input, normalized_shape, weight, eps):
        return input.new_empty(input.shape)

    register_fake_kernels._done = True
