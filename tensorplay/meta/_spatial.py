"""What the rules of the spatial families share (conv, padding, pooling, resample,
fold): an input is `(N, C, *spatial)`; a list argument (`stride`, `padding`, ...) has one
entry per spatial dim; sizes that come out of a window are
`floor((size + 2 * pad - dilation * (k - 1) - 1) / stride) + 1`."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError


def _sizes(t):
    return t._impl.sizes


def check_list(op, name, values, n, minimum):
    """`values` has `n` entries, each >= `minimum`."""
    values = tuple(values)
    if len(values) != n:
        raise ArgumentError(f"{op}(): argument '{name}' must have {n} element(s), one per "
                            f"spatial dim, but got {list(values)}", op=op, arg=name)
    if any(v < minimum for v in values):
        what = "positive" if minimum == 1 else "non-negative"
        raise ArgumentError(f"{op}(): argument '{name}' must be {what}, but got "
                            f"{list(values)}", op=op, arg=name)
    return values


def check_floating(op, name, t):
    if not t._impl.dtype.is_floating_point:
        raise DTypeError(f"{op}(): argument '{name}' must have a floating point dtype, but "
                         f"got {t._impl.dtype.name}", op=op, arg=name)


def check_not_bool(op, name, t):
    if t._impl.dtype is dt.bool:
        raise DTypeError(f"{op}(): not implemented for bool tensors (argument '{name}' is "
                         f"bool)", op=op, arg=name)


def window_out_size(size, k, stride, pad, dilation, ceil_mode=False):
    """Output length of a sliding window (PyTorch's pooling_output_shape): with ceil_mode a
    last partial window counts, unless it would start in the right padding."""
    span = size + 2 * pad - dilation * (k - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = span // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out
