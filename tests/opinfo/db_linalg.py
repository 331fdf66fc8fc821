"""Database entries: linear algebra (mv, dot, outer, addmm, baddbmm, linear, einsum,
tensordot, tril/triu, diag, diagonal, trace, kron)."""
from __future__ import annotations

from functools import partial

import numpy as np
import torch

import tensorplay as tp
from tensorplay.errors import (
    ArgumentError, DeviceError, DimError, DTypeError, LinAlgError, ShapeError,
)
from opinfo.core import (
    ALL_BUT_BOOL, ALL_DTYPES, COMPLEX, GRAD_COMPLEX, ErrorInput as E, FLOATING, INTEGRAL,
    make_tensor, OpInfo, rng_for, SampleInput as S,
)
from opinfo.reduction_common import grad_for, t_
from opinfo.samples import (
    _pair_samples, _t, _x, NUMERIC, sample_inputs_binary, sample_inputs_unary, TOL,
)
import math

MM_TOL = {tp.float16: (4e-3, 1e-2), tp.bfloat16: (2e-2, 5e-2), tp.float32: (1e-5, 1e-5),
          tp.complex64: (1e-5, 1e-5)}
LAYOUTS = ("contiguous", "transposed", "strided")


def _operands(op, device, dtype, requires_grad, shape_lists, kwargs_list=({},)):
    """One sample per list of shapes: the first tensor is the input, the rest are args;
    layouts rotate so every operand is sometimes non-contiguous."""
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for k, shapes in enumerate(shape_lists):
        for kw in kwargs_list:
            ts = [make_tensor(s, dtype, device, rng=rng, layout=LAYOUTS[(k + i) % 3],
                              requires_grad=grad) for i, s in enumerate(shapes)]
            yield S(ts[0], tuple(ts[1:]), dict(kw), name=f"{shapes} {kw}")


def _errors_two(op, device, shapes, regex, arg, dtype_arg):
    a, b = shapes
    yield E(S(t_(a, device=device), (t_(b, device=device),)), ShapeError, regex, arg=arg)
    if dtype_arg:
        good = {"mv": ((3, 4), (4,)), "dot": ((4,), (4,))}[op.name]
        yield E(S(t_(good[0], device=device), (t_(good[1], tp.float64, device=device),)),
                DTypeError, rf"{op.name}\(\): expected 'self' and '{dtype_arg}' to have the same "
                r"dtype", arg=dtype_arg)


def _addmm_samples(op, device, dtype, requires_grad, batched=False):
    shapes = [[(3, 5), (3, 4), (4, 5)], [(5,), (3, 4), (4, 5)], [(1, 1), (2, 0), (0, 3)]]
    if batched:
        shapes = [[(2, 3, 5), (2, 3, 4), (2, 4, 5)], [(3, 5), (2, 3, 4), (2, 4, 5)]]
    kws = ({}, {"beta": 0.5, "alpha": 2} if dtype.is_differentiable else {"beta": 2, "alpha": 3})
    if dtype.is_complex:   # complex factors: conjugated in the gradients
        kws += ({"beta": 0.5 - 1j, "alpha": 2 + 0.5j},)
    yield from _operands(op, device, dtype, requires_grad, shapes, kws)
    if dtype.is_floating_point:   # beta=0: self is ignored, nan included
        rng = rng_for(op.full_name, dtype, "nan")
        m1, m2 = ((3, 4), (4, 5)) if not batched else ((2, 3, 4), (2, 4, 5))
        nan = tp.full(m1[:-1] + (5,), float("nan"), dtype=dtype, device=device)
        yield S(nan, (make_tensor(m1, dtype, device, rng=rng), make_tensor(m2, dtype, device,
                                                                            rng=rng)),
                {"beta": 0}, name="beta=0 ignores nan")


def _errors_addmm(op, device, batched=False):
    names = ("batch1", "batch2") if batched else ("mat1", "mat2")
    a, b = ((2, 3, 4), (2, 5, 2)) if batched else ((3, 4), (5, 2))
    yield E(S(t_((3, 2), device=device), (t_(a, device=device), t_(b, device=device))),
            ShapeError, rf"{op.name}\(\): '{names[0]}' and '{names[1]}' shapes cannot be "
            r"multiplied", arg=names[1])
    a, b = ((2, 3, 4), (2, 4, 5)) if batched else ((3, 4), (4, 5))
    yield E(S(t_((2, 5), device=device), (t_(a, device=device), t_(b, device=device))),
            ShapeError, rf"{op.name}\(\): argument 'self' \(shape \[2, 5\]\) is not "
            r"broadcastable", arg="self")
    yield E(S(t_((5,), device=device), (t_(a, device=device), t_(b, device=device))), ShapeError,
            rf"{op.inplace}\(\): argument 'self' \(shape \[5\]\) must have the product's shape",
            arg="self", inplace=True)


def _addmv_samples(op, device, dtype, requires_grad):
    kws = ({}, {"beta": 0.5, "alpha": 2} if dtype.is_differentiable else {"beta": 2, "alpha": 3})
    if dtype.is_complex:
        kws += ({"beta": 0.5 - 1j, "alpha": 2 + 0.5j},)
    yield from _operands(op, device, dtype, requires_grad,
                         [[(3,), (3, 4), (4,)], [(1,), (3, 4), (4,)], [(2,), (2, 0), (0,)]], kws)


def _errors_addmv(op, device):
    yield E(S(t_((3,), device=device), (t_((3, 4), device=device), t_((5,), device=device))),
            ShapeError, r"addmv\(\): 'mat' and 'vec' shapes cannot be multiplied", arg="vec")
    yield E(S(t_((1,), device=device), (t_((3, 4), device=device), t_((4,), device=device))),
            ShapeError, r"addmv_\(\): argument 'self' \(shape \[1\]\) must have the product's "
            r"shape", arg="self", inplace=True)


def _tensordot_dims_samples(op, device, dtype, requires_grad):
    for a, b, n in (((2, 3, 4), (3, 4, 5), 2), ((3, 4), (4, 2), 1), ((3,), (4,), 0)):
        for s in _operands(op, device, dtype, requires_grad, [[a, b]]):
            yield S(s.input, s.args, {"dims": n}, name=f"{a} {b} dims={n}")


def _linear_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for x, w, b in (((3, 4), (5, 4), (5,)), ((2, 3, 4), (5, 4), None), ((4,), (2, 4), (2,)),
                    ((0, 4), (3, 4), (3,)), ((2, 4), (3, 4), ())):
        xs = make_tensor(x, dtype, device, rng=rng, requires_grad=grad)
        ws = make_tensor(w, dtype, device, rng=rng, layout="transposed", requires_grad=grad)
        bs = None if b is None else make_tensor(b, dtype, device, rng=rng, requires_grad=grad)
        yield S(xs, (ws, bs), name=f"{x} {w} {b}")


def _errors_linear(op, device):
    yield E(S(t_((3, 4), device=device), (t_((5, 3), device=device),)), ShapeError,
            r"linear\(\): 'input' and 'weight' shapes cannot be multiplied", arg="weight")
    yield E(S(t_((3, 4), device=device), (t_((5, 4), device=device), t_((4,), device=device))),
            ShapeError, r"linear\(\): argument 'bias' \(shape \[4\]\) is not broadcastable",
            arg="bias")
    yield E(S(t_((3, 4), device=device), (t_((5, 4), tp.float64, device=device),)), DTypeError,
            r"linear\(\): expected 'input' and 'weight' to have the same dtype", arg="weight")


