"""Copies, fills and dtype/device conversion."""
from __future__ import annotations

import numpy as np

from tensorplay._device import CPU
from cpu_kernels._common import check_result, out


def copy_(self, src, non_blocking):
    if src._impl.device is not CPU:
        src = src.to("cpu")
    np.copyto(self._impl.array(), src._impl.array(), casting="unsafe")
    return self


def fill_(self, value):
    a = self._impl.array()
    # np.array(value).astype wraps out-of-range ints (-1 -> 255 for uint8) as torch does.
    a[...] = np.array(value).astype(a.dtype)
    return self


def clone(self):
    impl = self._impl
    check_result("clone", "self", impl.sizes, impl.dtype)   # an expanded view may be huge
    return out(np.array(self._impl.array(), copy=True, order="C"), self._impl.dtype)


def to_copy(self, dtype, device, non_blocking):
    dtype = dtype or self._impl.dtype
    a = self._impl.array()
    if device is None or device is CPU:
        return out(a.astype(dtype.np, copy=True), dtype)
    from tensorplay import _fallback_ops
    return _fallback_ops.host_to_device(a.astype(dtype.np, copy=False), dtype, device)
