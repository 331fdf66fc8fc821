"""The common helpers beyond what the operator database checks, against PyTorch: the
factory functions (logspace, randint_like), the forms of atleast_*/meshgrid calls, square
of bool, the gradients through the in-place view ops, and tp.linalg's namespace."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tensorplay as tp


def _same(ours, theirs, rtol=1e-6, atol=1e-6):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(np.asarray(ours.detach().float()),
                               theirs.detach().float().numpy(), rtol=rtol, atol=atol)


# ---- factories ---------------------------------------------------------------------------
@pytest.mark.parametrize("args,kwargs", [
    ((0, 2, 5), {}), ((-1, 1, 4), {"base": 2}), ((0, 3, 4), {"dtype": "int64"}),
    ((1, 1, 1), {}), ((0, 2, 0), {}), ((0.5, 2.5, 3), {"base": 3.0, "dtype": "float64"}),
    ((2, 0, 5), {"base": 0.5}),
])
def test_logspace_matches_torch(args, kwargs):
    ours = {k: getattr(tp, v) if k == "dtype" else v for k, v in kwargs.items()}
    theirs = {k: getattr(torch, v) if k == "dtype" else v for k, v in kwargs.items()}
    _same(tp.logspace(*args, **ours), torch.logspace(*args, **theirs), rtol=1e-6)


def test_logspace_on_a_device_and_with_grad():
    x = tp.logspace(0, 1, 3, device="cuda", requires_grad=True)
    assert x.device.type == "cuda" and x.requires_grad


def test_randint_like_keeps_shape_dtype_device_and_range():
    x = tp.zeros(3, 4, dtype=tp.int32)
    for args, (low, high) in (((5,), (0, 5)), ((3, 6), (3, 6))):
        r = tp.randint_like(x, *args)
        t = torch.randint_like(torch.zeros(3, 4, dtype=torch.int32), *args)
        assert r.dtype.name == str(t.dtype).removeprefix("torch.")
        assert tuple(r.shape) == tuple(t.shape)
        values = set(r.tolist()[0] + r.tolist()[1] + r.tolist()[2])
        assert values <= set(range(low, high))
    assert tp.randint_like(tp.zeros(2), 4).dtype is tp.float32
    assert tp.randint_like(x, 4, dtype=tp.int64).dtype is tp.int64
    assert tp.randint_like(x, 4, device="cuda").device.type == "cuda"


def test_randint_like_draws_from_the_default_generator():
    x = tp.zeros(50, dtype=tp.int64)
    tp.manual_seed(7)
    a = tp.randint_like(x, 1000)
    tp.manual_seed(7)
    b = tp.randint(0, 1000, (50,))
    assert a.tolist() == b.tolist()
    assert len(set(tp.randint_like(x, 1000).tolist())) > 1


# ---- call forms --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast_call_forms(name):
    a, b = tp.tensor(1.0), tp.tensor([[1.0, 2.0]])
    ta, tb = torch.tensor(1.0), torch.tensor([[1.0, 2.0]])
    ours, theirs = getattr(tp, name), getattr(torch, name)
    _same(ours(a), theirs(ta))
    for got, want in zip(ours(a, b), theirs(ta, tb)):
        _same(got, want)
    for got, want in zip(ours([a, b]), theirs([ta, tb])):
        _same(got, want)
    assert len(ours((a,))) == len(theirs((ta,))) == 1


def test_meshgrid_call_forms_and_views():
    x, y = tp.arange(3), tp.arange(2)
    tx, ty = torch.arange(3), torch.arange(2)
    for indexing in ("ij", "xy"):
        for got, want in zip(tp.meshgrid(x, y, indexing=indexing),
                             torch.meshgrid(tx, ty, indexing=indexing)):
            _same(got, want)
        for got, want in zip(tp.meshgrid([x, y], indexing=indexing),
                             torch.meshgrid([tx, ty], indexing=indexing)):
            _same(got, want)
    gx, gy = tp.meshgrid(x, y, indexing="ij")   # indexing=None is 'ij', as torch defaults
    assert gx.untyped_storage() is x.untyped_storage()     # expanded views, as in torch


def test_square_of_bool_is_int64_as_torch():
    _same(tp.square(tp.tensor([True, False])), torch.square(torch.tensor([True, False])))
    x = tp.tensor([1.5, -2.0], requires_grad=True)
    x.square().sum().backward()
    assert x.grad.tolist() == [3.0, -4.0]


# ---- in-place view ops and autograd ------------------------------------------------------
def _run_inplace_chain(m, op, args):
    x = m.arange(6.0).reshape(2, 3).requires_grad_(True)
    y = x * 2
    out = getattr(y, op)(*args)
    assert out is y
    weights = m.arange(float(y.numel())).reshape(tuple(y.shape))
    (y * weights).sum().backward()
    return y, x.grad


@pytest.mark.parametrize("op,args", [("unsqueeze_", (0,)), ("unsqueeze_", (-1,)),
                                     ("t_", ()), ("transpose_", (0, 1)), ("swapaxes_", (1, 0)),
                                     ("swapdims_", (0, 1)), ("squeeze_", ())])
def test_inplace_view_ops_differentiate_as_torch(op, args):
    y, grad = _run_inplace_chain(tp, op, args)
    t_y, t_grad = _run_inplace_chain(torch, op, args)
    _same(y, t_y)
    _same(grad, t_grad)
    assert y._version == t_y._version


def test_inplace_view_op_on_a_view_and_on_a_leaf():
    for m in (tp, torch):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            m.ones(2, 3, requires_grad=True).unsqueeze_(0)
    grads = []
    for m in (tp, torch):
        base = m.ones(2, 3, requires_grad=True)
        a = base * 1
        b = a[0]
        b.unsqueeze_(0)
        assert tuple(b.shape) == (1, 3)
        (b * m.tensor([[1.0, 2.0, 3.0]])).sum().backward()
        grads.append(base.grad)
    _same(*grads)
    w = tp.ones(2, 3)
    v = w[0]
    v.unsqueeze_(0)
    assert w._version == 1 and tuple(v.shape) == (1, 3)
    with tp.no_grad():
        leaf = tp.ones(2, 3, requires_grad=True)
        leaf.t_()
    assert tuple(leaf.shape) == (3, 2) and leaf.is_leaf


# ---- tp.linalg ---------------------------------------------------------------------------
def test_linalg_namespace_and_the_spectral_norms():
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    _same(tp.linalg.norm(tp.tensor(a)), torch.linalg.norm(torch.tensor(a)), rtol=1e-5)
    _same(tp.linalg.vector_norm(tp.tensor(a), math.inf),
          torch.linalg.vector_norm(torch.tensor(a), math.inf))
    _same(tp.linalg.matrix_norm(tp.tensor(a), -1), torch.linalg.matrix_norm(torch.tensor(a), -1))
    for ord in (2, -2, "nuc"):      # the singular values' norms (linalg_svdvals)
        _same(tp.linalg.matrix_norm(tp.tensor(a), ord),
              torch.linalg.matrix_norm(torch.tensor(a), ord), rtol=1e-5)
    _same(tp.norm(tp.tensor(a), "nuc"), torch.norm(torch.tensor(a), "nuc"), rtol=1e-5)


def test_vander_gradient_matches_the_powers():
    """PyTorch's vander cannot be differentiated (its backward trips on an in-place
    update); the columns are x ** k, whose gradient torch computes fine."""
    data = [0.5, -1.5, 2.0, 0.0]
    x = tp.tensor(data, requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    out = tp.vander(x, 4)
    t_out = torch.stack([tx ** k for k in (3, 2, 1)] + [torch.ones(4)], 1)
    _same(out, t_out.detach())
    weights = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    (out * tp.tensor(weights)).sum().backward()
    (t_out * torch.tensor(weights)).sum().backward()
    _same(x.grad, tx.grad)


@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (3, 4, 1), (4, 3, -1), (0, 3, 0),
                                            (3, 0, 0), (2, 5, -3), (5, 2, 4)])
def test_triangle_indices_match_torch(row, col, offset):
    for name in ("tril_indices", "triu_indices"):
        _same(getattr(tp, name)(row, col, offset), getattr(torch, name)(row, col, offset))
    assert tp.tril_indices(3, 3, dtype=tp.int32).dtype is tp.int32
    assert tp.triu_indices(3, 3, device="cuda").device.type == "cuda"


# ---- predicates --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int64", "float16", "float32"])
def test_is_signed_matches_torch(dtype):
    ours, theirs = tp.ones(2, dtype=getattr(tp, dtype)), torch.ones(2, dtype=getattr(torch, dtype))
    assert ours.is_signed() == theirs.is_signed() == tp.is_signed(ours)


def test_is_nonzero_is_same_size_get_device_match_torch():
    for value in ([1.0], [0.0], 3, [True], [False]):
        assert tp.tensor(value).is_nonzero() == torch.tensor(value).is_nonzero()
    assert tp.is_nonzero(tp.tensor([2]))
    for value in ([1.0, 2.0], []):
        with pytest.raises(RuntimeError) as theirs:
            torch.tensor(value).is_nonzero()
        with pytest.raises(RuntimeError, match=str(theirs.value)):
            tp.tensor(value).is_nonzero()
    assert tp.ones(2, 3).is_same_size(tp.zeros(2, 3)) and tp.is_same_size(tp.ones(2), tp.ones(2))
    assert not tp.ones(2, 3).is_same_size(tp.ones(3, 2))
    assert tp.ones(2).get_device() == torch.ones(2).get_device() == -1
    assert tp.ones(2, device="cuda").get_device() == 0


@pytest.mark.parametrize("dtype,args", [("float32", (10,)), ("int32", (3, 9)), ("int64", (-5, 5))])
def test_randint_like_draws_pytorchs_numbers_when_seeded(dtype, args):
    tp.manual_seed(11)
    torch.manual_seed(11)
    ours = tp.randint_like(tp.zeros(2, 5, dtype=getattr(tp, dtype)), *args)
    theirs = torch.randint_like(torch.zeros(2, 5, dtype=getattr(torch, dtype)), *args)
    assert ours.tolist() == theirs.tolist()
