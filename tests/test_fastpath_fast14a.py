"""Round 4 of the dispatch fast path (issue 13): the result a CPU kernel makes and how it
reads its inputs, each shortcut against PyTorch and against the general path.

- `impl_from_array` writes the Storage's and the TensorImpl's fields itself instead of
  calling the classes: the same fields, the same values.
- `add`, `sub`, `mul`, `div` compute two row-major operands of one dtype directly;
  `_binary` skips `result_type2` and `array_as` for one dtype whose arrays are made;
  `out_like1`/`out_like2` skip `out_like`'s loop for row-major inputs. Transposed and
  expanded operands, views whose array is not made yet, mixed dtypes (wrapped numbers
  among them), an alpha and the half types' 0-d rule take the general path.
- `call_ignoring` sets NumPy's error state made once for its default settings, and falls
  back to `np.errstate` under any other state (sum, mean, div, pow, the float functions).
"""
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay import _dtype as dt
from tensorplay._device import CPU
from tensorplay._impl import (
    PLAIN_KEYS, Storage, TensorImpl, VersionCounter, contiguous_strides, impl_from_array,
)
from cpu_kernels import _float_errors, pointwise
from cpu_kernels._common import out
from cpu_kernels._float_errors import Ignored, call_ignoring

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]


def _pair(values, dtype):
    """The same values as a TensorPlay and a PyTorch tensor of `dtype`."""
    base = np.asarray(values, np.float64)
    t = tp.from_numpy(base.copy()).to(getattr(tp, dtype))
    u = torch.from_numpy(base.copy()).to(getattr(torch, dtype))
    return t, u


# NumPy's and PyTorch's float kernels may round differently in the last place (libm's
# sin, `2.5 / x` which PyTorch computes as x.reciprocal() * 2.5): floats are compared to a
# few units in the last place; integers, bools, nan and inf exactly.
RTOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 1e-6, "float64": 1e-15}


def _same(t, u):
    """Same dtype, shape and values."""
    assert t.dtype.name == str(u.dtype).replace("torch.", ""), (t.dtype, u.dtype)
    assert tuple(t.shape) == tuple(u.shape)
    mine = np.asarray(t.to(tp.float64).numpy(), np.float64)
    theirs = u.to(torch.float64).numpy()
    if t.dtype.name in RTOL:
        np.testing.assert_allclose(mine, theirs, rtol=RTOL[t.dtype.name], atol=0)
    else:
        np.testing.assert_array_equal(mine, theirs)


def _strides_like_torch(t, u):
    assert t._impl.strides == u.stride(), (t._impl.strides, u.stride())


# ---- impl_from_array: the class calls written out -------------------------------------------
def _by_the_classes(arr, dtype, device, inference):
    return TensorImpl(Storage(arr, arr.nbytes, device), arr.shape,
                      contiguous_strides(arr.shape), 0, dtype, device, inference=inference,
                      array=arr)


@pytest.mark.parametrize("shape", [(), (1,), (3,), (0,), (2, 3), (2, 0, 4), (1, 1, 5)])
@pytest.mark.parametrize("inference", [False, True])
def test_impl_from_array_sets_what_the_classes_set(shape, inference):
    arr = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    fast = impl_from_array(arr, dt.float32, CPU, inference)
    general = _by_the_classes(arr, dt.float32, CPU, inference)
    for name in TensorImpl.__slots__:
        if name == "__weakref__":
            continue
        assert hasattr(fast, name), name
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


def test_the_field_lists_match_the_classes_own():
    # impl_from_array writes the fields of Storage.__init__ and TensorImpl.__init__; a
    # field added to either class must be added there too.
    arr = np.ones(2, np.float32)
    fast = impl_from_array(arr, dt.float32, CPU, False)
    assert set(TensorImpl.__slots__) - {"__weakref__"} == \
        {name for name in TensorImpl.__slots__ if name != "__weakref__" and hasattr(fast, name)}
    assert all(hasattr(fast.storage, name) for name in Storage.__slots__ if name != "__weakref__")


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


def test_inference_mode_results_are_inference_tensors():
    a, b = tp.ones(2), tp.ones(2)
    with tp.inference_mode():
        r = a * b
        e = a.exp()
        s = a.sum()
    for t in (r, e, s):
        assert t._impl.inference and t._impl.keys == t._impl.key_set() == PLAIN_KEYS[1][0]
    assert not (a * b)._impl.inference


