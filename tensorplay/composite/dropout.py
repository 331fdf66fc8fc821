"""dropout: native_dropout's output when training (and p > 0), the input otherwise."""
from __future__ import annotations

from tensorplay._creation import empty_like
from tensorplay._generated import functional as F
from tensorplay._random_draws import iteration_axes
from tensorplay.meta.dropout import check_probability


def dropout(input, p, train, generator):
    """The input itself when not training or when p is 0 (nothing to drop, nothing to
    copy); otherwise, as PyTorch's at::dropout:
        cpu:    input * noise,  noise = bernoulli_(1 - p) / (1 - p)   (p == 1: input * 0)
        others: native_dropout's output (the fused kernel)
    The CPU form draws and rounds as PyTorch does, so a seeded run drops the same
    elements and gives the same values."""
    check_probability("dropout", p)
    if not train or p == 0 or input.numel() == 0:
        return input
    if input.device.type != "cpu":
        return F.native_dropout(input, p, train, generator=generator)[0]
    if p == 1:
        return input * 0.0
    # empty_like keeps a dense input's layout in PyTorch, and bernoulli_ then visits the
    # noise in memory order: draw into that order and permute back (a row-major input's
    # order is its own: no permutes).
    axes = iteration_axes(input._impl.array())
    if axes == tuple(range(len(axes))):
        noise = empty_like(input).bernoulli_(1 - p, generator=generator)
        return input * noise.div_(1 - p)
    inverse = tuple(sorted(range(len(axes)), key=axes.__getitem__))
    noise = empty_like(input.permute(axes)).bernoulli_(1 - p, generator=generator)
    return input * noise.div_(1 - p).permute(inverse)
