"""Backward helpers of linear algebra (linear, diag, diagonal, inv, slogdet, solve,
cholesky, matrix_exp), written with TensorPlay ops so they can be differentiated again.

The matrix ones are PyTorch's (FunctionsManual.cpp), real case: with X = A^-1,
dX = -X dA X gives gA = -X^T gX X^T; d log|det A| = tr(A^-1 dA) gives gA = g A^-T; a solve
is one more solve with A^T; Cholesky is Iain Murray's formula (arXiv 1602.07527). A^-T is
applied through a solve rather than an inverse where PyTorch does so.
"""
from __future__ import annotations

import math

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.autograd.formulas.core import sum_to
from tensorplay.autograd.formulas.reduction import (
    _reduced_dims, norm_tangent_dtype, restore_reduced,
)
from tensorplay.kernel_support.lapack import solve_is_vector


def linear_backward(grad, input, weight, bias_sizes, grad_input_mask):  # noqa: A002
    """Gradients of linear for (input, weight, bias). The node saves input only when
    weight needs a gradient and weight only when input does (PyTorch's addmm saves so):
    the formulas read each for the other's gradient alone.

    A plain backward() (grad mode off while it runs: nothing records this backward) takes
    the fused op _linear_backward, three products in one kernel, where the composed
    formulas dispatch a dozen ops for a 3-D input (reshapes, transposes, mm, sum). With
    create_graph=True the backward is itself recorded, so it is composed from
    differentiable ops (the fused op has no derivative)."""
    want_input, want_weight, want_bias = grad_input_mask
    # The fused op sums to bias's usual shape (out_features,); a bias that broadcasts
    # from another shape takes sum_to.
    fused_bias = want_bias and tuple(bias_sizes) == tuple(grad.shape[-1:])
    if not grad_state.enabled:
        d_input, d_weight, d_bias = F._linear_backward(
            grad, input, weight, [want_input, want_weight, fused_bias])
    else:
        d_input = grad.matmul(weight.conj()) if want_input else None
        d_weight = linear_weight_backward(grad, input) if want_weight else None
        d_bias = None
    if want_bias and d_bias is None:
        d_bias = sum_to(grad, bias_sizes)
    return d_input, d_weight, d_bias


def linear_backward_jvp(grad_output_p, grad_output_t, input_p, input_t, weight_p, weight_t,
                        output_mask):
    """_linear_backward is bilinear in grad_output and (input, weight): each output's
    tangent is the op at (grad_output_t, input_p, weight_p) plus the op at
    (grad_output_p, input_t, weight_t), a term left out where its tangent is missing."""
    terms = []
    if grad_output_t is not None:
        terms.append(F._linear_backward(grad_output_t, input_p, weight_p, list(output_mask)))
    mask = [output_mask[0] and weight_t is not None, output_mask[1] and input_t is not None,
            False]
    if any(mask):
        terms.append(F._linear_backward(grad_output_p, input_t, weight_t, mask))
    tangents = [None, None, None]
    for term in terms:
        for i, t in enumerate(term):
            if t is not None:
                tangents[i] = t if tangents[i] is None else tangents[i] + t
    return tuple(tangents)


def linear_weight_backward(grad, input):  # noqa: A002 - the schema's name
    """d weight = sum over the batch of grad^T conj(input): flatten the batch dims, one mm
    (the conjugate for complex numbers, as every product's gradient; see mm's)."""
    out_features, in_features = grad.shape[-1], input.shape[-1]
    if grad.dim() == 2 and input.dim() == 2 and not input.is_complex():
        return grad.transpose(0, 1).mm(input)    # two ops: no reshapes, no conj to skip
    # (transpose, not t: t is a composite that calls transpose, one dispatch more)
    rows = grad.reshape([-1, out_features]).transpose(0, 1)
    return rows.mm(input.reshape([-1, in_features]).conj())


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




def linalg_inv_backward(grad, inverse):
    """gA = -A^-T gX A^-T."""
    inverse_t = inverse.mT
    return -inverse_t.matmul(grad.matmul(inverse_t))


def slogdet_backward(grad_logabsdet, A, sign):
    """gA = g * A^-T, one scalar g per matrix. The sign of a real A has no gradient; it
    is taken (and so saved) as PyTorch's formula takes it, for complex A's phase."""
    inverse_t = F.linalg_inv_ex(A)[0].mT
    return grad_logabsdet.unsqueeze(-1).unsqueeze(-1) * inverse_t


