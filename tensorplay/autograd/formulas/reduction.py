"""Backward helpers for the reduction ops (see derivatives.yaml): prod, amax/amin,
var/std, norm, logsumexp.

All are written with TensorPlay ops, so their results can be differentiated again.
"""
from __future__ import annotations

import math

import tensorplay._dtype as tp_dtypes

from tensorplay import _creation
from tensorplay._frontdoor import wrap_dim
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.core import mean_backward
from tensorplay.autograd.grad_mode import grad_state


def _reduced_dims(ndim, dims):
    if dims is None or len(dims) == 0:
        return list(range(ndim))
    return sorted({wrap_dim("reduction", "dim", d, ndim) for d in dims}) if ndim else []


def restore_reduced(t, sizes, dims, keepdim):
    """A reduced tensor (a gradient or a result) with the reduced dims back as size 1, so
    that it broadcasts against the input: [3] from x[3, 4].sum(1) -> [3, 1]."""
    if keepdim or not sizes:
        return t
    for d in _reduced_dims(len(sizes), dims):
        t = t.unsqueeze(d)
    return t


def _count(sizes, dims):
    n = 1
    for d in _reduced_dims(len(sizes), dims):
        n *= sizes[d]
    return n


# ---- prod ------------------------------------------------------------------------------
def _positions(n, device):
    """Row and column positions of an n x n grid, for masks like `j > i`."""
    ar = _creation.arange(n, device=device)
    return ar.view([n, 1]), ar.view([1, n])


def product_of_others(x):
    """others[..., i] = prod_{j != i} x[..., j] (last dim), exact with zeros and twice
    differentiable: x is spread to an n x n grid with the diagonal set to 1, then multiplied
    along rows. O(n^2), so used only where x may have zeros (prod's gradient, and det's at a
    singular matrix, of its singular values)."""
    n = x.shape[-1]
    i, j = _positions(n, x.device)
    return F.prod(F.where(i == j, 1, x.unsqueeze(-2)), -1)


def prod_dim_backward(grad, self, result, dim, keepdim):
    """d prod / dx_i = prod / x_i without zeros; the product of the others with them.

    Complex numbers: prod is holomorphic, so the gradient is grad * conj(d prod / dx_i),
    and that derivative, a polynomial with real coefficients, conjugated is the same
    polynomial of conj(x): the formulas run on conj(self) and conj(result) (PyTorch's
    `(result / input).conj()`). For a real tensor conj is the tensor itself."""
    if self.dim() == 0:
        return grad
    self, result = self.conj(), result.conj()
    d = wrap_dim("prod", "dim", dim, self.dim())
    g = restore_reduced(grad, self.shape, [d], keepdim)
    if not bool(F.any(self == 0)):
        return g * restore_reduced(result, self.shape, [d], keepdim) / self
    return g * product_of_others(self.transpose(d, -1)).transpose(d, -1)


def prod_backward(grad, self, result):
    """prod over every element: prod_dim_backward of the flattened tensor (which takes
    the conjugates for complex numbers)."""
    if self.dim() == 0:     # the product of one value is that value: even a NaN gets grad
        return grad
    if not grad_state.enabled and int((self == 0).sum()) > 1:
        # PyTorch's shortcut (not taken with create_graph): with two zeros every product
        # of the others is 0, so zeros, even beside a NaN or inf (0 * NaN would be NaN)
        return _creation.zeros_like(self, dtype=grad.dtype)
    flat = self.reshape([-1])
    return prod_dim_backward(grad.reshape([1]), flat, result.reshape([1]), 0, True) \
        .reshape(self.shape)


# ---- amax / amin, var, norm, logsumexp -------------------------------------------------
def amax_backward(grad, self, result, dim, keepdim):
    """The gradient is shared evenly by the elements equal to the max (PyTorch's rule).

    NOTE: a slice whose max is NaN has no element equal to it: count is 0 and, as in
    PyTorch, (grad / 0) * 0 makes its whole gradient NaN."""
    sizes = tuple(self.shape)
    mask = self == restore_reduced(result, sizes, dim, keepdim)
    count = mask.sum(_reduced_dims(len(sizes), dim), keepdim=True)
    return restore_reduced(grad, sizes, dim, keepdim) / count * mask


