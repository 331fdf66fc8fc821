"""The SVD, the symmetric eigendecomposition and the determinant: LAPACK through NumPy
(tensorplay/kernel_support/spectral.py). Each checks its input with its shape rule first,
so a bad call raises the typed error the Meta kernel raises."""
from __future__ import annotations

import numpy as np

from tensorplay.kernel_support import spectral
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import out, out_strided


def _vectors(array, spec):
    """U, Vh or the eigenvectors in PyTorch's layout (LAPACK's column-major matrices); the
    empty [0] placeholder when they were not computed."""
    if array is None:
        return out(np.empty(spec.sizes, spec.dtype.np), spec.dtype)
    return out_strided(array, spec.dtype, spec.strides)


def linalg_svd(A, full_matrices, compute_uv, driver):
    u, s, vh = shape_rule("eigen.svd")("_linalg_svd", (A, full_matrices, compute_uv, driver))
    U, S, Vh = spectral.svd(A._impl.array(), full_matrices, compute_uv, "linalg_svd")
    return _vectors(U, u), out(S, s.dtype), _vectors(Vh, vh)


def linalg_eigh(A, UPLO, compute_v):
    w, v = shape_rule("eigen.eigh")("_linalg_eigh", (A, UPLO, compute_v))
    L, V = spectral.eigh(A._impl.array(), UPLO, compute_v)
    return out(L, w.dtype), _vectors(V, v)


def linalg_det(A):
    spec = shape_rule("eigen.det")("linalg_det", (A,))
    return out(spectral.det(A._impl.array()), spec.dtype)
