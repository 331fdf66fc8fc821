"""softmax / log_softmax with `dtype=`: convert first (as PyTorch does on the CPU), then
call the `_softmax` / `_log_softmax` kernels, whose backward ops are in derivatives.yaml."""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.meta.softmax import softmax as _check


def _cast(self, dtype):
    return self if dtype is None or dtype is self.dtype else self.to(dtype)


def softmax(self, dim, dtype):
    _check("softmax", (self if dtype is None else self.to(dtype), dim, False))
    return F._softmax(_cast(self, dtype), dim, False)


def log_softmax(self, dim, dtype):
    _check("log_softmax", (self if dtype is None else self.to(dtype), dim, False))
    return F._log_softmax(_cast(self, dtype), dim, False)
