"""Output strides: which memory layout a new tensor gets from its inputs.

PyTorch does not always return row-major results. `x.t().clone()` is transposed like
`x.t()`, and so is `x.t().exp()` or `x.t() + x.t()`: a result follows the layout of its
inputs, so that a later `.contiguous()` copies exactly when PyTorch's would.

Two rules, both written once here:

* `clone_strides` (clone's `preserve_format`): a dense input without overlaps keeps its
  strides exactly; any other gets dense strides in the order of its own strides.
* `pointwise_strides` (TensorIterator's): when every input has the output's shape and
  they are all contiguous, or all channels-last (4-d), or all dense with one and the
  same strides, the output takes that layout. Otherwise the dims are sorted by the
  inputs' strides (the first input that orders two dims decides; broadcast dims, of
  stride 0, have no say) and the output is dense in that order.

Strides here count elements. A *perm* lists dims from the fastest-moving (smallest
stride) to the slowest; `dense_in_order` turns it into strides.
"""
from __future__ import annotations

from tensorplay import _memory_format as mf
from tensorplay._impl import contiguous_strides, is_contiguous_layout
from tensorplay.errors import ArgumentError, ShapeError, TensorPlayError

__all__ = ["is_non_overlapping_and_dense", "clone_strides", "copy_strides",
           "pointwise_strides", "check_inplace_overlap", "unique_dim_strides"]


def is_non_overlapping_and_dense(sizes, strides):
    """Every element of a block of numel() slots is addressed exactly once (in any order
    of the dims). Dims of size 0 or 1 may have any stride."""
    if len(sizes) == 1:
        return sizes[0] < 2 or strides[0] == 1
    dims = sorted((d for d in range(len(sizes)) if sizes[d] >= 2), key=lambda d: strides[d])
    expected = 1
    for d in dims:
        if strides[d] != expected:
            return False
        expected *= sizes[d]
    return True


def _sort_dims(ndim, should_swap):
    """Insertion sort of the dims, starting from the row-major perm (n-1, ..., 0), that
    moves a dim only past dims it is *known* to follow: `should_swap(d0, d1)` is 1 (d0
    goes after d1), -1 (before) or 0 (no opinion, keep looking further left)."""
    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            comparison = should_swap(perm[d0], perm[d1])
            if comparison > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif comparison < 0:
                break
    return perm


def dense_in_order(sizes, perm, min_size=0):
    """Strides of a dense tensor whose dims, fastest first, are `perm`."""
    strides = [0] * len(sizes)
    step = 1
    for d in perm:
        strides[d] = step
        step *= max(sizes[d], min_size)
    return tuple(strides)


def clone_strides(sizes, strides):
    """The strides of `clone()` (and of `empty_like`) for an input of this layout."""
    if is_non_overlapping_and_dense(sizes, strides):
        return tuple(strides)

    def should_swap(d0, d1):
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if sizes[d0] > sizes[d1] else 0

    return dense_in_order(sizes, _sort_dims(len(sizes), should_swap), min_size=1)


def unique_dim_strides(sizes, dim):
    """The strides of unique(dim=...)'s values. PyTorch works on self with `dim` moved
    first and made contiguous, and moves it back at the end: its result is row-major in
    that order (`dim` slowest). An empty result is row-major."""
    if 0 in sizes:
        return contiguous_strides(sizes)
    fastest_first = [d for d in reversed(range(len(sizes))) if d != dim] + [dim]
    return dense_in_order(sizes, fastest_first)


def copy_strides(op, sizes, strides, memory_format):
    """The strides of a copy made with `memory_format` (None: preserve_format)."""
    if memory_format is None or memory_format is mf.preserve_format:
        return clone_strides(sizes, strides)
    if memory_format is mf.contiguous_format:
        return contiguous_strides(sizes)
    if memory_format is mf.channels_last:
        if len(sizes) != 4:
            raise ShapeError(f"{op}(): required rank 4 tensor to use channels_last format "
                             f"(argument 'self' has {len(sizes)} dims)", op=op, arg="self")
        return dense_in_order(sizes, mf.CHANNELS_LAST_ORDER)
    raise ArgumentError(f"{op}(): argument 'memory_format' must be a tensorplay.memory_format "
                        f"(preserve_format, contiguous_format or channels_last), not "
                        f"{type(memory_format).__name__}", op=op, arg="memory_format")


