"""Batching rule of msort (sort, topk, kthvalue... share `dim_rule`)."""
from __future__ import annotations

from tensorplay.func.batching_rules import to_front


def msort_rule(op, args, bdims):
    """msort sorts along dim 0, which is dim 1 once the batch dim is first."""
    x = to_front(args[0], bdims[0])
    if x.dim() == 1:
        return x.clone(), 0
    return x.sort(1)[0], 0
