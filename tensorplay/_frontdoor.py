"""Helpers the generated front doors call: argument checks, overload errors, PyTorch's
keyword forms (`out=`, the NumPy names `axis` and `keepdims`) and the key set of a
call. (Nothing here bumps a version counter: the dispatcher's backend slot does, right
after an in-place kernel runs, so every path to the kernel bumps it.)

Checks are written so the common case costs one `type(x) in SET` test; only a
value of an unexpected type goes through the slower conversion that either
accepts it (a NumPy integer for an `int`) or raises an `ArgumentError` naming
the op, the argument, what was expected and what was given.
"""
from __future__ import annotations

import builtins
import operator
import warnings

import numpy as np

from tensorplay import _dtype as dt
from tensorplay import _tensor_factory as factory
from tensorplay._device import device as _device_cls
from tensorplay.autograd.api import set_data
from tensorplay.autograd.grad_mode import grad_state, no_grad
from tensorplay.errors import ArgumentError, DimError

SCALAR_TYPES = frozenset({int, float, builtins.bool, complex})
FLOAT_TYPES = frozenset({float, int})


def _given(value):
    impl = getattr(value, "_impl", None)
    if impl is not None:
        return f"Tensor of dtype {impl.dtype.name}"
    return type(value).__name__


def bad_arg(op, arg, expected, value):
    raise ArgumentError(f"{op}(): argument '{arg}' must be {expected}, but got {_given(value)}",
                        op=op, arg=arg)


def as_scalar(op, arg, value):
    if isinstance(value, (np.integer, np.floating, np.complexfloating, np.bool_)):
        return value.item()
    impl = getattr(value, "_impl", None)
    if impl is not None and impl.numel() == 1 and not impl.requires_grad:
        return value.item()
    bad_arg(op, arg, "a number (Scalar)", value)


def as_int(op, arg, value):
    if isinstance(value, np.integer):
        return int(value)
    impl = getattr(value, "_impl", None)
    if impl is not None and impl.dtype.category < 2 and impl.numel() == 1:   # bool or int
        return int(value.item())
    if isinstance(value, builtins.bool) and arg not in ("dim",):
        return int(value)
    bad_arg(op, arg, "int", value)


def as_float(op, arg, value):
    if isinstance(value, (np.integer, np.floating, builtins.bool)):
        return float(value)
    impl = getattr(value, "_impl", None)
    if impl is not None and impl.numel() == 1:
        return float(value.item())
    bad_arg(op, arg, "float", value)


def as_bool(op, arg, value):
    if isinstance(value, np.bool_):
        return builtins.bool(value)
    bad_arg(op, arg, "bool", value)


def as_int_list(op, arg, value, size=None):
    """int[] arguments accept an int (expanded to `size` copies, or a 1-list) or a sequence."""
    if type(value) is tuple and (size is None or len(value) != 1):
        # The common case, `x.view(2, 8)`: a tuple of plain ints is already the answer.
        for v in value:
            if type(v) is not int:
                break
        else:
            return value
    if type(value) is int or isinstance(value, np.integer):
        return (int(value),) * (size or 1)
    if isinstance(value, (list, tuple, range)):
        out = []
        for v in value:
            if type(v) is int:
                out.append(v)
            elif isinstance(v, np.integer) or (hasattr(v, "_impl") and hasattr(v, "__index__")):
                out.append(operator.index(v))
            else:
                bad_arg(op, arg, "a sequence of ints", value)
        if size is not None and len(out) == 1 and size > 1:
            return tuple(out) * size
        return tuple(out)
    bad_arg(op, arg, "a sequence of ints", value)


def as_float_list(op, arg, value):
    if isinstance(value, (int, float)):
        return (float(value),)
    if isinstance(value, (list, tuple)):
        return tuple(as_float(op, arg, v) if type(v) not in FLOAT_TYPES else float(v)
                     for v in value)
    bad_arg(op, arg, "a sequence of floats", value)


def as_dtype(op, arg, value):
    if isinstance(value, dt.dtype):
        return value
    if isinstance(value, str) and value in dt._BY_NAME:
        return dt._BY_NAME[value]
    if isinstance(value, (np.dtype, type)) and value is not builtins.bool:
        try:
            return dt.from_numpy_dtype(value)
        except TypeError:
            pass
    if value is float:
        return dt.get_default_dtype()
    if value is int:
        return dt.int64
    if value is builtins.bool:
        return dt.bool
    bad_arg(op, arg, "a dtype (e.g. tensorplay.float32)", value)


