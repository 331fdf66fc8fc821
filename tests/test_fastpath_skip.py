"""The dispatch fast path, second round (issue 13): a front door skips the autograd
wrapper's hop when nothing needs a gradient, and results and views are built with less.

Each shortcut is set against the path it replaces on the cases where the two could
differ. No timings here: benchmarks/bench_add_overhead.py measures the speed.
"""

import numpy as np
import pytest
import torch

import tensorplay as tp


# ---- cheaper results and views -------------------------------------------------------------


def test_indexing_with_an_int_honours_a_subclass_select():
    class Picky(tp.Tensor):
        def select(self, dim, index):
            return "picky"
    x = tp.arange(6.0).view(2, 3)
    assert torch.equal(torch.from_numpy(x[1].numpy()), torch.arange(6.0).view(2, 3)[1])
    assert x[-1].tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(IndexError):
        x[2]
    assert tp.Tensor._make_subclass(Picky, x)[0] == "picky"


def test_int_lists_of_every_spelling_still_convert():
    x = tp.ones(4, 4)
    for size in ((16,), (2, 8), [2, 8], (np.int64(2), 8)):
        args = (size,) if not isinstance(size, tuple) or len(size) != 2 else size
        assert x.view(*args).shape == torch.ones(4, 4).view(*args).shape
    with pytest.raises(tp.errors.ArgumentError):
        x.view((2.0, 8))


def test_a_view_sets_every_field_a_plain_impl_sets():
    from tensorplay._impl import TensorImpl
    x = tp.ones(4, 4, requires_grad=True)
    plain, view = x._impl, x.view(16)._impl
    for name in TensorImpl.__slots__:
        if name in ("__weakref__", "requires_grad", "grad_fn"):
            continue        # the view answers these two through its properties
        assert hasattr(view, name) == hasattr(plain, name), name
    assert view.requires_grad and view.grad_fn is not None
    assert view.keys == view.key_set() and view.is_contiguous and view.base is plain
