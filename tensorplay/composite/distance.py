"""dropout, cosine_similarity and pairwise_distance, composed as PyTorch composes them;
threshold_backward for a backend without a kernel of its own."""
from __future__ import annotations

import math

from tensorplay._frontdoor import wrap_dim, wrap_number
from tensorplay._generated import functional as F
from tensorplay._promotion import result_type2
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from tensorplay.kernel_support.checks import broadcast


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
    if common.is_complex:
        arg, bad = ("x1", x1) if x1.dtype.is_complex else ("x2", x2)
        raise DTypeError(f"{op}(): expected a floating point common dtype, but it is "
                         f"{common.name} (argument '{arg}' is {bad.dtype.name})", op=op,
                         arg=arg)
    # Integer inputs enter in the common dtype; floating ones keep their own, as in
    # PyTorch: a bfloat16 x1 is divided by its (bfloat16) norm before meeting x2.
    x1 = x1 if x1.dtype.is_floating_point else x1.to(common)
    x2 = x2 if x2.dtype.is_floating_point else x2.to(common)
    x1, x2 = _broadcast_pair(op, x1, x2)
    dim = wrap_dim(op, "dim", dim, x1.dim())
    # The norm op (PyTorch's linalg_vector_norm): it accumulates a half type in float32
    n1 = F.norm(x1, 2, [dim], True)
    n2 = F.norm(x2, 2, [dim], True)
    n1, n2 = _at_least(n1, eps), _at_least(n2, eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def _at_least(n, eps):
    """Norm n clamped at eps from below, the clamp not differentiated (PyTorch clamps in
    place under no_grad): n plus the detached rise (eps - n) where n < eps, plus nothing
    elsewhere, so an overflowed norm stays inf (inf + (inf - inf) would be nan; x / inf
    is 0, as in PyTorch)."""
    rise = F.masked_fill(wrap_number(eps, n) - n.detach(), ~(n.detach() < eps), 0)
    return n + rise


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


def cdist(x1, x2, p, compute_mode):
    """out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p over broadcast batch dims.

    NOTE: computed from the differences, which is exact; PyTorch's default switches to
    a matrix product for p=2 above 25 rows, faster but less accurate. NaN follows
    PyTorch's cdist kernel, not norm(): p=0 sums min(ceil(|d|), 1), so a NaN gives NaN;
    p=inf keeps a running max from 0 that a NaN never replaces (all NaN gives 0). The
    gradient is derivatives.yaml's cdist_backward."""
    op = "cdist"
    if x1.dim() < 2 or x2.dim() < 2:
        which, t = ("x1", x1) if x1.dim() < 2 else ("x2", x2)
        raise ShapeError(f"cdist(): only supports at least 2D tensors, {which.upper()} got: "
                         f"{t.dim()}D (argument '{which}')", op=op, arg=which)
    if x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"cdist(): X1 and X2 must have the same number of columns. X1: "
                         f"{x1.shape[-1]} X2: {x2.shape[-1]} (argument 'x2')", op=op, arg="x2")
    if p < 0:
        raise ArgumentError(f"cdist(): only supports non-negative p values, but got {p}",
                            op=op, arg="p")
    if not x1.is_floating_point() or not x2.is_floating_point():
        raise DTypeError(f"cdist(): only supports floating-point dtypes, X1 got: "
                         f"{x1.dtype.name}, X2 got: {x2.dtype.name}", op=op, arg="x1")
    if x1.dtype != x2.dtype:
        raise DTypeError(f"cdist(): expected x1 and x2 of one dtype, but got "
                         f"{x1.dtype.name} and {x2.dtype.name} (argument 'x2')", op=op,
                         arg="x2")
    d = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if d.shape[-1] == 0:
        return F.sum(d, [-1])       # no coordinates: every distance is 0
    if p == 0:
        return F.sum(F.clamp_max(F.ceil(F.abs(d)), 1), [-1])
    if math.isinf(p):
        a = F.abs(d)
        return F.clamp_min(F.amax(F.where(F.isnan(a), 0, a), [-1]), 0)
    return F.norm(d, p, [-1], False)


def dist(self, other, p):
    """The p-norm of self - other (broadcast), over all elements (real for complex
    numbers: the norm of |self - other|)."""
    # the difference's dtype (an integer operand is promoted by the subtraction, as in
    # PyTorch: dist(uint8, float64) is float64) must be floating point or complex
    common = result_type2(self, other)
    if not common.is_differentiable:
        raise DTypeError(f"dist(): input dtype should be floating point or complex, but got "
                         f"{self.dtype.name} and {other.dtype.name} (argument 'self')",
                         op="dist", arg="self")
    return F.norm(self - other, p)
