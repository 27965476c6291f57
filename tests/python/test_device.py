"""Devices, registration and the device-module API (torch.mlu = torch_mlu, torch.cuda's twin)."""

import pytest
import torch

import torch_mlu


def test_import_registers_the_backend_as_mlu(dev):
    assert torch.mlu is torch_mlu  # torch._register_device_module
    assert torch._C._get_privateuse1_backend_name() == "mlu"
    assert torch.mlu.is_available() and torch.mlu.is_initialized()
    assert torch.mlu.device_count() >= 1
    assert dev == torch.device("mlu:0")
    x = torch.empty(3, device="mlu")
    assert x.device == dev and x.is_mlu and not torch.empty(1).is_mlu
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("mlu")


def test_device_index_forms():
    from torch_mlu._utils import _get_device_index

    assert _get_device_index("mlu:0") == 0
    assert _get_device_index(torch.device("mlu"), optional=True) == torch.mlu.current_device()
    assert _get_device_index(None, optional=True) == torch.mlu.current_device()
    assert _get_device_index(torch.device("cpu"), allow_cpu=True) == -1
    with pytest.raises(ValueError, match="Expected an MLU device"):
        _get_device_index("cpu")
    with pytest.raises(ValueError, match="specified index"):
        _get_device_index("mlu")
    with pytest.raises(TypeError):
        _get_device_index(1.5)


def test_set_device_and_device_contexts(dev):
    with pytest.raises(ValueError, match="MLU device 7 does not exist"):
        torch.mlu.set_device(7)
    assert torch.mlu.current_device() == 0
    with torch.mlu.device(0) as ctx:
        assert torch.mlu.current_device() == 0 and ctx.idx == 0
    with torch.mlu.device(None):  # CUDA's no-op form
        assert torch.mlu.current_device() == 0
    x = torch.ones(2, device=dev)
    with torch.mlu.device_of(x):
        assert torch.mlu.current_device() == 0
    with torch.mlu.device_of(torch.ones(2)):  # a CPU tensor changes nothing
        assert torch.mlu.current_device() == 0
    torch.mlu.set_device("mlu:0")
    assert torch.accelerator.current_device_index() == 0


def test_device_properties_come_from_the_config():
    p = torch.mlu.get_device_properties(0)
    assert "mlusim" in p.name and torch.mlu.config_name() in p.name
    assert p.total_memory == 64 * 1024 * 1024  # tiny.yaml
    assert p.cluster_count >= 1 and p.cores_per_cluster >= 1
    assert p.multi_processor_count == p.cluster_count * p.cores_per_cluster
    assert torch.mlu.get_device_name() == p.name and "MLUDeviceProperties" in repr(p)
    assert torch.mlu.get_device_capability() == (p.major, p.minor)
    # bf16 compute starts at compute capability 5 (MLU500 class); tiny is an MLU300-class part
    assert torch.mlu.is_bf16_supported() == (p.major >= 5)
    assert torch.float16 in torch.mlu.get_amp_supported_dtype()


def test_tensor_on_an_unknown_device_raises():
    with pytest.raises(RuntimeError, match="does not exist"):
        torch.empty(3, device="mlu:5")


def test_synchronize_and_mem_get_info():
    torch.mlu.synchronize()
    torch.mlu.synchronize("mlu:0")
    torch.accelerator.synchronize()
    free, total = torch.mlu.mem_get_info()
    assert total == 64 * 1024 * 1024 and 0 <= free <= total
    assert torch.mlu.mem_get_info(0) == (free, total)
