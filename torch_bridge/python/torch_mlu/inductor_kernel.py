"""One Inductor kernel for the device: the fused nodes' loop bodies recorded as a value graph, then
emitted as Python that launches libmlu kernels.

Inductor hands a backend's Scheduling fused groups of nodes, each a loop body over an iteration
space (``sizes`` pointwise dims, ``rsizes`` reduction dims) that calls ``ops.load``, arithmetic,
``ops.reduction`` and ``ops.store``. Triton backends print that body per element; the simulated
device has no per-element code path, so this kernel records the body once as a graph of values
(``_Value``) with tensor semantics over the whole iteration space, and emits:

- **Loads** as views of the buffer: an index linear in the iteration variables,
  ``offset + sum(c_i * v_i)``, is ``as_strided(buffer, shape, strides=c, offset)`` (stride 0 ->
  size 1, broadcast); any other index (``//``, ``%``, indirect ``tmp`` indices, loads under a mask)
  is evaluated into an index tensor on the device and gathered with ``index_select``.
- **Arithmetic** as few ``torch.ops.mlu.elementwise`` launches as possible: every maximal region of
  ops the elementwise program language has (add, mul, div, exp, where, compares, casts, ...; see
  torch_mlu/fusion.py) becomes ONE libmlu ``elementwise_program`` kernel that streams its inputs
  through NRAM and writes one result; ops outside the language (erf, floor, atan2, ...) run as the
  device's eager ATen kernel on the region's inputs. Nothing runs on the CPU.
- **Reductions** (sum, prod, amax, amin, argmax, argmin, any, welford) as the device's reduction
  kernels over the reduction dims, of the program result that feeds them.
- **Stores** as ``copy_`` into a view of the output buffer (``index_copy_`` / ``index_add_`` for
  non-linear or atomic-add indices). Stores to buffers that Inductor removed (used only inside the
  kernel) are skipped: their consumers in the kernel read the value directly.

The cost model is therefore the device's: a fused pointwise chain is one program kernel plus the
store's copy, instead of one kernel (and one DRAM round trip) per op.
"""

import itertools

import sympy
import torch
from torch._inductor.codegen.common import Kernel
from torch._inductor.ops_handler import DefaultHandler
from torch._inductor.utils import sympy_index_symbol
from torch._inductor.virtualized import V
from torch.utils._sympy.functions import CleanDiv, FloorDiv, Identity, ModularIndexing, PythonMod

__all__ = ["MluKernel", "PROGRAM_OPS", "Unsupported"]


class Unsupported(NotImplementedError):
    """An op of a loop body that this kernel cannot express (raised at compile time, naming it)."""


# Inductor op name -> elementwise program op (torch_mlu/fusion.py lists the program language).
PROGRAM_OPS = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "div": "div", "pow": "pow",
    "maximum": "maximum", "minimum": "minimum", "neg": "neg", "abs": "abs", "square": "square",
    "relu": "relu", "exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "sigmoid": "sigmoid",
    "tanh": "tanh", "reciprocal": "reciprocal", "sin": "sin", "cos": "cos",
    "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
    "logical_not": "logical_not", "where": "where", "cast_like": "cast_like",
}

# Program cast targets (DTYPE names of the program language).
_PROGRAM_DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.int8: "i8", torch.int32: "i32",
                   torch.int64: "i64", torch.bool: "bool"}

# Inductor op name -> eager device expression (format fields: the operands' Python names).
_EAGER_OPS = {
    "floordiv": "torch.div({0}, {1}, rounding_mode='floor')",
    "truncdiv": "torch.div({0}, {1}, rounding_mode='trunc')",
    "int_truediv": "torch.true_divide({0}, {1})",
    "mod": "torch.fmod({0}, {1})", "fmod": "torch.fmod({0}, {1})", "remainder": "torch.remainder({0}, {1})",
    "exp2": "torch.exp2({0})", "expm1": "torch.expm1({0})", "log1p": "torch.log1p({0})",
    "log2": "torch.log2({0})", "log10": "torch.log10({0})", "erf": "torch.erf({0})",
    "erfc": "torch.erfc({0})", "erfinv": "torch.erfinv({0})", "tan": "torch.tan({0})",
    "asin": "torch.asin({0})", "acos": "torch.acos({0})", "atan": "torch.atan({0})",
    "sinh": "torch.sinh({0})", "cosh": "torch.cosh({0})", "asinh": "torch.asinh({0})",
    "acosh": "torch.acosh({0})", "atanh": "torch.atanh({0})", "atan2": "torch.atan2({0}, {1})",
    "hypot": "torch.hypot({0}, {1})", "floor": "torch.floor({0})", "ceil": "torch.ceil({0})",
    "trunc": "torch.trunc({0})", "round": "torch.round({0})", "sign": "torch.sign({0})",
    "signbit": "torch.signbit({0})", "isnan": "torch.isnan({0})", "isinf": "torch.isinf({0})",
    "copysign": "torch.copysign({0}, {1})", "lgamma": "torch.lgamma({0})",
    "digamma": "torch.digamma({0})", "bitwise_and": "torch.bitwise_and({0}, {1})",
    "bitwise_or": "torch.bitwise_or({0}, {1})", "bitwise_xor": "torch.bitwise_xor({0}, {1})",
    "bitwise_not": "torch.bitwise_not({0})", "left_shift": "torch.bitwise_left_shift({0}, {1})",
    "right_shift": "torch.bitwise_right_shift({0}, {1})", "fma": "torch.addcmul({2}, {0}, {1})",
    "nextafter": "torch.nextafter({0}, {1})", "xlogy": "torch.xlogy({0}, {1})",
    "cast_like": "{0}.to({1}.dtype)",
}

