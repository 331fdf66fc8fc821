"""Round 4 of the dispatch fast path (issue 13): views and in-place ops, each shortcut
against PyTorch and against the general code it stands in for.

- `view` of row-major memory takes the row-major strides of the new sizes at once
  (`is_row_major`, written out for 1-d and 2-d); other layouts take the stride walk
  (`walk_view_strides`). `infer_size` checks the usual shape in one pass.
- `make_view` is told the contiguity when its caller knows it, and makes the Tensor itself.
- The in-place add_/sub_/mul_/div_ kernels skip rules.binary_inplace when `other` has self's
  sizes or is 0-dim on self's device (a wrapped number), the cast check when the result
  type is self's, and the overlap checks when nothing can overlap (no stride 0 in self,
  no storage shared with `other`); add_/sub_ write a one-element self back from a fresh
  result instead of through out=.
- The version bump after an in-place kernel (`dispatcher._bumping`) has a one-position
  form.
No timings here: benchmarks/bench_add_overhead.py measures the speed.
"""
import itertools
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay._impl import contiguous_strides, is_contiguous_layout
from tensorplay.autograd.view_impl import DEFAULT, MULTI_OUTPUT, NO_GRAD_MODE
from tensorplay.dispatch import explain
from tensorplay.dispatch.dispatcher import _bumping
from tensorplay.errors import DimError, DTypeError, ShapeError, TensorPlayError
from tensorplay.meta.layout import is_row_major, view_strides, walk_view_strides
from tensorplay.meta.overlap import check_inplace_overlap


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


# ---- view: strides ------------------------------------------------------------------------
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


def numel(sizes):
    return int(np.prod(sizes, dtype=np.int64))


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


# ---- view: the rest of what a view is ----------------------------------------------------
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


def test_contiguous_strides_of_a_matrix_are_torchs():
    # a size-0 dim steps as if its size were 1 (PyTorch's rule)
    for sizes in itertools.product([0, 1, 2, 5], repeat=2):
        assert contiguous_strides(sizes) == torch.empty(sizes).stride(), sizes


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


# ---- in place: the kernel ---------------------------------------------------------------
DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "int64"]


def pair(values, dtype):
    return (tp.tensor(values, dtype=getattr(tp, dtype)),
            torch.tensor(values, dtype=getattr(torch, dtype)))


def _as_numpy(t):
    if t.dtype == torch.bfloat16:
        return t.float().numpy()
    return t.numpy()


def same_values(got, want):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride()
    g = got.float().numpy() if got.dtype is tp.bfloat16 else got.numpy()
    np.testing.assert_array_equal(g, _as_numpy(want.detach()))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (2,), (2, 3)])
@pytest.mark.parametrize("op", ["add_", "sub_"])
def test_inplace_add_sub_match_torch(dtype, shape, op):
    values = np.arange(1, 1 + numel(shape)).reshape(shape) * 7 % 11
    for other_dtype, alpha in [(dtype, 1), (dtype, 3), ("int8", 1), ("float64", 1)]:
        if op == "sub_" and dtype == "uint8" and alpha != 1:
            continue
        a, at = pair(values.tolist(), dtype)
        b, bt = pair((values + 100).tolist(), other_dtype)
        try:
            want = getattr(at, op)(bt, alpha=alpha)
        except RuntimeError:
            with pytest.raises(DTypeError):
                getattr(a, op)(b, alpha=alpha)
            assert a._version == 0
            continue
        got = getattr(a, op)(b, alpha=alpha)
        assert got is a
        same_values(a, want)
        assert a._version == at._version == 1


@pytest.mark.parametrize("dtype", DTYPES + ["bool"])
@pytest.mark.parametrize("shape", [(), (1,), (2, 3)])
def test_inplace_with_a_python_number_or_a_0_dim_tensor_matches_torch(dtype, shape):
    # a wrapped number (0-dim) fits self without rules.binary_inplace
    values = (np.arange(1, 1 + numel(shape)).reshape(shape) % 3).tolist()
    others = [2, 1.5, True, ("tensor", 3, "int64"), ("tensor", 0.5, "float64"),
              ("tensor", 2, dtype)]
    for op in ("add_", "sub_", "mul_"):
        for other in others:
            a, at = pair(values, dtype)
            if isinstance(other, tuple):
                _, value, other_dtype = other
                b, bt = pair(value, other_dtype)
            else:
                b = bt = other
            try:
                getattr(at, op)(bt)
            except RuntimeError:
                with pytest.raises(RuntimeError):
                    getattr(a, op)(b)
                assert a._version == 0
                continue
            getattr(a, op)(b)
            same_values(a, at)
            assert a._version == at._version == 1


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("self_shape, other_shape", [((2, 3), (2, 3)), ((2, 3), (3,)),
                                                     ((1,), (1,)), ((), ()), ((3,), (1,))])
