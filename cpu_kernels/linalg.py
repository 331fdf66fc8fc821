"""Matrix products (matmul itself is Composite: it reshapes and calls mm/bmm), and the
LAPACK routines of inv, slogdet, solve and cholesky (tensorplay/kernel_support/lapack.py)."""
from __future__ import annotations

import math

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.kernel_support import lapack
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.library import kernel
from cpu_kernels._common import accumulate_dtype, out, out_strided, scalar_as


def _matmul(self, mat2, dtype=None):
    """self @ mat2 in `dtype` (self's by default)."""
    dtype = dtype or self._impl.dtype
    # Half types accumulate in float32 and round once, as PyTorch does: NumPy's float16
    # matmul would round after every multiply-add.
    acc = accumulate_dtype(self._impl.dtype)
    a, b = self._impl.array(), mat2._impl.array()
    if a.dtype != acc:
        a, b = a.astype(acc), b.astype(acc)
    if a.ndim >= 2 and b.ndim >= 2 and a.shape[-1] == 1:
        # An inner dim of 1 is a (batch of) outer product(s), e.g. the per-example weight
        # gradients of a linear layer under vmap: NumPy's matmul does not hand it to BLAS
        # and is several times slower than the broadcast product, which is the same sum
        # of one term.
        return out(np.multiply(a, b), dtype)
    return out(np.matmul(a, b), dtype)


def mm(self, mat2):
    shape_rule("mm")(None, (self, mat2))
    return _matmul(self, mat2)


def bmm(self, mat2):
    spec = shape_rule("bmm")(None, (self, mat2))
    return _matmul(self, mat2, spec.dtype)


def _acc(*tensors, dtype=None):
    """The tensors' data in the dtype products accumulate in: that of `dtype` (the
    result's, where the operands may differ: einsum), else of the first tensor's (all
    share one dtype)."""
    acc = accumulate_dtype(dtype or tensors[0]._impl.dtype)
    arrays = [t._impl.array() for t in tensors]
    return [a if a.dtype == acc else a.astype(acc) for a in arrays]


def mv(self, vec):
    shape_rule("linalg.mv")("mv", (self, vec))
    a, v = _acc(self, vec)
    return out(np.matmul(a, v), self._impl.dtype)


def dot(self, tensor):
    shape_rule("linalg.dot")("dot", (self, tensor))
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


# The shape rules of the three, by the names ops.yaml gives them.
_RULES = {"addmm": "linalg.addmm", "addmv": "linalg.addmv", "baddbmm": "linalg.baddbmm"}


@kernel(family=True)
def addmm_addmv_baddbmm(op, self, *params):
    """addmm, addmv and baddbmm, out of place or in place: beta * self + alpha * (a @ b)
    with (a, b) = (mat1, mat2), (mat, vec) or (batch1, batch2), batch by batch."""
    a, b, beta, alpha = params
    shape_rule(_RULES[op.rstrip("_")])(op, (self,) + params)
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
    shape_rule("linalg.linear")("linear", (input, weight, bias))
    x, w = _acc(input, weight)
    if x.ndim > 2:
        # One (rows, in) @ (in, out) product, not a batch of small ones: NumPy's matmul
        # runs a 3-D operand as one BLAS call per leading index (2x slower at (16, 32, 64)),
        # and a transposed input (batch_first attention) is worth its copy by reshape.
        r = np.matmul(_rows(x), w.T).reshape(x.shape[:-1] + (w.shape[0],))
    else:
        r = np.matmul(x, w.T)
    if bias is not None:
        r += bias._impl.array()
    return out(r, input._impl.dtype)


def linear_backward(grad_output, input, weight, output_mask):  # noqa: A002
    """(grad_input, grad_weight, grad_bias) of linear(input, weight, bias), the batch dims
    flattened into rows (g: (rows, out), x: (rows, in)):

        grad_input = g @ weight     grad_weight = g^T @ x     grad_bias = sum of g's rows

    with the other operand conjugated for complex numbers, as linear's formulas. Three
    BLAS calls (the bias sum a vector-matrix product with ones, as sum_dim's) where the
    composed formulas take a dozen ops for a 3-D input. input (weight) may be None when
    output_mask leaves out grad_weight (grad_input), as linear's node then saves none."""
    specs = shape_rule("linalg.linear_backward")(
        "_linear_backward", (grad_output, input, weight, output_mask))
    (g,) = _acc(grad_output)
    g = _rows(g)
    values = [None, None, None]
    if output_mask[0]:
        (w,) = _acc(weight, dtype=grad_output._impl.dtype)
        values[0] = (g @ _conj(w)).reshape(specs[0].sizes)
    if output_mask[1]:
        (x,) = _acc(input, dtype=grad_output._impl.dtype)
        values[1] = g.T @ _conj(_rows(x))
    if output_mask[2]:
        values[2] = np.ones(g.shape[0], g.dtype) @ g
    return tuple(None if spec is None else out(v, spec.dtype)
                 for v, spec in zip(values, specs))


