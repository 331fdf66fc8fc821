"""Thread-local included / excluded key sets and the guards that change them.

A call's key set is `(keys of its tensors | included) & ~excluded`. The autograd
wrapper excludes the autograd keys while it runs the computation below it, so
ops called inside a kernel do not record a second graph; `inference_mode` and
`no_grad` work without touching the dispatcher at all (see autograd/grad_mode.py).
"""
from __future__ import annotations

import threading

from tensorplay.dispatch.keys import DispatchKeySet


class _LocalKeys(threading.local):
    def __init__(self):
        self.included = 0
        self.excluded = 0


local_keys = _LocalKeys()


def tls_local_key_sets():
    """(included, excluded) of this thread, as DispatchKeySets."""
    return DispatchKeySet(local_keys.included), DispatchKeySet(local_keys.excluded)


class ExcludeKeys:
    """`with ExcludeKeys(mask):` removes keys from every call made inside (this thread only)."""

    __slots__ = ("mask", "prev")

    def __init__(self, mask):
        self.mask = int(mask)

    def __enter__(self):
        self.prev = local_keys.excluded
        local_keys.excluded = self.prev | self.mask
        return self

    def __exit__(self, *exc):
        local_keys.excluded = self.prev


class IncludeKeys:
    """`with IncludeKeys(mask):` adds keys to every call made inside (this thread only)."""

    __slots__ = ("mask", "prev")

    def __init__(self, mask):
        self.mask = int(mask)

    def __enter__(self):
        self.prev = local_keys.included
        local_keys.included = self.prev | self.mask
        return self

    def __exit__(self, *exc):
        local_keys.included = self.prev