def test_inplace_mul_matches_torch(dtype, self_shape, other_shape):
    for other_dtype in (dtype, "int64", "float32"):
        a, at = pair((np.arange(numel(self_shape)).reshape(self_shape) % 5).tolist(), dtype)
        b, bt = pair((np.arange(numel(other_shape)).reshape(other_shape) % 3 + 1).tolist(),
                     other_dtype)
        try:
            at.mul_(bt)
        except RuntimeError:
            with pytest.raises(DTypeError, match=r"mul_\(\): result type"):
                a.mul_(b)
            continue
        a.mul_(b)
        same_values(a, at)
    x, xt = tp.arange(4.0), torch.arange(4.0)
    with pytest.raises(RuntimeError):
        xt[:3].mul_(xt[1:])
    with pytest.raises(TensorPlayError, match="single memory location"):
        x[:3].mul_(x[1:])
    x.mul_(x)
    xt.mul_(xt)
    same_values(x, xt)


@pytest.mark.parametrize("dtype", DTYPES + ["bool"])
def test_inplace_div_matches_torch(dtype):
    for self_shape, other_shape in [((2, 3), (2, 3)), ((2, 3), (3,)), ((1,), (1,)), ((), ()),
                                    ((3,), ())]:
        for other_dtype in (dtype, "int64", "float64"):
            values = (np.arange(numel(self_shape)).reshape(self_shape) % 5 - 2).tolist()
            a, at = pair(values, dtype)
            b, bt = pair((np.arange(numel(other_shape)).reshape(other_shape) % 3 - 1).tolist(),
                         other_dtype)          # zeros among them: inf and nan, no warning
            try:
                at.div_(bt)
            except RuntimeError:
                with pytest.raises(DTypeError, match=r"div_\(\): result type"):
                    a.div_(b)
                assert a._version == 0
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                a.div_(b)
            same_values(a, at)
            assert a._version == at._version == 1


def test_inplace_div_keeps_the_callers_error_state_for_what_it_does_not_ignore():
    # x / 0 is inf whatever the state (PyTorch's rule); the caller's over="raise" still
    # holds, for the division and for the write back into a half self
    with np.errstate(divide="raise", invalid="raise"):
        x = tp.tensor([1.0, 0.0]).div_(tp.zeros(2))
    assert x.tolist()[0] == float("inf") and np.isnan(x.tolist()[1])
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            tp.tensor([1e38, 1.0]).div_(tp.tensor([1e-3, 1.0]))
        with pytest.raises(FloatingPointError):
            tp.tensor([60000.0], dtype=tp.float16).div_(0.5)


def test_inplace_div_overlap_and_numbers_match_torch():
    x, xt = tp.arange(1.0, 5.0), torch.arange(1.0, 5.0)
    with pytest.raises(RuntimeError):
        xt[:3].div_(xt[1:])
    with pytest.raises(TensorPlayError, match="single memory location"):
        x[:3].div_(x[1:])
    for other in (2, 0.5, 0, True):
        x.div_(other)
        xt.div_(other)
        same_values(x, xt)
    h, ht = pair([1.0, 3.0], "float16")
    h.div_(0.1)                               # a half self takes the float32 0-dim rule
    ht.div_(0.1)
    same_values(h, ht)


def test_a_0_dim_other_on_another_device_takes_the_general_checks():
    with pytest.raises(RuntimeError, match="expected all tensors to be on the same device"):
        tp.ones(3).add_(tp.tensor(1.0, device="meta"))
    with pytest.raises(RuntimeError, match="expected all tensors to be on the same device"):
        tp.ones(3).mul_(tp.tensor(2.0, device="meta"))


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
def test_one_element_inplace_overflows_as_torch(dtype):
    big = {"float16": 60000.0, "float32": 3e38, "int8": 100}[dtype]
    a, at = pair([big], dtype)
    b, bt = pair([big], dtype)
    with np.errstate(over="ignore"):
        a.add_(b)
    at.add_(bt)
    same_values(a, at)


