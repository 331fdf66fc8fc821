"""`tp.testing.assert_close`: PyTorch's comparison of tensors, numbers and containers; and
`tp.testing.make_tensor`, its random test tensors (at the end of this file).

    tp.testing.assert_close(actual, expected)          # dtype-aware default tolerances
    tp.testing.assert_close(a, b, rtol=0, atol=0)      # exact

Same semantics as `torch.testing.assert_close`: the two inputs must have the same type
(tensor with tensor, number with number; sequences and mappings element by element), and
tensors the same shape, device and dtype (unless check_device / check_dtype is False,
when both are moved to the CPU and promoted). Values are close when
`|actual - expected| <= atol + rtol * |expected|`, with these defaults for the dtype:

    dtype       rtol     atol
    float16     1e-3     1e-5
    bfloat16    1.6e-2   1e-5
    float32     1.3e-6   1e-5
    float64     1e-7     1e-7
    integers    0        0

Failures raise AssertionError with PyTorch's message: the mismatched elements and the
greatest absolute and relative differences with their index.
"""
from __future__ import annotations

import builtins
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from tensorplay import _dtype as dt
from tensorplay._tensor import Tensor

_TOLERANCES = {dt.float16: (1e-3, 1e-5), dt.bfloat16: (1.6e-2, 1e-5),
               dt.float32: (1.3e-6, 1e-5), dt.float64: (1e-7, 1e-7)}


class _Mismatch(Exception):
    """One failed pair: the error type, its message, and where in the containers."""

    def __init__(self, error, message, where=""):
        super().__init__(message)
        self.error = error
        self.message = message
        self.where = where


def _check_tolerance_pair(rtol, atol):
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but "
                         f"got no {missing}.")


def _tolerances(*dtypes, rtol, atol):
    """The given pair, or the loosest defaults of the dtypes compared."""
    if rtol is not None:
        return rtol, atol
    pairs = [_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _diff_line(kind, diff, index, tol, equality):
    line = (f"{kind.title()} difference: {diff}" if index is None
            else f"Greatest {kind} difference: {diff} at index {index}")
    return line + ("" if equality else f" (up to {tol} allowed)") + "\n"


def _message(identifier, extra, abs_diff, abs_index, rel_diff, rel_index, rtol, atol):
    equality = rtol == 0 and atol == 0
    text = f"{identifier} are not {'equal' if equality else 'close'}!\n\n{extra.strip()}\n"
    text += _diff_line("absolute", abs_diff, abs_index, atol, equality)
    text += _diff_line("relative", rel_diff, rel_index, rtol, equality)
    return text.strip()


def _close(actual, expected, rtol, atol, equal_nan):
    """Elementwise |actual - expected| <= atol + rtol * |expected| (infinities equal only
    to themselves, NaN to NaN only with equal_nan), as torch.isclose."""
    if actual.dtype.kind == "b" or (rtol == 0 and atol == 0):
        same = actual == expected
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            same = (actual == expected) | (np.abs(actual - expected)
                                           <= atol + rtol * np.abs(expected))
    if equal_nan and actual.dtype.kind == "f":
        same = same | (np.isnan(actual) & np.isnan(expected))
    return same


def _compare_tensors(actual, expected, *, rtol, atol, equal_nan, check_device, check_dtype,
                     check_stride):
    for attr, check in (("shape", True), ("device", check_device), ("dtype", check_dtype)):
        a, e = getattr(actual, attr), getattr(expected, attr)
        if check and a != e:
            raise _Mismatch(AssertionError, f"The values for attribute '{attr}' do not match: "
                                            f"{a} != {e}.")
    if check_stride and actual.stride() != expected.stride():
        raise _Mismatch(AssertionError, f"The values for attribute 'stride()' do not match: "
                                        f"{actual.stride()} != {expected.stride()}.")
    rtol, atol = _tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol)
    common = dt.promote_types(actual.dtype, expected.dtype)
    a = actual.detach().cpu().to(common).numpy().reshape(-1)
    e = expected.detach().cpu().to(common).numpy().reshape(-1)
    same = _close(a, e, rtol, atol, equal_nan)
    if same.all():
        return
    if actual.dim() == 0:   # PyTorch words a 0-dim mismatch as one of numbers
        a, e = a.item(), e.item()
        abs_diff = abs(a - e)
        rel_diff = float("inf") if e == 0 else abs_diff / abs(e)
        raise _Mismatch(AssertionError, _message("Scalars", f"Expected {e} but got {a}.",
                                                 abs_diff, None, rel_diff, None, rtol, atol))
    total = same.size
    wrong = total - int(same.sum())
    extra = f"Mismatched elements: {wrong} / {total} ({wrong / total:.1%})"
    if not common.is_floating_point:
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[same] = 0
        rel_diff = abs_diff / np.abs(e)
    rel_diff[same] = 0
    shape = tuple(actual.shape)

    def worst(diffs):   # NOTE: np.argmax, like torch.max, picks the first NaN if any
        i = int(np.argmax(diffs))
        return diffs[i].item(), tuple(int(k) for k in np.unravel_index(i, shape))

    (abs_max, abs_at), (rel_max, rel_at) = worst(abs_diff), worst(rel_diff)
    raise _Mismatch(AssertionError, _message("Tensor-likes", extra, abs_max, abs_at, rel_max,
                                             rel_at, rtol, atol))


def _scalar_dtype(value):
    if isinstance(value, (bool, np.bool_)):
        return dt.bool
    if isinstance(value, (int, np.integer)):
        return dt.int64
    return dt.float64


