"""`tp.random` (torch.random): the default CPU generator and its seed and state, and
`fork_rng`, which runs a block and then puts the generators' states back."""
from __future__ import annotations

import contextlib

from tensorplay._random import (  # noqa: F401
    Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed,
    set_rng_state,
)
from tensorplay._random import get_cuda_rng_state as _get_cuda_rng_state
from tensorplay._random import set_cuda_rng_state as _set_cuda_rng_state

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Inside the block, draw as you like; after it, the generators are where they were
    before: the CPU one and the `cuda` one (the Philox seed and offset its kernels draw
    at; there is one cuda device, so `devices` names at most that one)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    cuda_state = _get_cuda_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
        _set_cuda_rng_state(cuda_state)
