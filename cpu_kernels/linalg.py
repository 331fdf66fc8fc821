"""Matrix products (matmul itself is Composite: it reshapes and calls mm/bmm)."""
from __future__ import annotations

import numpy as np

from tensorplay.meta import rules
from cpu_kernels._common import out


def mm(self, mat2):
    rules.mm(None, (self, mat2))
    return out(np.matmul(self._impl.array(), mat2._impl.array()), self._impl.dtype)


def bmm(self, mat2):
    rules.bmm(None, (self, mat2))
    return out(np.matmul(self._impl.array(), mat2._impl.array()), self._impl.dtype)
