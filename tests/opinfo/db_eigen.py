"""Database entries: the SVD, the symmetric eigendecomposition and what is built on them
(svd, svdvals, eigh, eigvalsh, det, pinv, pinverse, matrix_rank, cond).

Gauge. Singular and eigen vectors are determined up to a sign per vector (LAPACK's choice
differs between NumPy's and PyTorch's builds), so the entries of svd and eigh compare
functions of the decomposition that do not see that sign, as PyTorch's OpInfos do: the
values, the squares U * U and Vh * Vh, and the product U @ Vh (a sign flips a column of U
and the matching row of Vh together). Their gradients are then gauge-invariant too. The
full_matrices columns past k = min(m, n) are any basis of the complement: left out.

Samples have well separated singular values (eigenvalues), where the decompositions are
smooth: A = Q1 diag(s) Q2 with s spread over [1, 1 + k/2]. eigh reads one triangle, so
its entries (and pinv's and matrix_rank's hermitian ones) symmetrize their input first,
(A + A^T) / 2, as PyTorch's gradcheck_wrapper_hermitian_input does.
"""
from __future__ import annotations

from functools import partial

import numpy as np
import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, LinAlgError, ShapeError
from opinfo.core import ErrorInput as E, OpInfo, rng_for, SampleInput as S
from opinfo.reduction_common import t_

LAPACK_DTYPES = (tp.float32, tp.float64)
TOL = {tp.float32: (1e-4, 1e-4)}
LAYOUTS = ("contiguous", "transposed", "strided")


def _tensor(x, dtype, device, layout, requires_grad):
    """A tensor holding array x, laid out in memory as `layout` says."""
    if layout == "transposed":
        t = tp.tensor(np.swapaxes(x, -1, -2).copy(), dtype=dtype, device=device).mT
    elif layout == "strided":
        wide = np.repeat(x, 2, axis=-1)
        t = tp.tensor(wide, dtype=dtype, device=device)[..., ::2]
    else:
        t = tp.tensor(x, dtype=dtype, device=device)
    t = t.detach()
    if requires_grad:
        t.requires_grad_(True)
    return t


def _orthonormal(rng, n, k):
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return q[:, :k]


def distinct_svd(shape, rng):
    """A stack of matrices with singular values 1 + k/2 ... 1, 1/2 apart."""
    *batch, m, n = shape
    k = min(m, n)
    out = np.empty(shape)
    for idx in np.ndindex(*batch):
        s = 1.0 + 0.5 * np.arange(k)[::-1]
        out[idx] = _orthonormal(rng, m, k) @ np.diag(s) @ _orthonormal(rng, n, k).T
    return out


def distinct_symmetric(shape, rng):
    """A stack of symmetric matrices with eigenvalues 1/2 apart, of both signs."""
    *batch, n, _ = shape
    out = np.empty(shape)
    for idx in np.ndindex(*batch):
        lam = 0.5 * np.arange(n) - 0.25 * n + 0.1
        q = _orthonormal(rng, n, n)
        out[idx] = q @ np.diag(lam) @ q.T
    return out


def _symmetric(A):
    """(A + A^T) / 2 for the square float matrices a sample holds."""
    if A.dim() >= 2 and A.shape[-1] == A.shape[-2] and A.dtype.is_floating_point:
        return (A + A.mT) / 2
    return A


MATRIX_SHAPES = [(3, 3), (4, 3), (3, 5), (2, 4, 3), (2, 3, 4), (0, 3, 2), (3, 0), (1, 1)]
SQUARE_SHAPES = [(3, 3), (2, 4, 4), (1, 2, 2), (0, 3, 3), (0, 0), (1, 1)]


def _matrix_samples(op, device, dtype, requires_grad, shapes=MATRIX_SHAPES,
                    make=distinct_svd, kwargs_list=({},), args=()):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_floating_point
    k = 0
    for shape in shapes:
        for kw in kwargs_list:
            x = make(shape, rng)
            layout = LAYOUTS[k % 3]
            k += 1
            yield S(_tensor(x, dtype, device, layout, grad), args, dict(kw),
                    name=f"{list(shape)} {layout} {kw}")


_square_samples = partial(_matrix_samples, shapes=SQUARE_SHAPES)
_symmetric_samples = partial(_matrix_samples, shapes=SQUARE_SHAPES, make=distinct_symmetric)


