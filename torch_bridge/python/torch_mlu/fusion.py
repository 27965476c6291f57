"""Graph fusion for inference: rewrites an unmodified model (torch.fx) to use the fused ops
``torch.ops.mlu.*`` (libmlu's fused kernels: fewer kernels, intermediates stay on chip)::

    model = torchvision.models.resnet18().eval().to("mlu")
    fused = torch_mlu.fuse(model)                 # an fx.GraphModule; `model` is left unchanged
    print(fused.fusion_matches)                   # {"conv_bn_act": 20, "linear_act": 0, "elementwise": 8}
    with torch.no_grad():
        y = fused(x)
    print(torch_mlu.fusion_compare(model, (x,)))  # cycles, DRAM bytes, kernels: unfused vs fused

Patterns (``patterns=`` selects a subset; None = all):

``conv_bn_act``
    Conv2d (module, or F.conv2d with constant stride/padding/dilation/groups; zero padding mode)
    followed by BatchNorm2d in eval mode with running statistics (module, or F.batch_norm with
    training=False) and/or an activation: ReLU, ReLU6 (also Hardtanh(0, 6)), GELU (both
    approximations), SiLU, Sigmoid, Tanh as modules, functions (F.relu, torch.relu, ...), methods
    or their in-place forms (relu_, inplace=True). -> ``mlu::conv_bn_act``.
``linear_act``
    Linear (module or F.linear) followed by one of the same activations -> ``mlu::linear_act``.
``elementwise``
    Maximal groups of at least 2 elementwise nodes -> one ``mlu::elementwise`` with a program
    (format below). Nodes: + - * / ** and unary minus (Python operators), add/sub/mul/div/pow/
    maximum/minimum/neg/abs/square/relu/exp/log/sqrt/rsqrt/sigmoid/tanh/reciprocal/silu/gelu
    (torch functions, F functions, Tensor methods, nn modules), comparisons (== != < <= > >=),
    logical_and/or/xor/not, torch.where, masked_fill, .float()/.half(); Python-number operands
    become literals. In-place forms join a group only when the tensor they modify is produced
    inside the same group (or is the fresh result of a fused op) and is used nowhere else;
    binary in-place ops and masked_fill keep self's dtype (``cast_like``).

A node never fuses when a value it would hide is used outside the pattern: a convolution whose
output also feeds a residual connection stays a plain convolution, a group's inner values have no
users outside the group.

Semantics: the fused graph computes what the original does (same dtypes and shapes; the fused
kernels round once where the unfused ops round after every step, so results agree to rounding).
Fusion is for inference: ``fuse`` raises for a module in training mode (BatchNorm folding needs the
running statistics) and the fused ops raise when called with inputs that require grad while grad
mode is on (run the fused module under ``torch.no_grad()`` / ``torch.inference_mode()``). The fused
ops also have CPU kernels (the unfused computation with ordinary ops), so a fused graph runs on
the CPU too.

Elementwise program format (``torch.ops.mlu.elementwise(inputs, program)``)::

    program := (NAME '=' expr ';')* expr         the last expression is the output
    expr    := OP '(' expr {',' expr} ')' | '$' INDEX | NAME | literal
    literal := NUMBER [':' DTYPE] | true | false | inf | -inf | nan

``$i`` is ``inputs[i]`` (each input must be used); a NAME is an earlier ``NAME = expr;`` (shared
values: ``"t = add($0, $1); mul(t, sigmoid(t))"``). Numbers with '.', 'e', inf or nan are Python
floats, others Python ints, true/false Python bools: they promote as Python scalars in torch
(``mul($0, 2.0)`` of an fp16 tensor is fp16); ``2:f16`` is a zero-dim tensor of that dtype instead
(DTYPE: f32 f16 i8 i32 i64 bool). OPs: add(a, b[, alpha]) sub(a, b[, alpha]) mul div pow maximum
minimum; neg abs square relu exp log sqrt rsqrt sigmoid tanh silu reciprocal gelu gelu_tanh; eq ne
lt le gt ge; logical_and logical_or logical_xor logical_not; where(cond, a, b); cast(a, DTYPE);
cast_like(a, b) (a converted to tensor b's dtype, as in-place ops keep self's dtype).
Each op has torch's semantics and result dtype; the output's dtype is torch's dtype for the chain.
"""

import copy
import operator
import warnings

import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

PATTERNS = ("conv_bn_act", "linear_act", "elementwise")

__all__ = ["PATTERNS", "fuse", "fusion_compare", "fusion_report"]


# ---- helpers ----------------------------------------------------------------------------------------

def _arg(node, index, name, default=None):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _only_user(node):
    """The single user of `node`, or None when it has zero or several."""
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _module(gm, node):
    if node.op != "call_module":
        return None
    try:
        return gm.get_submodule(node.target)
    except AttributeError:
        return None


def _plain(mod, cls):
    """`mod` is a `cls` whose forward is cls's own (subclasses that change forward do not count)."""
    return isinstance(mod, cls) and type(mod).forward is cls.forward


def _pair(v):
    if isinstance(v, int) and not isinstance(v, bool):
        return [v, v]
    if isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(e, int) and not isinstance(e, bool) for e in v):
        return list(v)
    return None


def _is_literal(v):
    return isinstance(v, (bool, int, float)) and not isinstance(v, fx.Node)


def _literal_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    text = repr(float(v))
    return text  # '2.0', '1e-05', 'inf', '-inf', 'nan' all parse as floats


# ---- activations (for conv_bn_act and linear_act) -----------------------------------------------------

