"""Making a view: `view`, `select` (an int index) and `expand`, each shortcut against
PyTorch and against the general code it stands in for.

- `view` of row-major memory takes the row-major strides of the new sizes at once
  (`is_row_major`, written out for 1-d and 2-d); other layouts take the stride walk
  (`walk_view_strides`). `infer_size` checks the usual shape in one pass.
- `make_view` is told the contiguity when its caller knows it, and makes the Tensor
  itself; a view's key set is its impl's, with the REQUIRES_GRAD flag while it requires
  grad (tests/test_dispatch_keys.py follows the flag through the base).
- An int index goes to `select` (a subclass's own `select` included); select wraps its
  dim only when it is negative.
- `expand` of a 0-dim tensor (SumBackward0's gradient) makes its view without the loop
  over the sizes and without expand_strides: every stride is 0.

No timings here: benchmarks/bench_add_overhead.py measures the speed.
"""
import itertools

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay._impl import contiguous_strides, is_contiguous_layout
from tensorplay.autograd.view_impl import DEFAULT, MULTI_OUTPUT, NO_GRAD_MODE
from tensorplay.dispatch import explain
from tensorplay.errors import DimError, ShapeError
from tensorplay.kernel_support.layout import (
    expand_strides, is_row_major, view_strides, walk_view_strides,
)

from torch_twins import numel


def shapes_of(numel, max_dims):
    """Every shape of up to `max_dims` dims with `numel` elements (size-1 dims included)."""
    divisors = [d for d in range(1, numel + 1) if numel % d == 0]
    found = [()] if numel == 1 else []
    for ndim in range(1, max_dims + 1):
        for sizes in itertools.product(divisors, repeat=ndim):
            if np.prod(sizes, dtype=np.int64) == numel:
                found.append(sizes)
    return found


def same_tensor(got, want):
    """Values, dtype, shape, strides and storage offset as PyTorch's."""
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert tuple(got.shape) == tuple(want.shape)
    assert got.stride() == want.stride()
    assert got.storage_offset() == want.storage_offset()
    np.testing.assert_array_equal(got.numpy(), want.detach().numpy())


# ---- view: strides -------------------------------------------------------------------
@pytest.mark.parametrize("numel", [1, 4, 6, 8])
def test_views_of_row_major_memory_match_torch(numel):
    for source in shapes_of(numel, 3):
        x = tp.arange(float(numel)).reshape(source)
        xt = torch.arange(float(numel)).reshape(source)
        for shape in shapes_of(numel, 3):
            v, vt = x.view(shape), xt.view(shape)
            same_tensor(v, vt)
            assert v.is_contiguous() and v._impl.is_contiguous == vt.is_contiguous()


def test_empty_and_zero_dim_views_match_torch():
    for source, shape in [((0, 3), (3, 0)), ((0, 3), (0, 3)), ((2, 0), (-1,)), ((0,), (0, 1, 5)),
                          ((), (1, 1)), ((), ()), ((1,), ()), ((1, 1), (-1,))]:
        x, xt = tp.zeros(source), torch.zeros(source)
        same_tensor(x.view(shape), xt.view(shape))
        # the same sizes over strides that are not row-major (an empty tensor keeps them)
        if numel(source) == 0 and len(source) == 2:
            y = x.as_strided(source, (7, 5))
            yt = xt.as_strided(source, (7, 5))
            assert y.view(shape).stride() == yt.view(shape).stride()


def test_the_row_major_shortcut_is_what_the_walk_finds():
    # every pair of shapes of up to 4 dims with the same number of elements, up to 36
    # (86,344 pairs, a quarter of a second)
    for n in range(1, 37):
        shapes = shapes_of(n, 4)
        for old in shapes:
            if not old:
                continue            # the walk needs a dim (view_strides answers 0-d itself)
            strides = contiguous_strides(old)
            for new in shapes:
                assert walk_view_strides(old, strides, new) == contiguous_strides(new), \
                    (old, new)
                assert view_strides(old, strides, new) == contiguous_strides(new)