def _linear_backward_samples(op, device, dtype, requires_grad):
    """(grad_output, (input, weight, output_mask)): linear's shapes, grad_output strided;
    the masks that leave input or weight out pass None for it, as linear's node does."""
    rng = rng_for(op.full_name, dtype)
    for x, w in (((3, 4), (5, 4)), ((2, 3, 4), (5, 4)), ((4,), (2, 4)), ((0, 4), (3, 4))):
        xs = make_tensor(x, dtype, device, rng=rng, layout="transposed")
        ws = make_tensor(w, dtype, device, rng=rng, layout="transposed")
        g = make_tensor(x[:-1] + (w[0],), dtype, device, rng=rng, layout="strided")
        for mask in ([True, True, True], [True, False, False], [False, True, True]):
            yield S(g, (xs if mask[1] else None, ws if mask[0] else None, mask),
                    name=f"{x} {w} output_mask={mask}", meta=all(mask))


def _ref_linear_backward(grad_output, input, weight, output_mask):  # noqa: A002
    # PyTorch's aten::linear_backward has no dense CPU kernel (mkldnn only): its formulas.
    g = grad_output.reshape(-1, grad_output.shape[-1])
    return (g.mm(weight.conj()).reshape(grad_output.shape[:-1] + weight.shape[1:])
            if output_mask[0] else None,
            g.T.mm(input.reshape(-1, input.shape[-1]).conj()) if output_mask[1] else None,
            g.sum(0) if output_mask[2] else None)


def _errors_linear_backward(op, device):
    g, x, w = t_((3, 5), device=device), t_((3, 4), device=device), t_((5, 4), device=device)
    yield E(S(t_((3, 6), device=device), (x, w, [True, True, True])), ShapeError,
            r"_linear_backward\(\): 'weight' \[5, 4\] must have out_features = 6 rows",
            arg="weight", torch_raises=False)
    yield E(S(g, (t_((2, 4), device=device), None, [False, True, False])), ShapeError,
            r"_linear_backward\(\): 'input' \[2, 4\] and 'grad_output' \[3, 5\] must agree",
            arg="input", torch_raises=False)
    yield E(S(g, (x, None, [True, False, False])), ArgumentError,
            r"_linear_backward\(\): output_mask asks for the gradient that reads 'weight'",
            arg="weight", torch_raises=False)
    yield E(S(g, (x, t_((5, 4), tp.float64, device=device), [True, True, True])), DTypeError,
            r"_linear_backward\(\): expected 'grad_output' and 'weight' to have the same "
            r"dtype", arg="weight", torch_raises=False)


# PyTorch returns a view for a one-operand einsum that sums nothing ('ji', 'ii->i');
# TensorPlay's einsum always returns a new tensor, so those cases are tested (values and
# gradients) in tests/test_reduction_linalg.py instead, where aliasing is not compared.
EINSUM_CASES = (
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ii", [(3, 3)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("...ij,...jk", [(2, 1, 2, 3), (3, 3, 2)]), ("ij->", [(3, 4)]), ("ij->j", [(3, 4)]),
    ("i,j->ij", [(3,), (4,)]), ("ij,ij->ij", [(1, 3), (2, 3)]), ("iij->j", [(3, 3, 2)]),
    ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 2)]), ("i,i", [(0,), (0,)]),
)


def _einsum_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for k, (eq, shapes) in enumerate(EINSUM_CASES):
        ts = [make_tensor(s, dtype, device, rng=rng, layout=LAYOUTS[(k + i) % 3],
                          requires_grad=grad) for i, s in enumerate(shapes)]
        yield S(ts[0], (eq, ts[1:]), name=eq)


def _errors_einsum(op, device):
    yield E(S(t_((3, 4), device=device), ("ij,jk->ik", [t_((5, 2), device=device)])),
            ShapeError, r"einsum\(\): subscript 'j' has size 5 in operand 1 but size 4",
            arg="tensors")
    yield E(S(t_((3, 4), device=device), ("ij,jk->ik", [])), ArgumentError,
            r"einsum\(\): the equation 'ij,jk->ik' names 2 operands", arg="equation")
    yield E(S(t_((3, 4), device=device), ("ijk->i", [])), ShapeError,
            r"einsum\(\): the subscripts 'ijk' of operand 0 do not match its 2 dims",
            arg="equation")
    yield E(S(t_((3, 4), device=device), ("ij->x", [])), ArgumentError,
            r"einsum\(\): output subscript 'x'", arg="equation")


def _tensordot_samples(op, device, dtype, requires_grad):
    for a, b, da, db in (((2, 3, 4), (3, 4, 5), [1, 2], [0, 1]), ((3, 4), (4, 3), [0, 1], [1, 0]),
                         ((3, 4), (5,), [], []), ((2, 3), (3, 2), [-1], [0])):
        for s in _operands(op, device, dtype, requires_grad, [[a, b]]):
            yield S(s.input, s.args + (da, db), name=f"{a} {b} {da} {db}")


def _errors_tensordot(op, device):
    yield E(S(t_((3, 4), device=device), (t_((5, 3), device=device), [1], [0])), ShapeError,
            r"tensordot\(\): contracted dimensions need to match", arg="dims_other")


def _tri_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for shape, layout, k in (((3, 4), "contiguous", 0), ((4, 3), "transposed", 1),
                             ((2, 3, 4), "strided", -1), ((3, 3), "expanded", 5),
                             ((0, 3), "contiguous", 0)):
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad),
                (k,), name=f"{list(shape)} {layout} diagonal={k}")


def _errors_tri(op, device):
    yield E(S(t_((3,), device=device)), ShapeError, rf"{op.name}\(\): argument 'self' must be "
            r"at least 2-D", arg="self")


def _diag_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for shape, layout, k in (((4,), "contiguous", 0), ((3,), "strided", -2),
                             ((3, 4), "contiguous", 1), ((4, 3), "transposed", -1),
                             ((3, 4), "contiguous", 7), ((0,), "contiguous", 1)):
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad),
                (k,), name=f"{list(shape)} {layout} diagonal={k}")


def _errors_diag(op, device):
    yield E(S(t_((2, 3, 4), device=device)), ShapeError,
            r"diag\(\): argument 'self' must be a vector or a matrix", arg="self")


def _diagonal_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for shape, layout, args in (((3, 4), "contiguous", ()), ((3, 4), "transposed", (1,)),
                                ((2, 3, 4), "strided", (-1, 2, 0)),
                                ((2, 3, 4), "contiguous", (0, -1, 1)),
                                ((3, 4), "contiguous", (5,)), ((3, 3), "expanded", (-1,))):
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad),
                args, name=f"{list(shape)} {layout} {args}")


def _errors_diagonal(op, device):
    yield E(S(t_((3, 4), device=device), (0, 1, 1)), DimError,
            r"diagonal\(\): arguments 'dim1' and 'dim2' cannot be identical", arg="dim2")
    yield E(S(t_((3, 4), device=device), (0, 0, 2)), DimError,
            r"diagonal\(\): Dimension out of range", arg="dim2")


def _trace_samples(op, device, dtype, requires_grad):
    yield from _operands(op, device, dtype, requires_grad, [[(3, 4)], [(4, 4)], [(0, 2)]])


def _errors_trace(op, device):
    yield E(S(t_((3,), device=device)), ShapeError, r"trace\(\): argument 'self' must be a "
            r"matrix", arg="self")


def _kron_samples(op, device, dtype, requires_grad):
    yield from _operands(op, device, dtype, requires_grad,
                         [[(2, 3), (3, 2)], [(2,), (2, 3)], [(2, 1, 2), (3, 2)], [(), (3,)]])