def pointwise_strides(sizes, inputs):
    """The strides of a pointwise op's result of shape `sizes`, from its tensor inputs,
    given as (sizes, strides) pairs in argument order."""
    ndim = len(sizes)
    if ndim < 2:
        return contiguous_strides(sizes)
    if all(tuple(s) == tuple(sizes) for s, _ in inputs):
        if all(is_contiguous_layout(s, st) for s, st in inputs):
            return contiguous_strides(sizes)
        if ndim == 4 and all(mf.is_channels_last(s, st) for s, st in inputs):
            return dense_in_order(sizes, mf.CHANNELS_LAST_ORDER)
        first = tuple(inputs[0][1])
        if all(tuple(st) == first for _, st in inputs) and \
                is_non_overlapping_and_dense(sizes, first):
            return first
    # Each input's strides over the output's dims: 0 where it is broadcast.
    aligned = []
    for s, st in inputs:
        lead = ndim - len(s)
        aligned.append([0] * lead + [0 if s[i] == 1 and sizes[lead + i] != 1 else st[i]
                                     for i in range(len(s))])

    def should_swap(d0, d1):
        for st in aligned:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if sizes[d0] > sizes[d1]:
                return 1
        return 0

    return dense_in_order(sizes, _sort_dims(ndim, should_swap))


def check_inplace_overlap(op, self, *inputs):
    """Refuse an in-place write whose result would depend on the order elements are
    written in (PyTorch's two checks, with its messages):

    * `self` itself has elements sharing memory (an expanded tensor: stride 0);
    * an input is dense and overlaps dense `self` in memory without being exactly
      `self` (`x[:3] *= x[1:]`). Sharing exactly (`x *= x`) is fine."""
    impl = self._impl
    if 0 in impl.strides and any(st == 0 and sz > 1 for sz, st in zip(impl.sizes,
                                                                     impl.strides)):
        raise TensorPlayError(
            f"{op}(): unsupported operation: more than one element of the written-to tensor "
            f"(argument 'self') refers to a single memory location. Please clone() the "
            f"tensor before performing the operation.", op=op, arg="self")
    for name, t in inputs:
        other = getattr(t, "_impl", None)
        if other is None or other is impl or other.storage is not impl.storage:
            continue        # the common case: nothing shared
        if (other.offset, other.sizes, other.strides) == (impl.offset, impl.sizes,
                                                          impl.strides):
            continue
        if not (is_non_overlapping_and_dense(impl.sizes, impl.strides) and
                is_non_overlapping_and_dense(other.sizes, other.strides)):
            continue        # PyTorch: too hard to tell, allowed
        if other.offset < impl.offset + impl.numel() and impl.offset < \
                other.offset + other.numel():
            raise TensorPlayError(
                f"{op}(): unsupported operation: some elements of the input tensor (argument "
                f"'{name}') and the written-to tensor (argument 'self') refer to a single "
                f"memory location, with overlapping memory. Please clone() the tensor before "
                f"performing the operation.", op=op, arg=name)


def is_in_format(op, sizes, strides, memory_format):
    """Whether a tensor is laid out as `memory_format` asks (`is_contiguous(memory_format)`):
    contiguous_format is row-major; channels_last is a 4-D tensor stored NHWC."""
    if memory_format is None or memory_format is mf.contiguous_format:
        return is_contiguous_layout(sizes, strides)
    if memory_format is mf.channels_last:
        return mf.is_channels_last(sizes, strides)
    raise ArgumentError(f"{op}(): argument 'memory_format' must be contiguous_format or "
                        f"channels_last, not {memory_format!r}", op=op, arg="memory_format")