def std_backward(grad, self, dim, correction, keepdim, result):
    """d std = d var / (2 std); 0 where std is 0 (as PyTorch), not 0/0."""
    # (the denominator is made safe first: where() alone would pass 0 * inf = nan to the
    # gradient of `grad` in double backward)
    zero = result == 0
    g = F.where(zero, 0.0, grad / (2 * F.where(zero, 1.0, result)))
    return var_backward(g, self, dim, correction, keepdim)


def var_backward(grad, self, dim, correction, keepdim):
    """d var / dx_i = 2 (x_i - mean) / (N - correction).

    NOTE: PyTorch's conventions when N - correction <= 0: over all elements, inf (NaN for
    an element at the mean: inf * 0); along dims, 2 / (N - correction) as it comes
    (inf for 0, negative below)."""
    sizes = tuple(self.shape)
    dof = _count(sizes, dim) - (1 if correction is None else correction)
    dims = _reduced_dims(len(sizes), dim) or None
    g = restore_reduced(grad, sizes, dim, keepdim)
    if dof <= 0 and (not sizes or not dim):
        return F.where(self == F.mean(self), math.nan, g * math.inf)
    scale = 2.0 / dof if dof != 0 else math.inf
    centered = self - F.mean(self, dims, keepdim=True)
    return g * scale * centered


def var_mean_backward(grads, self, dim, correction, keepdim):
    """var_mean: the variance's and the mean's gradients, added (either may be None)."""
    return _sum_present(
        None if grads[0] is None else var_backward(grads[0], self, dim, correction, keepdim),
        None if grads[1] is None else mean_backward(grads[1], tuple(self.shape), dim,
                                                    keepdim))


def std_mean_backward(grads, self, std, dim, correction, keepdim):
    """std_mean: the standard deviation's and the mean's gradients, added."""
    return _sum_present(
        None if grads[0] is None else std_backward(grads[0], self, dim, correction, keepdim,
                                                   std),
        None if grads[1] is None else mean_backward(grads[1], tuple(self.shape), dim,
                                                    keepdim))


def _sum_present(a, b):
    if a is None or b is None:
        return b if a is None else a
    return a + b


def _sign(x):
    """sign(x), and for a complex x its direction x / |x| (sgn; 0 at 0): the derivative of
    |x| either way (for a complex x, the gradient of the real function |x|)."""
    return x.sgn() if x.dtype.is_complex else x.sign()


def norm_backward(grad, self, p, result, dim, keepdim):
    """p = 2: x / |x|   p = 1: sign(x)   p = +-inf: sign(x) shared by the ties of |x|
    p = 0: 0   other p: sign(x) |x|**(p-1) / |x|_p**(p-1); 0 wherever the norm is 0.

    A complex x has a real norm (and a real grad): the same formulas with sgn(x) = x / |x|
    for sign(x) give the complex gradient, as PyTorch's norm_backward."""
    sizes = tuple(self.shape)
    p = 2.0 if p is None else float(p)
    g = restore_reduced(grad, sizes, dim, keepdim)
    r = restore_reduced(result, sizes, dim, keepdim)
    # in the result's precision (dtype= may have widened it); complex stays complex
    x = self.to(g.dtype.to_complex() if self.dtype.is_complex else g.dtype)
    if p == 0:
        out = _creation.zeros_like(x)     # not x * 0, which is NaN at an infinite x
    elif p == 1:
        out = g * _sign(x)
    elif p == 2:
        out = F.where(r == 0, 0.0, g * (x / r))   # (PyTorch's order: x / r first, so an
        # infinite norm of huge finite x gives 0, not (g * x = inf) / inf = NaN)
    elif math.isinf(p):
        # A NaN is the norm's argmax too (PyTorch's rule): it gets the gradient (NaN)
        # and the finite elements of its slice get 0, not 0 / 0 = NaN.
        mask = (x.abs() == r) | x.isnan()
        count = mask.sum(_reduced_dims(len(sizes), dim), keepdim=True)
        out = g * _sign(x) * mask / count
    else:
        # PyTorch's order and precisions: self's part in self's own dtype (so |x|^(p-1)
        # of a huge float32 x overflows there too), then times grad / norm^(p-1)
        s = self
        if p < 2:
            scaled = F.where(s == 0, 0.0, _sign(s) * s.abs().pow(p - 1))
        else:
            scaled = s * s.abs().pow(p - 2)
        if p < 1:
            out = scaled * g * r.pow(1 - p)
        else:
            out = scaled * F.where(r == 0, 0.0, g / r.pow(p - 1))
    return out.to(self.dtype)


