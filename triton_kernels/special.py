"""The special functions on `cuda` (family `special`).

Most are elementwise Triton kernels: one expression each, put into the pointwise template
(triton_kernels/_template.py) by pointwise.py's `make_launcher`, exactly as the OPS of
pointwise_expressions.py are. Their scalar math (log-gamma, digamma, erfinv, the Bessel
functions I0/I1, erfcx, ndtri, log_ndtr) is in triton_kernels/_special_math.py:

    >>> import triton_kernels.special as s; print(s.source("lgamma"))

polygamma (for n >= 1 a Hurwitz zeta function) and the incomplete gamma functions
igamma/igammac (series and continued fractions that run until they converge) have no
Triton kernel yet: their `_on_host` kernels copy the inputs to the host, compute with
SciPy (cpu_kernels/special.py's functions, so the values are the CPU's) and copy the
result back. The `tensorplay.dispatch` logger says so each call, and explain() names the
`_on_host` kernel.
"""
from __future__ import annotations

import logging

import numpy as np

from tensorplay._device_transfer import from_host, to_host
from tensorplay.kernel_support.ops import call_below_autograd, schema_of, shape_rule
from tensorplay.kernel_support.overlap import check_inplace_overlap
from triton_kernels import _template
from triton_kernels._launch import new_tensor, operands
from triton_kernels.pointwise import make_launcher, run
from triton_kernels.pointwise_expressions import Pointwise

# kernel name (what ops.yaml's `CUDA:` names) -> the op and its expression over x (and y)
OPS = {
    "lgamma": Pointwise("lgamma", "_special_math.lgamma(x)"),
    "digamma": Pointwise("digamma", "_special_math.digamma(x)"),
    "erfinv": Pointwise("erfinv", "_special_math.erfinv(x)"),
    "i0": Pointwise("i0", "_special_math.i0(x)"),
    "special_i0e": Pointwise("special_i0e", "_special_math.i0e(x)"),
    "special_i1": Pointwise("special_i1", "_special_math.i1(x)"),
    "special_i1e": Pointwise("special_i1e", "_special_math.i1e(x)"),
    "special_erfcx": Pointwise("special_erfcx", "_special_math.erfcx(x)"),
    "special_ndtri": Pointwise("special_ndtri", "_special_math.ndtri(x)"),
    "special_log_ndtr": Pointwise("special_log_ndtr", "_special_math.log_ndtr(x)"),
    # -x log x; 0 at 0, -inf below it (nan stays nan: no branch takes it)
    "special_entr": Pointwise("special_entr", "tl.where(x > 0, -x * tl.log(x), "
                              "tl.where(x == 0, 0.0, tl.where(x < 0, -float('inf'), x)))"),
    # x log1p(y), and 0 where x == 0 unless y is nan
    "special_xlog1py": Pointwise("special_xlog1py", "tl.where((x == 0) & (y == y), 0.0, "
                                 "x * _math.log1p(y))"),
}
for _name in ("lgamma", "digamma", "erfinv", "i0"):
    OPS[f"{_name}_"] = Pointwise(f"{_name}_", OPS[_name].expr)
del _name

for _kernel_name, _op_entry in OPS.items():
    globals()[_kernel_name] = make_launcher(_kernel_name, _op_entry)
del _kernel_name, _op_entry


def source(name, rank=1):
    """The generated Triton source of kernel `name` for a rank-`rank` result."""
    entry = OPS[name]
    arity = len(schema_of(entry.op).tensor_positions)
    return _template.source(name, entry.expr, arity, rank)


# ---- on a host copy: polygamma, igamma, igammac --------------------------------------
log = logging.getLogger("tensorplay.dispatch")


def _on_host(op, dtype, *tensors):
    """The tensors' elements as host arrays in the dtype `dtype` computes in (the half
    types in float32, as on the CPU), strided ones copied row-major first."""
    log.info("%s on cuda: no Triton kernel, SciPy on a host copy", op)
    compute = np.float32 if dtype.itemsize == 2 else dtype.np
    arrays = []
    for t in tensors:
        if not t._impl.is_contiguous:
            dense = new_tensor(t._impl.sizes, t._impl.dtype, t._impl.device)
            run("copy", dense, (t,), t._impl.dtype)
            t = dense
        arrays.append(to_host(t).astype(compute))
    return arrays


def _into_self(self, result):
    """An in-place op's result written into self (its strides, its dtype)."""
    call_below_autograd("copy_", self, result, False)
    return self


def polygamma_on_host(n, self):
    from cpu_kernels.special import polygamma_array
    spec = shape_rule("special.polygamma")("polygamma", (n, self))
    device, (self,) = operands("polygamma", self=self)
    x, = _on_host("polygamma", spec.dtype, self)
    with np.errstate(all="ignore"):
        return from_host(polygamma_array(n, x), spec.dtype, device)


def polygamma__on_host(self, n):
    shape_rule("special.polygamma_")("polygamma_", (self, n))
    check_inplace_overlap("polygamma_", self)
    return _into_self(self, polygamma_on_host(n, self))


def _binary_on_host(name):
    def fallback(self, other):
        from cpu_kernels.special import FUNCTIONS
        spec = shape_rule("pointwise.binary_floating")(name, (self, other))
        device, (a, b) = operands(name, self=self, other=other)
        x, y = _on_host(name, spec.dtype, a, b)
        with np.errstate(all="ignore"):
            return from_host(np.asarray(FUNCTIONS[name](x, y)), spec.dtype, device)

    def fallback_(self, other):
        shape_rule("pointwise.binary_floating")(f"{name}_", (self, other))
        check_inplace_overlap(f"{name}_", self, ("other", other))
        return _into_self(self, fallback(self, other))

    fallback.__name__ = fallback.__qualname__ = f"{name}_on_host"
    fallback_.__name__ = fallback_.__qualname__ = f"{name}__on_host"
    return fallback, fallback_


igamma_on_host, igamma__on_host = _binary_on_host("igamma")
igammac_on_host, igammac__on_host = _binary_on_host("igammac")
