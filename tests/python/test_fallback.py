"""The CPU fallback is never silent: off (default) it raises naming the op and the device;
on, it runs the op on the CPU, warns once per op and counts it (also in the cycle report)."""

import warnings

import pytest
import torch

import torch_mlu
from conftest import run_python


# i0 and igamma have no kernel for the device (no libmlu program for Bessel or incomplete gamma
# functions): they exercise the policy.

def test_off_raises_naming_the_op_and_the_device(dev):
    x = (torch.arange(4, dtype=torch.float32) / 4).to(dev)
    with pytest.raises(NotImplementedError) as info:
        torch.i0(x)
    message = str(info.value)
    assert "op aten::i0.out has no kernel" in message  # i0 is structured: it reaches i0.out
    assert "device mlu" in message
    assert "TORCH_MLU_CPU_FALLBACK=1" in message and "set_cpu_fallback(True)" in message
    assert torch_mlu.cpu_fallback_counts() == {}


def test_on_runs_on_the_cpu_warns_once_and_counts(dev):
    host = torch.arange(4, dtype=torch.float32) / 4
    x = host.to(dev)
    torch_mlu.set_cpu_fallback(True)
    assert torch_mlu.cpu_fallback_enabled()
    with pytest.warns(UserWarning, match=r"op aten::i0\.out has no kernel .* runs on the CPU"):
        y = torch.i0(x)
    assert y.device == dev and torch.equal(y.cpu(), torch.i0(host))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning for the same op
        z = x.i0()
    assert torch.equal(z.cpu(), y.cpu())
    w = (host + 1).to(dev)
    with pytest.warns(UserWarning, match=r"aten::igamma\.out"):
        w.igamma_(x)  # in-place: the device tensor is updated
    assert torch.equal(w.cpu(), torch.igamma(host + 1, host))
    counts = torch_mlu.cpu_fallback_counts()
    assert counts == {"aten::i0.out": 2, "aten::igamma.out": 1}
    report = torch_mlu.cycle_report()
    assert "aten::i0.out" in report and "CPU fallback" in report
    assert torch_mlu.cycle_report(format="json")["cpu_fallback"] == counts
    torch_mlu.reset_cpu_fallback_counts()
    assert torch_mlu.cpu_fallback_counts() == {}


def test_autograd_through_the_fallback(dev):
    torch_mlu.set_cpu_fallback(True)
    host = torch.tensor([0.1, 0.2, 0.3])
    w = host.to(dev).requires_grad_()  # i0's gradient is special_i1: on the CPU too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = torch.i0(w) * w  # i0 on the CPU, mul and its backward on the device
        loss.backward(torch.ones(3, device=dev))
    h = host.clone().requires_grad_()
    (torch.i0(h) * h).backward(torch.ones(3))
    assert w.grad is not None and w.grad.device == dev
    torch.testing.assert_close(w.grad.cpu(), h.grad)


def test_environment_variable_turns_it_on():
    code = ("import warnings, torch, torch_mlu\n"
            "warnings.simplefilter('ignore')\n"
            "x = torch.tensor([0.0, 0.5]).to('mlu')\n"
            "print(torch_mlu.cpu_fallback_enabled(), torch.equal(torch.i0(x).cpu(), torch.i0(x.cpu())),\n"
            "      torch_mlu.cpu_fallback_counts())\n")
    r = run_python(code, env={"TORCH_MLU_CPU_FALLBACK": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True True {'aten::i0.out': 1}"
    r = run_python("import torch_mlu", env={"TORCH_MLU_CPU_FALLBACK": "yes"})
    assert r.returncode != 0 and "TORCH_MLU_CPU_FALLBACK=yes: expected 1" in r.stderr
