"""Shape ops that copy: cat, flip, roll, repeat, repeat_interleave (the shape ops that are
views are Composite, in tensorplay/composite/shape_views.py)."""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.meta import reduction_shape as rules
from cpu_kernels._common import array_as, out


def flip(self, dims):
    rules.flip("flip", (self, dims))
    a = self._impl.array()
    axes = tuple(rules.wrap_dim("flip", d, a.ndim) for d in dims) if a.ndim else ()
    return out(np.flip(a, axis=axes).copy(), self._impl.dtype)
