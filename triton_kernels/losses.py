"""The loss kernels on the `cuda` device: cross-entropy forward and backward, nll_loss
(+ backward), binary_cross_entropy_with_logits. One program per row, as softmax.py's
kernels (whose online max-and-sum pass the cross-entropy kernels share). CTC loss runs
on a host copy (a logged fallback, at the end)."""
from __future__ import annotations

import logging

import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay._device_transfer import from_host, to_host
from tensorplay.errors import DimError
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from cpu_kernels import losses as cpu_losses
from triton_kernels import _math
from triton_kernels._indexing import copy_of
from triton_kernels._launch import launch, new_tensor, operands, pointer
from triton_kernels.pointwise import run, run_expression
from triton_kernels import _rows
from triton_kernels.softmax import acc_dtype


def row_block(n):
    """(BLOCK, num_warps) for one row of n classes per program: the whole row when it
    fits in MAX_ONE_PASS, else blocks of LOOP_BLOCK walked twice."""
    block = _rows.pow2(n)
    block = block if block <= _rows.MAX_ONE_PASS else _rows.LOOP_BLOCK
    return block, _rows.num_warps_for(block)


@triton.jit
def row_max_and_sum(
    row_ptr,  # one row of N elements, contiguous
    N,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """(max(x), sum(exp(x - max(x)))) of a row walked in blocks, in one read: an online
    max and sum that rescales the running sum whenever the max grows (a row of -inf
    gives (-inf, 0))."""
    cols = tl.arange(0, BLOCK)
    m = tl.zeros([BLOCK], ACC) + float("-inf")
    s = tl.zeros([BLOCK], ACC)
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        x = _math.convert(tl.load(row_ptr + start + cols, mask=mask, other=float("-inf")), ACC)
        # NaN propagates (Triton's default maximum drops it): a row holding a NaN has a
        # NaN sum, so a NaN loss and NaN probabilities, as in PyTorch
        m_new = tl.maximum(m, x, propagate_nan=tl.PropagateNan.ALL)
        s = s * tl.exp(m - m_new) + tl.where(x == float("-inf"), 0.0, tl.exp(x - m_new))
        s = tl.where(m_new == float("-inf"), 0.0, s)
        m = m_new
    row_max = tl.max(m, axis=0)
    return row_max, tl.sum(s * tl.exp(m - row_max), axis=0)


@triton.jit
def cross_entropy_kernel(
    x_ptr, target_ptr, weight_ptr,  # logits [rows, C] contiguous, targets [rows], weight [C]
    loss_ptr, probs_ptr, row_weight_ptr,  # per-row loss and weight, probs [rows, C]
    C, ignore_index,
    HAS_W: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Per row: m = max(x), s = sum(exp(x - m)); loss = w * (log(s) - (x[t] - m));
    # probs = exp(x - m) / s, kept for the backward kernel.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    base = x_ptr + row * C
    t = tl.load(target_ptr + row)
    valid = t != ignore_index
    t_safe = tl.where(valid, t, 0)
    w = tl.where(valid, 1.0, 0.0)
    if HAS_W:
        w = w * _math.convert(tl.load(weight_ptr + t_safe), ACC)
    row_max, total = row_max_and_sum(base, C, ACC, BLOCK)
    picked = _math.convert(tl.load(base + t_safe), ACC)
    # NOTE: where, not just w = 0: an ignored row's picked value may be -inf (0 * inf = nan).
    tl.store(loss_ptr + row, tl.where(valid, w * (tl.log(total) - (picked - row_max)), 0.0))
    tl.store(row_weight_ptr + row, w)
    for start in range(0, C, BLOCK):
        mask = start + cols < C
        x = _math.convert(tl.load(base + start + cols, mask=mask), ACC)
        p = tl.exp(x - row_max) / total
        tl.store(probs_ptr + row * C + start + cols,
                 _math.convert(p, probs_ptr.dtype.element_ty), mask=mask)


@triton.jit
def cross_entropy_backward_kernel(
    probs_ptr, target_ptr, weight_ptr, grad_ptr, total_ptr,  # grad_output: scalar or [rows]
    out_ptr,  # [rows, C]: probs * w * g - onehot(target) * w * g   (nll_loss: probs = 0)
    C, ignore_index, grad_stride,  # grad_stride 0: one grad_output for every row
    HAS_PROBS: tl.constexpr, HAS_W: tl.constexpr, MEAN: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    t = tl.load(target_ptr + row).to(tl.int64)
    valid = t != ignore_index
    t_safe = tl.where(valid, t, 0)
    w = tl.where(valid, 1.0, 0.0)
    if HAS_W:
        w = w * _math.convert(tl.load(weight_ptr + t_safe), ACC)
    g = _math.convert(tl.load(grad_ptr + row * grad_stride), ACC)
    if MEAN:
        g = g / _math.convert(tl.load(total_ptr), ACC)
    # an ignored row's s is 0 even for a NaN/inf grad_output (nll_loss never writes it)
    scale = tl.where(valid, w * g, 0.0)
    for start in range(0, C, BLOCK):
        mask = start + cols < C
        picked = tl.where(start + cols == t_safe, scale, 0.0)
        if HAS_PROBS:
            # PyTorch's order (log_softmax's backward of nll_loss's): p * s - s at the
            # target, so an infinite s gives NaN there as in PyTorch, p * s elsewhere
            p = _math.convert(tl.load(probs_ptr + row * C + start + cols, mask=mask), ACC)
            # (an ignored row: p * 0, NaN where its logits held a NaN, as in PyTorch)
            r = p * scale - picked
        else:
            r = tl.where(valid, -picked, 0.0)     # 0, not -0
        tl.store(out_ptr + row * C + start + cols, _math.convert(r, out_ptr.dtype.element_ty),
                 mask=mask)


@triton.jit
def nll_kernel(
    x_ptr, target_ptr, weight_ptr,  # log-probabilities [R, C] contiguous, targets [R], [C]
    loss_ptr, row_weight_ptr,  # [R]: -w * x[r, target[r]], and w
    R, C, ignore_index,
    HAS_W: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = rows < R
    t = tl.load(target_ptr + rows, mask=mask, other=0).to(tl.int64)
    valid = (t != ignore_index) & mask
    t_safe = tl.where(valid, t, 0)
    w = tl.where(valid, 1.0, 0.0)
    if HAS_W:
        w = w * _math.convert(tl.load(weight_ptr + t_safe, mask=valid, other=0.0), ACC)
    picked = _math.convert(tl.load(x_ptr + rows.to(tl.int64) * C + t_safe, mask=mask,
                                   other=0.0), ACC)
    tl.store(loss_ptr + rows, tl.where(valid, -picked * w, 0.0), mask=mask)
    tl.store(row_weight_ptr + rows, w, mask=mask)


# ---- cross entropy -------------------------------------------------------------------------
def _check_targets(op, target, classes, ignore_index):
    """Class indices must lie in [0, C) (or be ignore_index): checked on the device, the
    bad value fetched only for the message. An index past C would read out of bounds."""
    if not target._impl.numel():
        return
    valid = call_below_autograd("ne.Scalar", target, ignore_index)
    below = call_below_autograd("lt.Scalar", target, 0)
    above = call_below_autograd("ge.Scalar", target, classes)
    bad = call_below_autograd("logical_and", valid,
                              call_below_autograd("logical_or", below, above))
    if call_below_autograd("any", bad).item():
        host = target.cpu().numpy().reshape(-1)
        value = host[(host != ignore_index) & ((host < 0) | (host >= classes))][0]
        raise DimError(f"{op}(): Target {value} is out of bounds: argument 'target' must hold "
                       f"class indices in [0, {classes - 1}] (or ignore_index={ignore_index})",
                       op=op, arg="target")


def _reduce_losses(losses, row_weight, reduction, dtype):
    """(loss, total weight) from the per-row losses and weights the kernels wrote, in
    `dtype`: the rows themselves ("none"), their sum, or their weighted mean."""
    total = call_below_autograd("sum", row_weight, None)
    if reduction == "none":
        loss = losses
    else:
        loss = call_below_autograd("sum", losses, None)
        if reduction == "mean":
            loss = call_below_autograd("div.Tensor", loss, total)
    return loss.to(dtype), total.to(dtype)


def cross_entropy_forward(self, target, weight, reduction, ignore_index):
    """(loss, probs, total_weight) for (N, C) logits at class indices, in one row kernel;
    the reduction over rows is the reduction kernel."""
    op = "_cross_entropy_forward"
    specs = shape_rule("losses.cross_entropy_forward")(
        op, (self, target, weight, reduction, ignore_index))
    device, (x, t, w) = operands(op, self=self, target=target, weight=weight)
    rows_n, classes = x._impl.sizes
    _check_targets(op, t, classes, ignore_index)
    x = x if x.is_contiguous() else x.contiguous()
    t = t.contiguous()
    probs = new_tensor(x._impl.sizes, x._impl.dtype, device)
    acc = dt.float64 if x._impl.dtype is dt.float64 else dt.float32
    losses = new_tensor((rows_n,), acc, device)
    row_weight = new_tensor((rows_n,), acc, device)
    if rows_n:
        block, warps = row_block(classes)
        launch(op, cross_entropy_kernel, (rows_n,), pointer(x), pointer(t),
               pointer(w if w is not None else x), pointer(losses), pointer(probs),
               pointer(row_weight), classes, ignore_index, HAS_W=w is not None,
               ACC=acc_dtype(acc), BLOCK=block, num_warps=warps)
    loss, total = _reduce_losses(losses, row_weight, reduction, self._impl.dtype)
    return loss.view(specs[0].sizes), probs, total.view(specs[2].sizes)


def cross_entropy_backward(grad_output, probs, target, weight, reduction, ignore_index,
                           total_weight):
    """grad_input[r] = (probs[r] - onehot(target[r])) * w[r] * g (g / total for 'mean')."""
    op = "_cross_entropy_backward"
    shape_rule("losses.cross_entropy_backward")(
        op, (grad_output, probs, target, weight, reduction, ignore_index, total_weight))
    device, (g, p, t, w, total) = operands(op, grad_output=grad_output, probs=probs,
                                           target=target, weight=weight,
                                           total_weight=total_weight)
    rows_n, classes = p._impl.sizes
    p = p if p.is_contiguous() else p.contiguous()
    t = t.contiguous()
    g = g.contiguous()
    out = new_tensor(p._impl.sizes, p._impl.dtype, device)
    if rows_n and classes:
        block, warps = row_block(classes)
        launch(op, cross_entropy_backward_kernel, (rows_n,), pointer(p), pointer(t),
               pointer(w if w is not None else p), pointer(g), pointer(total), pointer(out),
               classes, ignore_index, 1 if g._impl.numel() > 1 else 0, HAS_PROBS=True,
               HAS_W=w is not None, MEAN=reduction == "mean", ACC=acc_dtype(p._impl.dtype),
               BLOCK=block, num_warps=warps)
    return out


def _class_rows(x):
    """(N, C, d1, ...) -> rows (N * d1 * ..., C) with the class dim last; (C,) -> (1, C)."""
    sizes = x._impl.sizes
    if len(sizes) == 1:
        return x.reshape([1, sizes[0]])
    if len(sizes) > 2:
        x = x.permute([0] + list(range(2, len(sizes))) + [1])
    return x.reshape([-1, sizes[1]])


def nll_loss_forward(self, target, weight, reduction, ignore_index):
    """(loss, total_weight): loss[r] = -w[r] * self[r, target[r]] (one gather per row),
    reduced by the reduction kernel; 'mean' divides the sum by total_weight = sum(w)."""
    op = "nll_loss_forward"
    spec, total_spec = shape_rule("losses.nll_loss_forward")(
        op, (self, target, weight, reduction, ignore_index))
    device, (x, t, w) = operands(op, self=self, target=target, weight=weight)
    rows = _class_rows(x).contiguous()
    classes = rows._impl.sizes[1]
    t = t.reshape([-1]).contiguous()
    _check_targets(op, t, classes, ignore_index)
    acc = dt.float64 if x._impl.dtype is dt.float64 else dt.float32
    losses = new_tensor((rows._impl.sizes[0],), acc, device)
    row_weight = new_tensor((rows._impl.sizes[0],), acc, device)
    if rows._impl.sizes[0]:
        block = min(triton.next_power_of_2(rows._impl.sizes[0]), 1024)
        launch(op, nll_kernel, (triton.cdiv(rows._impl.sizes[0], block),), pointer(rows),
               pointer(t), pointer(w if w is not None else rows), pointer(losses),
               pointer(row_weight), rows._impl.sizes[0], classes, ignore_index,
               HAS_W=w is not None, ACC=acc_dtype(acc), BLOCK=block)
    loss, total = _reduce_losses(losses, row_weight, reduction, self._impl.dtype)
    return loss.view(spec.sizes), total.view(total_spec.sizes)


def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index,
                      total_weight):
    """grad_input[r, target[r]] = -w[r] * g (g / total_weight for 'mean'), 0 elsewhere."""
    op = "nll_loss_backward"
    shape_rule("losses.nll_loss_backward")(
        op, (grad_output, self, target, weight, reduction, ignore_index, total_weight))
    device, (g, x, t, w, total) = operands(op, grad_output=grad_output, self=self,
                                           target=target, weight=weight,
                                           total_weight=total_weight)
    sizes = x._impl.sizes
    classes = sizes[0] if len(sizes) == 1 else sizes[1]
    moved = [sizes[0]] + list(sizes[2:]) + [classes] if len(sizes) > 2 else [-1, classes]
    rows_n = x._impl.numel() // classes if classes else 0
    t = t.reshape([-1]).contiguous()
    g = g.reshape([-1]).contiguous()
    grad_rows = new_tensor((rows_n, classes), x._impl.dtype, device)
    if rows_n and classes:
        block, warps = row_block(classes)
        launch(op, cross_entropy_backward_kernel, (rows_n,), pointer(grad_rows), pointer(t),
               pointer(w if w is not None else grad_rows), pointer(g), pointer(total),
               pointer(grad_rows), classes, ignore_index, 1 if g._impl.numel() > 1 else 0,
               HAS_PROBS=False, HAS_W=w is not None, MEAN=reduction == "mean",
               ACC=acc_dtype(x._impl.dtype), BLOCK=block, num_warps=warps)
    if len(sizes) <= 2:
        return grad_rows.view(sizes)
    back = [0, len(sizes) - 1] + list(range(1, len(sizes) - 1))
    out = new_tensor(sizes, x._impl.dtype, device)
    return run("copy", out, (grad_rows.view(moved).permute(back),), x._impl.dtype)


# ---- binary cross-entropy with logits ------------------------------------------------------
def binary_cross_entropy_with_logits(self, target, weight, pos_weight, reduction):
    """loss = (1 - y) * x + (1 + (pos_weight - 1) * y) * softplus(-x), times weight: one
    pointwise kernel into float32 (softplus never overflows), then the reduction kernel."""
    op = "binary_cross_entropy_with_logits"
    shape_rule("losses.bce_with_logits")(op, (self, target, weight, pos_weight, reduction))
    device, (x, y, w, pw) = operands(op, self=self, target=target, weight=weight,
                                     pos_weight=pos_weight)
    acc = dt.float64 if x._impl.dtype is dt.float64 else dt.float32
    loss = new_tensor(x._impl.sizes, acc, device)
    if pw is None:
        run_expression("bce_logits", "(1.0 - y) * x + _math.softplus(-x)", loss, (x, y), acc,
                       {})
    else:
        run_expression("bce_logits_pos", "(1.0 - y) * x + (1.0 + (z - 1.0) * y) * "
                       "_math.softplus(-x)", loss, (x, y, pw), acc, {})
    if w is not None:
        loss = call_below_autograd("mul.Tensor", loss, w.to(acc))
    if reduction == "sum":
        loss = call_below_autograd("sum", loss, None)
    elif reduction == "mean":
        loss = call_below_autograd("mean", loss, None)
    return loss.to(self._impl.dtype)


# ---- CTC loss: on a host copy --------------------------------------------------------------
# The recursion runs frame by frame over the whole batch (a loop of T small steps), so no
# Triton kernel yet: the operands go to the host, cpu_kernels/losses.py's NumPy routines
# run there and the results come back. The `tensorplay.dispatch` logger says it each call.
def _on_host(op, *tensors):
    """The tensors' elements as host arrays (contiguous copies first)."""
    logging.getLogger("tensorplay.dispatch").info(
        "%s on cuda: no Triton kernel, NumPy on a host copy", op)
    return [to_host(copy_of(t)) for t in tensors]


def _ctc_loss_on_host(log_probs, targets, input_lengths, target_lengths, blank=0,
                      zero_infinity=False):
    op = "_ctc_loss"
    shape_rule("losses.ctc_loss")(op, (log_probs, targets, input_lengths, target_lengths,
                                       blank, zero_infinity))
    lp, tg = _on_host(op, log_probs, targets)
    labels = cpu_losses.ctc_targets(op, tg, target_lengths, lp.shape[2])
    nll, alpha = cpu_losses.ctc_alpha(lp, labels,
                                      input_lengths, target_lengths, blank)
    dtype, device = log_probs._impl.dtype, log_probs._impl.device
    return from_host(nll, dtype, device), from_host(alpha, dtype, device)


def _ctc_loss_backward_on_host(grad, log_probs, targets, input_lengths, target_lengths,
                               neg_log_likelihood, log_alpha, blank, zero_infinity=False):
    op = "_ctc_loss_backward"
    spec = shape_rule("losses.ctc_loss_backward")(
        op, (grad, log_probs, targets, input_lengths, target_lengths, neg_log_likelihood,
             log_alpha, blank, zero_infinity))
    g, lp, tg, nll, alpha = _on_host(op, grad, log_probs, targets, neg_log_likelihood,
                                     log_alpha)
    labels = cpu_losses.ctc_targets(op, tg, target_lengths, lp.shape[2])
    result = cpu_losses.ctc_grad(g, lp, labels,
                                 input_lengths, target_lengths, nll, alpha, blank,
                                 zero_infinity)
    return from_host(result, spec.dtype, log_probs._impl.device)
