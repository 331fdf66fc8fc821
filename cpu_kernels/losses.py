"""Loss kernels that need more than composition: nll_loss (a gather by class index,
forward and backward) and binary_cross_entropy_with_logits (a stable softplus).

The other losses are Composite (tensorplay/composite/nn_losses.py).
"""
from __future__ import annotations

import numpy as np

from tensorplay._promotion import result_type2
from tensorplay.errors import ArgumentError, DimError
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import out, out_like, tensor_key
from cpu_kernels._loops import loop
from tensorplay.dispatch.plan_cache import plans


def _class_axis_last(a):
    """(N, C, d1, ...) -> (N * d1 * ..., C); (C,) -> (1, C)."""
    if a.ndim == 1:
        return a.reshape(1, -1)
    if a.ndim == 2:
        return a
    # (the row count spelled out: with no classes, -1 would be ambiguous)
    return np.moveaxis(a, 1, -1).reshape(a.shape[0] * int(np.prod(a.shape[2:])), a.shape[1])


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


def _every_row_counts(rows, target, weight, ignore_index):
    """The target classes when `rows` (N, C) of float32/64 need none of _picked's care:
    no class weights, every target in [0, C) and none equal to ignore_index, so every
    row's weight is 1; None otherwise (_picked then handles the rest, and raises for a
    target out of range)."""
    t = target._impl.array()
    if weight is not None or rows.ndim != 2 or rows.dtype.itemsize < 4 or t.ndim != 1 \
            or t.dtype != np.int64 or not t.size:
        return None
    # One comparison for both bounds: a negative int64 read as uint64 is above any C.
    if t.view(np.uint64).max() >= rows.shape[1]:
        return None
    if 0 <= ignore_index < rows.shape[1] and (t == ignore_index).any():
        return None
    return t


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
    # (no classes at all: every target is ignored, nothing to read)
    picked = rows[np.arange(len(t)), t] if rows.shape[1] else np.zeros(len(t), rows.dtype)
    with np.errstate(invalid="ignore"):
        loss = np.where(valid, -picked.astype(acc) * w, np.zeros((), acc))
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
    if rows.shape[1]:           # (no classes: every target ignored, the gradient is empty)
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


def _checked(op, args):
    """The shape rule of the fused pair (its OutSpecs, its typed error for bad arguments),
    kept in the plan cache per signature: the rule reads only the tensors' sizes, dtypes
    and devices and the reduction's name, so a signature that passed once passes again;
    one that fails is not kept and raises on every call."""
    self, target, weight, reduction, ignore_index = args
    key = (op, tensor_key(self), tensor_key(target), tensor_key(weight), reduction)
    return plans.get("cpu.losses.cross_entropy.checked", key,
                     lambda: shape_rule("losses.cross_entropy_forward")(op, args))


@loop
def _softmax_rows(rows, target, probs, loss):
    """The training case of cross_entropy_forward (every row a class of weight 1), one
    row at a time while it is in the cache, in the logits' dtype: shifted = x - max(x)
    (NaN if x holds one), e = exp(shifted), loss[r] = log(sum(e)) - shifted[target[r]],
    probs[r] = e / sum(e). The NumPy form's steps, not its last bits: the sum here runs
    in order (NumPy's pairwise), and probs divides where NumPy multiplies by 1 / sum."""
    n, c = rows.shape
    for r in range(n):
        top = rows[r, 0]
        for j in range(1, c):
            v = rows[r, j]
            if v > top or v != v:
                top = v
        loss[r] = 0          # the sum of e, summed where the loss will be
        for j in range(c):
            e = np.exp(rows[r, j] - top)
            probs[r, j] = e
            loss[r] += e
        total = loss[r]
        loss[r] = np.log(total) - (rows[r, target[r]] - top)
        for j in range(c):
            probs[r, j] = probs[r, j] / total


