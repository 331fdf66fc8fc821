"""Batching rules of the matmul family, convolution and pooling, norms and losses.

The recurring trick is to *fold* the batch into a dim the op already loops over:

    linear(x, W, b), x batched       linear(x', W, b): linear maps the last dim of any
                                     number of leading dims, so B is one more of them
    mm(a, W), a batched [B, n, k]    mm(a'.reshape(B*n, k), W).view(B, n, m)
    conv2d(x, w), x [B, N, C, H, W]  conv2d(x'.reshape(B*N, C, H, W), w).view(B, N, ...)
    nll_loss(x, t), per example      nll_loss(x' as [B*N, C], t' as [B*N], "none"), then
                                     each example's own mean/sum over its N rows

and when a weight is batched too, to call the broadcasting `matmul` with the batch
dim first.
"""
from __future__ import annotations

from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.func.batched import VmapError
from tensorplay.func.batching_rules import (
    NeedsFallback, batch_size, batching_rule, call, check_inplace_target, logical_rank,
    materialize, pad_rank, pointwise_rule, to_front,
)

_matmul = dispatcher.find("matmul")


def _prod(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


# ---- the matmul family -----------------------------------------------------------------------
def batched_matmul(a, a_bdim, b, b_bdim):
    """matmul of two logical tensors (either may be unbatched): physical result, batch dim 0.

    1-d operands follow matmul's rule (a vector is a row on the left, a column on the
    right, and that dim is dropped from the result); the batched operand gets size-1
    dims after its batch dim so that it broadcasts against the other's batch dims.
    """
    ra, rb = logical_rank(a, a_bdim), logical_rank(b, b_bdim)
    if a_bdim is not None:
        a = to_front(a, a_bdim)
    if b_bdim is not None:
        b = to_front(b, b_bdim)
    if a_bdim is not None and b_bdim is None and ra >= 2 and rb == 2:
        # The common `activations @ weight`: one matrix product over all the rows.
        rows = a.reshape((_prod(a.shape[:-1]), a.shape[-1]))
        out = call(dispatcher.find("mm"), rows, b)
        return out.view(tuple(a.shape[:-1]) + (b.shape[-1],))
    # With the batch dim first, unsqueeze(-2)/(-1) never moves it.
    if ra == 1:
        a = a.unsqueeze(-2)
    if rb == 1:
        b = b.unsqueeze(-1)
    rank = max(ra, rb, 2)
    if a_bdim is not None:
        a = pad_rank(a, rank)
    if b_bdim is not None:
        b = pad_rank(b, rank)
    out = call(_matmul, a, b)
    if ra == 1:
        out = out.squeeze(-2)
    if rb == 1:
        out = out.squeeze(-1)
    return out


@batching_rule("matmul", "mm", "bmm", "mv", "dot", "inner")
def matmul_rule(op, args, bdims):
    if op.name == "inner" and min(logical_rank(args[0], bdims[0]),
                                  logical_rank(args[1], bdims[1])) == 0:
        return pointwise_rule(dispatcher.find("mul.Tensor"), args, bdims)
    a, b = args[0], args[1]
    if op.name == "inner":
        # inner(a, b) contracts the last dims of both: a @ b^T over the last two.
        b_t = to_front(b, bdims[1]) if bdims[1] is not None else b
        if logical_rank(b, bdims[1]) >= 2:
            b_t = b_t.transpose(-1, -2)
        return batched_matmul(a, bdims[0], b_t, 0 if bdims[1] is not None else None), 0
    return batched_matmul(a, bdims[0], b, bdims[1]), 0


@batching_rule("outer")
def outer_rule(op, args, bdims):
    a = args[0] if bdims[0] is None else to_front(args[0], bdims[0])
    b = args[1] if bdims[1] is None else to_front(args[1], bdims[1])
    return a.unsqueeze(-1) * b.unsqueeze(-2), 0


@batching_rule("linear")
def linear_rule(op, args, bdims):
    x, w, bias = args
    if bdims[1] is None and (bdims[2] is None or bias is None):
        # Only the input is batched: B is one more leading dim for linear.
        if logical_rank(x, bdims[0]) == 0:
            raise NeedsFallback(op.name)
        return call(op, to_front(x, bdims[0]), w, bias), 0
    w_t = to_front(w, bdims[1]).transpose(-1, -2) if bdims[1] is not None else w.t()
    out = batched_matmul(x, bdims[0], w_t, 0 if bdims[1] is not None else None)
    if bias is not None:
        out_rank = out.dim() - 1
        if bdims[2] is not None:
            out = out + pad_rank(to_front(bias, bdims[2]), out_rank)
        else:
            out = out + bias
    return out, 0


@batching_rule("addmm", "addmv", "baddbmm", "addmm_", "addmv_", "baddbmm_")
def addmm_rule(op, args, bdims):
    """beta * self + alpha * (mat1 @ mat2), batched piece by piece."""
    self_, m1, m2, beta, alpha = args
    check_inplace_target(op, args, bdims)
    if op.name == "addmm" and bdims[0] is None and bdims[2] is None and \
            logical_rank(m1, bdims[1]) == 2:
        # A linear layer's addmm(bias, x, W^T): one addmm over B*n rows.
        m1 = to_front(m1, bdims[1])
        rows = m1.reshape((-1, m1.shape[-1]))
        out = call(op, self_, rows, m2, beta, alpha)
        return out.view((m1.shape[0], m1.shape[1], out.shape[-1])), 0
    prod = batched_matmul(m1, bdims[1], m2, bdims[2])
    if m1.dim() == 1 or (bdims[1] is None and bdims[2] is None):
        prod_bdim = None
    else:
        prod_bdim = 0
    mul = dispatcher.find("mul.Scalar")
    if alpha != 1:
        prod = call(mul, prod, alpha)
    if op.name.endswith("_"):
        target = to_front(self_, bdims[0])
        if beta != 1:
            target.mul_(beta)
        target.add_(pad_rank(prod, target.dim() - 1) if prod_bdim is not None else prod)
        return target, 0
    if beta == 0:
        return prod, prod_bdim
    scaled = call(mul, self_, beta) if beta != 1 else self_
    return pointwise_rule(dispatcher.find("add.Tensor"), (scaled, prod, 1),
                          (bdims[0], prod_bdim, None))


# ---- convolution and pooling: fold the batch into N ------------------------------------------
def _fold(x, bdim, full_rank):
    """(x as [B*N, ...], unfold) for an input of `full_rank` dims with a batch dim N, or
    (x', identity) when the example has no N (the batch dim takes its place)."""
    x = to_front(x, bdim)
    if x.dim() - 1 == full_rank:
        size, n = x.shape[0], x.shape[1]
        folded = x.reshape((size * n,) + tuple(x.shape[2:]))
        return folded, lambda out: out.view((size, n) + tuple(out.shape[1:]))
    return x, lambda out: out


@batching_rule("max_pool2d_with_indices", "avg_pool2d", "adaptive_avg_pool2d",
               "adaptive_max_pool2d", "upsample_nearest2d", "upsample_bilinear2d",
               "pixel_shuffle", "pixel_unshuffle", "im2col", "col2im", "_pad_nd",
               "constant_pad_nd", "pad")
def fold_rule(op, args, bdims):
    if any(d is not None for d in bdims[1:]):
        raise NeedsFallback(op.name)
    full = 3 if op.name == "col2im" else 4      # col2im: (N, C * kernel, L)
    if op.name in ("_pad_nd", "constant_pad_nd", "pad"):
        if op.name == "constant_pad_nd" or args[2] == "constant":
            # Constant padding touches the last len(pad)/2 dims of any tensor: B is one
            # more leading dim.
            return call(op, to_front(args[0], bdims[0]), *args[1:]), 0
        # Reflect/replicate/circular padding wants (N, C, *spatial) or (C, *spatial).
        full = len(args[1]) // 2 + 2
    x, unfold = _fold(args[0], bdims[0], full)
    out = call(op, x, *args[1:])
    if isinstance(out, tuple):
        return tuple(unfold(o) for o in out), (0,) * len(out)
    return unfold(out), 0


@batching_rule("convolution")
def convolution_rule(op, args, bdims):
    x, weight, bias = args[0], args[1], args[2]
    if bdims[1] is None and bdims[2] is None:
        spatial = weight.dim() - 2
        folded, unfold = _fold(x, bdims[0], spatial + 2)
        return unfold(call(op, folded, weight, bias, *args[3:])), 0
    # A batched weight: B groups of channels. x as [N, B*C, ...], weight as [B*O, C/g, ...].
    if args[6]:   # transposed
        raise NeedsFallback(op.name)
    size = batch_size(args, bdims)
    groups = args[8]
    spatial = weight.dim() - (1 if bdims[1] is None else 2) - 1
    x = materialize(x, bdims[0], size)
    unbatched_n = x.dim() - 1 == spatial + 1
    if unbatched_n:
        x = x.unsqueeze(1)
    n, channels = x.shape[1], x.shape[2]
    x = x.movedim(0, 1).reshape((n, size * channels) + tuple(x.shape[3:]))
    w = materialize(weight, bdims[1], size)
    w = w.reshape((size * w.shape[1],) + tuple(w.shape[2:]))
    b = None
    if bias is not None:
        b = materialize(bias, bdims[2], size)
        b = b.reshape((size * b.shape[1],))
    out = call(op, x, w, b, *args[3:8], groups * size)
    out = out.view((n, size, out.shape[1] // size) + tuple(out.shape[2:]))
    if unbatched_n:
        return out.squeeze(0), 0
    return out, 1


# ---- norms -----------------------------------------------------------------------------------
@batching_rule("layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm")
def layer_norm_rule(op, args, bdims):
    """Normalising over the last dims: B is one more leading dim. A batched weight or bias
    is applied after normalising without them."""
    x = materialize(args[0], bdims[0], batch_size(args, bdims))
    if all(d is None for d in bdims[1:]):
        out = call(op, x, *args[1:])
        return out, (0,) * len(out) if isinstance(out, tuple) else 0
    weight_pos = 2
    has_bias = op.name in ("layer_norm", "native_layer_norm")
    plain = list(args)
    plain[0] = x
    plain[weight_pos] = None
    if has_bias:
        plain[3] = None
    out = call(op, *plain)
    stats = ()
    if isinstance(out, tuple):          # native_layer_norm / _fused_rms_norm: (out, stats...)
        out, stats = out[0], tuple(out[1:])
    if args[weight_pos] is not None:
        out, _ = pointwise_rule(dispatcher.find("mul.Tensor"), (out, args[weight_pos]),
                                (0, bdims[weight_pos]))
    if has_bias and args[3] is not None:
        out, _ = pointwise_rule(dispatcher.find("add.Tensor"), (out, args[3], 1),
                                (0, bdims[3], None))
    if stats:
        return (out,) + stats, (0,) * (1 + len(stats))
    return out, 0


@batching_rule("native_batch_norm")
def batch_norm_rule(op, args, bdims):
    """Batch norm mixes the rows of an example, so it runs per example (the fallback);
    but running statistics that are not batched cannot take one update per example."""
    x, weight, bias, running_mean, running_var, training = args[:6]
    for k, name in ((3, "running_mean"), (4, "running_var")):
        if training and args[k] is not None and bdims[k] is None:
            raise VmapError(
                f"vmap: batch_norm got a batched tensor as input while the {name}, which "
                f"will be updated in place, was not batched. Use track_running_stats=False "
                f"or give the module one running statistic per example",
                op="native_batch_norm", arg=name)
    raise NeedsFallback(op.name)


# ---- losses ----------------------------------------------------------------------------------
def _per_example_reduce(losses, reduction, op_name):
    """[B, ...] per-element losses to each example's own 'mean' / 'sum' / 'none'."""
    if reduction == "none" or losses.dim() == 1:
        return losses
    dims = list(range(1, losses.dim()))
    if reduction == "sum":
        return losses.sum(dims)
    if reduction == "mean":
        return losses.mean(dims)
    raise NeedsFallback(op_name)


@batching_rule("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
               "binary_cross_entropy_with_logits", "kl_div")
def elementwise_loss_rule(op, args, bdims):
    """Per-element losses: 'none' on the broadcast batch, then each example's reduction."""
    names = op.schema.arg_names
    r = names.index("reduction")
    reduction = args[r]
    size = batch_size(args, bdims)
    tensors = [i for i in op.schema.tensor_positions if args[i] is not None]
    rank = max(logical_rank(args[i], bdims[i]) for i in tensors)
    shape = None
    new = list(args)
    for i in tensors:
        t = pad_rank(materialize(args[i], bdims[i], size), rank)
        new[i] = t
        shape = t.shape if shape is None or t.dim() > len(shape) else shape
    # The losses want equal shapes: expand every tensor to the broadcast shape.
    full = [size] + [max(new[i].shape[k] for i in tensors) for k in range(1, rank + 1)]
    for i in tensors:
        new[i] = new[i].expand(full)
    new[r] = "none"
    losses = call(op, *new)
    if reduction == "batchmean":        # kl_div: the sum over the example / its size(0)
        per = losses.reshape((size, -1)).sum(1)
        return per / (full[1] if rank > 0 else 1), 0
    return _per_example_reduce(losses, reduction, op.name), 0


def _class_rows(x, x_bdim, t, t_bdim, size):
    """Input [N, C] (or [C]) and class targets [N] (or []) per example, as [B*N, C] and
    [B*N] rows, and N. Other layouts (K-dim losses) are not folded."""
    x = materialize(x, x_bdim, size)
    t = materialize(t, t_bdim, size)
    if x.dim() == 2:
        x, t = x.unsqueeze(1), t.unsqueeze(1)
    if x.dim() != 3 or t.dim() not in (2, 3):
        raise NeedsFallback("class-index loss of more than two dims")
    n = x.shape[1]
    rows_t = t.reshape((size * n,) + tuple(t.shape[2:]))
    return x.reshape((size * n, x.shape[2])), rows_t, n


def _nll_mean_weights(target, weight, ignore_index, size, n):
    """Each example's mean denominator: the summed weight of its non-ignored targets."""
    keep = target != ignore_index
    if weight is None:
        return keep.reshape((size, n)).sum(1)
    safe = target.masked_fill(~keep, 0)
    return (weight.index_select(0, safe) * keep).reshape((size, n)).sum(1)


@batching_rule("nll_loss", "cross_entropy_loss")
def class_loss_rule(op, args, bdims):
    x, target, weight, reduction, ignore_index = args[:5]
    if bdims[2] is not None:
        raise NeedsFallback(op.name)
    size = batch_size(args, bdims)
    probabilities = target.dtype.is_floating_point
    if op.name == "cross_entropy_loss" and (probabilities or
                                            (args[5] and weight is not None)):
        raise NeedsFallback(op.name)
    rows, rows_t, n = _class_rows(x, bdims[0], target, bdims[1], size)
    losses = call(op, rows, rows_t, weight, "none", ignore_index, *args[5:])
    losses = losses.reshape((size, n))
    if reduction == "none":
        return (losses.squeeze(1) if x.dim() - (bdims[0] is not None) == 1 else losses), 0
    if reduction == "sum":
        return losses.sum(1), 0
    total = _nll_mean_weights(rows_t, weight, ignore_index, size, n)
    return losses.sum(1) / total.to(losses.dtype), 0


@batching_rule("native_group_norm")
def group_norm_rule(op, args, bdims):
    """Group norm normalises each sample on its own: the batch folds into N."""
    if bdims[1] is not None or bdims[2] is not None:
        raise NeedsFallback(op.name)
    x = to_front(args[0], bdims[0])
    size, n = x.shape[0], args[3]
    folded = x.reshape((size * n,) + tuple(x.shape[2:]))
    outs = call(op, folded, args[1], args[2], size * n, *args[4:])
    return tuple(o.view((size, n) + tuple(o.shape[1:])) for o in outs), (0, 0, 0)


# ---- einsum: one more letter for the batch ------------------------------------------------
@batching_rule("einsum")
def einsum_rule(op, args, bdims):
    """`ij,jk->ik` with the first operand batched becomes `Zij,jk->Zik` (Z unused)."""
    equation, tensors = args
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if not arrow:
        # Implicit output: the letters used once, in order, after any ellipsis.
        letters = [c for c in lhs if c.isalpha()]
        rhs = ("..." if "..." in lhs else "") + \
            "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    free = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba"
                if c not in equation)
    new_terms, new_tensors = [], []
    for term, t, d in zip(terms, tensors, bdims[1]):
        if d is None:
            new_terms.append(term)
            new_tensors.append(t)
        else:
            new_terms.append(free + term)
            new_tensors.append(to_front(t, d))
    return call(op, f"{','.join(new_terms)}->{free}{rhs}", new_tensors), 0
