"""Output strides: which memory layout a new tensor gets from its inputs.

PyTorch does not always return row-major results. `x.t().clone()` is transposed like
`x.t()`, and so is `x.t().exp()` or `x.t() + x.t()`: a result follows the layout of its
inputs, so that a later `.contiguous()` copies exactly when PyTorch's would.

The rules, each written once here:

* `clone_strides` (clone's `preserve_format`): a dense input without overlaps keeps its
  strides exactly; any other gets dense strides in the order of its own strides.
* `pointwise_strides` (TensorIterator's): when every input has the output's shape and
  they are all contiguous, or all channels-last (4-d), or all dense with one and the
  same strides, the output takes that layout. Otherwise the dims are sorted by the
  inputs' strides (the first input that orders two dims decides; broadcast dims, of
  stride 0, have no say) and the output is dense in that order.
* `index_strides` (x[idx]): `pointwise_strides` over the operands of PyTorch's gather.
* `view_strides` and `expand_strides`: the strides of a view, size-1 and empty dims
  included (they take part in the sorts above, so they must be PyTorch's too).
* `unique_dim_strides`: unique(dim=...)'s values, built with `dim` moved first.
* `lapack_strides`: LAPACK's results (inv, solve, cholesky): row-major batches of
  column-major matrices.

einsum's layout follows from its contraction order: kernel_support/einsum.py.

Strides here count elements. A *perm* lists dims from the fastest-moving (smallest
stride) to the slowest; `dense_in_order` turns it into strides.
"""
from __future__ import annotations

from tensorplay import _memory_format as mf
from tensorplay._impl import contiguous_strides, is_contiguous_layout, numel_of
from tensorplay.errors import ArgumentError, ShapeError

__all__ = ["is_non_overlapping_and_dense", "clone_strides", "copy_strides",
           "pointwise_strides", "unique_dim_strides", "index_strides",
           "view_strides", "walk_view_strides", "is_row_major", "expand_strides"]


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


def view_strides(old_sizes, old_strides, new_sizes):
    """Strides that let `new_sizes` view memory laid out as (old_sizes, old_strides), or
    None when a new dimension would span two non-contiguous chunks (PyTorch's computeStride)."""
    if is_row_major(old_sizes, old_strides):
        # Row-major memory (the usual view): the walk always finds the row-major strides
        # of the new sizes (tests/test_fastpath_fast14e.py checks it on every shape of up
        # to 4 dims and 36 elements), and so does the branch below for 0-d and empty
        # tensors (an empty tensor viewed with its own sizes keeps its strides, these).
        return contiguous_strides(new_sizes)
    if numel_of(old_sizes) == 0 or not old_sizes:
        # Empty or 0-dim: any layout of the new sizes addresses the same (<= 1) element;
        # the walk would find no dim of the old shape to take strides from. As PyTorch
        # (and NumPy), an empty tensor viewed with its own sizes keeps its strides.
        if old_sizes and tuple(new_sizes) == tuple(old_sizes):
            return tuple(old_strides)
        return contiguous_strides(new_sizes)
    return walk_view_strides(old_sizes, old_strides, new_sizes)


