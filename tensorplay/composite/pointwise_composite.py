"""Pointwise ops defined by other ops (the seed registers xlog1py this way)."""
from __future__ import annotations

from tensorplay._generated import functional as F


def xlog1py(self, other):
    """self * log1p(other), 0 where self == 0 (even if log1p(other) is inf or nan)."""
    return F.xlogy(self, F.add(other, 1))


def max_other(self, other):
    return F.maximum(self, other)


def min_other(self, other):
    return F.minimum(self, other)
