"""Batching rule of _linalg_svd and _linalg_eigh.

Both already run over any leading dims, so the batch is one more: linalg's
matrix_stack_rule (linalg_det uses it by name). What it cannot do is the vectors'
placeholder: with compute_uv / compute_v False, U and Vh (the eigenvectors) are one empty
tensor of shape [0] for the whole call, not one per matrix, so they come back unbatched.
"""
from __future__ import annotations

from tensorplay.func.batching_rules.linalg import matrix_stack_rule


def spectral_rule(op, args, bdims):
    outs, out_bdims = matrix_stack_rule(op, args, bdims)
    computed = args[2]      # compute_uv of _linalg_svd, compute_v of _linalg_eigh
    if computed:
        return outs, out_bdims
    return outs, tuple(None if o.dim() == 1 and o.shape[0] == 0 else d
                       for o, d in zip(outs, out_bdims))