# ---- gauge-invariant views of the decompositions (for TensorPlay's and PyTorch's alike) ---
def svd_invariants(U, S, Vh):
    """S, U * U, Vh * Vh and U @ Vh of the reduced SVD (the first k columns / rows)."""
    k = S.shape[-1]
    U, Vh = U[..., :, :k], Vh[..., :k, :]
    return S, U * U, Vh * Vh, U @ Vh


def eigh_invariants(L, V):
    """L, V * V, and V diag(L) V^T (the matrix back)."""
    return L, V * V, (V * L.unsqueeze(-2)) @ V.mT


def _linalg_svd_op(lib):
    return lambda A, *args, **kw: svd_invariants(*lib.linalg.svd(A, *args, **kw))


def _svd_op(lib):
    def call(A, *args, **kw):
        U, S, V = lib.svd(A, *args, **kw)
        if kw.get("compute_uv", True):
            return svd_invariants(U, S, V.mT)
        return S, U, V      # compute_uv=False: zeros (not differentiable), compared as they are
    return call


def _eigh_op(lib, fn="eigh"):
    def call(A, *args, **kw):
        out = getattr(lib.linalg, fn)(_symmetric(A), *args, **kw)
        return eigh_invariants(*out) if fn == "eigh" else out
    return call


def _hermitian(fn):
    """fn with a symmetrized input (for the hermitian=True forms)."""
    return lambda A, *args, **kw: fn(_symmetric(A), *args, **kw)


# ---- error inputs -----------------------------------------------------------------------
def _errors_matrix(op, device, arg="A", square=False, nonfinite=False):
    name = op.name
    yield E(S(t_((3,), device=device)), ShapeError, rf"{name}\(\): the input tensor '{arg}' "
            r"must have at least 2 dimensions", arg=arg)
    yield E(S(t_((3, 3), tp.int64, device=device)), DTypeError, r"expected a floating point "
            rf"tensor as input \('{arg}'\), but got int64", arg=arg)
    if square:
        yield E(S(t_((2, 3, 4), device=device)), ShapeError, rf"{name}\(\): '{arg}' must be "
                r"batches of square matrices, but they are 3 by 4 matrices", arg=arg)
    if nonfinite:
        bad = tp.tensor([[[1.0, 0.0], [0.0, 1.0]], [[float("nan"), 1.0], [1.0, 1.0]]],
                        device=device)
        yield E(S(bad), LinAlgError, rf"{name}\(\): \(Batch element 1\): The algorithm failed "
                r"to converge because the input matrix contained non-finite values",
                meta=False)


def _errors_svd(op, device):
    yield from _errors_matrix(op, device, nonfinite=True)
    yield E(S(t_((3, 3), device=device), (), {"driver": "gesvd"}), ArgumentError,
            r"linalg_svd\(\): keyword argument 'driver' is only supported on CUDA",
            arg="driver")


def _errors_eigh(op, device):
    yield from _errors_matrix(op, device, arg="self", square=True)
    yield E(S(t_((3, 3), device=device), ("X",)), ArgumentError,
            rf"{op.name}\(\): expected 'UPLO' to be 'L' or 'U', but got 'X'", arg="UPLO")


def _errors_cond(op, device):
    yield E(S(t_((3,), device=device)), ShapeError, r"linalg_cond\(\): The input tensor "
            r"'self' must have at least 2 dimensions", arg="self")
    yield E(S(t_((3, 3), device=device), (3,)), ArgumentError,
            r"linalg_cond\(\): got an invalid norm type: 3", arg="p", meta=False)
    yield E(S(t_((3, 4), device=device), (1,)), ShapeError, r"linalg_cond\(\): with p=1, "
            r"'self' must be batches of square matrices", arg="self")


def _errors_cond_str(op, device):
    yield E(S(t_((3, 3), device=device), ("bad",)), ArgumentError,
            r"linalg_cond\(\): got an invalid norm type: bad", arg="p", meta=False)
    yield E(S(t_((3, 4), device=device), ("fro",)), ShapeError, r"linalg_cond\(\): with "
            r"p='fro', 'self' must be batches of square matrices", arg="self")


