"""Database entries: triangular factorizations and solves (LU, LDL^T, solve_triangular,
triangular_solve, solve_ex, cholesky_solve, cholesky_inverse).

Samples are well-conditioned (a random matrix plus n on its diagonal), batched, empty,
broadcast and transposed in memory. An op that reads only one triangle of a matrix
(cholesky_solve's and cholesky_inverse's factor) gets that triangle in its `op`/`ref`
lambdas, as PyTorch's own OpInfos do, so finite differences see only the entries the op
reads. LU's factors are compared as they are: LAPACK's pivots are unique for these
matrices (no ties), so PyTorch's and TensorPlay's agree.
"""
from __future__ import annotations

from functools import partial

import numpy as np
import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, LinAlgError, ShapeError
from opinfo.core import ErrorInput as E, make_tensor, OpInfo, rng_for, SampleInput as S
from opinfo.db_linalg import (
    LAPACK_DTYPES, LAPACK_TOL, LAYOUTS, _errors_square, _solve_samples, square,
)
from opinfo.reduction_common import t_


def _matrix(shape, dtype, device, rng, requires_grad, layout="contiguous"):
    """A well-conditioned (possibly rectangular) stack: random plus min(m, n) on the
    leading diagonal, so LU's pivots are clear-cut."""
    m, n = shape[-2:]
    x = rng.standard_normal(shape) + min(m, n) * np.eye(m, n)
    t = tp.tensor(np.swapaxes(x, -1, -2).copy() if layout == "transposed" else x,
                  dtype=dtype, device=device)
    t = (t.mT if layout == "transposed" else t).detach()
    return t.requires_grad_(True) if requires_grad else t


LU_SHAPES = [((3, 3), "contiguous"), ((2, 4, 4), "transposed"), ((3, 5), "contiguous"),
             ((2, 5, 3), "transposed"), ((1, 2, 2), "contiguous"), ((0, 3, 3), "contiguous"),
             ((0, 0), "contiguous")]


def _lu_samples(op, device, dtype, requires_grad, kwargs_list=({},)):
    rng = rng_for(op.full_name, dtype)
    for shape, layout in LU_SHAPES:
        for kw in kwargs_list:
            yield S(_matrix(shape, dtype, device, rng, requires_grad, layout), (), dict(kw),
                    name=f"{list(shape)} {layout} {kw}")


SINGULAR = [[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]]


def _errors_lu(op, device, check_errors=None):
    yield E(S(t_((3,), device=device)), ShapeError, rf"{op.name}\(\): the input tensor 'A' "
            r"must have at least 2 dimensions", arg="A")
    yield E(S(t_((3, 3), tp.int64, device=device)), DTypeError, r"expected a floating point "
            r"tensor as input \('A'\), but got int64", arg="A")
    yield E(S(t_((3, 3), device=device), (), {"pivot": False}), ArgumentError,
            rf"{op.name}\(\): LU without pivoting is not implemented on the CPU", arg="pivot",
            meta=False)
    if check_errors is not None:
        yield E(S(tp.tensor(SINGULAR, device=device), (), check_errors), LinAlgError,
                rf"{op.name}\(\): \(Batch element 1\): U\[2,2\] is zero and using it on "
                r"lu_solve would result in a division by zero", meta=False)


def _unpack_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    kws = ({}, {"unpack_data": False}, {"unpack_pivots": False})
    for k, (shape, layout) in enumerate(LU_SHAPES):
        # (unpack_data=False leaves L and U empty 1-D tensors: PyTorch's backward cannot
        # take their gradients either, so that sample has no gradient to check.)
        grad = requires_grad and kws[k % 3] != {"unpack_data": False}
        LU = _matrix(shape, dtype, device, rng, grad, layout)
        m, n = shape[-2:]
        # Any pivots LAPACK could give: row j swaps with a row j..m-1 (1-based).
        piv = np.array([rng.integers(j, m) + 1 for j in range(min(m, n))] * int(
            np.prod(shape[:-2], dtype=np.int64)), dtype=np.int32)
        pivots = tp.tensor(piv.reshape(shape[:-2] + (min(m, n),)), dtype=tp.int32,
                           device=device)
        yield S(LU, (pivots,), dict(kws[k % 3]), name=f"{list(shape)} {layout} {kws[k % 3]}")


