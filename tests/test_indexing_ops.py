"""Indexing-op behaviour the operator database cannot express: as_strided's backward on
overlapping and non-overlapping views, gradients where ours go beyond PyTorch's (a
scatter `src` larger than its index), None entries in index_put's indices, and that a
bad index is refused before anything is written."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.autograd import gradcheck, gradgradcheck
from tensorplay.errors import ArgumentError, DimError

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4))


# ---- as_strided backward -------------------------------------------------------------
AS_STRIDED_CASES = {
    # (base view of a 3x4 tensor, size, stride, storage_offset)
    "non-overlapping": (lambda x: x, (2, 2), (4, 1), 1),
    "overlapping windows": (lambda x: x, (3, 3), (1, 1), None),
    "stride 0 (broadcast)": (lambda x: x, (2, 3), (0, 1), 2),
    "every storage slot twice": (lambda x: x, (2, 12), (0, 1), 0),
    "of a view with an offset": (lambda x: x[1:], (2, 3), (2, 1), None),
    "of a transposed view": (lambda x: x.t(), (2, 2), (1, 4), 5),
    "of an expanded input": (lambda x: x[0:1].expand(3, 4), (2, 2), (1, 1), None),
    "0-dim": (lambda x: x, (), (), 7),
}


@pytest.mark.parametrize("case", AS_STRIDED_CASES.values(), ids=AS_STRIDED_CASES.keys())
def test_as_strided_gradient_matches_torch(case):
    view, size, stride, offset = case
    x, tx = tp.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    out = view(x).as_strided(size, stride, offset)
    expected = view(tx).as_strided(size, stride, offset)
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    w = RNG.standard_normal(size)
    (out * tp.tensor(w)).sum().backward()
    (expected * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("size, stride, offset", [((2, 2), (4, 1), 1), ((3, 3), (1, 1), 0),
                                                  ((2, 3), (0, 2), 1)],
                         ids=["non-overlapping", "overlapping", "stride 0"])
def test_as_strided_gradcheck(size, stride, offset):
    x = tp.tensor(X, requires_grad=True)
    fn = lambda t: t.as_strided(size, stride, offset) ** 2  # noqa: E731
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


# ---- gradients PyTorch does not have -------------------------------------------------
def test_scatter_src_larger_than_index_gets_a_padded_gradient():
    """PyTorch fails here (its src gradient is index-shaped); ours is zero where no index
    reached src."""
    x = tp.tensor(X, requires_grad=True)
    src = tp.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    index = tp.tensor([[2, 0], [0, 1]])
    for op in (tp.scatter, tp.scatter_add):
        assert gradcheck(lambda a, b, op=op: op(a, 0, index, b), (x, src))
        assert gradgradcheck(lambda a, b, op=op: op(a, 0, index, b), (x, src))
    out = tp.scatter_add(x, 0, index, src)
    out.sum().backward()
    assert src.grad.numpy()[2:].sum() == 0 and src.grad.numpy()[:, 2:].sum() == 0


def test_index_put_with_none_entries():
    """`x[:, idx] = v` reaches index_put_ with a None (torch's Tensor.index_put_ takes none,
    so the database cannot compare it; aten's index_put does)."""
    x, v = tp.tensor(X, requires_grad=True), tp.tensor(RNG.standard_normal((3, 2)),
                                                       requires_grad=True)
    idx = tp.tensor([3, 0])
    out = tp.index_put(x, [None, idx], v)
    expected = torch.ops.aten.index_put(torch.tensor(X), [None, torch.tensor([3, 0])],
                                        torch.tensor(v.detach().numpy()))
    np.testing.assert_array_equal(out.detach().numpy(), expected.numpy())
    assert gradcheck(lambda a, b: tp.index_put(a, [None, idx], b, accumulate=True), (x, v))
    assert gradgradcheck(lambda a, b: tp.index(a * b.sum(), [None, idx]), (x, v))


# ---- data-dependent ops ---------------------------------------------------------------
def test_unique_unsorted_and_nonzero_forms_match_torch():
    a = np.array([[3, 1, 2], [3, 0, 1]])
    for kwargs in ({"sorted": False}, {"return_inverse": True}, {"dim": 1},
                   {"dim": 0, "return_counts": True}):
        out, expected = tp.unique(tp.tensor(a), **kwargs), torch.unique(torch.tensor(a), **kwargs)
        for o, e in zip(out if isinstance(out, tuple) else (out,),
                        expected if isinstance(expected, tuple) else (expected,)):
            np.testing.assert_array_equal(o.numpy(), e.numpy())
    assert isinstance(tp.nonzero(tp.tensor(a), as_tuple=False), tp.Tensor)
    assert len(tp.tensor(a).nonzero(as_tuple=True)) == 2


def test_bool_mask_on_meta_says_why():
    x = tp.empty(3, 4, device="meta")
    mask = tp.empty(3, 4, dtype=tp.bool, device="meta")
    with pytest.raises(ArgumentError, match=r"index\(\): a bool mask in argument 'indices' "
                                            r"gives a data-dependent shape"):
        tp.index(x, [mask])
    assert tp.index(x, [None, tp.empty(5, 2, dtype=tp.int64, device="meta")]).shape == (3, 5, 2)
    assert x[[0, 2], None].shape == (2, 1, 4)   # the list's CPU tensor moves to meta


# ---- bad indices never touch memory --------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda x: x.scatter_(0, tp.tensor([[0, 3]]), 1.0),
    lambda x: x.index_add_(1, tp.tensor([0, 4]), tp.ones(3, 2, dtype=tp.float64)),
    lambda x: x.index_put_([tp.tensor([1, -4])], tp.tensor(0.0, dtype=tp.float64)),
    lambda x: x.index_fill_(0, tp.tensor([2, 3]), 0.0),
    lambda x: x.scatter_reduce_(1, tp.tensor([[9]]), tp.ones(1, 1, dtype=tp.float64), "amax"),
], ids=["scatter_", "index_add_", "index_put_", "index_fill_", "scatter_reduce_"])
def test_out_of_range_index_leaves_self_unchanged(call):
    x = tp.tensor(X)
    version = x._version
    with pytest.raises(DimError, match="out of bounds"):
        call(x)
    np.testing.assert_array_equal(x.numpy(), X)
    assert x._version == version