# Inductor's boolean ops on masks (ops.and_/or_/xor: bool operands) in program terms.
PROGRAM_OPS.update({"and_": "logical_and", "or_": "logical_or", "xor": "logical_xor"})


def _torch_function(name):
    """torch's elementwise function for Inductor op `name` when they share the name (Inductor's
    ops mirror ATen's; 'libdevice_' variants are Triton spellings of the same op), else None."""
    name = name[len("libdevice_"):] if name.startswith("libdevice_") else name
    if name in ("load", "store", "reduction", "scan", "sort", "bucketize") or name.startswith("_"):
        return None
    fn = getattr(torch, name, None) or getattr(torch.special, name, None)
    if not callable(fn):
        return None
    return name if getattr(torch, name, None) is fn else f"special.{name}"


class _Value:
    """A node of the kernel's value graph. kind: load | const | index | op | cast | reduction |
    item (one output of a tuple-valued reduction) | indirect."""

    __slots__ = ("kind", "op", "args", "dtype", "extra", "uid")
    _ids = itertools.count()

    def __init__(self, kind, op=None, args=(), dtype=None, extra=None):
        self.kind, self.op, self.args, self.dtype, self.extra = kind, op, tuple(args), dtype, extra
        self.uid = next(self._ids)

    def operands(self):
        if self.kind == "random":  # the offset only numbers elements for Philox: not computed here
            return [a for a in self.args[1:] if isinstance(a, _Value)]
        return [a for a in self.args if isinstance(a, _Value)]


def _literal(value, dtype=None):
    """A Python literal for generated code (and the program language: true/false/inf/-inf/nan)."""
    if isinstance(value, bool) or dtype == torch.bool:
        return "True" if value else "False"
    if isinstance(value, float) or (dtype is not None and dtype.is_floating_point):
        v = float(value)
        if v != v:
            return "float('nan')"
        if v in (float("inf"), float("-inf")):
            return "float('inf')" if v > 0 else "float('-inf')"
        return repr(v)
    return repr(int(value))


def _program_literal(value, dtype=None):
    text = _literal(value, dtype)
    return {"True": "true", "False": "false", "float('nan')": "nan", "float('inf')": "inf",
            "float('-inf')": "-inf"}.get(text, text)


def _plain(index):
    """index without Inductor's Identity wrappers (they only stop sympy from simplifying)."""
    index = sympy.sympify(index)
    if index.has(Identity):
        index = index.replace(lambda e: isinstance(e, Identity), lambda e: e.args[0])
    return index


class _Recorder(DefaultHandler):
    """The ops handler loop bodies run against: records values instead of printing code."""

    def __init__(self, kernel):
        self.k = kernel

    def _default(self, name, args, kwargs):
        if name in PROGRAM_OPS or name in _EAGER_OPS or _torch_function(name) is not None:
            folded = _fold(name, args)
            if folded is not None:
                return self.k.value("const", args=(folded,))
            return self.k.value("op", name, args)
        raise Unsupported(f"torch.compile on mlu: the Inductor op '{name}' has no device lowering yet")

    # -- memory ----------------------------------------------------------------------------------
    def load(self, name, index):
        return self.k.record_load(name, index)

    def store(self, name, index, value, mode=None):
        self.k.record_store(name, index, value, mode)

    def store_reduction(self, name, index, value):
        self.k.record_store(name, index, value, None)

    def reduction(self, dtype, src_dtype, reduction_type, value):
        return self.k.record_reduction(dtype, src_dtype, reduction_type, value)

    # -- values ----------------------------------------------------------------------------------
    def constant(self, value, dtype):
        return self.k.value("const", args=(value,), dtype=dtype)

    def index_expr(self, expr, dtype):
        return self.k.value("index", args=(_plain(expr),), dtype=dtype)

    def to_dtype(self, x, dtype, src_dtype=None, use_compute_types=True):
        return self.k.value("cast", args=(x,), dtype=dtype)

    def to_dtype_bitcast(self, x, dtype, src_dtype):
        return self.k.value("bitcast", args=(x,), dtype=dtype)

    def masked(self, mask, body, other):
        self.k.mask_stack.append(mask)
        try:
            value = body()
        finally:
            self.k.mask_stack.pop()
        # `other` is a Python number whatever the body's dtype (0.0 for an int64 load): it takes
        # the body's dtype, as Triton's tl.where does.
        other = self._default("cast_like", (self.k.value("const", args=(other,)), value), {})
        return self._default("where", (mask, value, other), {})

    def indirect_indexing(self, index_var, size, check=True, wrap_neg=True):
        return self.k.record_indirect(index_var, size, wrap_neg)

    def check_bounds(self, expr, size, lower, upper):
        return None  # indices come from the program; out-of-range ones fail in index_select

    def device_assert_async(self, cond, msg):
        return None

    # Random numbers: Inductor draws them per element from a seed buffer and the element's offset
    # (Philox in Triton). The device draws them from its own generator (libmlu's random kernels)
    # over the iteration space instead: the same distribution, independent per element, one
    # kernel, but not the bits Triton's Philox would give (as CUDA's eager and compiled dropout
    # masks differ too).
    def load_seed(self, name, offset):
        return self.k.value("seed", name, (offset,))

    def rand(self, seed, offset):
        return _Value("random", "rand", (offset,))

    def randn(self, seed, offset):
        return _Value("random", "randn", (offset,))

    def randint64(self, seed, offset, low, high):
        return _Value("random", "randint64", (offset, low, high))

    def partial_accumulate(self, name, reduction_type, value, extra_meta=None):
        raise Unsupported("torch.compile on mlu: partial_accumulate")


