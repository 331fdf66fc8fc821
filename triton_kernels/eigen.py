"""The SVD, the symmetric eigendecomposition and the determinant on `cuda`: on a host copy.

No Triton kernel yet (an SVD is an iterative algorithm, not one launch): these copy the
matrices to the host, run the CPU's LAPACK routines (kernel_support/spectral.py) and copy
the results back, in PyTorch's layout. explain() shows the `_on_host` kernel; the
`tensorplay.dispatch` logger says it each call (triton_kernels/linalg.py's `_on_host`).
"""
from __future__ import annotations

import numpy as np

from tensorplay._device_transfer import from_host
from tensorplay.kernel_support import spectral
from tensorplay.kernel_support.ops import shape_rule
from triton_kernels.linalg import _on_device, _on_host


def _vectors(array, spec, device):
    if array is None:       # not computed: the empty [0] placeholder
        return from_host(np.empty(spec.sizes, spec.dtype.np), spec.dtype, device)
    return _on_device(array, spec, device)


def linalg_svd_on_host(A, full_matrices, compute_uv, driver):
    u, s, vh = shape_rule("eigen.svd")("_linalg_svd", (A, full_matrices, compute_uv, driver))
    a, = _on_host("_linalg_svd", A)
    U, S, Vh = spectral.svd(a, full_matrices, compute_uv, "linalg_svd")
    device = A._impl.device
    return _vectors(U, u, device), from_host(S, s.dtype, device), _vectors(Vh, vh, device)


def linalg_eigh_on_host(A, UPLO, compute_v):
    w, v = shape_rule("eigen.eigh")("_linalg_eigh", (A, UPLO, compute_v))
    a, = _on_host("_linalg_eigh", A)
    L, V = spectral.eigh(a, UPLO, compute_v)
    device = A._impl.device
    return from_host(L, w.dtype, device), _vectors(V, v, device)


def linalg_det_on_host(A):
    spec = shape_rule("eigen.det")("linalg_det", (A,))
    a, = _on_host("linalg_det", A)
    return from_host(spectral.det(a), spec.dtype, A._impl.device)
