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
float32 and float64 fma emulations (tensorplay/_fma.py), or, in the normal fill's Box-Muller
blocks, which run as compiled loops (cpu_kernels/_box_muller.py), the machine's own fma.

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

from cpu_kernels._box_muller import box_muller_double, box_muller_float
from cpu_kernels._mt19937 import unit_doubles
from tensorplay._fma import fma32 as _fma32, fma64 as _fma64

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
    return _write(a, random_from_to(gen, a.size, low, high))


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
    """n float64 uniforms in [0, 1): 53 random bits of one 64-bit draw each (a compiled
    pass over the word pairs: cpu_kernels/_mt19937.py)."""
    out = np.empty(n, _F64)
    unit_doubles(gen.random(2 * n), out)
    return out


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
    out = np.empty(d.shape, _F64)
    box_muller_double(np.ascontiguousarray(d), _F64(mean), _F64(std), out)
    return out


def _box_muller_16_float(d, mean, std):
    out = np.empty(d.shape, _F32)
    box_muller_float(np.ascontiguousarray(d), _F32(mean), _F32(std), out)
    return out


# ---- integers, bernoulli, exponential, permutations -----------------------------------
@_holding_generator
def random_from_to(gen, n, low, high):
    """random_(low, high): (word % range) + low, a 64-bit word when range >= 2^28, else a
    32-bit one, whatever the dtype (PyTorch's released builds: DistributionsHelper.h's
    `#else` branch; its FBCODE_CAFFE2 branch, 2^32 and four dtypes, is not what they run)."""
    span = high - low
    words = gen.random64(n) if span >= 2 ** 28 else gen.random(n)
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


# ---- random_, cauchy_, log_normal_, geometric_ ------------------------------------------
# (cpu_kernels/random.py fills with these; each is a serial kernel of PyTorch's that makes
# one double (or one integer) per element from its own words, in visiting order.)
@_holding_generator
def fill_random_full(gen, a, wide):
    """random_() without bounds: random() (random64() for int64 and float64: `wide`)
    modulo the count of non-negative integers the dtype holds exactly: its largest value
    + 1 for an integer dtype, 2^digits + 1 for a float one; bool takes the lowest bit."""
    words = gen.random64(a.size) if wide else gen.random(a.size)
    if a.dtype == np.bool_:
        return _write(a, (words & np.uint64(1)).astype(np.bool_))
    if np.issubdtype(a.dtype, np.integer):
        modulus = np.uint64(int(np.iinfo(a.dtype).max) + 1)
    else:
        digits = {2: 11, 4: 24, 8: 53}[a.dtype.itemsize] if a.dtype.name != "bfloat16" else 8
        modulus = np.uint64((1 << digits) + 1)
    return _write(a, (words % modulus).astype(np.int64))


@_holding_generator
def fill_random_64_bits(gen, a):
    """random_(from=int64 min, to=None): a whole 64-bit word, read as a signed integer."""
    return _write(a, gen.random64(a.size).view(np.int64))


@_holding_generator
def fill_cauchy(gen, a, median, sigma):
    """median + sigma * tan(pi * (u - 0.5)), u a double uniform; libm's tan, and the
    multiply-add fused as the compiler fuses PyTorch's."""
    u = uniform01_double(gen, a.size)
    t = _map(math.tan, math.pi * (u - 0.5))
    return _write(a, _fma64(t, sigma, median))


@_holding_generator
def fill_log_normal(gen, a, mean, std):
    """exp(N(mean, std)), the scalar normal draw of normal_ (one Box-Muller pair per two
    elements, the odd one kept in the generator)."""
    return _write(a, _map(math.exp, normal_scalar(gen, a.size, mean, std)))


@_holding_generator
def fill_geometric(gen, a, p):
    """ceil(log(u) / log1p(-p)): the number of Bernoulli(p) trials up to the first success,
    u a double uniform."""
    u = uniform01_double(gen, a.size)
    return _write(a, np.ceil(_map(math.log, u) / math.log1p(-p)))


# ---- poisson and binomial: rejection samplers, one element at a time -------------------
# Each element draws as many double uniforms as its loop needs, so the elements run in
# visiting order, one uniform at a time (Distributions.cpp's serial kernels).
def _uniform_stream(gen):
    return lambda: float(uniform01_double(gen, 1)[0])