def linalg_solve_backward(grad, result, A, b_sizes, left):
    """X = A^-1 B: gB = A^-T gX, gA = -gB X^T (X A = B: gB = gX A^-T, gA = -X^T gB), each
    summed to its input's batch: one solve for both gradients. B itself is not needed (only
    its sizes): it is not saved, so writing into B after the solve is allowed, as in
    PyTorch."""
    gB = F.linalg_solve(A.mT, grad, left=left)
    if solve_is_vector(A.shape, b_sizes):
        gA = -gB.unsqueeze(-1).matmul(result.unsqueeze(-2))
    elif left:
        gA = -gB.matmul(result.mT)
    else:
        gA = -result.mT.matmul(gB)
    return sum_to(gA, A.shape), sum_to(gB, b_sizes)


def cholesky_backward(grad, upper, L):
    """A = L L^T: gA = L^-T Phi(L^T gL) L^-1, Phi taking the lower triangle with its
    diagonal halved, symmetrized (PyTorch's cholesky_backward, solves for the inverses)."""
    if upper:
        L, grad = L.mT, grad.mT
    gA = L.mT.matmul(grad).tril()
    gA = 0.5 * (gA + gA.tril(-1).mT)
    gA = F.linalg_solve(L.mT, gA)
    return F.linalg_solve(L, gA, left=False)


def matrix_exp_backward(self, grad):
    """gA for exp(A): the upper-right block of exp([[A^T, G], [0, A^T]]) (Mathias 1996;
    PyTorch's backward_analytic_function_of_a_matrix, real case: A^T for A^H). The block
    matrix is built with cat and exp'd with linalg_matrix_exp itself, so this gradient
    differentiates again (through a matrix twice the size)."""
    n = self.shape[-1]
    a_t = self.mT
    scale = _power_of_two_near_max(grad)
    zeros = _creation.zeros(tuple(self.shape), dtype=grad.dtype, device=grad.device)
    block = F.cat([F.cat([a_t, grad / scale], -1), F.cat([zeros, a_t], -1)], -2)
    return F.linalg_matrix_exp(block).narrow(-2, 0, n).narrow(-1, n, n) * scale


def _power_of_two_near_max(grad):
    """Per matrix, the power of two at most max |grad| (1 where that is 0, inf or NaN),
    detached. The upper-right block of exp([[A, G], [0, A]]) is linear in G, so G / s
    and a product by s give the same block, exactly (a power of two only moves the
    exponent), while a G of norm far above A's (exp_ of a matrix_exp: G ~ 1e23 with
    |A| ~ 5, fuzz seed 5001573) otherwise sets the scaling-and-squaring count of the whole
    block: exp(A / 2^s) then rounds to I + ~ulp and 77 squarings give ~1e84 instead of
    1e22 (and inf in float32). PyTorch's own kernel loses the digits the same way (its
    4.5e21 there is off by ~1e22; the exact value, mpmath, is -3.49e22)."""
    if grad.numel() == 0:       # (amax refuses an empty matrix; nothing to scale)
        return 1.0
    peak = grad.detach().abs().amax((-2, -1), keepdim=True)
    usable = F.logical_and(peak > 0, peak.isfinite())
    return F.where(usable, F.where(usable, peak, 1.0).log2().floor().exp2(), 1.0)


# ---- tangents (forward mode) -------------------------------------------------------------
# J v of each op, PyTorch's formulas (FunctionsManual.cpp): the product rule for the
# products, dX = -X dA X for the inverse, d log|det A| = tr(A^-1 dA), and so on.

