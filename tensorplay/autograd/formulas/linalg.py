"""Backward helpers of linear algebra (linear, diag, diagonal, inv, slogdet, solve,
cholesky, matrix_exp), written with TensorPlay ops so they can be differentiated again.

The matrix ones are PyTorch's (FunctionsManual.cpp), real case: with X = A^-1,
dX = -X dA X gives gA = -X^T gX X^T; d log|det A| = tr(A^-1 dA) gives gA = g A^-T; a solve
is one more solve with A^T; Cholesky is Iain Murray's formula (arXiv 1602.07527). A^-T is
applied through a solve rather than an inverse where PyTorch does so.
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.core import sum_to
from tensorplay.kernel_support.lapack import solve_is_vector


def linear_weight_backward(grad, input):  # noqa: A002 - the schema's name
    """d weight = sum over the batch of grad^T conj(input): flatten the batch dims, one mm
    (the conjugate for complex numbers, as every product's gradient; see mm's)."""
    out_features, in_features = grad.shape[-1], input.shape[-1]
    return grad.reshape([-1, out_features]).t().mm(input.reshape([-1, in_features]).conj())


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


def slogdet_backward(grad_logabsdet, A):
    """gA = g * A^-T, one scalar g per matrix (the sign has no gradient)."""
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
    zeros = _creation.zeros(tuple(self.shape), dtype=grad.dtype, device=grad.device)
    block = F.cat([F.cat([a_t, grad], -1), F.cat([zeros, a_t], -1)], -2)
    return F.linalg_matrix_exp(block).narrow(-2, 0, n).narrow(-1, n, n)
