"""The result of ``torch_mlu.compare`` (precision.py): per-layer errors of the device run and of
the CPU in the model's own dtype, both against the CPU in float64, and how they are printed
(terminal table) and saved (JSON, also read by ``mlusim report``'s precision section).

Definitions (one tensor at a time, all in float64 on the host):

- ``abs_err`` = max |x - ref| over the elements; ``rel_err`` = abs_err / max |ref| (the largest
  magnitude of the reference tensor, floored at float64's smallest normal, so a reference that is
  exactly zero gives 0 when x is zero too and a huge value otherwise). One scale per tensor rather
  than per element: an elementwise ratio is dominated by elements that cancel to ~0, which fp32
  cannot get right either.
- ``cpu_rel_err``: the same for the CPU run in the model's dtype (normally float32): the error that
  this dtype's arithmetic alone causes at that layer.
- ``ratio`` = rel_err / max(cpu_rel_err, u), u the dtype's unit roundoff (2^-24 for float32): how
  many times worse than the CPU the device is. A value the CPU gets exactly right does not give an
  infinite ratio.
- A tensor is **flagged** when rel_err > threshold and ratio > cpu_margin (cpu_margin None or 0:
  the threshold alone). The second condition keeps values that are rounding noise on every
  backend (e.g. the gradient of a bias that a following train-mode BatchNorm cancels: exactly 0
  in exact arithmetic, ~1e-9 in any float) from hiding the real fault.
- Non-finite values: the same NaN/inf pattern on both sides compares the finite elements only; a
  different pattern is an infinite error (noted). A shape mismatch or a tensor missing from one run
  is an infinite error too.

A layer (one call of one module) is flagged when any of its own tensors is: the forward outputs,
or in the backward the gradients its backward produced (for its inputs and its own parameters).
Its "in" tensors are what its computation depended on: the forward inputs; in the backward the
gradient of its outputs and its forward inputs and outputs (what autograd saved). ``first_flagged``
is the first flagged layer in execution order (backward: the order in which the layers' backwards
finished, a parent after its children); ``origin`` is the first flagged layer whose in-tensors were
all within the threshold: the layer whose own computation introduced the error. They differ when
an error starts between modules (a functional op in a parent's forward: the next module is flagged
first but was given wrong inputs, so the origin is the parent). A forward error reaches the
backward of every layer after it (their saved values are wrong), so the backward then has no
origin: fix the forward first. The forward of a model with a backward-only fault stays clean."""

import html
import json
import math

__all__ = ["LayerDiff", "PrecisionReport", "TensorDiff", "tensor_diff"]

_TINY = 2.2250738585072014e-308  # float64's smallest normal: the floor of the relative scale


class TensorDiff:
    """One tensor of one layer: errors of the device and of the CPU (model dtype) against float64."""

    __slots__ = ("name", "shape", "abs_err", "rel_err", "cpu_abs_err", "cpu_rel_err", "ratio", "flagged", "note",
                 "elements_over", "kink_elements", "rel_err_without_kink")

    def __init__(self, name, shape, abs_err, rel_err, cpu_abs_err, cpu_rel_err, ratio, flagged, note="",
                 elements_over=0):
        self.name, self.shape = name, shape
        self.abs_err, self.rel_err = abs_err, rel_err
        self.cpu_abs_err, self.cpu_rel_err = cpu_abs_err, cpu_rel_err
        self.ratio, self.flagged, self.note = ratio, flagged, note
        self.elements_over = elements_over  # device elements with |x - ref| > threshold * max|ref|
        # Set by the kink check (precision.py): elements where the device's forward input is on
        # the other side of 0 than float64's, and the relative error without them.
        self.kink_elements, self.rel_err_without_kink = 0, None

    @property
    def explained_by_kink(self):
        """Flagged only because of elements at a kink (see precision.py's _kink_check)."""
        return self.flagged and self.kink_elements > 0 and self.rel_err_without_kink is not None

    def to_json(self):
        return {"name": self.name, "shape": self.shape, "abs_err": _num(self.abs_err), "rel_err": _num(self.rel_err),
                "cpu_abs_err": _num(self.cpu_abs_err), "cpu_rel_err": _num(self.cpu_rel_err),
                "ratio": _num(self.ratio), "flagged": self.flagged, "elements_over": self.elements_over,
                "kink_elements": self.kink_elements, "explained_by_kink": self.explained_by_kink,
                "rel_err_without_kink": _num(self.rel_err_without_kink), "note": self.note}

    def __repr__(self):
        return (f"TensorDiff({self.name!r}, rel_err={self.rel_err:.3g}, cpu_rel_err={self.cpu_rel_err:.3g}, "
                f"flagged={self.flagged})")


