"""Fault behaviour end to end, as a user meets it: device memory running out inside a model, a
kernel faulting inside an ATen op, a config reload while tensors are alive. In each case the
error names what went wrong, nothing already on the device is lost, and the device stays usable
in the same process."""

import gc

import pytest
import torch

import torch_mlu
from conftest import MiB


@pytest.fixture(autouse=True)
def clean_device():
    gc.collect()
    torch_mlu.synchronize()
    torch_mlu.empty_cache()
    yield
    torch_mlu.inject_kernel_fault(0)  # disarm, should a test fail before its fault ran
    gc.collect()
    torch_mlu.synchronize()
    torch_mlu.empty_cache()


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 256))


def test_out_of_memory_inside_a_model_then_a_smaller_batch_runs(dev):
    """tiny has 64 MiB of DRAM: the 8 MiB of weights and a 4 MiB batch fit, the 64 MiB hidden
    activation of 4096 rows does not. The allocator frees its cache and retries before raising;
    the error is torch's OutOfMemoryError with the sizes; afterwards the same model runs a
    smaller batch and matches the CPU, and no memory of the failed forward is left behind."""
    assert torch_mlu.memory_allocated() == 0, "a device tensor of an earlier test is still alive"
    model = mlp()
    model_dev = mlp().to(dev)
    weights = torch_mlu.memory_allocated()
    assert weights >= 8 * MiB
    big = torch.randn(4096, 256)
    before = torch_mlu.memory_stats()
    with torch.no_grad(), pytest.raises(torch.OutOfMemoryError, match="out of memory") as info:
        model_dev(big.to(dev))
    message = str(info.value)
    assert "Tried to allocate 64.00 MiB" in message, message
    stats = torch_mlu.memory_stats()
    assert stats["num_ooms"] == before["num_ooms"] + 1
    assert stats["num_alloc_retries"] == before["num_alloc_retries"] + 1  # cache freed, tried again
    del info  # the traceback holds the forward's frames and their tensors
    gc.collect()
    assert torch_mlu.memory_allocated() == weights  # nothing of the failed forward survives

    small = torch.randn(64, 256)
    with torch.no_grad():
        out = model_dev(small.to(dev)).cpu()
        ref = model(small)
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)


def test_kernel_fault_surfaces_at_the_next_sync_naming_the_op(dev):
    x = torch.arange(1024, dtype=torch.float32).to(dev)
    torch_mlu.inject_kernel_fault(1)
    y = x + 1  # launches the faulting kernel; launches are asynchronous, so this returns
    with pytest.raises(RuntimeError) as info:
        torch.mlu.synchronize()
    message = str(info.value)
    assert "launched by aten::add" in message and "injected kernel fault" in message, message
    # Reported once; the queue and the device go on.
    torch.mlu.synchronize()
    z = (x * 2).cpu()
    assert torch.equal(z, torch.arange(1024, dtype=torch.float32) * 2)
    w = (y - 1).cpu()  # y's kernel never wrote: garbage, but later ops on it still run
    assert w.shape == (1024,)
    assert torch_mlu.cycle_report(format="json")["faulted_kernels"] >= 1


def test_kernel_fault_inside_a_model_surfaces_at_item(dev):
    """A model's third kernel faults; the forward returns (asynchronous launches), the blocking
    .item() raises naming the op, and the model's next forward is correct."""
    model = mlp()
    model_dev = mlp().to(dev)
    x = torch.randn(8, 256)
    torch_mlu.inject_kernel_fault(3)
    with torch.no_grad():
        out = model_dev(x.to(dev))
        with pytest.raises(RuntimeError, match=r"faulted: .*injected kernel fault") as info:
            out.sum().item()
    assert "launched by aten::" in str(info.value)
    with torch.no_grad():
        torch.testing.assert_close(model_dev(x.to(dev)).cpu(), model(x), atol=1e-4, rtol=1e-4)


def test_config_reload_with_live_tensors_is_refused_and_they_survive(dev):
    keep = torch.arange(100, dtype=torch.float32).to(dev)
    with pytest.raises(RuntimeError, match="still allocated"):
        torch_mlu.load_config("tiny", {"dram.bandwidth_gbps": 10})
    assert torch_mlu.config_name() == "tiny"
    assert torch.equal((keep + 1).cpu(), torch.arange(100, dtype=torch.float32) + 1)
    del keep
    torch_mlu.load_config("tiny")  # nothing alive: the reload goes through
    assert torch.equal(torch.ones(3, device=dev).cpu(), torch.ones(3))


def test_inject_kernel_fault_rejects_a_negative_count():
    with pytest.raises(ValueError, match="nth must be >= 0"):
        torch_mlu.inject_kernel_fault(-1)
