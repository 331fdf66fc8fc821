"""Python numbers as operands (`x * 2`, `y + 1`, MulBackward0's `grad * other`): the
wrapped number, each shortcut against PyTorch and against the general path it stands for.

- `wrap_number` (every `x * 2` makes one) builds a CPU int/float/bool directly:
  `_creation.wrapped_scalar` hands TensorImpl's constructor the strides, contiguity and
  key set a fresh 0-d array has, and must give the fields of scalar_tensor's impl with
  the flag set. Other values and devices take `scalar_tensor`; `wrap_number` reads
  `_device`.
- `result_type2` with a wrapped number gives `result_type`'s answer.
- `add`, `sub`, `mul`, `div` with a Python number (composite/scalar_ops.py) enter the
  Tensor overload's handle themselves (`_with_number`: `handle.call`) instead of its
  front door; the results must be the same with explain() on and off, and a dispatch
  mode sees the Tensor overload.
- The CPU add/sub/mul/div compute a float32/float64 tensor with a wrapped number
  directly (`pointwise._with_number`); with it turned off the general path must give
  the same tensor, bit for bit, with the same strides.
"""
import itertools
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay import _dtype as dt
from tensorplay._creation import scalar_tensor, wrapped_scalar
from tensorplay._frontdoor import wrap_number
from tensorplay._impl import LAZY_SLOTS, TensorImpl
from tensorplay._promotion import result_type, result_type2
from tensorplay.errors import DTypeError
from cpu_kernels import _common, pointwise

from torch_twins import DTYPES, dtype_pair, like_torch


# ---- the wrapped number --------------------------------------------------------------
WRAPPED_VALUES = [True, False, 0, 3, -7, 2 ** 63 - 1, -2 ** 63, 2 ** 63, 0.5, -0.0,
                  float("inf"), float("nan"), 1e300]


@pytest.mark.parametrize("value", WRAPPED_VALUES, ids=[repr(v) for v in WRAPPED_VALUES])
def test_wrapped_number_matches_the_general_path(value):
    fast = wrap_number(value)
    general = scalar_tensor(value, dtype=dt.float64 if type(value) is float else None)
    assert fast._impl.wrapped_number
    assert fast.dtype is general.dtype
    assert fast.shape == general.shape == ()
    assert fast._impl.strides == general._impl.strides
    assert fast._impl.is_contiguous and fast._impl.keys == general._impl.keys
    np.testing.assert_array_equal(fast.numpy(), general.numpy())


def test_wrapped_number_out_of_int64_range_raises_as_before():
    with pytest.raises(OverflowError):
        wrapped_scalar(2 ** 64 + 1)


def test_wrapped_number_in_inference_mode_is_an_inference_tensor():
    with tp.inference_mode():
        assert wrap_number(2.0)._impl.inference
    assert not wrap_number(2.0)._impl.inference


def test_wrapped_number_on_another_device_takes_the_general_path():
    t = wrapped_scalar(2.5, tp.device("meta"))
    assert t.device.type == "meta" and t.dtype is tp.float64 and t._impl.wrapped_number


@pytest.mark.parametrize("value", [2, -3, 2.5, True, 2 ** 63 - 1, -2 ** 63])
@pytest.mark.parametrize("inference", [False, True])
def test_wrapped_scalar_matches_the_general_path(value, inference):
    """The CPU int/float/bool case (TensorImpl made with the known strides, contiguity
    and keys) against scalar_tensor, the path every other value takes."""
    dtype = tp.float64 if type(value) is float else None
    if inference:
        with tp.inference_mode():
            fast, general = wrapped_scalar(value), scalar_tensor(value, dtype=dtype)
    else:
        fast, general = wrapped_scalar(value), scalar_tensor(value, dtype=dtype)
    assert type(fast) is tp.Tensor and fast._impl.wrapped_number
    for field in ("sizes", "strides", "offset", "dtype", "_device", "is_contiguous",
                  "_inference", "keys", "requires_grad", "grad_fn", "base"):
        assert getattr(fast._impl, field) == getattr(general._impl, field), field
    assert fast._impl.version.value == 0
    np.testing.assert_array_equal(fast._impl.array(), general._impl.array())


