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
    """This thread's `included` and `excluded` masks, kept in one two-element list
    `mask_pair`, [included, excluded], changed in place.

    Reading an attribute of a thread-local object costs about four reads of a plain one,
    and writing one as much: the front doors read the pair once per call
    (`masks = local_keys.mask_pair`, then `masks[0]`, `masks[1]`), and the autograd
    wrappers, which exclude the autograd keys around every recorded op, change
    `masks[1]` and put it back without a thread-local write (a tuple stored anew each
    time cost a recorded op about 0.13 us more). `masks` (a tuple copy), `included` and
    `excluded` read and write the same pair for everything else."""

    def __init__(self):
        self.mask_pair = [0, 0]

    @property
    def masks(self):
        pair = self.mask_pair
        return (pair[0], pair[1])

    @masks.setter
    def masks(self, masks):
        self.mask_pair[0], self.mask_pair[1] = masks

    @property
    def included(self):
        return self.mask_pair[0]

    @included.setter
    def included(self, mask):
        self.mask_pair[0] = mask

    @property
    def excluded(self):
        return self.mask_pair[1]

    @excluded.setter
    def excluded(self, mask):
        self.mask_pair[1] = mask


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
        masks = local_keys.mask_pair
        self.prev = masks[1]
        masks[1] = self.prev | self.mask
        return self

    def __exit__(self, exc_type, exc, traceback):
        # only our half: a change to the included mask made inside the block stays
        local_keys.mask_pair[1] = self.prev


class IncludeKeys:
    """`with IncludeKeys(mask):` adds keys to every call made inside (this thread only)."""

    __slots__ = ("mask", "prev")

    def __init__(self, mask):
        self.mask = mask if type(mask) is int else int(mask)

    def __enter__(self):
        masks = local_keys.mask_pair
        self.prev = masks[0]
        masks[0] = self.prev | self.mask
        return self

    def __exit__(self, exc_type, exc, traceback):
        local_keys.mask_pair[0] = self.prev
