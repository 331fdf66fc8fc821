"""Masks and data-dependent shapes on the `cuda` device: masked_fill, masked_select,
masked_scatter, nonzero, one_hot, repeat_interleave with a tensor of repeats.

masked_fill is the pointwise `where` kernel. The others scan the mask: its inclusive
running count `pos` (the cumsum kernel of scan.py) gives every kept element its place,

    mask  0 1 1 0 1          masked_select:   out[pos[i] - 1] = self[i] where mask[i]
    pos   0 1 2 2 3          masked_scatter:  out[i] = source[pos[i] - 1] where mask[i]

and the result's length is pos[-1], which the host must know to allocate: one host
sync per call (as in PyTorch, whose CUDA nonzero / masked_select synchronise too).
"""
from __future__ import annotations

from cpu_kernels import shape_ops as cpu_shape_ops   # its repeats check (the same error)
from tensorplay import _dtype as dt
from tensorplay._creation import arange
from tensorplay._generated import functional as F
from tensorplay.errors import DimError
from tensorplay.library import kernel
from tensorplay.meta import indexing as rules
from tensorplay.meta import nn_layers as nn_rules
from tensorplay.meta import reduction_shape as shape_rules
from tensorplay.meta.rules import wrap_dim
from triton_kernels._launch import new_tensor, operands
from triton_kernels.index_dim import select
from triton_kernels.indexing import compact, copy_of, gather_walk, value_tensor, zeroed
from triton_kernels.pointwise import run


def _running_count(keep):
    """(count, pos): the inclusive cumsum of the flat mask `keep` and its total."""
    pos = F.cumsum(keep.reshape([-1]), 0, dtype=dt.int64)
    count = pos[-1].item() if keep._impl.numel() else 0    # host sync: the output's size
    return count, pos


def _flat_mask(mask, sizes):
    """The mask broadcast to `sizes`, as a new contiguous 1-D tensor."""
    return copy_of(mask.expand(sizes)).reshape([-1])


# ---- masked_fill -----------------------------------------------------------------------
@kernel(family=True)
def masked_fill(op, self, mask, value):
    """masked_fill and masked_fill_, the value a Scalar or a 0-dim Tensor."""
    spec = rules.masked_fill(op, (self, mask, value))
    is_tensor = getattr(value, "_impl", None) is not None
    device, (x, m, v) = operands(op, self=self, mask=mask, value=value if is_tensor else None)
    fill = value_tensor(v if is_tensor else value, self._impl.dtype, device)
    out = self if spec is rules.SELF else new_tensor(spec.sizes, spec.dtype, device)
    return run("where", out, (m, fill, x), self._impl.dtype)


# ---- masked_select / masked_scatter / nonzero ----------------------------------------------
def masked_select(self, mask):
    sizes = rules.masked_select("masked_select", (self, mask))
    device, (x, m) = operands("masked_select", self=self, mask=mask)
    keep = _flat_mask(m, sizes)
    count, pos = _running_count(keep)
    out = new_tensor((count,), self._impl.dtype, device)
    return compact(out, copy_of(x.expand(sizes)).reshape([-1]), keep, pos)


@kernel(family=True)
def masked_scatter(op, self, mask, source):
    """masked_scatter and masked_scatter_."""
    spec = rules.masked_scatter(op, (self, mask, source))
    device, (x, m, src) = operands(op, self=self, mask=mask, source=source)
    sizes = self._impl.sizes if spec is rules.SELF else spec.sizes
    keep = _flat_mask(m, sizes)
    count, pos = _running_count(keep)
    rules.check_masked_scatter_count(op, count, source)
    target = self if spec is rules.SELF else copy_of(x.expand(sizes))
    if count:
        # Every element reads source[pos - 1]; before the first kept one that is -1,
        # which the kernel wraps to source's last element (in bounds, and discarded
        # by the `where` below).
        flat = src.reshape([-1])
        taken = new_tensor(sizes, self._impl.dtype, device)
        gather_walk(taken.reshape([-1]), flat, F.sub(pos, 1), [keep._impl.numel()], [1], [0],
                    [1], flat._impl.numel(), flat._impl.strides[0])
        run("where", target, (keep.view(sizes), taken, target), self._impl.dtype)
    return target


def nonzero(self):
    """The coordinates of the non-zero elements, one row each, in row-major order: the
    flat positions compacted, then split into coordinates by pointwise // and %."""
    device, (x,) = operands("nonzero", self=self)
    keep = F.ne(x, 0).reshape([-1])
    count, pos = _running_count(keep)
    sizes = x._impl.sizes
    out = new_tensor((count, len(sizes)), dt.int64, device)
    if count and sizes:
        flat = compact(new_tensor((count,), dt.int64, device), None, keep, pos, index=True)
        for k in range(len(sizes) - 1, -1, -1):
            run("copy", out.select(1, k), (F.remainder(flat, sizes[k]),), dt.int64)
            flat = F.floor_divide(flat, sizes[k])
    return out


# ---- one_hot / repeat_interleave ---------------------------------------------------------
def one_hot(self, num_classes):
    """out[..., c] = (self[...] == c) as int64: the pointwise `eq` kernel against
    arange(num_classes). The class range is checked on the device (one host sync, which
    num_classes=-1 needs anyway for the output's size)."""
    op = "one_hot"
    nn_rules.one_hot(op, (self, num_classes))
    device, (x,) = operands(op, self=self)
    if x._impl.numel():
        low, high = F.stack([F.amin(x), F.amax(x)]).cpu().numpy()    # host sync
        if low < 0:
            raise DimError(f"{op}(): Class values must be non-negative (argument 'self' holds "
                           f"{low})", op=op, arg="self")
        if num_classes == -1:
            num_classes = int(high) + 1
        elif high >= num_classes:
            raise DimError(f"{op}(): Class values must be smaller than num_classes "
                           f"({num_classes}), but argument 'self' holds {high}", op=op,
                           arg="self")
    out = new_tensor(tuple(x._impl.sizes) + (num_classes,), dt.int64, device)
    classes = arange(num_classes, dtype=dt.int64, device=device)
    return run("eq", out, (x.unsqueeze(-1), classes), dt.int64)


def _positions(op, repeats, n):
    """repeat_interleave(tensor([2, 1])) = [0, 0, 1]. With ends = cumsum(counts), output
    element j belongs to position #{i: ends[i] <= j}: atomic-add 1 at every end, then a
    running sum (repeated ends, from zero counts, add up)."""
    counts = copy_of(repeats.reshape([-1]).expand([n]), dt.int64)
    if n and F.any(F.lt(counts, 0)).item():       # host sync: a negative count is an error
        cpu_shape_ops._counts(op, repeats.cpu(), n)
    ends = F.cumsum(counts, 0)
    total = ends[-1].item() if n else 0           # host sync: the output's length
    marks = zeroed((total + 1,), dt.int64, counts._impl.device)
    gather_walk(marks, value_tensor(1, dt.int64, marks._impl.device), ends, [n], [0], [0], [1],
                total + 1, 1, mode="add")
    return F.cumsum(marks.narrow(0, 0, total), 0)


def repeat_interleave_repeats(repeats, output_size):
    op = "repeat_interleave"
    n = repeats._impl.sizes[0] if repeats._impl.sizes else 1
    shape_rules.check_repeats_tensor(op, repeats, n)
    _, (r,) = operands(op, repeats=repeats)
    positions = _positions(op, r, n)
    return positions if r._impl.dtype is dt.int64 else copy_of(positions, r._impl.dtype)
