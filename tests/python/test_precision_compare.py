"""torch_mlu.compare (precision.py, precision_report.py): the per-layer precision report of a model
on the device against the CPU in float64.

The faults are planted on the device side only, so the CPU runs stay the reference: a module whose
forward output is 1e-3 off on the device, a custom autograd Function whose backward is 1e-3 off,
an error made between two modules in a parent's forward, and a forward input nudged across
ReLU's kink. The tool must name exactly the planted layer (forward and backward separately), and
flag nothing on an unmodified model. Small models on the tiny preset: each compare takes well
under a second."""

import json
import math
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_mlu

PLANT = 1e-3


def _on_device(t):
    return t.device.type == "mlu"


class FwdFault(nn.Module):
    """A linear layer whose device output is PLANT relatively off (a kernel with a forward bug)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        y = self.lin(x)
        return y * (1 + PLANT) if _on_device(y) else y


class _SkewGrad(torch.autograd.Function):
    """Identity forward; on the device the backward scales the gradient by 1 + PLANT."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g * (1 + PLANT) if _on_device(g) else g


class BwdFault(nn.Module):
    """A linear layer followed by a backward fault in the module's own code (after its child)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        return _SkewGrad.apply(self.lin(x))


def _mlp(middle=None, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(inplace=True),
                         middle if middle is not None else nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 16), nn.GELU(),
                         nn.Linear(16, 4))


def _x(seed=1):
    return torch.randn(4, 8, generator=torch.Generator().manual_seed(seed))


def test_clean_model_flags_nothing():
    report = torch_mlu.compare(_mlp(), _x(), mode="train")
    assert report.ok, report.table(None)
    assert report.first_flagged("forward") is None and report.first_flagged("backward") is None
    assert report.origin("forward") is None and report.origin("backward") is None
    # Every module call is there, children before parents, the root last.
    assert [layer.name for layer in report.forward] == ["0", "1", "2", "3", "4", "5", "6", "7", "(model)"]
    assert report.forward[1].type == "BatchNorm1d"
    # The device's errors are float32 rounding: the same order as the CPU's float32 run.
    for layer in report.forward + report.backward:
        for t in layer.tensors:
            assert t.rel_err < 1e-5 or t.ratio < 10, (layer, t)
    # Backward: the gradients each call produced, for its input and its own parameters.
    first_linear = next(layer for layer in report.backward if layer.name == "0")
    assert {t.name for t in first_linear.tensors} == {"grad(weight)", "grad(bias)"}  # the input needs no grad
    relu = next(layer for layer in report.backward if layer.name == "2")
    assert [t.name for t in relu.tensors] == ["grad(input)"]
    assert {p.name for p in report.parameters} == {n for n, _ in _mlp().named_parameters()}
    assert all(not p.flagged for p in report.parameters)


def test_forward_fault_is_named():
    report = torch_mlu.compare(_mlp(FwdFault()), _x(), mode="train")
    origin, first = report.origin("forward"), report.first_flagged("forward")
    assert origin is first and origin.name == "3" and origin.type == "FwdFault"
    w = origin.worst
    assert w.name == "output" and w.rel_err == pytest.approx(PLANT, rel=0.01) and w.cpu_rel_err < 1e-6
    assert not origin.inputs_flagged
    # The child before the fault is clean; everything after it is flagged, with wrong inputs.
    by_name = {layer.name: layer for layer in report.forward}
    assert not by_name["3.lin"].flagged and not by_name["2"].flagged
    assert all(by_name[n].flagged and by_name[n].inputs_flagged for n in ("4", "5", "6", "7"))
    # The backward of every later layer uses wrong forward values: no backward origin.
    assert report.first_flagged("backward") is not None and report.origin("backward") is None
    assert "fix the forward first" in report.table()


def test_backward_fault_is_named():
    report = torch_mlu.compare(_mlp(BwdFault()), _x(), mode="train")
    assert report.first_flagged("forward") is None
    origin = report.origin("backward")
    assert origin.name == "3" and origin.type == "BwdFault"
    assert origin.worst.name == "grad(input)" and origin.worst.rel_err == pytest.approx(PLANT, rel=0.01)
    # The child lin finished its backward first (a parent's backward ends after its children's) and
    # is flagged, but it was given a wrong output gradient: it is not where the error starts.
    first = report.first_flagged("backward")
    assert first.name == "3.lin" and first.inputs_flagged
    names = [layer.name for layer in report.backward]
    assert names.index("3.lin") < names.index("3") < names.index("2")
    assert all(not layer.flagged for layer in report.backward[:names.index("3.lin")])  # layers after it
    assert [p.name for p in report.parameters if p.flagged] == ["0.weight", "1.weight", "1.bias", "3.lin.weight",
                                                                "3.lin.bias"]


class BetweenModules(nn.Module):
    """The fault is in the parent's own code, between two child modules."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        h = self.a(x)
        if _on_device(h):
            h = h + PLANT * h.abs().max()
        return self.b(h)