def _poisson_one(lam, uniform):
    """sample_poisson: Hoermann's transformed rejection (1993) for lam >= 10, else the
    product of uniforms until it falls below exp(-lam)."""
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            U = uniform() - 0.5
            V = uniform()
            us = 0.5 - abs(U)
            k = math.floor((2 * a / us + b) * U + lam + 0.43)
            if us >= 0.07 and V <= vr:
                return k
            if k < 0 or (us < 0.013 and V > us):
                continue
            if (math.log(V) + math.log(invalpha) - math.log(a / (us * us) + b)
                    <= -lam + k * loglam - math.lgamma(k + 1.0)):
                return k
    if lam == 0:
        return 0
    enlam, x, prod = math.exp(-lam), 0, 1.0
    while True:
        prod *= uniform()
        if prod > enlam:
            x += 1
        else:
            return x


@_holding_generator
def poisson(gen, rates):
    """poisson(rates): the rates (a float64 array, in visiting order) drawn one by one."""
    uniform = _uniform_stream(gen)
    return np.array([_poisson_one(lam, uniform) for lam in rates.ravel().tolist()],
                    np.float64).reshape(rates.shape)


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_tail(k):
    """log(k!) - (its Stirling approximation), tabled below 10."""
    if k <= 9:
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _binomial_inversion(count, prob, uniform, S):
    """Geometric waiting times until they pass count: their number."""
    logprob = float(S(math.log1p(-prob)))
    geom_sum, num_geom = 0.0, S(0)
    while True:
        geom_sum += math.ceil(math.log(uniform()) / logprob)
        if geom_sum > count:
            return num_geom
        num_geom = S(num_geom + 1)


def _btrs(count, prob, uniform, S):
    """Hoermann's BTRS (transformed rejection with squeeze), as TensorFlow and PyTorch
    write it. `S` rounds to the element dtype where PyTorch computes in it (float32)."""
    stddev = float(S(math.sqrt(S(S(count * prob) * S(1 - prob)))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = float(S(count * prob)) + 0.5
    v_r = 0.92 - 4.2 / b
    r = float(S(prob / S(1 - prob)))
    alpha = (2.83 + 5.1 / b) * stddev
    m = float(math.floor(S(S(count + 1) * prob)))
    while True:
        U = uniform() - 0.5
        V = uniform()
        us = 0.5 - abs(U)
        k = S(math.floor((2 * a / us + b) * U + c))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and V <= v_r:
            return k
        V = math.log(V * alpha / (a / (us * us) + b))
        n_k = float(S(S(count - k) + 1))
        upperbound = ((m + 0.5) * math.log((m + 1) / (r * (count - m + 1)))
                      + float(S(count + 1)) * math.log((count - m + 1) / n_k)
                      + (float(k) + 0.5) * math.log(r * n_k / float(S(k + 1)))
                      + _stirling_tail(m) + _stirling_tail(count - m)
                      - _stirling_tail(float(k)) - _stirling_tail(float(S(count - k))))
        if V <= upperbound:
            return k


def _binomial_one(count, prob, uniform, S):
    if count <= 0.0 or prob <= 0.0:
        return S(0)
    if prob >= 1.0:
        return S(count)
    if prob <= 0.5:
        if S(count * prob) >= 10.0:
            return _btrs(count, prob, uniform, S)
        return _binomial_inversion(count, prob, uniform, S)
    if prob > 0.5:
        q = float(S(1.0 - prob))
        sample = _btrs(count, q, uniform, S) if S(count * q) >= 10.0 \
            else _binomial_inversion(count, q, uniform, S)
        return S(count - sample)
    return math.nan


@_holding_generator
def binomial(gen, counts, probs):
    """binomial(count, prob), element by element in visiting order (`counts` and `probs`
    broadcast to one shape, float32 or float64: the arithmetic PyTorch does in the element
    type is rounded to it)."""
    S = _f32 if counts.dtype == _F32 else float
    uniform = _uniform_stream(gen)
    out = [_binomial_one(n, p, uniform, S)
           for n, p in zip(counts.ravel().tolist(), probs.ravel().tolist())]
    return np.array(out, counts.dtype).reshape(counts.shape)


def _f32(x):
    """x rounded to float32, kept as a Python float (float32 arithmetic by rounding each
    result of double arithmetic: exact for one +, -, * or / of two float32 values)."""
    return float(np.float32(x))