def test_is_row_major_is_the_tuple_comparison():
    rng = np.random.default_rng(0)
    for _ in range(3000):
        ndim = int(rng.integers(0, 5))
        sizes = tuple(int(s) for s in rng.integers(0, 4, ndim))
        strides = list(contiguous_strides(sizes))
        if ndim and rng.random() < 0.5:   # change one stride, often to a plausible value
            d = int(rng.integers(0, ndim))
            strides[d] = int(rng.choice([0, 1, 2, 3, 4, 6, 12]))
        strides = tuple(strides)
        assert is_row_major(sizes, strides) == (strides == contiguous_strides(sizes)), \
            (sizes, strides)


@pytest.mark.parametrize("sizes, strides, shape", [
    ((4, 4), (1, 4), (16,)),            # transposed: refused
    ((4, 4), (1, 4), (4, 2, 2)),        # splits the fast dim: fine
    ((4, 1), (1, 7), (4,)),             # contiguous, but a size-1 dim with any stride
    ((1,), (7,), (1, 1)),               # the walk scales by the trailing dim's stride
    ((2, 1, 3), (3, 9, 1), (6,)),
    ((2, 3), (6, 2), (3, 2)),           # a sliced (stepped) last dim
    ((2, 3), (6, 2), (2, 3, 1)),
    ((3, 2), (0, 1), (6,)),             # expanded
    ((3, 2), (0, 1), (3, 1, 2)),
])
def test_views_of_other_layouts_take_the_walk_as_torch(sizes, strides, shape):
    base, base_t = tp.arange(40.0), torch.arange(40.0)
    x, xt = base.as_strided(sizes, strides, 1), base_t.as_strided(sizes, strides, 1)
    try:
        want = xt.view(shape)
    except RuntimeError as e:
        assert "view size is not compatible" in str(e)
        with pytest.raises(ShapeError, match=r"view\(\): view size .* is not compatible with "
                                             r"input tensor's size and stride"):
            x.view(shape)
        return
    got = x.view(shape)
    same_tensor(got, want)
    assert got._impl.is_contiguous == want.is_contiguous() == \
        is_contiguous_layout(got._impl.sizes, got._impl.strides)


@pytest.mark.parametrize("source, shape", [
    ((4, 4), (16,)), ((4, 4), (2, 8)), ((4, 4), (1, 16, 1)), ((4, 1, 4), (16, 1)),
    ((2, 3, 4), (6, 4)), ((0, 3), (3, 0)), ((1,), ()), ((4, 4), (-1, 2)), ((4, 4), (2, -1, 1)),
])
def test_view_strides_match_torch(source, shape):
    x, xt = tp.ones(source), torch.ones(source)
    assert x.view(shape).stride() == xt.view(shape).stride()
    if len(source) == 2 and 0 not in source:    # not row-major: the general stride walk
        assert x.t().reshape(shape).stride() == xt.t().reshape(shape).stride()


def test_contiguous_strides_of_a_matrix_are_torchs():
    # a size-0 dim steps as if its size were 1 (PyTorch's rule)
    for sizes in itertools.product([0, 1, 2, 5], repeat=2):
        assert contiguous_strides(sizes) == torch.empty(sizes).stride(), sizes


# ---- view: sizes and errors ----------------------------------------------------------
def test_minus_one_is_inferred_as_torch():
    x, xt = tp.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    for shape in [(-1,), (4, -1), (-1, 4), (2, -1, 2), (-1, 1, 24), (1, -1, 1)]:
        same_tensor(x.view(shape), xt.view(shape))
    same_tensor(tp.zeros(0, 3).view(-1, 3), torch.zeros(0, 3).view(-1, 3))


