"""One function per family of ops: `rule(op, args) -> OutSpec | tuple[OutSpec, ...]`.

`op` is the op's name for messages (`add`), `args` the call's arguments in
schema order. A rule either returns the output's (sizes, dtype) or raises a
typed error naming the op and the argument.
"""
from __future__ import annotations

import functools
import math

import ml_dtypes
import numpy as np

from tensorplay import _dtype as dt
from tensorplay._promotion import result_type
from tensorplay.errors import DeviceError, DTypeError, ShapeError, fmt_shape
# The checks kernels raise too live in the kernel support layer; the rules use them from
# there (binary and binary_inplace are rules ops.yaml names: `meta: binary`).
from tensorplay.kernel_support.checks import (  # noqa: F401
    SELF, OutSpec, binary, binary_inplace, broadcast, check_devices,
    check_inplace_cast, check_mean_dtype, check_nonempty_dim, check_nonempty_reduction,
    reduce_dim_list, reject_bool, wrap_dim,
)
from tensorplay.kernel_support.complex_refusals import reject_complex


def _sizes(t):
    return t._impl.sizes


def binary_sub(op, args):
    for name, t in (("self", args[0]), ("other", args[1])):
        if t._impl.dtype is dt.bool:
            raise DTypeError(f"{op}(): subtraction with bool tensors is not supported "
                             f"(argument '{name}' is bool); use logical_xor() or the `^` "
                             f"operator instead", op=op, arg=name)
    return binary(op, args)


def binary_float(op, args):
    spec = binary(op, args)
    return OutSpec(spec.sizes, spec.dtype if spec.dtype.is_differentiable
                   else dt.get_default_dtype())


def binary_pow(op, args):
    spec = binary(op, args, ("self", "exponent"))
    if spec.dtype is dt.bool:
        reject_bool(op, args[0])
    return spec


def comparison(op, args):
    return OutSpec(binary(op, args).sizes, dt.bool)


def binary_float_inplace(op, args):
    check_inplace_cast(op, binary_float(op, args).dtype, args[0])
    return binary_inplace(op, args)


def where(op, args):
    cond, a, b = args
    check_devices(op, [("condition", cond), ("self", a), ("other", b)])
    if cond._impl.dtype is not dt.bool:
        raise DTypeError(f"{op}(): argument 'condition' must be a bool tensor, but got "
                         f"{cond._impl.dtype.name}", op=op, arg="condition")
    sizes = broadcast(op, [("condition", _sizes(cond)), ("self", _sizes(a)),
                           ("other", _sizes(b))])
    return OutSpec(sizes, result_type(a, b))


def unary(op, args):
    return OutSpec(_sizes(args[0]), args[0]._impl.dtype)


def unary_neg(op, args):
    if args[0]._impl.dtype is dt.bool:
        raise DTypeError(f"{op}(): negation, the `-` operator, on a bool tensor (argument "
                         f"'self') is not supported; use the `~` or logical_not() operator "
                         f"instead", op=op, arg="self")
    return unary(op, args)


def unary_abs(op, args):
    dtype = args[0]._impl.dtype
    if dtype is dt.bool:
        raise DTypeError(f"{op}(): not implemented for bool tensors (argument 'self' is "
                         f"bool)", op=op, arg="self")
    return OutSpec(_sizes(args[0]), dtype.to_real())    # |complex| is real


def unary_relu(op, args):
    if args[0]._impl.dtype is dt.bool:
        raise DTypeError(f"{op}(): not implemented for bool tensors (argument 'self' is "
                         f"bool)", op=op, arg="self")
    return unary(op, args) if not op.endswith("_") else SELF


def unary_float(op, args):
    d = args[0]._impl.dtype
    return OutSpec(_sizes(args[0]), d if d.is_differentiable else dt.get_default_dtype())


@functools.lru_cache(maxsize=None)
def _value_range(dtype):
    """(lowest, highest) finite value of `dtype`, as Python floats or ints (made once per
    dtype: ml_dtypes.finfo costs a microsecond a call, and every fill_ asks)."""
    if dtype.is_floating_point:
        info = ml_dtypes.finfo(dtype.np)
        return float(info.min), float(info.max)
    info = np.iinfo(dtype.np)
    return int(info.min), int(info.max)


