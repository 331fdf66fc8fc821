"""Scalar math the pointwise expressions call that `triton.language` does not have in a
form that runs both compiled and in the interpreter (libdevice does not run in the
interpreter), or whose edge cases must match PyTorch (NaN propagation, 0 ** 0).

Each is a `@triton.jit` function of already-converted values (the pointwise template
converts inputs to the compute dtype before the expression runs).
"""
import triton
import triton.language as tl

from tensorplay import _cuda_state


@triton.jit
def multiply(a, b):
    """tl.reduce's combine function for a product."""
    return a * b


# The interpreter's float32 -> bfloat16 cast truncates the mantissa, where a GPU (and
# PyTorch) rounds to nearest even; `convert` rounds explicitly there.
INTERPRETED = tl.constexpr(_cuda_state.is_interpreted())


@triton.jit
def round_to_bfloat16(x):
    """float32 x rounded to nearest even bfloat16 by integer arithmetic (PyTorch's
    round_to_nearest_even): add half an ulp of bf16, plus one if the kept part is odd,
    then drop the low 16 bits. NaN stays a quiet NaN."""
    bits = x.to(tl.uint32, bitcast=True)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    rounded = tl.where(x != x, bits | 0x400000, rounded)
    return (rounded >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)


@triton.jit
def convert(x, dtype: tl.constexpr):
    """x as `dtype`. A bfloat16 on either side converts through float32: that is how
    PyTorch converts (float64 -> float -> bfloat16), and the only bf16 conversion the
    interpreter gets right (rounding explicitly, see INTERPRETED)."""
    if x.dtype == tl.bfloat16 or dtype == tl.bfloat16:
        x = x.to(tl.float32)
    if INTERPRETED and dtype == tl.bfloat16:
        y = round_to_bfloat16(x)
    else:
        y = x.to(dtype)
    return y


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


# ---- the OPS table of triton_kernels/pointwise_expressions.py --------------------------
@triton.jit
def floor(x):
    if x.dtype.is_floating():
        return tl.floor(x)
    else:
        return x          # integers are whole already


@triton.jit
def ceil(x):
    if x.dtype.is_floating():
        return tl.ceil(x)
    else:
        return x


@triton.jit
def trunc(x):
    if x.dtype.is_floating():
        return tl.where(x < 0, tl.ceil(x), tl.floor(x))
    else:
        return x


@triton.jit
def round_half_even(x):
    if x.dtype.is_floating():
        r = tl.floor(x + 0.5)
        tie = (r - x) == 0.5
        odd = (r - 2.0 * tl.floor(r * 0.5)) != 0
        return tl.where(tie & odd, r - 1.0, r)
    else:
        return x


@triton.jit
def expm1(x):
    # Kahan: (u - 1) * x / log(u) with u = exp(x) cancels the rounding error of u.
    u = tl.exp(x)
    r = (u - 1.0) * x / tl.log(u)
    r = tl.where(u == 1.0, x, r)
    r = tl.where(u - 1.0 == -1.0, -1.0, r)
    return tl.where(u == float("inf"), u, r)


@triton.jit
def log1p(x):
    # Kahan: log(u) * x / (u - 1) with u = 1 + x.
    u = 1.0 + x
    r = tl.log(u) * x / (u - 1.0)
    r = tl.where(u == 1.0, x, r)
    return tl.where(u == float("inf"), u, r)


@triton.jit
def sinh(x):
    # Near 0: from expm1 (no cancellation). Elsewhere h - 1/(4h) with h = exp(|x|) / 2,
    # computed as exp(|x| - ln 2) so that it overflows only where sinh does.
    small = (expm1(x) - expm1(-x)) * 0.5
    h = tl.exp(tl.abs(x) - 0.6931471805599453)
    big = h - 0.25 / h
    return tl.where(tl.abs(x) < 1.0, small, tl.where(x < 0, -big, big))


