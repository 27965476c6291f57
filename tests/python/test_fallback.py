"""The CPU fallback is never silent: off (default) it raises naming the op and the device;
on, it runs the op on the CPU, warns once per op and counts it (also in the cycle report)."""

import warnings

import pytest
import torch

import torch_mlu
from conftest import run_python


# igammac and igamma (the regularized incomplete gamma functions) have no kernel for the device
# (their series and continued fractions need data-dependent iteration counts): they exercise the policy.

def test_off_raises_naming_the_op_and_the_device(dev):
    x = (torch.arange(4, dtype=torch.float32) / 4).to(dev)
    with pytest.raises(NotImplementedError) as info:
        torch.igammac(x + 1, x)
    message = str(info.value)
    assert "op aten::igammac.out has no kernel" in message  # igammac is structured: it reaches igammac.out
    assert "device mlu" in message
    assert "TORCH_MLU_CPU_FALLBACK=1" in message and "set_cpu_fallback(True)" in message
    assert torch_mlu.cpu_fallback_counts() == {}


def test_on_runs_on_the_cpu_warns_once_and_counts(dev):
    host = torch.arange(4, dtype=torch.float32) / 4
    x = host.to(dev)
    torch_mlu.set_cpu_fallback(True)
    assert torch_mlu.cpu_fallback_enabled()
    a = (host + 1).to(dev)
    with pytest.warns(UserWarning, match=r"op aten::igammac\.out has no kernel .* runs on the CPU"):
        y = torch.igammac(a, x)
    assert y.device == dev and torch.equal(y.cpu(), torch.igammac(host + 1, host))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning for the same op
        z = a.igammac(x)
    assert torch.equal(z.cpu(), y.cpu())
    w = (host + 1).to(dev)
    with pytest.warns(UserWarning, match=r"aten::igamma\.out"):
        w.igamma_(x)  # in-place: the device tensor is updated
    assert torch.equal(w.cpu(), torch.igamma(host + 1, host))
    counts = torch_mlu.cpu_fallback_counts()
    assert counts == {"aten::igammac.out": 2, "aten::igamma.out": 1}
    report = torch_mlu.cycle_report()
    assert "aten::igammac.out" in report and "CPU fallback" in report
    assert torch_mlu.cycle_report(format="json")["cpu_fallback"] == counts
    torch_mlu.reset_cpu_fallback_counts()
    assert torch_mlu.cpu_fallback_counts() == {}


def test_autograd_through_the_fallback(dev):
    torch_mlu.set_cpu_fallback(True)
    host = torch.tensor([0.1, 0.2, 0.3])
    w = host.to(dev).requires_grad_()  # igammac's gradient in x: exp, log, lgamma on the device
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = torch.igammac(torch.full((3,), 2.0, device=dev), w) * w  # igammac on the CPU, the rest on the device
        loss.backward(torch.ones(3, device=dev))
    assert torch_mlu.cpu_fallback_counts() == {"aten::igammac.out": 1}
    h = host.clone().requires_grad_()
    (torch.igammac(torch.full((3,), 2.0), h) * h).backward(torch.ones(3))
    assert w.grad is not None and w.grad.device == dev
    torch.testing.assert_close(w.grad.cpu(), h.grad)


def test_environment_variable_turns_it_on():
    code = ("import warnings, torch, torch_mlu\n"
            "warnings.simplefilter('ignore')\n"
            "x = torch.tensor([0.0, 0.5]).to('mlu')\n"
            "print(torch_mlu.cpu_fallback_enabled(), torch.equal(torch.igammac(x + 1, x).cpu(), torch.igammac(x.cpu() + 1, x.cpu())),\n"
            "      torch_mlu.cpu_fallback_counts())\n")
    r = run_python(code, env={"TORCH_MLU_CPU_FALLBACK": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True True {'aten::igammac.out': 1}"
    r = run_python("import torch_mlu", env={"TORCH_MLU_CPU_FALLBACK": "yes"})
    assert r.returncode != 0 and "TORCH_MLU_CPU_FALLBACK=yes: expected 1" in r.stderr