def check_value_fits(op, value, dtype, arg="value"):
    """A fill value (a number or a 0-dim tensor's) must fit `dtype`, as PyTorch converts it
    (c10::checked_convert): a float source overflows an integer dtype when NaN, infinite or
    out of range (-0.5 does not fit uint8), and a float dtype only when finite and out of
    range; an integer source may be negative for an unsigned dtype (it wraps, -1 -> 255)
    but no larger than its max; bool sources and bool dtypes are never checked."""
    impl = getattr(value, "_impl", None)
    if impl is not None:
        if impl.device.type == "meta":
            return
        value = value.item()
    if dtype is dt.bool or dtype.is_complex or isinstance(value, bool):
        return
    if isinstance(value, complex):
        # PyTorch converts a complex number to a real dtype only when it is real (its
        # imaginary part 0); then its real part must fit like any number
        if value.imag != 0:
            raise DTypeError(f"{op}(): argument '{arg}' ({value}) cannot be converted to "
                             f"{dtype.name} without overflow (value cannot be converted to "
                             f"type {dtype.name} without overflow: a complex number with "
                             f"a nonzero imaginary part into a real tensor)", op=op, arg=arg)
        value = value.real
    low, high = _value_range(dtype)
    if dtype.is_floating_point:
        fits = not math.isfinite(value) or low <= value <= high
    elif isinstance(value, float):
        fits = math.isfinite(value) and low <= value <= high
    elif not dtype.is_signed and value < 0:
        fits = -value <= high
    else:
        fits = low <= value <= high
    if not fits:
        raise DTypeError(f"{op}(): argument '{arg}' ({value}) cannot be converted to "
                         f"{dtype.name} without overflow", op=op, arg=arg)


def fill_(op, args):
    """fill_ with a number: the number must fit self's dtype (a 0-dim tensor value is a
    copy_ instead, unchecked, as in PyTorch)."""
    self, value = args
    check_value_fits(op, value, self._impl.dtype)
    return SELF


# ---- reductions ---------------------------------------------------------------------
def _reduced(op, sizes, dims, keepdim):
    if dims is None or len(dims) == 0:
        dims = range(len(sizes))
    else:
        dims = reduce_dim_list(op, dims, len(sizes))
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(sizes))
    return tuple(s for i, s in enumerate(sizes) if i not in dims)


def _sum_dtype(t, dtype):
    if dtype is not None:
        return dtype
    d = t._impl.dtype
    return d if d.is_differentiable else dt.int64     # floating and complex keep theirs


def reduce_all(op, args):
    return OutSpec((), _sum_dtype(args[0], args[1]))


def reduce_dims(op, args):
    self, dim, keepdim, dtype = args
    return OutSpec(_reduced(op, _sizes(self), dim, keepdim), _sum_dtype(self, dtype))


def reduce_all_float(op, args):
    check_mean_dtype(op, args[0], args[1])
    return OutSpec((), args[1] or args[0]._impl.dtype)


def reduce_dims_float(op, args):
    self, dim, keepdim, dtype = args
    check_mean_dtype(op, self, dtype)
    return OutSpec(_reduced(op, _sizes(self), dim, keepdim), dtype or self._impl.dtype)


def reduce_all_same(op, args):
    """max() and min(): one element of self (not for complex numbers, which have no order)."""
    reject_complex(op, args[0], kind=f"{op}.all")
    check_nonempty_reduction(op, args[0])
    return OutSpec((), args[0]._impl.dtype)


def reduce_dim_with_indices(op, args):
    self, dim, keepdim = args
    reject_complex(op, self, kind=f"{op}.dim")
    sizes = _sizes(self)
    d = wrap_dim(op, dim, len(sizes))
    if sizes:
        check_nonempty_dim(op, self, d)
    out = _reduced(op, sizes, (d,), keepdim) if sizes else ()
    return OutSpec(out, self._impl.dtype), OutSpec(out, dt.int64)


def arg_reduce(op, args):
    self, dim, keepdim = args
    reject_bool(op, self)
    reject_complex(op, self)
    sizes = _sizes(self)
    if dim is None:
        check_nonempty_reduction(op, self)
        return OutSpec((1,) * len(sizes) if keepdim else (), dt.int64)
    d = wrap_dim(op, dim, len(sizes))
    if sizes:
        check_nonempty_dim(op, self, d)
    return OutSpec(_reduced(op, sizes, (d,), keepdim) if sizes else (), dt.int64)