@triton.jit
def cosh(x):
    h = tl.exp(tl.abs(x) - 0.6931471805599453)    # exp(|x|) / 2
    return h + 0.25 / h


@triton.jit
def logit(x, eps):
    p = minimum(maximum(x, eps), 1.0 - eps)
    return tl.log(p / (1.0 - p))


@triton.jit
def atan(x):
    # Cephes atanf: reduce |x| to [0, tan(pi/8)], then a degree-9 odd polynomial.
    a = tl.abs(x)
    big = a > 2.414213562373095
    mid = (a > 0.4142135623730950) & (~big)
    y0 = tl.where(big, 1.5707963267948966, tl.where(mid, 0.7853981633974483, 0.0))
    t = tl.where(big, -1.0 / a, tl.where(mid, (a - 1.0) / (a + 1.0), a))
    z = t * t
    p = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z
         - 3.33329491539e-1) * z * t + t
    r = y0 + p
    return tl.where(x < 0, -r, r)


@triton.jit
def atan2(y, x):
    r = atan(y / x)
    pi = 3.141592653589793
    r = tl.where(x < 0, tl.where(y < 0, r - pi, r + pi), r)
    r = tl.where(x == 0, tl.where(y > 0, pi / 2, tl.where(y < 0, -pi / 2, 0.0)), r)
    # atan2(+-0, x<0) is +-pi: y == 0 takes the sign of y
    zero_y = (y == 0) & (x < 0)
    return tl.where(zero_y, tl.where(1.0 / y < 0, -pi, pi), r)


@triton.jit
def asin(x):
    return atan2(x, tl.sqrt((1.0 - x) * (1.0 + x)))


@triton.jit
def acos(x):
    return atan2(tl.sqrt((1.0 - x) * (1.0 + x)), x)


@triton.jit
def erfc(x):
    # 1 - erf(x) loses every digit for large x: use exp(-x^2) times a Chebyshev fit
    # (Numerical Recipes' erfcc, relative error < 1.2e-7) where erf(x) is near 1.
    z = tl.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    tail = t * tl.exp(poly)
    r = tl.where(x >= 0, tail, 2.0 - tail)
    return tl.where(tl.abs(x) < 0.5, 1.0 - tl.erf(x), r)


@triton.jit
def hypot(x, y):
    # max * sqrt(1 + (min/max)^2): the squares never overflow.
    a = tl.abs(x)
    b = tl.abs(y)
    hi = tl.maximum(a, b)
    lo = tl.minimum(a, b)
    q = lo / tl.where(hi == 0, 1.0, hi)
    r = hi * tl.sqrt(1.0 + q * q)
    r = tl.where((a == float("inf")) | (b == float("inf")), float("inf"), r)
    return tl.where((x != x) | (y != y), tl.where(r == float("inf"), r, float("nan")), r)


@triton.jit
def remainder(x, y):
    # Python's %: the sign of the divisor. `%` on a Triton tensor is C's fmod.
    r = x % y
    return tl.where((r != 0) & ((r < 0) != (y < 0)), r + y, r)


@triton.jit
def floor_divide(x, y):
    if x.dtype.is_floating():
        # NumPy's divmod: exact where floor(x / y) would round (1.0 // 0.1 is 9.0).
        mod = x % y
        div = (x - mod) / y
        div = tl.where((mod != 0) & ((y < 0) != (mod < 0)), div - 1.0, div)
        q = tl.floor(div)
        q = tl.where(div - q > 0.5, q + 1.0, q)
        return tl.where(y == 0, x / y, q)
    else:
        q = x // y      # C division: toward zero
        return q - ((x % y != 0) & ((x < 0) != (y < 0))).to(q.dtype)


@triton.jit
def trunc_divide(x, y):
    if x.dtype.is_floating():
        return trunc(x / y)
    else:
        return x // y


@triton.jit
def isinf(x):
    return tl.abs(x) == float("inf")


@triton.jit
def isfinite(x):
    return (x == x) & (tl.abs(x) != float("inf"))