def _errors_unpack(op, device):
    LU = t_((3, 3), device=device)
    yield E(S(LU, (tp.ones((3,), dtype=tp.int64, device=device),)), DTypeError,
            r"lu_unpack\(\): 'LU_pivots' is expected to be a tensor of int32 dtype",
            arg="LU_pivots")
    yield E(S(LU, (tp.full((3,), 4, dtype=tp.int32, device=device),)), ArgumentError,
            r"lu_unpack\(\): pivots passed to lu_unpack must be between 1 and LU.size\(-2\)",
            arg="LU_pivots", meta=False)


def _factored(A):
    """LU and pivots of A (a detached leaf of the same requires_grad)."""
    LU, pivots = tp.linalg.lu_factor(A.detach())
    return LU.detach().requires_grad_(A.requires_grad), pivots


def _lu_solve_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    cases = [((3, 3), (3, 2), {}), ((2, 3, 3), (2, 3, 4), {"adjoint": True}),
             ((3, 3), (2, 3, 1), {}), ((2, 1, 3, 3), (4, 3, 2), {"adjoint": True}),
             ((3, 3), (2, 3), {"left": False}),
             ((2, 3, 3), (2, 4, 3), {"left": False, "adjoint": True}),
             ((0, 3, 3), (0, 3, 2), {}), ((3, 3), (3, 0), {})]
    for k, (a, b, kw) in enumerate(cases):
        LU, pivots = _factored(square(a, dtype, device, rng, requires_grad))
        if k % 2:
            LU = LU.detach().contiguous().requires_grad_(requires_grad)   # row-major
        B = make_tensor(b, dtype, device, rng=rng, layout=LAYOUTS[k % 3],
                        requires_grad=requires_grad)
        yield S(LU, (pivots, B), kw, name=f"{list(a)} {list(b)} {kw}")


def _errors_lu_solve(op, device):
    LU, pivots = tp.linalg.lu_factor(tp.eye(3, device=device))
    yield E(S(LU, (pivots, t_((3,), device=device))), ShapeError,
            r"linalg_lu_solve\(\): the input tensor 'B' must have at least 2 dimensions",
            arg="B")
    yield E(S(LU, (pivots, t_((4, 2), device=device))), ShapeError,
            r"linalg_lu_solve\(\): incompatible shapes of 'LU' and 'B' for the equation "
            r"AX = B", arg="B")
    yield E(S(LU, (pivots, t_((3, 2), tp.float64, device=device))), DTypeError,
            r"linalg_lu_solve\(\): expected 'LU' and 'B' to have the same dtype", arg="B")
    yield E(S(LU, (pivots.long(), t_((3, 2), device=device))), DTypeError,
            r"linalg_lu_solve\(\): 'pivots' is expected to be a tensor of int32", arg="pivots")


def _errors_solve_ex(op, device):
    yield E(S(t_((3, 3), device=device), (t_((4,), device=device),)), ShapeError,
            r"linalg_solve_ex\(\): incompatible shapes of 'A' and 'B'", arg="B")
    yield E(S(tp.tensor(SINGULAR, device=device), (tp.ones((2, 2), device=device),),
              {"check_errors": True}), LinAlgError,
            r"linalg_solve_ex\(\): \(Batch element 1\): The solver failed because the input "
            r"matrix is singular", meta=False)


TRIANGULAR_CASES = [((3, 3), (3, 2), {"upper": True}),
                    ((2, 3, 3), (2, 3, 4), {"upper": False}),
                    ((3, 3), (2, 3, 1), {"upper": True, "unitriangular": True}),
                    ((2, 1, 3, 3), (4, 3, 2), {"upper": False, "unitriangular": True}),
                    ((3, 3), (2, 3), {"upper": True, "left": False}),
                    ((2, 3, 3), (2, 4, 3), {"upper": False, "left": False}),
                    ((0, 3, 3), (0, 3, 2), {"upper": True}), ((3, 3), (3, 0), {"upper": False})]


def _solve_triangular_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for k, (a, b, kw) in enumerate(TRIANGULAR_CASES):
        A = square(a, dtype, device, rng, requires_grad, "transposed" if k % 3 == 1
                   else "contiguous")
        B = make_tensor(b, dtype, device, rng=rng, layout=LAYOUTS[k % 3],
                        requires_grad=requires_grad)
        yield S(A, (B,), kw, name=f"{list(a)} {list(b)} {kw}")


def _errors_solve_triangular(op, device):
    A = t_((3, 3), device=device)
    yield E(S(A, (t_((3,), device=device),), {"upper": True}), ShapeError,
            r"linalg_solve_triangular\(\): the input tensor 'B' must have at least 2 "
            r"dimensions", arg="B")
    yield E(S(A, (t_((4, 2), device=device),), {"upper": True}), ShapeError,
            r"linalg_solve_triangular\(\): incompatible shapes of 'self' and 'B'", arg="B")
    yield E(S(t_((3, 4), device=device), (t_((3, 2), device=device),), {"upper": True}),
            ShapeError, r"'self' must be batches of square matrices", arg="self")


