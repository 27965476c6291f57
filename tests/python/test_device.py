"""Devices, registration and the module-level API of torch_mlu."""

import pytest
import torch

import torch_mlu


def test_import_registers_the_backend(dev):
    assert torch_mlu.is_available()
    assert torch_mlu.device_count() >= 1
    assert dev == torch.device("privateuseone", 0)
    assert torch_mlu.device() == torch.device("privateuseone", torch_mlu.current_device())
    assert torch.privateuseone is torch_mlu  # torch._register_device_module
    x = torch.empty(3, device=dev)
    assert x.device == dev


def test_device_index_forms():
    assert torch_mlu.device("privateuseone:0") == torch.device("privateuseone", 0)
    assert torch_mlu.device(torch.device("privateuseone")) == torch.device("privateuseone", 0)
    with pytest.raises(ValueError, match="expected a privateuseone"):
        torch_mlu.device("cpu")
    with pytest.raises(TypeError):
        torch_mlu.device(1.5)


def test_set_device_rejects_missing_devices():
    with pytest.raises(ValueError, match="MLU device 7 does not exist"):
        torch_mlu.set_device(7)
    assert torch_mlu.current_device() == 0
    with torch_mlu.device_guard(0):
        assert torch_mlu.current_device() == 0


def test_device_properties_come_from_the_config():
    p = torch_mlu.get_device_properties()
    assert "mlusim" in p["name"] and torch_mlu.config_name() in p["name"]
    assert p["total_memory"] == 64 * 1024 * 1024  # tiny.yaml
    assert p["clusters"] >= 1 and p["cores_per_cluster"] >= 1
    assert torch_mlu.get_device_name() == p["name"]


def test_tensor_on_an_unknown_device_raises():
    with pytest.raises(RuntimeError, match="does not exist"):
        torch.empty(3, device="privateuseone:5")


def test_synchronize_and_mem_get_info():
    torch_mlu.synchronize()
    free, total = torch_mlu.mem_get_info()
    assert total == 64 * 1024 * 1024 and 0 <= free <= total