def test_infer_size_matches_torch_on_random_shapes():
    # the one-pass cases (no -1, one -1) and everything that falls through to the checks
    rng = np.random.default_rng(2)
    for _ in range(1500):
        n = int(rng.choice([0, 1, 6, 12, 16]))
        shape = tuple(int(s) for s in rng.choice([-2, -1, -1, 0, 1, 2, 3, 4, 6],
                                                 int(rng.integers(0, 4))))
        try:
            want = tuple(torch.empty(n).view(shape).shape)
        except RuntimeError:
            with pytest.raises(ShapeError):
                tp.empty(n).view(shape)
            continue
        assert tuple(tp.empty(n).view(shape).shape) == want, (n, shape)


def test_int_lists_of_every_spelling_still_convert():
    x = tp.ones(4, 4)
    for size in ((16,), (2, 8), [2, 8], (np.int64(2), 8)):
        args = (size,) if not isinstance(size, tuple) or len(size) != 2 else size
        assert x.view(*args).shape == torch.ones(4, 4).view(*args).shape
    with pytest.raises(tp.errors.ArgumentError):
        x.view((2.0, 8))


@pytest.mark.parametrize("shape, message", [
    ((5,), r"view\(\): shape \[5\] \(argument 'size'\) is invalid for input of size 16"),
    ((-1, -1), r"view\(\): only one dimension can be inferred \(-1\), got \[-1, -1\]"),
    ((-2, 8), r"view\(\): invalid shape dimension in argument 'size' \[-2, 8\]"),
    ((-2, -8), r"view\(\): invalid shape dimension in argument 'size' \[-2, -8\]"),
    ((-1, 5), r"view\(\): shape \[-1, 5\] \(argument 'size'\) is invalid for input of size 16"),
    ((0, -1), r"view\(\): shape \[0, -1\] \(argument 'size'\) is invalid for input of size 16"),
    ((2, 0), r"view\(\): shape \[2, 0\] \(argument 'size'\) is invalid for input of size 16"),
])
def test_view_errors_are_unchanged_and_torch_raises_too(shape, message):
    with pytest.raises(RuntimeError):
        torch.ones(4, 4).view(shape)
    with pytest.raises(ShapeError, match=message):
        tp.ones(4, 4).view(shape)


def test_view_errors_are_unchanged():
    x = tp.ones(4, 4)
    with pytest.raises(ShapeError, match=r"shape \[5\] \(argument 'size'\) is invalid"):
        x.view(5)
    with pytest.raises(ShapeError, match="invalid shape dimension"):
        x.view(-2, 8)
    with pytest.raises(ShapeError, match="only one dimension can be inferred"):
        x.view(-1, -1)


# ---- view: the rest of what a view is ------------------------------------------------
def test_a_view_shares_base_storage_and_version_counter():
    x, xt = tp.arange(12.0).reshape(3, 4).clone(), torch.arange(12.0).reshape(3, 4).clone()
    v, vt = x.view(2, 6), xt.view(2, 6)
    w, wt = v.view(-1), vt.view(-1)                      # a view of a view
    assert v._impl.base is x._impl and vt._base is xt
    assert w._impl.base is x._impl and wt._base is xt    # the root, as torch's
    assert v._impl.storage is x._impl.storage is w._impl.storage
    assert v._impl.version is x._impl.version is w._impl.version
    w.add_(tp.ones(12))
    wt.add_(torch.ones(12))
    assert x._version == v._version == w._version == xt._version == wt._version == 1
    same_tensor(x, xt)
    same_tensor(v, vt)


def test_a_views_key_set_is_its_impls_with_the_flag_while_it_requires_grad():
    from tensorplay.dispatch.keys import REQUIRES_GRAD
    x = tp.ones(4, 4, requires_grad=True)
    plain, view = x._impl, x.view(16)._impl
    assert view.requires_grad and view.grad_fn is not None
    assert view.keys == view.key_set() | REQUIRES_GRAD == plain.keys
    assert view.is_contiguous and view.base is plain
    detached = x.detach().view(16)._impl
    assert not detached.requires_grad and detached.keys == detached.key_set()