def vector_norm_jvp(self_p, self_t, p, result, dim, keepdim):
    """d |x|_p along the reduced dims (PyTorch's norm_jvp), the real part of
    sum(conj(dx) * d|x|_p/dx) with the gradient norm_backward uses:
    p = 2: Re(x conj(dx)) / |x|   p = 1: Re(sgn(x) conj(dx))   p = inf: the ties of max |x|
    share it   p = 0: 0   other p: |x|^(p-2) Re(x conj(dx)) / |x|_p^(p-1); 0 where the norm
    is 0. The sums run with keepdim and the result is reshaped to the norm's shape."""
    p = 2.0 if p is None else float(p)
    if p == 0:
        return _creation.zeros_like(result)
    sizes = tuple(self_p.shape)
    dims = _reduced_dims(len(sizes), dim)
    r = restore_reduced(result, sizes, dim, keepdim)
    x = self_p.to(self_t.dtype) if self_t.dtype.is_complex else self_p
    dot = (x * self_t.conj()).real if x.dtype.is_complex else x * self_t
    if p == 1:
        sgn = x.sgn() if x.dtype.is_complex else x.sign()
        out = _real(sgn * self_t.conj())
    elif p == 2:
        out = dot
    elif math.isinf(p):
        mask = ((x.abs() == r) | (x.isnan() & r.isnan())).to(r.dtype)
        count = mask.sum(dims, keepdim=True) if dims else mask
        sgn = x.sgn() if x.dtype.is_complex else x.sign()
        out = _real(sgn * self_t.conj()) * mask / count
    elif p < 1:
        sgn = x.sgn() if x.dtype.is_complex else x.sign()
        out = F.where(x == 0, 0.0, x.abs().pow(p - 1)) * _real(sgn * self_t.conj())
    elif p < 2:
        sgn = x.sgn() if x.dtype.is_complex else x.sign()
        out = x.abs().pow(p - 1) * _real(sgn * self_t.conj())
    else:
        out = x.abs().pow(p - 2) * dot
    total = out.sum(dims, keepdim=True) if dims else out
    if p == 2:
        total = F.where(r == 0, 0.0, total / r)
    elif math.isinf(p) or p == 1:
        pass
    elif p < 1:
        total = total * r.pow(1 - p)
    else:
        total = F.where(r == 0, 0.0, total / r.pow(p - 1))
    return total.reshape(tuple(result.shape)).to(norm_tangent_dtype(p, self_t, result))


def _real(z):
    return z.real if z.dtype.is_complex else z


def linear_jvp(input_p, input_t, weight_p, weight_t, bias_t):
    """d(x W^T + b) = dx W^T + x dW^T + db (W may be a vector: a dot with each row)."""
    def apply(x, w):
        return x.matmul(w.t() if w.dim() == 2 else w)
    out = apply(input_t, weight_p) + apply(input_p, weight_t)
    return out if bias_t is None else out + bias_t


def matrix_exp_jvp(A, dA):
    """d exp(A)[dA]: the upper-right block of exp([[A, dA], [0, A]]) (Mathias 1996)."""
    n = A.shape[-1]
    zeros = _creation.zeros(tuple(A.shape), dtype=dA.dtype, device=dA.device)
    A = A.to(dA.dtype)
    scale = _power_of_two_near_max(dA)
    block = F.cat([F.cat([A, dA / scale], -1), F.cat([zeros, A], -1)], -2)
    return F.linalg_matrix_exp(block).narrow(-2, 0, n).narrow(-1, n, n) * scale


def slogdet_jvp(A_p, A_t, sign):
    """d log|det A| = Re tr(A^-1 dA); the sign of a complex determinant turns by
    i Im tr(A^-1 dA) (a real one's is constant: no tangent)."""
    trace = F.linalg_solve(A_p, A_t).diagonal(0, -2, -1).sum(-1)
    if A_p.dtype.is_complex:
        return sign * (trace - trace.real.to(trace.dtype)), trace.real
    return None, trace


def linalg_solve_jvp(A_p, A_t, B_t, result, left):
    """X = A^-1 B: dX = A^-1 (dB - dA X) (X = B A^-1: (dB - X dA) A^-1). B is a (batch
    of) vector(s) by linalg.solve's own rule."""
    if solve_is_vector(A_p.shape, B_t.shape):
        rhs = B_t - A_t.matmul(result.unsqueeze(-1)).squeeze(-1)
    else:
        rhs = B_t - (A_t.matmul(result) if left else result.matmul(A_t))
    return F.linalg_solve(A_p, rhs, left=left)


def cholesky_jvp(dA, L, upper):
    """A = L L^H: dL = L Phi(L^-1 dA L^-H), Phi the lower triangle with its diagonal
    halved (PyTorch's cholesky_jvp); the upper factor is L^H."""
    if upper:
        L = L.mH
    dL = F.linalg_solve_triangular(L, dA, upper=False)
    dL = F.linalg_solve_triangular(L.mH, dL, upper=True, left=False)
    dL = dL.tril() - F.diag_embed(0.5 * dL.diagonal(0, -2, -1))
    dL = L.matmul(dL)
    return dL.mH if upper else dL