LINALG = [
    OpInfo("mv", overloads=("mv",), dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           tolerances=MM_TOL,
           sample_inputs_func=partial(_operands, shape_lists=[[(3, 4), (4,)], [(0, 2), (2,)],
                                                              [(2, 0), (0,)]]),
           error_inputs_func=partial(_errors_two, shapes=((3, 4), (5,)),
                                     regex=r"mv\(\): 'self' and 'vec' shapes cannot be multiplied",
                                     arg="vec", dtype_arg="vec")),
    OpInfo("dot", overloads=("dot",), dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           tolerances=MM_TOL,
           sample_inputs_func=partial(_operands, shape_lists=[[(5,), (5,)], [(0,), (0,)]]),
           error_inputs_func=partial(_errors_two, shapes=((3,), (4,)),
                                     regex=r"dot\(\): inconsistent tensor size", arg="tensor",
                                     dtype_arg="tensor")),
    OpInfo("outer", overloads=("outer",), dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(_operands, shape_lists=[[(3,), (4,)], [(0,), (2,)]]),
           error_inputs_func=partial(_errors_two, shapes=((3, 1), (4,)),
                                     regex=r"outer\(\): argument 'self' must be a vector",
                                     arg="self", dtype_arg=None)),
    OpInfo("addmm", overloads=("addmm", "addmm_"), inplace="addmm_", dtypes=ALL_BUT_BOOL + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           tolerances=MM_TOL, sample_inputs_func=_addmm_samples, error_inputs_func=_errors_addmm),
    OpInfo("addmv", overloads=("addmv", "addmv_"), inplace="addmv_", dtypes=ALL_BUT_BOOL + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           tolerances=MM_TOL, sample_inputs_func=_addmv_samples, error_inputs_func=_errors_addmv),
    OpInfo("baddbmm", overloads=("baddbmm", "baddbmm_"), inplace="baddbmm_",
           dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX, tolerances=MM_TOL,
           sample_inputs_func=partial(_addmm_samples, batched=True),
           error_inputs_func=partial(_errors_addmm, batched=True)),
    OpInfo("linear", overloads=("linear",), ref=torch.nn.functional.linear,
           dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           tolerances=MM_TOL, sample_inputs_func=_linear_samples, error_inputs_func=_errors_linear),
    # linear's fused backward, run by its formula in a plain backward(); no derivative of
    # its own (create_graph composes differentiable ops), so no gradient tests.
    OpInfo("_linear_backward", overloads=("_linear_backward",), ref=_ref_linear_backward,
           method=False, dtypes=FLOATING + COMPLEX, supports_autograd=False, tolerances=MM_TOL,
           sample_inputs_func=_linear_backward_samples,
           error_inputs_func=_errors_linear_backward),
    # Samples are (first operand, equation, other operands): the generic tests want a tensor
    # as the sample's input.
    # Integers: only int64, because PyTorch sums a one-operand einsum of small ints ('ii')
    # to int64 (it calls sum) while TensorPlay keeps the operands' dtype.
    # (The operands are passed one by one, as PyTorch users write it; tests/
    # test_reduction_linalg.py checks the list form.)
    OpInfo("einsum", overloads=("einsum",), op=lambda x, eq, rest: tp.einsum(eq, x, *rest),
           ref=lambda x, eq, rest: torch.einsum(eq, [x, *rest]), method=False,
           dtypes=FLOATING + (tp.int64,) + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           tolerances=MM_TOL, sample_inputs_func=_einsum_samples,
           error_inputs_func=_errors_einsum),
    OpInfo("tensordot", overloads=("tensordot",), dtypes=ALL_BUT_BOOL + COMPLEX,
           grad_dtypes=GRAD_COMPLEX, tolerances=MM_TOL,
           ref=lambda a, b, da, db: torch.tensordot(a, b, (da, db)),
           sample_inputs_func=_tensordot_samples, error_inputs_func=_errors_tensordot),
    OpInfo("tensordot", "dims", overloads=("tensordot.dims",), dtypes=ALL_BUT_BOOL,
           tolerances=MM_TOL, sample_inputs_func=_tensordot_dims_samples),
    OpInfo("tril", overloads=("tril", "tril_"), inplace="tril_", dtypes=ALL_DTYPES + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_tri_samples, error_inputs_func=_errors_tri),
    OpInfo("triu", overloads=("triu", "triu_"), inplace="triu_", dtypes=ALL_DTYPES + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_tri_samples, error_inputs_func=_errors_tri),
    OpInfo("diag", overloads=("diag",), dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_diag_samples,
           error_inputs_func=_errors_diag),
    OpInfo("diagonal", overloads=("diagonal",), dtypes=ALL_DTYPES + COMPLEX,
           grad_dtypes=GRAD_COMPLEX, is_view=True,
           sample_inputs_func=_diagonal_samples, error_inputs_func=_errors_diagonal),
    OpInfo("trace", overloads=("trace",), dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           tolerances=MM_TOL,
           sample_inputs_func=_trace_samples, error_inputs_func=_errors_trace),
    # (torch.kron 2.13 fails on a transposed operand: the reference gets contiguous copies.)
    OpInfo("kron", overloads=("kron",), dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_kron_samples,
           ref=lambda a, b: torch.kron(a.contiguous(), b.contiguous())),
]

# ---- matrix products ------------------------------------------------------------------
MATMUL_SHAPES = (
    ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)), ((2, 3, 4), (4, 5)),
    ((4,), (2, 4, 5)), ((2, 3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2)), ((2, 3, 4), (2, 4, 5)),
    ((0, 4), (4, 3)), ((3, 0), (0, 2)), ((2, 0, 4), (4, 3)),
)


def _matmul_samples(op, device, dtype, requires_grad, shapes=MATMUL_SHAPES):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_differentiable
    for i, (a, b) in enumerate(shapes):
        la = "transposed" if i % 3 == 1 else "contiguous"
        lb = "strided" if i % 3 == 2 else "contiguous"
        yield S(make_tensor(a, dtype, device, rng=rng, layout=la, requires_grad=grad),
                (make_tensor(b, dtype, device, rng=rng, layout=lb, requires_grad=grad),),
                name=f"{list(a)} @ {list(b)}")


def errors_mm(op, device):
    yield E(S(_t((3, 4), device=device), (_t((5, 2), device=device),)), ShapeError,
            r"mm\(\): 'self' and 'mat2' shapes cannot be multiplied \(3x4 and 5x2\)", arg="mat2")
    yield E(S(_t((4,), device=device), (_t((4, 2), device=device),)), ShapeError,
            r"mm\(\): argument 'self' must be a matrix \(2-D\)", arg="self")
    yield E(S(_t((3, 4), device=device), (_t((4, 2), tp.float64, device=device),)), DTypeError,
            r"mm\(\): expected 'self' and 'mat2' to have the same dtype", arg="mat2")
    # PyTorch 2.13 computes garbage for mm(cpu, meta) instead of refusing.
    yield E(S(_t((3, 4), device=device), (tp.empty(4, 2, device="meta"),)), DeviceError,
            r"mm\(\): expected all tensors to be on the same device", arg="mat2",
            torch_raises=False, meta=False)


def errors_bmm(op, device):
    yield E(S(_t((2, 3, 4), device=device), (_t((3, 4, 2), device=device),)), ShapeError,
            r"bmm\(\): batch sizes differ", arg="mat2")
    yield E(S(_t((2, 3, 4), device=device), (_t((2, 3, 2), device=device),)), ShapeError,
            r"bmm\(\): 'self' and 'mat2' shapes cannot be multiplied", arg="mat2")
    yield E(S(_t((3, 4), device=device), (_t((4, 2), device=device),)), ShapeError,
            r"bmm\(\): argument 'self' must be a 3-D tensor", arg="self")


