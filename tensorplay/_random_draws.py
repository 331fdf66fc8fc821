"""How PyTorch's CPU kernels turn mt19937 words into samples, reproduced in NumPy.

Each function takes a tensorplay Generator (tensorplay/_random.py) and consumes exactly
the words PyTorch's kernel consumes, in the same order; the `fill_*` functions write the
samples into an array (any strides) in the order PyTorch's kernel visits its elements
(`iteration_axes`). Both the creation functions (tp.rand, tp.randn, ...) and the CPU
kernels (cpu_kernels/random.py) fill through them. Sources:
aten/src/ATen/core/{DistributionsHelper,TransformationHelper}.h and
aten/src/ATen/native/cpu/{DistributionTemplates.h,avx_mathfun.h}.

    uniform (float, half, bfloat16)  x = (random() & (2^24 - 1)) * 2^-24   in float
    uniform (double)                 x = (random64() & (2^53 - 1)) * 2^-53 in double
    scalar normal (any dtype)        Box-Muller on two double uniforms u1, u2:
                                     r = sqrt(-2 log1p(-u2)), theta = 2 pi u1,
                                     returns r cos(theta), keeps r sin(theta) in the
                                     generator for the next scalar draw
    normal fill (contiguous, n >= 16) all n uniforms first, then Box-Muller on blocks of
                                     16 (u1 = 1 - x[j], u2 = x[j + 8]); a ragged tail
                                     draws 16 fresh uniforms and redoes the last 16
    exponential                      -1/lambda * log1p(-u), u a double uniform

The libm functions must give libm's bits: `log` and `log1p` come from Python's `math`
(the C library's, as PyTorch calls it; NumPy's SIMD versions differ in the last bit
now and then; mapping them over the values is the one per-element step, in C); NumPy's
double `sin`/`cos` agree with libm. Where PyTorch's compiled code fuses a multiply and
an add (uniform_'s `x * (to - from) + from`, normal's `z * std + mean`, the Cephes
polynomials of avx_mathfun.h used by the float normal fill) we fuse too, with exact
float32 and float64 fma emulations (`_fma32`, `_fma64`).

Not reproduced, by design:
- PyTorch's float32 normal fill (randn/normal_ of 16 or more contiguous elements) is the
  AVX2 polynomial one on x86 CPUs with AVX2 or better, which is what we reproduce; on
  other CPUs PyTorch uses libm's logf/cosf/sinf and its numbers differ from ours in the
  last bits.
- randperm(n) for n >= 2^32 / 20 (PyTorch switches to another algorithm there); we keep
  the small-n algorithm, whose swaps run as a Python loop over a list.
- The Triton (`cuda`) backend keeps its own Philox stream (tensorplay/cuda.py); only
  the CPU numbers are PyTorch's.
"""
from __future__ import annotations

import functools
import math
import threading

import numpy as np

_F32, _F64 = np.float32, np.float64
_TWO_PI = 2.0 * math.pi

# One op's draw reads and advances the generator in several steps (a normal fill draws
# its uniforms, then maybe 16 more for a ragged tail, and uses the cached sine half of
# the last scalar draw). Ops on several threads must each take a whole segment of the
# stream, as PyTorch's per-generator mutex makes them: a seeded program that draws from
# 8 threads gets the serial numbers, in some order, never a mix. Reentrant, because the
# fills call the draws below them.
_generator_lock = threading.RLock()


def _holding_generator(draw):
    @functools.wraps(draw)
    def locked(gen, *args, **kwargs):
        with _generator_lock:
            return draw(gen, *args, **kwargs)
    return locked


def _map(fn, x):
    """libm's `fn` on every element of a float64 array (bit-exact with PyTorch's calls)."""
    return np.fromiter(map(fn, x.ravel().tolist()), _F64, x.size).reshape(x.shape)


# ---- iteration order -----------------------------------------------------------------
def iteration_axes(a, *others):
    """The axes order (slowest first) in which PyTorch's TensorIterator visits `a`, the
    output of a random op: dims sorted by stride, smallest stride fastest, ties broken by
    the inputs' strides, then by size (TensorIteratorBase::reorder_dimensions).
    `a.transpose(axes)` traversed in C order is the visiting order."""
    if a.ndim < 2 or a.flags.c_contiguous:
        return tuple(range(a.ndim))
    ops = [a.strides] + [o.strides for o in others]
    shape = a.shape

    def should_swap(d0, d1):
        for strides in ops:
            s0, s1 = strides[d0], strides[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                return -1
            if s0 > s1:
                return 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(a.ndim - 1, -1, -1))      # perm[0] is the fastest dim
    for i in range(1, a.ndim):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            c = should_swap(perm[dim0], perm[dim1])
            if c > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif c < 0:
                break
    return tuple(perm[::-1])


