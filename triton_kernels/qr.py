"""QR and least squares on the `cuda` device: no Triton kernel yet. Each `_on_host`
kernel copies the matrices to the host, runs the CPU's LAPACK routines
(kernel_support/lapack_qr.py) and copies the results back, laid out as on the CPU: a
fallback that logs itself (the `tensorplay.dispatch` logger) and that explain() names.
The Householder products are Composite, so they run on `cuda` op by op."""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay._device_transfer import from_host
from tensorplay.kernel_support import lapack_qr
from tensorplay.kernel_support.ops import shape_rule
from triton_kernels.linalg import _on_device, _on_host


def linalg_qr_on_host(A, mode):
    q_spec, r_spec = shape_rule("qr.linalg_qr")("linalg_qr", (A, mode))
    a, = _on_host("linalg_qr", A)
    q, r = lapack_qr.qr(a, mode)
    q = np.empty(0, a.dtype) if q is None else q
    device = A._impl.device
    return _on_device(q, q_spec, device), _on_device(r, r_spec, device)


def geqrf_on_host(self):
    a_spec, tau_spec = shape_rule("qr.geqrf")("geqrf", (self,))
    a, = _on_host("geqrf", self)
    packed, tau = lapack_qr.geqrf(a)
    device = self._impl.device
    return _on_device(packed, a_spec, device), from_host(tau, tau_spec.dtype, device)


def linalg_lstsq_on_host(self, b, rcond, driver):
    specs = shape_rule("qr.linalg_lstsq")("linalg_lstsq", (self, b, rcond, driver))
    a, b_ = _on_host("linalg_lstsq", self, b)
    solution, residuals, rank, sv = lapack_qr.lstsq_arrays(a, b_, rcond, driver,
                                                           specs[0].sizes)
    device, dtype = self._impl.device, self._impl.dtype
    return (_on_device(solution, specs[0], device), from_host(residuals, dtype, device),
            from_host(rank, dt.int64, device), from_host(sv, dtype, device))
