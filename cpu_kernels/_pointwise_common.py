"""Helpers of the elementwise kernels (pointwise.py, logic.py, activations.py): the dtype
the operands compute in (`binary_arrays`; `mul_div_arrays` for half types), the kernel
factories of the unary functions and of rounding, the division and clamp helpers, and
the one recipe every in-place kernel follows (`inplace_of`)."""
from __future__ import annotations

import functools
import inspect

import numpy as np

from tensorplay._promotion import result_type, result_type2
from tensorplay.errors import ArgumentError, DTypeError
from tensorplay.kernel_support.checks import binary
from tensorplay.kernel_support.complex_refusals import reject_complex
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.kernel_support.overlap import check_inplace_overlap
from cpu_kernels._common import array_as, float_dtype, out_like, out_like1
from cpu_kernels._float_errors import Ignored, call_ignoring


def compute_np(dtype):
    """The NumPy dtype to compute `dtype` in: the half types in float32, rounded once at the
    end (PyTorch's CPU kernels do the same, so results agree to the last bit more often)."""
    if dtype.is_floating_point and dtype.itemsize == 2:
        return np.float32
    return dtype.np


def arrays(dtype, *tensors):
    """The tensors' data converted to the compute dtype of `dtype` (views when possible)."""
    target = compute_np(dtype)
    return [array_as(t, dtype).astype(target, copy=False) for t in tensors]


def promoted(*tensors):
    """(result dtype, arrays in its compute dtype) after PyTorch's type promotion."""
    dtype = result_type(*tensors)
    return dtype, arrays(dtype, *tensors)


def unary_float_kernel(name, fn):
    """A kernel `name(self)` computing `fn` on the input converted to a float dtype; a
    complex input is computed in its own dtype, or refused with PyTorch's message when
    PyTorch has no complex kernel for `name` (erf, logit...: complex_refusals.py)."""
    def kernel(self):
        if self._impl.dtype.is_complex:
            reject_complex(name, self)
        dtype = float_dtype(self._impl.dtype)
        (x,) = arrays(dtype, self)
        with np.errstate(all="ignore"):
            return out_like(fn(x), dtype, self)
    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"{name}(self) elementwise, in floating point."
    return kernel


def inplace_of(kernel, rule, name):
    """The in-place form of an out-of-place kernel: check with the op's rule (named as
    ops.yaml's `meta:` names it) that the result fits into `self` (shape and dtype),
    compute, copy into self's own memory.

        for each i:  self[i] = kernel(self, *args)[i]
    """
    names = list(inspect.signature(kernel).parameters)[1:]

    @functools.wraps(kernel)   # keeps the parameter names the dispatcher checks
    def inplace(self, *args):
        for arg, t in zip(["self"] + names, (self, *args)):
            reject_complex(name, t, arg)      # floor_, fmod_...: none when PyTorch has one
        shape_rule(rule)(name, (self, *args))
        check_inplace_overlap(name, self, *zip(names, args))
        result = kernel(self, *args)
        np.copyto(self._impl.array(), result._impl.array(), casting="unsafe")
        return self
    inplace.__name__ = inplace.__qualname__ = name
    return inplace


def binary_arrays(self, other):
    """The two operands' arrays in the dtype the op computes in, and that dtype."""
    ia, ib = self._impl, other._impl
    dtype = ia.dtype
    if dtype is ib.dtype:
        # One dtype (the common case): result_type2 would return it and array_as the
        # cached views as they are; only a view whose array is not made yet goes on.
        a, b = ia._array, ib._array
        if a is not None and b is not None:
            return a, b, dtype
    dtype = result_type2(self, other)
    return array_as(self, dtype), array_as(other, dtype), dtype


def mul_div_arrays(self, other, dtype):
    """The operands of mul and div for a result of `dtype`.

    NOTE: a 0-dim second operand of a half-type result (float16, bfloat16) enters in
    float32 straight from its own dtype, and the op runs in float32, rounded once at the
    end: `half * 0.1` multiplies by 0.1, not by 0.1 first rounded to half. PyTorch's CPU
    mul and div kernels do this (they read such a scalar with
    `original_scalar_value<opmath_t>`); its add and sub round the scalar to half first."""
    impl = other._impl
    if dtype.is_floating_point and dtype.itemsize == 2 and not impl.sizes:
        return array_as(self, dtype), impl.array().astype(np.float32)
    return array_as(self, dtype), array_as(other, dtype)


