"""Reductions on `cuda` (triton_kernels/reduction.py) against the CPU backend: any dims,
keepdim, strided and permuted inputs, half types accumulated in float32, integer sums,
values with indices (first occurrence on ties), the split (two-pass) path, backward."""
import pytest

from triton_util import assert_same, make

import tensorplay as tp
from triton_kernels import reduction

DIMS = [None, [0], [1], [-1], [0, 2], [2, 0], [0, 1, 2]]


def both(fn, x, **tol):
    assert_same(fn(x.cuda()), fn(x), **tol)


@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_and_mean_over_dims(dim, keepdim):
    x = make((3, 4, 5))
    if dim is None:
        both(lambda t: t.sum(), x)
        both(lambda t: t.mean(), x)
    else:
        both(lambda t: t.sum(dim, keepdim=keepdim), x)
        both(lambda t: t.mean(dim, keepdim=keepdim), x)


def test_reductions_of_views_read_in_place_or_copied():
    x = make((6, 8))
    both(lambda t: t.t().sum(1), x)              # a column sum: rows with stride 1
    both(lambda t: t[::2, 1::3].sum(0), x)        # strided in both dims
    y = make((4, 5, 6))
    both(lambda t: t.permute([2, 0, 1]).sum([0, 2]), y)   # needs a contiguous copy
    both(lambda t: t.transpose(0, 2).mean([1]), y)


@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16, tp.float64], ids=lambda d: d.name)
def test_half_types_accumulate_in_float32(dtype):
    x = make((4, 300), dtype, low=0.0, high=1.0)
    both(lambda t: t.sum(1), x, rtol=1e-2, atol=0.5)
    both(lambda t: t.mean(), x)
    both(lambda t: t.sum(dtype=tp.float32), x, rtol=1e-5, atol=1e-3)


def test_integer_and_bool_sums_are_int64():
    both(lambda t: t.sum(0), make((5, 3), tp.int32))
    both(lambda t: t.sum(), make((7,), tp.uint8))
    both(lambda t: t.sum(), make((9,), tp.bool))
    both(lambda t: t.sum([1], keepdim=True), make((2, 3), tp.bool))


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dtype", [tp.float32, tp.float16, tp.int64, tp.bool],
                         ids=lambda d: d.name)
def test_max_min_with_indices(name, dtype):
    x = make((4, 6, 5), dtype)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            got = getattr(x.cuda(), name)(dim, keepdim=keepdim)
            expected = getattr(x, name)(dim, keepdim=keepdim)
            assert_same(got[0], expected[0])
            assert_same(got[1], expected[1])
    both(lambda t: getattr(t, name)(), x)


def test_ties_pick_the_first_index_like_the_cpu():
    x = tp.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, -5.0, -5.0, 4.0]])
    for fn in (lambda t: t.max(1)[1], lambda t: t.min(1)[1], lambda t: t.argmax(1),
               lambda t: t.argmin(0), lambda t: t.argmax(), lambda t: t.argmin()):
        both(fn, x)


def test_nan_propagates_through_max_min_and_their_indices():
    nan = float("nan")
    x = tp.tensor([[1.0, nan, 3.0, nan], [2.0, 5.0, -1.0, 0.0], [nan, 0.0, 9.0, 1.0]])
    for fn in (lambda t: t.max(), lambda t: t.min(), lambda t: t.max(1)[0], lambda t: t.max(1)[1],
               lambda t: t.min(1)[1], lambda t: t.argmax(), lambda t: t.argmin(0),
               lambda t: t.argmax(1)):
        both(fn, x)


@pytest.mark.parametrize("keepdim", [False, True])
def test_argmax_argmin(keepdim):
    x = make((3, 5, 2), seed=4)
    for fn in ("argmax", "argmin"):
        both(lambda t: getattr(t, fn)(None, keepdim), x)
        both(lambda t: getattr(t, fn)(1, keepdim), x)
        both(lambda t: getattr(t, fn)(-1, keepdim), x.transpose(0, 2))


@pytest.mark.filterwarnings("ignore:Mean of empty slice")   # the CPU backend's NumPy
def test_zero_dim_and_empty_inputs():
    s = tp.tensor(2.5)
    both(lambda t: t.sum(), s)
    both(lambda t: t.max(0)[0], s)
    both(lambda t: t.argmax(), s)
    e = tp.zeros(0, 3)
    both(lambda t: t.sum(0), e)
    both(lambda t: t.sum(1), e)
    both(lambda t: t.mean(0), e)
    with pytest.raises(tp.errors.ShapeError):
        e.cuda().max()


def test_split_path_with_partials(monkeypatch):
    """Force the two-pass plan (the one a GPU takes for a full sum) on small inputs."""
    monkeypatch.setattr(reduction, "MIN_PROGRAMS", 8)
    monkeypatch.setattr(reduction, "MAX_BLOCK_N", 16)
    monkeypatch.setattr(reduction, "TILE", 64)
    assert reduction.plan(1, 1000)[2] > 1
    x = make((1000,), seed=2)
    both(lambda t: t.sum(), x, rtol=1e-5, atol=1e-4)
    both(lambda t: t.mean(), x)
    both(lambda t: t.max(0)[1], x)
    both(lambda t: t.argmin(), x)
    y = make((3, 500), tp.float16, seed=3)
    both(lambda t: t.sum(1), y, rtol=1e-2, atol=0.1)
    both(lambda t: t.min(1)[1], y)
    ties = tp.zeros(400)
    both(lambda t: t.argmax(), ties)      # the first of 400 equal values, across chunks


def test_backward_through_reductions():
    x = make((3, 4))

    def grads(device, fn):
        leaf = x.to(device).detach().requires_grad_()
        fn(leaf).backward()
        return leaf.grad

    for fn in (lambda t: t.sum(), lambda t: t.mean(), lambda t: t.sum(0).mul(t.mean(1)[0]).sum(),
               lambda t: t.max(), lambda t: t.min(1)[0].sum(), lambda t: t.max(0, True)[0].sum()):
        assert_same(grads("cuda", fn), grads("cpu", fn))
