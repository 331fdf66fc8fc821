"""Sums: `x.sum()` and its gradient, `mean`, and `sum_to`, each shortcut against PyTorch
and against the general code it stands in for.

- `reduction.sum` (a full sum, `x.sum()`) runs in one frame: its result and accumulation
  dtypes come from a table (`_FULL_SUM_TYPES`), NumPy's error state is set in place as
  `call_ignoring` sets it, and np.add.reduce reduces with axis None. The general code is
  `reduction.sum_dim(x, None, False, dtype)`. Both round a half type's float32 total
  inside sum's error state (`_add_up`): an overflow is inf without a warning, as in torch.
- `cpu_view`, the NumPy view of an impl that the sum reads, builds a 0-d or 1-d impl's
  byte strides without a generator, tests "no element" with `0 in sizes` and passes
  np.ndarray its arguments by position.
- The sum's gradient is an expanded view of the incoming gradient (the expand of a 0-dim
  tensor: tests/test_views.py). `sum_to`, which sums a broadcast gradient to its input's
  shape, returns the gradient itself when the shape already matches.

No timings here: benchmarks/bench_autograd.py and bench_add_overhead.py measure the speed.
"""
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay import _dtype as dt
from tensorplay._impl import cpu_view
from tensorplay.autograd.formulas import sum_to
from tensorplay.utils.logging_tensor import LoggingTensor
from cpu_kernels import _float_errors, reduction

from torch_twins import (
    DTYPES, FLOATS, MIXED_VALUES, close, dtype_pair, leaf_pair, values_like_torch,
)


def torch_dtype(dtype):
    return getattr(torch, dtype.name)


def to_torch(t):
    """A torch tensor with the same sizes, strides, offset and values as `t`."""
    impl = t._impl
    base = torch.from_numpy(np.array(impl.storage.data, copy=True).view(impl.dtype.np)
                            .astype(np.float32) if impl.dtype is dt.bfloat16
                            else np.array(impl.storage.data, copy=True).view(impl.dtype.np))
    if impl.dtype is dt.bfloat16:
        base = base.to(torch.bfloat16)
    return torch.as_strided(base, impl.sizes, impl.strides, impl.offset)


def values(t):
    """Exact values as float64 or int64 NumPy (bfloat16 has no NumPy twin in torch)."""
    if isinstance(t, torch.Tensor):
        if t.dtype in (torch.bfloat16, torch.float16):
            t = t.to(torch.float32)
        return t.numpy()
    a = t.numpy()
    return a.astype(np.float32) if t.dtype in (dt.bfloat16, dt.float16) else a


def inputs(dtype):
    """Tensors of `dtype` in every layout the full sum meets: 0-d, empty, 1-d, n-d,
    transposed, sliced with a step and an offset, expanded (stride 0)."""
    rng = np.random.default_rng(0)
    if dtype is dt.bool:
        data = rng.integers(0, 2, 60).astype(bool)
    elif dtype.is_floating_point:
        data = rng.standard_normal(60) * 3
    else:
        data = rng.integers(-50 if dtype.is_signed else 0, 100, 60)
    flat = tp.tensor(data.tolist(), dtype=dtype)
    m = flat[:12].view(3, 4)
    return {
        "0-d": flat[5],
        "empty": flat[:0],
        "empty 2-d": flat[:0].view(0, 3),
        "1-d": flat,
        "one": flat[:1],
        "3-d": flat.view(3, 4, 5),
        "transposed": m.t(),
        "strided": flat[3::7],
        "offset 2-d": flat[2:14].view(3, 4)[1:, ::2],
        "expanded": flat[7].expand(4, 3),
        "expanded row": flat[:5].expand(2, 5),
    }