def scaled_by_alpha(op, self, other, alpha, dtype, b):
    """`b * alpha` for add/sub, called unless alpha is the int 1 of a real dtype. NumPy
    would compute int + 0.5 * int in float and truncate: PyTorch refuses any float alpha
    there, and so does the op's shape rule. A complex b is always multiplied, by alpha + 0j
    even for alpha 1, as PyTorch's kernel computes a + alpha * b: an inf or NaN part of b
    makes the other part NaN (0 * inf), so (1 + 1j) + (inf + 1j) is inf + nanj there."""
    if (type(alpha) is float and not dtype.is_differentiable) or \
            (type(alpha) is complex and not dtype.is_complex):
        binary(op, (self, other, alpha))
    if dtype.is_complex:
        with np.errstate(invalid="ignore"):     # (0 * inf: the NaN PyTorch makes too)
            return np.multiply(b, dtype.np.type(alpha))
    return b if alpha == 1 else b * alpha


def int_pow_negative(a, b, dtype, scalar_exponent):
    """Integer powers with negative exponents, as PyTorch does them: a Python-number
    exponent is an error; a tensor exponent gives 1 / a**|b| truncated toward zero, which
    is 0 except for a base of 1 (1) or -1 (+1 or -1 by parity). NumPy raises instead."""
    if scalar_exponent:
        raise DTypeError(f"pow(): Integers to negative integer powers are not allowed "
                         f"(argument 'exponent' is {b.item()} and 'self' is {dtype.name})",
                         op="pow", arg="exponent")
    negative = b < 0
    with np.errstate(over="ignore"):
        r = np.power(a, np.where(negative, 0, b))
    odd = np.where(b % 2 == 0, 1, -1)
    inverse = np.where(a == 1, 1, np.where(a == -1, odd, 0))
    return np.where(negative, inverse, r)


# The NumPy warnings PyTorch does not give: log(-1) is nan, exp(1000) is inf.
UNARY_FLOAT_ERRORS = Ignored(divide="ignore", invalid="ignore", over="ignore")


def unary_float_ufunc(ufunc):
    def kernel(self):
        dtype = float_dtype(self._impl.dtype)
        # The ufunc keeps its float input's dtype (tests/test_fastpath_fast14a.py checks it
        # for each float dtype), so `out_like` casts nothing and needs no errstate.
        r = call_ignoring(UNARY_FLOAT_ERRORS, ufunc, array_as(self, dtype))
        return out_like1(r, dtype, self)
    return kernel


# ---- rounding: integers are already whole (a copy); bool is refused -------------------
def rounding_kernel(name, fn):
    def kernel(self):
        reject_complex(name, self)     # rounding is real: PyTorch has no complex kernel
        shape_rule("pointwise.unary_no_bool")(name, (self,))
        a = self._impl.array()
        if not self._impl.dtype.is_floating_point:
            return out_like(a.copy(), self._impl.dtype, self)
        (x,) = arrays(self._impl.dtype, self)
        return out_like(fn(x), self._impl.dtype, self)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


# ---- the division family ------------------------------------------------------------
def check_int_divisor(op, dtype, a, b):
    # NumPy returns 0 (with a warning) for an integer division by zero; PyTorch refuses,
    # but only when a quotient is computed: an empty result divides nothing.
    if not dtype.is_differentiable and np.broadcast(a, b).size and np.any(b == 0):
        raise ArgumentError(f"{op}(): integer division by zero (argument 'other' has a zero "
                            f"element)", op=op, arg="other")


def trunc_divide(a, b):
    """Integer division rounded toward zero: the floor quotient, plus one where the signs
    differ and the division is not exact."""
    q = np.floor_divide(a, b)
    return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))


def clamp_arrays(x, lo, hi):
    # np.maximum/np.minimum propagate nan from either side, as torch.clamp does.
    # A number bound is converted to the tensor's dtype first, wrapping like a C cast
    # (PyTorch: clamp(uint8, -1, 1) uses 255 as the lower bound).
    if lo is not None:
        x = np.maximum(x, np.array(lo).astype(x.dtype))
    if hi is not None:
        x = np.minimum(x, np.array(hi).astype(x.dtype))
    return x