# ---- pinv, matrix_rank and cond samples ---------------------------------------------------
def _pinv_samples(op, device, dtype, requires_grad, hermitian=False):
    """The float-tolerance and rcond forms. Some tolerances cut a singular value
    (2.0 > 1.5 > 1.0 here): those samples are not for finite differences, since PyTorch's
    gradient (pinv_backward) is the Moore-Penrose inverse's, not the truncated one's; their
    gradients are still compared with PyTorch's."""
    kws = ({}, {"rtol": 0.6}, {"atol": 1.2}, {"atol": 0.5, "rtol": 0.6}, {"rtol": 0.1})
    shapes = SQUARE_SHAPES if hermitian else MATRIX_SHAPES
    make = distinct_symmetric if hermitian else distinct_svd
    for s in _matrix_samples(op, device, dtype, requires_grad, shapes, make,
                             [dict(kw, hermitian=True) if hermitian else kw for kw in kws]):
        cuts = s.kwargs.get("atol", 0) > 0.5 or s.kwargs.get("rtol", 0) > 0.5
        yield S(s.input, s.args, s.kwargs, name=s.name, grad=not cuts)
    rng = rng_for(op.full_name, dtype, "rcond")
    grad = requires_grad and dtype.is_floating_point
    for rcond in (0.6, 0.1):
        yield S(_tensor(make((2, 3, 3), rng), dtype, device, "transposed", grad), (rcond,),
                {"hermitian": hermitian}, name=f"rcond={rcond}", grad=rcond < 0.5)


def _pinverse_samples(op, device, dtype, requires_grad):
    for s in _matrix_samples(op, device, dtype, requires_grad,
                             kwargs_list=({}, {"rcond": 0.6}, {"rcond": 0.1})):
        yield S(s.input, s.args, s.kwargs, name=s.name, grad=s.kwargs.get("rcond", 0) < 0.5)


def _pinv_tensor_samples(op, device, dtype, requires_grad):
    """The Tensor-tolerance forms: a batch of tolerances broadcast against the batch."""
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_floating_point

    def matrix():
        return _tensor(distinct_svd((2, 4, 3), rng), dtype, device, "contiguous", grad)
    yield S(matrix(), (), {"atol": tp.tensor([0.0, 1.2], dtype=tp.float64, device=device)},
            name="atol tensor", grad=False)
    yield S(matrix(), (), {"atol": tp.tensor([0.0, 1.2], dtype=tp.float64, device=device),
                           "rtol": tp.tensor([0.6, 0.0], device=device)},
            name="atol and rtol tensors", grad=False)
    yield S(matrix(), (), {"atol": tp.tensor(0.0, device=device)}, name="atol 0")
    yield S(matrix(), (tp.tensor(0.1, device=device),), name="rcond tensor")


def _rank_samples(op, device, dtype, requires_grad, hermitian=False):
    """Full-rank and rank-deficient matrices (rank 2 of 4: zero singular values, which
    the default tolerance eps * max(m, n) * s_max must drop)."""
    yield from _pinv_samples(op, device, dtype, requires_grad, hermitian)
    rng = rng_for(op.full_name, dtype, "deficient")
    x = rng.standard_normal((3, 4, 2))
    low = x @ np.swapaxes(x, -1, -2)            # symmetric, rank 2
    yield S(_tensor(low, dtype, device, "contiguous", False), (), {"hermitian": hermitian},
            name="rank 2 of 4")
    yield S(_tensor(low, dtype, device, "contiguous", False), (), {"atol": 1e-3, "rtol": 0.0,
                                                                  "hermitian": hermitian},
            name="rank 2 of 4, atol")


def _rank_tensor_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    A = _tensor(distinct_svd((2, 4, 3), rng), dtype, device, "contiguous", False)
    yield S(A, (), {"atol": tp.tensor([0.0, 1.2], dtype=tp.float64, device=device)},
            name="atol tensor")
    yield S(A, (), {"atol": tp.tensor(0.0, device=device),
                    "rtol": tp.tensor([0.6, 0.0], device=device)}, name="atol and rtol")
    yield S(A, (tp.tensor(1.2, device=device),), name="tol tensor")
    yield S(A, (1.2,), name="tol float")


# PyTorch's cond through the inverse (p = 1, -1, inf, -inf, 'fro') cannot be
# differentiated: it writes inf into the saved inverse in place (masked_fill_) and its
# backward raises. TensorPlay's can (written out of place); those samples carry no grad
# here, and tests/test_linalg_spectral.py checks their gradients by finite differences.
def _cond_samples(op, device, dtype, requires_grad):
    shapes = [(3, 3), (2, 4, 4), (0, 3, 3), (0, 0)]
    rect = [(4, 3), (2, 3, 5)]
    for p in (None, 2, -2):
        yield from _matrix_samples(op, device, dtype, requires_grad, shapes + rect,
                                   kwargs_list=({} if p is None else {"p": p},))
    for p in (1, -1, float("inf"), float("-inf")):
        yield from _matrix_samples(op, device, dtype, False, shapes, kwargs_list=({"p": p},))


