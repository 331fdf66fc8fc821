"""Linear algebra beyond mm/bmm on the `cuda` device: mv, dot, addmm, addmv, baddbmm,
linear, tril/triu and diag.

The products run the matmul kernels of triton_kernels/linalg.py (half inputs into a
float32 result), and `beta * self + alpha * product` is one pointwise kernel that
rounds once, as the CPU backend does. `linear` is the hot path of every nn.Linear:
one matmul on a 2-D view of the input and weight.T (a transposed view, no copy), and
one pointwise kernel for the bias.
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._generated import functional as F
from tensorplay.meta import reduction_linalg as rules
from triton_kernels import linalg
from triton_kernels._launch import new_tensor, operands
from triton_kernels.copy import fill_
from triton_kernels.pointwise import run, run_expression


def _acc(dtype):
    """Products of half types accumulate (and stay until the last rounding) in float32."""
    return dt.float32 if dtype in (dt.float16, dt.bfloat16) else dtype


def _scaled_sum(name, self, prod, beta, alpha, out):
    """out = beta * self + alpha * prod; beta == 0 ignores self (nan and inf in it too)."""
    if beta == 0:
        return run_expression(f"{name}_beta0", "y * alpha", out, (self, prod), prod.dtype,
                              {"alpha": alpha})
    return run_expression(name, "x * beta + y * alpha", out, (self, prod), prod.dtype,
                          {"beta": beta, "alpha": alpha})


def _addmm_like(op, rule, self, a, b, beta, alpha, inplace):
    spec = rule(op, (self, a, b, beta, alpha))
    device, (s, a, b) = operands(op, self=self, mat1=a, mat2=b)
    prod = linalg.product(a, b, _acc(a._impl.dtype))
    out = self if inplace else new_tensor(spec.sizes, spec.dtype, device)
    return _scaled_sum("addmm", s, prod, beta, alpha, out)


def addmm(self, mat1, mat2, beta, alpha):
    return _addmm_like("addmm", rules.addmm, self, mat1, mat2, beta, alpha, False)


def addmm_(self, mat1, mat2, beta, alpha):
    return _addmm_like("addmm_", rules.addmm, self, mat1, mat2, beta, alpha, True)


def baddbmm(self, batch1, batch2, beta, alpha):
    return _addmm_like("baddbmm", rules.baddbmm, self, batch1, batch2, beta, alpha, False)


def baddbmm_(self, batch1, batch2, beta, alpha):
    return _addmm_like("baddbmm_", rules.baddbmm, self, batch1, batch2, beta, alpha, True)


def _addmv_like(op, self, mat, vec, beta, alpha, inplace):
    spec = rules.addmv(op, (self, mat, vec, beta, alpha))
    device, (s, m, v) = operands(op, self=self, mat=mat, vec=vec)
    prod = linalg.product(m, v.unsqueeze(1), _acc(m._impl.dtype)).squeeze(1)
    out = self if inplace else new_tensor(spec.sizes, spec.dtype, device)
    return _scaled_sum("addmv", s, prod, beta, alpha, out)


def addmv(self, mat, vec, beta, alpha):
    return _addmv_like("addmv", self, mat, vec, beta, alpha, False)


def addmv_(self, mat, vec, beta, alpha):
    return _addmv_like("addmv_", self, mat, vec, beta, alpha, True)


def _rounded(prod, dtype):
    """The product in the op's dtype (one rounding for half types)."""
    if prod._impl.dtype is dtype:
        return prod
    out = new_tensor(prod._impl.sizes, dtype, prod._impl.device)
    return run("copy", out, (prod,), prod._impl.dtype)


def mv(self, vec):
    spec = rules.mv("mv", (self, vec))
    _, (m, v) = operands("mv", self=self, vec=vec)
    prod = linalg.product(m, v.unsqueeze(1), _acc(spec.dtype))
    return _rounded(prod, spec.dtype).view(spec.sizes)


def dot(self, tensor):
    spec = rules.dot("dot", (self, tensor))
    _, (a, b) = operands("dot", self=self, tensor=tensor)
    prod = linalg.product(a.unsqueeze(0), b.unsqueeze(1), _acc(spec.dtype))
    return _rounded(prod, spec.dtype).view(())


def linear(input, weight, bias):  # noqa: A002 - the schema's name
    """input @ weight.T + bias for input [..., in_features]:
        out[..., o] = sum_i input[..., i] * weight[o, i] + bias[o]"""
    spec = rules.linear("linear", (input, weight, bias))
    device, (x, w, b) = operands("linear", input=input, weight=weight, bias=bias)
    features = x._impl.sizes[-1] if x._impl.sizes else 1
    rows = x.reshape([-1, features])
    prod = linalg.product(rows, w.t(), _acc(spec.dtype))
    if b is None:
        return _rounded(prod, spec.dtype).view(spec.sizes)
    out = new_tensor(prod._impl.sizes, spec.dtype, device)
    run_expression("linear_bias", "x + y", out, (prod, b), prod._impl.dtype, {})
    return out.view(spec.sizes)


# ---- triangles and diagonals -------------------------------------------------------------
def _triangle(op, keep, self, diagonal, inplace):
    rules.tril(op, (self, diagonal))
    device, _ = operands(op, self=self)
    out = self if inplace else new_tensor(self._impl.sizes, self._impl.dtype, device)
    return run_expression(op.rstrip("_"), f"tl.where({keep}, x, 0)", out, (self,),
                          self._impl.dtype, {"diagonal": diagonal}, matrix=True)


def tril(self, diagonal):
    return _triangle("tril", "col - row <= diagonal", self, diagonal, False)


def triu(self, diagonal):
    return _triangle("triu", "col - row >= diagonal", self, diagonal, False)


def tril_(self, diagonal):
    return _triangle("tril_", "col - row <= diagonal", self, diagonal, True)


def triu_(self, diagonal):
    return _triangle("triu_", "col - row >= diagonal", self, diagonal, True)


def diag(self, diagonal):
    """A vector becomes a square matrix with it on diagonal `diagonal`; a matrix gives a
    copy of that diagonal. Both are a copy through a strided view of the diagonal."""
    spec = rules.diag("diag", (self, diagonal))
    device, _ = operands("diag", self=self)
    out = new_tensor(spec.sizes, spec.dtype, device)
    if len(self._impl.sizes) == 2:
        if spec.sizes[0] == 0:
            return out
        return run("copy", out, (F.diagonal(self, diagonal),), self._impl.dtype)
    fill_(out, 0)
    n = spec.sizes[0]
    start = diagonal if diagonal >= 0 else -diagonal * n
    on_diagonal = out.as_strided([self._impl.sizes[0]], [n + 1], start)
    run("copy", on_diagonal, (self,), self._impl.dtype)
    return out