def _triangular_solve_samples(op, device, dtype, requires_grad):
    """triangular_solve(b, A, upper, transpose, unitriangular): B first, A second."""
    rng = rng_for(op.full_name, dtype)
    flags = [(True, False, False), (False, True, False), (True, True, True),
             (False, False, True)]
    cases = [((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 4)), ((3, 3), (2, 3, 1)),
             ((2, 1, 3, 3), (4, 3, 2)), ((0, 3, 3), (0, 3, 2))]
    for k, (a, b) in enumerate(cases):
        A = square(a, dtype, device, rng, requires_grad, "transposed" if k % 2 else
                   "contiguous")
        B = make_tensor(b, dtype, device, rng=rng, layout=LAYOUTS[k % 3],
                        requires_grad=requires_grad)
        upper, transpose, unit = flags[k % 4]
        yield S(B, (A, upper, transpose, unit), name=f"{list(b)} {list(a)} {flags[k % 4]}")


def _errors_triangular_solve(op, device):
    yield E(S(t_((4, 2), device=device), (t_((3, 3), device=device),)), ShapeError,
            r"triangular_solve\(\): incompatible shapes of 'A' and 'self'", arg="self")
    yield E(S(t_((3, 2), device=device), (t_((3, 4), device=device),)), ShapeError,
            r"triangular_solve\(\): 'A' must be batches of square matrices", arg="A")


def _triangle(factor, upper):
    """The triangle a Cholesky factor's op reads (the other one is never looked at)."""
    if factor.dim() >= 2 and factor.shape[-1] == factor.shape[-2]:
        return factor.triu() if upper else factor.tril()
    return factor


def _cholesky_solve_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    cases = [((3, 3), (3, 2), ()), ((2, 3, 3), (2, 3, 4), (True,)), ((3, 3), (2, 3, 1), ()),
             ((2, 1, 3, 3), (4, 3, 2), (True,)), ((0, 3, 3), (0, 3, 2), ())]
    for k, (a, b, args) in enumerate(cases):
        factor = square(a, dtype, device, rng, requires_grad, "transposed" if k % 2 else
                        "contiguous")
        B = make_tensor(b, dtype, device, rng=rng, layout=LAYOUTS[k % 3],
                        requires_grad=requires_grad)
        yield S(B, (factor,) + args, name=f"{list(b)} {list(a)} {args}")


def _cholesky_solve_op(call):
    def run(B, factor, upper=False):
        return call(B, _triangle(factor, upper), upper)
    return run


def _errors_cholesky_solve(op, device):
    yield E(S(t_((4, 2), device=device), (t_((3, 3), device=device),)), ShapeError,
            r"cholesky_solve\(\): incompatible shapes of 'input2' and 'self'", arg="self")
    yield E(S(t_((3, 2), device=device), (t_((3, 4), device=device),)), ShapeError,
            r"cholesky_solve\(\): 'input2' must be batches of square matrices", arg="input2")


def _cholesky_inverse_op(call):
    def run(factor, upper=False):
        return call(_triangle(factor, upper), upper)
    return run


def _cholesky_inverse_samples(op, device, dtype, requires_grad):
    yield from _factor_samples(op, device, dtype, requires_grad, ((), (True,)))


def _factor_samples(op, device, dtype, requires_grad, args_list):
    rng = rng_for(op.full_name, dtype)
    for shape, layout in [((3, 3), "contiguous"), ((2, 4, 4), "transposed"),
                          ((0, 3, 3), "contiguous"), ((0, 0), "contiguous")]:
        for args in args_list:
            yield S(square(shape, dtype, device, rng, requires_grad, layout), args,
                    name=f"{list(shape)} {layout} {args}")


def _errors_cholesky_inverse(op, device):
    yield from _errors_square(op, device, arg="self")
    yield E(S(tp.zeros((2, 2), device=device)), LinAlgError,
            r"cholesky_inverse\(\): The diagonal element 1 is zero", meta=False)


