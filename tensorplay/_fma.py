"""Exact fused multiply-adds in NumPy: round(a * b + c) with a single rounding, as C's
fma and as the FMA instructions PyTorch's compiled kernels use where the compiler fuses
`a * b + c` (its AVX2 builds contract `x * q - p` in the orthogonal polynomials'
recurrences; lerp's vectorised form calls fmadd; the random fills fuse `x * std + mean`).
Matching PyTorch to the last bit there needs the same single rounding, which NumPy's
separate multiply and add do not give.

    fma32(a, b, c)   float32 arrays (or scalars), broadcast
    fma64(a, b, c)   float64 arrays (or scalars), broadcast
    fma(a, b, c)     by a's dtype (float32 or float64)
"""
from __future__ import annotations

import numpy as np

_F32, _F64 = np.float32, np.float64


def fma32(a, b, c):
    """round_to_float32(a * b + c) with a single rounding, for float32 a, b, c.

    a * b is exact in float64 and the sum is rounded once to float64; rounding that to
    float32 is then correct unless it lands exactly halfway between two floats (the low
    29 bits of the mantissa 1000...0) while the float64 sum was inexact: only those
    (rare) elements get the sum's rounding error, and move one float64 step towards it."""
    s = np.multiply(a, b, dtype=_F64)
    s += c
    shape = np.shape(s)
    s = np.atleast_1d(s)
    tie = (s.view(np.int64) & 0x1FFFFFFF) == 0x10000000
    if tie.any():
        idx = np.nonzero(tie)
        at, bt, ct = (np.broadcast_to(v, s.shape)[idx].astype(_F64) for v in (a, b, c))
        p, t = at * bt, s[idx]
        bv = t - p
        err = (p - (t - bv)) + (ct - bv)
        s[idx] = np.where(err == 0, t, np.nextafter(t, np.copysign(np.inf, err)))
    return s.astype(_F32).reshape(shape)


def fma64(a, b, c):
    """round(a * b + c) with a single rounding (std::fma), for float64 a, b, c.

    a * b = p + e exactly (Dekker's split), p + c = s + t exactly (Knuth's two-sum); the
    result is s + (t + e), which is the correctly rounded one unless that last addition
    is a tie (t + e exactly half a unit of s): those rare elements are recomputed with
    exact rational arithmetic. Where the split overflows (|a| or |b| past 2^996) or a
    term is not finite, the plain a * b + c stands."""
    if np.ndim(b) == 0 and np.ndim(c) == 0 and b == 1.0 and c == 0.0:
        return a
    a, b, c = np.broadcast_arrays(np.asarray(a, _F64), np.asarray(b, _F64),
                                  np.asarray(c, _F64))
    with np.errstate(all="ignore"):
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
        out = np.atleast_1d(s + w)
        half = np.spacing(np.abs(s)) / 2
    plain = ~np.isfinite(out)
    if plain.any():
        out[plain] = np.broadcast_to(s, out.shape)[plain]
    tie = ((np.abs(w) == half) | (np.abs(w) == half / 2)) & ~plain
    if tie.any():
        from fractions import Fraction
        idx = np.nonzero(np.broadcast_to(tie, out.shape))
        out[idx] = [float(Fraction(x) * Fraction(y) + Fraction(z)) for x, y, z in
                    zip(*(np.broadcast_to(v, out.shape)[idx].tolist() for v in (a, b, c)))]
    return out.reshape(np.shape(s))


def fma(a, b, c):
    """fma32 or fma64 by the dtype of a (float32 or float64)."""
    return fma32(a, b, c) if np.asarray(a).dtype == _F32 else fma64(a, b, c)
