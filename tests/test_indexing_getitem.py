"""`x[...]` and `x[...] = v` against PyTorch: values, shapes, views vs copies, gradients
through indexing and through assignment, and the errors of bad indices.

Each index expression is written once as a function of (tensor, module), so the same
code indexes a TensorPlay tensor (module `tp`) and a PyTorch one (module `torch`).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.autograd import gradcheck, gradgradcheck
from tensorplay.errors import ArgumentError, DimError, DTypeError

BASE = np.arange(210.0).reshape(5, 6, 7) / 7 - 10


INDEX_EXPRESSIONS = {
    "int tensor": lambda x, m: x[m.tensor([0, 2, 2])],
    "int list": lambda x, m: x[[4, 0]],
    "negative": lambda x, m: x[[-1, -5]],
    "2-D index": lambda x, m: x[m.tensor([[0, 1], [3, 3]])],
    "second dim": lambda x, m: x[:, [0, 5]],
    "last dim via ...": lambda x, m: x[..., [1, -1]],
    "two adjacent": lambda x, m: x[:, [0, 1], [2, 3]],
    "split by slice": lambda x, m: x[[0, 1], :, [2, 3]],
    "broadcast pair": lambda x, m: x[m.tensor([[0], [4]]), m.tensor([1, 2, 3])],
    "with int": lambda x, m: x[1, [0, 1], 2],
    "int after slice": lambda x, m: x[:, [0, 1], 2],
    "None and slices": lambda x, m: x[None, [1], 2:4, None],
    "step slice": lambda x, m: x[m.tensor([[0, 1], [2, 3]]), ::2, m.tensor([1, 0])],
    "bool mask all dims": lambda x, m: x[x > 10],
    "bool mask one dim": lambda x, m: x[:, m.tensor([True, False, True, False, True, False])],
    "bool list": lambda x, m: x[[True, False, True, False, True]],
    "bool mask two dims": lambda x, m: x[(x > 0)[:, :, 0]],
    "mask then int": lambda x, m: x[m.tensor([True, False, True, True, False]), 3],
    "True": lambda x, m: x[True],
    "False": lambda x, m: x[False],
    "empty index": lambda x, m: x[m.tensor([], dtype=m.int64)],
    "0-dim int tensor": lambda x, m: x[m.tensor(2)],
    "basic only": lambda x, m: x[1:4, None, ..., ::3],
}


def _pair(requires_grad=False):
    x = tp.tensor(BASE, requires_grad=requires_grad)
    return x, torch.tensor(BASE, requires_grad=requires_grad)


@pytest.mark.parametrize("expr", INDEX_EXPRESSIONS.values(), ids=INDEX_EXPRESSIONS.keys())
def test_getitem_matches_torch(expr):
    x, tx = _pair()
    out, expected = expr(x, tp), expr(tx, torch)
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())


@pytest.mark.parametrize("expr", INDEX_EXPRESSIONS.values(), ids=INDEX_EXPRESSIONS.keys())
def test_getitem_gradient_matches_torch(expr):
    x, tx = _pair(requires_grad=True)
    out, expected = expr(x, tp), expr(tx, torch)
    w = np.random.default_rng(0).standard_normal(tuple(expected.shape))
    (out * tp.tensor(w)).sum().backward()
    (expected * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("name", ["int tensor", "split by slice", "bool mask one dim",
                                  "broadcast pair"])
def test_getitem_gradcheck(name):
    expr = INDEX_EXPRESSIONS[name]
    x = tp.tensor(BASE[:, :, :4], requires_grad=True)
    assert gradcheck(lambda t: expr(t, tp), (x,))
    assert gradgradcheck(lambda t: expr(t, tp), (x,))


def test_basic_indexing_is_a_view_and_advanced_a_copy():
    x = tp.tensor(BASE)
    view = x[1:3, None, 2]
    assert view.untyped_storage() is x.untyped_storage()
    copy = x[[1, 2]]
    assert copy.untyped_storage() is not x.untyped_storage()


# ---- assignment ----------------------------------------------------------------------
SET_EXPRESSIONS = {
    "int list, scalar": (lambda x, m: [[0, 2]], 5.0),
    "mask, scalar": (lambda x, m: [x > 10], -1.0),
    "mask one dim, row": (lambda x, m: [(slice(None), m.tensor([True, False] * 3))], "row"),
    "split by slice": (lambda x, m: [([0, 1], slice(None), [2, 3])], "row"),
    "second dim tensor": (lambda x, m: [(slice(None), m.tensor([5, 0]))], "full"),
    "basic slice": (lambda x, m: [(slice(1, 3), 0)], "row"),
    "broadcast pair": (lambda x, m: [(m.tensor([[0], [4]]), m.tensor([1, 2]))], "full"),
}


def _values_for(kind, shape, rng):
    if isinstance(kind, float):
        return kind, kind
    vshape = shape[-1:] if kind == "row" else shape
    v = rng.standard_normal(vshape)
    return v, v


def _index_of(expr, x, m):
    return expr(x, m)[0]


@pytest.mark.parametrize("case", SET_EXPRESSIONS.values(), ids=SET_EXPRESSIONS.keys())
def test_setitem_matches_torch(case):
    expr, kind = case
    x, tx = _pair()
    rng = np.random.default_rng(1)
    shape = tuple(tx[_index_of(expr, tx, torch)].shape)
    v, tv = _values_for(kind, shape, rng)
    x[_index_of(expr, x, tp)] = v if isinstance(v, float) else tp.tensor(v)
    tx[_index_of(expr, tx, torch)] = tv if isinstance(tv, float) else torch.tensor(tv)
    np.testing.assert_array_equal(x.numpy(), tx.numpy())


@pytest.mark.parametrize("case", SET_EXPRESSIONS.values(), ids=SET_EXPRESSIONS.keys())
def test_setitem_gradient_matches_torch(case):
    """y = x * 2; y[idx] = v: x's gradient is zero where v landed, v's is what reached it."""
    expr, kind = case
    if isinstance(kind, float):
        kind = "full"
    x, tx = _pair(requires_grad=True)
    y, ty = x * 2, tx * 2
    shape = tuple(ty.detach()[_index_of(expr, ty.detach(), torch)].shape)
    v, _ = _values_for(kind, shape, np.random.default_rng(2))
    tv_leaf, v_leaf = torch.tensor(v, requires_grad=True), tp.tensor(v, requires_grad=True)
    y[_index_of(expr, y.detach(), tp)] = v_leaf
    ty[_index_of(expr, ty.detach(), torch)] = tv_leaf
    w = np.random.default_rng(3).standard_normal(BASE.shape)
    (y * tp.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(v_leaf.grad.numpy(), tv_leaf.grad.numpy())


def test_augmented_assignment_with_repeated_indices_matches_torch():
    """x[idx] += 1 reads x[idx] (a copy), adds, and writes back: a repeated index is
    written twice with the same value, so it grows by 1, not 2 (as in PyTorch)."""
    x, tx = _pair()
    x[[0, 0, 3]] += 1
    tx[[0, 0, 3]] += 1
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    x[x > 0] *= 2
    tx[tx > 0] *= 2
    np.testing.assert_array_equal(x.numpy(), tx.numpy())


def test_setitem_casts_values_and_bumps_version():
    # a basic index copies (and casts) the value; an index tensor refuses another dtype
    # (index_put_, test_edge_case_errors.py), as PyTorch's
    x, tx = tp.zeros(4, dtype=tp.int64), torch.zeros(4, dtype=torch.int64)
    version = x._version
    x[1::2] = tp.tensor([2.7, -1.5], dtype=tp.float64)
    tx[1::2] = torch.tensor([2.7, -1.5], dtype=torch.float64)
    assert x.tolist() == tx.tolist() == [0, 2, 0, -1]
    assert x._version > version


def test_index_put_accumulate_adds_repeats():
    x, tx = _pair()
    idx = [tp.tensor([0, 0, 4])]
    v = np.ones((3, 6, 7))
    out = x.index_put(idx, tp.tensor(v), accumulate=True)
    expected = tx.index_put((torch.tensor([0, 0, 4]),), torch.tensor(v), accumulate=True)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())


# ---- errors --------------------------------------------------------------------------
@pytest.mark.parametrize("index, error, pattern", [
    (tp.tensor([0.5]), DTypeError, r"__getitem__\(\): tensors used as indices \(argument "
                                   r"'index'\) must be long, int, byte or bool tensors"),
    (([0], [0], [0], [0]), DimError, r"__getitem__\(\): too many indices in argument 'index'"),
    (tp.tensor([True, False]), DimError, r"__getitem__\(\): the shape of the mask \[2\]"),
    ([0, 5], DimError, r"index\(\): index 5 in argument 'indices' is out of bounds for "
                       r"dimension 0 with size 5"),
    ((..., ...), DimError, r"single ellipsis"),
    ("a", ArgumentError, r"__getitem__\(\): argument 'index' of type str is not a valid index"),
])
def test_bad_indices_raise_typed_errors(index, error, pattern):
    x = tp.tensor(BASE)
    with pytest.raises(error, match=pattern):
        x[index]
