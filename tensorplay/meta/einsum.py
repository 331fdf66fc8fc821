"""einsum's rule: the result's dtype and shape. The equation's parser and the result's
strides are the kernels' too: tensorplay/kernel_support/einsum.py."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError
from tensorplay.kernel_support.checks import OutSpec, check_devices
from tensorplay.kernel_support.einsum import parse_einsum


def _sizes(t):
    return t._impl.sizes


def contractions(spec, sizes):
    """[(i, letters summed when operand i joins the running result)] for i = 1, 2, ...:
    PyTorch's einsum contracts its operands left to right, and a pair whose shared letter
    is summed over (non-trivially, size > 1 in both) goes to bmm or dot; any other pair
    is multiplied. `sizes`: the operands' shapes."""
    last = {c: i for i, sub in enumerate(spec.inputs) for c in sub}
    running = dict(zip(spec.inputs[0], sizes[0]))   # the running result's letters
    out = []
    for i in range(1, len(sizes)):
        mine = dict(zip(spec.inputs[i], sizes[i]))
        out.append((i, [c for c in mine if last[c] == i and c not in spec.output and
                        running.get(c, 1) != 1 and mine[c] != 1]))
        for c, n in mine.items():
            running[c] = max(running.get(c, 1), n)
    return out


def _einsum_dtype(op, spec, tensors):
    """The dtype of PyTorch's einsum: a contracted pair (bmm, dot) needs one dtype, a
    multiplied pair promotes. With an empty operand PyTorch returns zeros of the last
    operand's dtype and checks nothing."""
    if any(0 in _sizes(t) for t in tensors):
        return tensors[-1]._impl.dtype
    dtype = tensors[0]._impl.dtype
    for i, summed in contractions(spec, [_sizes(t) for t in tensors]):
        t = tensors[i]
        if summed and t._impl.dtype is not dtype:
            raise DTypeError(f"{op}(): operands contracted over {summed[0]!r} must have one "
                             f"dtype, but 'tensors[{i}]' is {t._impl.dtype.name} and the "
                             f"operands before it {dtype.name} (argument 'tensors')", op=op,
                             arg=f"tensors[{i}]")
        dtype = dt.promote_types(dtype, t._impl.dtype)
    return dtype


def einsum(op, args):
    equation, tensors = args
    if not tensors:
        raise ArgumentError(f"{op}(): argument 'tensors' must hold at least one tensor", op=op,
                            arg="tensors")
    check_devices(op, [(f"tensors[{i}]", t) for i, t in enumerate(tensors)])
    spec = parse_einsum(op, equation, [_sizes(t) for t in tensors])
    return OutSpec(tuple(spec.sizes[c] for c in spec.output), _einsum_dtype(op, spec, tensors))
