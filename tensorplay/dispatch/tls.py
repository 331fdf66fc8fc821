"""This thread's dispatch state: the included / excluded key sets, grad mode, and the
guards that change them.

A call's key set is `(keys of its tensors | included) & ~excluded`, and without the
REQUIRES_GRAD flag while grad mode is off. The autograd wrapper excludes the autograd
keys while it runs the computation below it, so ops called inside a kernel do not
record a second graph; `no_grad` turns grad mode off, and `inference_mode` also
excludes the autograd keys (see autograd/grad_mode.py).
"""
from __future__ import annotations

import threading

from tensorplay.dispatch.keys import REQUIRES_GRAD, DispatchKeySet


class _LocalKeys(threading.local):
    """This thread's masks, kept in one three-element list `masks` changed in place:

        masks[0]   included keys
        masks[1]   excluded keys
        masks[2]   REQUIRES_GRAD while grad mode is off (else 0): removed like a key

    so the dispatcher applies all three as `(ks | masks[0]) & ~(masks[1] | masks[2])`.
    Reading an attribute of a thread-local object costs about four reads of a plain one,
    and writing one as much: the dispatcher reads the list once per call, and the
    autograd wrappers, which exclude the autograd keys around every recorded op, change
    `masks[1]` and put it back without a thread-local write. `included` and `excluded`
    read and write the same list for everything else."""

    def __init__(self):
        self.masks = [0, 0, 0]

    def snapshot(self):
        """(included, excluded) as they are now."""
        masks = self.masks
        return (masks[0], masks[1])

    @property
    def included(self):
        return self.masks[0]

    @included.setter
    def included(self, mask):
        self.masks[0] = mask

    @property
    def excluded(self):
        return self.masks[1]

    @excluded.setter
    def excluded(self, mask):
        self.masks[1] = mask


local_keys = _LocalKeys()


class _GradState(threading.local):
    """This thread's grad mode (tensorplay/autograd/grad_mode.py changes it): `enabled`,
    ops record the graph; `inference`, kernels make inference tensors. Write `enabled`
    with `set_grad_mode`, which keeps the dispatcher's view of it (`masks[2]`) in step."""

    def __init__(self):
        self.enabled = True
        self.inference = False


grad_state = _GradState()


def set_grad_mode(enabled):
    """Turn grad mode on or off on this thread; returns the mode it replaces."""
    previous = grad_state.enabled
    grad_state.enabled = enabled
    local_keys.masks[2] = 0 if enabled else REQUIRES_GRAD
    return previous


def tls_local_key_sets():
    """(included, excluded) of this thread, as DispatchKeySets."""
    return DispatchKeySet(local_keys.included), DispatchKeySet(local_keys.excluded)


class ExcludeKeys:
    """`with ExcludeKeys(mask):` removes keys from every call made inside (this thread only)."""

    __slots__ = ("mask", "prev")

    def __init__(self, mask):
        self.mask = mask if type(mask) is int else int(mask)

    def __enter__(self):
        masks = local_keys.masks
        self.prev = masks[1]
        masks[1] = self.prev | self.mask
        return self

    def __exit__(self, exc_type, exc, traceback):
        # only our mask: a change to the included mask made inside the block stays
        local_keys.masks[1] = self.prev


class IncludeKeys:
    """`with IncludeKeys(mask):` adds keys to every call made inside (this thread only)."""

    __slots__ = ("mask", "prev")

    def __init__(self, mask):
        self.mask = mask if type(mask) is int else int(mask)

    def __enter__(self):
        masks = local_keys.masks
        self.prev = masks[0]
        masks[0] = self.prev | self.mask
        return self

    def __exit__(self, exc_type, exc, traceback):
        local_keys.masks[0] = self.prev
