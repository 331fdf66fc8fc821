"""Scalar math of the special-function kernels (family `special`): log-gamma, digamma,
erfinv, the modified Bessel functions I0 and I1 (plain and scaled by exp(-|x|)), erfcx,
the normal quantile ndtri and log_ndtr. The pointwise template (triton_kernels/_template.py)
calls them as `_special_math.lgamma(x)` and so on, from the expressions of
triton_kernels/special.py.

Each is a `@triton.jit` function of a value already converted to the compute dtype
(float32 or float64; the half types compute in float32), and evaluates the same
approximations in either: in float64 to about 1e-13 relative (absolute near the zeros
of lgamma and digamma), in float32 to its last digit or two (tests/triton_backend/
test_special.py holds them to PyTorch's values):

    lgamma    Cephes' lgam: a rational fit on [2, 3) reached by Gamma's recurrence,
              Stirling's series from 13 on, the reflection formula below 0
    digamma   PyTorch's calc_digamma: recurrence up to 10, then the asymptotic series
    erfinv    PyTorch's rational first guess, then two Newton steps
    ndtri     Acklam's rational fits (1e-9), then one Halley step
    i0, i1, erfcx (and i0e, i1e, log_ndtr from them): Chebyshev series

The Chebyshev series at the end of this file were computed for TensorPlay (Cephes has
its own, of thirty terms each): f sampled at 64 Chebyshev points with mpmath (40
digits), transformed to Chebyshev coefficients, and cut where the terms fall below
1e-18 of the first. Clenshaw's recurrence (the `b0, b1 = 2 y b0 - b1 + c` lines) sums
them stably, where a power series of the same degree would cancel.

No data-dependent loop: a recurrence that Cephes runs "while x < 10" runs here a fixed
number of masked steps (`tl.where`), so every element of a block takes the same path.
"""
import triton
import triton.language as tl

# The constants are written out where they are used (a @triton.jit function may read only
# constexpr globals, and the interpreter cannot multiply a constexpr by a tensor):
#   3.141592653589793 pi, 1.1447298858494002 log(pi), 0.9189385332046728 log(sqrt(2 pi)),
#   2.5066282746310002 sqrt(2 pi), 0.7071067811865476 1/sqrt(2), 0.5641895835477563 1/sqrt(pi)


# ---- log-gamma ----------------------------------------------------------------------
@triton.jit
def _lgamma_positive(z):
    """log Gamma(z) for z > 0 (Cephes' lgam): below 13, the recurrence
    Gamma(z + 1) = z Gamma(z) moves z into [2, 3), where a rational fit holds; from 13 on,
    Stirling's series."""
    # Down into [2, 3): Gamma(u) = (u - 1) Gamma(u - 1), each factor kept in `f`
    # (at most 3 * 4 * ... * 12, no overflow).
    u = tl.where(z < 13.0, z, 2.5)
    f = u * 0.0 + 1.0
    for _ in tl.static_range(10):
        down = u >= 3.0
        u = tl.where(down, u - 1.0, u)
        f = tl.where(down, f * u, f)
    # Up into [2, 3) for z < 2: Gamma(u) = Gamma(u + 1) / u, the logs of the divisors
    # subtracted one by one (their product underflows for tiny z).
    log_f = tl.log(f)
    for _ in tl.static_range(2):
        up = u < 2.0
        log_f = tl.where(up, log_f - tl.log(tl.where(up, u, 1.0)), log_f)
        u = tl.where(up, u + 1.0, u)
    t = u - 2.0
    b = (((((-1.37825152569120859100e3 * t - 3.88016315134637840924e4) * t
            - 3.31612992738871184744e5) * t - 1.16237097492762307383e6) * t
          - 1.72173700820839662146e6) * t - 8.53555664245765465627e5)
    c = ((((((t - 3.51815701436523470549e2) * t - 1.70642106651881159223e4) * t
            - 2.20528590553854454839e5) * t - 1.13933444367982507207e6) * t
          - 2.53252307177582951285e6) * t - 2.01889141433532773231e6)
    small = log_f + t * b / c
    # Stirling: (z - 1/2) log z - z + log sqrt(2 pi) + 1/(12 z) - 1/(360 z^3) + ...
    w = tl.where(z < 13.0, 13.0, z)
    p = 1.0 / (w * w)
    series = ((((8.11614167470508450300e-4 * p - 5.95061904284301438324e-4) * p
                + 7.93650340457716943945e-4) * p - 2.77777777730099687205e-3) * p
              + 8.33333333333331927722e-2) / w
    large = ((w - 0.5) * tl.log(w) - w + 0.9189385332046728      # + log(sqrt(2 pi))
             + tl.where(w < 1.0e8, series, 0.0))
    return tl.where(z < 13.0, small, large)