class MluKernel(Kernel):
    """The kernel of one fused node group with iteration space sizes x rsizes (see module doc)."""

    def __init__(self, sizes, rsizes):
        super().__init__()
        self.sizes, self.rsizes = list(sizes), list(rsizes)
        self.xvars = [sympy_index_symbol(f"x{i}") for i in range(len(self.sizes))]
        self.rvars = [sympy_index_symbol(f"r{i}") for i in range(len(self.rsizes))]
        self.vars = self.xvars + self.rvars
        self.var_sizes = dict(zip(self.vars, self.sizes + self.rsizes))
        self.mask_stack = []
        self.stores = []          # (buffer name, index, _Value, mode)
        self.stored = {}          # buffer name -> (index, _Value): loads of it read the value
        self.indirect = {}        # indirect symbol -> (_Value, size, wrap_neg)
        self.kernel_name = None
        self.ops_handler = _Recorder(self)
        self.cse = {}             # value key -> _Value: one value per distinct computation

    def value(self, kind, op=None, args=(), dtype=None, extra=None):
        """The _Value of (kind, op, args, dtype, extra), shared when several nodes compute it."""
        key = (kind, op, tuple(("v", a.uid) if isinstance(a, _Value) else ("c", type(a).__name__, a)
                               for a in args), dtype, extra)
        try:
            return self.cse.setdefault(key, _Value(kind, op, args, dtype, extra))
        except TypeError:  # an unhashable literal
            return _Value(kind, op, args, dtype, extra)

    # ---- recording -------------------------------------------------------------------------------
    def record_load(self, name, index):
        index = _plain(V.graph.sizevars.simplify(index))
        if name in self.stored and self.stored[name][0] == index and not self.mask_stack:
            return self.stored[name][1]
        return self.value("load", name, (index,), extra=bool(self.mask_stack))

    def record_store(self, name, index, value, mode):
        index = _plain(V.graph.sizevars.simplify(index))
        self.store_buffer_names.add(name)
        self.stores.append((name, index, value, mode))
        for key in [k for k in self.cse if k[0] == "load" and k[1] == name]:
            del self.cse[key]  # later loads of `name` read what this store wrote
        if mode is None:
            self.stored[name] = (index, value)

    def record_reduction(self, dtype, src_dtype, reduction_type, value):
        if reduction_type in ("welford_reduce", "welford_combine"):
            r = self.value("reduction", reduction_type, value if isinstance(value, tuple) else (value,),
                           dtype=dtype)
            return tuple(self.value("item", args=(r,), extra=i) for i in range(3))
        if reduction_type not in _REDUCTIONS:
            raise Unsupported(f"torch.compile on mlu: the reduction '{reduction_type}' has no device lowering yet")
        return self.value("reduction", reduction_type, (value,), dtype=dtype)

    def record_indirect(self, value, size, wrap_neg):
        sym = sympy_index_symbol(f"tmp_indirect{len(self.indirect)}")
        self.indirect[sym] = (value, size, wrap_neg)
        return sym

    def record(self, nodes):
        """Runs each scheduler node's loop body against the recorder."""
        with V.set_ops_handler(self.ops_handler), V.set_kernel_handler(self):
            for node in nodes:
                node.codegen([self.xvars, self.rvars])

    # ---- the iteration space -----------------------------------------------------------------------
    def refine_iteration_space(self):
        """Splits loop variables where the recorded indices divide them, so that they become linear.

        Inductor merges contiguous dims into one loop variable and indexes the others with
        ``v // d`` and ``v % m`` (a read of a [2, 16] slice with row stride 17 through v in
        [0, 32): ``17 * (v // 16) + v % 16``). With v = 16 * v1 + v0 (v1 < 2, v0 < 16) that index
        is ``17 * v1 + v0``: a strided view instead of an index tensor and a gather. Each variable
        of constant size N is split at the divisors d (and d * m) of its ``//`` and ``%`` terms
        that form a divisibility chain dividing N; the sub-variables keep v's place, outermost
        first, so flat order (and argmax's reduction index) is unchanged."""
        exprs = [v.args[0] for v in self.cse.values() if v.kind in ("load", "index")]
        exprs += [index for _, index, _, _ in self.stores]
        points = {v: set() for v in self.vars}
        for e in exprs:
            for f in e.atoms(FloorDiv, CleanDiv):
                if f.args[0] in points and f.args[1].is_Integer:
                    points[f.args[0]].add(int(f.args[1]))
            for m in e.atoms(ModularIndexing):
                base, div, mod = m.args
                if base in points and div.is_Integer and mod.is_Integer:
                    points[base].update((int(div), int(div) * int(mod)))
        replacements, new_vars, new_sizes, nx = {}, [], {}, 0
        for i, var in enumerate(self.vars):
            size = self.var_sizes[var]
            chain = []
            if size.is_Integer:
                for p in sorted(points[var]):
                    if 1 < p < int(size) and int(size) % p == 0 and (not chain or p % chain[-1] == 0):
                        chain.append(p)
            if not chain:
                new_vars.append(var)
                new_sizes[var] = size
                nx += i < len(self.xvars)
                continue
            bounds = [1] + chain + [int(size)]
            subs = [sympy_index_symbol(f"{var.name}_{k}") for k in range(len(bounds) - 1)]
            replacements[var] = sum(bounds[k] * subs[k] for k in range(len(subs)))
            for k in reversed(range(len(subs))):  # outermost (largest stride) first
                new_vars.append(subs[k])
                new_sizes[subs[k]] = sympy.Integer(bounds[k + 1] // bounds[k])
                nx += i < len(self.xvars)
        if not replacements:
            return
        ranges = dict(new_sizes)

        def rewrite(e):
            return V.graph.sizevars.simplify_with_ranges(sympy.expand(e.xreplace(replacements)), ranges)

        for v in list(self.cse.values()):
            if v.kind in ("load", "index"):
                v.args = (rewrite(v.args[0]),) + v.args[1:]
        self.stores = [(name, rewrite(index), value, mode) for name, index, value, mode in self.stores]
        self.xvars, self.rvars = new_vars[:nx], new_vars[nx:]
        self.vars = new_vars
        self.var_sizes = new_sizes
        self.sizes = [new_sizes[v] for v in self.xvars]
        self.rsizes = [new_sizes[v] for v in self.rvars]

    # ---- emission --------------------------------------------------------------------------------
    def codegen_function(self, name):
        """The kernel as the source of a Python function `name(*args)` (args: python_argdefs)."""
        emitter = _Emitter(self)
        source = emitter.function(name)
        self.launches = emitter.launches()
        return source


_REDUCTIONS = {
    "sum": "torch.sum({v}, dim=-1, keepdim=True{dtype})",
    "prod": "torch.prod({v}, dim=-1, keepdim=True{dtype})",
    "max": "torch.amax({v}, dim=-1, keepdim=True)",
    "min": "torch.amin({v}, dim=-1, keepdim=True)",
    "argmax": "torch.argmax({v}, dim=-1, keepdim=True)",
    "argmin": "torch.argmin({v}, dim=-1, keepdim=True)",
    "any": "torch.any({v}, dim=-1, keepdim=True)",
}


class _Emitter:
    """Turns a recorded MluKernel into Python source (see the module doc for the mapping)."""

    def __init__(self, kernel):
        self.k = kernel
        self.lines = []
        self.names = {}           # _Value uid -> Python name of its tensor (or literal text)
        self.counter = itertools.count()
        self.consumers = {}       # uid -> set of consumer uids (graph edges)
        self.roots = set()        # uids that must be materialized (stored, reduced, eager operands)
        self.nx, self.nr = len(kernel.sizes), len(kernel.rsizes)
        self.iotas = {}           # loop variable -> Python name of its arange (one per kernel)

    # ---- helpers ---------------------------------------------------------------------------------
    def tmp(self):
        return f"t{next(self.counter)}"

    def emit(self, line):
        self.lines.append(line)

    def size_expr(self, expr):
        """Python text of a size/stride expression (size symbols become kernel arguments)."""
        expr = V.graph.sizevars.simplify(sympy.sympify(expr))
        if expr.is_Integer:
            return str(int(expr))
        renamed = self.k.rename_indexing(expr)
        from torch._inductor.codegen.common import PythonPrinter  # noqa: PLC0415

        return PythonPrinter().doprint(renamed)

    def shape(self, reduced=False):
        sizes = [self.size_expr(s) for s in self.k.sizes]
        sizes += ["1"] * self.nr if reduced else [self.size_expr(s) for s in self.k.rsizes]
        return "(" + "".join(s + ", " for s in sizes) + ")"

    # ---- graph analysis --------------------------------------------------------------------------
    def walk(self):
        """Records every value's consumers from the stores down (and the values that must be
        materialized: stored ones and the indirect indices of loads)."""
        seen = set()

        def visit(v):
            if v.uid in seen:
                return
            seen.add(v.uid)
            for a in v.operands():
                self.consumers.setdefault(a.uid, set()).add(v.uid)
                visit(a)
            if v.kind == "load":
                for sym in v.args[0].free_symbols:
                    if sym in self.k.indirect:
                        ind = self.k.indirect[sym][0]
                        self.consumers.setdefault(ind.uid, set()).add(v.uid)
                        self.roots.add(ind.uid)
                        visit(ind)

        for _, _, value, _ in self.k.stores:
            if isinstance(value, _Value):
                visit(value)
                self.roots.add(value.uid)

    # ---- values ----------------------------------------------------------------------------------
    def value(self, v):
        """The Python name (or literal) of value v, emitting what computes it."""
        if v.uid in self.names:
            return self.names[v.uid]
        if v.kind == "const":
            text = _literal(v.args[0], v.dtype)
        elif v.kind == "load":
            text = self.load(v)
        elif v.kind == "index":
            text = self.index_tensor(v.args[0], v.dtype)
        elif v.kind == "reduction":
            text = self.reduction(v)
        elif v.kind == "item":
            self.value(v.args[0])
            text = f"{self.names[v.args[0].uid]}[{v.extra}]"
        elif v.kind == "random":
            text = self.tmp()
            dev = f"device={self.device_arg()}.device"
            if v.op == "rand":
                self.emit(f"{text} = torch.rand({self.shape()}, {dev})")
            elif v.op == "randn":
                self.emit(f"{text} = torch.randn({self.shape()}, {dev})")
            else:
                low, high = (self.value(a) if isinstance(a, _Value) else _literal(a) for a in v.args[1:])
                self.emit(f"{text} = torch.randint(int({low}), int({high}), {self.shape()}, {dev})")
        elif v.kind == "bitcast":
            text = self.tmp()
            self.emit(f"{text} = {self.value(v.args[0])}.view({v.dtype})")
        elif self.programmable(v):
            text = self.program(v)
        elif v.kind == "cast":
            text = self.tmp()
            self.emit(f"{text} = _as_tensor({self.value(v.args[0])}, {self.device_arg()}).to({v.dtype})")
        else:
            text = self.eager(v)
        self.names[v.uid] = text
        return text

    def device_arg(self):
        """The kernel function's name for its first tensor argument (bound in function())."""
        return "_dev"

    def programmable(self, v):
        if v.kind == "op":
            return v.op in PROGRAM_OPS
        if v.kind == "cast":
            return v.dtype in _PROGRAM_DTYPES
        return False

    def eager(self, v):
        args = [self.value(a) if isinstance(a, _Value) else _literal(a) for a in v.args]
        tensors = [f"_as_tensor({a}, {self.device_arg()})" for a in args]
        if v.op in _EAGER_OPS:
            expr = _EAGER_OPS[v.op].format(*tensors)
        else:  # an op of Inductor's that is torch's function of the same name (lgamma, i0, ...)
            expr = f"torch.{_torch_function(v.op)}({', '.join(tensors)})"
        name = self.tmp()
        self.emit(f"{name} = {expr}")
        return name

    def program(self, root, into=None):
        """One torch.ops.mlu.elementwise launch for the largest program-expressible region at root
        (into: a view to store the result in with torch.ops.mlu.elementwise_into: no copy)."""
        region = {root.uid}
        nodes = {root.uid: root}
        order = [root]
        frontier = [root]
        while frontier:  # grow: an operand joins when every consumer of it is already inside
            v = frontier.pop()
            for a in v.operands():
                if a.uid in region or a.uid in self.names or a.uid in self.roots:
                    continue
                if not self.programmable(a):
                    continue
                if not self.consumers.get(a.uid, set()) <= region:
                    continue
                region.add(a.uid)
                nodes[a.uid] = a
                order.append(a)
                frontier.append(a)
        inputs, input_index = [], {}
        uses = {}
        for v in nodes.values():
            for a in v.operands():
                if a.uid in region:
                    uses[a.uid] = uses.get(a.uid, 0) + 1

        def operand(a):
            if not isinstance(a, _Value):
                return _program_literal(a)
            if a.uid in region:
                return local[a.uid]
            if a.kind == "const" and a.uid not in self.names:
                return _program_literal(a.args[0], a.dtype)
            name = self.value(a)
            if name not in input_index:
                input_index[name] = len(inputs)
                inputs.append(name)
            return f"${input_index[name]}"

        local, stmts = {}, []
        for v in sorted(order, key=lambda n: n.uid):  # uid order is creation order: producers first
            if v.kind == "cast":
                text = f"cast({operand(v.args[0])}, {_PROGRAM_DTYPES[v.dtype]})"
            else:
                text = f"{PROGRAM_OPS[v.op]}({', '.join(operand(a) for a in v.args)})"
            if v is not root and uses.get(v.uid, 0) > 1:
                local[v.uid] = f"v{v.uid}"
                stmts.append(f"v{v.uid} = {text};")
            else:
                local[v.uid] = text
        name = self.tmp()
        if not inputs:  # constants only: no tensor to stream
            if into is not None:
                self.emit(f"{name} = {into}.fill_({_literal(_const_eval(root))})")
            else:
                self.emit(f"{name} = torch.full({self.shape()}, {_literal(_const_eval(root))}, "
                          f"device={self.device_arg()}.device)")
            return name
        program = " ".join(stmts + [local[root.uid]])
        if into is not None:
            self.emit(f"{name} = torch.ops.mlu.elementwise_into([{', '.join(inputs)}], {program!r}, {into})")
        else:
            self.emit(f"{name} = torch.ops.mlu.elementwise([{', '.join(inputs)}], {program!r})")
        return name

    def reduction(self, v):
        src = v.args
        full = self.shape()
        name = self.tmp()
        if v.op in ("welford_reduce", "welford_combine"):
            if v.op == "welford_reduce":
                # m2 = n * biased variance (Welford's M2): the device's var_mean kernel, one pass.
                x = self.flat_r(self.value(src[0]), full)
                self.emit(f"{name}_n = {x}.shape[-1]")
                self.emit(f"{name}_var, {name}_mean = torch.var_mean({x}, dim=-1, correction=0, keepdim=True)")
                self.emit(f"{name}_m2 = torch.ops.mlu.elementwise([{name}_var], f'mul($0, {{float({name}_n)}})')")
                self.emit(f"{name} = ({self.unflat(name + '_mean')}, {self.unflat(name + '_m2')}, "
                          f"torch.full_like({self.unflat(name + '_mean')}, float({name}_n)))")
            else:
                mean, m2, w = (self.flat_r(self.value(a), full) for a in src)
                self.emit(f"{name}_n = torch.sum({w}, dim=-1, keepdim=True)")
                self.emit(f"{name}_mean = torch.sum({w} * {mean}, dim=-1, keepdim=True) / {name}_n")
                self.emit(f"{name}_m2 = torch.sum({m2} + {w} * torch.square({mean} - {name}_mean), dim=-1, keepdim=True)")
                self.emit(f"{name} = ({self.unflat(name + '_mean')}, {self.unflat(name + '_m2')}, {self.unflat(name + '_n')})")
            return name
        x = self.flat_r(self.value(src[0]), full)
        dtype = ""
        if v.op in ("sum", "prod") and v.dtype is not None:
            dtype = f", dtype={v.dtype}"
        self.emit(f"{name} = {self.unflat(_REDUCTIONS[v.op].format(v=x, dtype=dtype))}")
        return name

    def flat_r(self, x, full):
        """x broadcast to the full iteration shape, its reduction dims flattened into the last."""
        name = self.tmp()
        self.emit(f"{name} = _as_tensor({x}, {self.device_arg()}).expand({full}).flatten({self.nx})"
                  if self.nr else f"{name} = {x}")
        return name

    def unflat(self, expr):
        return f"({expr}).view({self.shape(reduced=True)})"

    # ---- indexing --------------------------------------------------------------------------------
    def linear(self, index):
        """(offset, {var: coefficient}) when index is linear in the iteration variables with
        coefficients free of them; None otherwise (or when it uses indirect indices)."""
        index = sympy.expand(index)
        if any(s in self.k.indirect for s in index.free_symbols):
            return None
        offset, coeffs = sympy.Integer(0), {}
        for term in sympy.Add.make_args(index):
            vs = [s for s in term.free_symbols if s in self.k.var_sizes]
            if not vs:
                offset += term
                continue
            if len(vs) != 1 or term.has(FloorDiv, ModularIndexing, sympy.Mod, sympy.floor):
                return None
            c = sympy.simplify(term / vs[0])
            if c.free_symbols & set(self.k.var_sizes):
                return None
            coeffs[vs[0]] = coeffs.get(vs[0], 0) + c
        return offset, coeffs

    def view(self, buf, index):
        """A strided view of buffer `buf` (Python name) for a linear index, or None. A loop
        variable the index does not use is a size-1 dim (broadcast; a reduction's store index uses
        no reduction variable, so its view has the reduced shape)."""
        lin = self.linear(index)
        if lin is None:
            return None
        offset, coeffs = lin
        sizes, strides = [], []
        for var in self.k.vars:
            c = coeffs.get(var, 0)
            if c == 0:
                sizes.append("1")
                strides.append("0")
            else:
                sizes.append(self.size_expr(self.k.var_sizes[var]))
                strides.append(self.size_expr(c))
        off = self.size_expr(offset)
        return (f"{buf}.as_strided(({''.join(s + ', ' for s in sizes)}), "
                f"({''.join(s + ', ' for s in strides)}), {buf}.storage_offset() + {off})")

    def index_tensor(self, expr, dtype=torch.int64):
        """An int64 device tensor of expr over the iteration space (broadcast shape): one program
        kernel over the loop variables' iotas when expr is a sum of products (the usual case once
        refine_iteration_space has removed // and %), else a chain of device ops."""
        expr = sympy.sympify(expr)
        name = self.tmp()
        program = self.index_program(expr, [])
        if program is not None:
            text, inputs = program
            cast = f"cast({text}, {_PROGRAM_DTYPES.get(dtype, 'i64')})" if dtype in _PROGRAM_DTYPES else text
            self.emit(f"{name} = torch.ops.mlu.elementwise([{', '.join(inputs)}], {cast!r})")
            return name
        self.emit(f"{name} = {self.sym_tensor(expr)}")
        if dtype is not None and dtype != torch.int64:
            self.emit(f"{name} = {name}.to({dtype})")
        return name

    def iota(self, var):
        """The arange of loop variable `var`, shaped to broadcast along its dim (one per kernel)."""
        if var not in self.iotas:
            i = self.k.vars.index(var)
            shape = ["1"] * len(self.k.vars)
            shape[i] = "-1"
            name = self.tmp()
            self.emit(f"{name} = torch.arange({self.size_expr(self.k.var_sizes[var])}, "
                      f"device={self.device_arg()}.device).view({', '.join(shape)})")
            self.iotas[var] = name
        return self.iotas[var]

    def index_program(self, e, inputs):
        """(program text, input names) computing e with add/mul over iotas and indirect indices,
        or None when e needs other ops (or has no tensor operand)."""
        def text(x):
            if x.is_Integer:
                return str(int(x))
            if x in self.k.var_sizes or x in self.k.indirect:
                if x in self.k.var_sizes:
                    name = self.iota(x)
                else:
                    value, size, wrap_neg = self.k.indirect[x]
                    name = self.value(value)
                    if wrap_neg:
                        wrapped = self.tmp()
                        self.emit(f"{wrapped} = torch.ops.mlu.elementwise([{name}], "
                                  f"'where(lt($0, 0), add($0, {int(size)}), cast($0, i64))')" if sympy.sympify(size).is_Integer
                                  else f"{wrapped} = torch.where({name} < 0, {name} + {self.size_expr(size)}, {name})")
                        name = wrapped
                if name not in inputs:
                    inputs.append(name)
                return f"cast(${inputs.index(name)}, i64)"
            if isinstance(x, (sympy.Add, sympy.Mul)) and x.args:
                parts = [text(a) for a in x.args]
                if any(p is None for p in parts):
                    return None
                op = "add" if isinstance(x, sympy.Add) else "mul"
                out = parts[0]
                for p in parts[1:]:
                    out = f"{op}({out}, {p})"
                return out
            return None

        body = text(e)
        if body is None or not inputs:
            return None
        return body, inputs

    def sym_tensor(self, e):
        """Python text evaluating sympy expr e as a device tensor (or int) over the iteration space."""
        if e.is_Integer:
            return str(int(e))
        if e in self.k.var_sizes:
            return self.iota(e)
        if e in self.k.indirect:
            value, size, wrap_neg = self.k.indirect[e]
            t = self.value(value)
            size_text = self.size_expr(size)
            return f"torch.where({t} < 0, {t} + {size_text}, {t}).to(torch.int64)" if wrap_neg else f"{t}.to(torch.int64)"
        if e.is_Symbol:
            return self.size_expr(e)
        if isinstance(e, sympy.Add):
            return "(" + " + ".join(self.sym_tensor(a) for a in e.args) + ")"
        if isinstance(e, sympy.Mul):
            return "(" + " * ".join(self.sym_tensor(a) for a in e.args) + ")"
        if isinstance(e, Identity):
            return self.sym_tensor(e.args[0])
        if isinstance(e, (FloorDiv, CleanDiv)):
            return f"torch.div({self.sym_tensor(e.args[0])}, {self.sym_tensor(e.args[1])}, rounding_mode='floor')"
        if isinstance(e, ModularIndexing):
            x, d, m = (self.sym_tensor(a) for a in e.args)
            return f"torch.remainder(torch.div({x}, {d}, rounding_mode='floor'), {m})"
        if isinstance(e, (sympy.Mod, PythonMod)):
            return f"torch.remainder({self.sym_tensor(e.args[0])}, {self.sym_tensor(e.args[1])})"
        if isinstance(e, (sympy.Min, sympy.Max)):
            fn = "torch.minimum" if isinstance(e, sympy.Min) else "torch.maximum"
            text = self.sym_tensor(e.args[0])
            for a in e.args[1:]:
                text = f"{fn}(_as_tensor({text}, _dev), _as_tensor({self.sym_tensor(a)}, _dev))"
            return text
        raise Unsupported(f"torch.compile on mlu: index expression {e} has no device lowering yet")

    def gather(self, buf, index, masked):
        """Elements of buffer `buf` at a non-linear index. Under a mask the index is clamped into
        the buffer (masked-off lanes may compute any index; their values are discarded)."""
        idx = self.index_tensor(index)
        name = self.tmp()
        self.emit(f"{name} = _gather({buf}, {idx}, clamp={masked})")
        return name

    def load(self, v):
        name = self.k.args.input(v.op)
        view = self.view(name, v.args[0])
        if view is not None and not (v.extra and self.may_leave(v.op, v.args[0])):
            t = self.tmp()
            self.emit(f"{t} = {view}")
            return t
        return self.gather(name, v.args[0], masked=bool(v.extra))

    def may_leave(self, buffer, index):
        """Whether a linear index can point outside its buffer for some iteration point (masked
        loads: constant_pad reads x - 1 at x = 0, cat reads past a row). Such loads gather with
        clamping instead; the others read a view whose masked-off lanes are discarded."""
        lin = self.linear(index)
        if lin is None:
            return True
        offset, coeffs = lin
        sizes = [self.k.var_sizes[v] for v in coeffs]
        if not (all(sympy.sympify(c).is_Integer for c in coeffs.values()) and sympy.sympify(offset).is_Integer
                and all(sz.is_Integer for sz in sizes)):
            return True
        spans = [int(c) * (int(self.k.var_sizes[v]) - 1) for v, c in coeffs.items()]
        low = int(offset) + sum(min(0, x) for x in spans)
        high = int(offset) + sum(max(0, x) for x in spans)
        numel = sympy.sympify(V.graph.get_numel(buffer))
        return low < 0 or not numel.is_Integer or high >= int(numel)

    def launches(self):
        """What the kernel launches per call, by kind (device kernels; views launch none):
        program (fused elementwise), reduction, eager (single ATen op), gather, scatter, copy."""
        counts = {"program": 0, "reduction": 0, "eager": 0, "gather": 0, "scatter": 0, "copy": 0}
        for line in self.lines:
            if "torch.ops.mlu.elementwise(" in line or "torch.ops.mlu.elementwise_into(" in line:
                counts["program"] += 1
            elif any(f"torch.{r}(" in line for r in ("sum", "prod", "amax", "amin", "argmax", "argmin", "any",
                                                       "var_mean")):
                counts["reduction"] += 1
            elif "_gather(" in line:
                counts["gather"] += 1
            elif "_scatter" in line:
                counts["scatter"] += 1
            elif ".copy_(" in line:
                counts["copy"] += 1
            elif "= torch." in line and ".as_strided(" not in line:
                counts["eager"] += 1
        return counts

    # ---- the function ----------------------------------------------------------------------------
    def function(self, fname):
        k = self.k
        self.walk()
        # Arguments first (loads register inputs while emitting; outputs registered here).
        for name, _, _, _ in k.stores:
            if name not in k.removed_buffers:
                k.args.output(name)
        for name, index, value, mode in k.stores:
            if name in k.removed_buffers:
                continue
            out = k.args.output(name)
            view = self.view(out, index) if mode is None else None
            if (view is not None and isinstance(value, _Value) and value.uid not in self.names
                    and self.programmable(value)):
                # The program stores straight into the output's view (its one write to DRAM);
                # other consumers of the value read it there.
                self.names[value.uid] = self.program(value, into=view)
                continue
            val = self.value(value) if isinstance(value, _Value) else _literal(value)
            if view is not None:
                self.emit(f"{view}.copy_(_as_tensor({val}, {out}))")
            else:
                idx = self.index_tensor(index)
                fn = "_scatter_add" if mode == "atomic_add" else "_scatter"
                self.emit(f"{fn}({out}, {idx}, _as_tensor({val}, {out}))")
        arg_defs, _, _, _ = k.args.python_argdefs()
        params = [a.name if hasattr(a, "name") else str(a) for a in arg_defs]
        tensor_params = [p for p in params if not p.startswith("ks")]
        head = [f"def {fname}({', '.join(params)}):"]
        if tensor_params:
            head.append(f"    _dev = {tensor_params[0]}")
        return "\n".join(head + ["    " + line for line in self.lines] + ["    return None"]) + "\n"


_FOLD = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b, "neg": lambda a: -a, "maximum": max, "minimum": min,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "and_": lambda a, b: bool(a and b), "or_": lambda a, b: bool(a or b),
    "logical_and": lambda a, b: bool(a and b), "logical_or": lambda a, b: bool(a or b),
    "logical_not": lambda a: not a, "where": lambda c, a, b: a if c else b,
    "cast_like": lambda a, b: type(b)(a),
}


def _fold(name, args):
    """The value of op `name` when every operand is a constant (Inductor's bodies compare loop
    constants, e.g. max_pool's window offsets), else None. Python semantics, as the program's."""
    if name not in _FOLD:
        return None
    vals = []
    for a in args:
        if isinstance(a, _Value):
            if a.kind != "const":
                return None
            vals.append(a.args[0])
        elif isinstance(a, (bool, int, float)):
            vals.append(a)
        else:
            return None
    try:
        return _FOLD[name](*vals)
    except (ArithmeticError, TypeError):
        return None


def _const_eval(v):
    """The value of a constant-only program region (all leaves constants) computed on the host."""
    import math  # noqa: PLC0415

    if v.kind == "const":
        return v.args[0]
    if v.kind == "cast":
        return _const_eval(v.args[0])
    vals = [_const_eval(a) if isinstance(a, _Value) else a for a in v.args]
    table = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
             "truediv": lambda a, b: a / b, "neg": lambda a: -a, "exp": math.exp,
             "maximum": max, "minimum": min, "where": lambda c, a, b: a if c else b}
    if v.op not in table:
        raise Unsupported(f"torch.compile on mlu: constant-only '{v.op}'")
    return table[v.op](*vals)