def _ldl_samples(op, device, dtype, requires_grad, kwargs_list=({},)):
    rng = rng_for(op.full_name, dtype)
    for shape, layout in [((3, 3), "contiguous"), ((2, 4, 4), "transposed"),
                          ((1, 2, 2), "contiguous"), ((0, 3, 3), "contiguous"),
                          ((0, 0), "contiguous")]:
        for kw in kwargs_list:
            # symmetric indefinite: a random symmetric matrix (sytrf reads its lower half)
            x = rng.standard_normal(shape)
            x = x + np.swapaxes(x, -1, -2)
            t = tp.tensor(x, dtype=dtype, device=device)
            yield S(t.mT if layout == "transposed" else t, (), dict(kw),
                    name=f"{list(shape)} {layout} {kw}")


NOT_FACTORABLE = ([[0.0, 0.0], [0.0, 0.0]], {"check_errors": True},
                  r"linalg_ldl_factor_ex\(\): The factorization could not be completed "
                  r"because the input matrix is singular \(D\[1,1\] is zero\)")


def _ldl_solve_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    cases = [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 3)), ((0, 3, 3), (0, 3, 2)),
             ((3, 3), (3, 0))]
    for k, (a, b) in enumerate(cases):
        x = rng.standard_normal(a)
        LD, pivots = tp.linalg.ldl_factor(tp.tensor(x + np.swapaxes(x, -1, -2), dtype=dtype,
                                                    device=device))
        B = make_tensor(b, dtype, device, rng=rng, layout=LAYOUTS[k % 3])
        yield S(LD, (pivots, B), name=f"{list(a)} {list(b)}")


def _errors_ldl_solve(op, device):
    LD, pivots = tp.linalg.ldl_factor(tp.eye(3, device=device))
    yield E(S(LD, (pivots, t_((4, 2), device=device))), ShapeError,
            r"linalg_ldl_solve\(\): incompatible shapes of 'LD' and 'B'", arg="B")


def _p_last(call):
    """linalg.lu and lu_unpack with P moved last: P has no gradient but is a float tensor,
    and the gradient test pairs the float outputs with PyTorch's differentiable ones in
    order (the named tuples themselves: tests/test_linalg_triangular.py)."""
    def run(*args, **kwargs):
        if kwargs.get("out") is not None:      # given in the same order: (L, U, P)
            L, U, P = kwargs["out"]
            kwargs["out"] = (P, L, U)
        P, L, U = call(*args, **kwargs)
        return L, U, P
    return run


_TRIANGULAR = dict(dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL)

op_db = [
    OpInfo("linalg_lu_factor_ex", op=tp.linalg.lu_factor_ex, ref=torch.linalg.lu_factor_ex,
           overloads=("linalg_lu_factor_ex",), **_TRIANGULAR,
           sample_inputs_func=partial(_lu_samples, kwargs_list=({}, {"check_errors": True})),
           error_inputs_func=partial(_errors_lu, check_errors={"check_errors": True})),
    OpInfo("linalg_lu_factor", op=tp.linalg.lu_factor, ref=torch.linalg.lu_factor,
           overloads=("linalg_lu_factor",), **_TRIANGULAR, sample_inputs_func=_lu_samples,
           error_inputs_func=partial(_errors_lu, check_errors={})),
    OpInfo("linalg_lu", op=_p_last(tp.linalg.lu), ref=_p_last(torch.linalg.lu),
           overloads=("linalg_lu",), **_TRIANGULAR, sample_inputs_func=_lu_samples,
           error_inputs_func=_errors_lu),
    OpInfo("lu_unpack", op=_p_last(tp.lu_unpack), ref=_p_last(torch.lu_unpack),
           overloads=("lu_unpack",), **_TRIANGULAR,
           sample_inputs_func=_unpack_samples, error_inputs_func=_errors_unpack),
    OpInfo("linalg_lu_solve", op=tp.linalg.lu_solve, ref=torch.linalg.lu_solve,
           overloads=("linalg_lu_solve",), **_TRIANGULAR, sample_inputs_func=_lu_solve_samples,
           error_inputs_func=_errors_lu_solve),
    OpInfo("linalg_solve_ex", op=tp.linalg.solve_ex, ref=torch.linalg.solve_ex,
           overloads=("linalg_solve_ex",), **_TRIANGULAR, sample_inputs_func=_solve_samples,
           error_inputs_func=_errors_solve_ex),
    OpInfo("linalg_solve_triangular", op=tp.linalg.solve_triangular,
           ref=torch.linalg.solve_triangular, overloads=("linalg_solve_triangular",),
           **_TRIANGULAR, sample_inputs_func=_solve_triangular_samples,
           error_inputs_func=_errors_solve_triangular),
    OpInfo("triangular_solve", overloads=("triangular_solve",), **_TRIANGULAR,
           sample_inputs_func=_triangular_solve_samples,
           error_inputs_func=_errors_triangular_solve),
    OpInfo("cholesky_solve", op=_cholesky_solve_op(tp.cholesky_solve),
           ref=_cholesky_solve_op(torch.cholesky_solve), overloads=("cholesky_solve",),
           **_TRIANGULAR, sample_inputs_func=_cholesky_solve_samples,
           error_inputs_func=_errors_cholesky_solve),
    OpInfo("cholesky_inverse", op=_cholesky_inverse_op(tp.cholesky_inverse),
           ref=_cholesky_inverse_op(torch.cholesky_inverse), overloads=("cholesky_inverse",),
           **_TRIANGULAR, sample_inputs_func=_cholesky_inverse_samples,
           error_inputs_func=_errors_cholesky_inverse),
    # LDL^T: PyTorch has no derivative (derivatives.yaml has no entry: "the derivative for
    # linalg_ldl_factor_ex is not implemented"); TensorPlay's says the same
    # (tests/test_linalg_triangular.py).
    OpInfo("linalg_ldl_factor_ex", op=tp.linalg.ldl_factor_ex, ref=torch.linalg.ldl_factor_ex,
           overloads=("linalg_ldl_factor_ex",), **_TRIANGULAR, supports_autograd=False,
           sample_inputs_func=partial(_ldl_samples, kwargs_list=({}, {"hermitian": True})),
           error_inputs_func=partial(_errors_square, arg="self", singular=NOT_FACTORABLE)),
    OpInfo("linalg_ldl_factor", op=tp.linalg.ldl_factor, ref=torch.linalg.ldl_factor,
           overloads=("linalg_ldl_factor",), **_TRIANGULAR, supports_autograd=False,
           sample_inputs_func=_ldl_samples,
           error_inputs_func=partial(_errors_square, arg="self")),
    OpInfo("linalg_ldl_solve", op=tp.linalg.ldl_solve, ref=torch.linalg.ldl_solve,
           overloads=("linalg_ldl_solve",), **_TRIANGULAR, supports_autograd=False,
           sample_inputs_func=_ldl_solve_samples, error_inputs_func=_errors_ldl_solve),
]


