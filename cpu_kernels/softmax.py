"""Softmax and log-softmax along one dim, and their backward kernels.

Both subtract the maximum along `dim` before exponentiating, so no exp overflows
(softmax([1e4, 0]) is [1, 0], not nan); a slice that is all -inf gives nan, as in
PyTorch. The half types compute in float32 and round once.
"""
from __future__ import annotations

import numpy as np

from tensorplay.kernel_support.checks import wrap_dim
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import out


def _prepare(op, self, dim, half_to_float):
    """(float array to compute in, axis, output dtype)."""
    spec = shape_rule("softmax.softmax")(op, (self, dim, half_to_float))
    a = self._impl.array()
    if a.dtype.itemsize == 2:
        a = a.astype(np.float32)
    # A 0-dim tensor is one slice of one element.
    axis = wrap_dim(op, dim, a.ndim) if a.ndim else -1
    return a.reshape(a.shape or (1,)), axis, spec.dtype


def _shifted(a, axis):
    """a - max(a, axis): the largest entry of each slice becomes 0."""
    with np.errstate(invalid="ignore"):   # an all -inf slice: -inf - -inf is nan, as in torch
        return a - np.max(a, axis=axis, keepdims=True)


def softmax(self, dim, half_to_float):
    """Stable softmax.

        for each slice s along dim:  e = exp(s - max(s));  out = e / sum(e)
    """
    a, axis, dtype = _prepare("_softmax", self, dim, half_to_float)
    if a.size == 0:
        return out(np.empty(self._impl.sizes, a.dtype), dtype)
    e = _shifted(a, axis)
    np.exp(e, out=e)
    e *= 1 / np.sum(e, axis=axis, keepdims=True)
    return out(e.reshape(self._impl.sizes), dtype)


def log_softmax(self, dim, half_to_float):
    """Stable log-softmax: (s - max) - log(sum(exp(s - max))), never log(softmax)."""
    a, axis, dtype = _prepare("_log_softmax", self, dim, half_to_float)
    if a.size == 0:
        return out(np.empty(self._impl.sizes, a.dtype), dtype)
    shifted = _shifted(a, axis)
    lse = np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    shifted -= lse
    return out(shifted.reshape(self._impl.sizes), dtype)


def _backward_arrays(op, grad_output, output, dim, input_dtype):
    """(grad, forward output, axis) as float arrays; 0-dim becomes one element."""
    shape_rule("softmax.softmax_backward")(op, (grad_output, output, dim, input_dtype))
    g, o = grad_output._impl.array(), output._impl.array()
    if o.dtype.itemsize == 2 or g.dtype != o.dtype:
        g, o = g.astype(np.float32), o.astype(np.float32)
    axis = wrap_dim(op, dim, o.ndim) if o.ndim else -1
    return g.reshape(g.shape or (1,)), o.reshape(o.shape or (1,)), axis


def softmax_backward_data(grad_output, probs, dim, input_dtype):
    """grad_input = probs * (grad - sum(grad * probs, dim))."""
    g, o, axis = _backward_arrays("_softmax_backward_data", grad_output, probs, dim,
                                  input_dtype)
    go = g * o
    go -= o * np.sum(go, axis=axis, keepdims=True)
    return out(go.reshape(probs._impl.sizes), input_dtype)


def log_softmax_backward_data(grad_output, log_probs, dim, input_dtype):
    """grad_input = grad - exp(log_probs) * sum(grad, dim)."""
    g, o, axis = _backward_arrays("_log_softmax_backward_data", grad_output, log_probs, dim,
                                  input_dtype)
    r = np.exp(o)
    r *= np.sum(g, axis=axis, keepdims=True)
    np.subtract(g, r, out=r)
    return out(r.reshape(log_probs._impl.sizes), input_dtype)