def as_device(op, arg, value):
    if type(value) is _device_cls:
        return value
    if isinstance(value, str):
        try:
            return _device_cls(value)
        except RuntimeError as e:   # an unknown device string: say which op and argument
            raise ArgumentError(f"{op}(): argument '{arg}' must be a device, but got "
                                f"{value!r} ({e})", op=op, arg=arg) from None
    bad_arg(op, arg, "a device or a string like 'cpu'", value)


def as_tensor_list(op, arg, value, optional=False):
    """Tensor[] (and, with `optional`, Tensor?[]: None entries allowed) as a list."""
    Tensor = factory.Tensor
    if isinstance(value, (list, tuple)) and all(isinstance(t, Tensor) or
                                                (optional and t is None) for t in value):
        return list(value)
    bad_arg(op, arg, "a sequence of Tensors" + (" or None" if optional else ""), value)


def wrap_dim(op, arg, dim, ndim):
    """Turn a possibly negative dim into 0..ndim-1 (0-dim tensors accept -1 and 0)."""
    if type(dim) is not int:
        dim = as_int(op, arg, dim)
    n = ndim or 1       # max(ndim, 1) without the call: ndim >= 0
    if dim < -n or dim >= n:
        raise DimError(f"{op}(): Dimension out of range (expected to be in range of "
                       f"[{-n}, {n - 1}], but got {dim}) for argument '{arg}'", op=op, arg=arg)
    return dim + n if dim < 0 else dim


def wrap_dims(op, arg, dims, ndim):
    out = tuple(wrap_dim(op, arg, d, ndim) for d in dims)
    if len(set(out)) != len(out):
        raise DimError(f"{op}(): dim {out} appears multiple times in the list of dims "
                       f"(argument '{arg}')", op=op, arg=arg)
    return out


def no_overload(op, overloads, args, kwargs):
    """No overload of `op` takes these arguments: list what was given and the schemas
    of `overloads` (their dispatcher handles)."""
    signatures = [h.schema.text for h in overloads]
    given = ", ".join([_given(a) for a in args] + [f"{k}={_given(v)}" for k, v in kwargs.items()])
    listing = "\n".join(f"  {s}" for s in signatures)
    raise ArgumentError(f"{op}() received an invalid combination of arguments: got ({given}), "
                        f"but expected one of:\n{listing}", op=op)


def numpy_aliases(op, aliases, kwargs, bound=None):
    """PyTorch also accepts NumPy's names: `x.sum(1, keepdims=True)`, `tp.mean(x, axis=0)`.
    Returns `kwargs` under the schema's names; with `bound` (the front door's own
    parameters), merged into it, and any other keyword is an error as Python's own."""
    out = {} if bound is None else dict(bound)
    for key, value in kwargs.items():
        name = aliases.get(key)
        if name is None:
            if bound is not None:
                raise TypeError(f"{op}() got an unexpected keyword argument '{key}'")
            name = key
        elif name in kwargs:
            raise ArgumentError(f"{op}(): argument '{name}' given twice (also as '{key}')",
                                op=op, arg=name)
        out[name] = value
    return out


def tuple_result(result):
    """A Tensor[] result as PyTorch's Python functions return it: a tuple (a kernel's list
    converted; a tuple kept; nonzero(as_tuple=False)'s one tensor as it is)."""
    return tuple(result) if type(result) is list else result


def into_out(op, out, result):
    """PyTorch's `out=`: write the computed `result` into `out` and return `out`.

    `out` of the result's shape is written in place; an empty one, or one of another
    shape (PyTorch warns for that: it is deprecated), is resized to the result first.
    The result's dtype must be castable to out's (no float into int, nothing into bool
    but bool), and out= does not record a graph, so it refuses tensors that need one.
    Several outputs (`max(x, 0, out=(values, indices))`) take a tuple of tensors."""
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            bad_arg(op, "out", f"a tuple of {len(result)} Tensors", out)
        written = [_write_out(op, o, r) for o, r in zip(out, result)]
        return type(result)(*written) if hasattr(result, "_fields") else tuple(written)
    return _write_out(op, out, result)