def test_one_element_self_as_both_operands_and_as_a_strided_view():
    a, at = tp.tensor([3.0]), torch.tensor([3.0])
    a.add_(a, alpha=2)
    at.add_(at, alpha=2)
    same_values(a, at)
    x, xt = tp.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    x[1:, 2:].add_(x[:1, :1])          # one element each, same storage, no overlap
    xt[1:, 2:].add_(xt[:1, :1])
    same_values(x, xt)
    x[:, 1].add_(tp.ones(1))           # broadcast into a column (stride 3)
    xt[:, 1].add_(torch.ones(1))
    same_values(x, xt)
    assert x._version == xt._version == 2


def test_bool_inplace_add_and_refused_sub():
    a, at = pair([True, False], "bool")
    b, bt = pair([True, True], "bool")
    a.add_(b)
    at.add_(bt)
    same_values(a, at)
    with pytest.raises(RuntimeError):
        at.sub_(bt)
    with pytest.raises(DTypeError):
        a.sub_(b)
    c, ct = pair([True], "bool")
    c.add_(tp.tensor([False]))
    ct.add_(torch.tensor([False]))
    same_values(c, ct)


def test_integer_self_refuses_a_float_result():
    for shape in [(1,), (3,)]:
        a = tp.ones(shape, dtype=tp.int64)
        with pytest.raises(RuntimeError):
            torch.ones(shape, dtype=torch.int64).add_(torch.ones(shape))
        with pytest.raises(DTypeError, match=r"add_\(\): result type float32 can't be cast to "
                                             r"the desired output type int64"):
            a.add_(tp.ones(shape))
        with pytest.raises(DTypeError, match="alpha"):
            a.add_(tp.ones(shape, dtype=tp.int64), alpha=0.5)
        assert a._version == 0 and a.tolist() == [1] * shape[0]


@pytest.mark.parametrize("self_shape, other_shape", [((3,), (2, 3)), ((1,), (2,)), ((), (1,)),
                                                       ((2, 3), (2,)), ((1,), (1, 1))])
def test_broadcast_that_does_not_fit_self_is_refused_as_torch(self_shape, other_shape):
    with pytest.raises(RuntimeError):
        torch.ones(self_shape).add_(torch.ones(other_shape))
    a = tp.ones(self_shape)
    with pytest.raises(ShapeError, match=r"add_\(\): .*shape"):
        a.add_(tp.ones(other_shape))
    assert a._version == 0


def test_overlap_errors_match_torch_and_the_general_check():
    cases = [
        ("partial", lambda m, x: x[:3].add_(x[1:])),
        ("internal", lambda m, x: x[:2].view(1, 2).expand(3, 2).add_(m.ones(2))),
        ("internal, one element wide", lambda m, x: x[:1].expand(3).sub_(m.ones(1))),
        ("full: fine", lambda m, x: x.add_(x)),
        ("disjoint, one storage: fine", lambda m, x: x[:2].add_(x[2:])),
        ("other expanded: fine", lambda m, x: x.add_(x[:1].expand(4))),
        ("one element, partial", lambda m, x: x[1:2].add_(x[:2].view(2, 1)[1:].view(1))),
    ]
    for name, fn in cases:
        x, xt = tp.arange(4.0), torch.arange(4.0)
        try:
            fn(torch, xt)
        except RuntimeError as e:
            assert "single memory location" in str(e), name
            with pytest.raises(TensorPlayError, match="single memory location"):
                fn(tp, x)
            assert x._version == 0
        else:
            fn(tp, x)
            same_values(x, xt)


def test_the_overlap_shortcut_skips_only_what_the_general_check_lets_through():
    # no stride 0 in self and no storage shared with other: check_inplace_overlap passes
    rng = np.random.default_rng(1)
    base = tp.arange(24.0)
    for _ in range(300):
        sizes = tuple(int(s) for s in rng.integers(1, 4, int(rng.integers(1, 3))))
        strides = tuple(int(s) for s in rng.integers(0, 4, len(sizes)))
        offset = int(rng.integers(0, 4))
        self = base.as_strided(sizes, strides, offset)
        other = tp.ones(sizes)
        if 0 not in self._impl.strides:
            check_inplace_overlap("add_", self, ("other", other))   # must not raise
        other_view = base.as_strided(sizes, tuple(int(s) for s in rng.integers(0, 4, len(sizes))),
                                     int(rng.integers(0, 4)))
        try:
            check_inplace_overlap("add_", self, ("other", other_view))
            general = None
        except TensorPlayError as e:
            general = str(e)
        before = base.clone()
        try:
            self.add_(other_view)
            fast = None
        except TensorPlayError as e:
            fast = str(e)
        assert fast == general
        if fast is not None:
            assert base.tolist() == before.tolist()


