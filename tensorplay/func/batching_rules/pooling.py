"""Batching rule of max_unpool3d: values and indices are both batched (or one is
materialized), so the batch folds into N of both, as fold_rule folds a single input."""
from __future__ import annotations

from tensorplay.func.batching_rules import batch_size, call, materialize


def max_unpool3d_rule(op, args, bdims):
    """(B, [N,] C, d, h, w) values and indices as (B * N, C, d, h, w): the indices are
    positions within each (C) volume, so folding B into N keeps their meaning."""
    size = batch_size(args, bdims)
    x = materialize(args[0], bdims[0], size)
    indices = materialize(args[1], bdims[1], size)
    lead = tuple(x.shape[:-4])                     # (B,) or (B, N)
    folded = (-1,) + tuple(x.shape[-4:])
    out = call(op, x.reshape(folded), indices.reshape(folded), *args[2:])
    return out.reshape(lead + tuple(out.shape[1:])), 0
