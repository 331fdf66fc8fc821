"""Backward helpers of dist and cdist.

Written with TensorPlay ops only, so they can be differentiated again.
"""
from __future__ import annotations

import math

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.complex import handle_r_to_c
from tensorplay.autograd.formulas.core import sum_to
from tensorplay.autograd.formulas.linalg import vector_norm_jvp
from tensorplay.autograd.formulas.reduction import norm_backward


def dist_backward(grad, self, other, p, result):
    """dist's gradient for `self` (for `other`: the same with the two swapped), PyTorch's
    formula: norm's backward at self - other. Reading self and other (not only their
    difference) saves both, as PyTorch's does. A real self beside a complex other gets
    the real part (handle_r_to_c)."""
    d = self - other
    g = sum_to(norm_backward(grad, d, p, result, None, False), tuple(self.shape))
    return handle_r_to_c(self.dtype, g).to(self.dtype)


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


# ---- tangents (forward mode) -------------------------------------------------------------
def dist_jvp(self_p, other_p, self_t, other_t, p, result):
    """|x - y|_p over every element: the norm's tangent at x - y along dx - dy."""
    return vector_norm_jvp(self_p - other_p, self_t - other_t, p, result, None, False)


def cdist_jvp(x1_p, x2_p, x1_t, x2_t, p, result):
    """result[..., i, j] = |x1[..., i, :] - x2[..., j, :]|_p: the norm's tangent of every
    pair's difference along the last dim."""
    diff = x1_p.unsqueeze(-2) - x2_p.unsqueeze(-3)
    diff_t = x1_t.unsqueeze(-2) - x2_t.unsqueeze(-3)
    return vector_norm_jvp(diff, diff_t, p, result, [-1], False)
