"""Device random generators (one per device; dropout and other random device ops draw from
them). torch.manual_seed / torch.seed are wrapped by torch_mlu so that they seed these too
(1.13 seeds only the CPU and CUDA generators)."""

import random as _py_random

from . import _C

_MASK = (1 << 64) - 1


def _index(device):
    from . import _device_index

    return _device_index(device)


def manual_seed(seed, device=None):
    """Seeds the generator of one device (default: current; torch.cuda.manual_seed)."""
    _C.manual_seed_device(_index(device), int(seed) & _MASK)


def manual_seed_all(seed):
    """Seeds the generators of all devices (torch.cuda.manual_seed_all)."""
    _C.manual_seed(int(seed) & _MASK)


def seed(device=None):
    """Seeds the device's generator with a non-deterministic random number."""
    manual_seed(_py_random.getrandbits(64), device)


def seed_all():
    manual_seed_all(_py_random.getrandbits(64))


def initial_seed(device=None):
    """The device generator's current seed."""
    return _C.initial_seed(_index(device))
