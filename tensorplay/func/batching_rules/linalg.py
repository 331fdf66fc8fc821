"""Batching rules of linear algebra: the matmul family, outer, linear, addmm, diag, and
the ops on stacks of matrices (inv, slogdet, solve, cholesky).

The recurring trick (shared by conv.py, losses.py and `fold_rule`) is to *fold* the
batch into a dim the op already loops over:

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
from tensorplay.kernel_support.lapack import solve_is_vector
from tensorplay.func.batching_rules import (
    NeedsFallback, batch_size, call, check_inplace_target, logical_rank, materialize, pad_rank,
    pointwise_rule, to_front,
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


def outer_rule(op, args, bdims):
    a = args[0] if bdims[0] is None else to_front(args[0], bdims[0])
    b = args[1] if bdims[1] is None else to_front(args[1], bdims[1])
    return a.unsqueeze(-1) * b.unsqueeze(-2), 0


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


def diag_rule(op, args, bdims):
    """diag of a matrix is its diagonal; of a vector, a matrix (the loop)."""
    x = to_front(args[0], bdims[0])
    if x.dim() != 3:
        raise NeedsFallback(op.name)
    return x.diagonal(args[1], 1, 2).clone(), 0


# ---- ops on stacks of matrices --------------------------------------------------------------
def matrix_stack_rule(op, args, bdims):
    """inv, slogdet, solve, cholesky already run over any leading dims, so the batch is one
    more: every tensor argument gets it first (an unbatched one expanded, a view), and
    solve's vector-or-matrix rule reads the same ranks on both sides."""
    size = batch_size(args, bdims)
    physical = [materialize(a, d, size) if i in op.schema.tensor_positions else a
                for i, (a, d) in enumerate(zip(args, bdims))]
    out = call(op, *physical)
    if isinstance(out, tuple):
        return out, (0,) * len(out)
    return out, 0


def solve_rule(op, args, bdims):
    """linalg_solve(A, B, left): B's vector-or-matrix reading is decided on the logical
    shapes, a vector becomes a one-column matrix, and both get the same number of batch
    dims (size-1 dims after the vmap dim), so that their batch dims broadcast as the
    logical ones do."""
    (A, B, left), (a_bdim, b_bdim) = args, bdims[:2]
    vector = solve_is_vector(_logical_sizes(A, a_bdim), _logical_sizes(B, b_bdim))
    size = batch_size(args, bdims)
    A, B = materialize(A, a_bdim, size), materialize(B, b_bdim, size)
    if vector:
        B = B.unsqueeze(-1)
    rank = max(A.dim(), B.dim()) - 1     # (logical ranks: the vmap dim is first)
    out = call(op, pad_rank(A, rank), pad_rank(B, rank), left)
    return (out.squeeze(-1) if vector else out), 0


def _logical_sizes(x, bdim):
    sizes = tuple(x.shape)
    return sizes if bdim is None else sizes[:bdim] + sizes[bdim + 1:]
