"""Copies, fills and conversions on the `cuda` device, and the device -> host path.

All of them are the pointwise template's `copy` kernel (result = x, converted to the
result's dtype by the store): `clone` copies into a new contiguous tensor, `copy_`
into self's strides (broadcasting src), `fill_` broadcasts a one-element tensor, and
`_to_copy` converts on the device before the bytes cross to the host. A complex copy is
the same kernel on the (re, im) float pairs (`copy_values`, triton_kernels/_complex.py).
"""
from __future__ import annotations

import numpy as np

from tensorplay._cuda_state import as_torch
from tensorplay._device import as_device
from tensorplay._device_transfer import from_host, to_host
from tensorplay.kernel_support.layout import copy_strides
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.kernel_support.overlap import check_inplace_overlap, is_same_data
from tensorplay.kernel_support.results import factory, tensor_from_array
from tensorplay.library import kernel
from triton_kernels._complex import copy_values
from triton_kernels._launch import new_tensor, operands


@kernel(takes_complex=True)
def copy_(self, src, non_blocking):
    if is_same_data(self, src):
        return self
    shape_rule("copy_")("copy_", (self, src, non_blocking))
    # copy_ is the one op that may mix devices: bring src over, then copy on self's device.
    if self._impl.device.type == "cpu":           # device -> host: the CPU kernel finishes
        self.copy_(to_copy(src, None, self._impl.device, non_blocking))
        return self
    if src._impl.device.type == "cpu":           # host -> device
        src = from_host(src._impl.array(), src._impl.dtype, self._impl.device)
    operands("copy_", self=self, src=src)
    check_inplace_overlap("copy_", self, ("src", src))
    return copy_values(self, src)


@kernel(takes_complex=True)
def fill_(self, value):
    shape_rule("fill_")("fill_", (self, value))
    device, _ = operands("fill_", self=self)
    # The value travels as a one-element tensor of self's dtype rather than as a kernel
    # argument: Triton passes Python floats as float32, which would round a float64 fill.
    one = from_host(np.array(value).astype(self._impl.dtype.np), self._impl.dtype, device)
    return copy_values(self, one)


@kernel(takes_complex=True)
def clone(self, memory_format):
    device, _ = operands("clone", self=self)
    impl = self._impl
    strides = copy_strides("clone", impl.sizes, impl.strides, memory_format)
    out = factory.empty_strided(impl.sizes, strides, dtype=impl.dtype, device=device)
    return copy_values(out, self)


@kernel(takes_complex=True)
def to_copy(self, dtype, device, non_blocking):
    dtype = dtype or self._impl.dtype
    target = self._impl.device if device is None else as_device(device)
    if target.type == "meta":
        return factory.empty(self._impl.sizes, dtype=dtype, device=target)
    converted = self
    if dtype is not self._impl.dtype or not self._impl.is_contiguous:
        impl = self._impl
        if target is impl.device:    # stays on this GPU: clone's layout (preserve_format)
            strides = copy_strides("_to_copy", impl.sizes, impl.strides, None)
            converted = factory.empty_strided(impl.sizes, strides, dtype=dtype,
                                              device=impl.device)
        else:                         # leaves it: row-major, for the copy out
            converted = new_tensor(impl.sizes, dtype, impl.device)
        copy_values(converted, self)
    if target.type == "cpu":
        return tensor_from_array(to_host(converted), dtype, target)
    if target is not self._impl.device:            # another GPU: a plain byte copy
        out = new_tensor(self._impl.sizes, dtype, target)
        as_torch(out).copy_(as_torch(converted))
        return out
    return converted if converted is not self else clone(self, None)
