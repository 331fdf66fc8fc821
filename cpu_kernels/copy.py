"""Copies, fills and dtype/device conversion."""
from __future__ import annotations

import numpy as np

from tensorplay._device import CPU
from tensorplay._device_transfer import host_to_device
from tensorplay.kernel_support.layout import copy_strides
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.kernel_support.overlap import check_inplace_overlap, is_same_data
from tensorplay.kernel_support.results import contiguous_strides
from cpu_kernels._common import check_result, out, out_strided, real_part_for


def copy_(self, src, non_blocking):
    if is_same_data(self, src):
        return self
    if src._impl.sizes != self._impl.sizes:
        shape_rule("copy_")("copy_", (self, src, non_blocking))   # src broadcasts to self's shape
    check_inplace_overlap("copy_", self, ("src", src))
    if src._impl.device is not CPU:
        src = src.to("cpu")
    np.copyto(self._impl.array(), real_part_for(src._impl.array(), self._impl.dtype),
              casting="unsafe")
    return self


def fill_(self, value):
    shape_rule("fill_")("fill_", (self, value))
    a = self._impl.array()
    # np.array(value).astype wraps out-of-range ints (-1 -> 255 for uint8) as torch does.
    # (A complex value into a real tensor is real: the rule refused any other.)
    a[...] = np.array(value.real if isinstance(value, complex) and a.dtype.kind != "c"
                      and a.dtype.kind != "b" else value).astype(a.dtype)
    return self


def clone(self, memory_format):
    impl = self._impl
    check_result("clone", "self", impl.sizes, impl.dtype)   # an expanded view may be huge
    strides = copy_strides("clone", impl.sizes, impl.strides, memory_format)
    if strides == contiguous_strides(impl.sizes):
        return out(np.array(impl.array(), copy=True, order="C"), impl.dtype)
    # a copy in the same layout (order="K"): out_strided keeps a fresh array that already
    # has the strides, so handing it self's own array would alias the clone to self
    return out_strided(np.array(impl.array(), copy=True, order="K"), impl.dtype, strides)


def to_copy(self, dtype, device, non_blocking):
    """A converted copy, laid out as clone lays it out (PyTorch's preserve_format: a dense
    input keeps its strides, `x.t().long()` is transposed)."""
    impl = self._impl
    dtype = dtype or impl.dtype
    a = real_part_for(impl.array(), dtype)
    if device is None or device is CPU:
        strides = copy_strides("_to_copy", impl.sizes, impl.strides, None)
        if strides == contiguous_strides(impl.sizes):
            return out(a.astype(dtype.np, copy=True), dtype)
        return out_strided(a.astype(dtype.np), dtype, strides)
    return host_to_device(a.astype(dtype.np, copy=False), dtype, device)