def logsumexp_backward(grad, self, result, dim, keepdim):
    """d lse / dx_i = exp(x_i - lse): the softmax, computed from the saved result
    (conjugated for complex numbers, where lse is holomorphic: PyTorch's formula)."""
    sizes = tuple(self.shape)
    return restore_reduced(grad, sizes, dim, keepdim) * \
        F.exp(self - restore_reduced(result, sizes, dim, keepdim)).conj()




def addbmm_grad_batches(grad, batch1_sizes, batch2_sizes):
    """addbmm's gradient [n, p] seen by each of the b products: expanded to [b, n, p]."""
    return grad.unsqueeze(0).expand([batch1_sizes[0], batch1_sizes[1], batch2_sizes[2]])


# ---- tangents (forward mode) -----------------------------------------------------------
# A reduction's tangent is the directional derivative: sum over the reduced elements of
# (d out / d x_i) * t_i. Several are the backward helper read with grad = the tangent
# (PyTorch's formulas), summed over the reduced dims.
def _sum_reduced(t, dim, keepdim):
    """t summed over `dim` (None or empty: every dim), as the reduction's result is."""
    dims = _reduced_dims(t.dim(), dim)
    if not dims:
        return t if t.dim() == 0 else t.sum(list(range(t.dim())), keepdim)
    return t.sum(dims, keepdim)


def evenly_read_jvp(self_t, self_p, result):
    """max/min/median over everything: the tangents of the elements equal to the result,
    averaged (the backward shares the gradient among them evenly)."""
    mask = self_p == result
    return (mask * (self_t / mask.sum())).sum()


def amaxamin_jvp(self_p, self_t, result, dim, keepdim):
    """amax/amin: the mean of the tangents of the elements equal to the max (ties)."""
    mask = self_p == restore_reduced(result, tuple(self_p.shape), dim, keepdim)
    return _sum_reduced(F.where(mask, self_t, 0.0), dim, keepdim) / \
        _sum_reduced(mask, dim, keepdim)


def prod_jvp(self_p, self_t, result):
    """sum_i (d prod / dx_i) t_i, the derivatives read from the backward with grad = 1
    (prod is holomorphic: the backward gives their conjugates, hence the conj)."""
    ones = _creation.ones_like(result)
    d = prod_backward(ones, self_p.to(result.dtype), result)
    return (d * self_t.conj()).sum().conj()


def prod_dim_jvp(self_p, self_t, result, dim, keepdim):
    """prod along `dim`: prod_jvp slice by slice."""
    ones = _creation.ones_like(result)
    d = prod_dim_backward(ones, self_p.to(result.dtype), result, dim, keepdim)
    if self_p.dim() == 0:
        return (d * self_t.conj()).conj()
    return (d * self_t.conj()).sum([dim], keepdim).conj()


def var_jvp(self_p, self_t, dim, correction, keepdim):
    """d var = sum_i Re(conj(t_i) * 2 (x_i - mean)) / (N - correction): var_backward with
    grad = conj(t) (PyTorch's formula)."""
    d = var_backward(self_t.conj(), self_p, dim, correction, True)
    return _sum_reduced(d.real if d.dtype.is_complex else d, dim, keepdim)


def std_jvp(self_p, self_t, dim, correction, keepdim, result):
    """d std = d var / (2 std); 0 where std is 0."""
    zero = result == 0
    return F.where(zero, 0.0, var_jvp(self_p, self_t, dim, correction, keepdim)
                   / (2 * F.where(zero, 1.0, result)))


