"""Shape and dtype rules of the pointwise ops beyond the arithmetic of rules.py: the float
functions, rounding, the division family, clamp/lerp/addcmul, and the in-place forms;
the helpers here (`unary_floating`, `require_float`...) serve logic, activations and
random too.

Same contract as rules.py: `rule(op, args) -> OutSpec | SELF`, or a typed error that
names the op and the argument. In-place rules (op names ending in `_`) check that the
result's dtype can be written into `self` and return SELF.
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._promotion import result_type
from tensorplay.errors import ArgumentError, DTypeError
from tensorplay.kernel_support.checks import (
    OutSpec, SELF, binary, broadcast, check_devices, fits_inplace,
)
from tensorplay.kernel_support.complex_refusals import reject_complex
from tensorplay.meta import rules


def _sizes(t):
    return t._impl.sizes


def _finish(op, spec, self):
    """Out-of-place: the spec. In-place: the result must fit into `self` (shape, dtype)."""
    if not op.endswith("_"):
        return spec
    return fits_inplace(op, spec, self)


def _float(dtype):
    """The dtype a float function computes in: floating and complex dtypes are kept,
    integers and bool become the default float dtype."""
    return dtype if dtype.is_differentiable else dt.get_default_dtype()


def reject_dtypes(op, name, t, bad, what):
    if t._impl.dtype in bad:
        raise DTypeError(f"{op}(): not implemented for {t._impl.dtype.name} tensors (argument "
                         f"'{name}' is {t._impl.dtype.name}; expected {what})", op=op, arg=name)


def require_float(op, name, t):
    reject_complex(op, t, name)     # PyTorch's own message where it has one (elu, gelu...)
    if not t._impl.dtype.is_floating_point:
        raise DTypeError(f"{op}(): not implemented for {t._impl.dtype.name} tensors (argument "
                         f"'{name}' is {t._impl.dtype.name}; expected a floating point "
                         f"tensor)", op=op, arg=name)


_NOT_BOOL = (dt.bool,)


# ---- unary --------------------------------------------------------------------------
def unary_float(op, args):
    """exp2, log1p, asin, ...: integers and bool compute in the default float dtype."""
    self = args[0]
    return _finish(op, OutSpec(_sizes(self), _float(self._impl.dtype)), self)


def unary_real_of_complex(op, args):
    """angle: a real result, complex64 -> float32, complex128 -> float64; a real input
    is unary_float's."""
    dtype = args[0]._impl.dtype
    if dtype.is_complex:
        return _finish(op, OutSpec(_sizes(args[0]), dtype.to_real()), args[0])
    return unary_float(op, args)


def unary_same(op, args):
    """nan_to_num, neg_, ...: the output has the input's dtype."""
    self = args[0]
    return _finish(op, OutSpec(_sizes(self), self._impl.dtype), self)


def unary_no_bool(op, args):
    """floor, ceil, round, trunc, abs_: any dtype but bool, kept as it is (and no
    complex where PyTorch refuses it: rounding, threshold, abs_)."""
    reject_complex(op, args[0])
    reject_dtypes(op, "self", args[0], _NOT_BOOL, "a number tensor")
    return unary_same(op, args)


def unary_neg(op, args):
    """neg_: neg's check (no bool), then the in-place result."""
    rules.unary_neg(op, args)
    return unary_same(op, args)


def unary_floating(op, args):
    """frac, the activations: floating inputs only (PyTorch has no integer kernels)."""
    require_float(op, "self", args[0])
    return unary_same(op, args)


# ---- binary -------------------------------------------------------------------------
def binary_float(op, args):
    """atan2, true division: integers and bool compute in the default float dtype."""
    spec = binary(op, args)
    return _finish(op, OutSpec(spec.sizes, _float(spec.dtype)), args[0])


def binary_no_bool(op, args):
    """floor_divide, remainder, fmod: numbers; bool only as one side of a promotion
    (`x % True` is fine, `bool_tensor % bool_tensor` is not)."""
    spec = binary(op, args)
    if spec.dtype is dt.bool:
        reject_dtypes(op, "self", args[0], _NOT_BOOL, "a number tensor")
    return _finish(op, spec, args[0])


def binary_floating(op, args):
    """hypot: the promoted dtype must be floating (PyTorch has no integer kernel)."""
    spec = binary(op, args)
    if not spec.dtype.is_floating_point:
        require_float(op, "self", args[0])
        require_float(op, "other", args[1])
    return _finish(op, spec, args[0])


def div_mode(op, args):
    self, other, mode = args
    check_rounding_mode(op, mode)
    if mode is not None:     # a rounded quotient is real: PyTorch has no complex kernel
        for name, t in (("self", self), ("other", other)):
            reject_complex(op, t, name, kind=f"div_{mode}")
    if mode is None:
        return binary_float(op, (self, other))
    return binary_no_bool(op, (self, other))


def check_rounding_mode(op, mode):
    if mode not in (None, "trunc", "floor"):
        raise ArgumentError(f"{op}(): argument 'rounding_mode' must be None, 'trunc' or "
                            f"'floor', but got {mode!r}", op=op, arg="rounding_mode")


