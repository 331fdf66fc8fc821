"""The bitonic sort, merge passes and top-k of triton_kernels/_row_sort.py (and
_bitonic.py) against PyTorch: every dtype, rows shorter than a block, one block, and
several blocks (the block size shrunk to 8, so a row of 37 takes five blocks and three
merge passes), ties (stable in both directions), NaN, -0.0, infinities, top-k rounds
and their edge cases, rows along any dim read in place."""
import numpy as np
import pytest
import torch

from triton_util import CUDA

import tensorplay as tp
from triton_kernels import _row_sort as row_sort


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 8 (a program: up to 8 blocks), so short rows cross blocks."""
    monkeypatch.setattr(row_sort, "MAX_BLOCK", 8)
    monkeypatch.setattr(row_sort, "TILE", 64)


DTYPES = [tp.float32, tp.float64, tp.float16, tp.bfloat16, tp.int8, tp.uint8, tp.int16,
          tp.int32, tp.int64, tp.bool]


def pair(shape, dtype, seed=0):
    """The same values as a TensorPlay (cuda) and a PyTorch (CPU) tensor: few distinct
    values (many ties), and for floats NaN, -0.0 and +-inf among them."""
    rng = np.random.default_rng(seed)
    if dtype is tp.bool:
        a = rng.random(shape) < 0.5
    elif dtype.is_floating_point:
        a = rng.integers(-3, 4, shape).astype(np.float64)
        specials = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf])
        pick = rng.random(shape) < 0.3
        a[pick] = rng.choice(specials, int(pick.sum()))
    else:
        low = 0 if dtype is tp.uint8 else -3
        a = rng.integers(low, low + 7, shape)
        if dtype is tp.int64:
            a[..., :2] = [2 ** 62, -2 ** 62]          # beyond a 32-bit key
        if dtype is tp.int32:
            a[..., :2] = [2 ** 31 - 1, -2 ** 31]      # the extremes of a 32-bit key
    return tp.tensor(a, dtype=dtype, device=CUDA), \
        torch.tensor(a).to(getattr(torch, dtype.name))


def stable_sort(t, dim, descending=False):
    return torch.sort(t, stable=True, dim=dim, descending=descending)


def same(got, expected, signs=True):
    """Equal values (NaN equal to NaN, -0.0 told from 0.0 unless not `signs`: which of
    equal zeros comes first is unspecified outside a stable sort), dtypes and shapes."""
    g = np.asarray(got.cpu())
    e = expected.numpy() if expected.dtype is not torch.bfloat16 else \
        expected.float().numpy()
    if got.dtype is tp.bfloat16:
        g = g.astype(np.float32)
    assert g.shape == e.shape, (g.shape, e.shape)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_array_equal(g, e)
    if signs and g.dtype.kind == "f":          # NaN's sign is nobody's promise
        np.testing.assert_array_equal(np.signbit(g) & ~np.isnan(g), np.signbit(e) & ~np.isnan(e))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_sort_across_blocks_is_stable_as_torch(small_blocks, dtype):
    x, t = pair((2, 37), dtype)
    for descending in (False, True):
        values, indices = x.sort(-1, descending)
        expected = stable_sort(t, -1, descending)
        same(values, expected.values)
        same(indices, expected.indices)


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 16, 17, 40])
def test_sort_lengths_around_the_block(small_blocks, n):
    x, t = pair((3, n), tp.float32, seed=n)
    values, indices = x.sort(1, True)
    expected = stable_sort(t, 1, True)
    same(values, expected.values)
    same(indices, expected.indices)


def test_sort_in_one_block_with_rows_sharing_a_program():
    x, t = pair((9, 5), tp.float32, seed=1)     # blocks of 8, 9 rows in one program
    values, indices = x.sort(1)
    expected = stable_sort(t, 1)
    same(values, expected.values)
    same(indices, expected.indices)


@pytest.mark.parametrize("k", [0, 1, 3, 8, 9, 70])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_rounds_and_edges(monkeypatch, k, largest):
    # Blocks of 16: k <= 8 keeps k per block in rounds (70 -> 40 -> 24 -> 16 for k = 8);
    # k = 9 and k = n sort the row. The result: the first k of a stable sort.
    monkeypatch.setattr(row_sort, "MAX_BLOCK", 16)
    monkeypatch.setattr(row_sort, "TILE", 64)
    x, t = pair((2, 70), tp.float32, seed=k)
    values, indices = x.topk(k, 1, largest=largest)
    expected = stable_sort(t, 1, largest)
    same(values, expected.values[:, :k])
    same(indices, expected.indices[:, :k])
    if k:          # PyTorch's own top-k: the same values (ties may differ in index)
        same(values, torch.topk(t, k, 1, largest=largest).values, signs=False)


def test_topk_dtypes_along_dim_0(small_blocks):
    for dtype in (tp.int64, tp.float16, tp.uint8):
        x, t = pair((21, 3), dtype, seed=4)
        values, indices = x.topk(2, 0)
        expected = stable_sort(t, 0, True)
        same(values, expected.values[:2])
        same(indices, expected.indices[:2])


def test_kthvalue_and_median_match_torch(small_blocks):
    x, t = pair((3, 37), tp.float64, seed=5)
    for k in (1, 2, 20, 37):          # small k: from a top-k; large: from the sort
        values, indices = x.kthvalue(k, 1)
        expected = torch.kthvalue(t, k, 1)
        same(values, expected.values, signs=False)
        picked = x.gather(1, indices[:, None])[:, 0]     # the indices point at the values
        np.testing.assert_array_equal(np.asarray(picked.cpu()), np.asarray(values.cpu()))
    values, indices = x.median(1)                  # NaN rows: NaN at its first index
    expected = torch.median(t, 1)
    same(values, expected.values)
    same(indices, expected.indices)
    y, u = pair((4, 19), tp.int32, seed=6)
    same(y.median(), torch.median(u))
    same(y.median(0).values, torch.median(u, 0).values)


def test_any_dim_in_place_and_through_a_copy(small_blocks):
    x, t = pair((4, 10, 6), tp.float32, seed=7)
    cases = [(lambda a: a, 1), (lambda a: a.transpose(0, 2), 0),
             (lambda a: a[::2, :, ::3], 1), (lambda a: a.permute(2, 0, 1), 2)]
    for view, d in cases:
        values, indices = view(x).sort(d)
        expected = stable_sort(view(t), d)
        same(values, expected.values)
        same(indices, expected.indices)
    x4, t4 = pair((3, 5, 9, 4), tp.float32, seed=8)     # three dims apart: a copy
    values, indices = x4[:, ::2, :, ::2].sort(2)
    expected = stable_sort(t4[:, ::2, :, ::2], 2)
    same(values, expected.values)
    same(indices, expected.indices)


def test_row_layout_reads_in_place_where_dims_coalesce():
    x = tp.zeros((4, 10, 6), device=CUDA)
    assert row_sort.row_layout(1, x) == (6, [(60, 1, 6)])            # two row dims
    assert row_sort.row_layout(0, x.transpose(0, 2)) == (4, [(6, 60, 1)])
    assert row_sort.row_layout(2, x) == (40, [(0, 6, 1)])            # rows at one stride
    assert row_sort.row_layout(2, tp.zeros((3, 5, 9, 4), device=CUDA)[:, ::2, :, ::2]) \
        is None


def test_empty_and_0_dim():
    x, t = pair((3, 0), tp.float32)
    same(x.sort(1)[0], torch.sort(t, 1)[0])
    same(x.topk(0, 1)[1], torch.topk(t, 0, 1)[1])
    same(x.t().sort(1)[1], torch.sort(t.t(), 1)[1])
    s, u = pair((), tp.float32, seed=3)
    same(s.sort()[0], torch.sort(u)[0])
    same(s.topk(1)[1], torch.topk(u, 1)[1])


@pytest.mark.parametrize("dtype", [tp.float32, tp.int64, tp.bfloat16], ids=lambda d: d.name)
def test_unique_matches_torch(small_blocks, dtype):
    x, t = pair((5, 9), dtype, seed=9)
    values, inverse, counts = x.unique(return_inverse=True, return_counts=True)
    expected = torch.unique(t, return_inverse=True, return_counts=True)
    same(values, expected[0])
    same(counts, expected[2])
    # Each NaN is a value of its own; which NaN takes which of their places is not
    # PyTorch's promise: the others' places are equal, and every element is found.
    number = ~torch.isnan(t.float()).numpy()
    np.testing.assert_array_equal(np.asarray(inverse.cpu())[number], expected[1].numpy()[number])
    same(values[inverse], t, signs=False)
    rows, u = pair((12, 3), dtype, seed=10)
    if dtype.is_floating_point:      # rows with NaN are each apart in PyTorch too: drop them
        keep = ~torch.isnan(u.float()).any(1)
        rows, u = rows[tp.tensor(keep.numpy(), device=CUDA)], u[keep]
    repeat = [0, 1, 2, 0, 3, 1, 2, 0]
    rows, u = rows[repeat], u[repeat]
    got = rows.unique(dim=0, return_inverse=True, return_counts=True)
    expected = torch.unique(u, dim=0, return_inverse=True, return_counts=True)
    for g, e in zip(got, expected):
        same(g, e, signs=False)
