"""Matrix products (matmul itself is Composite: it reshapes and calls mm/bmm)."""
from __future__ import annotations

import numpy as np

from tensorplay.meta import rules
from cpu_kernels._common import accumulate_dtype, out


def _matmul(self, mat2, dtype=None):
    """self @ mat2 in `dtype` (self's by default)."""
    dtype = dtype or self._impl.dtype
    # Half types accumulate in float32 and round once, as PyTorch does: NumPy's float16
    # matmul would round after every multiply-add.
    acc = accumulate_dtype(self._impl.dtype)
    a, b = self._impl.array(), mat2._impl.array()
    if a.dtype != acc:
        a, b = a.astype(acc), b.astype(acc)
    if a.ndim >= 2 and b.ndim >= 2 and a.shape[-1] == 1:
        # An inner dim of 1 is a (batch of) outer product(s), e.g. the per-example weight
        # gradients of a linear layer under vmap: NumPy's matmul does not hand it to BLAS
        # and is several times slower than the broadcast product, which is the same sum
        # of one term.
        return out(np.multiply(a, b), dtype)
    return out(np.matmul(a, b), dtype)


def mm(self, mat2):
    rules.mm(None, (self, mat2))
    return _matmul(self, mat2)


def bmm(self, mat2):
    spec = rules.bmm(None, (self, mat2))
    return _matmul(self, mat2, spec.dtype)