_ACT_MODULES = {nn.ReLU: "relu", nn.ReLU6: "relu6", nn.SiLU: "silu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh"}
_ACT_FUNCS = {F.relu: "relu", torch.relu: "relu", torch.relu_: "relu", F.relu_: "relu", F.relu6: "relu6",
              F.silu: "silu", torch.sigmoid: "sigmoid", torch.tanh: "tanh"}
_ACT_METHODS = {"relu": "relu", "relu_": "relu", "sigmoid": "sigmoid", "sigmoid_": "sigmoid", "tanh": "tanh",
                "tanh_": "tanh"}


def _gelu_name(approximate):
    return {"none": "gelu", "tanh": "gelu_tanh"}.get(approximate)


def _activation(gm, node, prev):
    """The activation name when `node` applies a supported activation to `prev` alone, else None."""
    if not node.args or node.args[0] is not prev:
        return None
    if node.op == "call_module":
        mod = _module(gm, node)
        if len(node.args) != 1 or node.kwargs:
            return None
        for cls, name in _ACT_MODULES.items():
            if _plain(mod, cls):
                return name
        if _plain(mod, nn.GELU):
            return _gelu_name(mod.approximate)
        if _plain(mod, nn.Hardtanh) and mod.min_val == 0.0 and mod.max_val == 6.0:
            return "relu6"
        return None
    if node.op == "call_function":
        if node.target is F.gelu:
            approximate = _arg(node, 1, "approximate", "none")
            return _gelu_name(approximate) if isinstance(approximate, str) else None
        if node.target is F.hardtanh:
            lo, hi = _arg(node, 1, "min_val", -1.0), _arg(node, 2, "max_val", 1.0)
            return "relu6" if (lo, hi) == (0.0, 6.0) else None
        name = _ACT_FUNCS.get(node.target)
        if name is None:
            return None
        extra = list(node.args[1:]) + [v for k, v in node.kwargs.items() if k == "inplace"]
        if any(not isinstance(v, bool) for v in extra) or set(node.kwargs) - {"inplace"}:
            return None
        return name
    if node.op == "call_method":
        name = _ACT_METHODS.get(node.target)
        if name is None or len(node.args) != 1 or node.kwargs:
            return None
        return name
    return None


# ---- conv_bn_act ---------------------------------------------------------------------------------------

def _conv_info(gm, node):
    """(input, weight, bias, stride, padding, dilation, groups) of a plain 2-d convolution node."""
    if node.op == "call_module":
        mod = _module(gm, node)
        if not _plain(mod, nn.Conv2d) or mod.padding_mode != "zeros" or len(node.args) != 1 or node.kwargs:
            return None
        padding = [0, 0] if mod.padding == "valid" else _pair(mod.padding)
        if padding is None:
            return None
        g = node.graph
        with g.inserting_before(node):
            weight = g.get_attr(f"{node.target}.weight")
            bias = g.get_attr(f"{node.target}.bias") if mod.bias is not None else None
        return (node.args[0], weight, bias, _pair(mod.stride), padding, _pair(mod.dilation), mod.groups)
    if node.op == "call_function" and node.target is F.conv2d:
        x, w = _arg(node, 0, "input"), _arg(node, 1, "weight")
        bias = _arg(node, 2, "bias")
        stride, padding = _pair(_arg(node, 3, "stride", 1)), _arg(node, 4, "padding", 0)
        padding = [0, 0] if padding == "valid" else _pair(padding)
        dilation, groups = _pair(_arg(node, 5, "dilation", 1)), _arg(node, 6, "groups", 1)
        if not isinstance(x, fx.Node) or not isinstance(w, fx.Node) or not (bias is None or isinstance(bias, fx.Node)):
            return None
        if None in (stride, padding, dilation) or not isinstance(groups, int):
            return None
        return (x, w, bias, stride, padding, dilation, groups)
    return None


def _is_conv(gm, node):
    if node.op == "call_module":
        mod = _module(gm, node)
        return (_plain(mod, nn.Conv2d) and mod.padding_mode == "zeros" and len(node.args) == 1 and not node.kwargs
                and (mod.padding == "valid" or _pair(mod.padding) is not None))
    if node.op == "call_function" and node.target is F.conv2d:
        padding = _arg(node, 4, "padding", 0)
        return (isinstance(_arg(node, 0, "input"), fx.Node) and isinstance(_arg(node, 1, "weight"), fx.Node)
                and _pair(_arg(node, 3, "stride", 1)) is not None
                and (padding == "valid" or _pair(padding) is not None)
                and _pair(_arg(node, 5, "dilation", 1)) is not None and isinstance(_arg(node, 6, "groups", 1), int))
    return False


def _bn_info(gm, node, prev):
    """(weight, bias, mean, var, eps) when `node` is an inference batch norm of `prev`, else None.
    Returns a callable creating the get_attr nodes (so nothing is inserted for a non-match)."""
    if not node.args or node.args[0] is not prev:
        return None
    if node.op == "call_module":
        mod = _module(gm, node)
        if not (isinstance(mod, nn.BatchNorm2d) and type(mod).forward is nn.BatchNorm2d.forward):
            return None
        if mod.training or mod.running_mean is None or mod.running_var is None or len(node.args) != 1 or node.kwargs:
            return None

        def make():
            g = node.graph
            with g.inserting_before(node):
                get = (lambda name: g.get_attr(f"{node.target}.{name}"))
                weight = get("weight") if mod.weight is not None else None
                bias = get("bias") if mod.bias is not None else None
                return (weight, bias, get("running_mean"), get("running_var"), float(mod.eps))
        return make
    if node.op == "call_function" and node.target is F.batch_norm:
        mean, var = _arg(node, 1, "running_mean"), _arg(node, 2, "running_var")
        weight, bias = _arg(node, 3, "weight"), _arg(node, 4, "bias")
        training, eps = _arg(node, 5, "training", False), _arg(node, 7, "eps", 1e-5)
        if training is not False or not isinstance(mean, fx.Node) or not isinstance(var, fx.Node):
            return None
        if not all(v is None or isinstance(v, fx.Node) for v in (weight, bias)) or not isinstance(eps, (int, float)):
            return None
        return lambda: (weight, bias, mean, var, float(eps))
    return None