# ---- binary ops: the one-dtype shortcut, against torch and the general path ----------------
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
    a, at = _pair(A_VALUES, dtype)
    b, bt = _pair(B_VALUES, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # 1 / 0 and 0 / 0 warn in NumPy, not PyTorch
        _same(fn(a, b), torch_fn(at, bt))
        _same(fn(a.t(), b.t()), torch_fn(at.t(), bt.t()))     # transposed: out_like's way
        _strides_like_torch(fn(a.t(), b.t()), torch_fn(at.t(), bt.t()))
        _same(fn(a[0], b[:1].expand(3, 3)), torch_fn(at[0], bt[:1].expand(3, 3)))
        _same(fn(a[0, 0], b), torch_fn(at[0, 0], bt))                  # a 0-d operand
        _same(fn(a[:0], b[:0]), torch_fn(at[:0], bt[:0]))              # empty


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_shortcut_equals_the_general_path(op):
    # A view's array is made on first use: its first binary op takes result_type2 and
    # array_as, the second the shortcut; both give the same tensor.
    fn, _ = BINARY[op]
    for dtype in ("float16", "int32", "float32"):
        a, _ = _pair(A_VALUES, dtype)
        b, _ = _pair(B_VALUES, dtype)
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
    a, at = _pair([1.0, 3.0, 1000.0], dtype)
    s, st = _pair(0.1, dtype)
    _same(fn(a, s), torch_fn(at, st))
    _same(fn(a, 0.1), torch_fn(at, 0.1))


@pytest.mark.parametrize("left,right", [("int32", "float32"), ("uint8", "int8"),
                                        ("bool", "int64"), ("float16", "float64"),
                                        ("int64", "bfloat16")])
@pytest.mark.parametrize("op", ["add", "mul", "div", "eq"])
def test_mixed_dtypes_take_the_promoting_path(op, left, right):
    fn, torch_fn = BINARY[op]
    a, at = _pair(A_VALUES, left)
    b, bt = _pair(B_VALUES, right)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(fn(a, b), torch_fn(at, bt))
        _same(fn(b, a), torch_fn(bt, at))


@pytest.mark.parametrize("number", [2, 2.5, True, -3])
@pytest.mark.parametrize("dtype", ["int32", "float32", "float16", "bool"])
def test_wrapped_numbers_match_torch(dtype, number):
    a, at = _pair(A_VALUES, dtype)
    for op in ("add", "mul", "div"):
        if dtype == "bool" and number is True and op == "div":
            continue
        fn, torch_fn = BINARY[op]
        _same(fn(a, number), torch_fn(at, number))
        _same(fn(number, a), torch_fn(number, at))


def test_errors_stay_the_same():
    a, b = tp.ones(2, dtype=tp.bool), tp.ones(2, dtype=tp.bool)
    with pytest.raises(tp.errors.TensorPlayError, match="sub"):
        a - b
    with pytest.raises(tp.errors.TensorPlayError):
        tp.ones(2) + tp.ones(3)
    with pytest.raises(tp.errors.TensorPlayError):
        tp.add(tp.ones(2, dtype=tp.int32), tp.ones(2, dtype=tp.int32), alpha=0.5)


def test_alpha_scales_as_before():
    a, at = _pair(A_VALUES, "float32")
    b, bt = _pair(B_VALUES, "float32")
    _same(tp.add(a, b, alpha=2), torch.add(at, bt, alpha=2))
    _same(tp.sub(a, b, alpha=0.5), torch.sub(at, bt, alpha=0.5))
    i, it = _pair(A_VALUES, "int64")
    _same(tp.add(i, i, alpha=3), torch.add(it, it, alpha=3))


# ---- unary ops and sum ----------------------------------------------------------------------
UNARY = ["neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "sign"]
U_VALUES = [[0.5, -2.0, 0.0, 1000.0], [-1000.0, 3.0, -0.0, 88.0]]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", UNARY)
def test_unary_op_matches_torch(op, dtype):
    if (op in ("abs", "relu") and dtype == "bool") or (op == "neg" and dtype == "bool"):
        pytest.skip("PyTorch refuses it for bool")
    if op in ("neg", "abs") and dtype == "uint8":
        pytest.skip("the values wrap around; not this test's topic")
    a, at = _pair(U_VALUES, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # log(-2), exp(1000): no NumPy warning
        for x, xt in ((a, at), (a.t(), at.t()), (a[0, 0], at[0, 0])):
            r, rt = getattr(x, op)(), getattr(xt, op)()
            _same(r, rt)      # integers compute in the default float, as in PyTorch
            _strides_like_torch(r, rt)


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


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_matches_torch(dtype):
    a, at = _pair(U_VALUES, dtype)
    _same(a.sum(), at.sum())
    _same(a.sum(0), at.sum(0))
    _same(a[:0].sum(), at[:0].sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inf, inft = _pair([float("inf"), float("-inf")], "float32")
        _same(inf.sum(), inft.sum())                          # nan, without a warning
        big, bigt = _pair([3e38, 3e38], "float32")
        _same(big.sum(), bigt.sum())                          # inf, without a warning


# ---- call_ignoring: np.errstate's semantics ------------------------------------------------
def test_call_ignoring_sets_the_state_np_errstate_sets():
    for settings in ({"divide": "ignore", "invalid": "ignore"}, {"over": "ignore"},
                     {"divide": "ignore", "invalid": "ignore", "over": "ignore"}):
        with np.errstate(**settings):
            expected = np.geterr()
        assert call_ignoring(Ignored(**settings), np.geterr) == expected
    assert np.geterr() == {"divide": "warn", "over": "warn", "under": "ignore",
                           "invalid": "warn"}


def test_call_ignoring_merges_with_the_state_in_force():
    # Under the caller's own settings the cheap state would drop them: np.errstate is used.
    divide = Ignored(divide="ignore", invalid="ignore")
    with np.errstate(over="raise"):
        assert call_ignoring(divide, np.geterr)["over"] == "raise"
        with pytest.raises(FloatingPointError):
            tp.tensor([3e38], dtype=tp.float32) / tp.tensor([1e-38], dtype=tp.float32)
        assert (tp.ones(1) / tp.zeros(1)).item() == float("inf")
    with np.errstate(divide="raise"):
        assert (tp.ones(1) / tp.zeros(1)).item() == float("inf")  # ignored inside, as before
    with pytest.warns(RuntimeWarning, match="overflow"):
        tp.tensor([3e38], dtype=tp.float32) / tp.tensor([1e-38], dtype=tp.float32)


def test_call_ignoring_restores_the_state_after_an_error():
    before = np.geterr()

    def fails(x):
        raise ValueError(x)

    with pytest.raises(ValueError):
        call_ignoring(Ignored(divide="ignore"), fails, 1)
    assert np.geterr() == before


def test_call_ignoring_without_a_context_variable_uses_np_errstate(monkeypatch):
    errors = Ignored(divide="ignore")
    monkeypatch.setattr(errors, "state", None)      # what a NumPy 1.x gives
    assert call_ignoring(errors, np.geterr)["divide"] == "ignore"
    assert np.geterr()["divide"] == "warn"


def test_the_default_state_is_numpys_own():
    if _float_errors._extobj_contextvar is None:
        pytest.skip("NumPy 1.x: every call takes np.errstate")
    assert _float_errors.current_error_state() is _float_errors.DEFAULT_ERROR_STATE


def test_kernels_called_directly_still_work():
    a = tp.tensor([1.0, 2.0])
    np.testing.assert_array_equal(pointwise.add(a, a, 1).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(pointwise.div(a, a).numpy(), [1.0, 1.0])


@pytest.mark.parametrize("dtype", FLOATS)
def test_mean_matches_torch(dtype):
    a, at = _pair(U_VALUES, dtype)
    _same(a.mean(), at.mean())
    _same(a.mean(1, keepdim=True), at.mean(1, keepdim=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(a[:0].mean(), at[:0].mean())                    # nan, without a warning


@pytest.mark.parametrize("dtype", ["int32", "float16", "bfloat16", "float32", "float64"])
def test_pow_matches_torch_without_warnings(dtype):
    a, at = _pair([[0.0, -2.0, 0.5], [3.0, 100.0, -0.0]], dtype)
    e, et = _pair([[2.0, 3.0, -1.0], [0.5, 200.0, 2.0]], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for exponent in (2, 3, 0.5, -0.5, -1.0, -2.0, 2.5):
            if dtype == "int32" and (exponent < 0 or type(exponent) is float):
                continue
            _same(a ** exponent, at ** exponent)
            _same(a.t() ** exponent, at.t() ** exponent)
            _strides_like_torch(a.t() ** exponent, at.t() ** exponent)
        if dtype != "int32":
            _same(a ** e, at ** et)