# ---- linear algebra -----------------------------------------------------------------
def _same_dtype(op, a, b, names):
    if a._impl.dtype is not b._impl.dtype:
        raise DTypeError(f"{op}(): expected '{names[0]}' and '{names[1]}' to have the same "
                         f"dtype, but got: {a._impl.dtype.name} != {b._impl.dtype.name}",
                         op=op, arg=names[1])


def mm(op, args):
    op = op or "mm"
    a, b = args
    sa, sb = _sizes(a), _sizes(b)
    for name, s in (("self", sa), ("mat2", sb)):
        if len(s) != 2:
            raise ShapeError(f"{op}(): argument '{name}' must be a matrix (2-D), but got "
                             f"{len(s)}-D shape {fmt_shape(s)}", op=op, arg=name)
    if sa[1] != sb[0]:
        raise ShapeError(f"{op}(): 'self' and 'mat2' shapes cannot be multiplied "
                         f"({sa[0]}x{sa[1]} and {sb[0]}x{sb[1]})", op=op, arg="mat2")
    _same_dtype(op, a, b, ("self", "mat2"))
    check_devices(op, [("self", a), ("mat2", b)])
    return OutSpec((sa[0], sb[1]), a._impl.dtype)


def bmm(op, args):
    op = op or "bmm"
    a, b = args
    sa, sb = _sizes(a), _sizes(b)
    for name, s in (("self", sa), ("mat2", sb)):
        if len(s) != 3:
            raise ShapeError(f"{op}(): argument '{name}' must be a 3-D tensor, but got "
                             f"{len(s)}-D shape {fmt_shape(s)}", op=op, arg=name)
    if sa[0] != sb[0]:
        raise ShapeError(f"{op}(): batch sizes differ: 'self' has {sa[0]}, 'mat2' has {sb[0]}",
                         op=op, arg="mat2")
    if sa[2] != sb[1]:
        raise ShapeError(f"{op}(): 'self' and 'mat2' shapes cannot be multiplied "
                         f"({sa[1]}x{sa[2]} and {sb[1]}x{sb[2]})", op=op, arg="mat2")
    check_devices(op, [("self", a), ("mat2", b)])
    if 0 in sa or 0 in sb:
        # PyTorch returns (zeros, or nothing) before its kernel checks the dtypes: an empty
        # product of any two dtypes, in mat2's
        return OutSpec((sa[0], sa[1], sb[2]), b._impl.dtype)
    _same_dtype(op, a, b, ("self", "mat2"))
    return OutSpec((sa[0], sa[1], sb[2]), a._impl.dtype)


# ---- copies -------------------------------------------------------------------------
def copy_(op, args):
    self, src = args[0], args[1]
    # Copies may cross devices, but a meta tensor has no data to copy into real memory
    # (a cpu `self` with a meta `src` dispatches here, to Meta, the higher key).
    if src._impl.device.type == "meta" and self._impl.device.type != "meta":
        raise DeviceError(f"{op}(): cannot copy out of a meta tensor: argument 'src' is on "
                          f"meta and has no data, 'self' is on {self._impl.device}", op=op,
                          arg="src")
    sizes = broadcast(op, [("self", _sizes(self)), ("src", _sizes(src))])
    if sizes != _sizes(self):
        # PyTorch's copy is a TensorIterator that may not resize its output: a src with
        # more (leading, size-1) dims than self is refused too.
        raise ShapeError(f"{op}(): argument 'src' (shape {fmt_shape(_sizes(src))}) cannot be "
                         f"broadcast to 'self' (shape {fmt_shape(_sizes(self))}): output with "
                         f"shape {fmt_shape(_sizes(self))} doesn't match the broadcast shape "
                         f"{fmt_shape(sizes)}", op=op, arg="src")
    return SELF


def to_copy(op, args):
    self, dtype, device = args[0], args[1], args[2]
    if self._impl.device.type == "meta" and device is not None and device.type != "meta":
        raise DeviceError(f"{op}(): cannot copy out of a meta tensor: argument 'self' has no "
                          f"data to move to {device} (for a module built on meta, "
                          f"Module.to_empty(device=...) allocates its parameters there)",
                          op=op, arg="self")
    return OutSpec(_sizes(self), dtype or self._impl.dtype)