@triton.jit
def lgamma(x):
    """log|Gamma(x)|. For x < 0 the reflection Gamma(x) Gamma(1 - x) = pi / sin(pi x):
    log|Gamma(x)| = log(pi) - log|sin(pi x)| - log Gamma(1 - x), with sin taken of the
    distance to the nearest integer (exact), +inf at the poles 0, -1, -2, ..."""
    negative = x < 0.0
    z = tl.where(negative, 1.0 - x, x)
    z = tl.where(z == float("inf"), 2.5, z)         # inf below: keep the fit finite
    r = _lgamma_positive(tl.where(z == 0.0, 1.0, z))
    frac = x - tl.floor(x)
    s = tl.sin(3.141592653589793 * tl.minimum(frac, 1.0 - frac))   # |sin(pi x)|
    reflected = 1.1447298858494002 - tl.log(s) - r
    r = tl.where(negative, reflected, r)
    r = tl.where((x == 0.0) | (tl.abs(x) == float("inf")), float("inf"), r)
    return tl.where(x != x, x, r)


# ---- digamma --------------------------------------------------------------------------
@triton.jit
def _digamma_positive(x):
    """psi(x) for x > 0 (PyTorch's calc_digamma): psi(x) = psi(x + 1) - 1/x moves x to
    10 or above, then the asymptotic series log x - 1/(2x) - sum B_2k / (2k x^2k)."""
    result = x * 0.0
    for _ in tl.static_range(10):
        up = x < 10.0
        result = tl.where(up, result - 1.0 / tl.where(up, x, 1.0), result)
        x = tl.where(up, x + 1.0, x)
    z = 1.0 / (x * x)
    # B_2k / (2k): 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760, 1/12
    y = z * ((((((8.33333333333333333333e-2 * z - 2.10927960927960927961e-2) * z
                 + 7.57575757575757575758e-3) * z - 4.16666666666666666667e-3) * z
               + 3.96825396825396825397e-3) * z - 8.33333333333333333333e-3) * z
             + 8.33333333333333333333e-2)
    y = tl.where(x < 1.0e17, y, 0.0)
    return result + tl.log(x) - 0.5 / x - y


@triton.jit
def digamma(x):
    """psi(x) = d/dx log Gamma(x). For x < 0 the reflection psi(1 - x) - pi / tan(pi x);
    nan at the negative integers, -inf at +0 and +inf at -0 (C's and SciPy's convention,
    PyTorch's too)."""
    negative = x < 0.0
    z = tl.where(negative, 1.0 - x, x)
    z = tl.where((z == 0.0) | (z != z), 1.0, z)
    r = _digamma_positive(z)
    # tan has period pi: take x's distance to the nearest integer, in [-1/2, 1/2] (exact),
    # so that pi * frac stays accurate near the poles
    frac = x - tl.floor(x + 0.5)
    angle = 3.141592653589793 * frac
    reflected = r - 3.141592653589793 * tl.cos(angle) / tl.sin(angle)
    r = tl.where(negative, tl.where(frac == 0.0, float("nan"), reflected), r)
    r = tl.where(x == 0.0, tl.where(1.0 / x < 0.0, float("inf"), -float("inf")), r)
    r = tl.where(x == float("inf"), x, r)
    return tl.where(x != x, x, r)


