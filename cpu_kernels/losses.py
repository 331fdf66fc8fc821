"""Loss kernels that need more than composition: nll_loss (a gather by class index,
forward and backward) and binary_cross_entropy_with_logits (a stable softplus).

The other losses are Composite (tensorplay/composite/nn_losses.py).
"""
from __future__ import annotations

import numpy as np

from tensorplay._promotion import result_type2
from tensorplay.errors import DimError
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import out, out_like


def _class_axis_last(a):
    """(N, C, d1, ...) -> (N * d1 * ..., C); (C,) -> (1, C)."""
    if a.ndim == 1:
        return a.reshape(1, -1)
    if a.ndim == 2:
        return a
    return np.moveaxis(a, 1, -1).reshape(-1, a.shape[1])


def _picked(op, self, target, weight, ignore_index):
    """Flattened rows of `self`, the selected class of each row (0 where ignored), each
    row's weight (0 where ignored) and which rows are not ignored. (The caller's shape
    rule checked the dtypes.)

        for each row r:  w[r] = weight[target[r]] if target[r] != ignore_index else 0

    NOTE: callers mask ignored rows with `valid` (np.where), not only by multiplying with
    w = 0: an ignored row may hold -inf or nan, and 0 * inf is nan (torch skips the row).
    """
    a = self._impl.array()
    rows = _class_axis_last(a)
    classes = rows.shape[1]
    t = target._impl.array().reshape(-1).astype(np.int64)
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= classes))
    if bad.any():
        raise DimError(f"{op}(): Target {t[bad][0]} is out of bounds: argument 'target' "
                       f"must hold class indices in [0, {classes - 1}] (or ignore_index="
                       f"{ignore_index})", op=op, arg="target")
    t = np.where(valid, t, 0)
    w = valid.astype(rows.dtype)
    if weight is not None:
        # where, not valid * weight[t]: an ignored row reads class 0's weight, and an
        # infinite one would make its w (and the total weight) 0 * inf = NaN
        w = np.where(valid, weight._impl.array().astype(rows.dtype)[t], w)
    return rows, t, w, valid


def _compute_dtype(self):
    return np.float32 if self._impl.dtype.itemsize == 2 else self._impl.dtype.np


def nll_loss_forward(self, target, weight, reduction, ignore_index):
    """loss[r] = -w[r] * self[r, target[r]]; 'mean' divides the sum by sum(w).

    Returns (loss, total_weight), total_weight = sum(w) for every reduction (PyTorch
    leaves it 0 for a batched 'none'); the backward kernel needs it for 'mean'.
    """
    spec, _ = shape_rule("losses.nll_loss_forward")(
        "nll_loss_forward", (self, target, weight, reduction, ignore_index))
    rows, t, w, valid = _picked("nll_loss_forward", self, target, weight, ignore_index)
    acc = _compute_dtype(self)
    with np.errstate(invalid="ignore"):
        loss = np.where(valid, -rows[np.arange(len(t)), t].astype(acc) * w, np.zeros((), acc))
    dtype = self._impl.dtype
    total = np.sum(w, dtype=acc)
    if reduction == "none":
        return out(loss.reshape(spec.sizes), dtype), out(total, dtype)
    s = np.sum(loss, dtype=acc)
    if reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):   # all ignored: 0/0 = nan
            s = s / total
    return out(s, dtype), out(total, dtype)


def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index,
                      total_weight):
    """grad_input[r, target[r]] = -w[r] * g (g / total_weight for 'mean'), 0 elsewhere."""
    shape_rule("losses.nll_loss_backward")(
        "nll_loss_backward", (grad_output, self, target, weight, reduction, ignore_index,
                              total_weight))
    rows, t, w, valid = _picked("nll_loss_backward", self, target, weight, ignore_index)
    acc = _compute_dtype(self)
    g = grad_output._impl.array().astype(acc).reshape(-1)
    if reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            g = g / total_weight._impl.array().astype(acc)
    grad = np.zeros(rows.shape, acc)
    with np.errstate(invalid="ignore"):
        grad[np.arange(len(t)), t] = np.where(valid, -w * g, np.zeros((), acc))
    a = self._impl.array()
    if a.ndim > 1:   # back from (rows, C) to (N, C, d1, ...)
        moved = (a.shape[0],) + a.shape[2:] + (a.shape[1],)
        grad = np.moveaxis(grad.reshape(moved), -1, 1)
    return out(grad.reshape(a.shape), self._impl.dtype)


