"""Device random generators (one default generator per device; dropout, bernoulli and other
random device ops draw from them; torch.manual_seed reaches them through torch.mlu.manual_seed_all).
States are 16-byte uint8 tensors (seed, offset), as CUDA's Philox generators."""

import random as _py_random

import torch

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


def get_rng_state(device="mlu"):
    """The device generator's state as a uint8 CPU tensor (torch.cuda.get_rng_state)."""
    seed_, offset = _C.rng_state(_index(device))
    return torch.tensor([seed_, offset], dtype=torch.uint64).view(torch.uint8)


def set_rng_state(new_state, device="mlu"):
    """Restores a state from get_rng_state (torch.cuda.set_rng_state)."""
    if not isinstance(new_state, torch.Tensor) or new_state.dtype != torch.uint8 or new_state.numel() != 16:
        raise ValueError("set_rng_state: expected the 16-byte uint8 tensor get_rng_state returns, got "
                         f"{type(new_state).__name__}"
                         + (f" of dtype {new_state.dtype} with {new_state.numel()} elements"
                            if isinstance(new_state, torch.Tensor) else ""))
    words = new_state.detach().cpu().contiguous().view(torch.uint64).tolist()
    _C.set_rng_state(_index(device), words[0] & _MASK, words[1] & _MASK)


def get_rng_state_all():
    return [get_rng_state(i) for i in range(_C.device_count())]


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