def errors_matmul(op, device):
    yield E(S(_t((), device=device), (_t((3,), device=device),)), ShapeError,
            r"matmul\(\): both arguments need at least 1 dimension", arg="self")
    yield E(S(_t((3,), device=device), (_t((4,), device=device),)), ShapeError,
            r"matmul\(\): 1D tensors expected to have the same size", arg="other")
    yield E(S(_t((2, 3, 4), device=device), (_t((5, 2), device=device),)), ShapeError,
            r"matmul\(\): shapes \[2, 3, 4\] \('self'\) and \[5, 2\] \('other'\) cannot be "
            r"multiplied", arg="other")
    yield E(S(_t((2, 3, 4), device=device), (_t((3, 4, 2), device=device),)), ShapeError,
            r"matmul\(\): argument 'other' \(shape \[3\]\) is not broadcastable", arg="other")


PRODUCTS = [
    # torch has no bool matrix products.
    OpInfo("matmul", overloads=("matmul",), dtypes=ALL_BUT_BOOL + COMPLEX,
           grad_dtypes=GRAD_COMPLEX, tolerances=MM_TOL,
           sample_inputs_func=_matmul_samples, error_inputs_func=errors_matmul),
    OpInfo("mm", overloads=("mm",), dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           tolerances=MM_TOL,
           sample_inputs_func=partial(_matmul_samples, shapes=[
               s for s in MATMUL_SHAPES if len(s[0]) == len(s[1]) == 2]),
           error_inputs_func=errors_mm),
    OpInfo("bmm", overloads=("bmm",), dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           tolerances=MM_TOL,
           sample_inputs_func=partial(_matmul_samples, shapes=[
               ((2, 3, 4), (2, 4, 5)), ((1, 1, 4), (1, 4, 1)), ((0, 3, 4), (0, 4, 2)),
               ((2, 0, 4), (2, 4, 3))]),
           error_inputs_func=errors_bmm),
]


def _vector_norm_samples(op, device, dtype, requires_grad):
    for ord in (2, 1, 3, math.inf, -math.inf):
        yield S(_x(op, device, dtype, requires_grad, (3, 4), exclude_zero=True), (ord,),
                name=f"ord={ord} all")
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4), "transposed", exclude_zero=True),
            (2, (0, 2), True), name="dims (0, 2) keepdim")
    yield S(_x(op, device, dtype, requires_grad, (3, 4), "strided", exclude_zero=True),
            (1, -1), name="ord=1 dim=-1")
    yield S(_x(op, device, dtype, requires_grad, (3, 4)), (0,), name="ord=0", grad=False)
    # dtype= is the dtype the norm computes in: complex for a complex input (the norm is
    # its real counterpart, float64 here)
    wide = tp.complex128 if dtype.is_complex else tp.float64
    yield S(_x(op, device, dtype, requires_grad, (3, 4)), (), {"dtype": wide},
            name=f"dtype={wide.name}")


def _errors_norms(op, device):
    yield E(S(t_((3, 4), tp.int64, device=device)), DTypeError,
            r"Expected a floating point or complex tensor as input", arg="self")
    yield E(S(t_((3, 4), tp.complex64, device=device), (), {"dtype": tp.float64}), DTypeError,
            r"linalg_vector_norm\(\): dtype should be complex for complex inputs, but got "
            r"float64", arg="dtype")
    yield E(S(t_((3, 4), tp.float32, device=device), (), {"dtype": tp.complex64}), DTypeError,
            r"linalg_vector_norm\(\): dtype should be real for real inputs, but got complex64",
            arg="dtype")


def _matrix_norm_samples(op, device, dtype, requires_grad):
    for ord in (1, -1, math.inf, -math.inf):
        yield S(_x(op, device, dtype, requires_grad, (2, 3, 4), "transposed"), (ord,),
                name=f"ord={ord}")
    yield S(_x(op, device, dtype, requires_grad, (3, 2, 4)), (1, (0, 2), True),
            name="dims (0, 2) keepdim")
    if dtype in (tp.float32, tp.float64):     # the singular values: LAPACK's types only
        for ord in (2, -2):
            yield S(_x(op, device, dtype, requires_grad, (2, 3, 4), "transposed"), (ord,),
                    name=f"ord={ord}")
        yield S(_x(op, device, dtype, requires_grad, (3, 2, 4)), (2, (0, 2), True),
                name="ord=2 dims (0, 2) keepdim")


def _matrix_norm_str_samples(op, device, dtype, requires_grad):
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4), "transposed"), name="fro")
    yield S(_x(op, device, dtype, requires_grad, (3, 2, 4)), ("fro", (2, 0)), name="fro (2, 0)")
    if dtype in (tp.float32, tp.float64):
        yield S(_x(op, device, dtype, requires_grad, (2, 3, 4), "transposed"), ("nuc",),
                name="nuc")
        yield S(_x(op, device, dtype, requires_grad, (3, 2, 4)), ("nuc", (2, 0), True),
                name="nuc (2, 0) keepdim")


def _errors_matrix_norm(op, device):
    yield E(S(t_((3, 4), device=device), (3,)), ArgumentError,
            r"linalg_matrix_norm\(\): Order 3 not supported", arg="ord")
    yield E(S(t_((4,), device=device), (1,)), ShapeError,
            r"The input tensor A must have at least 2 dimensions", arg="self")


def _norm_samples(op, device, dtype, requires_grad):
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4), exclude_zero=True),
            name="all elements")
    yield S(_x(op, device, dtype, requires_grad, (5,), exclude_zero=True), (3,), name="vector")
    yield S(_x(op, device, dtype, requires_grad, (3, 4), "transposed"), (math.inf,),
            name="matrix ord=inf")
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4), exclude_zero=True), (None, (1,)),
            name="dim=(1,)")
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4)), (-1, (2, 1), True),
            name="matrix over (2, 1)")


def _norm_str_samples(op, device, dtype, requires_grad):
    yield S(_x(op, device, dtype, requires_grad, (3, 4)), ("fro",), name="fro")
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4)), ("fro", (0, 2)),
            name="fro (0, 2)")


def _errors_norm(op, device):
    yield E(S(t_((2, 3, 4), device=device), (2,)), ShapeError,
            r"If dim is not specified but ord is, the input must be 1D or 2D", arg="self")


NORMS = [
    OpInfo("linalg_vector_norm", op=tp.linalg.vector_norm, ref=torch.linalg.vector_norm,
           overloads=("linalg_vector_norm",), dtypes=FLOATING + COMPLEX,
           grad_dtypes=GRAD_COMPLEX, tolerances=TOL,
           sample_inputs_func=_vector_norm_samples, error_inputs_func=_errors_norms),
    OpInfo("linalg_matrix_norm", op=tp.linalg.matrix_norm, ref=torch.linalg.matrix_norm,
           overloads=("linalg_matrix_norm",), dtypes=FLOATING + COMPLEX,
           grad_dtypes=GRAD_COMPLEX, tolerances=TOL,
           sample_inputs_func=_matrix_norm_samples, error_inputs_func=_errors_matrix_norm),
    OpInfo("linalg_matrix_norm", "str", op=tp.linalg.matrix_norm, ref=torch.linalg.matrix_norm,
           overloads=("linalg_matrix_norm.str_ord",), dtypes=FLOATING + COMPLEX,
           grad_dtypes=GRAD_COMPLEX, tolerances=TOL,
           sample_inputs_func=_matrix_norm_str_samples),
    OpInfo("linalg_norm", op=tp.linalg.norm, ref=torch.linalg.norm, overloads=("linalg_norm",),
           dtypes=FLOATING + COMPLEX, grad_dtypes=GRAD_COMPLEX, tolerances=TOL,
           sample_inputs_func=_norm_samples,
           error_inputs_func=_errors_norm),
    OpInfo("linalg_norm", "str", op=tp.linalg.norm, ref=torch.linalg.norm,
           overloads=("linalg_norm.ord_str",), dtypes=FLOATING + COMPLEX,
           grad_dtypes=GRAD_COMPLEX, tolerances=TOL,
           sample_inputs_func=_norm_str_samples),
]


