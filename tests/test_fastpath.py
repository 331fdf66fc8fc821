"""The dispatch fast path (issue 13) takes shortcuts; each must be exactly the slow path.

Each test below sets the shortcut against what the general machinery does (or against
PyTorch) on the cases where they could differ. No timings here: the speed is measured
by benchmarks/bench_add_overhead.py and bench_autograd.py.
"""
import itertools

import pytest
import torch

import tensorplay as tp
from tensorplay import _dtype as dt
from tensorplay._frontdoor import wrap_number
from tensorplay._promotion import result_type, result_type2
from tensorplay.errors import DimError, DTypeError, ShapeError


# ---- promotion, indexing, views --------------------------------------------------------
@pytest.mark.parametrize("dtype", [d for d in dict.fromkeys(dt._BY_NAME.values())
                                   if isinstance(d, dt.dtype)], ids=str)
def test_result_type2_with_a_python_number_matches_result_type(dtype):
    for shape, number in itertools.product([(), (3,)], [True, 2, 2.5]):
        t = tp.zeros(shape, dtype=dtype)
        w = wrap_number(number)
        assert result_type2(t, w) is result_type(t, w)
        assert result_type2(w, t) is result_type(w, t)


@pytest.mark.parametrize("index", [0, 2, -1, -3])
def test_int_index_matches_torch(index):
    x = tp.arange(12.0).reshape(3, 4)
    xt = torch.arange(12.0).reshape(3, 4)
    got, want = x[index], xt[index]
    assert got.tolist() == want.tolist() and got.stride() == want.stride()
    assert got._impl.storage is x._impl.storage        # a view, as before


def test_int_index_errors_are_the_general_ones():
    with pytest.raises(DimError, match="index 3"):
        tp.ones(3, 2)[3]
    with pytest.raises(DimError, match="too many indices"):
        tp.tensor(1.0)[0]


@pytest.mark.parametrize("source, shape", [
    ((4, 4), (16,)), ((4, 4), (2, 8)), ((4, 4), (1, 16, 1)), ((4, 1, 4), (16, 1)),
    ((2, 3, 4), (6, 4)), ((0, 3), (3, 0)), ((1,), ()), ((4, 4), (-1, 2)), ((4, 4), (2, -1, 1)),
])
def test_view_strides_match_torch(source, shape):
    x, xt = tp.ones(source), torch.ones(source)
    assert x.view(shape).stride() == xt.view(shape).stride()
    if len(source) == 2 and 0 not in source:    # not row-major: the general stride walk
        assert x.t().reshape(shape).stride() == xt.t().reshape(shape).stride()


def test_view_errors_are_unchanged():
    x = tp.ones(4, 4)
    with pytest.raises(ShapeError, match=r"shape \[5\] \(argument 'size'\) is invalid"):
        x.view(5)
    with pytest.raises(ShapeError, match="invalid shape dimension"):
        x.view(-2, 8)
    with pytest.raises(ShapeError, match="only one dimension can be inferred"):
        x.view(-1, -1)


# ---- add's alpha, autograd wrappers ----------------------------------------------------
def test_float_alpha_equal_to_one_is_still_refused_for_integers():
    x, xt = tp.tensor([1, 2]), torch.tensor([1, 2])
    for alpha in (1.0, 0.5):
        with pytest.raises(RuntimeError):
            torch.add(xt, xt, alpha=alpha)
        with pytest.raises(DTypeError, match="argument 'alpha' must not be a floating point"):
            tp.add(x, x, alpha=alpha)
