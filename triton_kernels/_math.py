"""Scalar math the pointwise expressions call that `triton.language` does not have in a
form that runs both compiled and in the interpreter (libdevice does not run in the
interpreter), or whose edge cases must match PyTorch (NaN propagation, 0 ** 0).

Each is a `@triton.jit` function of already-converted values (the pointwise template
converts inputs to the compute dtype before the expression runs).
"""
import triton
import triton.language as tl


@triton.jit
def convert(x, dtype: tl.constexpr):
    """x as `dtype`. A bfloat16 on either side converts through float32: that is how
    PyTorch converts (float64 -> float -> bfloat16), and the only bf16 conversion the
    interpreter gets right."""
    if x.dtype == tl.bfloat16 or dtype == tl.bfloat16:
        x = x.to(tl.float32)
    return x.to(dtype)


@triton.jit
def tanh(x):
    # tanh(x) = sign(x) * (1 - e) / (1 + e) with e = exp(-2|x|) <= 1: never overflows.
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def sign(x):
    return (tl.where(x > 0, 1, 0) - tl.where(x < 0, 1, 0)).to(x.dtype)   # sign(nan) is 0


@triton.jit
def maximum(x, y):
    return tl.where((x > y) | (x != x), x, y)   # a NaN on either side wins, as in torch


@triton.jit
def minimum(x, y):
    return tl.where((x < y) | (x != x), x, y)


@triton.jit
def xlogy(x, y):
    r = tl.where(x == 0, 0.0, x * tl.log(y))
    return tl.where(y != y, y, r)                # xlogy(0, nan) is nan


@triton.jit
def pow(x, y):  # noqa: A001 - the op's name
    if x.dtype.is_floating():
        # |x| ** y through exp2/log2, then the sign for negative x and integral y.
        r = tl.exp2(y * tl.log2(tl.abs(x)))
        y_integral = tl.floor(y) == y
        y_odd = y_integral & (tl.floor(y * 0.5) * 2.0 != y)
        r = tl.where(x < 0, tl.where(y_integral, tl.where(y_odd, -r, r), float("nan")), r)
        return tl.where((y == 0) | (x == 1), 1.0, r)   # 0 ** 0 == 1 ** nan == 1
    else:
        # Exponentiation by squaring, one bit of the exponent per step. A negative
        # exponent gives 1 / x**|y| truncated toward zero, as in PyTorch: 0, except for
        # x == 1 (1) and x == -1 (+1 or -1 by the parity of y).
        result = x * 0 + 1
        base = x
        e = y
        if x.dtype.is_int_signed():
            e = tl.where(y < 0, 0, y)
        for _ in range(x.dtype.primitive_bitwidth):
            result = tl.where((e & 1) != 0, result * base, result)
            base = base * base
            e = e >> 1
        if x.dtype.is_int_signed():
            inverse = tl.where(x == 1, 1, tl.where(x == -1, tl.where((y & 1) != 0, -1, 1), 0))
            result = tl.where(y < 0, inverse.to(result.dtype), result)
        return result