def cross_entropy_forward(self, target, weight, reduction, ignore_index):
    """cross_entropy of (N, C) logits at class indices, fused: one max, one exp, one sum.

        for each row r:  shifted = x[r] - max(x[r]);  e = exp(shifted)
                         loss[r] = w[r] * (log(sum(e)) - shifted[target[r]])
                         probs[r] = e / sum(e)          (kept for the backward kernel)
    Returns (loss, probs, total_weight), reduced like nll_loss.
    """
    op = "_cross_entropy_forward"
    spec = _checked(op, (self, target, weight, reduction, ignore_index))
    acc = _compute_dtype(self)
    rows = self._impl.array()
    t = _every_row_counts(rows, target, weight, ignore_index)
    dtype = self._impl.dtype
    if t is not None and rows.dtype == acc and rows.shape[1]:
        # every row's weight is 1 (no masking, total = N), a float32/64 row: one loop
        e = np.empty(rows.shape, acc)
        loss = np.empty(len(t), acc)
        _softmax_rows(rows, t, e, loss)
        total = np.asarray(len(t), acc)
        return (out(_reduced(loss, total, reduction, acc).reshape(spec[0].sizes), dtype),
                out(e, dtype), out(total, dtype))
    every_row = t is not None
    if not every_row:
        rows, t, w, valid = _picked(op, self, target, weight, ignore_index)
    rows = rows.astype(acc, copy=False)
    # (the ufuncs' reduce, not np.max / np.sum: the same reductions without their Python
    # wrappers, about 2.5 us each, a quarter of this kernel at a batch of 32 rows)
    e = rows - np.maximum.reduce(rows, axis=1, keepdims=True)
    picked = e[np.arange(len(t)), t]
    np.exp(e, out=e)
    sums = np.add.reduce(e, axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        loss = np.log(sums[:, 0]) - picked
        if every_row:
            total = np.asarray(len(t), acc)
        else:
            loss = np.where(valid, loss * w, np.zeros((), acc))
            total = np.sum(w, dtype=acc)
    e *= 1 / sums
    loss = _reduced(loss, total, reduction, acc)
    return out(loss.reshape(spec[0].sizes), dtype), out(e, dtype), out(total, dtype)


def _reduced(loss, total, reduction, acc):
    """The rows' losses summed, or averaged over the total weight, or as they are."""
    if reduction != "none":
        loss = np.add.reduce(loss, dtype=acc)
        if reduction == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                loss = loss / total
    return np.asarray(loss)


def cross_entropy_backward(grad_output, probs, target, weight, reduction, ignore_index,
                           total_weight):
    """grad_input[r] = probs[r] * s[r] - onehot(target[r]) * s[r], s[r] = w[r] * g (g / total
    for 'mean'), in PyTorch's order (log_softmax's backward of nll_loss's gradient): an
    infinite s gives NaN at the target, as in PyTorch, where (probs - onehot) * s would not."""
    op = "_cross_entropy_backward"
    shape_rule("losses.cross_entropy_forward")(
        op, (probs, target, weight, reduction, ignore_index))
    p = probs._impl.array()
    t = _every_row_counts(p, target, weight, ignore_index)
    if t is not None:
        # The training case, every row a class of weight 1: probs * g - onehot * g in two
        # NumPy calls, g / N for 'mean' (total_weight is N).
        g = grad_output._impl.array()
        if reduction == "mean":
            g = g / total_weight._impl.array()
        scale = g.reshape(-1, 1) if reduction == "none" else g
        with np.errstate(invalid="ignore"):
            grad = p * scale
            grad[np.arange(len(t)), t] -= g
        return out(grad, probs._impl.dtype)
    p, t, w, valid = _picked(op, probs, target, weight, ignore_index)
    acc = _compute_dtype(probs)
    g = grad_output._impl.array().astype(acc).reshape(-1)
    if reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            g = g / total_weight._impl.array().astype(acc)
    # An ignored row's s is 0 even for a NaN/inf grad_output (PyTorch's nll_loss_backward
    # never writes it), not w * g = 0 * NaN; its gradient is then p * 0, NaN where the
    # row's logits held a NaN, as log_softmax's backward gives in PyTorch
    with np.errstate(invalid="ignore"):
        scale = np.where(valid, w * g, np.zeros((), acc))
        grad = p.astype(acc, copy=False) * scale[:, None]
        grad[np.arange(len(t)), t] -= scale
    return out(grad, probs._impl.dtype)


# ---- CTC loss ---------------------------------------------------------------------------
# Connectionist temporal classification (Graves et al. 2006), as PyTorch's LossCTC.cpp: the
# target l = (l1 .. lS) is extended with blanks, l' = (blank, l1, blank, l2, ..., lS,
# blank), 2S + 1 labels. alpha[t, s] = log P(the first t + 1 frames emit l'[:s + 1]):
#
#   alpha[0, 0] = lp[0, blank],  alpha[0, 1] = lp[0, l1]
#   alpha[t, s] = logsumexp(alpha[t-1, s], alpha[t-1, s-1], alpha[t-1, s-2] if l'[s] is
#                 not blank and differs from l'[s-2]) + lp[t, l'[s]]
#   nll = -logsumexp(alpha[L-1, 2S], alpha[L-1, 2S-1])
#
# beta is the same recursion run backwards from the last frame. Everything is in log
# space; one step of the recursion handles the whole batch and every s at once.
def _extended(targets, target_lengths, blank, width):
    """l' of each batch entry (N, width), blank past its 2S + 1 labels, and where the skip
    from s - 2 is allowed."""
    labels = np.full((len(targets), width), blank, np.int64)
    for n, target in enumerate(targets):
        labels[n, 1:2 * len(target):2] = target
    skip = np.zeros(labels.shape, bool)
    skip[:, 2:] = (labels[:, 2:] != blank) & (labels[:, 2:] != labels[:, :-2])
    return labels, skip


def _logsumexp3(a, b, c):
    m = np.maximum(np.maximum(a, b), c)
    safe = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(a - safe) + np.exp(b - safe) + np.exp(c - safe)) + safe