def _fuse_conv_bn_act(gm, details):
    graph, count = gm.graph, 0
    for conv in list(graph.nodes):
        if getattr(conv, "_erased", False) or not _is_conv(gm, conv):
            continue
        chain, last = [conv], conv
        bn_make, act = None, "none"
        user = _only_user(conv)
        if user is not None:
            bn_make = _bn_info(gm, user, conv)
            if bn_make is not None:
                chain.append(user)
                last = user
        user = _only_user(last)
        if user is not None:
            name = _activation(gm, user, last)
            if name is not None:
                act = name
                chain.append(user)
                last = user
        if len(chain) == 1:
            continue
        x, weight, bias, stride, padding, dilation, groups = _conv_info(gm, conv)
        bn_weight = bn_bias = mean = var = None
        eps = 1e-5
        if bn_make is not None:
            bn_weight, bn_bias, mean, var, eps = bn_make()
        with graph.inserting_before(last):
            fused = graph.call_function(torch.ops.mlu.conv_bn_act, (x, weight, bias, bn_weight, bn_bias, mean, var, eps,
                                                                    stride, padding, dilation, groups, act))
        fused.meta = dict(last.meta)
        last.replace_all_uses_with(fused)
        for n in reversed(chain):
            graph.erase_node(n)
        details.append({"pattern": "conv_bn_act", "node": fused.name, "batch_norm": bn_make is not None,
                        "activation": act})
        count += 1
    return count


# ---- linear_act ----------------------------------------------------------------------------------------

def _linear_info(gm, node):
    if node.op == "call_module":
        mod = _module(gm, node)
        if not _plain(mod, nn.Linear) or len(node.args) != 1 or node.kwargs:
            return None

        def make():
            g = node.graph
            with g.inserting_before(node):
                weight = g.get_attr(f"{node.target}.weight")
                bias = g.get_attr(f"{node.target}.bias") if mod.bias is not None else None
            return node.args[0], weight, bias
        return make
    if node.op == "call_function" and node.target is F.linear:
        x, w, b = _arg(node, 0, "input"), _arg(node, 1, "weight"), _arg(node, 2, "bias")
        if isinstance(x, fx.Node) and isinstance(w, fx.Node) and (b is None or isinstance(b, fx.Node)):
            return lambda: (x, w, b)
    return None


def _fuse_linear_act(gm, details):
    graph, count = gm.graph, 0
    for lin in list(graph.nodes):
        if getattr(lin, "_erased", False):
            continue
        make = _linear_info(gm, lin)
        user = _only_user(lin)
        if make is None or user is None:
            continue
        act = _activation(gm, user, lin)
        if act is None:
            continue
        x, weight, bias = make()
        with graph.inserting_before(user):
            fused = graph.call_function(torch.ops.mlu.linear_act, (x, weight, bias, act))
        fused.meta = dict(user.meta)
        user.replace_all_uses_with(fused)
        graph.erase_node(user)
        graph.erase_node(lin)
        details.append({"pattern": "linear_act", "node": fused.name, "activation": act})
        count += 1
    return count


# ---- residual connections (torch.compile's backend "mlu") -------------------------------------------------

