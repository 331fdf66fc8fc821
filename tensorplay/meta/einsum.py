"""einsum's rule: the result's dtype and shape. The equation's parser and the result's
strides are the kernels' too: tensorplay/kernel_support/einsum.py."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError
from tensorplay.kernel_support.checks import OutSpec, check_devices
from tensorplay.kernel_support.einsum import parse_einsum


def _sizes(t):
    return t._impl.sizes


def _einsum_dtype(op, spec, tensors):
    """The dtype of PyTorch's einsum, which contracts the operands left to right: a pair
    whose shared letter is summed over (non-trivially, size > 1 in both) goes to bmm or
    dot, which need one dtype; any other pair is multiplied, which promotes. With an empty
    operand PyTorch returns zeros of the last operand's dtype and checks nothing."""
    if any(0 in _sizes(t) for t in tensors):
        return tensors[-1]._impl.dtype
    last = {c: i for i, sub in enumerate(spec.inputs) for c in sub}
    sizes = dict(zip(spec.inputs[0], _sizes(tensors[0])))   # the running result's letters
    dtype = tensors[0]._impl.dtype
    for i in range(1, len(tensors)):
        t = tensors[i]
        mine = dict(zip(spec.inputs[i], _sizes(t)))
        summed = [c for c in mine if last[c] == i and c not in spec.output and
                  sizes.get(c, 1) != 1 and mine[c] != 1]
        if summed and t._impl.dtype is not dtype:
            raise DTypeError(f"{op}(): operands contracted over {summed[0]!r} must have one "
                             f"dtype, but 'tensors[{i}]' is {t._impl.dtype.name} and the "
                             f"operands before it {dtype.name} (argument 'tensors')", op=op,
                             arg=f"tensors[{i}]")
        dtype = dt.promote_types(dtype, t._impl.dtype)
        for c, n in mine.items():
            sizes[c] = max(sizes.get(c, 1), n)
    return dtype


def einsum(op, args):
    equation, tensors = args
    if not tensors:
        raise ArgumentError(f"{op}(): argument 'tensors' must hold at least one tensor", op=op,
                            arg="tensors")
    check_devices(op, [(f"tensors[{i}]", t) for i, t in enumerate(tensors)])
    spec = parse_einsum(op, equation, [_sizes(t) for t in tensors])
    return OutSpec(tuple(spec.sizes[c] for c in spec.output), _einsum_dtype(op, spec, tensors))