def _cond_str_samples(op, device, dtype, requires_grad):
    for p in ("fro", "nuc"):
        yield from _matrix_samples(op, device, dtype, requires_grad and p == "nuc",
                                   [(3, 3), (2, 4, 4), (0, 3, 3)], args=(p,))


EIGEN = [
    OpInfo("linalg_svd", op=_linalg_svd_op(tp), ref=_linalg_svd_op(torch),
           overloads=("linalg_svd", "_linalg_svd"), dtypes=LAPACK_DTYPES, tolerances=TOL,
           method=False,
           sample_inputs_func=partial(_matrix_samples,
                                      kwargs_list=({}, {"full_matrices": False})),
           error_inputs_func=_errors_svd),
    OpInfo("svd", op=_svd_op(tp), ref=_svd_op(torch), overloads=("svd",),
           dtypes=LAPACK_DTYPES, tolerances=TOL, method=False,
           sample_inputs_func=partial(_matrix_samples, kwargs_list=(
               {}, {"some": False}, {"compute_uv": False})),
           error_inputs_func=partial(_errors_matrix, arg="self")),
    OpInfo("linalg_svdvals", op=tp.linalg.svdvals, ref=torch.linalg.svdvals,
           overloads=("linalg_svdvals",), dtypes=LAPACK_DTYPES, tolerances=TOL,
           sample_inputs_func=_matrix_samples, error_inputs_func=_errors_matrix),
    OpInfo("linalg_eigh", op=_eigh_op(tp), ref=_eigh_op(torch),
           overloads=("linalg_eigh", "_linalg_eigh"), dtypes=LAPACK_DTYPES, tolerances=TOL,
           method=False,
           sample_inputs_func=partial(_symmetric_samples, kwargs_list=({}, {"UPLO": "U"})),
           error_inputs_func=_errors_eigh),
    OpInfo("linalg_eigvalsh", op=_eigh_op(tp, "eigvalsh"), ref=_eigh_op(torch, "eigvalsh"),
           overloads=("linalg_eigvalsh",), dtypes=LAPACK_DTYPES, tolerances=TOL,
           method=False,
           sample_inputs_func=partial(_symmetric_samples, kwargs_list=({}, {"UPLO": "U"})),
           error_inputs_func=_errors_eigh),
    OpInfo("linalg_det", op=tp.linalg.det, ref=torch.linalg.det, overloads=("linalg_det",),
           dtypes=LAPACK_DTYPES, tolerances=TOL, sample_inputs_func=_square_samples,
           error_inputs_func=partial(_errors_matrix, square=True)),
    OpInfo("det", overloads=("det",), dtypes=LAPACK_DTYPES, tolerances=TOL,
           sample_inputs_func=_square_samples,
           error_inputs_func=partial(_errors_matrix, arg="self", square=True)),
    OpInfo("linalg_pinv", op=tp.linalg.pinv, ref=torch.linalg.pinv,
           overloads=("linalg_pinv.atol_rtol_float", "linalg_pinv"), dtypes=LAPACK_DTYPES,
           tolerances=TOL, sample_inputs_func=_pinv_samples,
           error_inputs_func=partial(_errors_matrix, arg="self")),
    OpInfo("linalg_pinv", "hermitian", op=_hermitian(tp.linalg.pinv),
           ref=_hermitian(torch.linalg.pinv),
           overloads=("linalg_pinv.atol_rtol_float", "linalg_pinv"), dtypes=LAPACK_DTYPES,
           tolerances=TOL, sample_inputs_func=partial(_pinv_samples, hermitian=True)),
    OpInfo("linalg_pinv", "tensor_tolerances", op=tp.linalg.pinv, ref=torch.linalg.pinv,
           overloads=("linalg_pinv.atol_rtol_tensor", "linalg_pinv.rcond_tensor"),
           dtypes=LAPACK_DTYPES, tolerances=TOL, sample_inputs_func=_pinv_tensor_samples),
    OpInfo("pinverse", overloads=("pinverse",), dtypes=LAPACK_DTYPES, tolerances=TOL,
           sample_inputs_func=_pinverse_samples,
           error_inputs_func=partial(_errors_matrix, arg="self")),
    OpInfo("linalg_matrix_rank", op=tp.linalg.matrix_rank, ref=torch.linalg.matrix_rank,
           overloads=("linalg_matrix_rank.atol_rtol_float", "linalg_matrix_rank"),
           dtypes=LAPACK_DTYPES, supports_autograd=False, sample_inputs_func=_rank_samples,
           error_inputs_func=partial(_errors_matrix, arg="self")),
    OpInfo("linalg_matrix_rank", "hermitian", op=_hermitian(tp.linalg.matrix_rank),
           ref=_hermitian(torch.linalg.matrix_rank),
           overloads=("linalg_matrix_rank.atol_rtol_float", "linalg_matrix_rank"),
           dtypes=LAPACK_DTYPES, supports_autograd=False,
           sample_inputs_func=partial(_rank_samples, hermitian=True)),
    OpInfo("linalg_matrix_rank", "tensor_tolerances", op=tp.linalg.matrix_rank,
           ref=torch.linalg.matrix_rank,
           overloads=("linalg_matrix_rank.atol_rtol_tensor", "linalg_matrix_rank.tol_tensor",
                      "linalg_matrix_rank"),
           dtypes=LAPACK_DTYPES, supports_autograd=False,
           sample_inputs_func=_rank_tensor_samples),
    OpInfo("linalg_cond", op=tp.linalg.cond, ref=torch.linalg.cond, overloads=("linalg_cond",),
           dtypes=LAPACK_DTYPES, tolerances=TOL, sample_inputs_func=_cond_samples,
           error_inputs_func=_errors_cond),
    OpInfo("linalg_cond", "str", op=tp.linalg.cond, ref=torch.linalg.cond,
           overloads=("linalg_cond.p_str",), dtypes=LAPACK_DTYPES, tolerances=TOL,
           sample_inputs_func=_cond_str_samples, error_inputs_func=_errors_cond_str),
]