def _rows(a):
    """a as a (rows, last dim) matrix, the leading dims flattened (a view where they
    can be). The row count is computed, not reshape's -1: with an empty last dim
    (in_features or out_features 0, e.g. an RNN cell of input_size 0) -1 is ambiguous
    and NumPy refuses it, whereas the rows are still well defined."""
    # (math.prod, not np.prod: 3 us of a 50 us linear call)
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


def _conj(a):
    return a.conj() if a.dtype.kind == "c" else a


@kernel(family=True)
def triangle(op, self, diagonal):
    """tril and triu, out of place or in place (tril_, triu_)."""
    shape_rule("linalg.tril")(op, (self, diagonal))
    pick = np.tril if op.startswith("tril") else np.triu
    a = self._impl.array()
    if op.endswith("_"):
        np.copyto(a, pick(a, diagonal))
        return self
    return out(pick(a, diagonal), self._impl.dtype)


def diag(self, diagonal):
    """A vector becomes a square matrix with it on diagonal `diagonal`; a matrix gives
    (a copy of) that diagonal."""
    spec = shape_rule("linalg.diag")("diag", (self, diagonal))
    a = self._impl.array()
    if a.ndim == 2 and spec.sizes[0] == 0:
        return out(np.zeros(0, a.dtype), self._impl.dtype)
    return out(np.diag(a, diagonal).copy(), self._impl.dtype)


# ---- inverses, determinants, solves, factorizations (LAPACK through NumPy) -------------
# Each checks its input with its shape rule, runs kernel_support/lapack.py on the data and
# raises LinAlgError for a bad matrix unless it is an `_ex` form without check_errors.

def linalg_inv_ex(A, check_errors):
    spec, _ = shape_rule("linalg.square_factorization")("linalg_inv_ex", (A, check_errors))
    inverse, info = lapack.inv_ex(A._impl.array())
    if check_errors:
        lapack.check_info("linalg_inv_ex", info, lapack.INV_FAILED)
    return out_strided(inverse, spec.dtype, spec.strides), out(info, dt.int32)


def linalg_slogdet(A):
    shape_rule("linalg.slogdet")("linalg_slogdet", (A,))
    sign, logabsdet = lapack.slogdet(A._impl.array())
    return out(sign, A._impl.dtype), out(logabsdet, A._impl.dtype)


def linalg_solve(A, B, left):
    spec = shape_rule("linalg.solve")("linalg_solve", (A, B, left))
    vector = lapack.solve_is_vector(A._impl.sizes, B._impl.sizes)
    x = lapack.solve_arrays(A._impl.array(), B._impl.array(), left, vector).reshape(spec.sizes)
    return out(x, spec.dtype) if spec.strides is None else out_strided(x, spec.dtype,
                                                                       spec.strides)


def linalg_cholesky_ex(A, upper, check_errors):
    spec, _ = shape_rule("linalg.square_factorization")("linalg_cholesky_ex",
                                                        (A, upper, check_errors))
    factor, info = lapack.cholesky_ex(A._impl.array(), upper)
    if check_errors:
        lapack.check_info("linalg_cholesky_ex", info, lapack.CHOLESKY_FAILED)
    return out_strided(factor, spec.dtype, spec.strides), out(info, dt.int32)


# ---- the matrix exponential ------------------------------------------------------------
def expm_arrays(a):
    """exp(A) for each matrix of the stack `a`: SciPy's scaling and squaring with Pade
    approximants (Al-Mohy and Higham 2009). PyTorch uses Taylor polynomials of a degree
    chosen from the norm (Bader, Blanes and Casas 2019); both are accurate to a few ulps
    times the condition number, so they agree to ~1e-13 in float64. The narrower types
    are computed in double precision and rounded once: SciPy's float32 routine is about
    twice as far from the exact value as PyTorch's float32 Taylor sum, which put the two
    past float32's tolerance on a tangent (the block matrix exp of matrix_exp_jvp, seed
    65885: 5e-4 apart on 178.72); rounded once, only PyTorch's own error remains."""
    import scipy.linalg     # (imported here: only this kernel needs it)

    if a.size == 0:
        return np.empty(a.shape, np.float32 if a.dtype.itemsize < 4 else a.dtype)
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    narrow = np.float32 if a.dtype.itemsize < 4 else a.dtype
    return scipy.linalg.expm(a.astype(wide)).astype(narrow)


def linalg_matrix_exp(self):
    spec = shape_rule("linalg.matrix_exp")("linalg_matrix_exp", (self,))
    return out(expm_arrays(self._impl.array()), spec.dtype)
