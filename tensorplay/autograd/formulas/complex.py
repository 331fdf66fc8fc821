"""Backward helpers of the complex accessors and constructors (see derivatives.yaml).

The convention is PyTorch's: the gradient handed back for a complex input is the
conjugate Wirtinger derivative, dL/d(conj z) times 2, so that for a real loss L and
z = x + iy, z.grad = dL/dx + i dL/dy. A holomorphic f then has the formula
grad * conj(f'(z)); the functions below are not holomorphic and take both parts.
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.core import sum_to


def handle_r_to_c(dtype, grad):
    """The gradient of an input of `dtype`: the real part of a complex gradient when that
    input is real (PyTorch's handle_r_to_c: a real x has no d/d(imag x)), else grad as it
    is. Taken before a conversion back to a real dtype, which would warn."""
    if grad.dtype.is_complex and not dtype.is_complex:
        return F.real(grad)
    return grad


def conj_number(value):
    """The complex conjugate of a Python number (add's and sub's alpha, the products'
    alpha and beta): a real number is its own."""
    return value.conjugate() if isinstance(value, complex) else value


def angle_backward(grad, self):
    """angle(z) = atan2(y, x): its gradient is grad * i z / |z|^2 (PyTorch's
    angle_backward; grad is real), 0 at z = 0. A real angle is constant (0 or pi) where
    it is differentiable: zeros."""
    if not self.dtype.is_complex:
        return _creation.zeros_like(grad)
    g = grad * self / self.abs().pow(2) * 1j
    return F.where(self == 0, 0.0, g)


def acosh_backward(grad, self):
    """d/dz acosh(z) = 1 / sqrt(z^2 - 1), written for a complex z as
    1 / (sqrt(z + 1) sqrt(z - 1)): the two differ by a sign across the branch cut, and
    the product is the derivative of acosh's principal branch (PyTorch's formula). For a
    real z >= 1 they agree, and one rsqrt is cheaper."""
    if self.dtype.is_complex:
        return grad * ((self + 1).rsqrt() * (self - 1).rsqrt()).conj()
    return grad * (self.pow(2) - 1).rsqrt()


def complex_backward(grad, real, imag):
    """(grad_real, grad_imag) of real + i imag: the parts of grad, each summed back to its
    input's shape (complex broadcasts)."""
    return (sum_to(F.real(grad), tuple(real.shape)),
            sum_to(F.imag(grad), tuple(imag.shape)))


def polar_backward(grad, result, abs_sizes, angle_sizes):
    """(grad_abs, grad_angle) of result = abs * exp(i angle): the real parts of
    conj(grad) * d result / d abs = sgn(result) and of conj(grad) * d result / d angle =
    i * result (PyTorch's polar_backward), summed back to the inputs' shapes. Only the
    result is saved, as PyTorch's: abs and angle may change in place before backward."""
    grad_conj = F.conj(grad)
    grad_abs = F.real(grad_conj * F.sgn(result))
    grad_angle = F.real(grad_conj * (result * 1j))
    return sum_to(grad_abs, tuple(abs_sizes)), sum_to(grad_angle, tuple(angle_sizes))


def sgn_backward(self, grad, result):
    """sgn(z) = z / |z|: d sgn/dz = 1 / (2|z|), d sgn/d conj(z) = -sgn(z)^2 / (2|z|), so
    the gradient is (grad - sgn(z)^2 conj(grad)) / (2|z|), and 0 at z = 0 (PyTorch's
    choice). For a real tensor sgn is sign, flat wherever it is differentiable."""
    if not self.dtype.is_complex:
        return _creation.zeros_like(grad)
    magnitude = F.abs(self)
    zero = magnitude == 0
    g = (grad - result * result * F.conj(grad)) / (2 * F.where(zero, 1.0, magnitude))
    return F.where(zero, 0.0, g)
