"""Helpers shared by the distributions, as torch.distributions.utils has them: broadcasting
parameters, converting between probabilities and logits, and a cached property. (The
special functions they need are ops: tp.lgamma, tp.digamma, tp.erfinv, tp.mvlgamma.)"""
from __future__ import annotations

import numbers
from functools import update_wrapper

import tensorplay as tp


def euler_constant():
    return 0.57721566490153286060


def _is_tensor(x):
    return isinstance(x, tp.Tensor)


def broadcast_all(*values):
    """Turn numbers into tensors and broadcast everything to one shape (PyTorch's
    `broadcast_all`): numbers take the dtype of the first tensor, else the default."""
    if not all(_is_tensor(v) or isinstance(v, numbers.Number) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(_is_tensor(v) for v in values):
        dtype = tp.get_default_dtype()
        for v in values:
            if _is_tensor(v):
                dtype = v.dtype
                break
        values = [v if _is_tensor(v) else tp.tensor(v, dtype=dtype) for v in values]
    return tp.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return tp.randn(*shape, dtype=dtype, device=device) if len(shape) else \
        tp.randn((), dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sum out the `dim` rightmost dimensions of `value`."""
    if dim == 0:
        return value
    return value.reshape(*value.shape[:-dim], -1).sum(-1)


def clamp_probs(probs):
    """Keep probabilities inside (0, 1) by the dtype's eps (PyTorch's clamp)."""
    eps = tp.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return tp.sigmoid(logits)
    return tp.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary=False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return tp.log(ps_clamped) - tp.log1p(-ps_clamped)
    return tp.log(ps_clamped)


class lazy_property:
    """Computed on first access, then stored on the instance (so `probs` and `logits`
    can each be derived from the other only when asked for)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with tp.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """Seen on the class, a lazy_property looks like a property (for docs and checks)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    n = mat.shape[-1]
    rows, cols = tp.tril_indices(n, n, offset=diag)
    return mat[..., rows, cols]


# ---- the special functions the distributions use: ops of family `special` -----------
