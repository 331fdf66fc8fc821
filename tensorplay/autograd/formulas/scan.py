"""Backward helpers of the scans: cumsum (a reversed cumsum) and cumprod (with zeros).

Written with TensorPlay ops only, so they can be differentiated again.
"""
from __future__ import annotations


import ml_dtypes

from tensorplay import _dtype as dt
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.complex import handle_r_to_c
from tensorplay.autograd.formulas.reduction import _positions
from tensorplay.autograd.grad_mode import grad_state


# ---- scans -----------------------------------------------------------------------------
def reversed_cumsum(t, dim):
    """out_i = sum_{k >= i} t_k along dim."""
    return t.flip([dim]).cumsum(dim).flip([dim])


def cumsum_backward(grad, sizes, dtype, dim):
    """A reversed cumsum, in the input's dtype (a real input summed as complex, with
    dtype=, gets the real part: handle_r_to_c)."""
    if len(sizes) == 0:
        return handle_r_to_c(dtype, grad).to(dtype)
    return handle_r_to_c(dtype, reversed_cumsum(grad, dim)).to(dtype)


def cumprod_backward(grad, self, dim, result):
    """d out_k / dx_i = prod_{j <= k, j != i} x_j for i <= k.

    Without zeros: sum_{k >= i} grad_k out_k / x_i, a reversed cumsum. With zeros (where
    dividing fails) the exact form, on an n x n grid per slice:
        grad_i = (prod_{j < i} x_j) * sum_{k >= i} grad_k prod_{i < j <= k} x_j
    It is a polynomial in x built from cumprod and prod, so it is twice differentiable.

    Complex numbers: cumprod is holomorphic, so grad_i = sum_k grad_k conj(d out_k / dx_i),
    and each derivative, a polynomial with real coefficients, conjugated is the same
    polynomial of conj(x): every form below runs on conj(self) and conj(result), as
    PyTorch's. (conj of a real tensor is the tensor itself.)"""
    if self.dim() == 0 or self.shape[dim] == 1:     # out = x: even a NaN gets grad
        return grad
    self, result = self.conj(), result.conj()
    if not bool(F.any(self == 0)):
        return reversed_cumsum(grad * result, dim) / self
    if not grad_state.enabled:
        return _cumprod_backward_with_zeros(grad, self, dim, result)
    x = self.transpose(dim, -1)
    g = grad.transpose(dim, -1)
    i, j = _positions(x.shape[-1], x.device)
    spread = x.unsqueeze(-2)                                   # [..., i, j] = x_j
    tails = F.where(j > i, spread, 1).cumprod(-1)              # prod_{i < j <= k} x_j
    after = F.where(j >= i, tails * g.unsqueeze(-2), 0.0).sum([-1])
    before = F.prod(F.where(j < i, spread, 1), -1)             # prod_{j < i} x_j
    return (before * after).transpose(dim, -1)


def _cumprod_backward_with_zeros(grad, self, dim, result):
    """PyTorch's O(n) form (not differentiable again: used without create_graph), which
    fixes where a NaN or inf meets a zero. With z1, z2 the first two zeros of a slice:

        i < z1:        sum_{k >= i} grad_k out_k / x_i, the sum over k < z1 only
        i = z1:        out_{z1-1} * sum_{z1 <= k < z2} grad_k prod_{z1 < j <= k} x_j
        i > z1:        0"""
    w = result * grad
    zeros = (self == 0).to(dt.int64).cumsum(dim)             # zeros up to and at each i
    before = zeros == 0
    out = F.where(before, reversed_cumsum(w.masked_fill(~before, 0.0), dim) / self, 0.0)
    first = (self == 0) & (zeros == 1)                       # the first zero
    between = (zeros == 1) & ~first
    tails = self.masked_fill(~between, 1.0).cumprod(dim)     # prod_{z1 < j <= k} x_j
    after = (tails * grad.masked_fill(zeros != 1, 0.0)).sum([dim], True)
    index = first.to(dt.int64).argmax(dim, True)
    prefix = F.where(index == 0, 1.0, result.gather(dim, (index - 1).clamp(0)))
    return F.where(first, after * prefix, out)