def _error(ref, got):
    """(abs_err, rel_err, note) of `got` against `ref` (float64 host tensors or None)."""
    if got is None:
        return math.inf, math.inf, "missing in this run"
    if tuple(got.shape) != tuple(ref.shape):
        return math.inf, math.inf, f"shape {list(got.shape)} instead of {list(ref.shape)}"
    if got.is_complex() or ref.is_complex():
        raise TypeError("compare: complex tensors are not supported")
    if ref.numel() == 0:
        return 0.0, 0.0, ""
    finite_r, finite_g = ref.isfinite(), got.isfinite()
    note = ""
    if not bool(finite_r.all()) or not bool(finite_g.all()):
        # Same non-finite pattern (NaN where NaN, +inf where +inf): compare the finite rest.
        same = (finite_r == finite_g) & ((finite_r) | (ref.isnan() & got.isnan()) | (ref == got))
        if not bool(same.all()):
            n = int((~same).sum())
            return math.inf, math.inf, f"{n} element(s) non-finite in one run only"
        ref, got = ref[finite_r], got[finite_r]
        note = "same non-finite elements in both runs"
        if ref.numel() == 0:
            return 0.0, 0.0, note
    abs_err = float((got - ref).abs().max())
    scale = float(ref.abs().max())
    return abs_err, abs_err / max(scale, _TINY), note


def tensor_diff(name, ref, cpu, dev, threshold, cpu_margin, unit_roundoff):
    """The TensorDiff of one tensor from its three runs (float64 host tensors; `cpu`/`dev` may be None)."""
    abs_err, rel_err, note = _error(ref, dev)
    cpu_abs, cpu_rel, cpu_note = _error(ref, cpu)
    if cpu_note and not note:
        note = "CPU run: " + cpu_note
    if math.isinf(cpu_rel):  # the CPU run itself failed (shape, missing): no ratio to speak of
        ratio = math.inf if math.isinf(rel_err) else 0.0
    else:
        ratio = rel_err / max(cpu_rel, unit_roundoff)
    flagged = rel_err > threshold and (not cpu_margin or ratio > cpu_margin)
    over = 0
    if dev is not None and tuple(dev.shape) == tuple(ref.shape) and ref.numel():
        finite = ref.isfinite()
        scale = max(float(ref[finite].abs().max()) if bool(finite.any()) else 0.0, _TINY)
        diff = (dev - ref).abs()
        same = ~finite & ((dev == ref) | (dev.isnan() & ref.isnan()))  # the same inf/NaN: no error
        over = int((diff.nan_to_num(math.inf, math.inf, math.inf).masked_fill(same, 0.0) > threshold * scale).sum())
    return TensorDiff(name, list(ref.shape), abs_err, rel_err, cpu_abs, cpu_rel, ratio, flagged, note, over)


class LayerDiff:
    """One call of one module in one phase ("forward" or "backward").

    `tensors`: its own tensors (forward outputs; backward: gradients of its inputs and of its own
    parameters); `inputs`: what it was given (forward inputs; backward: gradients of its outputs).
    `order`: position in execution order within the phase (0 first)."""

    __slots__ = ("phase", "order", "module", "call", "type", "tensors", "inputs")

    def __init__(self, phase, order, module, call, type_name, tensors, inputs):
        self.phase, self.order, self.module, self.call, self.type = phase, order, module, call, type_name
        self.tensors, self.inputs = tensors, inputs

    @property
    def name(self):
        """The module's qualified name (``(model)`` for the root), with ``#n`` for its n-th call after the first."""
        return (self.module or "(model)") + (f" #{self.call}" if self.call else "")

    @property
    def flagged(self):
        return any(t.flagged for t in self.tensors)

    @property
    def inputs_flagged(self):
        return any(t.flagged for t in self.inputs)

    @property
    def explained_by_kink(self):
        """Flagged, but only because a few forward inputs fell on the other side of an activation's
        kink at 0 than in float64 (the gradient jumps there): rounding sensitivity of the model at
        this input, not a fault of the device's kernels (see precision.py's _kink_check)."""
        flagged = [t for t in self.tensors if t.flagged]
        return bool(flagged) and all(t.explained_by_kink for t in flagged)

    @property
    def worst(self):
        """The tensor that stands for the layer: the flagged one with the largest ratio to the CPU's
        error if any is flagged, else the one with the largest ratio (None without tensors)."""
        pool = [t for t in self.tensors if t.flagged] or self.tensors
        return max(pool, key=lambda t: (t.ratio, t.rel_err), default=None)

    @property
    def rel_err(self):
        return max((t.rel_err for t in self.tensors), default=0.0)

    @property
    def abs_err(self):
        return max((t.abs_err for t in self.tensors), default=0.0)

    @property
    def input_rel_err(self):
        return max((t.rel_err for t in self.inputs), default=0.0)

    def to_json(self):
        worst = self.worst
        return {"order": self.order, "module": self.module, "call": self.call, "name": self.name, "type": self.type,
                "flagged": self.flagged, "explained_by_kink": self.explained_by_kink,
                "worst": worst.name if worst else None,
                "abs_err": _num(self.abs_err), "rel_err": _num(self.rel_err),
                "worst_rel_err": _num(worst.rel_err) if worst else None,
                "worst_cpu_rel_err": _num(worst.cpu_rel_err) if worst else None,
                "worst_ratio": _num(worst.ratio) if worst else None,
                "input_rel_err": _num(self.input_rel_err), "inputs_flagged": self.inputs_flagged,
                "tensors": [t.to_json() for t in self.tensors], "inputs": [t.to_json() for t in self.inputs]}

    def __repr__(self):
        return (f"LayerDiff({self.phase}, {self.name!r}, {self.type}, rel_err={self.rel_err:.3g}, "
                f"flagged={self.flagged})")


