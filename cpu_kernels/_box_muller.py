"""The Box-Muller blocks of PyTorch's normal fill (randn, normal_ of 16 or more contiguous
elements) as compiled loops, one block of 16 uniforms at a time: u1 = 1 - x[j],
u2 = x[j + 8] for j < 8, then

    radius = sqrt(-2 log u1),  theta = 2 pi u2
    out[j] = radius cos(theta) * std + mean,  out[j + 8] = radius sin(theta) * std + mean

with the multiply-adds fused, as PyTorch's compiled kernel has them
(aten/src/ATen/native/cpu/DistributionTemplates.h). In float (float32, and the math type of
half and bfloat16) its log and sine are avx_mathfun.h's Cephes polynomials, which
`_log256` and `_sincos256` follow operation by operation, fused where its AVX2 build fuses;
in double they are libm's log, cos and sin. tensorplay/_random_draws.py draws the uniforms
and calls these; the same bits as its NumPy passes were, 15-30x faster.
"""
from __future__ import annotations

import math

import numpy as np

from cpu_kernels._loops import bits_float, float_bits, fma, helper, loop

_F32 = np.float32

# avx_mathfun.h's log256_ps polynomial, highest power first
_LOG_P = (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
          1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
          3.3333331174E-1)
_P0, _P1, _P2, _P3, _P4, _P5, _P6, _P7, _P8 = _LOG_P


@helper
def _log256(x):
    """log256_ps: the natural log of float32 x > 0 (NaN for x <= 0)."""
    if not x > _F32(0):
        return _F32(np.nan)
    x = max(x, bits_float(0x00800000))          # the smallest normal float
    bits = float_bits(x)
    e = _F32((bits >> 23) - 0x7F) + _F32(1)
    x = bits_float((bits & ~0x7F800000) | 0x3F000000)   # the mantissa, in [0.5, 1)
    small = x < _F32(0.707106781186547524)      # in [0.5, sqrt(1/2)): use 2x - 1
    tmp = x if small else _F32(0)
    x = x - _F32(1)
    if small:
        e = e - _F32(1)
    x = x + tmp
    z = x * x
    y = _F32(_P0)
    y = fma(y, x, _F32(_P1))
    y = fma(y, x, _F32(_P2))
    y = fma(y, x, _F32(_P3))
    y = fma(y, x, _F32(_P4))
    y = fma(y, x, _F32(_P5))
    y = fma(y, x, _F32(_P6))
    y = fma(y, x, _F32(_P7))
    y = fma(y, x, _F32(_P8))
    y = y * x
    y = fma(y, z, e * _F32(-2.12194440e-4))
    y = fma(-z, _F32(0.5), y)
    return fma(e, _F32(0.693359375), x + y)


@helper
def _sincos256(x):
    """sincos256_ps: (sin x, cos x) of float32 x, by octant reduction and two
    polynomials."""
    sign_sin = float_bits(x) & 0x80000000
    x = abs(x)
    j = int(x * _F32(1.27323954473516))         # 4/pi, truncated
    j = (j + 1) & ~1
    y = _F32(j)
    sign_sin = sign_sin ^ ((j & 4) << 29)
    sign_cos = (~(j - 2) & 4) << 29
    x = fma(y, _F32(-0.78515625), x)
    x = fma(y, _F32(-2.4187564849853515625e-4), x)
    x = fma(y, _F32(-3.77489497744594108e-8), x)
    z = x * x
    yc = fma(_F32(2.443315711809948E-005), z, _F32(-1.388731625493765E-003))
    yc = fma(yc, z, _F32(4.166664568298827E-002))
    yc = fma(yc * z, z, -(z * _F32(0.5))) + _F32(1)
    ys = fma(_F32(-1.9515295891E-4), z, _F32(8.3321608736E-3))
    ys = fma(ys, z, _F32(-1.6666654611E-1))
    ys = fma(ys * z, x, x)
    if (j & 2) == 0:
        sin, cos = ys, yc
    else:
        sin, cos = yc, ys
    return bits_float(float_bits(sin) ^ sign_sin), bits_float(float_bits(cos) ^ sign_cos)


@loop
def box_muller_float(d, mean, std, out):
    """out (B, 16) from the float32 uniforms d (B, 16): the module doc's block, in float."""
    for b in range(d.shape[0]):
        for j in range(8):
            radius = np.sqrt(_F32(-2) * _log256(_F32(1) - d[b, j]))
            sin, cos = _sincos256(_F32(2 * math.pi) * d[b, j + 8])
            out[b, j] = fma(radius * cos, std, mean)
            out[b, j + 8] = fma(radius * sin, std, mean)


@loop
def box_muller_double(d, mean, std, out):
    """out (B, 16) from the float64 uniforms d (B, 16): the module doc's block, in double
    with libm's log, cos and sin."""
    for b in range(d.shape[0]):
        for j in range(8):
            radius = np.sqrt(-2.0 * math.log(1.0 - d[b, j]))
            theta = 2 * math.pi * d[b, j + 8]
            out[b, j] = fma(radius * math.cos(theta), std, mean)
            out[b, j + 8] = fma(radius * math.sin(theta), std, mean)