def logcumsumexp_backward(grad, self, result, dim):
    """d out_k / d x_i = exp(x_i - out_k) for i <= k, so grad_i = sum_{k >= i} grad_k
    exp(x_i - out_k). Computed in log space, as PyTorch does (TensorFlow's formula): the
    positive and the negative parts of grad each as

        exp(x_i + log(sum_{k >= i} exp(log|grad_k| - out_k)))

    a reversed logcumsumexp, which neither overflows nor underflows. (The log of a zero
    gradient is the dtype's lowest finite value, not -inf: -inf - -inf would be NaN.)"""
    if self.dim() == 0 or self.numel() == 0:
        return grad

    def reversed_logcumsumexp(t):
        return t.flip([dim]).logcumsumexp(dim).flip([dim])
    if grad.dtype.is_complex:
        # grad_i = sum_{k >= i} grad_k conj(exp(x_i - out_k)) (logcumsumexp is
        # holomorphic): the same log-space form, with no sign to split since the complex
        # log takes any grad (log 0 = -inf, whose exp is 0), as PyTorch's
        return (reversed_logcumsumexp(grad.log() - result.conj()) + self.conj()).exp()
    lowest = float(ml_dtypes.finfo(grad.dtype.np).min)
    log_abs = grad.abs().log()
    positive = F.where(grad > 0, log_abs, lowest)
    negative = F.where(grad < 0, log_abs, lowest)
    return (reversed_logcumsumexp(positive - result) + self).exp() - \
        (reversed_logcumsumexp(negative - result) + self).exp()


# ---- tangents (forward mode) -----------------------------------------------------------
def cumprod_jvp(self_t, self_p, result, dim):
    """d out_k = out_k * sum_{i <= k} t_i / x_i without zeros. After the first zero z of
    a slice every out_k (k >= z) has x_z as a factor, so its derivative is the product of
    the others with t_z in x_z's place: cumprod of x with t_z put at z (PyTorch's form).
    Everything in the result's dtype (dtype= may have widened it)."""
    self_t, self_p = self_t.to(result.dtype), self_p.to(result.dtype)
    if self_p.dim() == 0:
        return self_t.clone()
    zeros = self_p == 0
    # (a zero divides as 1: every position it reaches is taken from `with_t` below, and
    # no inf * 0 = NaN is made on the way, which a gradient through where() would see)
    gradient = (self_t / self_p.masked_fill(zeros, 1)).cumsum(dim) * result
    first_zero = zeros & (zeros.cumsum(dim) == 1)
    after_zero = first_zero.cumsum(dim) > 0
    with_t = F.where(first_zero, self_t, self_p).cumprod(dim)
    return F.where(after_zero, with_t, gradient)


def logcumsumexp_jvp(self_p, self_t, dim, result):
    """out_k = log(sum_{j <= k} exp(x_j)), so its tangent is a softmax-weighted prefix sum

        T_k = sum_{j <= k} exp(x_j) t_j / sum_{j <= k} exp(x_j)

    computed as an online softmax along dim: with the running max m_k of the (real part
    of the) inputs, s_k = s_{k-1} exp(m_{k-1} - m_k) + exp(x_k - m_k) and n_k the same
    sum with t_k, T_k = n_k / s_k. Every factor is exp of a difference <= 0: nothing
    overflows, and the weights sum to 1 by construction, where weights taken from the
    rounded result do not (float32 x near 1e38: out_k = x + log 2 rounds to x, and
    exp(x_j - out_k) then counts every entry twice). One step per position (a rarely
    differentiated op; the loop is the formula). PyTorch's logcumsumexp_jvp divides
    cumsums of exp(x - max) t and exp(x - max) + 1e-13 instead; that guard damps the
    tangent of entries far below the row's max (x = [-30, 0, 1], t = [0.3, 1, 2]: 0.077
    for the first, whose derivative is 0.3), so those samples are compared with finite
    differences (tests/test_forward_ad_ops.py). A prefix of -inf has tangent NaN (0 / 0)
    and a +inf makes every later tangent NaN. Holomorphic: complex x takes the same."""
    if self_p.numel() == 0 or self_p.dim() == 0:
        return self_t.clone()
    x = self_p.to(result.dtype)
    t = self_t.to(result.dtype)
    m = (x.real if x.is_complex() else x).cummax(dim)[0]
    # -inf read as 0 (a prefix of -inf has the sums 0 whatever its max): no -inf - -inf
    finite_m = m.masked_fill(m == float("-inf"), 0.0)
    e = (x - finite_m).exp()                 # exp(x_k - m_k), 0 for x_k = -inf
    n = len(e.unbind(dim))
    # exp(m_{k-1} - m_k), the rescale of the sums when the max grows; 0 after a prefix of
    # -inf (those sums are 0 anyway, and exp(0 - m_k) could overflow)
    prev, cur = finite_m.narrow(dim, 0, n - 1), finite_m.narrow(dim, 1, n - 1)
    scale = F.where(m.narrow(dim, 0, n - 1) == float("-inf"), float("-inf"),
                    prev - cur).exp().unbind(dim)
    es, ets = e.unbind(dim), (e * t).unbind(dim)
    s, num = es[0], ets[0]
    tangents = [num / s]
    for k in range(1, n):
        s = s * scale[k - 1] + es[k]
        num = num * scale[k - 1] + ets[k]
        tangents.append(num / s)
    return F.stack(tangents, dim)