# ---- the full sum --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_matches_torch(dtype):
    a, at = dtype_pair(MIXED_VALUES, dtype)
    values_like_torch(a.sum(), at.sum())
    values_like_torch(a.sum(0), at.sum(0))
    values_like_torch(a[:0].sum(), at[:0].sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inf, inft = dtype_pair([float("inf"), float("-inf")], "float32")
        values_like_torch(inf.sum(), inft.sum())      # nan, without a warning
        big, bigt = dtype_pair([3e38, 3e38], "float32")
        values_like_torch(big.sum(), bigt.sum())      # inf, without a warning


@pytest.mark.parametrize("dtype", dt.ALL_DTYPES, ids=lambda d: d.name)
def test_the_full_sum_of_every_dtype_and_layout_matches_torch_and_the_general_path(dtype):
    for name, x in inputs(dtype).items():
        fast = x.sum()
        general = reduction.sum_dim(x, None, False, None)
        want = to_torch(x).sum()
        assert fast.dtype is general.dtype, name
        assert torch_dtype(fast.dtype) == want.dtype, name
        assert fast.shape == () and fast._impl.strides == () and fast.is_contiguous(), name
        # bit for bit the general path's result, and PyTorch's value
        assert fast.numpy().tobytes() == general.numpy().tobytes(), name
        np.testing.assert_allclose(values(fast), values(want), rtol=1e-6 if dtype is dt.float32
                                   else 1e-2 if dtype.itemsize == 2 else 1e-12, err_msg=name)


@pytest.mark.parametrize("dtype", [None, dt.float64, dt.float32, dt.float16, dt.bfloat16,
                                   dt.int64, dt.int32, dt.uint8, dt.bool])
def test_a_given_dtype_matches_torch_and_the_general_path(dtype):
    for source in (dt.float32, dt.float16, dt.int32, dt.bool):
        x = inputs(source)["3-d"]
        fast = x.sum(dtype=dtype)
        general = reduction.sum_dim(x, None, False, dtype)
        want = to_torch(x).sum(dtype=None if dtype is None else torch_dtype(dtype))
        assert torch_dtype(fast.dtype) == want.dtype
        assert fast.numpy().tobytes() == general.numpy().tobytes()
        np.testing.assert_allclose(values(fast), values(want), rtol=1e-2)


def test_half_types_add_in_float32_and_round_once():
    # 4096 ones and one 1: float16 arithmetic would stop at 2048; float32 gives 4097,
    # rounded once to float16's 4096 (torch's answer too).
    for dtype in (dt.float16, dt.bfloat16):
        x = tp.ones(4097, dtype=dtype)
        got = x.sum()
        want = torch.ones(4097, dtype=torch_dtype(dtype)).sum()
        assert got.dtype is dtype
        assert float(got.item()) == float(want.item())


def test_the_dtype_table_gives_torch_s_result_dtypes():
    for d in dt.ALL_DTYPES:
        result, acc = reduction._FULL_SUM_TYPES[d]
        assert torch_dtype(result) == torch.zeros(1, dtype=torch_dtype(d)).sum().dtype
        assert acc == (np.float32 if result in (dt.float16, dt.bfloat16) else result.np)
        assert reduction._sum_dtype(tp.zeros(1, dtype=d), None) is result


def test_inf_minus_inf_and_overflow_give_nan_and_inf_without_a_warning():
    x = tp.tensor([float("inf"), -float("inf")])
    big = tp.tensor([60000.0, 60000.0], dtype=tp.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(x.sum().item())
        assert big.sum().item() == float("inf")
        assert tp.tensor([3.0e38, 3.0e38]).sum().item() == float("inf")
    assert np.isinf(torch.tensor([60000.0, 60000.0], dtype=torch.float16).sum().item())
    # the error state is NumPy's default again afterwards
    assert _float_errors.current_error_state() is _float_errors.DEFAULT_ERROR_STATE


def test_a_user_error_state_takes_np_errstate_and_is_kept():
    x = tp.tensor([float("inf"), -float("inf")])
    with np.errstate(all="raise"):
        assert np.isnan(x.sum().item())        # sum's own settings win
        assert np.geterr()["invalid"] == "raise"
        with pytest.raises(FloatingPointError):
            np.float64(0.0) / np.float64(0.0)


def test_dim_and_keepdim_variants_are_unchanged():
    x = inputs(dt.float32)["3-d"]
    xt = to_torch(x)
    for dim, keepdim in [(0, False), (1, True), ((0, 2), False), ((), False), ([], True),
                         (-1, True), (None, False), (None, True)]:
        got = x.sum(dim=dim, keepdim=keepdim)
        want = xt.sum(dim=dim, keepdim=keepdim) if dim is not None else \
            (xt.sum().reshape([1] * 3) if keepdim else xt.sum())
        assert got.shape == tuple(want.shape), (dim, keepdim)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    zero_d = tp.tensor(2.5)
    assert zero_d.sum(0).item() == 2.5 and zero_d.sum(-1, keepdim=True).shape == ()


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64], ids=str)
def test_sums_over_leading_dims_by_blas_match_torch(dtype):
    """A sum over the leading dims of a row-major float tensor (a linear layer's bias
    gradient) runs as ones @ rows (_sum_leading_rows): torch's values, infinities and
    NaNs, no warning."""
    a = np.random.default_rng(3).standard_normal((4, 5, 6))
    a[0, 0, 0], a[1, 0, 0], a[2, 1, 1] = np.inf, -np.inf, np.nan
    a[0, 2, 3] = a[1, 2, 3] = 3e38          # a float32 column sum overflows to inf
    x, xt = tp.tensor(a, dtype=dtype), torch.tensor(a, dtype=getattr(torch, dtype.name))
    for dim, keepdim in [((0,), False), ((0, 1), True), ((0, 1), False), ((1,), False)]:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = x.sum(dim, keepdim=keepdim)
        want = xt.sum(dim, keepdim=keepdim)
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_large_sums_add_in_the_general_path_s_order():
    # NumPy's pairwise summation: axis None must visit the elements as the tuple of
    # every axis does, bit for bit, whatever the layout.
    a = np.random.default_rng(2).standard_normal((37, 50, 61)).astype(np.float32)
    x = tp.from_numpy(a)
    for v in (x, x.permute(2, 0, 1), x[:, ::3, 1:]):
        assert v.sum().numpy().tobytes() == reduction.sum_dim(v, None, False, None).numpy().tobytes()
        assert v.sum(dtype=tp.float64).numpy().tobytes() == \
            reduction.sum_dim(v, None, False, tp.float64).numpy().tobytes()