def _errors_inner(op, device):
    yield E(S(t_((2, 3), device=device), (t_((3, 2), device=device),)), ShapeError,
            r"inner\(\): inner\(\) the last dimension must match", arg="other")

INNER = [
    OpInfo("inner", overloads=("inner",), dtypes=NUMERIC + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           tolerances=TOL,
           sample_inputs_func=_pair_samples, error_inputs_func=_errors_inner),
]

# ---- inverses, determinants, solves, factorizations -----------------------------------
# Samples are well-conditioned (a random matrix plus n on its diagonal; A A^T + n I for
# Cholesky), batched, empty, and transposed in memory. Cholesky reads one triangle of its
# input, so finite differences see only that triangle: its entries get a symmetric input,
# (A + A^T) / 2, as PyTorch's own OpInfo does (gradcheck_wrapper_hermitian_input).
LAPACK_DTYPES = (tp.float32, tp.float64)
LAPACK_TOL = {tp.float32: (1e-4, 1e-4), tp.complex64: (1e-4, 1e-4)}


def square(shape, dtype, device, rng, requires_grad, layout="contiguous", pd=False):
    n = shape[-1]
    x = rng.standard_normal(shape)
    x = x @ np.swapaxes(x, -1, -2) + n * np.eye(n) if pd else x + n * np.eye(n)
    t = tp.tensor(np.swapaxes(x, -1, -2).copy() if layout == "transposed" else x,
                  dtype=dtype, device=device)
    if layout == "transposed":
        t = t.mT
    t = t.detach()
    if requires_grad and dtype.is_floating_point:
        t.requires_grad_(True)
    return t


SQUARE_SHAPES = [((3, 3), "contiguous"), ((2, 4, 4), "transposed"), ((1, 2, 2), "contiguous"),
                 ((0, 3, 3), "contiguous"), ((0, 0), "contiguous")]


def _square_samples(op, device, dtype, requires_grad, pd=False, kwargs_list=({},)):
    rng = rng_for(op.full_name, dtype)
    for shape, layout in SQUARE_SHAPES:
        for kw in kwargs_list:
            yield S(square(shape, dtype, device, rng, requires_grad, layout, pd), (), dict(kw),
                    name=f"{list(shape)} {layout} {kw}")


def _solve_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_floating_point
    cases = [((3, 3), (3,), {}), ((3, 3), (3, 2), {}), ((2, 3, 3), (2, 3), {}),
             ((2, 3, 3), (3, 4), {}), ((3, 3), (2, 3, 1), {}), ((2, 1, 3, 3), (4, 3, 2), {}),
             ((3, 3), (2, 3), {"left": False}), ((2, 3, 3), (2, 4, 3), {"left": False}),
             ((0, 3, 3), (0, 3), {})]
    for k, (a, b, kw) in enumerate(cases):
        A = square(a, dtype, device, rng, grad, "transposed" if k % 3 == 1 else "contiguous")
        B = make_tensor(b, dtype, device, rng=rng, layout=LAYOUTS[k % 3], requires_grad=grad)
        yield S(A, (B,), kw, name=f"{list(a)} {list(b)} {kw}")


def _symmetric(A):
    """(A + A^T) / 2 for the square float matrices a sample holds (what an error sample
    holds goes through as it is)."""
    if A.dim() >= 2 and A.shape[-1] == A.shape[-2] and A.dtype.is_floating_point:
        return (A + A.mT) / 2
    return A


def _errors_square(op, device, arg="A", singular=None):
    yield E(S(t_((3,), device=device)), ShapeError, rf"{op.name}\(\): the input tensor '{arg}' "
            r"must have at least 2 dimensions", arg=arg)
    yield E(S(t_((2, 3, 4), device=device)), ShapeError, rf"{op.name}\(\): '{arg}' must be "
            r"batches of square matrices, but they are 3 by 4 matrices", arg=arg)
    yield E(S(t_((3, 3), tp.int64, device=device)), DTypeError, r"expected a floating point "
            rf"tensor as input \('{arg}'\), but got int64", arg=arg)
    if singular is not None:
        matrix, kwargs, regex = singular
        yield E(S(tp.tensor(matrix, device=device), (), kwargs), LinAlgError, regex, meta=False)


INV_SINGULAR = ([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]], {"check_errors": True},
                r"linalg_inv_ex\(\): \(Batch element 1\): The diagonal element 2 is zero")
NOT_PD = ([[1.0, 0.0, 0.0], [0.0, 2.0, 3.0], [0.0, 3.0, 1.0]], {"check_errors": True},
          r"linalg_cholesky_ex\(\): The factorization could not be completed because the input "
          r"is not positive-definite \(the leading minor of order 3 is not positive-definite\)")


def _errors_solve(op, device):
    yield E(S(t_((3, 3), device=device), (t_((4,), device=device),)), ShapeError,
            r"linalg_solve\(\): incompatible shapes of 'A' and 'B'", arg="B")
    yield E(S(t_((3, 3), device=device), (t_((3,), tp.float64, device=device),)), DTypeError,
            r"linalg_solve\(\): expected 'A' and 'B' to have the same dtype", arg="B")
    yield E(S(t_((3, 4), device=device), (t_((3,), device=device),)), ShapeError,
            r"'A' must be batches of square matrices", arg="A")
    yield E(S(tp.zeros((2, 2), device=device), (tp.ones((2,), device=device),)), LinAlgError,
            r"linalg_solve\(\): The solver failed because the input matrix is singular",
            meta=False)