def _shift(x, k):
    """x moved k places to the right along the last dim, -inf filling in."""
    out = np.full_like(x, -np.inf)
    out[..., k:] = x[..., :-k] if k < x.shape[-1] else out[..., k:]
    return out


def ctc_targets(op, targets, target_lengths, classes):
    """Each batch entry's labels: rows of a padded 2-D targets, or slices of the 1-D
    concatenation. A label outside [0, classes) is refused (PyTorch's kernel reads past
    log_probs there: a float target of inf or NaN, cast to int64, gives one)."""
    t = targets.astype(np.int64, copy=False)
    if t.ndim == 2:
        labels = [t[n, :s] for n, s in enumerate(target_lengths)]
    else:
        ends = np.cumsum(target_lengths)
        labels = [t[e - s:e] for s, e in zip(target_lengths, ends)]
    for row in labels:
        bad = row[(row < 0) | (row >= classes)]
        if bad.size:
            raise ArgumentError(f"{op}(): argument 'targets' holds the label {int(bad[0])}, "
                                f"outside the {classes} classes of 'log_probs'", op=op,
                                arg="targets")
    return labels


def ctc_alpha(lp, targets, input_lengths, target_lengths, blank):
    """(nll (N,), log_alpha (N, T, 2S + 1)); log_alpha is -inf where no path reaches."""
    T, N, C = lp.shape
    width = 2 * max(target_lengths, default=0) + 1
    labels, skip = _extended(targets, target_lengths, blank, width)
    L = np.asarray(input_lengths)
    valid = np.arange(width)[None, :] < 2 * np.asarray(target_lengths)[:, None] + 1
    rows = np.arange(N)[:, None]
    alpha = np.full((N, T, width), -np.inf, lp.dtype)
    if T:
        first = np.full((N, width), -np.inf, lp.dtype)
        first[:, 0] = lp[0, :, blank]
        first[:, 1:2] = np.where(valid[:, 1:2], lp[0, rows, labels[:, 1:2]], -np.inf)
        alpha[:, 0] = np.where((L > 0)[:, None], first, -np.inf)
    for t in range(1, T):
        prev = alpha[:, t - 1]
        step = _logsumexp3(prev, _shift(prev, 1), np.where(skip, _shift(prev, 2), -np.inf))
        step = step + lp[t, rows, labels]
        alpha[:, t] = np.where(valid & (t < L)[:, None], step, -np.inf)
    last = alpha[np.arange(N), np.maximum(L - 1, 0)]
    end = 2 * np.asarray(target_lengths)
    a = last[np.arange(N), end]
    b = np.where(end > 0, last[np.arange(N), np.maximum(end - 1, 0)], -np.inf)
    with np.errstate(divide="ignore"):
        nll = -np.logaddexp(a, b)
    return nll, alpha


