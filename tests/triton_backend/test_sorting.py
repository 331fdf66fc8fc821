"""Sorting, selection, cummax/cummin, unique, multinomial and einsum on `cuda`
(triton_kernels/sorting.py, _row_sort.py, random.py, einsum.py) against the CPU
backend, for what the operator database does not reach: rows longer than one block
(the block sizes are shrunk so that small tensors take several), ties and stability in
both directions, NaN, fp16/bf16, non-contiguous inputs, multinomial's distribution."""
import numpy as np
import pytest
import torch

from triton_util import CUDA, assert_same, make

import tensorplay as tp
from triton_kernels import _row_sort as row_sort, sorting


@pytest.fixture(params=["one block", "many blocks"])
def blocks(request, monkeypatch):
    """Run a test with the kernels' block sizes, and again with tiny blocks, so that a
    40-element row is cut into several blocks (the sort: blocks of 8 and merge passes;
    top-k: rounds of candidates; the row walks: BLOCK_N) and a program holds part of a
    row."""
    if request.param == "many blocks":
        monkeypatch.setattr(row_sort, "MAX_BLOCK", 8)
        monkeypatch.setattr(row_sort, "TILE", 64)
        monkeypatch.setattr(sorting, "TILE", 32)
        monkeypatch.setattr(sorting, "MAX_BLOCK_N", 8)
    return request.param


