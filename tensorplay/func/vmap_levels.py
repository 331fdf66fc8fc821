"""The stack of live vmap levels, one entry per running `vmap` call on this thread.

vmap.py pushes and pops the entries; the batching kernel reads the level of its tensors,
and random_under_vmap.py reads the `randomness` of every level (random ops that see no
batched tensor still obey it).
"""
from __future__ import annotations

import threading

from tensorplay.func.batched import VmapError


class _Level:
    __slots__ = ("level", "batch_size", "randomness")

    def __init__(self, level, batch_size, randomness):
        self.level = level
        self.batch_size = batch_size
        self.randomness = randomness


class _Levels(threading.local):
    def __init__(self):
        self.stack = []
        self.wrapping = False       # vmap is expanding its in_dims=None inputs


_levels = _Levels()


def current_level(level):
    for entry in reversed(_levels.stack):
        if entry.level == level:
            return entry
    raise VmapError(f"vmap: a BatchedTensor of vmap level {level} was used after its vmap "
                    f"returned (it escaped through a global or a closure); return it from "
                    f"the function instead")