def binary_cross_entropy_with_logits(self, target, weight, pos_weight, reduction):
    """loss = (1 - y) * x + (1 + (pos_weight - 1) * y) * softplus(-x), times weight.

    softplus(-x) = log(1 + exp(-x)) is computed as logaddexp(0, -x), which neither
    overflows for x << 0 nor rounds to 0 for x >> 0.
    """
    spec = shape_rule("losses.bce_with_logits")(
        "binary_cross_entropy_with_logits", (self, target, weight, pos_weight, reduction))
    acc = np.result_type(_compute_dtype(self), _compute_dtype(target))
    x = self._impl.array().astype(acc)
    y = target._impl.array().astype(acc)
    # NOTE: PyTorch rounds log_sigmoid(x) (times the pos_weight factor) to x's dtype and
    # the loss to target's: with a half type on either side, rounding there too gives its
    # numbers.
    to_self = _rounder(self._impl.dtype.np, acc)
    to_target = _rounder(target._impl.dtype.np, acc)
    softplus_neg = to_self(np.logaddexp(np.zeros((), acc), -x))
    if pos_weight is not None:
        pw = pos_weight._impl.array().astype(acc)
        to_pw = _rounder(pos_weight._impl.dtype.np, acc)
        to_log_weight = _rounder(result_type2(pos_weight, target).np, acc)
        log_weight = to_log_weight(to_log_weight(to_pw(pw - 1) * y) + 1)
        softplus_neg = to_self(log_weight * softplus_neg)
    loss = to_target(to_target(to_target(1 - y) * x) + softplus_neg)
    if weight is not None:
        loss = to_target(loss * weight._impl.array().astype(acc))
    loss = np.broadcast_to(loss, x.shape)
    if reduction == "sum":
        loss = np.sum(loss, dtype=acc)
    elif reduction == "mean":
        with np.errstate(invalid="ignore"):
            loss = np.mean(loss, dtype=acc) if loss.size else np.array(np.nan, acc)
    else:
        # Laid out like target: PyTorch's loss starts as (1 - target) and is updated in place.
        return out_like(np.array(loss), spec.dtype, target)
    return out(np.array(loss), spec.dtype)


def _rounder(dtype, acc):
    """A function rounding an `acc` array to `dtype` and back (identity when `dtype` is
    not narrower than `acc`)."""
    if np.dtype(dtype).itemsize >= np.dtype(acc).itemsize:
        return lambda a: a
    return lambda a: np.asarray(a).astype(dtype).astype(acc)


def cross_entropy_forward(self, target, weight, reduction, ignore_index):
    """cross_entropy of (N, C) logits at class indices, fused: one max, one exp, one sum.

        for each row r:  shifted = x[r] - max(x[r]);  e = exp(shifted)
                         loss[r] = w[r] * (log(sum(e)) - shifted[target[r]])
                         probs[r] = e / sum(e)          (kept for the backward kernel)
    Returns (loss, probs, total_weight), reduced like nll_loss.
    """
    op = "_cross_entropy_forward"
    spec = shape_rule("losses.cross_entropy_forward")(
        op, (self, target, weight, reduction, ignore_index))
    rows, t, w, valid = _picked(op, self, target, weight, ignore_index)
    acc = _compute_dtype(self)
    rows = rows.astype(acc, copy=False)
    e = rows - np.max(rows, axis=1, keepdims=True)
    picked = e[np.arange(len(t)), t]
    np.exp(e, out=e)
    sums = np.sum(e, axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        loss = np.where(valid, (np.log(sums[:, 0]) - picked) * w, np.zeros((), acc))
    e *= 1 / sums
    total = np.sum(w, dtype=acc)
    if reduction != "none":
        loss = np.sum(loss, dtype=acc)
        if reduction == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                loss = loss / total
    dtype = self._impl.dtype
    return out(np.asarray(loss).reshape(spec[0].sizes), dtype), out(e, dtype), out(total, dtype)


def cross_entropy_backward(grad_output, probs, target, weight, reduction, ignore_index,
                           total_weight):
    """grad_input[r] = (probs[r] - onehot(target[r])) * w[r] * g (g / total for 'mean')."""
    op = "_cross_entropy_backward"
    shape_rule("losses.cross_entropy_forward")(
        op, (probs, target, weight, reduction, ignore_index))
    p, t, w, valid = _picked(op, probs, target, weight, ignore_index)
    acc = _compute_dtype(probs)
    g = grad_output._impl.array().astype(acc).reshape(-1)
    if reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            g = g / total_weight._impl.array().astype(acc)
    # An ignored row's gradient is 0 even for a NaN/inf grad_output (PyTorch's
    # nll_loss_backward never writes it), not w * g = 0 * NaN
    with np.errstate(invalid="ignore"):
        scale = np.where(valid, w * g, np.zeros((), acc))
    grad = p.astype(acc, copy=False) * scale[:, None]
    grad[np.arange(len(t)), t] -= scale
    return out(grad, probs._impl.dtype)
