"""Batching rule of scaled_dot_product_attention: the batch is one more leading dim.

The op takes any number of leading (batch, head...) dims on query, key, value and the
mask, which broadcast against each other as matmul's batch dims do. So each batched
tensor gets its batch dim in front and size-1 dims after it up to the highest rank of
the call (`pad_rank`), and one call serves the batch; unbatched tensors are left as they
are (they align from the right, below the batch dim).

    example:  query (N, heads, L, E)   key, value (N, heads, S, E)
    one call: query (B, N, heads, L, E) ...                       -> out (B, N, heads, L, Ev)

With dropout the draws must obey vmap's `randomness`: the rule hands the call to the
op's decomposition, whose dropout is batched like any random op.
"""
from __future__ import annotations

from tensorplay.func.batching_rules import (
    NeedsDecomposition, call, logical_rank, pad_rank, to_front,
)


def scaled_dot_product_attention_rule(op, args, bdims):
    if args[4]:     # dropout_p
        raise NeedsDecomposition(op.name)
    tensors = [i for i in range(4) if args[i] is not None]
    rank = max(logical_rank(args[i], bdims[i]) for i in tensors)
    new = list(args)
    for i in tensors:
        if bdims[i] is not None:
            new[i] = pad_rank(to_front(args[i], bdims[i]), rank)
    return call(op, *new), 0