def _compare_scalars(actual, expected, *, rtol, atol, equal_nan, check_dtype):
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The values for attribute 'type' do not match: "
                                        f"{type(actual)} != {type(expected)}.")
    rtol, atol = _tolerances(_scalar_dtype(actual), _scalar_dtype(expected), rtol=rtol,
                             atol=atol)
    a, e = np.array([actual]), np.array([expected])
    if _close(a, e, rtol, atol, equal_nan).all():
        return
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    raise _Mismatch(AssertionError, _message("Scalars", f"Expected {expected} but got "
                                                        f"{actual}.", abs_diff, None, rel_diff,
                                             None, rtol, atol))


def _is_scalar(x):
    return isinstance(x, (builtins.int, builtins.float, np.number, np.bool_)) and \
        not isinstance(x, complex)


def _is_sequence(x):
    return isinstance(x, Sequence) and not isinstance(x, str)


def _compare(actual, expected, where, **options):
    try:
        if isinstance(actual, Tensor) and isinstance(expected, Tensor):
            _compare_tensors(actual, expected, **options)
        elif _is_scalar(actual) and _is_scalar(expected):
            _compare_scalars(actual, expected, rtol=options["rtol"], atol=options["atol"],
                             equal_nan=options["equal_nan"], check_dtype=options["check_dtype"])
        elif _is_sequence(actual) and _is_sequence(expected):
            if len(actual) != len(expected):
                raise _Mismatch(AssertionError, f"The length of the sequences mismatch: "
                                                f"{len(actual)} != {len(expected)}")
            for i, (a, e) in enumerate(zip(actual, expected)):
                _compare(a, e, f"{where}[{i}]", **options)
        elif isinstance(actual, Mapping) and isinstance(expected, Mapping):
            if set(actual) != set(expected):
                raise _Mismatch(AssertionError, f"The keys of the mappings do not match:\n"
                                                f"Missing keys in the actual mapping: "
                                                f"{sorted(set(expected) - set(actual))}\n"
                                                f"Additional keys in the actual mapping: "
                                                f"{sorted(set(actual) - set(expected))}")
            for key in expected:
                _compare(actual[key], expected[key], f"{where}[{key!r}]", **options)
        elif actual is None and expected is None:
            return
        else:
            raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type "
                                       f"{type(actual)} and {type(expected)}.")
    except _Mismatch as mismatch:
        if not mismatch.where:
            mismatch.where = where
        raise


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Raise AssertionError unless `actual` and `expected` are close (see the module
    docstring); `msg` replaces the message (a callable receives the default one)."""
    _check_tolerance_pair(rtol, atol)
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                   check_dtype=check_dtype, check_stride=check_stride)
    try:
        _compare(actual, expected, "", **options)
    except _Mismatch as mismatch:
        text = mismatch.message
        if mismatch.where and mismatch.error is AssertionError:
            text += f"\n\nThe failure occurred for item {mismatch.where}"
        if callable(msg):
            text = msg(text)
        elif msg is not None:
            text = msg
        raise mismatch.error(text) from None


# ---- make_tensor -----------------------------------------------------------------------
def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of `shape` with values drawn uniformly from [low, high), as
    torch.testing.make_tensor makes it: the same defaults (-9 and 9 for floating and
    complex dtypes, -9 and 10 for integers, 0 and 10 unsigned, 0 and 2 for bool), the
    bounds clamped to the dtype's range, and the same draws from the global generator
    (uniform_ for floating and complex, a complex tensor through its (re, im) pairs;
    randint for integers and bool), so a seeded program gets PyTorch's values.

    noncontiguous: every other element of a tensor twice as long in its last dim (offset
    by one); exclude_zero: zeros replaced by 1 (integers) or the dtype's tiniest normal."""
    import math

    import tensorplay as tp

    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    integral = not (dtype.is_floating_point or dtype.is_complex)
    if requires_grad and integral:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")

    def bounds(lowest, highest, default_low, default_high):
        lo = default_low if low is None else low
        hi = default_high if high is None else high
        if any(isinstance(v, float) and math.isnan(v) for v in (lo, hi)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got low={lo} and high={hi}")
        if lo == hi and not integral:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                          "complex types is deprecated since 2.1 and will be removed in 2.3. "
                          "Use `torch.full(...)` instead.", FutureWarning, stacklevel=3)
        elif lo >= hi:
            raise ValueError(f"`low` must be less than `high`, but got {lo} >= {hi}")
        elif hi < lowest or lo >= highest:
            raise ValueError(f"The value interval specified by `low` and `high` is [{lo}, "
                             f"{hi}), but {dtype} only supports [{lowest}, {highest})")
        lo, hi = min(max(lo, lowest), highest), min(max(hi, lowest), highest)
        return (math.ceil(lo), math.ceil(hi)) if integral else (lo, hi)

    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = shape[:-1] + (2 * shape[-1],)
    if dtype is dt.bool:
        lo, hi = bounds(0, 2, 0, 2)
        result = tp.randint(lo, hi, shape, device=device, dtype=dtype)
    elif integral:
        info = np.iinfo(dtype.np)
        lo, hi = bounds(int(info.min), int(info.max) + (dtype is not dt.int64), -9, 10)
        result = tp.randint(lo, hi, shape, device=device, dtype=dtype)
    else:
        real = dtype.to_real() if dtype.is_complex else dtype
        finfo = tp.finfo(real)
        lo, hi = bounds(finfo.min, finfo.max, -9, 9)
        result = tp.empty(shape, device=device, dtype=dtype)
        target = tp.view_as_real(result) if dtype.is_complex else result
        if hi - lo >= finfo.max:      # uniform_ needs hi - lo finite: draw half, double
            target.uniform_(lo / 2, hi / 2).mul_(2)
        else:
            target.uniform_(lo, hi)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if integral else tp.finfo(dtype.to_real() if dtype.is_complex
                                                         else dtype).tiny
    if not integral:
        result.requires_grad_(requires_grad)
    return result