op_db = EIGEN


# ---- svd_lowrank, pca_lowrank ------------------------------------------------------------------
# Their columns come from a random projection: U, S and V differ from PyTorch's by the draw
# (and by signs), but U diag(S) V^T is A - M itself when q is at least its rank. The
# entries compare that product and S, for matrices of low rank. Their gradients depend on
# the draw too, so they are checked by finite differences in tests/test_lowrank.py.
def _reconstructed(lowrank):
    def run(A, *args, **kwargs):
        U, S, V = lowrank(A, *args, **kwargs)
        return (U * S.unsqueeze(-2)) @ V.mT, S
    return run


def _low_rank(shape, rank, dtype, device, rng):
    m, n = shape[-2:]
    batch = tuple(shape[:-2])
    a = rng.standard_normal(batch + (m, rank)) @ rng.standard_normal(batch + (rank, n))
    return tp.tensor(a, dtype=dtype, device=device)


def _lowrank_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    if op.name == "svd_lowrank":
        yield S(_low_rank((6, 5), 2, dtype, device, rng), (), {"q": 3}, name="tall, rank 2")
        yield S(_low_rank((4, 7), 2, dtype, device, rng).mT.contiguous().mT, (2, 0),
                name="wide, transposed, q = rank, no power iteration")
        yield S(_low_rank((2, 5, 4), 1, dtype, device, rng), (2,), name="batch")
        M = _low_rank((5, 4), 1, dtype, device, rng)
        yield S(_low_rank((5, 4), 2, dtype, device, rng), (), {"q": 3, "M": M},
                name="A - M of rank 3")
        yield S(tp.zeros((3, 0), dtype=dtype, device=device), (), {"q": 0}, name="empty")
    else:
        means = tp.tensor(rng.standard_normal((1, 5)), dtype=dtype, device=device)
        yield S(_low_rank((7, 5), 2, dtype, device, rng) + means, name="default q")
        yield S(_low_rank((6, 4), 2, dtype, device, rng), (), {"q": 3, "center": False},
                name="not centered")
        yield S(_low_rank((2, 6, 5), 1, dtype, device, rng), (), {"q": 2, "niter": 1},
                name="batch")


