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
    """This thread's `included` and `excluded` masks, stored together as one tuple
    `masks`: reading an attribute of a thread-local object costs about four reads of a
    plain one, and the dispatcher needs both masks on every call, so it reads `masks`
    once. `included` and `excluded` read and write their half of it."""

    def __init__(self):
        self.masks = (0, 0)

    @property
    def included(self):
        return self.masks[0]

    @included.setter
    def included(self, mask):
        self.masks = (mask, self.masks[1])

    @property
    def excluded(self):
        return self.masks[1]

    @excluded.setter
    def excluded(self, mask):
        self.masks = (self.masks[0], mask)


local_keys = _LocalKeys()


def tls_local_key_sets():
    """(included, excluded) of this thread, as DispatchKeySets."""
    return DispatchKeySet(local_keys.included), DispatchKeySet(local_keys.excluded)


class ExcludeKeys:
    """`with ExcludeKeys(mask):` removes keys from every call made inside (this thread only)."""

    __slots__ = ("mask", "prev")

    def __init__(self, mask):
        self.mask = mask if type(mask) is int else int(mask)

    def __enter__(self):
        included, self.prev = local_keys.masks
        local_keys.masks = (included, self.prev | self.mask)
        return self

    def __exit__(self, exc_type, exc, traceback):
        # only our half: a change to the included mask made inside the block stays
        local_keys.masks = (local_keys.masks[0], self.prev)


class IncludeKeys:
    """`with IncludeKeys(mask):` adds keys to every call made inside (this thread only)."""

    __slots__ = ("mask", "prev")

    def __init__(self, mask):
        self.mask = mask if type(mask) is int else int(mask)

    def __enter__(self):
        self.prev, excluded = local_keys.masks
        local_keys.masks = (self.prev | self.mask, excluded)
        return self

    def __exit__(self, exc_type, exc, traceback):
        local_keys.masks = (self.prev, local_keys.masks[1])