def test_mixed_dtype_inplace_takes_the_cast_path_as_torch():
    for self_dtype, other_dtype in [("float32", "float64"), ("float16", "float32"),
                                    ("int32", "int64"), ("float32", "int64"),
                                    ("int8", "uint8")]:
        for shape in [(1,), (3,)]:
            vals = (np.arange(numel(shape)) + 1.25).tolist()
            a, at = pair(vals, self_dtype)
            b, bt = pair(vals, other_dtype)
            a.add_(b, alpha=2)
            at.add_(bt, alpha=2)
            same_values(a, at)


# ---- in place: version counters and autograd -------------------------------------------------
def test_inplace_on_a_view_bumps_the_base_and_its_other_views():
    x, xt = tp.zeros(2, 3), torch.zeros(2, 3)
    row, rowt = x[0], xt[0]
    flat, flatt = x.view(6), xt.view(6)
    row.add_(tp.ones(3))
    rowt.add_(torch.ones(3))
    flat.sub_(tp.ones(6))
    flatt.sub_(torch.ones(6))
    for t, tt in [(x, xt), (row, rowt), (flat, flatt)]:
        assert t._version == tt._version == 2
        same_values(t, tt)


def test_inference_tensors_are_not_bumped():
    with tp.inference_mode():
        a = tp.ones(1)
        a.add_(tp.ones(1))
        assert a._impl.version.value == 0
    assert a.tolist() == [2.0]


def test_the_one_position_bump_is_the_loop_for_one_position():
    def entry(*args):
        return args
    t0, t1 = tp.ones(1), tp.ones(1)
    for mutable in [(0,), (1,)]:
        one = _bumping(entry, mutable)
        assert one.bumps and one.registry is entry
        before = (t0._version, t1._version)
        assert one(t0, t1) == (t0, t1)
        bumped = (t0._version - before[0], t1._version - before[1])
        assert bumped == tuple(int(i in mutable) for i in range(2))
    one = _bumping(entry, (1,))
    assert one(t0, None) == (t0, None)        # an optional mutable argument not given
    both = _bumping(entry, (0, 1))
    before = (t0._version, t1._version)
    both(t0, t1)
    assert (t0._version, t1._version) == (before[0] + 1, before[1] + 1)
    both(t0, None)
    assert (t0._version, t1._version) == (before[0] + 2, before[1] + 1)


def test_inplace_with_requires_grad_matches_torch():
    a, at = tp.arange(3.0).requires_grad_(), torch.arange(3.0).requires_grad_()
    w, wt = tp.tensor([2.0]).requires_grad_(), torch.tensor([2.0]).requires_grad_()
    y, yt = a * 2, at * 2
    y.add_(w, alpha=3)
    yt.add_(wt, alpha=3)
    y.sub_(a)
    yt.sub_(at)
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__ == "SubBackward0"
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    same_values(a.grad, at.grad)
    same_values(w.grad, wt.grad)
    with pytest.raises(RuntimeError):
        torch.ones(1, requires_grad=True).add_(torch.ones(1))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                           "in an in-place operation"):
        tp.ones(1, requires_grad=True).add_(tp.ones(1))


def test_a_saved_tensor_written_in_place_is_caught_as_torch():
    a, at = tp.ones(1).requires_grad_(), torch.ones(1).requires_grad_()
    y, yt = a * 1, at * 1
    z, zt = y * y, yt * yt                      # saves y
    y.add_(tp.ones(1))
    yt.add_(torch.ones(1))
    with pytest.raises(RuntimeError):
        zt.sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inplace_is_the_same_while_explain_listens():
    a, b = tp.ones(1), tp.full((1,), 2.0)
    with explain(file=False) as ex:
        a.add_(b)
    assert "version   self: version now 1" in ex.text
    assert a.tolist() == [3.0] and a._version == 1
