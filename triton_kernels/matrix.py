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
from tensorplay.library import kernel
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


_RULES = {"addmm": rules.addmm, "addmv": rules.addmv, "baddbmm": rules.baddbmm}
_OPERANDS = {"addmm": ("mat1", "mat2"), "addmv": ("mat", "vec"), "baddbmm": ("batch1", "batch2")}


@kernel(family=True)
def addmm_addmv_baddbmm(op, self, *params):
    """addmm, addmv and baddbmm, out of place or in place: beta * self + alpha * (a @ b)
    with (a, b) = (mat1, mat2), (mat, vec) or (batch1, batch2), batch by batch. A vector
    multiplies as a one-column matrix."""
    a, b, beta, alpha = params
    name = op.rstrip("_")
    spec = _RULES[name](op, (self,) + params)
    first, second = _OPERANDS[name]
    device, (s, a, b) = operands(op, self=self, **{first: a, second: b})
    if name == "addmv":
        prod = linalg.product(a, b.unsqueeze(1), _acc(a._impl.dtype)).squeeze(1)
    else:
        prod = linalg.product(a, b, _acc(a._impl.dtype))
    out = self if op.endswith("_") else new_tensor(spec.sizes, spec.dtype, device)
    return _scaled_sum("addmv" if name == "addmv" else "addmm", s, prod, beta, alpha, out)


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
@kernel(family=True)
def triangle(op, self, diagonal):
    """tril and triu, out of place or in place (tril_, triu_): one generated kernel each,
    keeping the elements on the chosen side of the diagonal."""
    rules.tril(op, (self, diagonal))
    device, _ = operands(op, self=self)
    keep = "col - row <= diagonal" if op.startswith("tril") else "col - row >= diagonal"
    inplace = op.endswith("_")
    out = self if inplace else new_tensor(self._impl.sizes, self._impl.dtype, device)
    return run_expression(op.rstrip("_"), f"tl.where({keep}, x, 0)", out, (self,),
                          self._impl.dtype, {"diagonal": diagonal}, matrix=True)


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
