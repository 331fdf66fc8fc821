"""Backward helpers of the three transforms (PyTorch's fft_r2c_backward and
fft_c2r_backward, FunctionsManual.cpp), written with TensorPlay ops.

Every transform is linear, y = F x, and the gradient a complex op hands back is the
conjugate Wirtinger derivative of the real loss: for a linear map that is the adjoint,
grad_x = F^H grad_y. The adjoint of the DFT (sum_j x_j e^{-2 pi i jk/n}) is the unscaled
inverse DFT (sum_k y_k e^{+2 pi i jk/n}), and a scale factor is its own adjoint, so

    _fft_c2c's gradient is _fft_c2c of grad with the same normalization, the other way;

the two transforms between real and complex add a step each (below).
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F


def fft_c2c_backward(grad, dim, normalization, forward):
    """The adjoint of a c2c transform: the same transform the other way."""
    return F._fft_c2c(grad, dim, normalization, not forward)


def fft_r2c_backward(grad, dim, normalization, onesided, self_sizes):
    """r2c = (a real signal as a complex one) -> c2c -> (keep the first half when
    onesided). Backward, step by step in reverse: the dropped half got no gradient
    (zeros), the adjoint of c2c is the inverse c2c, and the gradient of "view a real x as
    complex" is the real part."""
    if onesided:
        last = dim[-1] % len(self_sizes)
        n = self_sizes[last]
        missing = n - grad.shape[last]
        if missing > 0:
            # pad the last dim with zeros up to the full length
            pad = [0, 0] * (len(self_sizes) - 1 - last) + [0, missing]
            grad = F.constant_pad_nd(grad, pad)
    return F.real(F._fft_c2c(grad, dim, normalization, False))


def fft_c2r_backward(grad, dim, normalization):
    """c2r = (complete the half spectrum by Hermitian symmetry, X[n-k] = conj X[k]) ->
    inverse c2c -> (take the real part). Backward: the r2c transform of the real grad,
    whose onesided values are the gradient of the half the input holds; each value the
    completion copied (as a conjugate) into the other half also receives that copy's
    gradient, which for a real grad is the same number again: the entries 1 ..
    n - (n//2 + 1) count twice (not 0, and not n/2 for an even n, whose mirror images
    are themselves)."""
    gI = F._fft_r2c(grad, dim, normalization, True)
    last = dim[-1] % grad.dim()
    double = grad.shape[last] - gI.shape[last]
    if double > 0:
        n_half = gI.shape[last]
        weights = [1.0] + [2.0] * double + [1.0] * (n_half - 1 - double)
        shape = [1] * grad.dim()
        shape[last] = n_half
        w = _creation.tensor(weights, dtype=grad.dtype, device=grad.device).view(shape)
        gI = gI * w
    return gI
