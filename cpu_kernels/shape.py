"""Shape ops that copy: cat, flip, roll, repeat, repeat_interleave (the shape ops that are
views are Composite, in tensorplay/composite/views.py)."""
from __future__ import annotations

import numpy as np

from tensorplay.errors import ArgumentError
from tensorplay.kernel_support.arguments import cat_inputs, check_repeats_tensor
from tensorplay.kernel_support.checks import wrap_dim
from tensorplay.kernel_support.layout import clone_strides
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import array_as, check_result, out, out_strided


def flip(self, dims):
    """A copy laid out as self's clone (PyTorch's flip writes into empty_like(self)), so
    `x.t().flip(0)` is transposed too."""
    shape_rule("shape.flip")("flip", (self, dims))
    impl = self._impl
    a = impl.array()
    axes = tuple(wrap_dim("flip", d, a.ndim) for d in dims) if a.ndim else ()
    # order="K" copies in self's own memory order: already the layout wanted when self is dense.
    flipped = np.flip(a, axis=axes).copy(order="K")
    return out_strided(flipped, impl.dtype, clone_strides(impl.sizes, impl.strides))


def cat(tensors, dim):
    """Join along dim after type promotion (1-D empty tensors are skipped, as in PyTorch)."""
    spec = shape_rule("shape.cat")("cat", (tensors, dim))
    kept = cat_inputs("cat", tensors)
    if all(t._impl.sizes == (0,) for t in tensors):   # only legacy empties: dim unread
        return out(np.empty(0, spec.dtype.np), spec.dtype)
    d = wrap_dim("cat", dim, len(spec.sizes))
    # Into a row-major array: NumPy lays its own result out in the inputs' memory order,
    # and for permuted inputs (unbind's backward stacks attention's q, k, v gradients in
    # the projection's layout) that result's copy to row-major took 10x the concatenation.
    result = np.empty(spec.sizes, spec.dtype.np)
    np.concatenate([array_as(t, spec.dtype) for t in kept], axis=d, out=result)
    return out(result, spec.dtype)


def roll(self, shifts, dims):
    """Shift elements along dims, wrapping around; no dims: roll the flattened tensor."""
    shape_rule("shape.roll")("roll", (self, shifts, dims))
    a = self._impl.array()
    if a.size == 0:   # nothing to move; PyTorch reads no dim then
        return out(a.copy(), self._impl.dtype)
    if len(dims) == 0:
        return out(np.roll(a.reshape(-1), shifts[0]).reshape(a.shape), self._impl.dtype)
    axes = tuple(wrap_dim("roll", d, a.ndim) for d in dims) if a.ndim else ()
    if not axes:
        return out(a.copy(), self._impl.dtype)
    return out(np.roll(a, tuple(shifts), axis=axes), self._impl.dtype)


def repeat(self, repeats):
    """np.tile: the whole tensor repeated along each dim (leading dims added as needed)."""
    spec = shape_rule("shape.repeat")("repeat", (self, repeats))
    check_result("repeat", "repeats", spec.sizes, self._impl.dtype)
    a = self._impl.array()
    a = a.reshape((1,) * (len(repeats) - a.ndim) + a.shape)
    return out(np.tile(a, tuple(repeats)).reshape(spec.sizes), self._impl.dtype)


def _interleave(self, counts, dim):
    a = self._impl.array()
    if dim is None or a.ndim == 0:
        return np.repeat(a.reshape(-1), counts)
    d = wrap_dim("repeat_interleave", dim, a.ndim)
    return np.repeat(a, counts, axis=d)


def repeat_interleave_int(self, repeats, dim, output_size):
    """Each element repeated `repeats` times, in place along dim: [1, 2] -> [1, 1, 2, 2]."""
    spec = shape_rule("shape.repeat_interleave_int")(
        "repeat_interleave", (self, repeats, dim, output_size))
    return out(_interleave(self, repeats, dim).reshape(spec.sizes), self._impl.dtype)


def _counts(op, repeats, n):
    counts = repeats._impl.array().astype(np.int64).reshape(-1)
    if counts.size and counts.min() < 0:
        raise ArgumentError(f"{op}(): argument 'repeats' must be non-negative, but got "
                            f"{counts.tolist()}", op=op, arg="repeats")
    return np.broadcast_to(counts, (n,)) if counts.size == 1 else counts


def repeat_interleave_repeats(repeats, output_size):
    """repeat_interleave(tensor([2, 1])) = [0, 0, 1]: each index repeated by its count."""
    n = repeats._impl.sizes[0] if repeats._impl.sizes else 1
    check_repeats_tensor("repeat_interleave", repeats, n)
    counts = _counts("repeat_interleave", repeats, n)
    total = int(counts.sum())
    # (no repeats, no check: PyTorch returns the empty result first)
    if output_size is not None and output_size != total and n:
        raise ArgumentError(f"repeat_interleave(): argument 'output_size' must be the sum of "
                            f"'repeats', {total}, but got {output_size}", op="repeat_interleave",
                            arg="output_size")
    return out(np.repeat(np.arange(n), counts), repeats._impl.dtype)