def _example(node):
    """The example value Dynamo recorded for `node` (a FakeTensor), else None."""
    val = node.meta.get("example_value") if isinstance(node, fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def _skip_eval_dropout(node):
    """The input of F.dropout(x, p, training=False) (an identity), else `node`."""
    if (isinstance(node, fx.Node) and node.op == "call_function" and node.target is F.dropout
            and _arg(node, 2, "training", True) is False and _only_user(_arg(node, 0, "input")) is node):
        return _arg(node, 0, "input")
    return node


def _residual_linear(gm, node, add):
    """(make(), chain) when `node` is a linear feeding `add` only (through an eval dropout and, for
    torch.addmm, a view): make() inserts and returns (x, weight [N, K], bias) before `add`."""
    chain = []
    src = _skip_eval_dropout(node)
    if src is not node:
        if _only_user(node) is not add:
            return None
        chain.append(node)
    if _only_user(src) is not (chain[-1] if chain else add):
        return None
    make = _linear_info(gm, src)
    if make is not None:
        return make, chain + [src]
    view = None
    if src.op == "call_method" and src.target in ("view", "reshape"):
        view, src = src, src.args[0]
        if not isinstance(src, fx.Node) or _only_user(src) is not view:
            return None
    if src.op != "call_function" or src.target is not torch.addmm or len(src.args) != 3 or src.kwargs:
        return None
    bias, x, w = src.args
    out, xv, wv = _example(add), _example(x), _example(w)
    if out is None or xv is None or wv is None or wv.dim() != 2 or xv.dim() != 2 or _example(bias) is None:
        return None
    if _example(bias).dim() != 1:
        return None

    def make():
        g = add.graph
        with g.inserting_before(add):
            x_rows = g.call_method("reshape", (x, (*out.shape[:-1], xv.shape[-1]))) if out.dim() != 2 else x
            return x_rows, g.call_method("t", (w,)), bias
    return make, chain + ([view] if view is not None else []) + [src]


class GroupedLinear(nn.Module):
    """Several linears of one input as one GEMM: ``y = F.linear(x, cat(W_i), cat(b_i))``, split back
    along the last dimension into the linears' outputs (views). The concatenated weights are made on
    the device once and kept while every W_i and b_i is the same tensor at the same version (an
    in-place update, e.g. an optimizer step, makes the next call concatenate again); they are a
    second copy of those weights in device memory."""

    def __init__(self, sizes):
        super().__init__()
        self.sizes = list(sizes)
        self._key, self._weight, self._bias = None, None, None

    def forward(self, x, weights, biases):
        params = list(weights) + [b for b in biases if b is not None]
        key = tuple((id(t), t._version, t.data_ptr()) for t in params)
        if key != self._key:
            self._weight = torch.cat(list(weights), 0)
            self._bias = torch.cat(list(biases), 0) if biases[0] is not None else None
            self._key = key
        return F.linear(x, self._weight, self._bias).split(self.sizes, dim=-1)


def fuse_shared_input_linears(gm, details):
    """F.linear calls (how Dynamo records nn.Linear) that read the same input, with weights [N_i, K] of one dtype and
    all or none with a bias (a Transformer's Q, K and V projections; LLaMA's gate and up) -> one
    ``GroupedLinear`` GEMM whose N is the sum: one launch instead of several, each operand read
    once, the wider N filling the TFU's columns (BERT-base at 128 rows: 0.70 of the three GEMMs'
    cycles on mlu370-x4). Inference graphs only (run under no_grad). Rewrites the graph in place (the
    caller lints and recompiles it, as after the other passes); returns the groups made."""
    graph, count = gm.graph, 0
    groups = {}
    for node in graph.nodes:
        if node.op != "call_function" or node.target is not F.linear:
            continue
        make = _linear_info(gm, node)
        if make is None:
            continue
        x, w, b = make()
        wv = _example(w)
        if wv is None or wv.dim() != 2 or _example(node) is None:
            continue
        groups.setdefault(x, []).append((node, w, b, wv))
    for x, members in groups.items():
        members = [m for m in members if m[3].dtype == members[0][3].dtype and m[3].shape[1] == members[0][3].shape[1]]
        if len(members) < 2 or len({m[2] is None for m in members}) != 1:
            continue
        name = f"mlu_grouped_linear_{count}"
        gm.add_submodule(name, GroupedLinear([int(m[3].shape[0]) for m in members]))
        first = members[0][0]
        with graph.inserting_before(first):
            grouped = graph.call_module(name, (x, tuple(m[1] for m in members), tuple(m[2] for m in members)))
            outs = [graph.call_function(operator.getitem, (grouped, i)) for i in range(len(members))]
        for (node, *_), out in zip(members, outs):
            out.meta = dict(node.meta)
            node.replace_all_uses_with(out)
            graph.erase_node(node)
        details.append({"pattern": "grouped_linear", "node": grouped.name, "linears": len(members)})
        count += 1
    return count


def fuse_residual_linears(gm, details):
    """``linear(x) + r`` (nn.Linear, F.linear, or GPT-2's ``torch.addmm(b, x, W).view(...)``; an
    eval-mode dropout in between; either operand order) -> ``mlu::linear_residual(x, w, b, r)``:
    the add in the GEMM epilogue. Needs Dynamo's example values (shapes): for torch.compile's
    graphs. Returns the number of matches."""
    graph, count = gm.graph, 0
    for add in list(graph.nodes):
        if add.op != "call_function" or add.target not in (operator.add, torch.add) or len(add.args) != 2 or add.kwargs:
            continue
        out = _example(add)
        if out is None or out.dtype not in (torch.float32, torch.float16):
            continue
        for lin_side, res in (add.args, tuple(reversed(add.args))):
            rv = _example(res)
            if not isinstance(lin_side, fx.Node) or rv is None or rv.dtype != out.dtype:
                continue
            if _example(lin_side) is None or _example(lin_side).shape != out.shape:
                continue
            found = _residual_linear(gm, lin_side, add)
            if found is None:
                continue
            make, chain = found
            x, weight, bias = make()
            with graph.inserting_before(add):
                fused = graph.call_function(torch.ops.mlu.linear_residual, (x, weight, bias, res, "none"))
            fused.meta = dict(add.meta)
            add.replace_all_uses_with(fused)
            graph.erase_node(add)
            for n in chain:
                graph.erase_node(n)
            details.append({"pattern": "linear_residual", "node": fused.name})
            count += 1
            break
    return count


def _calls(node, functions=(), methods=()):
    return isinstance(node, fx.Node) and (
        (node.op == "call_function" and node.target in functions) or (node.op == "call_method" and node.target in methods))


def _fp32_identity(node):
    """x when node is x.to(torch.float32) / x.float() of an fp32 x (no-ops), else node."""
    if _calls(node, methods=("to", "float")) and isinstance(node.args[0], fx.Node):
        src, rest = node.args[0], list(node.args[1:]) + list(node.kwargs.values())
        if (_example(src) is not None and _example(src).dtype == torch.float32
                and all(v is torch.float32 for v in rest)):
            return src
    return node


def fuse_rms_norms(gm, details):
    """LLaMA's RMSNorm as Dynamo records it, ``[w *] (x * rsqrt(x.pow(2).mean(-1, keepdim=True) +
    eps))`` with fp32 no-op casts, for fp32 x with rows of at most 4096 -> ``mlu::rms_norm``: one
    kernel. Returns the number of matches."""
    graph, count = gm.graph, 0
    muls = (operator.mul, torch.mul)
    for rsqrt in list(graph.nodes):
        if not _calls(rsqrt, (torch.rsqrt,), ("rsqrt",)) or len(rsqrt.args) != 1:
            continue
        add = rsqrt.args[0]
        if not _calls(add, (operator.add, torch.add)) or _only_user(add) is not rsqrt or add.kwargs:
            continue
        mean, eps = add.args if isinstance(add.args[0], fx.Node) else tuple(reversed(add.args))
        if not _calls(mean, (torch.mean,), ("mean",)) or not isinstance(eps, (int, float)) or _only_user(mean) is not add:
            continue
        if _arg(mean, 1, "dim") not in (-1, [-1], (-1,)) or _arg(mean, 2, "keepdim", False) is not True:
            continue
        sq = mean.args[0]
        if not _calls(sq, (torch.pow, operator.pow), ("pow",)) or sq.args[1] != 2 or _only_user(sq) is not mean:
            continue
        x = sq.args[0]
        scaled = _only_user(rsqrt)
        if not _calls(scaled, muls) or set(scaled.args) != {x, rsqrt}:
            continue
        base = _fp32_identity(x)
        xv = _example(base)
        if xv is None or xv.dtype != torch.float32 or xv.shape[-1] > 4096:
            continue
        last, weight, dead = scaled, None, [scaled, rsqrt, add, mean, sq]
        nxt = _only_user(scaled)
        if nxt is not None and _fp32_identity(nxt) is scaled and _only_user(nxt) is not None:
            cast, nxt = nxt, _only_user(nxt)
        else:
            cast = None
        if _calls(nxt, muls) and len(nxt.args) == 2:
            other = [a for a in nxt.args if a is not (cast or scaled)]
            wv = _example(other[0]) if len(other) == 1 else None
            if wv is not None and wv.dim() == 1 and wv.shape[0] == xv.shape[-1] and wv.dtype == torch.float32:
                last, weight = nxt, other[0]
                dead = [nxt] + ([cast] if cast is not None else []) + dead
        with graph.inserting_before(last):
            fused = graph.call_function(torch.ops.mlu.rms_norm, (base, [int(xv.shape[-1])], weight, float(eps)))
        fused.meta = dict(last.meta)
        last.replace_all_uses_with(fused)
        for n in dead:
            if not n.users:
                graph.erase_node(n)
        if x is not base and not x.users:
            graph.erase_node(x)
        details.append({"pattern": "rms_norm", "node": fused.name})
        count += 1
    return count


# ---- elementwise ---------------------------------------------------------------------------------------

_BINARY = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"}
_UNARY = {"neg", "abs", "square", "relu", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "silu", "reciprocal"}
_COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
_LOGICAL = {"logical_and", "logical_or", "logical_xor"}

_FUNC_OPS = {
    operator.add: "add", torch.add: "add", operator.sub: "sub", torch.sub: "sub", torch.subtract: "sub",
    operator.mul: "mul", torch.mul: "mul", torch.multiply: "mul", operator.truediv: "div", torch.div: "div",
    torch.true_divide: "div", torch.divide: "div", operator.pow: "pow", torch.pow: "pow",
    torch.maximum: "maximum", torch.minimum: "minimum", operator.neg: "neg", torch.neg: "neg",
    torch.negative: "neg", torch.abs: "abs", operator.abs: "abs", torch.square: "square", torch.relu: "relu",
    F.relu: "relu", torch.exp: "exp", torch.log: "log", torch.sqrt: "sqrt", torch.rsqrt: "rsqrt",
    torch.sigmoid: "sigmoid", torch.tanh: "tanh", F.silu: "silu", torch.reciprocal: "reciprocal",
    operator.eq: "eq", torch.eq: "eq", operator.ne: "ne", torch.ne: "ne", operator.lt: "lt", torch.lt: "lt",
    operator.le: "le", torch.le: "le", operator.gt: "gt", torch.gt: "gt", operator.ge: "ge", torch.ge: "ge",
    torch.logical_and: "logical_and", torch.logical_or: "logical_or", torch.logical_xor: "logical_xor",
    torch.logical_not: "logical_not", torch.where: "where",
}
_INPLACE_FUNCS = {torch.relu_: "relu", F.relu_: "relu"}
_METHOD_OPS = {name: name for name in _BINARY | _UNARY | _COMPARE | _LOGICAL | {"logical_not"}}
_METHOD_OPS.update({"subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div", "negative": "neg"})
_INPLACE_METHODS = {name + "_": op for name, op in _METHOD_OPS.items()}
_CAST_METHODS = {"float": "f32", "half": "f16"}
_MODULE_OPS = {nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.SiLU: "silu"}

# call_method targets that return no tensor.
_NON_TENSOR_METHODS = {"size", "dim", "numel", "nelement", "item", "tolist", "stride", "element_size",
                       "is_contiguous", "data_ptr", "__len__", "storage_offset", "ndimension", "get_device"}


class _Spec:
    """One elementwise node: op name, operands (Nodes or number literals), alpha, cast dtype, the
    index of the operand it modifies in place (None when functional) and of the operand whose
    dtype the result keeps (`like`)."""

    def __init__(self, op, operands, alpha=None, dtype=None, inplace=None):
        self.op, self.operands, self.alpha, self.dtype, self.inplace = op, list(operands), alpha, dtype, inplace
        self.like = None  # index of the operand whose dtype the result keeps (cast_like)


def _spec(gm, node):
    """The elementwise spec of `node`, or None when it is not an elementwise op we can fuse."""
    op = inplace = None
    args, kwargs = list(node.args), dict(node.kwargs)
    if node.op == "call_function":
        if node.target in _INPLACE_FUNCS:
            op, inplace = _INPLACE_FUNCS[node.target], 0
        elif node.target is F.gelu:
            approximate = kwargs.pop("approximate", args.pop(1) if len(args) > 1 else "none")
            op = _gelu_name(approximate) if isinstance(approximate, str) else None
        elif node.target in _FUNC_OPS:
            op = _FUNC_OPS[node.target]
            if node.target in (F.relu, F.silu):
                flag = kwargs.pop("inplace", args.pop(1) if len(args) > 1 else False)
                if not isinstance(flag, bool):
                    return None
                inplace = 0 if flag else None
        else:
            return None
    elif node.op == "call_method":
        name = node.target
        if name in _CAST_METHODS:
            if len(args) != 1 or kwargs:
                return None
            return _Spec("cast", args, dtype=_CAST_METHODS[name])
        if name == "masked_fill":
            if len(args) != 3 or kwargs:
                return None
            spec = _Spec("where", [args[1], args[2], args[0]])
            spec.like = 2  # masked_fill keeps self's dtype
            return spec if isinstance(args[0], fx.Node) else None
        if name in _INPLACE_METHODS:
            op, inplace = _INPLACE_METHODS[name], 0
        elif name in _METHOD_OPS:
            op = _METHOD_OPS[name]
        else:
            return None
    elif node.op == "call_module":
        mod = _module(gm, node)
        if len(args) != 1 or kwargs:
            return None
        for cls, name in _MODULE_OPS.items():
            if _plain(mod, cls):
                return _Spec(name, args, inplace=0 if getattr(mod, "inplace", False) else None)
        if _plain(mod, nn.GELU):
            name = _gelu_name(mod.approximate)
            return _Spec(name, args) if name else None
        return None
    else:
        return None
    if op is None:
        return None
    alpha = None
    if op in ("add", "sub"):
        alpha = kwargs.pop("alpha", args.pop(2) if len(args) > 2 else None)
        if alpha is not None and not _is_literal(alpha):
            return None
    if op == "div":
        mode = kwargs.pop("rounding_mode", args.pop(2) if len(args) > 2 else None)
        if mode is not None:
            return None
    if kwargs:
        return None
    arity = 3 if op == "where" else 2 if op in _BINARY | _COMPARE | _LOGICAL else 1
    if len(args) != arity:
        return None
    if not all(isinstance(a, fx.Node) or _is_literal(a) for a in args):
        return None
    if inplace is not None and not isinstance(args[0], fx.Node):
        return None
    spec = _Spec(op, args, alpha=alpha, inplace=inplace)
    # A binary in-place op keeps self's dtype (fp16.add_(fp32) is fp16): cast_like(op, self).
    if inplace is not None and arity > 1:
        spec.like = inplace
    return spec


def _produces_tensor(gm, node, memo):
    """Whether `node` (an operand outside a group) is a tensor: fx has no types, so this follows
    what the node is (tensor_meta from ShapeProp when present)."""
    if node in memo:
        return memo[node]
    memo[node] = False  # cycles cannot happen in a DAG; guards recursion
    result = True
    if "tensor_meta" in node.meta:
        result = hasattr(node.meta["tensor_meta"], "dtype")  # ShapeProp's TensorMetadata
    elif node.op == "placeholder":  # an argument: a tensor unless annotated otherwise
        result = node.type is None or (isinstance(node.type, type) and issubclass(node.type, torch.Tensor))
    elif node.op == "get_attr":
        obj = gm
        try:
            for part in node.target.split("."):
                obj = getattr(obj, part)
            result = isinstance(obj, torch.Tensor)
        except AttributeError:
            result = False
    elif node.op == "call_method":
        result = node.target not in _NON_TENSOR_METHODS
    elif node.op == "call_function":
        if node.target is getattr:
            result = False
        elif node.target is operator.getitem:
            src = node.args[0]
            result = isinstance(src, fx.Node) and _produces_tensor(gm, src, memo) and not (
                src.op == "call_function" and src.target is getattr)
        elif node.target in _FUNC_OPS or getattr(node.target, "__module__", None) in ("_operator", "operator"):
            result = any(isinstance(a, fx.Node) and _produces_tensor(gm, a, memo) for a in node.args)
        else:
            result = True
    elif node.op == "output":
        result = False
    memo[node] = result
    return result


def _fuse_elementwise(gm, details):
    graph = gm.graph
    nodes = list(graph.nodes)
    order = {n: i for i, n in enumerate(nodes)}
    tensor_memo = {}
    specs = {}
    for n in nodes:
        s = _spec(gm, n)
        if s is None:
            continue
        # At least one tensor operand; every node operand a tensor (they become inputs or chain values).
        node_ops = [a for a in s.operands if isinstance(a, fx.Node)]
        if not node_ops:
            continue
        specs[n] = s
    # Tensor-ness: a spec'd node is a tensor when one of its operands is.
    candidates = {}
    for n in nodes:
        if n not in specs:
            continue
        ok = True
        for a in specs[n].operands:
            if isinstance(a, fx.Node) and not (a in candidates or _produces_tensor(gm, a, tensor_memo)):
                ok = False
        if ok:
            candidates[n] = specs[n]

    assigned = set()
    count = 0
    for root in reversed(nodes):
        if root not in candidates or root in assigned:
            continue
        group = {root}
        changed = True
        while changed:
            changed = False
            for member in list(group):
                for a in candidates[member].operands:
                    if (isinstance(a, fx.Node) and a in candidates and a not in group and a not in assigned
                            and all(u in group for u in a.users)):
                        group.add(a)
                        changed = True
        # In-place members must modify a value produced inside the group, or a fresh one (a fused
        # op's result) that nothing else reads.
        bad = True
        while bad:
            bad = False
            for member in list(group):
                s = candidates[member]
                if s.inplace is not None and not _private(s.operands[s.inplace], member, group):
                    if member is root:
                        group = set()
                    else:
                        group = _without(group, member, candidates, root)
                    bad = True
                    break
        if len(group) < 2:
            continue
        _replace_group(gm, group, root, candidates, order, details)
        assigned |= group
        count += 1
    return count


def _private(value, member, group):
    """Whether `member` may modify `value` in place inside a fused group: `value` is produced in
    the group, or by a fused mlu op (a fresh tensor), and `member` is its only user."""
    if value in group:
        return True
    return (value.op == "call_function" and isinstance(value.target, torch._ops.OpOverloadPacket)
            and str(value.target).startswith("mlu.") and list(value.users) == [member])


def _without(group, member, candidates, root):
    """`group` less `member` and whatever fed the root only through it."""
    keep = {root}
    stack = [root]
    while stack:
        n = stack.pop()
        for a in candidates[n].operands:
            if isinstance(a, fx.Node) and a in group and a is not member and a not in keep:
                keep.add(a)
                stack.append(a)
    # Members reachable only through `member` are dropped; the rest must still have all users inside.
    changed = True
    while changed:
        changed = False
        for n in list(keep):
            if n is not root and not all(u in keep for u in n.users):
                keep.discard(n)
                changed = True
    return keep


def _replace_group(gm, group, root, candidates, order, details):
    graph = gm.graph
    members = sorted(group, key=lambda n: order[n])
    inputs, index = [], {}
    uses = {n: sum(1 for m in members for a in candidates[m].operands if a is n) for n in members}
    for m in members:  # cast_like(op, self) reads self once more
        s = candidates[m]
        if s.like is not None and s.operands[s.like] in uses:
            uses[s.operands[s.like]] += 1
    lets, counter = [], [0]
    text = {}

    def operand(a):
        if isinstance(a, fx.Node):
            if a in group:
                return text[a]
            if a not in index:
                index[a] = len(inputs)
                inputs.append(a)
            return f"${index[a]}"
        return _literal_text(a)

    for m in members:
        s = candidates[m]
        if s.op == "cast":
            expr = f"cast({operand(s.operands[0])}, {s.dtype})"
        else:
            parts = [operand(a) for a in s.operands]
            if s.alpha is not None and s.alpha != 1:
                parts.append(_literal_text(s.alpha))
            expr = f"{s.op}({', '.join(parts)})"
            if s.like is not None:
                expr = f"cast_like({expr}, {operand(s.operands[s.like])})"
        if m is not root and uses[m] > 1:
            name = f"t{counter[0]}"
            counter[0] += 1
            lets.append(f"{name} = {expr}")
            text[m] = name
        else:
            text[m] = expr
    program = "; ".join(lets + [text[root]])
    with graph.inserting_before(root):
        fused = graph.call_function(torch.ops.mlu.elementwise, (inputs, program))
    fused.meta = dict(root.meta)
    root.replace_all_uses_with(fused)
    for m in reversed(members):
        graph.erase_node(m)
    details.append({"pattern": "elementwise", "node": fused.name, "program": program, "ops": len(members)})


# ---- the public API --------------------------------------------------------------------------------------

def _check_patterns(patterns):
    if patterns is None:
        return list(PATTERNS)
    if isinstance(patterns, str):
        patterns = [patterns]
    patterns = list(patterns)
    unknown = [p for p in patterns if p not in PATTERNS]
    if unknown:
        raise ValueError(f"torch_mlu.fuse: unknown pattern(s) {unknown}; known: {list(PATTERNS)}")
    return patterns


def fuse(module, patterns=None):
    """Returns an fx.GraphModule computing `module` with the fused ops ``torch.ops.mlu.*``.

    `module`: an nn.Module in eval mode (or an fx.GraphModule) that torch.fx can trace; it is not
    modified (the result shares its parameters and buffers). `patterns`: a subset of
    ("conv_bn_act", "linear_act", "elementwise"), None for all. The result's ``fusion_matches``
    attribute counts the matches per pattern (``fusion_report`` lists them). Raises ValueError for
    a module in training mode: fusion is for inference (BatchNorm folding reads the running
    statistics; the fused ops have no backward)."""
    patterns = _check_patterns(patterns)
    if not isinstance(module, nn.Module):
        raise TypeError(f"torch_mlu.fuse: expected an nn.Module, got {type(module).__name__}")
    training = [name or "(root)" for name, m in module.named_modules() if m.training]
    if training:
        raise ValueError("torch_mlu.fuse: the module is in training mode (" + ", ".join(training[:3]) +
                         (", ..." if len(training) > 3 else "") + "); call module.eval() first: fusion is for "
                         "inference (BatchNorm folding uses the running statistics, the fused ops have no backward)")
    if isinstance(module, fx.GraphModule):
        gm = fx.GraphModule(module, copy.deepcopy(module.graph))
        gm.eval()
    else:
        gm = fx.symbolic_trace(module)
    return _fuse_graph(gm, patterns)


def _fuse_graph(gm, patterns):
    """Rewrites `gm` (an fx.GraphModule) in place with the patterns and returns it. No training-mode
    check: for graphs whose ops carry their own mode (TorchDynamo's, where batch_norm has an explicit
    training=False and parameters are graph inputs)."""
    details = []
    matches = {p: 0 for p in PATTERNS}
    if "conv_bn_act" in patterns:
        matches["conv_bn_act"] = _fuse_conv_bn_act(gm, details)
    if "linear_act" in patterns:
        matches["linear_act"] = _fuse_linear_act(gm, details)
    if "elementwise" in patterns:
        matches["elementwise"] = _fuse_elementwise(gm, details)
    # get_attr nodes made for a pattern that did not match are dead: drop them (they have no effect).
    for n in list(gm.graph.nodes):
        if n.op == "get_attr" and not n.users:
            gm.graph.erase_node(n)
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    gm.fusion_matches = matches
    gm.fusion_details = details
    return gm


def fusion_report(gm):
    """{"matches": {pattern: count}, "fused": [one dict per fused node: pattern, node name,
    activation / program]} of a module returned by fuse()."""
    if not hasattr(gm, "fusion_matches"):
        raise ValueError("torch_mlu.fusion_report: expected a module returned by torch_mlu.fuse")
    return {"matches": dict(gm.fusion_matches), "fused": [dict(d) for d in gm.fusion_details]}


def _to_device(value, device):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    return value


def _first_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (list, tuple)):
        for v in value:
            t = _first_tensor(v)
            if t is not None:
                return t
    if isinstance(value, dict):
        for v in value.values():
            t = _first_tensor(v)
            if t is not None:
                return t
    return None


