"""Random ops that see no batched tensor still obey vmap's `randomness` flag.

`tp.rand(3)` inside a vmapped function takes no tensor, and neither does
`tp.bernoulli(tp.full((3,), 0.5))` or `F.dropout(tp.ones(3))` on a tensor made inside:
the batching kernel, which sits at the Vmap keys of *batched* tensors, never runs. As in
torch.func.vmap, every level's flag applies anyway:

    "error"      raise (the default)
    "same"       one draw for the whole batch: the result is unbatched
    "different"  one draw per example: the draw gets the batch dims in front and comes
                 back as a BatchedTensor (in-place draws into an unbatched tensor raise:
                 every example would see the same numbers)

Two hooks, one per kind of function:
- the creation functions (_creation.py) are not dispatched: they call `batch_sizes` and
  `wrap` through tensorplay/_random.py, only while some vmap runs (`vmaps_running`);
- the random *ops* get a kernel at the VmapMode key, which vmap includes in every call
  made inside it (tls.IncludeKeys); every other op falls through that key.

Nested vmaps: a draw with no batched argument gets the dims of every "different" level,
outermost first. A draw with a batched argument is left to the batching kernel, which
applies the flag of that argument's level.
"""
from __future__ import annotations

import threading

from tensorplay import _random
from tensorplay.dispatch.keys import DispatchKey
from tensorplay.dispatch.tls import ExcludeKeys
from tensorplay.func.batched import VmapError, batched_impl, wrap_batched
from tensorplay.func.vmap_levels import _levels

VMAP_MODE = 1 << DispatchKey.VmapMode


def error_message(op_name):
    return (f"vmap: called random operation {op_name} while in randomness error mode. "
            f"Please either use the 'same' or 'different' randomness flags on vmap or "
            f"perform the randomness operation out of vmap")


def batch_sizes(op_name):
    """The batch sizes a draw with no batched argument gets in front: one per level with
    randomness="different", outermost first. Raises under a level in "error" mode."""
    sizes = []
    for entry in _levels.stack:
        if entry.randomness == "error":
            raise VmapError(error_message(op_name), op=op_name, arg="randomness")
        if entry.randomness == "different":
            sizes.append(entry.batch_size)
    return tuple(sizes)


def wrap(draw):
    """`draw` (the sizes of `batch_sizes` in front) as the function sees it: batched at
    each "different" level, the outermost wrapped first (it owns the first dim)."""
    for entry in _levels.stack:
        if entry.randomness == "different":
            draw = wrap_batched(draw, 0, entry.level)
    return draw


# ---- counting the running vmaps (the creation functions' one-read check) ---------------
_count_lock = threading.Lock()


def enter():
    with _count_lock:
        _random.vmaps_running += 1


def leave():
    with _count_lock:
        _random.vmaps_running -= 1


_random.vmap_batch_sizes = batch_sizes
_random.vmap_wrap = wrap


# ---- the kernel at the VmapMode key ----------------------------------------------------
def _draws(op, args):
    """Whether this call draws random numbers: dropout does not when not training or
    with p == 0 (torch.func lets those through under "error" too)."""
    if op.name in ("dropout", "native_dropout"):
        return bool(args[2]) and args[1] != 0
    return True


def _any_batched(op, args):
    for i in op.schema.tensor_positions:
        a = args[i]
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if batched_impl(t) is not None:
                return True
    return False


def mode_kernel(op):
    """The function registered at the VmapMode key of random op `op`."""
    schema = op.schema

    def vmap_mode_kernel(ks, *args):
        with ExcludeKeys(VMAP_MODE):
            if not _levels.stack or _any_batched(op, args) or not _draws(op, args):
                return op.call(ks, *args)
            sizes = batch_sizes(op.name)
            if not sizes:                               # every level is "same"
                return op.call(ks, *args)
            if schema.mutable_positions:
                raise VmapError("vmap: Cannot ask for different inplace randomness on an "
                                "unbatched tensor. This will appear like same randomness. "
                                "If this is necessary for your usage, please file an issue "
                                "with functorch.", op=op.name, arg="randomness")
            # Every example draws its own: run the op once on the inputs repeated over
            # the batch (expanded views; the outputs are fresh tensors).
            new = list(args)
            for i in schema.tensor_positions:
                if args[i] is not None:
                    new[i] = args[i].expand(sizes + tuple(args[i].shape))
            out = op.call(ks, *new)
        if isinstance(out, tuple):
            return tuple(wrap(o) for o in out)
        return wrap(out)

    vmap_mode_kernel.__qualname__ = f"vmap_mode_kernel[{op.name}]"
    return vmap_mode_kernel