def test_fault_between_modules_is_the_parents():
    report = torch_mlu.compare(BetweenModules(), _x(), backward=False)
    assert report.first_flagged("forward").name == "b"  # flagged first, but given wrong inputs
    assert report.origin("forward").name == "(model)"
    assert report.backward == [] and report.parameters == []


class Nudge(nn.Module):
    """Moves the device's values up by 1e-7 of their largest magnitude: float32-sized, unflagged."""

    def forward(self, x):
        return x + 1e-7 * x.detach().abs().max() if _on_device(x) else x * 1.0


def test_kink_crossing_is_explained_not_blamed():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Identity(), Nudge(), nn.ReLU(), nn.Linear(6, 3))
    x = torch.randn(2, 6)
    x[1, 2] = -1e-9  # fp64 is below ReLU's kink here; the nudged device value is above it
    report = torch_mlu.compare(model, x.requires_grad_(), mode="train")
    assert report.first_flagged("forward") is None
    origin = report.origin("backward")
    assert origin.name == "2" and origin.type == "ReLU" and origin.explained_by_kink
    g = origin.worst
    assert g.name == "grad(input)" and g.kink_elements == 1 and g.elements_over == 1
    assert g.rel_err > 0.01 and g.rel_err_without_kink < 1e-5
    assert "other side of 0" in report.table() and "not a kernel fault" in report.table()
    # A fault the kink does not explain is still blamed.
    report = torch_mlu.compare(_mlp(BwdFault()), _x(), mode="train")
    assert not report.origin("backward").explained_by_kink