def _write(a, values, axes=None):
    """Store `values` (in visiting order) into `a`."""
    view = a.transpose(axes if axes is not None else iteration_axes(a))
    np.copyto(view, np.asarray(values).reshape(view.shape), casting="unsafe")
    return a


@_holding_generator
def fill_uniform(gen, a, from_, to):
    return _write(a, uniform(gen, a.size, from_, to, a.dtype))


@_holding_generator
def fill_normal(gen, a, mean, std):
    """normal_: the block fill for a contiguous array of 16 or more elements, else scalar
    draws in visiting order."""
    if a.size >= 16 and a.flags.c_contiguous:
        return _write(a, normal_fill(gen, a.size, mean, std, a.dtype))
    return _write(a, normal_scalar(gen, a.size, mean, std))


@_holding_generator
def fill_random_from_to(gen, a, low, high):
    wide = a.dtype in (np.int64, _F64, _F32) or a.dtype.name == "bfloat16"
    return _write(a, random_from_to(gen, a.size, low, high, wide))


@_holding_generator
def fill_bernoulli_scalar(gen, a, p):
    return _write(a, bernoulli_scalar(gen, a.size, p))


@_holding_generator
def fill_bernoulli_tensor(gen, a, probs):
    """bernoulli_(probs), `probs` broadcast to `a`'s shape (any strides)."""
    probs = np.broadcast_to(probs, a.shape)
    axes = iteration_axes(a, probs)
    return _write(a, bernoulli_tensor(gen, probs.transpose(axes)), axes)


@_holding_generator
def fill_exponential(gen, a, lambd):
    return _write(a, exponential(gen, a.size, lambd))


# ---- uniform ---------------------------------------------------------------------------
@_holding_generator
def uniform01_float(gen, n):
    """n float32 uniforms in [0, 1): 24 random bits of one word each."""
    return (gen.random(n) & np.uint64(0xFFFFFF)).astype(_F32) * _F32(2.0 ** -24)


@_holding_generator
def uniform01_double(gen, n):
    """n float64 uniforms in [0, 1): 53 random bits of one 64-bit draw each."""
    return (gen.random64(n) & np.uint64((1 << 53) - 1)).astype(_F64) * 2.0 ** -53


@_holding_generator
def uniform(gen, n, from_, to, np_dtype):
    """uniform_(from, to): fma(x, to - from, from) in the op's math type (float for
    float32/half/bfloat16, double for float64; the compiler fuses PyTorch's
    `x * (to - from) + from`), rounded to the dtype; a value rounded up to `to` becomes
    `from`."""
    x = uniform01_double(gen, n) if np_dtype == _F64 else uniform01_float(gen, n)
    if from_ == 0 and to == 1:          # x * 1 + 0: nothing to round
        vals = x
    elif np_dtype == _F64:
        vals = _fma64(x, _F64(to) - _F64(from_), _F64(from_))
    else:
        vals = _fma32(x, _F32(to) - _F32(from_), _F32(from_))
    if vals.dtype == np_dtype and to == 1 and from_ == 0:
        return vals                     # below 1 by construction: no clamp needed
    vals = vals.astype(np_dtype, copy=False)
    to_s, from_s = np.asarray(to).astype(np_dtype), np.asarray(from_).astype(np_dtype)
    return np.where(vals == to_s, from_s, vals)


# ---- normal ----------------------------------------------------------------------------
@_holding_generator
def normal_scalar(gen, n, mean, std):
    """n draws of at::normal_distribution<double>, using and refilling the generator's
    cached sine half; z * std + mean is fused by the compiler. Returns float64 values
    (the caller rounds to its dtype)."""
    out = np.empty(n, _F64)
    start = 0
    if n and gen.next_double_normal is not None:
        out[0] = _fma64(np.array([gen.next_double_normal]), std, mean)[0]
        gen.next_double_normal = None
        start = 1
    pairs = (n - start + 1) // 2
    if pairs:
        v = uniform01_double(gen, 2 * pairs)
        u1, u2 = v[0::2], v[1::2]
        r = np.sqrt(-2.0 * _map(math.log1p, -u2))
        theta = _TWO_PI * u1
        z = np.empty(2 * pairs)
        z[0::2], z[1::2] = r * np.cos(theta), r * np.sin(theta)
        out[start:] = _fma64(z[:n - start], std, mean)     # val * std + mean, fused
        if (n - start) % 2:
            gen.next_double_normal = float(z[-1])
    return out