# ---- several tensors ----------------------------------------------------------------
def ternary(op, args, names, floating=False):
    """addcmul, addcdiv, lerp: broadcast every tensor argument, promote their dtypes.
    `floating`: floating or complex tensors only (lerp)."""
    tensors = [(n, t) for n, t in zip(names, args) if t is not None and hasattr(t, "_impl")]
    check_devices(op, tensors)
    for name, t in tensors:
        if floating and not t._impl.dtype.is_complex:
            require_float(op, name, t)
    sizes = broadcast(op, [(n, _sizes(t)) for n, t in tensors])
    return _finish(op, OutSpec(sizes, result_type(*[t for _, t in tensors])), args[0])


def addcmul(op, args):
    # A bool operand is fine (True * 2.0); an all-bool addcmul has no kernel in PyTorch.
    return _no_bool_result(op, ternary(op, args, ("self", "tensor1", "tensor2")), args[0])


def addcdiv(op, args):
    self, t1, t2 = args[:3]
    if not (t1._impl.dtype.is_differentiable or t2._impl.dtype.is_differentiable):
        raise DTypeError(f"{op}(): integer division with addcdiv is not supported (arguments "
                         f"'tensor1' and 'tensor2' are {t1._impl.dtype.name} and "
                         f"{t2._impl.dtype.name}); use a floating point tensor", op=op,
                         arg="tensor2")
    return ternary(op, args, ("self", "tensor1", "tensor2"))


def lerp(op, args):
    self, end, weight = args
    # a 0-d weight tensor is a number to PyTorch's lerp: any dtype (an int64 or bool one
    # too), cast to self's, never promoting it; unless self and end are 0-d too, when the
    # three promote alike (float16 ones with a float64 weight give float64)
    number = hasattr(weight, "_impl") and not weight._impl.sizes \
        and bool(self._impl.sizes or end._impl.sizes)
    spec = ternary(op, (self, end, None if number else weight), ("self", "end", "weight"),
                   floating=True)
    if end._impl.dtype is not self._impl.dtype:
        raise DTypeError(f"{op}(): expected dtype {self._impl.dtype.name} for argument 'end' "
                         f"but got dtype {end._impl.dtype.name}", op=op, arg="end")
    if hasattr(weight, "_impl") and weight._impl.sizes \
            and weight._impl.dtype is not self._impl.dtype:
        # (a weight tensor too, unless 0-d: PyTorch's lerp kernel takes one dtype for all
        # three, and a 0-d weight as a number)
        raise DTypeError(f"{op}(): expected dtype {self._impl.dtype.name} for argument "
                         f"'weight' but got dtype {weight._impl.dtype.name}", op=op,
                         arg="weight")
    return spec


def clamp(op, args):
    self, lo, hi = args
    if lo is None and hi is None:
        raise ArgumentError(f"{op}(): at least one of 'min' or 'max' must not be None", op=op,
                            arg="min")
    return _no_bool_result(op, ternary(op, args, ("self", "min", "max")), self)


def _no_bool_result(op, spec, self):
    """clamp with tensor bounds, addcmul: no bool kernel in PyTorch when the result is
    bool (number bounds promote a bool tensor to int64; one bool operand is fine)."""
    dtype = self._impl.dtype if spec is SELF else spec.dtype
    if dtype is dt.bool:
        reject_dtypes(op, "self", self, _NOT_BOOL, "a number tensor")
    return spec


def clamp_max(op, args):
    """clamp_max.Tensor(self, max): clamp with no lower bound."""
    return _no_bool_result(op, ternary(op, (args[0], None, args[1]), ("self", "min", "max")),
                           args[0])


def clamp_scalar(op, args):
    self, lo, hi = args
    if lo is None and hi is None:
        raise ArgumentError(f"{op}(): at least one of 'min' or 'max' must not be None", op=op,
                            arg="min")
    # Number bounds promote like Python scalars: int tensor with 0.5 -> float32.
    return _finish(op, OutSpec(_sizes(self), result_type(self, lo, hi)), self)




# ---- the ops of the inverse-hyperbolics / number-theory / bit-shift section ---------
def binary_pow(op, args):
    """pow_: pow's rule (no bool ** bool), then the result must fit into self."""
    return _finish(op, rules.binary_pow(op, args), args[0])


def binary_integral(op, args):
    """gcd, lcm, the bit shifts: the promoted dtype must be an integer one (a bool
    operand promotes, as in `x << True`; two bools, a float or a complex do not)."""
    spec = binary(op, args)
    if spec.dtype.is_floating_point or spec.dtype.is_complex or spec.dtype is dt.bool:
        self, other = args[0], args[1]
        name, t = ("self", self) if (self._impl.dtype.is_floating_point or
                                     self._impl.dtype.is_complex or
                                     self._impl.dtype is spec.dtype) else ("other", other)
        raise DTypeError(f"{op}(): not implemented for {spec.dtype.name} tensors (argument "
                         f"'{name}' is {t._impl.dtype.name}; expected an integer tensor)",
                         op=op, arg=name)
    return _finish(op, spec, args[0])


def frexp(op, args):
    """(mantissa in self's dtype, exponent int32), floating inputs only."""
    self = args[0]
    if not self._impl.dtype.is_floating_point:
        raise DTypeError(f"{op}(): only supports floating-point dtypes (argument 'self' is "
                         f"{self._impl.dtype.name})", op=op, arg="self")
    return OutSpec(_sizes(self), self._impl.dtype), OutSpec(_sizes(self), dt.int32)
