"""Batching rule of convolution: fold the batch into N (`fold_into_n`), or, with a
batched weight, into the channels as B groups."""
from __future__ import annotations

from tensorplay.func.batching_rules import (
    NeedsFallback, batch_size, call, fold_into_n, materialize,
)


def convolution_rule(op, args, bdims):
    x, weight, bias = args[0], args[1], args[2]
    if bdims[1] is None and bdims[2] is None:
        spatial = weight.dim() - 2
        folded, unfold = fold_into_n(x, bdims[0], spatial + 2)
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