@_holding_generator
def normal_fill(gen, n, mean, std, np_dtype):
    """PyTorch's normal_fill for a contiguous tensor of n >= 16 elements. float32 and
    float64 draw all n uniforms into the output first; half and bfloat16 draw 16 per
    block into a float buffer, so they skip the uniforms of a ragged tail's own slots.
    Returns the values in the math type (float64, or float32 for the others)."""
    if np_dtype == _F64:
        draw, block = (lambda k: uniform01_double(gen, k)), _box_muller_16_double
    else:
        draw, block = (lambda k: uniform01_float(gen, k)), _box_muller_16_float
    full = n - n % 16
    data = draw(n if np_dtype in (_F64, _F32) else full)
    out = np.empty(n, data.dtype)
    out[:full] = block(data[:full].reshape(-1, 16), mean, std).ravel()
    if n % 16:
        out[n - 16:] = block(draw(16).reshape(1, 16), mean, std).ravel()
    return out


def _box_muller_16_double(d, mean, std):
    u1, u2 = 1.0 - d[:, :8], d[:, 8:]
    radius = np.sqrt(-2.0 * _map(math.log, u1))
    theta = _TWO_PI * u2
    return np.concatenate([_fma64(radius * np.cos(theta), std, mean),
                           _fma64(radius * np.sin(theta), std, mean)], axis=1)


def _box_muller_16_float(d, mean, std):
    u1 = (_F32(1) - d[:, :8]).ravel()            # flat, contiguous: faster below
    u2 = d[:, 8:].ravel()
    radius = np.sqrt(_F32(-2) * _log256(u1))
    sin, cos = _sincos256(_F32(_TWO_PI) * u2)
    rows = d.shape[0]
    return np.concatenate([_fma32(radius * cos, _F32(std), _F32(mean)).reshape(rows, 8),
                           _fma32(radius * sin, _F32(std), _F32(mean)).reshape(rows, 8)],
                          axis=1)


# ---- exact fused multiply-adds -----------------------------------------------------------
def _fma32(a, b, c):
    """round_to_float32(a * b + c) with a single rounding, for float32 a, b, c.

    a * b is exact in float64 and the sum is rounded once to float64; rounding that to
    float32 is then correct unless it lands exactly halfway between two floats (the low
    29 bits of the mantissa 1000...0) while the float64 sum was inexact: only those
    (rare) elements get the sum's rounding error, and move one float64 step towards it."""
    s = np.multiply(a, b, dtype=_F64)
    s += c
    tie = (s.view(np.int64) & 0x1FFFFFFF) == 0x10000000
    if tie.any():
        idx = np.nonzero(tie)
        at, bt, ct = (np.broadcast_to(v, s.shape)[idx].astype(_F64) for v in (a, b, c))
        p, t = at * bt, s[idx]
        bv = t - p
        err = (p - (t - bv)) + (ct - bv)
        s[idx] = np.where(err == 0, t, np.nextafter(t, np.copysign(np.inf, err)))
    return s.astype(_F32)


