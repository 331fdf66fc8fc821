"""Dispatch keys and key sets: the first level of routing.

The numbers are the seed's, on purpose: a derived key is its backend key plus a
fixed offset (`AutogradCPU == CPU + 7`), so deriving it is arithmetic, not a
table lookup, and the key with the highest number wins.

A key set is a plain `int` bitmask (bit k set = key k present): union is `|`,
removal is `& ~`, and the highest-priority key is `ks.bit_length() - 1`.
`DispatchKeySet` wraps such an int only for printing and for tests.
"""
from __future__ import annotations

import enum


class DispatchKey(enum.IntEnum):
    CPU = 0
    CUDA = 1
    Vulkan = 2
    Sparse = 3
    Meta = 4
    Python = 5
    DynamicLayerBackMode = 6
    AutogradCPU = 7
    AutogradCUDA = 8
    AutogradVulkan = 9
    AutogradSparse = 10
    AutogradMeta = 11
    AutocastCPU = 12
    AutocastCUDA = 13
    AutocastVulkan = 14
    AutocastSparse = 15
    AutocastMeta = 16
    VmapCPU = 17
    VmapCUDA = 18
    VmapVulkan = 19
    VmapSparse = 20
    VmapMeta = 21
    Composite = 22
    VmapMode = 23
    DynamicLayerFrontMode = 24
    EndOfKeys = 25


AUTOGRAD_OFFSET = 7
AUTOCAST_OFFSET = 12
VMAP_OFFSET = 17
NUM_BACKENDS = 5            # CPU .. Meta
NUM_KEYS = int(DispatchKey.EndOfKeys)

BACKEND_KEYS = tuple(DispatchKey(k) for k in range(NUM_BACKENDS))


def to_autograd_key(backend):
    return DispatchKey(backend + AUTOGRAD_OFFSET)


def to_autocast_key(backend):
    return DispatchKey(backend + AUTOCAST_OFFSET)


def to_vmap_key(backend):
    return DispatchKey(backend + VMAP_OFFSET)


def is_backend_key(key):
    return 0 <= key < NUM_BACKENDS


def is_autograd_key(key):
    return AUTOGRAD_OFFSET <= key < AUTOGRAD_OFFSET + NUM_BACKENDS


def is_autocast_key(key):
    return AUTOCAST_OFFSET <= key < AUTOCAST_OFFSET + NUM_BACKENDS


def is_vmap_key(key):
    return VMAP_OFFSET <= key < VMAP_OFFSET + NUM_BACKENDS


def to_backend_key(key):
    """The backend under a derived key: AutogradCUDA -> CUDA. Backend keys map to themselves."""
    for offset in (VMAP_OFFSET, AUTOCAST_OFFSET, AUTOGRAD_OFFSET):
        if offset <= key < offset + NUM_BACKENDS:
            return DispatchKey(key - offset)
    if is_backend_key(key):
        return DispatchKey(key)
    raise ValueError(f"{DispatchKey(key).name} has no backend key")


def _mask(offset):
    return ((1 << NUM_BACKENDS) - 1) << offset


BACKEND_MASK = _mask(0)
AUTOGRAD_MASK = _mask(AUTOGRAD_OFFSET)
AUTOCAST_MASK = _mask(AUTOCAST_OFFSET)
VMAP_MASK = _mask(VMAP_OFFSET)


def highest_priority_key(ks):
    """The key a call goes to: the highest set bit. `ks == 0` means 'no key at all'."""
    return ks.bit_length() - 1


class DispatchKeySet:
    """A readable view of a key-set bitmask (the dispatcher itself passes plain ints)."""

    __slots__ = ("bits",)

    def __init__(self, keys=()):
        bits = 0
        if isinstance(keys, int):
            bits = keys
        else:
            for k in keys:
                bits |= 1 << int(k)
        self.bits = bits

    def add(self, key):
        return DispatchKeySet(self.bits | (1 << int(key)))

    def remove(self, key):
        return DispatchKeySet(self.bits & ~(1 << int(key)))

    def __or__(self, other):
        return DispatchKeySet(self.bits | DispatchKeySet(other).bits)

    def __sub__(self, other):
        return DispatchKeySet(self.bits & ~DispatchKeySet(other).bits)

    def __contains__(self, key):
        return bool(self.bits >> int(key) & 1)

    def __iter__(self):
        """Keys from highest to lowest priority."""
        for k in range(NUM_KEYS - 1, -1, -1):
            if self.bits >> k & 1:
                yield DispatchKey(k)

    def __eq__(self, other):
        return isinstance(other, DispatchKeySet) and other.bits == self.bits

    def __hash__(self):
        return hash(self.bits)

    def __int__(self):
        return self.bits

    def highest_priority_key(self):
        if not self.bits:
            raise ValueError("empty DispatchKeySet has no highest-priority key")
        return DispatchKey(self.bits.bit_length() - 1)

    def __repr__(self):
        return "DispatchKeySet({" + ", ".join(k.name for k in self) + "})"


def format_keys(bits):
    return "{" + ", ".join(k.name for k in DispatchKeySet(bits)) + "}"
