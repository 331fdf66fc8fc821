"""Matrix and vector kernels besides the matmul itself (linalg.py: mm, bmm): mv, dot, addmm,
addmv, baddbmm, linear, einsum, and the triangle and diagonal ops tril/triu, diag.

Products accumulate half types in float32 and round once (as PyTorch does, and as
linalg.py's mm does). `linear` is one np.matmul (plus the bias): it is the hot path of
every nn.Linear, so it does not go through a chain of generic ops.
"""
from __future__ import annotations

import numpy as np

from tensorplay.dispatch.plan_cache import plans
from tensorplay.library import kernel
from tensorplay.meta import reduction_linalg as rules
from tensorplay.meta.einsum_layout import einsum_strides
from cpu_kernels._common import accumulate_dtype, out, out_strided, scalar_as


def _acc(*tensors):
    """The tensors' data in the dtype products accumulate in (all share one dtype)."""
    acc = accumulate_dtype(tensors[0]._impl.dtype)
    arrays = [t._impl.array() for t in tensors]
    return [a if a.dtype == acc else a.astype(acc) for a in arrays]


def mv(self, vec):
    rules.mv("mv", (self, vec))
    a, v = _acc(self, vec)
    return out(np.matmul(a, v), self._impl.dtype)


def dot(self, tensor):
    rules.dot("dot", (self, tensor))
    a, b = _acc(self, tensor)
    return out(np.dot(a, b), self._impl.dtype)


def _scaled_sum(op, self, product, beta, alpha):
    """beta * self + alpha * product; beta == 0 ignores self (nan and inf in it too)."""
    s = self._impl.array().astype(product.dtype, copy=False)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return np.broadcast_to(product, product.shape).copy()
    with np.errstate(invalid="ignore", over="ignore"):
        return product + (s if beta == 1 else s * beta)


_RULES = {"addmm": rules.addmm, "addmv": rules.addmv, "baddbmm": rules.baddbmm}


@kernel(family=True)
def addmm_addmv_baddbmm(op, self, *params):
    """addmm, addmv and baddbmm, out of place or in place: beta * self + alpha * (a @ b)
    with (a, b) = (mat1, mat2), (mat, vec) or (batch1, batch2), batch by batch."""
    a, b, beta, alpha = params
    _RULES[op.rstrip("_")](op, (self,) + params)
    beta = scalar_as(beta, self._impl.dtype)
    alpha = scalar_as(alpha, self._impl.dtype)
    x, y = _acc(a, b)
    result = _scaled_sum(op, self, np.matmul(x, y), beta, alpha)
    if op.endswith("_"):
        np.copyto(self._impl.array(), result, casting="unsafe")
        return self
    return out(result, self._impl.dtype)


def linear(input, weight, bias):  # noqa: A002 - the schema's name
    """input @ weight.T + bias, for input of shape [..., in_features]:

        out[..., o] = sum_i input[..., i] * weight[o, i] + bias[o]"""
    rules.linear("linear", (input, weight, bias))
    x, w = _acc(input, weight)
    r = np.matmul(x, w.T)
    if bias is not None:
        r += bias._impl.array()
    return out(r, input._impl.dtype)


def einsum(equation, tensors):
    """np.einsum on the equation with '...' spelled out as letters (the backward formula
    builds its equations from the same parse)."""
    spec = rules.einsum("einsum", (equation, tensors))
    parsed = rules.parse_einsum("einsum", equation, [t._impl.sizes for t in tensors])
    arrays = _acc(*tensors)
    # The result's layout (PyTorch's) depends on the operands' sizes and strides only.
    layouts = tuple((t._impl.sizes, t._impl.strides) for t in tensors)
    strides = plans.get("cpu.einsum.layout", (parsed.equation, layouts),
                        lambda: einsum_strides(parsed, layouts))
    if len(arrays) <= 2:
        return out_strided(np.einsum(parsed.equation, *arrays), spec.dtype, strides)
    # Three or more operands contract pairwise from left to right, PyTorch's documented
    # order (when opt_einsum is not installed): the order decides the rounding, and
    # whether an inf meets another of the opposite sign (NaN) or stays inf. NumPy puts
    # each pair's result last in the operand list, hence (0, last) after the first pair.
    path = ["einsum_path", (0, 1)] + [(0, k) for k in range(len(arrays) - 2, 0, -1)]
    return out_strided(np.einsum(parsed.equation, *arrays, optimize=path), spec.dtype,
                       strides)


@kernel(family=True)
def triangle(op, self, diagonal):
    """tril and triu, out of place or in place (tril_, triu_)."""
    rules.tril(op, (self, diagonal))
    pick = np.tril if op.startswith("tril") else np.triu
    a = self._impl.array()
    if op.endswith("_"):
        np.copyto(a, pick(a, diagonal))
        return self
    return out(pick(a, diagonal), self._impl.dtype)


def diag(self, diagonal):
    """A vector becomes a square matrix with it on diagonal `diagonal`; a matrix gives
    (a copy of) that diagonal."""
    spec = rules.diag("diag", (self, diagonal))
    a = self._impl.array()
    if a.ndim == 2 and spec.sizes[0] == 0:
        return out(np.zeros(0, a.dtype), self._impl.dtype)
    return out(np.diag(a, diagonal).copy(), self._impl.dtype)
