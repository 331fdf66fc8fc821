"""The dispatch fast path (issue 13) takes shortcuts; each must be exactly the slow path.

Each test below sets the shortcut against what the general machinery does (or against
PyTorch) on the cases where they could differ. No timings here: the speed is measured
by benchmarks/bench_add_overhead.py and bench_autograd.py.
"""

import pytest
import torch

import tensorplay as tp
from tensorplay.errors import DimError, ShapeError


# ---- promotion, indexing, views --------------------------------------------------------


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