def _write_out(op, out, result):
    out_impl = getattr(out, "_impl", None)
    if out_impl is None:
        bad_arg(op, "out", "Tensor", out)
    impl = result._impl
    if grad_state.enabled and (impl.requires_grad or out_impl.requires_grad):
        raise ArgumentError(f"{op}(): functions with out=... arguments don't support automatic "
                            "differentiation, but one of the arguments requires grad.",
                            op=op, arg="out")
    if not dt.can_cast(impl.dtype, out_impl.dtype):
        raise ArgumentError(f"{op}(): result type {impl.dtype.name} can't be cast to the "
                            f"desired output type {out_impl.dtype.name} (argument 'out')",
                            op=op, arg="out")
    if out_impl.device != impl.device:
        raise ArgumentError(f"{op}(): expected out tensor to have device {impl.device}, "
                            f"but got {out_impl.device} instead", op=op, arg="out")
    if tuple(out_impl.sizes) != tuple(impl.sizes):
        if out_impl.numel() != 0:
            warnings.warn(
                f"{op}(): an output with one or more elements was resized since it had shape "
                f"{list(out_impl.sizes)}, which does not match the required output shape "
                f"{list(impl.sizes)}. This behavior is deprecated (as in PyTorch); resize "
                "the out tensor to zero elements first to reuse it.", UserWarning,
                stacklevel=3)
        set_data(out, factory.empty(tuple(impl.sizes), dtype=out_impl.dtype,
                                    device=out_impl.device))
    with no_grad():
        out.copy_(result)
    return out


def wrap_number(value, like=None):
    """A Python number as a 0-dim 'wrapped number' tensor (it promotes like a scalar).
    Used by reflected operators: `2 - x` is `sub(wrap_number(2), x)`."""
    if type(value) not in SCALAR_TYPES:     # (a plain number, the common case, has no _impl)
        if getattr(value, "_impl", None) is not None:
            return value
        value = as_scalar("operator", "other", value)
    # Like PyTorch, a wrapped float is kept in double precision; it still *promotes*
    # as the default dtype (see _promotion.result_type), so x32 * 1.0001 stays float32
    # while x64 * 1.0001 is computed with the exact double (_creation.wrapped_scalar).
    # `_device`: the field the `device` property reads (no impl class overrides it).
    return factory.wrapped_scalar(value, like._impl._device if like is not None else None)


def keyset_list(tensors):
    ks = 0
    for t in tensors:
        ks |= t._impl.keys
    return ks


def device_keyset(device):
    """Factory functions have no tensor argument: the `device=` picks the backend."""
    if device is None:
        return 1
    if type(device) is not _device_cls:
        device = _device_cls(device)
    return 1 << device.key


CPU_KEYSET = 1


# ---- loose type tests, used only to choose between overloads ---------------------
def is_int(x):
    return type(x) is int or isinstance(x, np.integer)


def is_number(x):
    return type(x) in SCALAR_TYPES or isinstance(x, (np.number, np.bool_))


def is_bool(x):
    return type(x) is builtins.bool or isinstance(x, np.bool_)


def is_int_list(x):
    if is_int(x):
        return True
    return isinstance(x, (list, tuple)) and all(is_int(v) for v in x)


def is_number_list(x):
    return is_number(x) or (isinstance(x, (list, tuple)) and all(is_number(v) for v in x))


def is_dtype(x):
    return isinstance(x, dt.dtype)


def is_device(x):
    return type(x) is _device_cls or isinstance(x, str)


def is_tensor_list(x):
    return isinstance(x, (list, tuple)) and all(hasattr(t, "_impl") for t in x)


def missing_arg(op, name):
    raise ArgumentError(f"{op}(): missing 1 required positional argument: '{name}'",
                        op=op, arg=name)


def unpack_kwargs(op, name, given, kwargs):
    """`view(size=(2, 3))`: the keyword form of a vararg int list."""
    if given or set(kwargs) != {name}:
        extra = sorted(set(kwargs) - {name})
        what = f"unexpected keyword argument(s) {extra}" if extra else \
            f"'{name}' given both positionally and by keyword"
        raise ArgumentError(f"{op}(): {what}", op=op, arg=name)
    return kwargs[name]


def is_operand(x):
    """What a Python operator accepts as its other side (otherwise NotImplemented,
    so `x == None` is False and `x + "a"` raises Python's own TypeError)."""
    return getattr(x, "_impl", None) is not None or is_number(x)