def test_view_creation_meta_and_contiguity():
    x = tp.ones(4, 4)
    assert x.view(16)._impl.creation == DEFAULT
    with tp.no_grad():
        v = x.view(16)
    assert v._impl.creation == NO_GRAD_MODE
    assert v.view(4, 4)._impl.creation == NO_GRAD_MODE       # carried to a view of it
    a, b = x.split(2)
    assert a.view(8)._impl.creation == MULTI_OUTPUT
    for t in (x.view(16), x.view(2, 8), x.view(1, 16, 1), x.t().view(2, 2, 4)):
        assert t._impl.is_contiguous == is_contiguous_layout(t._impl.sizes, t._impl.strides)


def test_view_of_a_tensor_that_requires_grad_matches_torch():
    x = tp.arange(8.0).requires_grad_()
    xt = torch.arange(8.0).requires_grad_()
    y, yt = x.view(2, 4), xt.view(2, 4)
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__ == "ViewBackward0"
    (y * tp.arange(8.0).view(2, 4)).sum().backward()
    (yt * torch.arange(8.0).view(2, 4)).sum().backward()
    same_tensor(x.grad, xt.grad)
    with tp.no_grad():
        z = x.view(8)
    with torch.no_grad():
        zt = xt.view(8)
    assert z.requires_grad == zt.requires_grad and z.grad_fn is None and zt.grad_fn is None


def test_views_are_the_same_while_explain_listens():
    x = tp.arange(6.0).reshape(2, 3)
    plain = x.view(3, 2)
    with explain(file=False) as ex:
        watched = x.view(3, 2)
    assert "Composite fallback tensorplay.composite.views.view" in ex.text
    assert plain.stride() == watched.stride() and plain._impl.is_contiguous
    assert watched._impl.base is plain._impl.base is x._impl.base


# ---- select and an int index ---------------------------------------------------------
@pytest.mark.parametrize("index", [0, 2, -1, -3])
def test_int_index_matches_torch(index):
    x = tp.arange(12.0).reshape(3, 4)
    xt = torch.arange(12.0).reshape(3, 4)
    got, want = x[index], xt[index]
    assert got.tolist() == want.tolist() and got.stride() == want.stride()
    assert got._impl.storage is x._impl.storage        # a view of x's storage


def test_int_index_errors_are_the_general_ones():
    with pytest.raises(DimError, match="index 3"):
        tp.ones(3, 2)[3]
    with pytest.raises(DimError, match="too many indices"):
        tp.tensor(1.0)[0]


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


def test_select_still_matches_torch():
    x, xt = tp.arange(24.0).reshape(2, 3, 4), torch.arange(24.0).reshape(2, 3, 4)
    for index in (0, 1, -1):
        same_tensor(x[index], xt[index])
        same_tensor(x[index][-1], xt[index][-1])
        same_tensor(x.permute(2, 1, 0)[index], xt.permute(2, 1, 0)[index])


def test_select_dims_in_range_skip_only_what_wrap_dim_would_not_change():
    x, xt = tp.arange(24.0).reshape(2, 3, 4), torch.arange(24.0).reshape(2, 3, 4)
    for dim in (0, 1, 2, -1, -3):
        same_tensor(x.select(dim, 1), xt.select(dim, 1))
    for dim in (3, -4):
        with pytest.raises(IndexError):
            xt.select(dim, 0)
        with pytest.raises(DimError, match=r"select\(\): Dimension out of range \(expected to "
                                           r"be in range of \[-3, 2\], but got " + str(dim)):
            x.select(dim, 0)
    with pytest.raises(DimError, match=r"select\(\): index 2 \(argument 'index'\) out of range"):
        x.select(0, 2)


# ---- expand --------------------------------------------------------------------------
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
