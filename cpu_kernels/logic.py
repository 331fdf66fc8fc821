"""Logic kernels: nan/inf tests, closeness, logical and bitwise ops.

The logical ops read any dtype as "nonzero is True" and give bool; the bitwise ops
work on integers and bool only, after type promotion.
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.kernel_support.checks import check_devices
from tensorplay.kernel_support.complex_refusals import reject_complex
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import out_like
from cpu_kernels._pointwise_common import arrays, inplace_of, promoted


def _unary_test(name, fn):
    def kernel(self):
        if self._impl.dtype.is_complex:
            reject_complex(name, self)  # isposinf, isneginf: no sign for a complex number
        a = self._impl.array()
        # (a complex number is nan, or infinite, when either part is: NumPy's rule too)
        if not self._impl.dtype.is_differentiable:
            return out_like(np.full(a.shape, fn is np.isfinite, np.bool_), dt.bool, self)
        (x,) = arrays(self._impl.dtype, self)
        return out_like(fn(x), dt.bool, self)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


isnan = _unary_test("isnan", np.isnan)
isinf = _unary_test("isinf", np.isinf)
isfinite = _unary_test("isfinite", np.isfinite)   # integers are always finite


def isclose(self, other, rtol, atol, equal_nan):
    """|self - other| <= atol + rtol * |other|, elementwise; equal values (infinities
    included) are always close, nan is close to nan only with equal_nan.

        for each i:  out[i] = self[i] == other[i] or
                              (finite and |self[i] - other[i]| <= atol + rtol * |other[i]|)
    """
    shape_rule("logic.isclose")("isclose", (self, other, rtol, atol, equal_nan))
    dtype = self._impl.dtype
    if dtype is dt.bool or not dtype.is_differentiable:
        # Integers: compare exactly where possible, tolerance in float64 (like torch).
        a, b = self._impl.array(), other._impl.array()
        close = a == b
        if rtol or atol:
            fa, fb = a.astype(np.float64), b.astype(np.float64)
            close = close | (np.abs(fa - fb) <= atol + rtol * np.abs(fb))
        return out_like(close, dt.bool, self, other)
    a, b = arrays(dtype, self, other)
    # (complex: |a - b| and |b| are the moduli; nan and finite as either part is)
    with np.errstate(all="ignore"):
        close = (a == b) | (np.isfinite(a) & np.isfinite(b)
                            & (np.abs(a - b) <= atol + rtol * np.abs(b)))
    if equal_nan:
        close = close | (np.isnan(a) & np.isnan(b))
    return out_like(close, dt.bool, self, other)


def equal(self, other):
    """True when both have the same shape and the same values (nan is not equal to nan)."""
    check_devices("equal", [("self", self), ("other", other)])
    if self._impl.sizes != other._impl.sizes:
        return False
    _, (a, b) = promoted(self, other)
    return bool(np.array_equal(a, b))


# ---- logical: nonzero is True, the result is bool -----------------------------------
def logical_not(self):
    return out_like(np.logical_not(self._impl.array()), dt.bool, self)


def _logical(name, ufunc):
    def kernel(self, other):
        shape_rule("logic.logical")(name, (self, other))
        return out_like(ufunc(self._impl.array(), other._impl.array()), dt.bool, self, other)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


logical_and = _logical("logical_and", np.logical_and)
logical_or = _logical("logical_or", np.logical_or)
logical_xor = _logical("logical_xor", np.logical_xor)


# ---- bitwise: integers and bool ------------------------------------------------------
def bitwise_not(self):
    shape_rule("logic.unary_integral")("bitwise_not", (self,))
    return out_like(np.invert(self._impl.array()), self._impl.dtype, self)


def _bitwise(name, ufunc):
    def kernel(self, other):
        spec = shape_rule("logic.bitwise")(name, (self, other))
        a, b = arrays(spec.dtype, self, other)
        return out_like(ufunc(a, b), spec.dtype, self, other)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


bitwise_and = _bitwise("bitwise_and", np.bitwise_and)
bitwise_or = _bitwise("bitwise_or", np.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", np.bitwise_xor)

bitwise_not_ = inplace_of(bitwise_not, "logic.unary_integral", "bitwise_not_")
bitwise_and_ = inplace_of(bitwise_and, "logic.bitwise", "bitwise_and_")
bitwise_or_ = inplace_of(bitwise_or, "logic.bitwise", "bitwise_or_")
bitwise_xor_ = inplace_of(bitwise_xor, "logic.bitwise", "bitwise_xor_")

logical_not_ = inplace_of(logical_not, "logic.logical_inplace", "logical_not_")
logical_and_ = inplace_of(logical_and, "logic.logical_inplace", "logical_and_")
logical_or_ = inplace_of(logical_or, "logic.logical_inplace", "logical_or_")
logical_xor_ = inplace_of(logical_xor, "logic.logical_inplace", "logical_xor_")


# ---- sign and infinity tests ----------------------------------------------------------
isneginf = _unary_test("isneginf", np.isneginf)   # integers are never infinite
isposinf = _unary_test("isposinf", np.isposinf)


def signbit(self):
    """The sign bit: -0.0 and -nan are negative; integers below 0; bool never."""
    reject_complex("signbit", self)
    dtype = self._impl.dtype
    if dtype.is_floating_point:
        (x,) = arrays(dtype, self)     # (half types widen exactly, sign bit included)
        return out_like(np.signbit(x), dt.bool, self)
    a = self._impl.array()
    return out_like(a < 0 if dtype is not dt.bool else np.zeros(a.shape, np.bool_), dt.bool,
                    self)


# ---- bit shifts -----------------------------------------------------------------------
def _shift_operands(op, self, other):
    spec = shape_rule("pointwise.binary_integral")(op, (self, other))
    (a, b) = arrays(spec.dtype, self, other)
    return spec.dtype, a, b, a.dtype.itemsize * 8


def bitwise_left_shift(self, other):
    """self << other in the promoted dtype, wrapping around; a count below 0 or of the
    dtype's width or more gives 0 (PyTorch's rule: NumPy's shift is undefined there).

        for each i:  out[i] = 0 <= other[i] < bits ? self[i] << other[i] : 0
    """
    dtype, a, b, bits = _shift_operands("bitwise_left_shift", self, other)
    inside = (b >= 0) & (b < bits)
    r = np.left_shift(a, np.where(inside, b, 0).astype(a.dtype))
    return out_like(np.where(inside, r, np.zeros((), a.dtype)), dtype, self, other)


def bitwise_right_shift(self, other):
    """self >> other, arithmetic (the sign fills in); a count below 0 or past the last
    value bit shifts everything out: -1 for a negative signed self, else 0.

        for each i:  out[i] = 0 <= other[i] < width ? self[i] >> other[i] : self[i] >> width
        (width: the number of value bits, bits - 1 for a signed dtype)
    """
    dtype, a, b, bits = _shift_operands("bitwise_right_shift", self, other)
    signed = np.issubdtype(a.dtype, np.signedinteger)
    width = bits - 1 if signed else bits
    inside = (b >= 0) & (b < width)
    r = np.right_shift(a, np.where(inside, b, 0).astype(a.dtype))
    out_of_range = np.right_shift(a, np.asarray(bits - 1, a.dtype)) if signed \
        else np.zeros((), a.dtype)
    return out_like(np.where(inside, r, out_of_range), dtype, self, other)


bitwise_left_shift_ = inplace_of(bitwise_left_shift, "pointwise.binary_integral",
                                 "bitwise_left_shift_")
bitwise_right_shift_ = inplace_of(bitwise_right_shift, "pointwise.binary_integral",
                                  "bitwise_right_shift_")