def report_totals(rep):
    """A cycle report's (torch_mlu.cycle_report(format="json")) totals: kernel cycles summed,
    simulated_ns (the epoch's elapsed time), dram_bytes (the bytes that crossed the DRAM channels:
    GDRAM read + written, less the reads the L2 served, plus its over-fetch) and kernel_launches."""
    return {"cycles": int(sum(k["cycles"] for k in rep["kernels"])),
            "simulated_ns": float(rep["elapsed_ns"]),
            "dram_bytes": int(rep["memory_traffic"]["DRAM"]["bytes"]),
            "kernel_launches": int(rep["kernel_launches"])}


def _measure(module, inputs, device):
    from . import sim, synchronize

    with torch.no_grad():
        synchronize(device)
        sim.reset_stats(device)
        sim.flush_l2(device)  # each measured run from a cold L2, whatever ran before it
        out = module(*inputs)
        synchronize(device)
        rep = sim.cycle_report(device, format="json")
    totals = report_totals(rep)
    metrics = {
        "cycles": totals["cycles"],
        "time_ns": totals["simulated_ns"],
        "dram_bytes": totals["dram_bytes"],
        "op_dram_bytes": int(sum(o["min_dram_bytes"] for o in rep["ops"])),
        "kernel_launches": totals["kernel_launches"],
        "ops": {o["name"]: {"calls": o["calls"], "kernels": o["kernels"], "cycles": o["cycles"],
                            "dram_bytes": o["dram_bytes"], "min_dram_bytes": o["min_dram_bytes"]}
                for o in rep["ops"]},
    }
    return metrics, out