# ---- erfinv ---------------------------------------------------------------------------
@triton.jit
def erfinv(y):
    """The inverse of erf: PyTorch's rational first guess (calc_erfinv), central
    (|y| <= 0.7) or in the tail, then two Newton steps. In the tail the steps solve
    erfc(x) = 1 - |y| instead of erf(x) = y: 1 - |y| is exact there, where erf(x) - y
    would keep no digit of x's correction as |y| nears 1."""
    a = tl.abs(y)
    z = y * y
    num = ((-0.140543331 * z + 0.914624893) * z - 1.645349621) * z + 0.886226899
    dem = (((0.012229801 * z - 0.329097515) * z + 1.442710462) * z - 2.118377725) * z + 1.0
    central = y * num / dem
    w = tl.sqrt(-tl.log((1.0 - tl.where(a < 1.0, a, 0.5)) / 2.0))   # (|y| >= 1: below)
    num = ((1.641345311 * w + 3.429567803) * w - 1.624906493) * w - 1.970840454
    dem = (1.637067800 * w + 3.543889200) * w + 1.0
    tail = tl.where(y < 0.0, -num, num) / dem
    c = 1.0 - a
    for _ in tl.static_range(2):
        # erf(x) - y over erf's derivative 2/sqrt(pi) exp(-x^2)
        central = central - (tl.erf(central) - y) / (1.1283791670955126 * tl.exp(
            -central * central))
        # for |x|: (erfc(x) - c) / erfc's derivative, erfc(x) = erfcx(x) exp(-x^2)
        w = tl.abs(tail)
        w = w + (_erfcx_nonnegative(w) - c * tl.exp(w * w)) * 0.886226925452758
        tail = tl.where(y < 0.0, -w, w)
    x = tl.where(a <= 0.7, central, tail)
    x = tl.where(a == 1.0, tl.where(y < 0.0, -float("inf"), float("inf")), x)
    return tl.where(a > 1.0, float("nan"), x)


# ---- modified Bessel functions of the first kind, orders 0 and 1 ---------------------
@triton.jit
def i0e(x):
    """exp(-|x|) I0(x): even in x; two Chebyshev series, split at |x| = 8."""
    a = tl.abs(x)
    small = _i0e_small(tl.minimum(a, 8.0) * 0.25 - 1.0)
    big = tl.maximum(a, 8.0)
    large = _i0e_large(16.0 / big - 1.0) / tl.sqrt(big)
    return tl.where(a <= 8.0, small, tl.where(a > 8.0, large, x))    # nan stays nan


@triton.jit
def i0(x):
    return tl.exp(tl.abs(x)) * i0e(x)


@triton.jit
def i1e(x):
    """exp(-|x|) I1(x): odd in x; the series of I1e(x) / x below 8, of I1e(x) sqrt(x) above."""
    a = tl.abs(x)
    small = _i1e_small(tl.minimum(a, 8.0) * 0.25 - 1.0) * a
    big = tl.maximum(a, 8.0)
    large = _i1e_large(16.0 / big - 1.0) / tl.sqrt(big)
    r = tl.where(a <= 8.0, small, tl.where(a > 8.0, large, x))     # nan stays nan
    return tl.where(x < 0.0, -r, r)


@triton.jit
def i1(x):
    return tl.exp(tl.abs(x)) * i1e(x)


# ---- erfcx and the normal distribution --------------------------------------------------
@triton.jit
def _erfcx_nonnegative(x):
    """exp(x^2) erfc(x) for x >= 0: (1 + x) erfcx(x) is smooth in t = (x - 4) / (x + 4),
    which maps [0, inf) onto [-1, 1) (Schonfelder's substitution)."""
    big = x > 1.0e15                     # t rounds to 1 there: erfcx(x) = 1 / (x sqrt(pi))
    w = tl.where(big, 1.0, x)
    r = _erfcx_positive((w - 4.0) / (w + 4.0)) / (1.0 + w)
    return tl.where(big, 0.5641895835477563 / x, r)


@triton.jit
def erfcx(x):
    """exp(x^2) erfc(x); for x < 0, erfcx(x) = 2 exp(x^2) - erfcx(-x) (overflows to inf
    where exp(x^2) does)."""
    r = _erfcx_nonnegative(tl.abs(x))
    r = tl.where(x < 0.0, 2.0 * tl.exp(x * x) - r, r)
    return tl.where(x != x, x, r)


@triton.jit
def _half_erfc(x):
    """erfc(x) / 2 for x >= -1/sqrt(2), accurate in the far tail (erfcx(x) exp(-x^2))."""
    return tl.where(x < 0.0, 0.5 * (1.0 + tl.erf(-x)),
                    0.5 * _erfcx_nonnegative(tl.maximum(x, 0.0)) * tl.exp(-x * x))