@triton.jit
def softplus(x):
    # max(x, 0) + log1p(exp(-|x|)): exp of a non-positive number never overflows.
    return tl.maximum(x, 0.0) + log1p(tl.exp(-tl.abs(x)))


@triton.jit
def stable_sigmoid(x):
    e = tl.exp(-tl.abs(x))
    return tl.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


@triton.jit
def lerp(x, y, w):
    # PyTorch's form: exact at both ends (w = 0 gives x, w = 1 gives y).
    return tl.where(tl.abs(w) < 0.5, x + w * (y - x), y - (y - x) * (1.0 - w))


# ---- inverse hyperbolics, copysign, nextafter, gcd/lcm, bit shifts -------------------
@triton.jit
def asinh(x):
    # sign(x) * log1p(|x| + x^2 / (1 + sqrt(1 + x^2))): log1p keeps small |x| accurate;
    # past 2^28, x^2 would overflow float32 and asinh is log(2|x|) to the last bit.
    a = tl.abs(x)
    r = log1p(a + a * a / (1.0 + tl.sqrt(1.0 + a * a)))
    r = tl.where(a > 268435456.0, tl.log(a) + 0.6931471805599453, r)
    return tl.where(x < 0, -r, r)


@triton.jit
def acosh(x):
    # log1p(t + sqrt(2t + t^2)) with t = x - 1: exact near 1; log(2x) where x^2 overflows.
    t = x - 1.0
    r = log1p(t + tl.sqrt(2.0 * t + t * t))
    return tl.where(x > 268435456.0, tl.log(x) + 0.6931471805599453, r)


@triton.jit
def atanh(x):
    # 0.5 * log1p(2x / (1 - x)): +-inf at +-1, nan beyond.
    return 0.5 * log1p(2.0 * x / (1.0 - x))


@triton.jit
def copysign(x, y):
    # The sign bit of y (so -0.0 and -nan count), on the magnitude of x.
    negative = signbit(y)
    return tl.where(negative, -tl.abs(x), tl.abs(x))


@triton.jit
def signbit(x):
    if x.dtype.is_floating():
        if x.dtype == tl.float64:
            r = x.to(tl.int64, bitcast=True) < 0
        else:
            r = x.to(tl.float32).to(tl.int32, bitcast=True) < 0
    else:
        r = x < 0
    return r


@triton.jit
def nextafter(x, y, FLOAT: tl.constexpr, INT: tl.constexpr):
    """The next value of the dtype FLOAT (whose bits are the integer dtype INT) after x
    towards y. x and y arrive widened (a half type in float32) but hold FLOAT values, so
    converting back is exact; the step is one unit of FLOAT's last place: the bits of a
    float, read as a signed integer, grow with the magnitude, whatever the sign."""
    if FLOAT == tl.bfloat16:
        # A bfloat16 is the high half of a float32: its bits without a conversion (the
        # interpreter's bfloat16 conversions are not exact for subnormals).
        bits = (x.to(tl.float32).to(tl.int32, bitcast=True) >> 16).to(INT)
    else:
        bits = x.to(FLOAT).to(INT, bitcast=True)
    away_from_zero = (y > x) == (x > 0)
    step = tl.where(away_from_zero, bits + 1, bits - 1)
    smallest = tl.where(y > 0, 1, -(1 << (INT.primitive_bitwidth - 1)) + 1).to(INT)
    step = tl.where(x == 0, smallest, step)
    if FLOAT == tl.bfloat16:
        r = (step.to(tl.int32) << 16).to(tl.float32, bitcast=True).to(x.dtype)
    else:
        r = step.to(FLOAT, bitcast=True).to(x.dtype)
    r = tl.where(x == y, y, r)
    return tl.where((x != x) | (y != y), x + y, r)


