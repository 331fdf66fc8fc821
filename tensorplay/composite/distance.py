"""dropout, cosine_similarity and pairwise_distance, composed as PyTorch composes them;
threshold_backward for a backend without a kernel of its own."""
from __future__ import annotations

from tensorplay._creation import empty_like
from tensorplay._random_draws import iteration_axes
from tensorplay._frontdoor import wrap_dim, wrap_number
from tensorplay._generated import functional as F
from tensorplay._promotion import result_type2
from tensorplay.errors import ArgumentError
from tensorplay.meta import nn_layers as rules
from tensorplay.meta.nn_layers import check_probability
from tensorplay.meta.rules import broadcast


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
    # noise in memory order: draw into that order and permute back.
    axes = iteration_axes(input._impl.array())
    inverse = tuple(sorted(range(len(axes)), key=axes.__getitem__))
    noise = empty_like(input.permute(axes)).bernoulli_(1 - p, generator=generator)
    return input * noise.div_(1 - p).permute(inverse)


def _broadcast_pair(op, x1, x2):
    sizes = broadcast(op, [("x1", tuple(x1.shape)), ("x2", tuple(x2.shape))])
    return x1.expand(sizes), x2.expand(sizes)


def cosine_similarity(x1, x2, dim, eps):
    """sum((x1 / max(|x1|, eps)) * (x2 / max(|x2|, eps)), dim).

    NOTE: as in PyTorch, each norm is clamped at eps without the clamp being
    differentiated (the gradient is that of the unclamped norm); dividing each input by
    its own norm first keeps the result within [-1, 1].
    """
    op = "cosine_similarity"
    common = result_type2(x1, x2)
    # Integer inputs enter in the common dtype; floating ones keep their own, as in
    # PyTorch: a bfloat16 x1 is divided by its (bfloat16) norm before meeting x2.
    x1 = x1 if x1.dtype.is_floating_point else x1.to(common)
    x2 = x2 if x2.dtype.is_floating_point else x2.to(common)
    x1, x2 = _broadcast_pair(op, x1, x2)
    dim = wrap_dim(op, "dim", dim, x1.dim())
    # The norm op (PyTorch's linalg_vector_norm): it accumulates a half type in float32
    n1 = F.norm(x1, 2, [dim], True)
    n2 = F.norm(x2, 2, [dim], True)
    n1 = n1 + (F.maximum(n1, wrap_number(eps, n1)) - n1).detach()
    n2 = n2 + (F.maximum(n2, wrap_number(eps, n2)) - n2).detach()
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p, eps, keepdim):
    """norm(x1 - x2 + eps, p) along the last dim (eps keeps the norm's gradient finite),
    PyTorch's definition: the `norm` op, so its gradient rules (ties, NaN) too."""
    op = "pairwise_distance"
    if p < 0:
        raise ArgumentError(f"{op}(): argument 'p' must be non-negative, but got {p}", op=op,
                            arg="p")
    x1, x2 = _broadcast_pair(op, x1, x2)
    d = x1 - x2 + eps
    # F.norm, as PyTorch's pairwise_distance calls norm: its backward saves the result,
    # so an in-place change of the distance before backward raises alike.
    if d.dim() == 0:   # a 0-dim difference is a vector of one element
        return F.norm(d.unsqueeze(0), p, [0], False)
    return F.norm(d, p, [d.dim() - 1], keepdim)


def threshold_backward(grad_output, self, threshold):
    """grad_output where self > threshold (or is NaN), else 0, for a backend without a
    kernel of its own (the CPU kernel is cpu_kernels/nn_misc.py)."""
    spec = rules.threshold_backward("threshold_backward", (grad_output, self, threshold))
    return F.where(self <= threshold, 0, grad_output.to(spec.dtype))