@triton.jit
def log_ndtr(x):
    """log Phi(x), Phi the standard normal CDF (PyTorch's calc_log_ndtr): with
    t = x / sqrt(2), log(erfcx(-t) / 2) - t^2 in the lower tail (x < -1), where Phi(x)
    underflows long before its log does; log1p(-erfc(t) / 2) elsewhere."""
    t = x * 0.7071067811865476
    lower = tl.log(0.5 * _erfcx_nonnegative(tl.maximum(-t, 0.0))) - t * t
    q = _half_erfc(tl.maximum(t, -0.7071067811865476))
    u = 1.0 - q                          # log1p(-q), Kahan's form
    upper = tl.where(u == 1.0, -q, tl.log(u) * -q / (u - 1.0))
    r = tl.where(x < -1.0, lower, upper)
    return tl.where(x != x, x, r)


@triton.jit
def ndtri(p):
    """The standard normal quantile Phi^-1(p): Acklam's rational approximation (relative
    error 1.2e-9: a central fit and one for each tail), then one Halley step on
    Phi(x) - p, with Phi's tail through erfcx so that it keeps its digits for tiny p."""
    lower = p < 0.5
    pt = tl.where(lower, p, 1.0 - p)                  # the tail's probability, <= 1/2
    pc = tl.where(pt > 0.0, pt, 0.5)                  # (0, nan, p > 1: answered below)
    # the tail fit, in q = sqrt(-2 log pt)
    q = tl.sqrt(-2.0 * tl.log(pc))
    num = (((((-7.784894002430293e-03 * q - 3.223964580411365e-01) * q
              - 2.400758277161838e+00) * q - 2.549732539343734e+00) * q
            + 4.374664141464968e+00) * q + 2.938163982698783e+00)
    dem = (((7.784695709041462e-03 * q + 3.224671290700398e-01) * q
            + 2.445134137142996e+00) * q + 3.754408661907416e+00) * q + 1.0
    tail = num / dem                                  # negative: the lower tail's x
    # the central fit, in s = p - 1/2
    s = pc - 0.5
    r = s * s
    num = (((((-3.969683028665376e+01 * r + 2.209460984245205e+02) * r
              - 2.759285104469687e+02) * r + 1.383577518672690e+02) * r
            - 3.066479806614716e+01) * r + 2.506628277459239e+00) * s
    dem = ((((-5.447609879822406e+01 * r + 1.615858368580409e+02) * r
             - 1.556989798598866e+02) * r + 6.680131188771972e+01) * r
           - 1.328068155288572e+01) * r + 1.0
    central = num / dem
    x = tl.where(pc < 0.02425, tail, central)         # x <= 0: the quantile of pt
    # Halley: e = Phi(x) - pt, u = e / phi(x), x -= u / (1 + x u / 2). Near the centre
    # e = erf(x / sqrt 2) / 2 - s (both terms exact to their last digit); in the tail
    # through Phi(x) / phi(x) = erfcx(-x / sqrt 2) sqrt(pi / 2) (x <= 0: no underflow).
    u_centre = ((0.5 * tl.erf(x * 0.7071067811865476) - s) * 2.5066282746310002
                * tl.exp(0.5 * x * x))
    mills = _erfcx_nonnegative(-x * 0.7071067811865476) * 1.2533141373155003
    u_tail = mills - tl.exp(tl.log(pc) + 0.5 * x * x) * 2.5066282746310002
    u = tl.where(pc > 0.1, u_centre, u_tail)
    x = x - u / (1.0 + 0.5 * x * u)
    x = tl.where(lower, x, -x)
    x = tl.where(pt == 0.0, tl.where(lower, -float("inf"), float("inf")), x)
    x = tl.where(p == 0.5, 0.0, x)
    return tl.where((p < 0.0) | (p > 1.0) | (p != p), float("nan"), x)