def walk_view_strides(old_sizes, old_strides, new_sizes):
    """view_strides of a tensor with at least one element and one dim: the new dims are
    matched to the chunks of contiguous memory of the old ones, from the last dim."""
    new_strides = [0] * len(new_sizes)
    view_d = len(new_sizes) - 1
    chunk_base_stride = old_strides[-1] if old_strides else 1
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_sizes) - 1, -1, -1):
        tensor_numel *= old_sizes[tensor_d]
        # At the start of a chunk of contiguous memory (or the first dim), fill the view dims.
        if tensor_d == 0 or (old_sizes[tensor_d - 1] != 1 and
                             old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_sizes[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_sizes[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def is_row_major(sizes, strides):
    """Whether `strides` are exactly `contiguous_strides(sizes)` (every dim, size-1 and
    empty ones too: stricter than is_contiguous_layout). Written out for the 1-d and 2-d
    shapes most views start from, without building a tuple to compare with."""
    n = len(sizes)
    if n == 1:
        return strides[0] == 1
    if n == 2:
        return strides[1] == 1 and strides[0] == (sizes[1] or 1)
    return tuple(strides) == contiguous_strides(sizes)


def expand_strides(sizes, strides, new_sizes):
    """The strides of a tensor of (sizes, strides) expanded to `new_sizes` (valid): 0
    along each dim it is broadcast in. A new leading dim of size 1 gets PyTorch's stride
    for it, as unsqueeze would give it (the next dim's size times its stride)."""
    lead = len(new_sizes) - len(sizes)
    out = [0] * len(new_sizes)
    for i in range(len(new_sizes) - 1, -1, -1):
        if i >= lead:
            size, stride = sizes[i - lead], strides[i - lead]
        else:
            size = 1
            stride = new_sizes[i + 1] * out[i + 1] if i + 1 < len(new_sizes) else 0
        out[i] = stride if size == new_sizes[i] else 0
    return tuple(out)


def storage_span(sizes, strides):
    """How many elements a tensor of these sizes and strides reaches (0 when empty): its
    storage's least size. More than the element count for a window of a larger buffer."""
    if any(n == 0 for n in sizes):
        return 0
    return 1 + sum((n - 1) * st for n, st in zip(sizes, strides))


def lapack_strides(sizes):
    """Row-major batches of column-major (Fortran-order) matrices: how LAPACK writes a
    factor or a solution, and PyTorch's strides for inv, solve and cholesky
    (batched_matrix_contiguous_strides)."""
    strides = list(contiguous_strides(sizes))
    if len(sizes) >= 2:
        strides[-2], strides[-1] = 1, max(sizes[-2], 1)
    return tuple(strides)


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


def index_strides(result_sizes, sizes, strides, indices):
    """The strides of `index.Tensor`'s result (`x[idx]`) for a self of (sizes, strides).
    `indices`: per dim of self, None (taken whole) or the (sizes, strides) of its index
    tensor (a mask given as its nonzero() columns, one per dim it covers).

    PyTorch gathers with a pointwise iterator over self restrided to the result's shape
    (stride 0 along the indexed dims) and the index tensors broadcast to it, so the
    result is laid out by `pointwise_strides` over those operands: x.t()[[1, 0]] stays
    transposed. Index tensors not side by side (x[idx, :, idx]) first move, with their
    dims of self, to the front (their result dims lead, as in NumPy)."""
    indices = list(indices) + [None] * (len(sizes) - len(indices))
    indexed = [d for d, t in enumerate(indices) if t is not None]
    if len(result_sizes) < 2 or not indexed:
        return contiguous_strides(result_sizes)
    if indexed[-1] - indexed[0] + 1 != len(indexed):       # not side by side
        order = indexed + [d for d, t in enumerate(indices) if t is None]
        sizes = [sizes[d] for d in order]
        strides = [strides[d] for d in order]
        indices = [indices[d] for d in order]
        indexed = list(range(len(indexed)))
    before, after = indexed[0], len(sizes) - indexed[-1] - 1
    shape = _broadcast_sizes([t[0] for t in indices if t is not None])
    src = (tuple(sizes[:before]) + shape + tuple(sizes[len(sizes) - after:]),
           tuple(strides[:before]) + (0,) * len(shape) + tuple(strides[len(sizes) - after:]))
    operands = [src]
    padded = (1,) * before + shape + (1,) * after
    for t in indices:
        if t is not None:
            t_sizes, t_strides = t
            if tuple(t_sizes) != shape:     # broadcast to the common shape
                t_strides = expand_strides(t_sizes, t_strides, shape)
            # then reshaped to the result's number of dims (its strides there matter:
            # a size-1 dim of the result keeps the operand's stride in the sort)
            operands.append((padded, view_strides(shape, t_strides, padded)
                             or contiguous_strides(padded)))
    return pointwise_strides(tuple(result_sizes), operands)


def _broadcast_sizes(shapes):
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s, ndim - len(s)):
            if n != 1:
                out[i] = n
    return tuple(out)


def is_in_format(op, sizes, strides, memory_format):
    """Whether a tensor is laid out as `memory_format` asks (`is_contiguous(memory_format)`):
    contiguous_format is row-major; channels_last is a 4-D tensor stored NHWC."""
    if memory_format is None or memory_format is mf.contiguous_format:
        return is_contiguous_layout(sizes, strides)
    if memory_format is mf.channels_last:
        return mf.is_channels_last(sizes, strides)
    raise ArgumentError(f"{op}(): argument 'memory_format' must be contiguous_format or "
                        f"channels_last, not {memory_format!r}", op=op, arg="memory_format")