@pytest.mark.parametrize("value", [2, 2.5, True, False, -7, 2 ** 62, -2 ** 63, 1e-300])
@pytest.mark.parametrize("mode", ["grad", "inference"])
def test_wrapped_impl_has_the_general_paths_fields(value, mode):
    ctx = tp.inference_mode() if mode == "inference" else tp.enable_grad()
    with ctx:
        fast = wrapped_scalar(value)
        slow = scalar_tensor(value, dtype=tp.float64 if type(value) is float else None)
        slow._impl.wrapped_number = True
    for field in TensorImpl.__slots__:
        if field in ("__weakref__", "storage", "version", "_array") + LAZY_SLOTS:
            continue
        assert getattr(fast._impl, field) == getattr(slow._impl, field), field
    for field in ("nbytes", "device"):
        assert getattr(fast._impl.storage, field) == getattr(slow._impl.storage, field)
    assert fast._impl.storage.data is fast._impl._array
    assert fast._impl._array.dtype == slow._impl._array.dtype
    assert fast._impl._array.tobytes() == slow._impl._array.tobytes()
    assert fast._impl.version.value == 0 and fast._impl.version is not slow._impl.version
    assert type(fast) is type(slow)


def test_wrapped_numbers_are_fresh_per_call():
    x = tp.ones(2, requires_grad=True)
    a, b = x * 2, x * 2
    assert a.grad_fn._saved_other is not b.grad_fn._saved_other
    a.grad_fn._saved_other.add_(1)          # reachable, so it must not be shared
    assert b.grad_fn._saved_other.item() == 2


# ---- promotion and alpha -------------------------------------------------------------
@pytest.mark.parametrize("dtype", [d for d in dict.fromkeys(dt._BY_NAME.values())
                                   if isinstance(d, dt.dtype)], ids=str)
def test_result_type2_with_a_python_number_matches_result_type(dtype):
    for shape, number in itertools.product([(), (3,)], [True, 2, 2.5]):
        t = tp.zeros(shape, dtype=dtype)
        w = wrap_number(number)
        assert result_type2(t, w) is result_type(t, w)
        assert result_type2(w, t) is result_type(w, t)