# ---- the Chebyshev series (see the module's docstring) ---------------------------------
@triton.jit
def _i0e_small(y):
    """exp(-x) I0(x) on 0 <= x <= 8, in y = x / 4 - 1:
    31 Chebyshev terms (Clenshaw's recurrence)."""
    y2 = 2.0 * y
    b0 = y * 0.0 + 5.6691780069214962e-19
    b1 = y * 0.0
    b0, b1 = y2 * b0 - b1 - 4.4153416464793394e-18, b0
    b0, b1 = y2 * b0 - b1 + 3.3307945188222381e-17, b0
    b0, b1 = y2 * b0 - b1 - 2.4312798465479547e-16, b0
    b0, b1 = y2 * b0 - b1 + 1.715391285555133e-15, b0
    b0, b1 = y2 * b0 - b1 - 1.1685332877993452e-14, b0
    b0, b1 = y2 * b0 - b1 + 7.6761854986049356e-14, b0
    b0, b1 = y2 * b0 - b1 - 4.8564467831119295e-13, b0
    b0, b1 = y2 * b0 - b1 + 2.9550526631296398e-12, b0
    b0, b1 = y2 * b0 - b1 - 1.7268262914415557e-11, b0
    b0, b1 = y2 * b0 - b1 + 9.6758090353732369e-11, b0
    b0, b1 = y2 * b0 - b1 - 5.1897956016352629e-10, b0
    b0, b1 = y2 * b0 - b1 + 2.6598237246823867e-9, b0
    b0, b1 = y2 * b0 - b1 - 1.300025009986248e-8, b0
    b0, b1 = y2 * b0 - b1 + 6.0469950225419189e-8, b0
    b0, b1 = y2 * b0 - b1 - 2.6707938539406117e-7, b0
    b0, b1 = y2 * b0 - b1 + 1.1173875391201037e-6, b0
    b0, b1 = y2 * b0 - b1 - 4.4167383584587506e-6, b0
    b0, b1 = y2 * b0 - b1 + 1.6448448070728897e-5, b0
    b0, b1 = y2 * b0 - b1 - 5.7541950100821037e-5, b0
    b0, b1 = y2 * b0 - b1 + 1.8850288509584166e-4, b0
    b0, b1 = y2 * b0 - b1 - 5.7637557453858237e-4, b0
    b0, b1 = y2 * b0 - b1 + 1.6394756169413358e-3, b0
    b0, b1 = y2 * b0 - b1 - 4.3243099950505759e-3, b0
    b0, b1 = y2 * b0 - b1 + 1.0546460394594998e-2, b0
    b0, b1 = y2 * b0 - b1 - 2.3737414805899469e-2, b0
    b0, b1 = y2 * b0 - b1 + 4.9305284239670708e-2, b0
    b0, b1 = y2 * b0 - b1 - 9.4901097048047644e-2, b0
    b0, b1 = y2 * b0 - b1 + 1.7162090152220878e-1, b0
    b0, b1 = y2 * b0 - b1 - 3.046826723431984e-1, b0
    return y * b0 - b1 + 3.3839763720473804e-1


@triton.jit
def _i0e_large(y):
    """exp(-x) I0(x) sqrt(x) on x >= 8, in y = 16 / x - 1:
    27 Chebyshev terms (Clenshaw's recurrence)."""
    y2 = 2.0 * y
    b0 = y * 0.0 + 1.1936508908459821e-18
    b1 = y * 0.0
    b0, b1 = y2 * b0 - b1 + 9.9214754121736986e-19, b0
    b0, b1 = y2 * b0 - b1 - 7.233180487874754e-18, b0
    b0, b1 = y2 * b0 - b1 - 4.8305044859441821e-18, b0
    b0, b1 = y2 * b0 - b1 + 4.46562142029676e-17, b0
    b0, b1 = y2 * b0 - b1 + 3.4612228676974611e-17, b0
    b0, b1 = y2 * b0 - b1 - 2.8276239805165835e-16, b0
    b0, b1 = y2 * b0 - b1 - 3.4254856196772191e-16, b0
    b0, b1 = y2 * b0 - b1 + 1.7725601330565264e-15, b0
    b0, b1 = y2 * b0 - b1 + 3.8116806693526224e-15, b0
    b0, b1 = y2 * b0 - b1 - 9.5548466988283076e-15, b0
    b0, b1 = y2 * b0 - b1 - 4.1505693472872221e-14, b0
    b0, b1 = y2 * b0 - b1 + 1.5400862175214098e-14, b0
    b0, b1 = y2 * b0 - b1 + 3.8527783827421427e-13, b0
    b0, b1 = y2 * b0 - b1 + 7.1801244513836662e-13, b0
    b0, b1 = y2 * b0 - b1 - 1.7941785315068061e-12, b0
    b0, b1 = y2 * b0 - b1 - 1.3215811840447713e-11, b0
    b0, b1 = y2 * b0 - b1 - 3.1499165279632414e-11, b0
    b0, b1 = y2 * b0 - b1 + 1.1889147107846438e-11, b0
    b0, b1 = y2 * b0 - b1 + 4.9406023882249696e-10, b0
    b0, b1 = y2 * b0 - b1 + 3.3962320257083863e-9, b0
    b0, b1 = y2 * b0 - b1 + 2.2666689904981781e-8, b0
    b0, b1 = y2 * b0 - b1 + 2.0489185894690637e-7, b0
    b0, b1 = y2 * b0 - b1 + 2.8913705208347565e-6, b0
    b0, b1 = y2 * b0 - b1 + 6.889758346916824e-5, b0
    b0, b1 = y2 * b0 - b1 + 3.3691164782556941e-3, b0
    return y * b0 - b1 + 4.0224520550705442e-1


