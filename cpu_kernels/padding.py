"""Padding: constant (with negative pads cropping), and reflect / replicate / circular.

The three non-constant modes are each an index map per padded dim: output position i
(from -left to size + right - 1) reads input position

    reflect    |i| mirrored at both ends     (-1 -> 1,  size -> size - 2)
    replicate  clip(i, 0, size - 1)
    circular   i mod size

so the forward is one np.take per padded dim, and the backward adds each gradient
element back to the position it was read from (np.add.at along that dim).
"""
from __future__ import annotations

import numpy as np

from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import check_result, out


def constant_pad_nd(self, pad, value):
    spec = shape_rule("padding.constant_pad_nd")("constant_pad_nd", (self, pad, value))
    check_result("constant_pad_nd", "pad", spec.sizes, self._impl.dtype)
    a = self._impl.array()
    result = np.empty(spec.sizes, a.dtype)
    result[...] = np.array(value).astype(a.dtype)
    src, dst = [slice(None)] * a.ndim, [slice(None)] * a.ndim
    for i in range(len(pad) // 2):
        d = a.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        # Negative pads crop the input; positive ones leave a border of `value`.
        src[d] = slice(max(-left, 0), a.shape[d] - max(-right, 0))
        dst[d] = slice(max(left, 0), spec.sizes[d] - max(right, 0))
    if all(s.stop is None or s.stop > (s.start or 0) for s in src):
        result[tuple(dst)] = a[tuple(src)]
    return out(result, self._impl.dtype)


def source_index(size, left, right, mode):
    """Input position read by each output position along one padded dim."""
    i = np.arange(-left, size + right)
    if mode == "reflect":
        i = np.abs(i)
        return np.where(i >= size, 2 * (size - 1) - i, i)
    if mode == "replicate":
        return np.clip(i, 0, size - 1)
    return i % size


def _padded_dims(ndim, pad):
    """(axis, left, right) for each padded dim; pad lists the last dim first."""
    return [(ndim - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]


def _pad_nd(self, pad, mode):
    shape_rule("padding.pad_nd")("_pad_nd", (self, pad, mode))
    a = self._impl.array()
    for axis, left, right in _padded_dims(a.ndim, pad):
        a = np.take(a, source_index(a.shape[axis], left, right, mode), axis=axis)
    return out(np.ascontiguousarray(a), self._impl.dtype)


def _pad_nd_backward(grad_output, input_sizes, pad, mode):
    """grad_input[j] = sum of grad_output[i] over the positions i that read j."""
    shape_rule("padding.pad_nd_backward")(
        "_pad_nd_backward", (grad_output, input_sizes, pad, mode))
    g = grad_output._impl.array()
    for axis, left, right in _padded_dims(g.ndim, pad):
        size = input_sizes[axis]
        moved = np.moveaxis(g, axis, 0)
        acc = np.zeros((size,) + moved.shape[1:], g.dtype)
        np.add.at(acc, source_index(size, left, right, mode), moved)
        g = np.moveaxis(acc, 0, axis)
    return out(np.ascontiguousarray(g), grad_output._impl.dtype)