def _delta(unfused, fused):
    keys = ("cycles", "time_ns", "dram_bytes", "op_dram_bytes", "kernel_launches")
    return {k: {"unfused": unfused[k], "fused": fused[k], "saved": unfused[k] - fused[k],
                "ratio": (fused[k] / unfused[k]) if unfused[k] else None} for k in keys}


def fusion_compare(module, example_inputs, patterns=None, device=None):
    """Runs `module` unfused and fused (all requested patterns together, and each pattern alone)
    on the MLU `device` (default: the current one) with `example_inputs` (a tuple of arguments;
    tensors are moved to the device, as is a copy of `module` if its tensors are elsewhere) and
    returns the cycle-report figures of one forward each::

        {"matches": {pattern: n},
         "unfused": {"cycles", "time_ns", "dram_bytes", "op_dram_bytes", "kernel_launches", "ops"},
         "fused":   {... the same with every requested pattern},
         "total":   {metric: {"unfused", "fused", "saved", "ratio"}},
         "patterns": {pattern: {"matches": n, "fused": {...}, "delta": {metric: {...}}}},
         "max_abs_diff": largest |fused - unfused| of the first output}

    cycles: kernel cycles summed; time_ns: simulated time of the forward; dram_bytes: the cycle
    report's GDRAM traffic (reads + writes, tiling re-reads included); op_dram_bytes: the ops'
    minimum DRAM bytes (every input read once, every output written once); kernel_launches:
    kernels launched; ops: the report's op table (calls, kernels, cycles, DRAM bytes). Runs under
    torch.no_grad(); the example inputs are uploaded before the measured forward."""
    from . import _device_index

    patterns = _check_patterns(patterns)
    dev = torch.device("mlu", _device_index(device))
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    tensors = list(module.parameters()) + list(module.buffers())
    if any(t.device != dev for t in tensors):
        module = copy.deepcopy(module).to(dev)
    inputs = tuple(_to_device(v, dev) for v in example_inputs)

    unfused, out_ref = _measure(module, inputs, dev)
    fused_all = fuse(module, patterns)
    fused, out = _measure(fused_all, inputs, dev)
    ref, got = _first_tensor(out_ref), _first_tensor(out)
    diff = None
    if ref is not None and got is not None:
        diff = float((got.cpu().float() - ref.cpu().float()).abs().max()) if ref.numel() else 0.0
    result = {"matches": dict(fused_all.fusion_matches), "unfused": unfused, "fused": fused,
              "total": _delta(unfused, fused), "patterns": {}, "max_abs_diff": diff}
    for p in patterns:
        if len(patterns) == 1:
            one, metrics = fused_all, fused
        else:
            one = fuse(module, [p])
            metrics, _ = _measure(one, inputs, dev)
        result["patterns"][p] = {"matches": one.fusion_matches[p], "fused": metrics,
                                 "delta": _delta(unfused, metrics)}
    return result
