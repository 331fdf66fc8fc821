"""How a CPU kernel makes its result tensor and reads its inputs, each shortcut against
PyTorch and against the general path.

- `impl_from_array` and `_common.out` hand TensorImpl's constructor the strides,
  contiguity and key set they know for a fresh row-major array: the same values the
  constructor computes itself; each result has its own version counter, and a result
  made in inference mode is an inference tensor.
- `add`, `sub`, `mul`, `div` compute two row-major operands of one dtype directly;
  `_binary` skips `result_type2` and `array_as` for one dtype whose arrays are made;
  `out_like1`/`out_like2` skip `out_like`'s loop for row-major inputs. Transposed and
  expanded operands, views whose array is not made yet, mixed dtypes (wrapped numbers
  among them), an alpha and the half types' 0-d rule take the general path.
- `out_like` answers row-major without pointwise_strides for a 0-d or 1-d result and for
  inputs whose strides are all 0; `is_contiguous_layout` is the general stride walk.
- The unary float kernels and pow wrap the ufunc's result outside the error state: its
  dtype is already the input's.

NumPy's error state around the kernels: tests/test_kernel_float_errors.py. No timings
here: benchmarks/bench_add_overhead.py measures the speed.
"""
import itertools
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay import _dtype as dt
from tensorplay._device import CPU
from tensorplay._impl import (
    LAZY_SLOTS, PLAIN_KEYS, Storage, TensorImpl, VersionCounter, contiguous_strides,
    impl_from_array, is_contiguous_layout,
)
from cpu_kernels import _common, pointwise
from cpu_kernels._common import out

from torch_twins import (
    DTYPES, FLOATS, MIXED_VALUES, dtype_pair, strides_like_torch, values_like_torch,
)


# ---- impl_from_array and out: what the constructor would compute --------------------
def _by_the_classes(arr, dtype, device, inference):
    return TensorImpl(Storage(arr, arr.nbytes, device), arr.shape,
                      contiguous_strides(arr.shape), 0, dtype, device, inference=inference,
                      array=arr)


def _by_out(arr, dtype, device, inference):
    if inference:
        with tp.inference_mode():
            return out(arr, dtype)._impl
    return out(arr, dtype)._impl


@pytest.mark.parametrize("shape", [(), (1,), (3,), (0,), (2, 3), (2, 0, 4), (1, 1, 5)])
@pytest.mark.parametrize("inference", [False, True])
@pytest.mark.parametrize("make", [impl_from_array, _by_out], ids=["impl_from_array", "out"])
def test_results_have_what_the_constructor_computes(shape, inference, make):
    arr = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    fast = make(arr, dt.float32, CPU, inference)
    general = _by_the_classes(arr, dt.float32, CPU, inference)
    for name in TensorImpl.__slots__:
        if name == "__weakref__":
            continue
        if name in LAZY_SLOTS:          # set by no constructor (forward mode's tangents)
            assert not hasattr(fast, name) and not hasattr(general, name)
            continue
        mine, theirs = getattr(fast, name), getattr(general, name)
        if name == "storage":
            for field in Storage.__slots__[:-1]:      # all but __weakref__
                assert getattr(mine, field) is getattr(theirs, field) or \
                    getattr(mine, field) == getattr(theirs, field), field
        elif name == "version":
            assert type(mine) is VersionCounter and mine.value == theirs.value == 0
        else:
            assert mine is theirs or mine == theirs, (name, mine, theirs)
    assert fast.keys == PLAIN_KEYS[inference][CPU.key] == fast.key_set()