def ties(shape, dtype=tp.float32, nan=False, seed=0):
    """Few distinct values (many ties), some NaN."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 5, shape).astype(np.float64)
    if nan:
        a[rng.random(shape) < 0.15] = np.nan
    return tp.tensor(a, dtype=dtype)


def both(fn, x, exact=True):
    """fn on cuda and on the CPU: equal values (and indices: no tolerance)."""
    got, expected = fn(x.cuda()), fn(x)
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for g, e in zip(got, expected):
        assert_same(g, e, rtol=0, atol=0) if exact else assert_same(g, e)


# (dims 0 and 1: a column and a row sort; a negative dim is the same row sort once the
# front door wraps it: test_sort_dtypes sorts along -1)
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
def test_sort_is_stable_with_nan_largest(blocks, descending, dim):
    x = ties((5, 40), nan=True)
    both(lambda t: t.sort(dim, descending), x)
    both(lambda t: t.argsort(dim, descending), x)
    both(lambda t: t.sort(stable=True, dim=dim, descending=descending), x)


@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16, tp.float64, tp.int8, tp.uint8,
                                   tp.int64, tp.bool], ids=lambda d: d.name)
def test_sort_dtypes(blocks, dtype):
    x = ties((3, 37), dtype=dtype, nan=dtype.is_floating_point, seed=1)
    both(lambda t: t.sort(-1), x)
    both(lambda t: t.sort(0, True), x)


def test_sort_non_contiguous_and_0_dim(blocks):
    x = ties((6, 4, 20), seed=2)
    both(lambda t: t.transpose(0, 2).sort(1), x)
    both(lambda t: t[::2, :, 3:].sort(-1, True), x)
    both(lambda t: t.permute([2, 0, 1]).sort(0), x)
    both(lambda t: t[0, 0, 0].sort(), x)


def test_topk_kthvalue_median(blocks):
    x = ties((4, 33), nan=True, seed=3)     # ties: the first of them in a stable sort
    both(lambda u: u.topk(5, 1), x)
    both(lambda u: u.topk(3, 0, largest=False), x)
    both(lambda u: u.kthvalue(7, 1), x)
    both(lambda u: u.kthvalue(2, 0, keepdim=True), x)
    both(lambda u: u.median(1), x)
    both(lambda u: u.t().median(0, keepdim=True), x)
    both(lambda u: u[1:].median(), x)
    both(lambda u: u.median(), make((4, 33), tp.float16, seed=5))
    both(lambda u: u.kthvalue(3, 1), make((4, 33), tp.int32, seed=5))


@pytest.mark.parametrize("dtype", [tp.float32, tp.bfloat16, tp.int64, tp.bool],
                         ids=lambda d: d.name)
def test_mode_takes_the_smallest_of_the_most_frequent_and_its_last_index(blocks, dtype):
    x = ties((4, 41), dtype=dtype, seed=6)
    both(lambda t: t.mode(1), x)
    both(lambda t: t.t().mode(0, True), x)
    runs = tp.tensor([[3.0, 1.0, 1.0, 2.0, 2.0, 3.0, 0.0, 2.0, 1.0]], dtype=dtype)
    both(lambda t: t.mode(), runs)        # 1 and 2 thrice: 1 wins, at its last index


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", [tp.float32, tp.float16, tp.int32, tp.bool],
                         ids=lambda d: d.name)
def test_cummax_cummin_ties_move_the_index_and_nan_stays(blocks, name, dtype):
    x = ties((3, 45), dtype=dtype, nan=dtype.is_floating_point, seed=7)
    both(lambda t: getattr(t, name)(1), x)
    both(lambda t: getattr(t.t(), name)(0), x)
    both(lambda t: getattr(t[:, ::3], name)(-1), x)


def test_cummax_matches_torch_on_a_late_nan(blocks):
    a = [[1.0, 3.0, 3.0, 2.0] * 5 + [float("nan")] + [5.0, 6.0] * 5]
    got = tp.tensor(a, device=CUDA).cummax(1)
    expected = torch.tensor(a).cummax(1)
    np.testing.assert_array_equal(np.asarray(got[0].cpu()), expected[0].numpy())
    np.testing.assert_array_equal(np.asarray(got[1].cpu()), expected[1].numpy())


def test_unique_flat_and_along_dims(blocks):
    x = ties((5, 9), seed=8)
    for kw in ({}, {"return_inverse": True, "return_counts": True}):
        both(lambda t: t.unique(**kw), x)
        both(lambda t: t.t().unique(**kw), x)
        for d in (0, 1):
            slices = ties((12, 3), seed=9) // 3     # values 0 and 1: repeated rows
            both(lambda t: t.unique(dim=d, **kw), slices if d == 0 else slices.t())
    both(lambda t: t.unique(return_counts=True), make((0,)))


def test_unique_keeps_nans_apart_as_pytorch():
    a = [2.0, float("nan"), 1.0, float("nan"), 2.0]
    values, inverse, counts = tp.tensor(a, device=CUDA).unique(return_inverse=True,
                                                               return_counts=True)
    ev, ei, ec = torch.unique(torch.tensor(a), return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(np.asarray(values.cpu()), ev.numpy())
    np.testing.assert_array_equal(np.asarray(inverse.cpu()), ei.numpy())
    np.testing.assert_array_equal(np.asarray(counts.cpu()), ec.numpy())



def test_unique_consecutive_along_a_dim_is_laid_out_as_on_the_cpu():
    # PyTorch lays the values out with the dim in front, as it computes them
    x = tp.tensor([[1, 1, 2], [1, 1, 2], [3, 1, 2]], device=CUDA)
    for d in (0, 1):
        got = tp.unique_consecutive(x, return_inverse=True, return_counts=True, dim=d)
        expected = torch.unique_consecutive(torch.tensor(x.cpu().numpy()), return_inverse=True,
                                            return_counts=True, dim=d)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(np.asarray(g.cpu()), e.numpy())
            assert g.stride() == e.stride()

# ---- multinomial ---------------------------------------------------------------------------
P = np.array([0.1, 0.0, 0.2, 0.3, 0.4])


def test_multinomial_with_replacement_follows_the_weights():
    tp.manual_seed(0)
    w = tp.tensor(np.stack([P * 3.0, P[::-1].copy()]), device=CUDA)
    samples = np.asarray(tp.multinomial(w, 4000, replacement=True).cpu())
    for row, p in zip(samples, (P, P[::-1])):
        freq = np.bincount(row, minlength=5) / row.size
        assert freq[p == 0].sum() == 0                      # a zero weight is never drawn
        assert np.abs(freq - p).max() < 0.03, freq


def test_multinomial_without_replacement():
    tp.manual_seed(1)
    w = tp.tensor(np.tile(P, (3000, 1)), device=CUDA, dtype=tp.float16)
    samples = np.asarray(tp.multinomial(w, 5).cpu())
    assert all(sorted(row) == [0, 1, 2, 3, 4] for row in samples[:50])
    assert (samples[:, 4] == 1).all()                # the zero weight comes last
    freq = np.bincount(samples[:, 0], minlength=5) / len(samples)
    assert np.abs(freq - P).max() < 0.03, freq       # the first draw follows the weights


def test_multinomial_is_reproducible_and_checks_weights():
    w = tp.tensor([[1.0, 2.0, 3.0], [3.0, 0.0, 1.0]], device=CUDA).t().contiguous().t()
    g1, g2 = tp.Generator().manual_seed(5), tp.Generator().manual_seed(5)
    assert tp.multinomial(w, 6, True, generator=g1).tolist() == \
        tp.multinomial(w, 6, True, generator=g2).tolist()
    with pytest.raises(tp.errors.ArgumentError, match="finite, non-negative"):
        tp.multinomial(tp.tensor([1.0, float("inf")], device=CUDA), 1)
    with pytest.raises(tp.errors.ArgumentError, match="positive weight sum"):
        tp.multinomial(tp.tensor([[1.0, 1.0], [0.0, 0.0]], device=CUDA), 1)


# ---- einsum --------------------------------------------------------------------------------
@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(5, 7), (7, 3)]), ("bij,bkj->bki", [(2, 4, 6), (2, 3, 6)]),
    ("ii->i", [(4, 4)]), ("iij->", [(3, 3, 2)]), ("i,j->ji", [(3,), (4,)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]), ("ij,jk,kl->li", [(2, 3), (3, 4), (4, 5)]),
    ("bi,bi->b", [(4, 1), (4, 3)]), ("ab,b,a->", [(2, 3), (3,), (2,)]),
])
@pytest.mark.parametrize("dtype", [tp.float32, tp.float16], ids=lambda d: d.name)
def test_einsum(equation, shapes, dtype):
    xs = [make(s, dtype, seed=i) for i, s in enumerate(shapes)]
    tol = {} if dtype is tp.float32 else {"rtol": 2e-2, "atol": 2e-2}
    got, expected = tp.einsum(equation, *[x.cuda() for x in xs]), tp.einsum(equation, *xs)
    assert_same(got, expected, **tol)
    assert got.stride() == expected.stride()     # PyTorch's layout on both devices


def test_einsum_runs_the_triton_matmul():
    a, b = make((4, 5)).cuda(), make((5, 6)).cuda()
    with tp.dispatch.explain(file=False) as ex:
        tp.einsum("ij,jk->ik", a, b.t().contiguous().t())
    assert any("bmm" in line for line in ex.lines if "triton" in line), ex.lines