def _fma64(a, b, c):
    """round(a * b + c) with a single rounding (std::fma), for a float64 array a and
    float64 scalars b, c.

    a * b = p + e exactly (Dekker's split), p + c = s + t exactly (Knuth's two-sum); the
    result is s + (t + e), which is the correctly rounded one unless that last addition
    is a tie (t + e exactly half a unit of s): those rare elements are recomputed with
    exact rational arithmetic."""
    if b == 1.0 and c == 0.0:
        return a
    b, c = float(b), float(c)
    p = a * b
    split = 134217729.0                        # 2^27 + 1
    ah = a * split
    ah = ah - (ah - a)
    al = a - ah
    bh = b * split
    bh = bh - (bh - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bv = s - p
    t = (p - (s - bv)) + (c - bv)
    w = t + e
    out = s + w
    half = np.spacing(np.abs(s)) / 2
    tie = (np.abs(w) == half) | (np.abs(w) == half / 2)
    if tie.any():
        from fractions import Fraction
        idx = np.nonzero(tie)
        out[idx] = [float(Fraction(x) * Fraction(b) + Fraction(c)) for x in a[idx].tolist()]
    return out


# ---- avx_mathfun.h (Cephes single precision), as compiled with FMA ----------------------
_LOG_P = (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
          1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
          3.3333331174E-1)


def _log256(x):
    """log256_ps: natural log of float32 x > 0 (NaN for x <= 0)."""
    invalid = x <= 0
    x = np.maximum(x, np.array(0x00800000, np.int32).view(_F32))
    bits = x.view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(_F32) + _F32(1)
    x = ((bits & ~0x7F800000) | np.array(0.5, _F32).view(np.int32)).view(_F32)
    small = x < _F32(0.707106781186547524)          # x in [0.5, sqrt(1/2)): use 2x - 1
    tmp = np.where(small, x, _F32(0))
    x = x - _F32(1)
    e = e - np.where(small, _F32(1), _F32(0))
    x = x + tmp
    z = x * x
    y = np.full_like(x, _F32(_LOG_P[0]))
    for coef in _LOG_P[1:]:
        y = _fma32(y, x, _F32(coef))
    y = y * x
    y = _fma32(y, z, e * _F32(-2.12194440e-4))
    y = _fma32(-z, _F32(0.5), y)
    x = _fma32(e, _F32(0.693359375), x + y)
    return np.where(invalid, _F32(np.nan), x)


def _sincos256(x):
    """sincos256_ps: (sin x, cos x) for float32 x, by octant reduction and two
    polynomials."""
    sign_sin = x.view(np.int32) & np.int32(-2 ** 31)
    x = np.abs(x)
    j = (x * _F32(1.27323954473516)).astype(np.int32)     # 4/pi, truncated
    j = (j + 1) & ~1
    y = j.astype(_F32)
    sign_sin = sign_sin ^ ((j & 4) << 29)
    sign_cos = (~(j - 2) & 4) << 29
    use_sin_poly = (j & 2) == 0
    x = _fma32(y, _F32(-0.78515625), x)
    x = _fma32(y, _F32(-2.4187564849853515625e-4), x)
    x = _fma32(y, _F32(-3.77489497744594108e-8), x)
    z = x * x
    yc = _fma32(_F32(2.443315711809948E-005), z, _F32(-1.388731625493765E-003))
    yc = _fma32(yc, z, _F32(4.166664568298827E-002))
    yc = _fma32(yc * z, z, -(z * _F32(0.5))) + _F32(1)
    ys = _fma32(_F32(-1.9515295891E-4), z, _F32(8.3321608736E-3))
    ys = _fma32(ys, z, _F32(-1.6666654611E-1))
    ys = _fma32(ys * z, x, x)
    sin = np.where(use_sin_poly, ys, yc)
    cos = np.where(use_sin_poly, yc, ys)
    return ((sin.view(np.int32) ^ sign_sin).view(_F32),
            (cos.view(np.int32) ^ sign_cos).view(_F32))


# ---- integers, bernoulli, exponential, permutations -----------------------------------
@_holding_generator
def random_from_to(gen, n, low, high, wide):
    """random_(low, high): (word % range) + low, a 64-bit word when range >= 2^32 and
    the dtype is one of int64/float64/float32/bfloat16 (`wide`), else a 32-bit one."""
    span = high - low
    words = gen.random64(n) if (wide and span >= 2 ** 32) else gen.random(n)
    return (words % np.uint64(span)).astype(np.int64) + np.int64(low)


@_holding_generator
def bernoulli_scalar(gen, n, p):
    """bernoulli_(p) with a float p: a double uniform < p."""
    return uniform01_double(gen, n) < p


@_holding_generator
def bernoulli_tensor(gen, probs):
    """bernoulli_(p) with a tensor p (its values in visiting order): a double uniform
    when p is float64, else a float one, compared with p in that type."""
    flat = np.ascontiguousarray(probs).reshape(-1)
    if flat.dtype == _F64:
        return uniform01_double(gen, flat.size) < flat
    return uniform01_float(gen, flat.size) < flat.astype(_F32)


@_holding_generator
def exponential(gen, n, lambd):
    """exponential_(lambd): -1/lambd * log1p(-u), u a double uniform."""
    u = uniform01_double(gen, n)
    return (-1.0 / lambd) * _map(math.log1p, -u)


@_holding_generator
def randperm(gen, n):
    """randperm(n) for n < 2^32 / 20: Fisher-Yates from the front,
        for i in 0..n-2:  z = random() % (n - i);  swap(r[i], r[i + z])
    The words are drawn at once; the swaps are sequential by nature."""
    if n < 2:
        return np.arange(n, dtype=np.int64)
    z = (gen.random(n - 1) % (n - np.arange(n - 1, dtype=np.uint64))).astype(np.int64)
    z += np.arange(n - 1)
    r = list(range(n))
    for i, k in enumerate(z.tolist()):
        r[i], r[k] = r[k], r[i]
    return np.array(r, np.int64)
