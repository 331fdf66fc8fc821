"""QR and least squares on the CPU: LAPACK through NumPy and SciPy
(tensorplay/kernel_support/lapack_qr.py). Each kernel checks its input with its shape
rule (tensorplay/meta/qr.py), runs the routine on the data and lays the factors out as
the rule says (LAPACK's column-major matrices, PyTorch's layout)."""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.kernel_support import lapack_qr
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import out, out_strided


def _strided(array, spec):
    return out(array, spec.dtype) if spec.strides is None else \
        out_strided(array, spec.dtype, spec.strides)


def linalg_qr(A, mode):
    q_spec, r_spec = shape_rule("qr.linalg_qr")("linalg_qr", (A, mode))
    q, r = lapack_qr.qr(A._impl.array(), mode)
    q = np.empty(0, A._impl.dtype.np) if q is None else q
    return _strided(q, q_spec), _strided(r, r_spec)


def geqrf(self):
    a_spec, tau_spec = shape_rule("qr.geqrf")("geqrf", (self,))
    packed, tau = lapack_qr.geqrf(self._impl.array())
    return _strided(packed, a_spec), out(tau, tau_spec.dtype)


def linalg_lstsq(self, b, rcond, driver):
    specs = shape_rule("qr.linalg_lstsq")("linalg_lstsq", (self, b, rcond, driver))
    solution, residuals, rank, sv = lapack_qr.lstsq_arrays(
        self._impl.array(), b._impl.array(), rcond, driver, specs[0].sizes)
    dtype = self._impl.dtype
    return (_strided(solution, specs[0]), out(residuals, dtype), out(rank, dt.int64),
            out(sv, dtype))