# ---- torch.lu, torch.lu_solve (the older spellings) ------------------------------------------
def _torch_lu_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for k, (shape, layout) in enumerate(LU_SHAPES[:5]):
        kw = {"get_infos": True} if k % 2 else {}
        yield S(_matrix(shape, dtype, device, rng, requires_grad, layout), (), kw,
                name=f"{list(shape)} {layout} {kw}")
    yield S(tp.tensor(SINGULAR, dtype=dtype, device=device), (), {"get_infos": True},
            name="singular: info says where", grad=False)


def _errors_torch_lu(op, device):
    yield E(S(t_((3,), device=device)), ShapeError,
            r"lu\(\): the input tensor 'self' must have at least 2 dimensions", arg="self")


def _torch_lu_solve_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for k, (a, b) in enumerate((((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 4)), ((3, 3), (2, 3, 1)),
                                ((0, 3, 3), (0, 3, 2)))):
        LU, pivots = _factored(square(a, dtype, device, rng, requires_grad))
        B = make_tensor(b, dtype, device, rng=rng, layout=LAYOUTS[k % 3],
                        requires_grad=requires_grad)
        yield S(B, (LU, pivots), name=f"A {list(a)} B {list(b)}")


def _errors_torch_lu_solve(op, device):
    LU, pivots = _factored(square((3, 3), tp.float32, device, rng_for("errors"), False))
    yield E(S(t_((3,), device=device), (LU, pivots)), ShapeError,
            r"lu_solve\(\): b should have at least 2 dimensions", arg="self")
    yield E(S(t_((4, 2), device=device), (LU, pivots)), ShapeError,
            r"lu_solve\(\): incompatible shapes of 'LU_data' and 'self'", arg="self")
    yield E(S(t_((3, 2), device=device), (LU, pivots.long())), DTypeError,
            r"lu_solve\(\): 'LU_pivots' is expected to be a tensor of int32", arg="LU_pivots")


op_db += [
    OpInfo("lu", overloads=("lu",), **_TRIANGULAR, sample_inputs_func=_torch_lu_samples,
           error_inputs_func=_errors_torch_lu),
    # (linalg_lu_solve with its arguments reordered: its entry runs the second-order check)
    OpInfo("lu_solve", overloads=("lu_solve",), **_TRIANGULAR, supports_gradgrad=False,
           sample_inputs_func=_torch_lu_solve_samples, error_inputs_func=_errors_torch_lu_solve),
]
