"""Shape and dtype rules of the `bessel` family (tp.special's Bessel and Airy functions,
zeta and the orthogonal polynomials).

PyTorch computes these in float32 or float64 only: integer and bool inputs become the
default float dtype (like exp), and float16/bfloat16 are refused (PyTorch has no half
kernel for them, on either device). Same contract as rules.py:
`rule(op, args) -> OutSpec`, or a typed error naming the op and the argument.
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import DTypeError
from tensorplay.kernel_support.checks import OutSpec, binary, check_devices
from tensorplay.kernel_support.complex_refusals import reject_complex_no_kernel

_HALF = (dt.float16, dt.bfloat16)


def _float(dtype):
    return dtype if dtype.is_floating_point else dt.get_default_dtype()


def _reject_complex(op, named):
    """PyTorch's special functions are real: "bessel_j0_cpu" not implemented for
    'ComplexFloat' (its kernel is the op's name less `special_`)."""
    kernel = op.rstrip("_").removeprefix("special_") + "_cpu"
    reject_complex_no_kernel(op, named, kernel)


def _reject_half(op, name, t):
    dtype = t._impl.dtype
    if dtype in _HALF:
        raise DTypeError(f"{op}(): not implemented for {dtype.name} tensors (argument "
                         f"'{name}' is {dtype.name}; expected float32, float64 or an "
                         f"integer or bool tensor)", op=op, arg=name)


def unary(op, args):
    """airy_ai, bessel_j0, ...: one tensor (named `x` or `self`, as PyTorch names it)."""
    (t,) = args
    _reject_complex(op, [(_unary_arg(op), t)])
    _reject_half(op, _unary_arg(op), t)
    check_devices(op, [(_unary_arg(op), t)])
    return OutSpec(t._impl.sizes, _float(t._impl.dtype))


# PyTorch's schemas name the argument `self` for these five, `x` for the others.
_SELF_NAMED = {"special_bessel_j0", "special_bessel_j1", "special_bessel_y0",
               "special_bessel_y1", "special_modified_bessel_i0", "special_modified_bessel_i1",
               "special_modified_bessel_k0", "special_modified_bessel_k1"}


def _unary_arg(op):
    return "self" if op in _SELF_NAMED else "x"


def _binary(op, args, names):
    spec = binary(op, args, names)
    _reject_complex(op, list(zip(names, args)))
    # The promoted dtype decides (float16 x with a float64 n computes in float64); a
    # half result blames the argument that carries the half type.
    if spec.dtype in _HALF:
        for name, t in zip(names, args):
            _reject_half(op, name, t)
    return OutSpec(spec.sizes, _float(spec.dtype))


def polynomial(op, args):
    """chebyshev_polynomial_t(x, n), ...: x and n broadcast, promote, and compute in float."""
    return _binary(op, args, ("x", "n"))


def zeta(op, args):
    """special_zeta(self, other): the Hurwitz zeta function of self at other."""
    return _binary(op, args, ("self", "other"))