@pytest.mark.parametrize("value", [2, 2.5, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16"])
def test_scalar_operators_promote_like_pytorch(value, dtype):
    x = tp.tensor([1, 2, 3], dtype=getattr(tp, dtype))
    xt = torch.tensor([1, 2, 3], dtype=getattr(torch, dtype))
    pairs = [(x * value, xt * value), (x + value, xt + value)]
    if type(value) is not bool:     # `True - x`: both refuse subtraction with a bool
        pairs.append((value - x, value - xt))
    for got, want in pairs:
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(got.numpy().astype(np.float64),
                                   want.numpy().astype(np.float64))


def test_float_alpha_equal_to_one_is_still_refused_for_integers():
    x, xt = tp.tensor([1, 2]), torch.tensor([1, 2])
    for alpha in (1.0, 0.5):
        with pytest.raises(RuntimeError):
            torch.add(xt, xt, alpha=alpha)
        with pytest.raises(DTypeError, match="argument 'alpha' must not be a floating point"):
            tp.add(x, x, alpha=alpha)


# ---- the kernel's wrapped-number shortcut against the general path -------------------
NUMBERS = [2, -3, 0, 2.5, 0.1, -0.0, 1e300, True, False, 1000, 2 ** 40]
VALUES = [[1.0, -2.0, 0.0], [3.0, 100.0, -7.0]]


def _overflows(dtype, n):
    """A number outside the tensor's dtype (1e300 in float32, 1000 in int8, -3 in uint8):
    its overflow and wrap-around are the general path's, which these shortcuts do not
    change, so those results are compared with the general path only. (So is `n / x` on
    integers and halves, which PyTorch rounds through a reciprocal.)"""
    if dtype == "float64":
        return False
    return abs(n) in (1e300, 2 ** 40) or (dtype in ("uint8", "int8", "int16") and n in (1000, -3))


def _bits(t):
    """dtype, shape, strides and the exact bytes of the values."""
    a = np.ascontiguousarray(t.detach()._impl.array())
    return t.dtype, tuple(t.shape), t._impl.strides, a.tobytes()


OPS = {
    "add": (lambda a, n: a + n, lambda a, n: a + n),
    "sub": (lambda a, n: a - n, lambda a, n: a - n),
    "mul": (lambda a, n: a * n, lambda a, n: a * n),
    "div": (lambda a, n: a / n, lambda a, n: a / n),
    "radd": (lambda a, n: n + a, lambda a, n: n + a),
    "rsub": (lambda a, n: n - a, lambda a, n: n - a),
    "rmul": (lambda a, n: n * a, lambda a, n: n * a),
    "rdiv": (lambda a, n: n / a, lambda a, n: n / a),
    "tp.add alpha": (lambda a, n: tp.add(a, n, alpha=2), lambda a, n: torch.add(a, n, alpha=2)),
    "tp.sub alpha": (lambda a, n: tp.sub(a, n, alpha=3), lambda a, n: torch.sub(a, n, alpha=3)),
    "tp.mul": (lambda a, n: tp.mul(a, n), lambda a, n: torch.mul(a, n)),
    "method div": (lambda a, n: a.div(n), lambda a, n: a.div(n)),
}


def _outcome(fn, *args):
    """The result, or the type of the error raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args)
        except Exception as e:     # noqa: BLE001 - the type is the outcome compared
            return type(e)


def _general_path(monkeypatch_ctx, fn, *args):
    """`fn(*args)` with the kernel's wrapped-number shortcut turned off."""
    with monkeypatch_ctx() as mp:
        mp.setattr(pointwise, "_with_number", lambda *a: None)
        return _outcome(fn, *args)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_and_number_matches_the_general_path_and_torch(dtype):
    a, at = dtype_pair(VALUES, dtype)
    for op, (fn, torch_fn) in OPS.items():
        for n in NUMBERS:
            fast = _outcome(fn, a, n)
            slow = _general_path(pytest.MonkeyPatch.context, fn, a, n)
            if isinstance(fast, type):
                assert fast is slow, (op, n, fast, slow)
                continue
            assert _bits(fast) == _bits(slow), (op, n)
            if _overflows(dtype, n) or (op == "rdiv" and dtype not in ("float32", "float64")):
                continue      # compared with the general path only, above
            expected = _outcome(torch_fn, at, n)
            if isinstance(expected, type):
                continue
            like_torch(fast, expected)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layouts_match_torch(dtype):
    base, based = dtype_pair(np.arange(12.0).reshape(3, 4) - 5, dtype)
    cases = [
        (base, based),
        (base.t(), based.t()),                                   # transposed
        (base[:, ::2], based[:, ::2]),                           # a step slice
        (base[0, 0].expand(3, 4), based[0, 0].expand(3, 4)),     # stride 0, 2-d
        (base[0, 1].expand(5), based[0, 1].expand(5)),           # stride 0, 1-d
        (base[1], based[1]),                                     # a row view
        (base[1, 2], based[1, 2]),                               # 0-dim
        (base[:0], based[:0]),                                   # empty
    ]
    for t, u in cases:
        for op in ("mul", "rsub", "div", "add", "rdiv"):
            fn, torch_fn = OPS[op]
            fast = fn(t, 3)
            assert _bits(fast) == _bits(_general_path(pytest.MonkeyPatch.context, fn, t, 3))
            like_torch(fast, torch_fn(u, 3))


def test_numbers_the_shortcut_does_not_take():
    x, xt = dtype_pair([1.0, 2.0], "float32")
    with pytest.raises(OverflowError):
        x * 2 ** 70                         # outside int64: the general path and its error
    like_torch(x * 2j, xt * 2j)             # complex: the general path, a complex result
    like_torch(tp.mul(x, 2j), torch.mul(xt, 2j))
    like_torch(x * np.float32(2.5), xt * 2.5)   # a NumPy number: as_scalar first
    with pytest.raises(tp.errors.TensorPlayError):
        tp.add(tp.ones(2, dtype=tp.int32), 2, alpha=0.5)   # a float alpha on ints
    h, ht = dtype_pair([1.0, 3.0, 1000.0], "float16")
    like_torch(h * 0.1, ht * 0.1)       # a half type's 0-d rule (_arithmetic)
    like_torch(h / 3, ht / 3)
    assert wrap_number(x) is x


# ---- explain(), dispatch modes and autograd ------------------------------------------
def test_explain_on_and_off_give_the_same_results():
    x, xt = dtype_pair([1.5, -2.0, 4.0], "float32", requires_grad=True)
    for op in ("mul", "add", "sub", "div", "rsub", "tp.add alpha"):
        fn, torch_fn = OPS[op]
        off = fn(x, 2)
        with tp.dispatch.explain(records=True) as ex:
            on = fn(x, 2)
        assert _bits(on) == _bits(off)
        assert type(on.grad_fn) is type(off.grad_fn)
        assert [type(f).__name__ for f, _ in on.grad_fn.next_functions] == \
            [type(f).__name__ for f, _ in off.grad_fn.next_functions]
        assert ex.records    # the full path ran
        like_torch(off, torch_fn(xt, 2))


def test_explain_still_shows_the_scalar_overload_and_its_decomposition():
    x = tp.ones(3, requires_grad=True)
    x * 2
    with tp.dispatch.explain(records=True) as ex:
        x * 2
    calls = [h.text for h in ex.records if h.kind == "call"]
    assert calls[0].startswith("mul.Scalar(") and calls[1].startswith("mul.Tensor(")
    dispatches = [h.text for h in ex.records if h.kind == "dispatch"]
    assert "Composite (implicit autograd)" in dispatches[0] and "mul_scalar" in dispatches[0]
    assert "mul_Tensor" in dispatches[1]


def test_a_dispatch_mode_sees_the_tensor_overload():
    from tensorplay.utils.dispatch_mode import LoggingMode
    x = tp.ones(3, requires_grad=True)
    with LoggingMode() as log:
        x * 2
    with LoggingMode() as general:
        tp.mul(x, wrap_number(2, x))
    assert log.lines == general.lines and "mul.Tensor" in log.lines[0]


@pytest.mark.parametrize("number", [2, 2.5, True])
def test_saved_other_is_the_wrapped_number(number):
    x, xt = dtype_pair([1.5, -2.0, 4.0], "float32", requires_grad=True)
    y, yt = x * number, xt * number
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__ == "MulBackward0"
    saved, saved_t = y.grad_fn._saved_other, yt.grad_fn._saved_other
    assert saved.dtype.name == str(saved_t.dtype).replace("torch.", "")
    assert saved.shape == () and saved._impl.wrapped_number
    assert saved.item() == saved_t.item()
    assert y.grad_fn._saved_self is None and yt.grad_fn._saved_self is None
    assert type(y.grad_fn.next_functions[0][0]).__name__ == "AccumulateGrad"
    assert y.grad_fn.next_functions[1][0] is None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_match_torch(dtype):
    x, xt = dtype_pair([1.5, -2.0, 4.0, 0.25], dtype, requires_grad=True)
    for _ in range(2):      # .grad accumulates across steps
        ((x * 2 + 1) / 4 - 3 * x).sum().backward()
        ((xt * 2 + 1) / 4 - 3 * xt).sum().backward()
    like_torch(x.grad, xt.grad)
    y, yt = dtype_pair([[1.0, 2.0], [3.0, 4.0]], dtype, requires_grad=True)
    (2.5 - y.t() * 3).sum().backward()
    (2.5 - yt.t() * 3).sum().backward()
    # NOTE: the values only: PyTorch's AccumulateGrad lays this gradient out row-major,
    # TensorPlay keeps the transposed layout the backward made (the accumulator decides
    # that, not the wrapped number: tests/test_autograd_accumulation.py).
    like_torch(y.grad, yt.grad, strides=False)


def test_a_2d_stride_0_gradient_times_a_number(monkeypatch):
    x, xt = dtype_pair([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "float32", requires_grad=True)
    for _ in range(2):
        (x * 2 + 1).sum().backward()
        (xt * 2 + 1).sum().backward()
    like_torch(x.grad, xt.grad)
    g, gt = tp.ones(()).expand(2, 3), torch.ones(()).expand(2, 3)
    like_torch(g * 3, gt * 3)
    like_torch(g.unsqueeze(0) * g, gt.unsqueeze(0) * gt)
    def refuse(*args):
        raise AssertionError("pointwise_strides read for stride-0 inputs")
    monkeypatch.setattr(_common, "pointwise_strides", refuse)
    assert (g * 3)._impl.strides == (3, 1)
    assert (tp.ones(1, 1).expand(3, 4) * 2)._impl.strides == (4, 1)


def test_no_grad_inference_and_vmap():
    x, xt = dtype_pair([1.0, -2.0, 3.0], "float32", requires_grad=True)
    with tp.no_grad():
        y = x * 2
    assert y.grad_fn is None and not y.requires_grad
    with tp.inference_mode():
        z = x + 1
    with torch.inference_mode():
        zt = xt + 1
    assert z.is_inference() and zt.is_inference()
    like_torch(z, zt)
    b, bt = dtype_pair(VALUES, "float32")
    like_torch(tp.vmap(lambda r: r * 2 - 1)(b), torch.vmap(lambda r: r * 2 - 1)(bt))


# ---- in place ------------------------------------------------------------------------
INPLACE = {
    "add_": (lambda a, n: a.add_(n), lambda a, n: a.add_(n)),
    "sub_ alpha": (lambda a, n: a.sub_(n, alpha=2), lambda a, n: a.sub_(n, alpha=2)),
    "mul_": (lambda a, n: a.mul_(n), lambda a, n: a.mul_(n)),
    "div_": (lambda a, n: a.div_(n), lambda a, n: a.div_(n)),
    "+=": (lambda a, n: a.__iadd__(n), lambda a, n: a.__iadd__(n)),
}


@pytest.mark.parametrize("dtype", ["int32", "float16", "float32", "float64"])
def test_inplace_with_a_number_matches_torch_and_explain(dtype):
    for op, (fn, torch_fn) in INPLACE.items():
        for n in (2, 2.5, True):
            a, at = dtype_pair(VALUES, dtype)
            b, _ = dtype_pair(VALUES, dtype)
            fast = _outcome(fn, a, n)
            with tp.dispatch.explain(records=True):
                slow = _outcome(fn, b, n)
            expected = _outcome(torch_fn, at, n)
            if isinstance(fast, type):
                assert fast is slow and isinstance(expected, type), (op, n, fast)
                continue
            assert fast is a and _bits(a) == _bits(b)
            assert a._version == b._version == at._version == 1
            like_torch(a, at)


def test_inplace_on_a_leaf_that_requires_grad_still_raises():
    x = tp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.mul_(2)
    y = x * 1
    y.add_(1)
    assert type(y.grad_fn).__name__ == "AddBackward0"
