"""Batching rules of QR and least squares. geqrf runs over any leading dims, so it uses
linalg's matrix_stack_rule; linalg_qr too, but its mode 'r' gives an unbatched empty Q;
lstsq broadcasts A's and B's batch dims and reads B as a vector by the shapes, so its
rule is solve_rule's idea (linalg.py)."""
from __future__ import annotations

from tensorplay.func.batching_rules import batch_size, call, materialize, pad_rank
from tensorplay.kernel_support.lapack_qr import lstsq_is_vector


def lstsq_rule(op, args, bdims):
    """linalg_lstsq(A, B, rcond, driver): B's vector-or-matrix reading is decided on the
    logical ranks, a vector becomes a one-column matrix, and both get the same number of
    batch dims (size-1 dims after the vmap dim) so that they broadcast as the logical ones
    do. Outputs without the batch (an empty residuals, rank or singular_values, shape
    (0,)) stay unbatched."""
    (A, B, rcond, driver), (a_bdim, b_bdim) = args, bdims[:2]
    vector = lstsq_is_vector(_logical_sizes(A, a_bdim), _logical_sizes(B, b_bdim))
    size = batch_size(args, bdims)
    A, B = materialize(A, a_bdim, size), materialize(B, b_bdim, size)
    if vector:
        B = B.unsqueeze(-1)
    rank = max(A.dim(), B.dim()) - 1     # (logical ranks: the vmap dim is first)
    solution, residuals, matrix_rank, sv = call(op, pad_rank(A, rank), pad_rank(B, rank),
                                                rcond, driver)
    if vector:
        solution = solution.squeeze(-1)
    outs = (solution, residuals, matrix_rank, sv)
    # an output the driver leaves empty is (0,) whatever the batch: not batched
    return outs, tuple(None if o.dim() == 1 and o.shape[0] == 0 and i > 0 else 0
                       for i, o in enumerate(outs))


def _logical_sizes(x, bdim):
    sizes = tuple(x.shape)
    return sizes if bdim is None else sizes[:bdim] + sizes[bdim + 1:]


def linalg_qr_rule(op, args, bdims):
    """linalg_qr runs over any leading dims: the batch is one more. With mode 'r' Q is an
    empty (0,) whatever the batch: not batched."""
    A, mode = args
    Q, R = call(op, materialize(A, bdims[0], batch_size(args, bdims)), mode)
    return (Q, R), (None if mode == "r" else 0, 0)