def norm_jvp(self_p, self_t, p, result, dim, keepdim):
    """A norm is real: d |x|_p = sum_i Re(conj(g_i) t_i) with g the backward's gradient
    for grad = 1 (which holds every case of p: ties of the max for inf, 0 at a zero
    norm)."""
    g = norm_backward(_creation.ones_like(result), self_p, p, result, dim, keepdim)
    d = g.conj() * self_t
    total = _sum_reduced(d.real if d.dtype.is_complex else d, dim, keepdim)
    return total.to(norm_tangent_dtype(p, self_t, result))


def norm_tangent_dtype(p, self_t, result):
    """The dtype of PyTorch's norm_jvp (norm, linalg.vector_norm) when a `dtype=` argument
    makes the norm wider than the input: for p = 1 (a sum of self's tangents) and p = 2
    (that sum divided by the norm in place) self's real dtype; for the other p a division
    by, or zeros like, the norm, which promotes to the norm's dtype."""
    p = 2.0 if p is None else float(p)
    if p in (1.0, 2.0):
        return self_t.real.dtype if self_t.dtype.is_complex else self_t.dtype
    return result.dtype


def logsumexp_jvp(self_p, self_t, dim, keepdim):
    """sum_i softmax(x)_i t_i, with the max subtracted before exp (PyTorch's formula)."""
    if self_p.numel() > 0:
        shifted = self_p - F.amax(self_p.real if self_p.dtype.is_complex else self_p,
                                  dim, True)
    else:
        shifted = self_p
    e = shifted.exp()
    return _sum_reduced(e * self_t, dim, keepdim) / _sum_reduced(e, dim, keepdim)


def _renorm_norms(self, p, dim):
    """The p-norm of each slice along `dim` (keepdim), and the dims it reduced."""
    d = wrap_dim("renorm", "dim", dim, self.dim())
    dims = [i for i in range(self.dim()) if i != d]
    return F.norm(self, p, dims, True), dims


# PyTorch's at::toAccumulateType for the CPU (and, for half types, for cuda): the dtype
# renorm's backward takes its norms in.
_CPU_ACCUMULATE = {"float32": "float64", "float16": "float32", "bfloat16": "float32",
                   "complex64": "complex128"}
_CUDA_ACCUMULATE = {"float16": "float32", "bfloat16": "float32"}


def renorm_backward(grad, self, p, dim, maxnorm):
    """PyTorch's renorm_backward: through the slices whose norm was above maxnorm (scaled
    by f = maxnorm / (norm + 1e-7)) f * (grad - nb / (norm + 1e-7)), with nb the norm's
    own backward, and grad as it is elsewhere. The where comes last, so a slice whose norm
    is NaN (not above maxnorm) passes grad through, where differentiating the forward's
    where would give 0 * NaN. As PyTorch's, the norms are taken in the accumulate dtype of
    the device: float64 for float32 on the CPU, so a row of 1e30s has a finite norm here
    where the forward's float32 one overflowed."""
    d = wrap_dim("renorm", "dim", dim, self.dim())
    dims = [i for i in range(self.dim()) if i != d]
    table = _CPU_ACCUMULATE if self.device.type == "cpu" else _CUDA_ACCUMULATE
    acc = getattr(tp_dtypes, table.get(self.dtype.name, self.dtype.name))
    real_acc = acc.to_real() if acc.is_complex else acc
    norm = F.linalg_vector_norm(self, p, dims, True, dtype=acc)
    along = self.conj() * grad
    if along.dtype.is_complex and not real_acc.is_complex:
        along = along.real
    along = along.sum(dims, keepdim=True, dtype=real_acc)
    nb = norm_backward(along, self, p, norm, dims, True)
    invnorm = (norm + 1e-7).reciprocal()
    factor = invnorm * maxnorm
    return F.where(norm > maxnorm, factor * (grad - invnorm * nb), grad).to(self.dtype)


def renorm_jvp(self_p, self_t, p, dim, maxnorm):
    """d(x * f) = t * f + x * df with df = -maxnorm / (norm + 1e-7)^2 * d norm, on the slices
    above maxnorm; t elsewhere."""
    norm, dims = _renorm_norms(self_p, p, dim)
    d_norm = norm_jvp(self_p, self_t, p, norm, dims, True)
    shifted = norm + 1e-7
    factor = maxnorm / shifted
    return F.where(norm > maxnorm, self_t * factor - self_p * (factor / shifted) * d_norm,
                   self_t)
