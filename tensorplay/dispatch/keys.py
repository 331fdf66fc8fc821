"""Dispatch keys and key sets: the first level of routing.

The numbering is the rule: a derived key is its backend key plus a fixed offset
(`AutogradCPU == CPU + AUTOGRAD_OFFSET`), so deriving it is arithmetic, not a table
lookup, and the key with the highest number wins. Some keys are numbered ahead of
what uses them (the Vulkan and Sparse backends, Vmap*, the mode keys): no
kernel is registered there, and `dump()` / `explain()` leave them out.

A key set is a plain `int` bitmask (bit k set = key k present): union is `|`,
removal is `& ~`, and the highest-priority key is `ks.bit_length() - 1`.
`DispatchKeySet` wraps such an int only for printing and for tests.

One bit past the keys is not a key but a flag, `REQUIRES_GRAD`: a tensor that requires
grad puts it in its key set (`TensorImpl.keys`), so a call's key set says whether any of
its tensors asks for a gradient. The dispatch loop skips an autograd slot that would
only record a graph when the flag is absent (dispatcher.py, `walk`), and `call` drops it
while grad mode is off.

`ForwardAD` is a single key (no backend of its own), between the autograd keys and
autocast: a tensor with a forward-mode tangent carries it (autograd/forward_mode.py).
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
    ForwardAD = 12
    AutocastCPU = 13
    AutocastCUDA = 14
    AutocastVulkan = 15
    AutocastSparse = 16
    AutocastMeta = 17
    VmapCPU = 18
    VmapCUDA = 19
    VmapVulkan = 20
    VmapSparse = 21
    VmapMeta = 22
    Composite = 23
    VmapMode = 24
    DynamicLayerFrontMode = 25
    EndOfKeys = 26

    def __str__(self):
        return self.name        # `AutogradCPU`, as PyTorch prints its keys (not `7`)


NUM_BACKENDS = 5            # CPU .. Meta
AUTOGRAD_OFFSET = int(DispatchKey.AutogradCPU)
AUTOCAST_OFFSET = int(DispatchKey.AutocastCPU)
VMAP_OFFSET = int(DispatchKey.VmapCPU)
DERIVED_OFFSETS = (AUTOGRAD_OFFSET, AUTOCAST_OFFSET, VMAP_OFFSET)
NUM_KEYS = int(DispatchKey.EndOfKeys)
KEYS_MASK = (1 << NUM_KEYS) - 1     # the bits that are keys
REQUIRES_GRAD = 1 << NUM_KEYS       # the flag of a key set some tensor of which requires grad

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


def to_backend_key(key):
    """The backend under a derived key: AutogradCUDA -> CUDA. Backend keys map to themselves."""
    for offset in DERIVED_OFFSETS:
        if offset <= key < offset + NUM_BACKENDS:
            return DispatchKey(key - offset)
    if is_backend_key(key):
        return DispatchKey(key)
    raise ValueError(f"{DispatchKey(key).name} has no backend key")


AUTOGRAD_MASK = ((1 << NUM_BACKENDS) - 1) << AUTOGRAD_OFFSET     # every Autograd* key


def backend_mask(backend):
    """The bits of a backend key and of every key derived from it."""
    bits = 1 << backend
    for offset in DERIVED_OFFSETS:
        bits |= 1 << (backend + offset)
    return bits


def highest_priority_key(ks):
    """The key a call goes to: the highest set bit. `ks == 0` means 'no key at all'."""
    return (ks & KEYS_MASK).bit_length() - 1


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
        return DispatchKey((self.bits & KEYS_MASK).bit_length() - 1)

    def __repr__(self):
        flag = " requires_grad" if self.bits & REQUIRES_GRAD else ""
        return "DispatchKeySet({" + ", ".join(k.name for k in self) + "}" + flag + ")"


def format_keys(bits, shown=-1):
    """`{AutogradCPU, CPU}`: the keys of `bits` that are also in the mask `shown` (and
    ` requires_grad` after them when the flag is set)."""
    flag = " requires_grad" if bits & REQUIRES_GRAD else ""
    return "{" + ", ".join(k.name for k in DispatchKeySet(bits & shown)) + "}" + flag