def ctc_grad(grad, lp, targets, input_lengths, target_lengths, nll, alpha, blank,
             zero_infinity):
    """PyTorch's ctc_loss_backward: d loss / d lp[t, n, c] = (exp(lp[t, n, c]) -
    exp(log(sum over s with l'[s] = c of alpha[t, s] * beta[t, s]) + nll - lp[t, n, c]))
    * grad[n] for t < L; the exp(lp) term is the gradient through a log_softmax taken for
    granted (PyTorch's convention: log_probs is meant to be log_softmax's output)."""
    T, N, C = lp.shape
    width = alpha.shape[-1]
    labels, skip = _extended(targets, target_lengths, blank, width)
    L = np.asarray(input_lengths)
    S = np.asarray(target_lengths)
    valid = np.arange(width)[None, :] < 2 * S[:, None] + 1
    rows = np.arange(N)[:, None]
    skip_back = np.zeros_like(skip)
    skip_back[:, :-2] = skip[:, 2:]          # from s + 2: l'[s + 2] differs from l'[s]
    beta = np.full((N, T, width), -np.inf, lp.dtype)
    emit = None
    for t in range(T - 1, -1, -1):
        emit = np.where(valid, lp[t, rows, labels], -np.inf)
        start = np.full((N, width), -np.inf, lp.dtype)
        start[rows[:, 0], 2 * S] = emit[rows[:, 0], 2 * S]
        has = S > 0
        start[rows[has, 0], 2 * S[has] - 1] = emit[rows[has, 0], 2 * S[has] - 1]
        if t + 1 < T:
            nxt = beta[:, t + 1]
            step = _logsumexp3(nxt, _shift_left(nxt, 1),
                               np.where(skip_back, _shift_left(nxt, 2), -np.inf)) + emit
        else:
            step = start
        at_end = (t == L - 1)[:, None]
        inside = (t < L - 1)[:, None] & valid
        beta[:, t] = np.where(at_end, start, np.where(inside, step, -np.inf))
    ab = alpha + beta                                    # (N, T, width)
    top = ab.max(axis=2, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    sums = np.zeros((N, T, C), lp.dtype)
    idx_n = np.arange(N)[:, None, None]
    idx_t = np.arange(T)[None, :, None]
    np.add.at(sums, (idx_n, idx_t, np.broadcast_to(labels[:, None, :], ab.shape)),
              np.exp(ab - top))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        lcab = np.log(sums) + top                       # (N, T, C)
        lpn = np.transpose(lp, (1, 0, 2))
        g = (np.exp(lpn) - np.exp(lcab + nll[:, None, None] - lpn)) * \
            np.asarray(grad).reshape(-1)[:, None, None]
    g = np.where((np.arange(T)[None, :] < L[:, None])[:, :, None], g, 0)
    if zero_infinity:
        g = np.where(np.isinf(nll)[:, None, None], 0, g)
    return np.transpose(g, (1, 0, 2))


def _shift_left(x, k):
    out = np.full_like(x, -np.inf)
    if k < x.shape[-1]:
        out[..., :-k] = x[..., k:]
    return out


def _ctc_lists(log_probs, targets):
    lp = log_probs._impl.array()
    return lp, targets._impl.array()


def _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0,
              zero_infinity=False):
    """(neg_log_likelihood (N,), log_alpha (N, T, 2S + 1)) of each batch entry."""
    op = "_ctc_loss"
    shape_rule("losses.ctc_loss")(op, (log_probs, targets, input_lengths, target_lengths,
                                       blank, zero_infinity))
    lp, tg = _ctc_lists(log_probs, targets)
    labels = ctc_targets(op, tg, target_lengths, lp.shape[2])
    nll, alpha = ctc_alpha(lp, labels, input_lengths,
                           target_lengths, blank)
    dtype = log_probs._impl.dtype
    return out(nll, dtype), out(alpha, dtype)


def _ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths,
                       neg_log_likelihood, log_alpha, blank, zero_infinity=False):
    op = "_ctc_loss_backward"
    spec = shape_rule("losses.ctc_loss_backward")(
        op, (grad, log_probs, targets, input_lengths, target_lengths, neg_log_likelihood,
             log_alpha, blank, zero_infinity))
    lp, tg = _ctc_lists(log_probs, targets)
    labels = ctc_targets(op, tg, target_lengths, lp.shape[2])
    g = ctc_grad(grad._impl.array(), lp, labels, input_lengths,
                 target_lengths, neg_log_likelihood._impl.array(), log_alpha._impl.array(),
                 blank, zero_infinity)
    return out(g, spec.dtype)
