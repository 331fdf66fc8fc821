"""How to shape a matrix product so that the BLAS behind NumPy's matmul runs it fastest.

OpenBLAS's builds for AVX-512 machines (its SkylakeX, Cooperlake and SapphireRapids
targets, which a DYNAMIC_ARCH build such as NumPy's picks on Intel's AVX-512 chips and on
AMD's Zen 4 and 5) run a product whose M * N * K is at most 100^3 on "small-matrix"
kernels, which read the operands where they lie instead of first packing them into
cache-sized panels (OpenBLAS's kernel/x86_64/sgemm_small_kernel_permit_skylakex.c). A
convolution's per-image products are a little larger than that: (32 x 288) @ (288 x 256)
for a 32-channel 3x3 layer on 16x16 images has M * N * K = 2.4 million, which the packing
kernel runs at 73-80 GFLOP/s on this machine (Zen 4) where PyTorch's oneDNN convolution
runs at 93. Cut into three products of 86 columns each, every one within 100^3, the same
arithmetic took 0.79-0.83 of the time (measured here, with one BLAS thread and with two);
16 rows of 288 in two blocks of 128 columns, 0.69-0.79. The whole convolution of 16
images, forward and grad_input: 1094 -> 947 us and 1116 -> 963 us.

The blocks start on cache-line boundaries where they can: their width is a multiple of 64
bytes of the row (16 float32 or 8 float64 columns), the even width rounded up, so that no
block but the last ends in a part of a vector. For a ResNet layer's 256 columns that is
96, 96 and 64 in place of three blocks of 86: 0.95-0.96x the time of the even blocks, in
the same run; 0.88x for 48 channels of 16x16 (48 columns in place of 43) and for 1024
columns (96 in place of 103), 0.91x for the same in float64. (The depth blocks below gained
nothing from it: 1.0-1.02x.)

Narrower blocks stop paying: below 32 columns the calls cost more than the kernel saves
(64 channels of a 3x3 layer, 576 deep, allow only 27 columns: 1.06-1.22x slower), so such
a product stays whole. On a BLAS without these kernels (OpenBLAS's Haswell or Zen
targets, MKL) the blocks only add calls (1.02-1.27x slower with OPENBLAS_CORETYPE=Haswell
here), so they are used only where NumPy's BLAS reports one of the AVX-512 targets.

The blocks change which products are summed by which kernel, not the sums: each output
is still one dot product of a row and a column, in the small kernel's order.

A product whose inner dimension is the long one, a convolution's weight gradient
cols @ g^T over every position of the batch ((145 x 2048) @ (2048 x 32) for the digits
CNN's second layer at batch 32), is cut along that dimension instead (`depth_block`,
`matmul_by_depth`): blocks of about 200 positions, each within 100^3, their products
summed. With g laid out position-major (each position's O gradients side by side, the
right operand contiguous), the weight gradient took 0.82x the time at batch 32 and 0.87x
at 64, 0.93x for a ResNet block's 32 channels on 16x16 (batch 16), in the same run.
These blocks do change the sums: each output is the sum of the blocks' partial dot
products, in block order (as a BLAS's own packing kernel sums its panels of K).
"""
from __future__ import annotations

import functools

import numpy as np

# OpenBLAS's bound for its small-matrix kernels: M * N * K of at most 100^3.
SMALL_PRODUCT = 100 ** 3
# Blocks narrower than this cost more in calls than the small kernels save (see above).
NARROWEST = 32
# Column blocks are a whole number of cache lines of a row wide (see above).
CACHE_LINE = 64
# OpenBLAS's targets with small-matrix kernels (threadpoolctl's "architecture" names), and
# the dtypes they have them for (sgemm, dgemm; none for the complex products).
_SMALL_KERNEL_TARGETS = ("skylakex", "cooperlake", "sapphirerapids")
_SMALL_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


@functools.cache
def small_kernels():
    """Whether NumPy's BLAS is an OpenBLAS running one of the targets with small-matrix
    kernels (asked once: threadpoolctl reads the loaded libraries)."""
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
        from threadpoolctl import threadpool_info
        pools = threadpool_info()
    except Exception:        # an unusual NumPy build or platform: keep the plain products
        return False
    if "openblas" not in blas.lower():
        return False
    targets = {str(pool.get("architecture", "")).lower() for pool in pools
               if pool.get("internal_api") == "openblas"}
    return bool(targets) and targets <= set(_SMALL_KERNEL_TARGETS)


def column_block(rows, depth, columns, dtype):
    """The width of the column blocks that a product (rows x depth) @ (depth x columns) of
    `dtype` runs fastest in, each within SMALL_PRODUCT (the blocks as even as they can
    be, in whole cache lines), or None to run it whole: it fits already, the blocks would
    be narrower than NARROWEST, the dtype is not float32 or float64 (OpenBLAS has
    small-matrix kernels for sgemm and dgemm only), or the BLAS has none."""
    return _block(columns, rows * depth, dtype, unit=CACHE_LINE // np.dtype(dtype).itemsize)


def depth_block(rows, depth, columns, dtype):
    """The width of the blocks of the inner dimension that a product (rows x depth) @
    (depth x columns) of `dtype` runs fastest in (summed by matmul_by_depth), each within
    SMALL_PRODUCT, or None to run it whole (column_block's reasons)."""
    return _block(depth, rows * columns, dtype)


def _block(length, across, dtype, unit=1):
    """Even blocks of `length` whose product with the other two dimensions (`across`)
    each stays within SMALL_PRODUCT, at least NARROWEST wide, the width rounded up to a
    multiple of `unit`; or None (see column_block)."""
    if (length * across <= SMALL_PRODUCT or np.dtype(dtype) not in _SMALL_KERNEL_DTYPES
            or not small_kernels()):
        return None
    widest = SMALL_PRODUCT // max(1, across) // unit * unit
    if widest < NARROWEST:
        return None
    blocks = -(-length // widest)
    even = -(-length // blocks)
    return -(-even // unit) * unit      # still within widest, itself a multiple of unit


def matmul_by_columns(a, b, out, width):
    """out = a @ b (NumPy's matmul, stacked over b's and out's leading dims), in blocks of
    `width` columns of b and out (column_block's; None: in one product)."""
    if width is None:
        np.matmul(a, b, out=out)
        return
    for start in range(0, b.shape[-1], width):
        np.matmul(a, b[..., start:start + width], out=out[..., start:start + width])


def matmul_by_depth(a, b, width):
    """a @ b for 2-D a and b, in blocks of `width` of the inner dimension (depth_block's;
    None: in one product), summed in order into the first block's product."""
    depth = a.shape[1]
    if width is None or width >= depth:
        return np.matmul(a, b)
    total = np.matmul(a[:, :width], b[:width])
    for start in range(width, depth, width):
        np.add(total, np.matmul(a[:, start:start + width], b[start:start + width]), out=total)
    return total