def _errors_lowrank(op, device):
    yield E(S(t_((3,), device=device)), ShapeError,
            rf"{op.name}\(\): expected a matrix or a batch of matrices", arg="A")
    if op.name == "pca_lowrank":
        yield E(S(t_((3, 4), device=device), (), {"q": 4}), ArgumentError,
                r"pca_lowrank\(\): q\(=4\) must be non-negative integer and not greater than "
                r"min\(m, n\)=3", arg="q")
        yield E(S(t_((3, 4), device=device), (), {"niter": -1}), ArgumentError,
                r"pca_lowrank\(\): niter\(=-1\) must be non-negative integer", arg="niter")


op_db += [
    OpInfo("svd_lowrank", overloads=("svd_lowrank",), op=_reconstructed(tp.svd_lowrank),
           ref=_reconstructed(torch.svd_lowrank), dtypes=LAPACK_DTYPES,
           tolerances={tp.float32: (1e-4, 1e-4)}, sample_inputs_func=_lowrank_samples,
           error_inputs_func=_errors_lowrank, supports_autograd=False),
    OpInfo("pca_lowrank", overloads=("pca_lowrank",), op=_reconstructed(tp.pca_lowrank),
           ref=_reconstructed(torch.pca_lowrank), dtypes=LAPACK_DTYPES,
           tolerances={tp.float32: (1e-4, 1e-4)}, sample_inputs_func=_lowrank_samples,
           error_inputs_func=_errors_lowrank, supports_autograd=False),
]


# ---- lobpcg --------------------------------------------------------------------------------
# Converged eigenpairs agree with PyTorch's to the convergence tolerance (sqrt(eps) of the
# residual) whatever the random start; eigenvectors up to sign, so each column is turned
# to make its largest entry positive. The gradient runs through the iterations here, not
# through PyTorch's closed form (LOBPCGAutogradFunction): not compared.
def _signed(lobpcg):
    def run(A, *args, **kwargs):
        E, X = lobpcg(A, *args, **kwargs)
        pick = X.abs().argmax(-2, keepdim=True)
        return E, X * X.gather(-2, pick).sign()
    return run


def _spd(m, dtype, device, rng, spectrum=None, batch=()):
    q, _ = np.linalg.qr(rng.standard_normal(batch + (m, m)))
    e = np.arange(1.0, m + 1) if spectrum is None else spectrum
    return tp.tensor((q * e) @ np.swapaxes(q, -1, -2), dtype=dtype, device=device)


def _lobpcg_samples(op, device, dtype, requires_grad):
    # (starting vectors given: vmap's per-example loop cannot draw them; tests/test_lowrank.py
    # runs the random start)
    rng = rng_for(op.full_name, dtype)

    def start(*shape):
        return tp.tensor(rng.standard_normal(shape), dtype=dtype, device=device)
    yield S(_spd(12, dtype, device, rng), (), {"k": 2, "X": start(12, 2)}, name="2 largest")
    if device != "cpu":
        return      # tens of iterations, each a dozen launches in the Triton interpreter
    yield S(_spd(12, dtype, device, rng), (), {"k": 3, "largest": False, "X": start(12, 4)},
            name="3 smallest from 4 vectors")
    B = tp.tensor(np.diag(np.linspace(1.0, 2.0, 10)), dtype=dtype, device=device)
    yield S(_spd(10, dtype, device, rng), (), {"B": B, "X": start(10, 2)},
            name="generalized")
    yield S(_spd(9, dtype, device, rng, batch=(2,)), (), {"k": 1, "X": start(2, 9, 1)},
            name="batch")


def _errors_lobpcg(op, device):
    yield E(S(t_((3, 4), device=device)), ShapeError,
            r"lobpcg\(\): expected a square matrix", arg="A")
    yield E(S(t_((6, 6), device=device), (), {"k": 3}), ArgumentError,
            r"lobpcg\(\): LPBPCG algorithm is not applicable when the number of A rows \(=6\) "
            r"is smaller than 3 x the number of requested eigenpairs \(=3\)", arg="k")


op_db += [
    OpInfo("lobpcg", overloads=("lobpcg",), op=_signed(tp.lobpcg), ref=_signed(torch.lobpcg),
           dtypes=LAPACK_DTYPES, tolerances={tp.float32: (2e-3, 2e-3), tp.float64: (1e-6, 1e-6)},
           sample_inputs_func=_lobpcg_samples, error_inputs_func=_errors_lobpcg,
           supports_autograd=False, supports_meta=False,
           supports_out=True),   # (the sign-fixing wrapper returns new tensors: out= unchecked)
]
