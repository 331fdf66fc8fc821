"""Backward helpers for the reduction family's linear algebra (linear, einsum, diag,
diagonal), written with TensorPlay ops so they can be differentiated again."""
from __future__ import annotations

import math
import string

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.core import sum_to
from tensorplay.meta.reduction_linalg import parse_einsum


def linear_weight_backward(grad, input):  # noqa: A002 - the schema's name
    """d weight = sum over the batch of grad^T input: flatten the batch dims, one mm."""
    out_features, in_features = grad.shape[-1], input.shape[-1]
    return grad.reshape([-1, out_features]).t().mm(input.reshape([-1, in_features]))


def einsum_backward(grad, equation, tensors):
    """The gradient of operand i is itself an einsum: the output's gradient contracted with
    every other operand, written to operand i's subscripts.

        'ij,jk->ik':  d A = einsum('ik,jk->ij', grad, B),  d B = einsum('ik,ij->jk', grad, A)

    Two cases need help, both solved with constant operands:
    - a letter only operand i has ('ij->i' sums j away): a ones vector brings it back;
    - a letter repeated in operand i ('ii->i', a diagonal): the repeat is renamed and an
      identity matrix puts the gradient on the diagonal.
    Broadcast (size-1) dims of operand i are summed back with sum_to."""
    spec = parse_einsum("einsum", equation, [tuple(t.shape) for t in tensors])
    unused = [c for c in string.ascii_letters if c not in spec.sizes]
    grads = []
    for i, t in enumerate(tensors):
        if not t.requires_grad:
            grads.append(None)
            continue
        subs = [spec.output] + [s for j, s in enumerate(spec.inputs) if j != i]
        # in the output's dtype: operands of mixed dtypes were promoted by the forward
        operands = [grad] + [x.to(grad.dtype) for j, x in enumerate(tensors) if j != i]
        target = ""
        fresh = iter(unused)
        for c in spec.inputs[i]:
            if c in target:   # a repeat: a new letter, tied to c by an identity matrix
                f = next(fresh)
                n = spec.sizes[c]
                subs.append(c + f)
                operands.append(_creation.eye(n, dtype=grad.dtype, device=grad.device))
                c = f
            target += c
        for c in dict.fromkeys(target):
            if not any(c in s for s in subs):
                subs.append(c)
                operands.append(_creation.ones(spec.sizes[c], dtype=grad.dtype,
                                               device=grad.device))
        g = F.einsum(",".join(subs) + "->" + target, operands)
        grads.append(sum_to(g, tuple(t.shape)).to(t.dtype))
    return grads


def diag_backward(grad, sizes, diagonal):
    """diag of a vector: the gradient's diagonal; diag of a matrix: the gradient placed
    on the matrix's diagonal."""
    if len(sizes) == 1:
        return grad.diagonal(diagonal)
    return diagonal_backward(grad, sizes, diagonal, 0, 1)


def diagonal_backward(grad, sizes, offset, dim1, dim2):
    out = _creation.zeros(sizes, dtype=grad.dtype, device=grad.device)
    out.diagonal(offset, dim1, dim2).copy_(grad)
    return out


def cdist_backward(grad, x1, x2, p, result):
    """(grad_x1, grad_x2) of cdist, by PyTorch's rules for each p, with d = x1_i - x2_j,
    r = the distance and g = its gradient (the gradient of d is 0 where r is 0):

        p = 0: 0                    p = 1: g * sign(d)           p = 2: g * d / r
        p < 2: g * sign(d) |d|**(p-1) / r**(p-1)  (0 where d = 0 and p < 1)
        other p: g * d |d|**(p-2) / r**(p-1)
        p = inf: g * sign(d) where |d| = r (every tie gets it whole, not a share)

    NOTE: sign(NaN) is NaN here (PyTorch's cdist sign), unlike tp.sign."""
    d = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    r = result.unsqueeze(-1)
    g = grad.unsqueeze(-1)
    a = d.abs()
    sign = F.where(F.isnan(d), d, d.sign())
    if p == 0:
        z = _creation.zeros_like(d)
    elif p == 1:
        z = g * sign
    elif math.isinf(p):
        z = g * sign * (1 - F.clamp_max(F.ceil((a - r).abs()), 1))
    else:
        if p == 2:
            z = g * d / r
        elif p < 2:
            z = sign * a.pow(p - 1) * g / r.pow(p - 1)
            if p < 1:
                z = F.where(d == 0, 0, z)
        else:
            z = d * a.pow(p - 2) * g / r.pow(p - 1)
        z = F.where(r == 0, 0, z)
    return sum_to(z.sum([-2]), tuple(x1.shape)), sum_to(-z.sum([-3]), tuple(x2.shape))
