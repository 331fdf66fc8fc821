"""Round 5 of the dispatch fast path (issue 13): the tiny step's `z.sum()` and its
gradient's `grad.expand(self.sizes())`, each shortcut against PyTorch and against the
general code it stands in for.

- `reduction.sum` (a full sum, `x.sum()`) runs in one frame: its result and accumulation
  dtypes come from a table (`_FULL_SUM_TYPES`), NumPy's error state is set in place as
  `call_ignoring` sets it, and np.add.reduce reduces with axis None. The general code is
  `reduction.sum_dim(x, None, False, dtype)`. Both round a half type's float32 total
  inside sum's error state (`_add_up`): an overflow is inf without a warning, as in torch.
- `expand` of a 0-dim tensor (SumBackward0's gradient) makes its view without the loop
  over the sizes and without expand_strides: every stride is 0.
- `cpu_view`, the NumPy view of an impl, builds a 0-d or 1-d impl's byte strides without a
  generator, tests "no element" with `0 in sizes` and passes np.ndarray its arguments by
  position.
No timings here: benchmarks/bench_autograd.py and bench_add_overhead.py measure the speed.
"""

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay._impl import is_contiguous_layout
from tensorplay.autograd.view_impl import DEFAULT, NO_GRAD_MODE
from tensorplay.errors import ShapeError
from tensorplay.meta.layout import expand_strides


# ---- expand --------------------------------------------------------------------------------
ZERO_D_SIZES = [(), (1,), (5,), (0,), (1, 1), (3, 1), (1, 3), (2, 0, 1), (2, 3, 4), (1, 1, 7)]


def general_expand_metadata(sizes):
    """What the general path gives a 0-dim tensor expanded to `sizes`."""
    strides = expand_strides((), (), sizes)
    return strides, is_contiguous_layout(sizes, strides)


@pytest.mark.parametrize("sizes", ZERO_D_SIZES, ids=str)
def test_expand_of_a_0_dim_tensor_matches_torch_and_the_general_path(sizes):
    g = tp.tensor(1.5)
    e = g.expand(sizes)
    want = torch.tensor(1.5).expand(sizes)
    strides, contiguous = general_expand_metadata(sizes)
    assert e.shape == tuple(want.shape) == sizes
    assert e.stride() == want.stride() == strides
    assert e.is_contiguous() == want.is_contiguous() == contiguous
    assert e._impl.is_contiguous == is_contiguous_layout(e._impl.sizes, e._impl.strides)
    assert type(e._impl.sizes) is tuple and type(e._impl.strides) is tuple
    np.testing.assert_array_equal(e.numpy(), want.numpy())
    # a view of g: same memory, same version counter, g as its base
    assert e._impl.base is g._impl and e._impl.storage is g._impl.storage
    assert e._impl.version is g._impl.version and e._impl.creation == DEFAULT
    g.add_(1.0)
    assert e._version == g._version == 1
    np.testing.assert_array_equal(e.numpy(), np.full(sizes, 2.5, np.float32))


def test_expand_of_a_0_dim_tensor_takes_every_size_form():
    g, gt = tp.tensor(2.0), torch.tensor(2.0)
    for args in [((4,),), ([4],), (4,), (np.int64(4),), (np.int64(2), 3), (2, 3)]:
        e, want = g.expand(*args), gt.expand(*args)
        assert e.shape == tuple(want.shape) and e.stride() == want.stride()
        assert e.is_contiguous() == want.is_contiguous()


def test_expand_of_a_0_dim_tensor_keeps_its_errors():
    g = tp.tensor(2.0)
    for sizes in [(-1,), (3, -1), (-2,)]:
        with pytest.raises(ShapeError, match="-1 is not allowed in a leading, non-existing "
                                             "dimension"):
            g.expand(sizes)
        with pytest.raises(RuntimeError):
            torch.tensor(2.0).expand(sizes)


def test_expand_of_a_view_and_of_a_no_grad_view():
    base = tp.tensor([1.0, 2.0, 3.0])
    v = base[1]                     # a 0-dim view: the expand's base is the root
    e = v.expand(4)
    assert e._impl.base is base._impl and e._impl.offset == 1
    np.testing.assert_array_equal(e.numpy(), [2.0] * 4)
    with tp.no_grad():
        n = base[2]
    assert n._impl.creation == NO_GRAD_MODE
    assert n.expand(2)._impl.creation == NO_GRAD_MODE   # propagated as for any view
    with tp.no_grad():
        assert tp.tensor(1.0).expand(3)._impl.creation == NO_GRAD_MODE


@pytest.mark.parametrize("shape,sizes", [
    ((3,), (3,)), ((3,), (2, 3)), ((3,), (-1,)), ((1,), (4,)), ((1,), (2, -1)),
    ((2, 1), (2, 5)), ((2, 1), (-1, 5)), ((2, 1), (3, 2, 4)), ((1, 3), (0, 3)),
    ((2, 1, 3), (2, 4, 3)), ((0,), (2, 0)),
])
def test_expand_of_n_dim_tensors_is_unchanged(shape, sizes):
    x = tp.arange(int(np.prod(shape)), dtype=tp.float32).view(shape)
    xt = torch.arange(int(np.prod(shape)), dtype=torch.float32).view(shape)
    e, want = x.expand(sizes), xt.expand(sizes)
    assert e.shape == tuple(want.shape) and e.stride() == want.stride()
    assert e.is_contiguous() == want.is_contiguous()
    np.testing.assert_array_equal(e.numpy(), want.numpy())


def test_expand_errors_of_n_dim_tensors_are_unchanged():
    x = tp.ones(2, 3)
    with pytest.raises(ShapeError, match="must be greater or equal to the number of dimensions"):
        x.expand(3)
    with pytest.raises(ShapeError, match=r"the expanded size of the tensor \(4\) must match the "
                                         r"existing size \(3\) at non-singleton dimension 1"):
        x.expand(2, 4)