@triton.jit
def gcd(x, y):
    """Euclid on |x| and |y|, a fixed number of rounds (no per-element loop in a block):
    93 cover the worst case of 64-bit integers, two consecutive Fibonacci numbers."""
    a = tl.abs(x)
    b = tl.abs(y)
    for _ in range(93):
        more = b != 0
        r = a % tl.where(more, b, 1)
        a = tl.where(more, b, a)
        b = tl.where(more, r, 0)
    return a


@triton.jit
def lcm(x, y):
    g = gcd(x, y)
    return tl.where(g == 0, 0, tl.abs(x // tl.where(g == 0, 1, g) * y))


@triton.jit
def left_shift(x, y):
    # A count below 0 or of the width or more shifts everything out (PyTorch's rule).
    inside = (y >= 0) & (y < x.dtype.primitive_bitwidth)
    return tl.where(inside, x << tl.where(inside, y, 0).to(x.dtype), 0)


@triton.jit
def right_shift(x, y):
    # Arithmetic for signed dtypes: past the value bits only the sign is left.
    if x.dtype.is_int_signed():
        width = x.dtype.primitive_bitwidth - 1
        inside = (y >= 0) & (y < width)
        r = tl.where(inside, x >> tl.where(inside, y, 0).to(x.dtype), x >> width)
    else:
        inside = (y >= 0) & (y < x.dtype.primitive_bitwidth)
        r = tl.where(inside, x >> tl.where(inside, y, 0).to(x.dtype), 0)
    return r


@triton.jit
def tan_half_turn(u):
    # tan(pi * (u - 0.5)) for u in [0, 1): the Cauchy quantile function.
    t = 3.141592653589793 * (u - 0.5)
    return tl.sin(t) / tl.cos(t)


# ---- complex numbers: functions of the parts (re, im), giving the parts of the result -----
# Triton has no complex type; the complex forms of the pointwise template
# (pointwise_expressions.COMPLEX_EXPRESSIONS) call these on the parts. Infinities, NaNs and
# signed zeros come out as C99's Annex G (and PyTorch) has them.
@triton.jit
def _signed_zero(like):
    """0 with the sign of `like`."""
    return tl.where(signbit(like), -0.0, 0.0)


@triton.jit
def complex_arg(re, im):
    """atan2(im, re) to the precision of the dtype: atan2's polynomial (float32 accurate)
    refined by one Newton step, t + sin(angle - t) / cos(angle - t) with both read off
    the rotation of (re, im) by -t. An infinite part decides the direction alone (it is
    read from parts of size 1 and 0), and on the real axis the signs of the zeros decide
    between 0 and pi, as atan2's."""
    inf = float("inf")
    re_inf = tl.abs(re) == inf
    im_inf = tl.abs(im) == inf
    big = re_inf | im_inf
    unit = tl.where(signbit(re), -1.0, 1.0)
    x = tl.where(big, tl.where(re_inf, unit, _signed_zero(re)), re)
    unit = tl.where(signbit(im), -1.0, 1.0)
    y = tl.where(big, tl.where(im_inf, unit, _signed_zero(im)), im)
    t = atan2(y, x)
    c = tl.cos(t)
    s = tl.sin(t)
    along = x * c + y * s           # |z| cos(angle - t), about |z|
    across = y * c - x * s          # |z| sin(angle - t), about 0
    ok = (along > 0) & (along < inf)
    t = t + tl.where(ok, across / tl.where(ok, along, 1.0), 0.0)
    pi = tl.zeros_like(t) + 3.141592653589793
    axis = tl.where(signbit(x), pi, 0.0)
    t = tl.where(y == 0, tl.where(signbit(y), -axis, axis), t)
    return tl.where((re != re) | (im != im), float("nan"), t)


@triton.jit
def complex_div(ar, ai, br, bi):
    """(ar + i ai) / (br + i bi) by Smith's method: divide through by the larger part of
    the divisor, so that |b|^2 is never formed (it would overflow or underflow)."""
    wide = tl.abs(br) >= tl.abs(bi)
    r = tl.where(wide, bi / br, br / bi)                # the ratio of the parts, <= 1
    d = tl.where(wide, br + bi * r, br * r + bi)
    re = tl.where(wide, ar + ai * r, ar * r + ai) / d
    im = tl.where(wide, ai - ar * r, ai * r - ar) / d
    return re, im


@triton.jit
def complex_exp(re, im):
    """e^re (cos im + i sin im). A real argument (im == 0) keeps its 0 (exp(inf) is inf,
    not inf * 0 = nan), and e^-inf = 0 whatever the direction (cos(inf) is nan)."""
    e = tl.exp(re)
    vanishes = (re == -float("inf")) & (~(tl.abs(im) < float("inf")))   # im inf or nan
    real = tl.where(vanishes, 0.0, e * tl.cos(im))
    imag = tl.where(im == 0, im, tl.where(vanishes, _signed_zero(im), e * tl.sin(im)))
    return real, imag


@triton.jit
def complex_log(re, im):
    """log|z| + i arg z (the principal branch: the angle in (-pi, pi])."""
    return tl.log(hypot(re, im)), complex_arg(re, im)


@triton.jit
def complex_sqrt(re, im):
    """The principal square root: t = sqrt((|z| + |re|) / 2) is the larger part of the
    result, the other is im / 2t (so that nothing cancels); for re < 0 the parts swap,
    the imaginary one taking im's sign. An infinite im gives inf + i im whatever re."""
    t = tl.sqrt((hypot(re, im) + tl.abs(re)) * 0.5)
    half = tl.where(t == 0, 0.0, 0.5 / tl.where(t == 0, 1.0, t))
    other = im * half
    real = tl.where(re >= 0, t, tl.abs(other))
    imag = tl.where(re >= 0, other, copysign(t, im))
    imag = tl.where(t == 0, im, imag)
    im_inf = tl.abs(im) == float("inf")
    return tl.where(im_inf, float("inf"), real), tl.where(im_inf, im, imag)


@triton.jit
def complex_sin(re, im):
    """sin(a + bi) = sin a cosh b + i cos a sinh b; a zero part stays (sin(0 + inf i) is
    0 + inf i, not 0 * inf = nan)."""
    return tl.where(re == 0, re, tl.sin(re) * cosh(im)), \
        tl.where(im == 0, im, tl.cos(re) * sinh(im))


@triton.jit
def complex_cos(re, im):
    """cos(a + bi) = cos a cosh b - i sin a sinh b; a zero part makes the imaginary part a
    zero of the sign -sign(a) sign(b)."""
    zero = tl.where(signbit(re) ^ signbit(im), 0.0, -0.0)
    return tl.cos(re) * cosh(im), \
        tl.where((re == 0) | (im == 0), zero, -(tl.sin(re) * sinh(im)))


@triton.jit
def complex_tanh(re, im):
    """tanh(a + bi) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b). Past |a| = 20 the real
    part is +-1 to double precision, where sinh and cosh would overflow to inf / inf
    (for a finite b: b = inf is nan there, unless a is infinite too, which gives
    +-1 + 0i). A zero part stays."""
    inf = float("inf")
    d = cosh(2.0 * re) + tl.cos(2.0 * im)
    re_inf = tl.abs(re) == inf
    im_finite = tl.abs(im) < inf
    far = (tl.abs(re) > 20.0) & (im_finite | re_inf)
    real = tl.where(far, tl.where(re < 0, -1.0, 1.0), sinh(2.0 * re) / d)
    imag = tl.where(re_inf & (~im_finite), _signed_zero(im), tl.sin(2.0 * im) / d)
    return tl.where(re == 0, re, real), tl.where(im == 0, im, imag)


@triton.jit
def complex_sigmoid(re, im):
    """1 / (1 + e^-z)."""
    er, ei = complex_exp(-re, -im)
    return complex_div(tl.zeros_like(re) + 1.0, tl.zeros_like(re), 1.0 + er, ei)
