"""pytest setup for torch_mlu: the tiny preset (64 MiB of DRAM, fast) unless MLUSIM_CONFIG says
otherwise, the presets of this source tree, and the package from the build tree (ctest sets
PYTHONPATH; by hand, after a build: .venv/bin/python -m pytest tests/python)."""

import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("MLUSIM_CONFIG", "tiny")
os.environ.setdefault("MLUSIM_CONFIG_DIR", str(ROOT / "configs"))
os.environ.setdefault("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1")
os.environ.pop("TORCH_MLU_CPU_FALLBACK", None)
os.environ.pop("MLU_ALLOC_CONF", None)
os.environ.pop("MLU_NO_MEMORY_CACHING", None)

import pytest  # noqa: E402
import torch  # noqa: E402
import torch_mlu  # noqa: E402

MiB = 1024 * 1024


@pytest.fixture
def dev():
    return torch.device("mlu", 0)


@pytest.fixture(autouse=True)
def _clean_backend_state():
    """Every test starts with the fallback off, default allocator settings, no counts."""
    torch_mlu.set_cpu_fallback(False)
    torch_mlu.reset_cpu_fallback_counts()
    yield
    torch_mlu.set_cpu_fallback(False)
    torch_mlu.set_allocator_settings("")
    torch_mlu.synchronize()


@pytest.fixture(scope="module")
def big_dram():
    """Whole models need more than tiny's 64 MiB (resnet18's weights alone are 47 MB; training
    holds weights, gradients and momentum): the module runs on tiny with 1 GiB of DRAM (lazily
    backed). Use with `pytestmark = pytest.mark.usefixtures("big_dram")` (models/)."""
    torch_mlu.load_config("tiny", ["dram.capacity_bytes=1GiB"])
    yield
    torch_mlu.empty_cache()


def run_python(code, env=None, timeout=120):
    """Runs `code` in a fresh python (this one: the venv's) with this process's environment (plus `env`)."""
    import subprocess
    import sys

    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True,
                          timeout=timeout)