FACTORIZATIONS = [
    OpInfo("linalg_inv_ex", op=tp.linalg.inv_ex, ref=torch.linalg.inv_ex,
           overloads=("linalg_inv_ex",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=partial(_square_samples, kwargs_list=({}, {"check_errors": True})),
           error_inputs_func=partial(_errors_square, singular=INV_SINGULAR)),
    OpInfo("linalg_inv", op=tp.linalg.inv, ref=torch.linalg.inv, overloads=("linalg_inv",),
           dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL, sample_inputs_func=_square_samples,
           error_inputs_func=_errors_square),
    OpInfo("inverse", overloads=("inverse",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=_square_samples, error_inputs_func=partial(_errors_square,
                                                                         arg="self")),
    OpInfo("linalg_slogdet", op=tp.linalg.slogdet, ref=torch.linalg.slogdet,
           overloads=("linalg_slogdet",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=_square_samples, error_inputs_func=_errors_square),
    OpInfo("slogdet", overloads=("slogdet",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=_square_samples,
           error_inputs_func=partial(_errors_square, arg="self")),
    OpInfo("logdet", overloads=("logdet",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=partial(_square_samples, pd=True),
           error_inputs_func=partial(_errors_square, arg="self")),
    OpInfo("linalg_solve", op=tp.linalg.solve, ref=torch.linalg.solve,
           overloads=("linalg_solve",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=_solve_samples, error_inputs_func=_errors_solve),
    OpInfo("linalg_cholesky_ex", op=lambda A, **kw: tp.linalg.cholesky_ex(_symmetric(A), **kw),
           ref=lambda A, **kw: torch.linalg.cholesky_ex(_symmetric(A), **kw),
           overloads=("linalg_cholesky_ex",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           method=False,
           sample_inputs_func=partial(_square_samples, pd=True,
                                      kwargs_list=({}, {"upper": True, "check_errors": True})),
           error_inputs_func=partial(_errors_square, singular=NOT_PD)),
    OpInfo("linalg_cholesky", op=lambda A, **kw: tp.linalg.cholesky(_symmetric(A), **kw),
           ref=lambda A, **kw: torch.linalg.cholesky(_symmetric(A), **kw),
           overloads=("linalg_cholesky",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           method=False,
           sample_inputs_func=partial(_square_samples, pd=True, kwargs_list=({}, {"upper": True})),
           error_inputs_func=_errors_square),
    OpInfo("cholesky", op=lambda A, *a: tp.cholesky(_symmetric(A), *a),
           ref=lambda A, *a: torch.cholesky(_symmetric(A), *a), overloads=("cholesky",),
           dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL, method=False,
           sample_inputs_func=partial(_square_samples, pd=True),
           error_inputs_func=partial(_errors_square, arg="self")),
]

# ---- tp.linalg's products ---------------------------------------------------------------
def _linalg_diagonal_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for k, (shape, kw) in enumerate([((3, 4), {}), ((2, 3, 3), {"offset": 1}),
                                     ((2, 3, 4), {"offset": -1, "dim1": 0, "dim2": 2})]):
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=LAYOUTS[k % 3],
                            requires_grad=grad), (), kw, name=f"{list(shape)} {kw}")


def _vecdot_samples(op, device, dtype, requires_grad):
    yield from _operands(op, device, dtype, requires_grad,
                         [[(3,), (3,)], [(2, 4), (4,)], [(2, 1, 3), (4, 3)], [(0, 3), (3,)]])
    rng = rng_for(op.full_name, dtype, "dim")
    grad = grad_for(dtype, requires_grad)
    yield S(make_tensor((3, 2), dtype, device, rng=rng, requires_grad=grad),
            (make_tensor((3, 2), dtype, device, rng=rng, requires_grad=grad),), {"dim": 0},
            name="dim=0")


def _errors_vecdot(op, device):
    yield E(S(t_((3,), device=device), (t_((3,), tp.float64, device=device),)), DTypeError,
            r"linalg_vecdot\(\): expected 'x' and 'y' to have the same dtype", arg="y")
    yield E(S(t_((3,), tp.int64, device=device), (t_((3,), tp.int64, device=device),)),
            DTypeError, r"expected a floating point or complex tensor as input \('x'\)", arg="x")


def _matrix_power_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for k, (shape, n) in enumerate([((3, 3), 0), ((3, 3), 1), ((2, 3, 3), 2), ((3, 3), 3),
                                    ((2, 2, 2), 5), ((3, 3), -1), ((2, 3, 3), -2),
                                    ((0, 2, 2), 4)]):
        A = square(shape, dtype, device, rng, requires_grad, LAYOUTS[k % 2]) / shape[-1]
        yield S(A.detach().requires_grad_(A.requires_grad), (n,), name=f"{list(shape)} n={n}")


def _errors_matrix_power(op, device):
    yield E(S(t_((2, 3), device=device), (2,)), ShapeError,
            rf"{op.name}\(\): 'self' must be batches of square matrices", arg="self")


def _multi_dot_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    chains = [[(3, 4), (4, 2)], [(4,), (4, 3), (3,)], [(2, 5), (5, 3), (3, 4)],
              [(5, 2), (2, 6), (6, 3)], [(3,), (3, 4), (4, 5), (5, 2), (2, 6)],
              [(2, 3), (3, 0), (0, 4)]]
    for k, shapes in enumerate(chains):
        ts = [make_tensor(sh, dtype, device, rng=rng, layout=LAYOUTS[(k + i) % 3],
                          requires_grad=grad) for i, sh in enumerate(shapes)]
        yield S(ts[0], (ts[1:],), name=str(shapes))


def _errors_multi_dot(op, device):
    yield E(S(t_((3, 2), device=device), ([],)), ArgumentError,
            r"linalg_multi_dot\(\): expected at least 2 tensors in 'tensors' but got 1",
            arg="tensors")
    yield E(S(t_((3, 2), device=device), ([t_((2, 2, 2), device=device)],)), ShapeError,
            r"the last tensor must be 1D or 2D but got 3D", arg="tensors")
    yield E(S(t_((3, 2), device=device), ([t_((3, 2), device=device)],)), ShapeError,
            r"tensors 0 and 1 with shapes \[3, 2\] and \[3, 2\] cannot be multiplied",
            arg="tensors")


LINALG_PRODUCTS = [
    OpInfo("linalg_matmul", op=tp.linalg.matmul, ref=torch.linalg.matmul,
           overloads=("linalg_matmul",), dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           tolerances=MM_TOL,
           sample_inputs_func=_matmul_samples),
    OpInfo("linalg_diagonal", op=tp.linalg.diagonal, ref=torch.linalg.diagonal,
           overloads=("linalg_diagonal",), dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           is_view=True,
           sample_inputs_func=_linalg_diagonal_samples),
    OpInfo("linalg_vecdot", op=tp.linalg.vecdot, ref=torch.linalg.vecdot,
           overloads=("linalg_vecdot",), dtypes=LAPACK_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           tolerances=LAPACK_TOL,
           sample_inputs_func=_vecdot_samples, error_inputs_func=_errors_vecdot),
    OpInfo("linalg_matrix_power", op=tp.linalg.matrix_power, ref=torch.linalg.matrix_power,
           overloads=("linalg_matrix_power",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=_matrix_power_samples, error_inputs_func=_errors_matrix_power),
    OpInfo("matrix_power", overloads=("matrix_power",), dtypes=LAPACK_DTYPES,
           tolerances=LAPACK_TOL, sample_inputs_func=_matrix_power_samples,
           error_inputs_func=_errors_matrix_power),
    OpInfo("linalg_multi_dot", op=lambda x, rest: tp.linalg.multi_dot([x, *rest]),
           ref=lambda x, rest: torch.linalg.multi_dot([x, *rest]), method=False,
           overloads=("linalg_multi_dot",), dtypes=LAPACK_DTYPES + COMPLEX,
           grad_dtypes=GRAD_COMPLEX, tolerances=LAPACK_TOL,
           sample_inputs_func=_multi_dot_samples, error_inputs_func=_errors_multi_dot),
]

op_db = PRODUCTS + LINALG + NORMS + INNER + FACTORIZATIONS + LINALG_PRODUCTS


# ---- cross, vander, tensorinv, tensorsolve, chain_matmul, addr, ger, matrix_exp ----------
def _pairs(op, device, dtype, requires_grad, cases):
    """One sample per (shape of self, shape of other, kwargs); layouts rotate."""
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for k, (a, b, kw) in enumerate(cases):
        yield S(make_tensor(a, dtype, device, rng=rng, layout=LAYOUTS[k % 3], requires_grad=grad),
                (make_tensor(b, dtype, device, rng=rng, layout=LAYOUTS[(k + 1) % 3],
                             requires_grad=grad),), dict(kw), name=f"{a} {b} {kw}")


CROSS_CASES = [((3,), (3,), {}), ((2, 3), (2, 3), {}), ((2, 1, 3), (1, 4, 3), {}),
               ((3, 2), (3, 2), {"dim": 0}), ((4, 3, 2), (1, 3, 2), {"dim": -2}),
               ((0, 3), (0, 3), {})]
# cross's dim=None: the first dim of size 3 ('self''s), whatever the other dims are.
CROSS_DEFAULT_CASES = [((3, 2), (3, 2), {}), ((2, 3, 3), (2, 3, 3), {}), ((4, 3), (1, 3), {}),
                       ((3,), (3,), {"dim": -1}), ((3, 3), (3, 3), {"dim": 1})]


def _errors_cross(op, device):
    yield E(S(t_((2, 3), device=device), (t_((5, 2, 3), device=device),)), ShapeError,
            rf"{op.name}\(\): inputs must have the same number of dimensions", arg="other")
    yield E(S(t_((2, 4), device=device), (t_((2, 4), device=device),), {"dim": -1}),
            ShapeError, rf"{op.name}\(\): inputs dimension -1 must have length 3. Got 4 "
            r"\('self'\) and 4", arg="self")
    yield E(S(t_((2, 3), device=device), (t_((4, 3), device=device),), {"dim": 1}),
            ShapeError, rf"{op.name}\(\): argument 'other' \(shape \[4, 3\]\) is not "
            r"broadcastable", arg="other")
    yield E(S(t_((2, 3), device=device), (t_((2, 3), tp.float64, device=device),)),
            DTypeError, rf"{op.name}\(\): expected 'self' and 'other' to have the same dtype",
            arg="other")
    yield E(S(t_((2, 3), tp.bool, device=device), (t_((2, 3), tp.bool, device=device),)),
            DTypeError, rf"{op.name}\(\): not implemented for 'bool'", arg="self")
    yield E(S(t_((2, 3), device=device), (t_((2, 3), device=device),), {"dim": 5}),
            DimError, r"Dimension out of range", arg="dim")
    if op.name == "cross":
        yield E(S(t_((2, 4), device=device), (t_((2, 4), device=device),)), ShapeError,
                r"cross\(\): no dimension of size 3 in input", arg="self")


def _vander_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    low, high = (-3, 4) if not dtype.is_floating_point else (None, None)
    for k, (shape, kw) in enumerate([((4,), {}), ((2, 3), {"N": 4}), ((3,), {"N": 2}),
                                     ((), {"N": 3}), ((0, 3), {}), ((2, 0), {"N": 3})]):
        yield S(make_tensor(shape, dtype, device, rng=rng, low=low, high=high,
                            layout=LAYOUTS[k % 3], requires_grad=grad), (), kw,
                name=f"{shape} {kw}")


def _errors_vander(op, device):
    for dtype in (tp.bool, tp.float16):
        yield E(S(t_((3,), dtype, device=device)), DTypeError,
                rf"linalg_vander\(\): linalg.vander supports .* but got {dtype.name}", arg="x")
    yield E(S(t_((3,), device=device), (), {"N": 1}), ArgumentError,
            r"linalg_vander\(\): N must be greater than 1", arg="N")
    yield E(S(t_((2, 0), device=device)), ArgumentError,
            r"linalg_vander\(\): N must be greater than 1", arg="N")


def _laid_out(x, dtype, device, requires_grad, layout):
    """A tensor holding the NumPy array x, its last two dims transposed in memory when
    layout says so (and it has two)."""
    if layout == "transposed" and x.ndim >= 2:
        t = tp.tensor(np.swapaxes(x, -1, -2).copy(), dtype=dtype, device=device).mT
    else:
        t = tp.tensor(x, dtype=dtype, device=device)
    return t.detach().requires_grad_(requires_grad and dtype.is_floating_point)


def _well_conditioned(rng, n):
    return rng.standard_normal((n, n)) + n * np.eye(n)


def _tensorinv_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for k, (shape, ind) in enumerate([((2, 3, 6), 2), ((4, 2, 2), 1), ((2, 2, 2, 2), None),
                                      ((3, 3), 1), ((0, 4, 0), 1)]):
        split = 2 if ind is None else ind
        rows = int(np.prod(shape[:split]))
        x = _well_conditioned(rng, rows).reshape(shape)
        yield S(_laid_out(x, dtype, device, requires_grad, ("contiguous", "transposed")[k % 2]),
                (), {} if ind is None else {"ind": ind}, name=f"{shape} ind={ind}")


def _errors_tensorinv(op, device):
    yield E(S(t_((2, 2), device=device), (), {"ind": 0}), ArgumentError,
            r"linalg_tensorinv\(\): Expected a strictly positive integer for 'ind', but got 0",
            arg="ind")
    yield E(S(t_((4, 6, 8, 2), device=device)), ShapeError,
            r"linalg_tensorinv\(\): Expected self to satisfy the requirement "
            r"prod\(self.shape\[ind:\]\) == prod\(self.shape\[:ind\]\), but got 16 != 24",
            arg="self")
    yield E(S(t_((2, 2), tp.int64, device=device), (), {"ind": 1}), DTypeError,
            r"linalg_tensorinv\(\): expected a floating point tensor as input \('self'\)",
            arg="self")
    yield E(S(tp.zeros((2, 2, 2, 2), device=device)), LinAlgError,
            r"linalg_tensorinv\(\): The diagonal element 1 is zero", meta=False)


def _tensorsolve_samples(op, device, dtype, requires_grad):
    """self is a well-conditioned square matrix after its `dims` move last and it is
    reshaped to (numel(other), numel(result))."""
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    cases = [((2, 3, 6), (2, 3), None), ((6, 2, 3), (2, 3), (0,)), ((3, 2, 3, 2), (3, 2), None),
             ((2, 4, 2), (4,), (0, 2)), ((4, 4), (4,), None), ((0, 3, 0), (0, 3), None)]
    for k, (shape, other, dims) in enumerate(cases):
        n = len(shape)
        moved = list(range(n - len(dims), n)) if dims else []
        moved_shape = [s for d, s in enumerate(shape) if not dims or d not in dims] + \
            [shape[d] for d in (dims or ())]
        rows = int(np.prod(other))
        x = np.moveaxis(_well_conditioned(rng, rows).reshape(moved_shape), moved, list(dims or ()))
        A = _laid_out(x, dtype, device, requires_grad, ("contiguous", "transposed")[k % 2])
        B = make_tensor(other, dtype, device, rng=rng, layout=LAYOUTS[k % 3], requires_grad=grad)
        yield S(A, (B,), {} if dims is None else {"dims": dims}, name=f"{shape} {other} {dims}")


def _errors_tensorsolve(op, device):
    yield E(S(t_((2, 3, 5), device=device), (t_((2, 3), device=device),)), ShapeError,
            r"linalg_tensorsolve\(\): Expected self to satisfy the requirement .* but got "
            r"5 != 6", arg="other")
    yield E(S(t_((2, 3, 6), device=device), (t_((2, 3), tp.float64, device=device),)),
            DTypeError, r"linalg_tensorsolve\(\): expected 'self' and 'other' to have the same "
            r"dtype", arg="other")
    yield E(S(t_((6, 6), tp.int64, device=device), (t_((6,), tp.int64, device=device),)),
            DTypeError, r"linalg_tensorsolve\(\): expected a floating point tensor as input "
            r"\('self'\)", arg="self")
    yield E(S(t_((6, 6), device=device), (t_((6,), device=device),), {"dims": (5,)}),
            DimError, r"Dimension out of range", arg="dims")
    yield E(S(tp.zeros((2, 3, 6), device=device), (tp.ones((2, 3), device=device),)),
            LinAlgError, r"linalg_tensorsolve\(\): The solver failed because the input matrix "
            r"is singular", meta=False)


def _chain_matmul_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    chains = [[(3, 4)], [(3, 4), (4, 2)], [(2, 5), (5, 3), (3, 4)],
              [(3, 2), (2, 4), (4, 5), (5, 2), (2, 6)], [(2, 3), (3, 0), (0, 4)]]
    for k, shapes in enumerate(chains):
        ts = [make_tensor(sh, dtype, device, rng=rng, layout=LAYOUTS[(k + i) % 3],
                          requires_grad=grad) for i, sh in enumerate(shapes)]
        yield S(ts[0], (ts[1:],), name=str(shapes))


def _errors_chain_matmul(op, device):
    yield E(S(t_((3,), device=device), ([t_((3, 2), device=device)],)), ShapeError,
            r"chain_matmul\(\): Expected 2-D tensors in 'matrices', but tensor 0 is 1-D",
            arg="matrices")
    yield E(S(t_((3, 2), device=device), ([t_((2, 2, 2), device=device)],)), ShapeError,
            r"chain_matmul\(\): Expected 2-D tensors in 'matrices', but tensor 1 is 3-D",
            arg="matrices")
    yield E(S(t_((3, 2), device=device), ([t_((3, 2), device=device)],)), ShapeError,
            r"chain_matmul\(\): tensors 0 and 1 with shapes \[3, 2\] and \[3, 2\] cannot be "
            r"multiplied", arg="matrices")
    yield E(S(t_((3, 2), device=device), ([t_((2, 2), tp.float64, device=device)],)),
            DTypeError, r"chain_matmul\(\): all tensors must have the same dtype",
            arg="matrices")


def _addr_samples(op, device, dtype, requires_grad):
    if dtype is tp.bool:
        kws = ({}, {"beta": False, "alpha": True}, {"beta": True, "alpha": 0})
    elif dtype.is_floating_point:
        kws = ({}, {"beta": 0.5, "alpha": 2})
    else:
        kws = ({}, {"beta": 2, "alpha": 3})
    yield from _operands(op, device, dtype, requires_grad,
                         [[(2, 3), (2,), (3,)], [(3,), (2,), (3,)], [(), (4,), (2,)],
                          [(4, 1), (4,), (5,)], [(0, 3), (0,), (3,)]], kws)
    if dtype.is_floating_point:   # beta=0: self is ignored, nan included
        rng = rng_for(op.full_name, dtype, "nan")
        nan = tp.full((3, 4), float("nan"), dtype=dtype, device=device)
        yield S(nan, (make_tensor((3,), dtype, device, rng=rng),
                      make_tensor((4,), dtype, device, rng=rng)), {"beta": 0},
                name="beta=0 ignores nan")


def _errors_addr(op, device):
    yield E(S(t_((2, 3), device=device), (t_((2, 1), device=device), t_((3,), device=device))),
            ShapeError, r"addr\(\): argument 'vec1' must be a vector", arg="vec1")
    yield E(S(t_((2, 3), device=device), (t_((2,), device=device), t_((3, 1), device=device))),
            ShapeError, r"addr\(\): argument 'vec2' must be a vector", arg="vec2")
    yield E(S(t_((3, 3), device=device), (t_((2,), device=device), t_((3,), device=device))),
            ShapeError, r"addr\(\): argument 'self' \(shape \[3, 3\]\) does not broadcast",
            arg="self")
    yield E(S(t_((2, 2, 3), device=device), (t_((2,), device=device), t_((3,), device=device))),
            ShapeError, r"addr\(\): argument 'self' \(shape \[2, 2, 3\]\) does not broadcast",
            arg="self")
    ints = [t_(s, tp.int64, device=device) for s in ((2, 3), (2,), (3,))]
    yield E(S(ints[0], tuple(ints[1:]), {"beta": 0.5}), DTypeError,
            r"addr\(\): For integral input tensors, argument beta must not be a floating point",
            arg="beta")
    yield E(S(ints[0], tuple(ints[1:]), {"alpha": True}), DTypeError,
            r"addr\(\): Boolean alpha only supported for Boolean results", arg="alpha")
    yield E(S(t_((1, 3), device=device), (t_((2,), device=device), t_((3,), device=device))),
            ShapeError, r"addr_\(\): 'self' must have the shape \[2, 3\]", arg="self",
            inplace=True)
    yield E(S(ints[0], (t_((2,), tp.float64, device=device), t_((3,), tp.float64,
                                                               device=device))),
            DTypeError, r"addr_\(\): result type float64 can't be cast to the desired output "
            r"type int64", arg="self", inplace=True)


def _errors_ger(op, device):
    yield E(S(t_((2, 1), device=device), (t_((3,), device=device),)), ShapeError,
            r"ger\(\): argument 'self' must be a vector", arg="self")
    yield E(S(t_((2,), device=device), (t_((), device=device),)), ShapeError,
            r"ger\(\): argument 'vec2' must be a vector", arg="vec2")


def _matrix_exp_samples(op, device, dtype, requires_grad):
    """Random matrices of norms from small to large (the large ones are scaled down and
    squared back), some transposed in memory, batched and empty."""
    rng = rng_for(op.full_name, dtype)
    for k, (shape, scale) in enumerate([((3, 3), 0.1), ((3, 3), 1.0), ((2, 4, 4), 1.5),
                                        ((1, 2, 2), 4.0), ((5, 5), 0.7), ((1, 1), 2.0),
                                        ((0, 3, 3), 1.0), ((0, 0), 1.0)]):
        x = rng.standard_normal(shape) * scale
        yield S(_laid_out(x, dtype, device, requires_grad, ("contiguous", "transposed")[k % 2]),
                name=f"{shape} scale={scale}")


LINALG_COMPOSITES = [
    OpInfo("linalg_cross", op=tp.linalg.cross, ref=torch.linalg.cross,
           overloads=("linalg_cross",), dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           tolerances=MM_TOL,
           sample_inputs_func=partial(_pairs, cases=CROSS_CASES), error_inputs_func=_errors_cross),
    OpInfo("cross", overloads=("cross",), dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           tolerances=MM_TOL,
           sample_inputs_func=partial(_pairs, cases=CROSS_DEFAULT_CASES),
           error_inputs_func=_errors_cross),
    # (complex numbers were cast to int64 before: the imaginary parts dropped)
    OpInfo("linalg_vander", op=tp.linalg.vander, ref=torch.linalg.vander,
           overloads=("linalg_vander",), dtypes=INTEGRAL + LAPACK_DTYPES + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           tolerances=LAPACK_TOL, sample_inputs_func=_vander_samples,
           error_inputs_func=_errors_vander),
    OpInfo("linalg_tensorinv", op=tp.linalg.tensorinv, ref=torch.linalg.tensorinv,
           overloads=("linalg_tensorinv",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=_tensorinv_samples, error_inputs_func=_errors_tensorinv),
    OpInfo("linalg_tensorsolve", op=tp.linalg.tensorsolve, ref=torch.linalg.tensorsolve,
           overloads=("linalg_tensorsolve",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=_tensorsolve_samples, error_inputs_func=_errors_tensorsolve),
    OpInfo("chain_matmul", op=lambda x, rest: tp.chain_matmul(x, *rest),
           ref=lambda x, rest: torch.chain_matmul(x, *rest), method=False,
           overloads=("chain_matmul",), dtypes=LAPACK_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           tolerances=LAPACK_TOL,
           sample_inputs_func=_chain_matmul_samples, error_inputs_func=_errors_chain_matmul),
    OpInfo("addr", overloads=("addr", "addr_"), inplace="addr_", dtypes=ALL_DTYPES + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           tolerances=MM_TOL, sample_inputs_func=_addr_samples, error_inputs_func=_errors_addr),
    OpInfo("ger", overloads=("ger",), dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(_operands, shape_lists=[[(3,), (4,)], [(0,), (2,)],
                                                              [(1,), (3,)]]),
           error_inputs_func=_errors_ger),
    OpInfo("linalg_matrix_exp", op=tp.linalg.matrix_exp, ref=torch.linalg.matrix_exp,
           overloads=("linalg_matrix_exp",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=_matrix_exp_samples,
           error_inputs_func=partial(_errors_square, arg="self")),
    OpInfo("matrix_exp", overloads=("matrix_exp",), dtypes=LAPACK_DTYPES,
           tolerances=LAPACK_TOL, sample_inputs_func=_matrix_exp_samples,
           error_inputs_func=partial(_errors_square, arg="self")),
]

op_db += LINALG_COMPOSITES
