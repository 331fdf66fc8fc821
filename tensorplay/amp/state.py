"""Autocast's per-thread state: which devices autocast, to which dtype, and the cast cache.

Turning autocast on for a device does two things that must stay together: it records
the device's policy dtype here and it adds the device's `Autocast<backend>` key to the
thread's *included* key set, so every op call reaches that key's slot. The generated
wrappers in that slot read the dtype back from here (`tensorplay/amp/casts.py`).

Everything is per thread, as in PyTorch: a new thread starts with autocast off.
"""
from __future__ import annotations

import threading

from tensorplay import _dtype as dt
from tensorplay.dispatch.keys import DispatchKey, to_autocast_key
from tensorplay.dispatch.tls import local_keys
from tensorplay.errors import ArgumentError

# device type -> the backend key its Autocast key is derived from
DEVICE_KEYS = {"cpu": DispatchKey.CPU, "cuda": DispatchKey.CUDA}
# PyTorch's defaults: bfloat16 on the CPU, float16 on CUDA
DEFAULT_DTYPES = {"cpu": dt.bfloat16, "cuda": dt.float16}


class _AutocastState(threading.local):
    def __init__(self):
        self.enabled = dict.fromkeys(DEVICE_KEYS, False)
        self.dtype = dict(DEFAULT_DTYPES)
        self.cache_enabled = True
        self.nesting = 0          # autocast regions entered and not left, any device
        # id(TensorImpl) of a float32 weight -> (the weight's impl, its cast). The impl is
        # kept alive with its entry, so its id cannot be reused by another tensor.
        self.cache = {}


state = _AutocastState()


def autocast_bit(device_type, op="autocast"):
    """The key-set bit of `Autocast<backend>` for a device type ('cpu' or 'cuda')."""
    backend = DEVICE_KEYS.get(device_type)
    if backend is None:
        raise ArgumentError(f"{op}(): argument 'device_type' must be 'cpu' or 'cuda', "
                            f"got {device_type!r}", op=op, arg="device_type")
    return 1 << to_autocast_key(backend)


def is_autocast_enabled(device_type="cuda"):
    autocast_bit(device_type, "is_autocast_enabled")
    return state.enabled[device_type]


def set_autocast_enabled(device_type, enabled):
    """Switch autocast for one device: the policy state and the dispatch key together."""
    bit = autocast_bit(device_type, "set_autocast_enabled")
    state.enabled[device_type] = bool(enabled)
    if enabled:
        local_keys.included |= bit
    else:
        local_keys.included &= ~bit


def get_autocast_dtype(device_type="cuda"):
    autocast_bit(device_type, "get_autocast_dtype")
    return state.dtype[device_type]


def set_autocast_dtype(device_type, dtype):
    autocast_bit(device_type, "set_autocast_dtype")
    if not isinstance(dtype, dt.dtype) or not dtype.is_floating_point:
        raise ArgumentError(f"set_autocast_dtype(): argument 'dtype' must be a floating "
                            f"tensorplay dtype, got {dtype!r}", op="set_autocast_dtype",
                            arg="dtype")
    state.dtype[device_type] = dtype


def is_autocast_cache_enabled():
    return state.cache_enabled


def set_autocast_cache_enabled(enabled):
    state.cache_enabled = bool(enabled)


def clear_autocast_cache():
    state.cache.clear()