class PrecisionReport:
    """What ``torch_mlu.compare`` found. Attributes: ``forward`` and ``backward`` (lists of
    LayerDiff in execution order; ``backward`` is empty when backward=False), ``parameters``
    (TensorDiff of every parameter's final ``.grad``), ``settings`` (dict: model, device, config,
    mode, dtype, loss, threshold, cpu_margin, ...), ``cpu_fallback_ops`` (ops that ran on the CPU
    through the fallback during the device run: {op: calls}; empty unless the fallback is on).
    ``first_flagged(phase)`` / ``origin(phase)`` name the layer (see the module docstring)."""

    def __init__(self, forward, backward, parameters, settings, cpu_fallback_ops):
        self.forward, self.backward, self.parameters = forward, backward, parameters
        self.settings, self.cpu_fallback_ops = settings, cpu_fallback_ops

    def _layers(self, phase):
        if phase not in ("forward", "backward"):
            raise ValueError(f"phase must be 'forward' or 'backward', got {phase!r}")
        return self.forward if phase == "forward" else self.backward

    def first_flagged(self, phase="forward"):
        """The first flagged layer of `phase` in execution order, or None."""
        return next((layer for layer in self._layers(phase) if layer.flagged), None)

    def origin(self, phase="forward"):
        """The first flagged layer of `phase` whose inputs were all within the threshold: where the
        error starts. None when nothing is flagged, or when every flagged layer was already given
        wrong values (in the backward: a forward error reaches every backward that uses the
        forward's values; an error made outside every module, e.g. by loss_fn)."""
        return next((layer for layer in self._layers(phase) if layer.flagged and not layer.inputs_flagged), None)

    @property
    def ok(self):
        """True when no layer and no parameter gradient is flagged."""
        return not any(layer.flagged for layer in self.forward + self.backward) and not any(
            p.flagged for p in self.parameters)

    # ---- output ---------------------------------------------------------------------------------

    def to_json(self):
        """A JSON-ready dict (non-finite numbers as the strings "inf", "-inf", "nan"); the format
        is documented in torch_bridge/README.md ("Precision alignment")."""
        def phase(name):
            first, origin = self.first_flagged(name), self.origin(name)
            return {"first_flagged": first.name if first else None, "origin": origin.name if origin else None,
                    "layers": [layer.to_json() for layer in self._layers(name)]}

        return {"mlusim_precision": 1, "settings": dict(self.settings),
                "definitions": {"rel_err": "max|x - ref64| / max|ref64| per tensor",
                                "ratio": "rel_err / max(cpu_rel_err, unit roundoff of the model dtype)",
                                "flagged": "rel_err > threshold and ratio > cpu_margin "
                                           "(threshold alone when cpu_margin is 0/None)"},
                "ok": self.ok, "forward": phase("forward"), "backward": phase("backward"),
                "parameters": [p.to_json() for p in self.parameters], "cpu_fallback_ops": dict(self.cpu_fallback_ops)}

    def dump(self, path):
        """Writes to_json() to `path` (indented JSON)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, indent=1)
            f.write("\n")

    def table(self, max_rows=40):
        """The terminal report: settings, per phase a summary line and a table of layers (at most
        `max_rows` per phase, starting a few rows before the first flagged one; None = all), then
        the parameter gradients that are flagged."""
        s = self.settings
        lines = [f"precision: {s.get('model')} on {s.get('device')} ({s.get('config')}) against the CPU in float64; "
                 f"CPU {s.get('dtype')} for comparison; {s.get('mode')} mode; loss = {s.get('loss')}",
                 f"rel = max|x - ref64| / max|ref64| per tensor; ratio = device rel / CPU {s.get('dtype')} rel; "
                 f"flagged (!) when rel > {s.get('threshold'):g}"
                 + (f" and ratio > {s.get('cpu_margin'):g}" if s.get("cpu_margin") else "")]
        if self.cpu_fallback_ops:
            lines.append("CPU fallback ran during the device run (not device kernels): "
                         + ", ".join(f"{op} x{n}" for op, n in sorted(self.cpu_fallback_ops.items())))
        for name in ("forward", "backward"):
            layers = self._layers(name)
            if not layers and name == "backward" and not s.get("backward", True):
                continue
            lines.append("")
            lines.extend(self._phase_lines(name, layers, max_rows))
        flagged = [p for p in self.parameters if p.flagged]
        if self.parameters:
            worst = max(self.parameters, key=lambda p: (p.ratio, p.rel_err))
            lines.append("")
            lines.append(f"parameter gradients: {len(flagged)} of {len(self.parameters)} flagged; largest device rel "
                         f"{_fmt(max(p.rel_err for p in self.parameters))}, largest CPU rel "
                         f"{_fmt(max(p.cpu_rel_err for p in self.parameters))}; worst ratio: {worst.name} "
                         f"(rel {_fmt(worst.rel_err)}, CPU {_fmt(worst.cpu_rel_err)})")
            for p in flagged[: max_rows if max_rows is not None else len(flagged)]:
                lines.append(f"  ! {p.name:<48} rel {_fmt(p.rel_err)}  CPU rel {_fmt(p.cpu_rel_err)}  "
                             f"ratio {_fmt(p.ratio)}"
                             + (f"  ({p.note})" if p.note else ""))
        return "\n".join(lines)

    def _phase_lines(self, name, layers, max_rows):
        first, origin = self.first_flagged(name), self.origin(name)
        head = f"{name}: {len(layers)} module calls; "
        if first is None:
            head += "no layer flagged"
        else:
            w = first.worst
            head += (f"first flagged: {first.name} ({first.type}) {w.name} rel {_fmt(w.rel_err)}, "
                     f"CPU rel {_fmt(w.cpu_rel_err)}")
            if origin is None:
                head += "; no flagged layer had correct inputs"
                if name == "backward":
                    head += " (forward values or output gradients): fix the forward first"
            elif origin is not first:
                w = origin.worst
                head += f"; error starts at: {origin.name} ({origin.type}) {w.name} rel {_fmt(w.rel_err)}"
            if origin is not None and origin.explained_by_kink:
                w = origin.worst
                head += (f"\n  {origin.name}: {w.kink_elements} of {_numel(w.shape)} elements had their forward input "
                         f"on the other side of 0 than in float64 (an activation kink: the gradient jumps there); "
                         f"without them rel {_fmt(w.rel_err_without_kink)}. Rounding sensitivity of this input, "
                         f"not a kernel fault.")
        out = [head]
        if not layers:
            return out
        in_label = "in rel"
        out.append(f"  {'#':>4}  {'module':<36} {'type':<18} {'tensor':<22} {'max abs':>9} {'rel':>9} "
                   f"{'CPU rel':>9} {'ratio':>9} {in_label:>12}")
        rows = layers
        if max_rows is not None and len(layers) > max_rows:
            start = max(0, (first.order if first else 0) - 3)
            start = min(start, len(layers) - max_rows)
            rows = layers[start:start + max_rows]
            if start:
                out.append(f"  ... {start} earlier rows")
        for layer in rows:
            w = layer.worst
            mark = "!" if layer.flagged else " "
            if layer is origin:
                mark = "<"
            out.append(f"{mark} {layer.order:>4}  {_cut(layer.name, 36):<36} {_cut(layer.type, 18):<18} "
                       f"{_cut(w.name if w else '-', 22):<22} {_fmt(w.abs_err if w else 0.0):>9} "
                       f"{_fmt(w.rel_err if w else 0.0):>9} {_fmt(w.cpu_rel_err if w else 0.0):>9} "
                       f"{_fmt(w.ratio if w else 0.0):>9} {_fmt(layer.input_rel_err):>12}")
        if rows is not layers and rows[-1] is not layers[-1]:
            out.append(f"  ... {len(layers) - rows[-1].order - 1} later rows (table(max_rows=None) shows all)")
        if origin is not None:
            out.append("  (< marks where the error starts, ! other flagged layers)")
        return out

    def to_html(self, standalone=False):
        """The report as an HTML section (class "mlusim-precision"; every text escaped): settings, per
        phase the summary and a table of all layers (flagged rows marked, the origin first), and the
        flagged parameter gradients. standalone=True wraps it in a whole page with its own CSS."""
        esc = html.escape
        s = self.settings
        out = ['<section class="mlusim-precision">', "<h2>Precision against the CPU in float64</h2>",
               f"<p>{esc(str(s.get('model')))} on {esc(str(s.get('device')))} ({esc(str(s.get('config')))}); "
               f"CPU {esc(str(s.get('dtype')))} for comparison; {esc(str(s.get('mode')))} mode; loss = "
               f"{esc(str(s.get('loss')))}. rel = max|x &minus; ref64| / max|ref64| per tensor; flagged when rel &gt; "
               f"{s.get('threshold'):g}"
               + (f" and &gt; {s.get('cpu_margin'):g}&times; the CPU's" if s.get("cpu_margin") else "") + "</p>"]
        if self.cpu_fallback_ops:
            out.append("<p>CPU fallback during the device run: " + esc(", ".join(
                f"{op} x{n}" for op, n in sorted(self.cpu_fallback_ops.items()))) + "</p>")
        for name in ("forward", "backward"):
            layers = self._layers(name)
            if not layers:
                continue
            first, origin = self.first_flagged(name), self.origin(name)
            summary = "no layer flagged" if first is None else (
                f"first flagged: {first.name} ({first.type})"
                + ("; no flagged layer had correct inputs" if origin is None else
                   (f"; error starts at: {origin.name} ({origin.type})" if origin is not first else ""))
                + (f"; explained by an activation kink: {origin.worst.note}"
                   if origin is not None and origin.explained_by_kink else ""))
            out.append(f"<h3>{name}: {len(layers)} module calls</h3><p>{esc(summary)}</p>")
            out.append("<details" + (" open" if first else "") + "><summary>layers</summary><table><thead><tr>"
                       "<th>#</th><th>module</th><th>type</th><th>tensor</th><th>max abs</th><th>rel</th>"
                       "<th>CPU rel</th><th>ratio</th><th>in rel</th><th>note</th></tr></thead><tbody>")
            for layer in layers:
                w = layer.worst
                cls = "origin" if layer is origin else ("flagged" if layer.flagged else "")
                cells = [str(layer.order), layer.name, layer.type, w.name if w else "-", _fmt(w.abs_err if w else 0.0),
                         _fmt(w.rel_err if w else 0.0), _fmt(w.cpu_rel_err if w else 0.0), _fmt(w.ratio if w else 0.0),
                         _fmt(layer.input_rel_err), w.note if w else ""]
                out.append(f'<tr class="{cls}">' + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
            out.append("</tbody></table></details>")
        flagged = [p for p in self.parameters if p.flagged]
        if self.parameters:
            out.append(f"<h3>parameter gradients: {len(flagged)} of {len(self.parameters)} flagged</h3>")
            if flagged:
                out.append("<table><thead><tr><th>parameter</th><th>rel</th><th>CPU rel</th><th>ratio</th></tr>"
                           "</thead><tbody>")
                for p in flagged:
                    cells = (p.name, _fmt(p.rel_err), _fmt(p.cpu_rel_err), _fmt(p.ratio))
                    out.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
                out.append("</tbody></table>")
        out.append("</section>")
        section = "\n".join(out)
        if not standalone:
            return section
        css = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}"
               "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td:nth-child(2),td:nth-child(3),"
               "td:nth-child(4),td:nth-child(10){text-align:left}tr.flagged{background:#fde2e2}"
               "tr.origin{background:#f8b4b4;font-weight:bold}")
        return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>precision: {esc(str(s.get('model')))}"
                f"</title><style>{css}</style></head><body>\n{section}\n</body></html>\n")

    def __str__(self):
        return self.table()

    def __repr__(self):
        f, b = self.origin("forward"), self.origin("backward")
        return (f"PrecisionReport(forward={len(self.forward)} layers, origin {f.name if f else None}; "
                f"backward={len(self.backward)} layers, origin {b.name if b else None}; ok={self.ok})")


def _num(x):
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def _fmt(x):
    if math.isinf(x):
        return "inf"
    if math.isnan(x):
        return "nan"
    return "0" if x == 0 else f"{x:.2e}"


def _numel(shape):
    return math.prod(shape)


def _cut(text, width):
    return text if len(text) <= width else "..." + text[-(width - 3):]
