"""Dropout: native_dropout's keep mask drawn from the generator as PyTorch draws it."""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay import _random_draws as draws
from tensorplay._random import get
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import out


def native_dropout(input, p, train, generator):
    """Zero each element with probability p and scale the rest by 1 / (1 - p), so the
    expected value is unchanged. Returns (output, keep mask).

        keep = bernoulli(1 - p)       a double uniform < 1 - p per element, in order,
                                      from `generator` (or the default one)
        out  = (input * keep) * scale   scale = 1 / (1 - p) rounded to input's dtype
                                        (p == 1: all zeros)
    Not training: (a copy of the input, an all-True mask).
    """
    shape_rule("dropout.native_dropout")("native_dropout", (input, p, train, generator))
    a = input._impl.array()
    dtype = input._impl.dtype
    if train is False:
        return out(a.copy(), dtype), out(np.ones(a.shape, np.bool_), dt.bool)
    keep = draws.bernoulli_scalar(get(generator), a.size, 1.0 - p).reshape(a.shape)
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    # The mask read as 0/1 in the product's own loop, then scaled in place: one array
    # made, not three (the same numbers: a * 0 is the same signed zero either way).
    result = np.multiply(a, keep, dtype=a.dtype)
    result *= np.asarray(scale, a.dtype)
    return out(result, dtype), out(keep, dt.bool)
