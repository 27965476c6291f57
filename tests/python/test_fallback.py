"""The CPU fallback is never silent: off (default) it raises naming the op and the device;
on, it runs the op on the CPU, warns once per op and counts it (also in the cycle report)."""

import warnings

import pytest
import torch

import torch_mlu
from conftest import run_python


def test_off_raises_naming_the_op_and_the_device(dev):
    x = torch.arange(4, dtype=torch.float32).to(dev)
    with pytest.raises(NotImplementedError) as info:
        torch.add(x, x)
    message = str(info.value)
    assert "op aten::add.out has no kernel" in message  # add.Tensor is structured: it reaches add.out
    assert "device mlu (privateuseone)" in message
    assert "TORCH_MLU_CPU_FALLBACK=1" in message and "set_cpu_fallback(True)" in message
    assert torch_mlu.cpu_fallback_counts() == {}


def test_on_runs_on_the_cpu_warns_once_and_counts(dev):
    x = torch.arange(4, dtype=torch.float32).to(dev)
    torch_mlu.set_cpu_fallback(True)
    assert torch_mlu.cpu_fallback_enabled()
    with pytest.warns(UserWarning, match=r"op aten::add\.out has no kernel .* runs on the CPU"):
        y = torch.add(x, x)
    assert y.device == dev and torch.equal(y.cpu(), torch.arange(4, dtype=torch.float32) * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning for the same op
        z = x + x
    assert torch.equal(z.cpu(), y.cpu())
    with pytest.warns(UserWarning, match=r"aten::mul\.out"):
        x.mul_(3)  # in-place: the device tensor is updated
    assert torch.equal(x.cpu(), torch.arange(4, dtype=torch.float32) * 3)
    counts = torch_mlu.cpu_fallback_counts()
    assert counts == {"aten::add.out": 2, "aten::mul.out": 1}
    report = torch_mlu.cycle_report()
    assert "aten::add.out" in report and "CPU fallback" in report
    assert torch_mlu.cycle_report(format="json")["cpu_fallback"] == counts
    torch_mlu.reset_cpu_fallback_counts()
    assert torch_mlu.cpu_fallback_counts() == {}


def test_autograd_through_the_fallback(dev):
    torch_mlu.set_cpu_fallback(True)
    w = torch.tensor([1.0, 2.0, 3.0]).to(dev).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = (w * w).sum()
        loss.backward()
    assert w.grad is not None and w.grad.device == dev
    assert torch.equal(w.grad.cpu(), torch.tensor([2.0, 4.0, 6.0]))


def test_environment_variable_turns_it_on():
    code = ("import warnings, torch, torch_mlu\n"
            "warnings.simplefilter('ignore')\n"
            "x = torch.arange(3.).to('privateuseone')\n"
            "print(torch_mlu.cpu_fallback_enabled(), (x - 1).cpu().tolist(), torch_mlu.cpu_fallback_counts())\n")
    r = run_python(code, env={"TORCH_MLU_CPU_FALLBACK": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True [-1.0, 0.0, 1.0] {'aten::sub.out': 1}"
    r = run_python("import torch_mlu", env={"TORCH_MLU_CPU_FALLBACK": "yes"})
    assert r.returncode != 0 and "TORCH_MLU_CPU_FALLBACK=yes: expected 1" in r.stderr