@triton.jit
def _i1e_small(y):
    """exp(-x) I1(x) / x on 0 <= x <= 8, in y = x / 4 - 1:
    30 Chebyshev terms (Clenshaw's recurrence)."""
    y2 = 2.0 * y
    b0 = y * 0.0 + -3.5415817725421362e-19
    b1 = y * 0.0
    b0, b1 = y2 * b0 - b1 + 2.7779141127610464e-18, b0
    b0, b1 = y2 * b0 - b1 - 2.1114212143581661e-17, b0
    b0, b1 = y2 * b0 - b1 + 1.5536319577362005e-16, b0
    b0, b1 = y2 * b0 - b1 - 1.1055969477353863e-15, b0
    b0, b1 = y2 * b0 - b1 + 7.6006842947354069e-15, b0
    b0, b1 = y2 * b0 - b1 - 5.0421855047279117e-14, b0
    b0, b1 = y2 * b0 - b1 + 3.2237933659455747e-13, b0
    b0, b1 = y2 * b0 - b1 - 1.9839743977649437e-12, b0
    b0, b1 = y2 * b0 - b1 + 1.1736186298890902e-11, b0
    b0, b1 = y2 * b0 - b1 - 6.6634897235020277e-11, b0
    b0, b1 = y2 * b0 - b1 + 3.625590281552117e-10, b0
    b0, b1 = y2 * b0 - b1 - 1.8872497517228293e-9, b0
    b0, b1 = y2 * b0 - b1 + 9.3815373864957718e-9, b0
    b0, b1 = y2 * b0 - b1 - 4.4450591287963281e-8, b0
    b0, b1 = y2 * b0 - b1 + 2.0032947535521353e-7, b0
    b0, b1 = y2 * b0 - b1 - 8.5687202646954547e-7, b0
    b0, b1 = y2 * b0 - b1 + 3.4702513081376785e-6, b0
    b0, b1 = y2 * b0 - b1 - 1.3273163656039436e-5, b0
    b0, b1 = y2 * b0 - b1 + 4.7815651075500542e-5, b0
    b0, b1 = y2 * b0 - b1 - 1.6176081582589675e-4, b0
    b0, b1 = y2 * b0 - b1 + 5.1228595616857577e-4, b0
    b0, b1 = y2 * b0 - b1 - 1.5135724506312531e-3, b0
    b0, b1 = y2 * b0 - b1 + 4.1564229443128882e-3, b0
    b0, b1 = y2 * b0 - b1 - 1.0564084894626198e-2, b0
    b0, b1 = y2 * b0 - b1 + 2.4726449030626517e-2, b0
    b0, b1 = y2 * b0 - b1 - 5.2945981208094991e-2, b0
    b0, b1 = y2 * b0 - b1 + 1.026436586898471e-1, b0
    b0, b1 = y2 * b0 - b1 - 1.7641651835783406e-1, b0
    return y * b0 - b1 + 1.2629359322181683e-1


