"""Shape ops that copy, on the `cuda` device: cat, flip, roll, repeat. Each is the
pointwise `copy` kernel between strided views (a copy kernel reads any strides, even
negative ones), so no new Triton code is needed:

    flip    a view with negative strides, copied
    cat     each input copied into its slice of the result
    roll    cat of the two slices of each rolled dim
    repeat  the input viewed as [1, s0, 1, s1, ...], expanded to [r0, s0, r1, s1, ...]

A complex tensor's copy is the same kernel on its (re, im) float pairs (`copy_values`,
triton_kernels/_complex.py), so these take complex tensors too (`takes_complex`).
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.kernel_support.arguments import cat_inputs, check_repeats_tensor
from tensorplay.kernel_support.checks import wrap_dim
from tensorplay.kernel_support.layout import clone_strides
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.kernel_support.results import TensorImpl, factory
from tensorplay.library import kernel
from cpu_kernels import shape as cpu_shape   # its repeats check (the same error)
from triton_kernels._complex import copy_values
from triton_kernels._indexing import copy_of, gather_walk, value_tensor, zeroed
from triton_kernels._launch import new_tensor, operands


def _copy(src, dtype=None, strides=None):
    """src copied into a new tensor: row-major, or with `strides` (a dense layout)."""
    impl = src._impl
    if strides is None:
        out = new_tensor(impl.sizes, dtype or impl.dtype, impl.device)
    else:
        out = factory.empty_strided(impl.sizes, strides, dtype=dtype or impl.dtype,
                                    device=impl.device)
    return copy_values(out, src)


@kernel(takes_complex=True)
def flip(self, dims):
    shape_rule("shape.flip")("flip", (self, dims))
    operands("flip", self=self)
    impl = self._impl
    sizes, strides, offset = impl.sizes, list(impl.strides), impl.offset
    for d in {wrap_dim("flip", d, len(sizes)) for d in dims} if sizes else ():
        offset += (sizes[d] - 1) * strides[d] if sizes[d] else 0
        strides[d] = -strides[d]
    view = factory.wrap(TensorImpl(impl.storage, sizes, tuple(strides), offset, impl.dtype,
                                   impl.device, inference=impl.inference))
    # Laid out as self's clone: PyTorch's flip writes into empty_like(self).
    return _copy(view, strides=clone_strides(impl.sizes, impl.strides))


@kernel(takes_complex=True)
def cat(tensors, dim):
    """Join along dim after type promotion (1-D empty tensors are skipped, as on the CPU)."""
    spec = shape_rule("shape.cat")("cat", (tensors, dim))
    device, _ = operands("cat", **{f"tensors[{i}]": t for i, t in enumerate(tensors)})
    out = new_tensor(spec.sizes, spec.dtype, device)
    if all(t._impl.sizes == (0,) for t in tensors):   # only legacy empties: dim unread
        return out
    d = wrap_dim("cat", dim, len(spec.sizes))
    start = 0
    for t in cat_inputs("cat", tensors):
        size = t._impl.sizes[d]
        copy_values(out.narrow(d, start, size), t)
        start += size
    return out


@kernel(takes_complex=True)
def roll(self, shifts, dims):
    """Shift elements along dims, wrapping around; no dims: roll the flattened tensor."""
    shape_rule("shape.roll")("roll", (self, shifts, dims))
    operands("roll", self=self)
    if self._impl.numel() == 0:   # nothing to move; PyTorch reads no dim then
        return _copy(self)
    if len(dims) == 0:
        return roll(self.reshape([-1]), shifts, [0]).view(self._impl.sizes)
    x = self
    for shift, dim in zip(shifts, dims):
        d = wrap_dim("roll", dim, len(x._impl.sizes))
        size = x._impl.sizes[d]
        s = shift % size if size else 0
        if s:
            x = cat([x.narrow(d, size - s, s), x.narrow(d, 0, size - s)], d)
    return x if x is not self else _copy(self)


@kernel(takes_complex=True)
def repeat(self, repeats):
    """The whole tensor repeated along each dim (leading dims added as needed)."""
    spec = shape_rule("shape.repeat")("repeat", (self, repeats))
    device, _ = operands("repeat", self=self)
    out = new_tensor(spec.sizes, self._impl.dtype, device)
    if out._impl.numel() == 0:
        return out
    sizes = (1,) * (len(repeats) - len(self._impl.sizes)) + tuple(self._impl.sizes)
    pairs, ones = [], []
    for r, s in zip(repeats, sizes):
        pairs += [r, s]
        ones += [1, s]
    source = self.reshape(list(sizes)).view(ones).expand(pairs)
    copy_values(out.view(pairs), source)
    return out


@kernel(takes_complex=True)
def repeat_interleave_int(self, repeats, dim, output_size):
    """Each element `repeats` times in a row along dim ([1, 2] -> [1, 1, 2, 2]): the input
    with a new dim of size `repeats` after `dim`, expanded (stride 0), then copied."""
    spec = shape_rule("shape.repeat_interleave_int")(
        "repeat_interleave", (self, repeats, dim, output_size))
    device, _ = operands("repeat_interleave", self=self)
    x = self.reshape([-1]) if dim is None or not self._impl.sizes else self
    d = wrap_dim("repeat_interleave", 0 if dim is None else dim, len(x._impl.sizes))
    sizes = list(x._impl.sizes)
    expanded = x.unsqueeze(d + 1).expand(sizes[:d + 1] + [repeats] + sizes[d + 1:])
    out = new_tensor(spec.sizes, self._impl.dtype, device)
    if out._impl.numel():
        copy_values(out.view(expanded._impl.sizes), expanded)
    return out


def _positions(op, repeats, n):
    """repeat_interleave(tensor([2, 1])) = [0, 0, 1]. With ends = cumsum(counts), output
    element j belongs to position #{i: ends[i] <= j}: atomic-add 1 at every end, then a
    running sum (repeated ends, from zero counts, add up)."""
    counts = copy_of(repeats.reshape([-1]).expand([n]), dt.int64)
    # host sync: a negative count is an error
    if n and call_below_autograd("any", call_below_autograd("lt.Scalar", counts, 0)).item():
        cpu_shape._counts(op, repeats.cpu(), n)
    ends = call_below_autograd("cumsum", counts, 0, None)
    total = ends[-1].item() if n else 0           # host sync: the output's length
    marks = zeroed((total + 1,), dt.int64, counts._impl.device)
    gather_walk(marks, value_tensor(1, dt.int64, marks._impl.device), ends, [n], [0], [0], [1],
                total + 1, 1, mode="add")
    return call_below_autograd("cumsum", marks.narrow(0, 0, total), 0, None)


def repeat_interleave_repeats(repeats, output_size):
    op = "repeat_interleave"
    n = repeats._impl.sizes[0] if repeats._impl.sizes else 1
    check_repeats_tensor(op, repeats, n)
    _, (r,) = operands(op, repeats=repeats)
    positions = _positions(op, r, n)
    if output_size is not None and output_size != positions._impl.sizes[0] and n:
        cpu_shape.repeat_interleave_repeats(repeats.cpu(), output_size)   # its error
    return positions if r._impl.dtype is dt.int64 else copy_of(positions, r._impl.dtype)
