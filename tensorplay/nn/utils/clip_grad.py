"""Gradient clipping: `clip_grad_norm_`, `clip_grad_value_` and `get_total_norm`.

clip_grad_norm_ treats all gradients as one long vector: its norm is the norm of the
per-tensor norms (true for every p-norm and for inf), and every gradient is scaled by
min(1, max_norm / (total_norm + 1e-6)). The scale stays a 0-d tensor, as in PyTorch, so
there is no host round trip on a device and a nan/inf norm propagates into the gradients
unless error_if_nonfinite asks for an error instead.
"""
from __future__ import annotations

import math
import types
import warnings

import tensorplay as tp
from tensorplay._tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _as_list(tensors):
    if isinstance(tensors, Tensor):
        return [tensors]
    return list(tensors)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the given tensors as if they were concatenated into one vector.

    `foreach` is accepted for PyTorch compatibility; the per-tensor norms are one op each
    either way."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return tp.tensor(0.0)
    norms = [tp.norm(t, norm_type) for t in tensors]
    total_norm = tp.norm(tp.stack(norms), norm_type)
    if error_if_nonfinite and not math.isfinite(total_norm.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm anyway, "
                           "set `error_if_nonfinite=False`")
    return total_norm


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of `parameters` by min(1, max_norm / (total_norm + 1e-6))."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    with tp.no_grad():
        clip_coef = tp.clamp(max_norm / (total_norm + 1e-6), max=1.0)
        for g in grads:
            g.mul_(clip_coef.to(dtype=g.dtype, device=g.device))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Clip the gradients of `parameters` (a tensor or an iterable of them) in place so that
    their total norm is at most `max_norm`; returns the total norm before clipping.

    norm_type may be any p (float('inf') for the max-abs norm)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will "
                          "occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    with tp.no_grad():
        total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    """Deprecated spelling of `clip_grad_norm_` (PyTorch keeps it with a warning)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient of `parameters` into [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with tp.no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