class Shared(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.block = nn.Linear(4, 4)

    def forward(self, x):
        return self.block(torch.tanh(self.block(x)))


def test_module_called_twice_and_own_contribution():
    report = torch_mlu.compare(Shared(), torch.randn(3, 4), mode="eval")
    assert [layer.name for layer in report.forward] == ["block", "block #1", "(model)"]
    # Each call's backward contributes its own share of the shared weight's gradient.
    calls = {layer.name: layer for layer in report.backward}
    assert {"block", "block #1"} <= set(calls)
    assert report.ok


class DictModel(nn.Module):
    """transformers style: keyword inputs, a dict output with a nested tuple and a non-tensor."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(10, 8)
        self.proj = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.5)

    def forward(self, input_ids, scale=1.0):
        h = self.drop(self.emb(input_ids))
        out = self.proj(h) * scale
        return {"logits": out, "hidden_states": (h, out.relu()), "ids": input_ids, "note": "text"}


def test_dict_inputs_and_outputs():
    ids = torch.tensor([[1, 2, 3], [4, 5, 9]])
    report = torch_mlu.compare(DictModel(), {"input_ids": ids, "scale": 0.5}, mode="train", dropout="eval")
    root = report.forward[-1]
    assert root.name == "(model)"
    assert [t.name for t in root.tensors] == ["output.logits", "output.hidden_states[0]", "output.hidden_states[1]"]
    assert report.ok, report.table(None)
    emb = next(layer for layer in report.backward if layer.name == "emb")
    assert [t.name for t in emb.tensors] == ["grad(weight)"]  # integer ids have no gradient


def test_random_ops_are_refused():
    with pytest.raises(RuntimeError, match="module 'drop' \\(Dropout\\) drew random numbers.*dropout='eval'"):
        torch_mlu.compare(DictModel(), {"input_ids": torch.tensor([[1, 2]])}, mode="train")

    class FunctionalDropout(nn.Module):
        def forward(self, x):
            return F.dropout(x, 0.1, training=True)

    with pytest.raises(RuntimeError, match="module '\\(model\\)' \\(FunctionalDropout\\) drew random numbers"):
        torch_mlu.compare(FunctionalDropout(), torch.randn(3), dropout="eval")
    # Dropout in eval mode draws nothing.
    assert torch_mlu.compare(DictModel(), {"input_ids": torch.tensor([[1, 2]])}, mode="eval").ok


def test_user_model_is_left_alone():
    model = _mlp()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    torch_mlu.compare(model, _x(), mode="train", loss_fn=lambda out: (out ** 2).mean())
    assert model.training and all(p.grad is None for p in model.parameters())
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k  # BatchNorm's running statistics too


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_bad_arguments():
    x = torch.randn(2, 8)
    with pytest.raises(TypeError, match="model must be a torch.nn.Module, got function"):
        torch_mlu.compare(lambda t: t, x)
    with pytest.raises(TypeError, match="TorchScript"):
        torch_mlu.compare(torch.jit.script(nn.Linear(8, 2)), x)
    for bad in ("x", 3, None, {1: x}):
        with pytest.raises(TypeError, match="inputs"):
            torch_mlu.compare(nn.Linear(8, 2), bad)
    for bad in (0, -1e-5, math.nan, math.inf, True, "1e-5"):
        with pytest.raises(ValueError, match="threshold must be a finite number > 0"):
            torch_mlu.compare(nn.Linear(8, 2), x, threshold=bad)
    with pytest.raises(ValueError, match="cpu_margin"):
        torch_mlu.compare(nn.Linear(8, 2), x, cpu_margin=-1)
    with pytest.raises(ValueError, match="mode"):
        torch_mlu.compare(nn.Linear(8, 2), x, mode="training")
    with pytest.raises(ValueError, match="dropout"):
        torch_mlu.compare(nn.Linear(8, 2), x, dropout="off")
    with pytest.raises(TypeError, match="loss_fn must be callable"):
        torch_mlu.compare(nn.Linear(8, 2), x, loss_fn="sum")
    with pytest.raises(TypeError, match="scalar tensor, got a tensor of shape \\[2, 2\\]"):
        torch_mlu.compare(nn.Linear(8, 2), x, loss_fn=lambda out: out)
    with pytest.raises(RuntimeError, match="no model output requires grad"):
        torch_mlu.compare(nn.Linear(8, 2).requires_grad_(False), x)
    with pytest.raises(ValueError, match="phase"):
        torch_mlu.compare(nn.Linear(8, 2), x).origin("both")


def test_json_and_html(tmp_path):
    report = torch_mlu.compare(_mlp(FwdFault()), _x(), mode="train")
    path = tmp_path / "precision.json"
    report.dump(path)
    data = json.loads(path.read_text())
    assert data["mlusim_precision"] == 1 and data["ok"] is False
    assert data["settings"]["threshold"] == 1e-5 and data["settings"]["mode"] == "train"
    assert data["forward"]["origin"] == "3" and data["forward"]["first_flagged"] == "3"
    assert data["backward"]["origin"] is None
    layer = next(lay for lay in data["forward"]["layers"] if lay["name"] == "3")
    assert layer["flagged"] and layer["worst"] == "output" and layer["tensors"][0]["shape"] == [4, 16]
    assert layer["tensors"][0]["rel_err"] == pytest.approx(PLANT, rel=0.01)
    # Non-finite numbers are strings, so strict JSON readers (nlohmann in mlusim report) take the file.
    inf_report = torch_mlu.compare(nn.Linear(8, 2), torch.tensor([[math.inf] * 8]), backward=False)
    text = json.dumps(inf_report.to_json(), allow_nan=False)
    assert '"rel_err": 0.0' in text or '"rel_err": "inf"' in text
    page = report.to_html(standalone=True)
    assert page.startswith("<!DOCTYPE html>") and 'class="origin"' in page and "FwdFault" in page
    assert "<script" not in report.to_html()


def test_command_line(tmp_path, monkeypatch, capsys):
    """python -m torch_mlu.compare_precision, run in this process (runpy, as -m does) to spare a
    second torch import."""
    import runpy

    (tmp_path / "models.py").write_text(
        "import torch, torch.nn as nn\n"
        "def tiny():\n"
        "    torch.manual_seed(0)\n"
        "    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), (torch.randn(3, 4),)\n")

    def run(*argv):
        monkeypatch.setattr(sys, "argv", ["compare_precision", *argv])
        with pytest.raises(SystemExit) as done:
            runpy.run_module("torch_mlu.compare_precision", run_name="__main__")
        return done.value.code, capsys.readouterr()

    code, out = run(f"{tmp_path / 'models.py'}:tiny", "--json", str(tmp_path / "out.json"), "--html",
                    str(tmp_path / "out.html"), "--check")
    assert code == 0, out.err
    assert "forward: 4 module calls; no layer flagged" in out.out
    assert json.loads((tmp_path / "out.json").read_text())["ok"] is True
    assert "mlusim-precision" in (tmp_path / "out.html").read_text()
    code, out = run("no_such_model")
    assert code == 2 and "not a torchvision.models builder" in out.err
    code, out = run(f"{tmp_path / 'models.py'}:missing")
    assert code == 2 and "has no function 'missing'" in out.err
    code, out = run("resnet18", "--input-shape", "2,x")
    assert code == 2 and "comma-separated sizes" in out.err