# ---- cpu_view: the NumPy view the sum reads ------------------------------------------
def test_cpu_view_reads_every_layout_as_the_general_strides_say():
    flat = tp.arange(60, dtype=tp.float64)
    for name, x in inputs(dt.float64).items():
        impl = x._impl
        a = cpu_view(impl)
        assert a.shape == impl.sizes, name
        want = to_torch(x).numpy()
        np.testing.assert_array_equal(a, want, err_msg=name)
        if impl.sizes and 0 not in impl.sizes:
            assert a.strides == tuple(s * 8 for s in impl.strides), name
            assert np.shares_memory(a, impl.storage.data), name
    for view in (flat[59], flat[10:0:1], flat[4:20:3], flat.view(3, 4, 5)[1, ::2, 1:]):
        np.testing.assert_array_equal(cpu_view(view._impl),
                                      torch.arange(60, dtype=torch.float64).as_strided(
                                          view._impl.sizes, view._impl.strides,
                                          view._impl.offset).numpy())


# ---- mean ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_mean_matches_torch(dtype):
    a, at = dtype_pair(MIXED_VALUES, dtype)
    values_like_torch(a.mean(), at.mean())
    values_like_torch(a.mean(1, keepdim=True), at.mean(1, keepdim=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values_like_torch(a[:0].mean(), at[:0].mean())    # nan, without a warning


# ---- gradients -----------------------------------------------------------------------
def test_the_sum_of_a_tensor_that_requires_grad_records_sumbackward0():
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    s = x.sum()
    assert type(s.grad_fn).__name__ == "SumBackward0" and s.requires_grad
    assert s.grad_fn.self_sizes == (3,)
    assert s.grad_fn.next_functions[0][0] is x._impl.grad_accumulator()
    with tp.no_grad():
        assert x.sum().grad_fn is None
    with tp.inference_mode():
        assert x.sum().is_inference()
    i = tp.tensor([1, 2, 3]).sum()
    assert i.dtype is tp.int64 and i.grad_fn is None


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.float16])
@pytest.mark.parametrize("shape", [(), (8,), (2, 3)], ids=str)
def test_the_tiny_step_gradients_match_torch_across_steps(dtype, shape):
    data = np.random.default_rng(1).standard_normal(shape)
    x = tp.tensor(data, dtype=dtype, requires_grad=True)
    xt = torch.tensor(data, dtype=torch_dtype(dtype), requires_grad=True)
    for _ in range(3):
        loss = (x * 2 + 1).sum()
        loss.backward()
        lt = (xt * 2 + 1).sum()
        lt.backward()
        assert loss.dtype is dtype
        np.testing.assert_allclose(values(loss.detach()), values(lt.detach()), rtol=1e-2)
    assert x.grad.dtype is dtype and x.grad.shape == shape
    np.testing.assert_array_equal(values(x.grad), values(xt.grad))


def test_the_sum_gradient_is_an_expanded_view_of_the_incoming_gradient():
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    seed = tp.tensor(2.0)
    grad = x.sum().grad_fn.apply((seed,))[0]
    assert grad._impl.base is seed._impl and grad.stride() == (0,) and not grad.is_contiguous()
    np.testing.assert_array_equal(grad.numpy(), [2.0, 2.0, 2.0])


# ---- sum_to: a broadcast gradient summed to its input's shape ------------------------
def test_sum_to_returns_the_gradient_itself_when_the_shape_matches():
    g = tp.ones(2, 3)
    assert sum_to(g, (2, 3)) is g
    assert sum_to(g, [2, 3]) is g           # a list of sizes takes the general test
    assert tuple(sum_to(g, (1, 3)).shape) == (1, 3)
    assert tuple(sum_to(g, (3,)).shape) == (3,)
    logged = LoggingTensor(tp.ones(2, 3))
    assert sum_to(logged, (2, 3)) is logged


def test_broadcast_gradients_are_still_reduced():
    x, xt = leaf_pair(np.ones((1, 3)))
    w, wt = leaf_pair(np.arange(6).reshape(2, 3))
    for a, b in ((x, w), (xt, wt)):
        (a * b + a).sum().backward()
    close(x.grad, xt.grad)
    close(w.grad, wt.grad)