def test_impl_from_array_copies_a_non_contiguous_array():
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    for arr in (base.T, base[:, ::2], base[::2]):
        impl = impl_from_array(arr, dt.float32, CPU, False)
        assert impl._array.flags.c_contiguous and impl.storage.data is impl._array
        assert impl.strides == tuple(s // 4 for s in impl._array.strides)
        np.testing.assert_array_equal(impl._array, arr)


def test_out_of_a_view_or_a_numpy_scalar():
    base = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = out(base.T, dt.float64)
    assert t._impl.strides == (2, 1) and t._impl.is_contiguous
    s = out(np.float32(2.5), dt.float32)
    assert s.shape == () and s._impl.strides == () and s.item() == 2.5
    c = out(np.ones(3, np.int32), dt.float32)         # a dtype to convert to
    assert c._impl._array.dtype == np.float32


def test_results_have_independent_version_counters():
    a, b = tp.ones(3), tp.ones(3)
    r1, r2 = a + b, a + b
    assert r1._impl.version is not r2._impl.version
    r1.add_(1)
    assert r1._version == 1 and r2._version == 0 and a._version == 0
    v = r2.view(3)
    v.add_(1)
    assert r2._version == 1 and r1._version == 1


def test_version_counters_start_at_zero_and_are_shared_by_views():
    assert VersionCounter().value == 0
    x = tp.zeros(4)
    v = x[1:]
    x.add_(1)
    assert x._version == v._version == 1
    assert VersionCounter().value == 0             # the class's default is untouched


def test_inference_mode_results_are_inference_tensors():
    a, b = tp.ones(2), tp.ones(2)
    with tp.inference_mode():
        r = a * b
        e = a.exp()
        s = a.sum()
    for t in (r, e, s):
        assert t._impl.inference and t._impl.keys == t._impl.key_set() == PLAIN_KEYS[1][0]
    assert not (a * b)._impl.inference


# ---- result layouts ------------------------------------------------------------------
def test_contiguity_of_small_layouts_matches_the_general_walk():
    def walk(sizes, strides):
        expected = 1
        for size, stride in zip(reversed(sizes), reversed(strides)):
            if size == 0:
                return True
            if size != 1:
                if stride != expected:
                    return False
                expected *= size
        return True
    for nd in range(4):
        for sizes in itertools.product((0, 1, 2, 3), repeat=nd):
            for strides in itertools.product((0, 1, 2, 6), repeat=nd):
                assert is_contiguous_layout(sizes, strides) == walk(sizes, strides)


def test_a_1d_result_is_row_major_without_pointwise_strides(monkeypatch):
    def refuse(*args):
        raise AssertionError("pointwise_strides read for a 1-d result")
    monkeypatch.setattr(_common, "pointwise_strides", refuse)
    g = tp.ones(()).expand(8)
    assert (g * tp.ones(8))._impl.strides == (1,)
    assert (g * 2)._impl.strides == (1,)
    assert (tp.ones(4, 3).t()[0] + tp.ones(4))._impl.strides == (1,)      # stride 3


def test_stride_0_inputs_are_row_major_as_pointwise_strides_says():
    import itertools
    from tensorplay._impl import contiguous_strides
    from tensorplay.kernel_support.layout import pointwise_strides

    class Impl:
        def __init__(self, sizes, strides):
            self.sizes, self.strides = sizes, strides

    for ndim in (2, 3, 4):
        for sizes in itertools.product((1, 2, 3), repeat=ndim):
            zeros = (0,) * ndim
            for extra in ([], [((), ())], [(sizes[1:], zeros[1:])], [(sizes, zeros)]):
                inputs = [(sizes, zeros)] + extra
                assert _common._all_strides_zero([Impl(*i) for i in inputs])
                assert pointwise_strides(sizes, inputs) == contiguous_strides(sizes), inputs
            # a size-1 dim's own stride is read by pointwise_strides: not taken
            assert not _common._all_strides_zero([Impl(sizes, (0,) * (ndim - 1) + (1,))])


# ---- binary ops: the one-dtype shortcut, against torch and the general path ----------
BINARY = {
    "add": (lambda x, y: x + y, lambda x, y: x + y),
    "sub": (lambda x, y: x - y, lambda x, y: x - y),
    "mul": (lambda x, y: x * y, lambda x, y: x * y),
    "div": (lambda x, y: x / y, lambda x, y: x / y),
    "maximum": (tp.maximum, torch.maximum),
    "eq": (lambda x, y: x == y, lambda x, y: x == y),
    "lt": (lambda x, y: x < y, lambda x, y: x < y),
}
A_VALUES = [[1.5, -2.0, 0.0], [3.0, 0.25, -7.0]]
B_VALUES = [[2.0, 0.0, -0.0], [1.0, -4.0, 3.0]]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_op_of_one_dtype_matches_torch(op, dtype):
    if dtype == "bool" and op == "sub":
        pytest.skip("PyTorch refuses bool - bool; test_errors_stay_the_same checks it")
    fn, torch_fn = BINARY[op]
    a, at = dtype_pair(A_VALUES, dtype)
    b, bt = dtype_pair(B_VALUES, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # 1 / 0 and 0 / 0 warn in NumPy, not PyTorch
        values_like_torch(fn(a, b), torch_fn(at, bt))
        values_like_torch(fn(a.t(), b.t()), torch_fn(at.t(), bt.t()))  # transposed: out_like
        strides_like_torch(fn(a.t(), b.t()), torch_fn(at.t(), bt.t()))
        values_like_torch(fn(a[0], b[:1].expand(3, 3)), torch_fn(at[0], bt[:1].expand(3, 3)))
        values_like_torch(fn(a[0, 0], b), torch_fn(at[0, 0], bt))      # a 0-d operand
        values_like_torch(fn(a[:0], b[:0]), torch_fn(at[:0], bt[:0]))  # empty


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_shortcut_equals_the_general_path(op):
    # A view's array is made on first use: its first binary op takes result_type2 and
    # array_as, the second the shortcut; both give the same tensor.
    fn, _ = BINARY[op]
    for dtype in ("float16", "int32", "float32"):
        a, _ = dtype_pair(A_VALUES, dtype)
        b, _ = dtype_pair(B_VALUES, dtype)
        general_a, general_b = a.view(6), b.view(6)
        assert general_a._impl._array is None
        general = fn(general_a, general_b)
        assert general_a._impl._array is not None and general_b._impl._array is not None
        fast = fn(general_a, general_b)
        assert fast.dtype is general.dtype and fast._impl.strides == general._impl.strides
        np.testing.assert_array_equal(fast.numpy(), general.numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_half_type_times_a_0d_operand_computes_in_float32(op, dtype):
    # PyTorch's CPU mul and div read a 0-d operand of a half-type result in float32:
    # x * 0.1 multiplies by 0.1, not by 0.1 rounded to half first.
    fn, torch_fn = BINARY[op]
    a, at = dtype_pair([1.0, 3.0, 1000.0], dtype)
    s, st = dtype_pair(0.1, dtype)
    values_like_torch(fn(a, s), torch_fn(at, st))
    values_like_torch(fn(a, 0.1), torch_fn(at, 0.1))


@pytest.mark.parametrize("left,right", [("int32", "float32"), ("uint8", "int8"),
                                        ("bool", "int64"), ("float16", "float64"),
                                        ("int64", "bfloat16")])
@pytest.mark.parametrize("op", ["add", "mul", "div", "eq"])
def test_mixed_dtypes_take_the_promoting_path(op, left, right):
    fn, torch_fn = BINARY[op]
    a, at = dtype_pair(A_VALUES, left)
    b, bt = dtype_pair(B_VALUES, right)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values_like_torch(fn(a, b), torch_fn(at, bt))
        values_like_torch(fn(b, a), torch_fn(bt, at))


@pytest.mark.parametrize("number", [2, 2.5, True, -3])
@pytest.mark.parametrize("dtype", ["int32", "float32", "float16", "bool"])
def test_wrapped_numbers_match_torch(dtype, number):
    a, at = dtype_pair(A_VALUES, dtype)
    for op in ("add", "mul", "div"):
        if dtype == "bool" and number is True and op == "div":
            continue
        fn, torch_fn = BINARY[op]
        values_like_torch(fn(a, number), torch_fn(at, number))
        values_like_torch(fn(number, a), torch_fn(number, at))


def test_errors_stay_the_same():
    a, b = tp.ones(2, dtype=tp.bool), tp.ones(2, dtype=tp.bool)
    with pytest.raises(tp.errors.TensorPlayError, match="sub"):
        a - b
    with pytest.raises(tp.errors.TensorPlayError):
        tp.ones(2) + tp.ones(3)
    with pytest.raises(tp.errors.TensorPlayError):
        tp.add(tp.ones(2, dtype=tp.int32), tp.ones(2, dtype=tp.int32), alpha=0.5)


def test_alpha_scales_as_before():
    a, at = dtype_pair(A_VALUES, "float32")
    b, bt = dtype_pair(B_VALUES, "float32")
    values_like_torch(tp.add(a, b, alpha=2), torch.add(at, bt, alpha=2))
    values_like_torch(tp.sub(a, b, alpha=0.5), torch.sub(at, bt, alpha=0.5))
    i, it = dtype_pair(A_VALUES, "int64")
    values_like_torch(tp.add(i, i, alpha=3), torch.add(it, it, alpha=3))


def test_kernels_called_directly_still_work():
    a = tp.tensor([1.0, 2.0])
    np.testing.assert_array_equal(pointwise.add(a, a, 1).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(pointwise.div(a, a).numpy(), [1.0, 1.0])


# ---- unary ops and pow ---------------------------------------------------------------
UNARY = ["neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "sign"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", UNARY)
def test_unary_op_matches_torch(op, dtype):
    if (op in ("abs", "relu") and dtype == "bool") or (op == "neg" and dtype == "bool"):
        pytest.skip("PyTorch refuses it for bool")
    if op in ("neg", "abs") and dtype == "uint8":
        pytest.skip("the values wrap around; not this test's topic")
    a, at = dtype_pair(MIXED_VALUES, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # log(-2), exp(1000): no NumPy warning
        for x, xt in ((a, at), (a.t(), at.t()), (a[0, 0], at[0, 0])):
            r, rt = getattr(x, op)(), getattr(xt, op)()
            # integers compute in the default float, as in PyTorch
            values_like_torch(r, rt)
            strides_like_torch(r, rt)


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_ufuncs_keep_their_input_dtype(dtype):
    # _unary_float wraps the ufunc's result outside the errstate: it needs no cast.
    a = np.asarray([0.5, -1.0, 1e4], getattr(dt, dtype).np)
    for ufunc in (np.exp, np.log, np.sqrt, np.sin, np.cos, np.tanh):
        with np.errstate(all="ignore"):
            assert ufunc(a).dtype == a.dtype, ufunc
    # pow wraps its result outside the errstate for the same reason
    powers = [*pointwise._ROOT_POWERS.values(), *pointwise._PRODUCT_POWERS.values()]
    with np.errstate(all="ignore"):
        assert np.power(a, a).dtype == a.dtype
        assert all(power(a).dtype == a.dtype for power in powers)


@pytest.mark.parametrize("dtype", ["int32", "float16", "bfloat16", "float32", "float64"])
def test_pow_matches_torch_without_warnings(dtype):
    a, at = dtype_pair([[0.0, -2.0, 0.5], [3.0, 100.0, -0.0]], dtype)
    e, et = dtype_pair([[2.0, 3.0, -1.0], [0.5, 200.0, 2.0]], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for exponent in (2, 3, 0.5, -0.5, -1.0, -2.0, 2.5):
            if dtype == "int32" and (exponent < 0 or type(exponent) is float):
                continue
            values_like_torch(a ** exponent, at ** exponent)
            values_like_torch(a.t() ** exponent, at.t() ** exponent)
            strides_like_torch(a.t() ** exponent, at.t() ** exponent)
        if dtype != "int32":
            values_like_torch(a ** e, at ** et)