@triton.jit
def _i1e_large(y):
    """exp(-x) I1(x) sqrt(x) on x >= 8, in y = 16 / x - 1:
    27 Chebyshev terms (Clenshaw's recurrence)."""
    y2 = 2.0 * y
    b0 = y * 0.0 + -1.242193275194891e-18
    b1 = y * 0.0
    b0, b1 = y2 * b0 - b1 - 9.3141788673268834e-19, b0
    b0, b1 = y2 * b0 - b1 + 7.5172963108421048e-18, b0
    b0, b1 = y2 * b0 - b1 + 4.4143483230717079e-18, b0
    b0, b1 = y2 * b0 - b1 - 4.6503053684893583e-17, b0
    b0, b1 = y2 * b0 - b1 - 3.209525921993424e-17, b0
    b0, b1 = y2 * b0 - b1 + 2.9626289976459501e-16, b0
    b0, b1 = y2 * b0 - b1 + 3.3082023109209283e-16, b0
    b0, b1 = y2 * b0 - b1 - 1.8803547755107824e-15, b0
    b0, b1 = y2 * b0 - b1 - 3.8144030724370078e-15, b0
    b0, b1 = y2 * b0 - b1 + 1.0420276984128803e-14, b0
    b0, b1 = y2 * b0 - b1 + 4.2724400167119514e-14, b0
    b0, b1 = y2 * b0 - b1 - 2.1015418427726643e-14, b0
    b0, b1 = y2 * b0 - b1 - 4.0835511110921973e-13, b0
    b0, b1 = y2 * b0 - b1 - 7.1985517762459085e-13, b0
    b0, b1 = y2 * b0 - b1 + 2.0356285441470895e-12, b0
    b0, b1 = y2 * b0 - b1 + 1.4125807436613781e-11, b0
    b0, b1 = y2 * b0 - b1 + 3.2526035830154882e-11, b0
    b0, b1 = y2 * b0 - b1 - 1.8974958123505412e-11, b0
    b0, b1 = y2 * b0 - b1 - 5.5897434621965838e-10, b0
    b0, b1 = y2 * b0 - b1 - 3.835380385964237e-9, b0
    b0, b1 = y2 * b0 - b1 - 2.6314688468895195e-8, b0
    b0, b1 = y2 * b0 - b1 - 2.5122362378702089e-7, b0
    b0, b1 = y2 * b0 - b1 - 3.8825648088776904e-6, b0
    b0, b1 = y2 * b0 - b1 - 1.1058893876262372e-4, b0
    b0, b1 = y2 * b0 - b1 - 9.7610974913614684e-3, b0
    return y * b0 - b1 + 3.8928811750914006e-1


@triton.jit
def _erfcx_positive(y):
    """exp(x^2) erfc(x) (1 + x) on x >= 0, in y = (x - 4) / (x + 4):
    26 Chebyshev terms (Clenshaw's recurrence)."""
    y2 = 2.0 * y
    b0 = y * 0.0 + -3.4123820180098737e-18
    b1 = y * 0.0
    b0, b1 = y2 * b0 - b1 - 1.6638724842986458e-17, b0
    b0, b1 = y2 * b0 - b1 + 9.2540274686679927e-17, b0
    b0, b1 = y2 * b0 - b1 + 4.038719989002884e-16, b0
    b0, b1 = y2 * b0 - b1 - 2.8218395496347422e-15, b0
    b0, b1 = y2 * b0 - b1 - 8.6598698306640837e-15, b0
    b0, b1 = y2 * b0 - b1 + 9.3156286681373689e-14, b0
    b0, b1 = y2 * b0 - b1 + 1.0859225472109777e-13, b0
    b0, b1 = y2 * b0 - b1 - 3.1070926383120078e-12, b0
    b0, b1 = y2 * b0 - b1 + 4.0996614541354335e-12, b0
    b0, b1 = y2 * b0 - b1 + 9.1584321275269392e-11, b0
    b0, b1 = y2 * b0 - b1 - 4.6292579264676442e-10, b0
    b0, b1 = y2 * b0 - b1 - 1.3958179331627473e-9, b0
    b0, b1 = y2 * b0 - b1 + 2.4441299316170359e-8, b0
    b0, b1 = y2 * b0 - b1 - 8.6667844618502914e-8, b0
    b0, b1 = y2 * b0 - b1 - 4.3106001359615523e-7, b0
    b0, b1 = y2 * b0 - b1 + 7.4330190501770419e-6, b0
    b0, b1 = y2 * b0 - b1 - 5.3142109585007946e-5, b0
    b0, b1 = y2 * b0 - b1 + 2.6047574753294396e-4, b0
    b0, b1 = y2 * b0 - b1 - 9.5453787864679435e-4, b0
    b0, b1 = y2 * b0 - b1 + 2.5732881485069262e-3, b0
    b0, b1 = y2 * b0 - b1 - 4.1933395017658978e-3, b0
    b0, b1 = y2 * b0 - b1 - 2.5726982280633707e-3, b0
    b0, b1 = y2 * b0 - b1 + 4.9503721225762783e-2, b0
    b0, b1 = y2 * b0 - b1 - 2.1817361893805363e-1, b0
    return y * b0 - b1 + 7.3779249711555315e-1
