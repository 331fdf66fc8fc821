"""tp.nn.functional pooling against PyTorch: the 1-D forms (2-D ops over a height-1
plane), the 3-D forms, fractional max pooling, tuple/int/None arguments, return_indices,
and gradients to second order."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay.autograd import gradcheck, gradgradcheck
from tensorplay.errors import ArgumentError, ShapeError

RNG = np.random.default_rng(3)

CASES = [
    ("max_pool2d", (2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1, dilation=(1, 2),
                                      ceil_mode=True, return_indices=True)),
    ("max_pool2d", (3, 5, 5), dict(kernel_size=2)),
    ("max_pool1d", (2, 3, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                   return_indices=True)),
    ("max_pool1d", (3, 8), dict(kernel_size=2, dilation=3)),
    ("avg_pool2d", (2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_pool2d", (2, 3, 7, 6), dict(kernel_size=(3, 2), stride=2, padding=1,
                                      ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d", (2, 3, 7, 6), dict(kernel_size=3, padding=1, divisor_override=5)),
    ("avg_pool1d", (2, 3, 9), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True,
                                   count_include_pad=False)),
    ("adaptive_avg_pool2d", (2, 3, 7, 6), dict(output_size=(3, 4))),
    ("adaptive_avg_pool2d", (2, 3, 7, 6), dict(output_size=(None, 4))),
    ("adaptive_avg_pool2d", (3, 7, 6), dict(output_size=1)),
    ("adaptive_avg_pool1d", (2, 3, 7), dict(output_size=3)),
    ("adaptive_max_pool2d", (2, 3, 7, 6), dict(output_size=(3, 4), return_indices=True)),
    ("adaptive_max_pool1d", (2, 3, 7), dict(output_size=3, return_indices=True)),
    ("max_pool3d", (2, 2, 5, 4, 6), dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=1,
                                         dilation=(2, 1, 1), ceil_mode=True,
                                         return_indices=True)),
    ("max_pool3d", (2, 4, 4, 3), dict(kernel_size=2)),
    ("avg_pool3d", (2, 2, 5, 4, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                         count_include_pad=False)),
    ("avg_pool3d", (2, 4, 4, 3), dict(kernel_size=(2, 2, 1), divisor_override=3)),
    ("adaptive_avg_pool3d", (2, 2, 5, 4, 6), dict(output_size=(2, None, 4))),
    ("adaptive_avg_pool3d", (2, 4, 4, 3), dict(output_size=1)),
    ("adaptive_max_pool3d", (2, 2, 5, 4, 6), dict(output_size=(3, 2, 4), return_indices=True)),
    ("lp_pool3d", (2, 2, 4, 4, 6), dict(norm_type=float("inf"), kernel_size=2)),
]


@pytest.mark.parametrize("name, shape, kwargs", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_functional_pool_matches_torch(name, shape, kwargs):
    a = RNG.standard_normal(shape)
    x, tx = tp.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = getattr(F, name)(x, **kwargs), getattr(TF, name)(tx, **kwargs)
    if isinstance(ty, tuple):
        np.testing.assert_array_equal(y[1].numpy(), ty[1].numpy())
        y, ty = y[0], ty[0]
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), atol=1e-12)
    g = RNG.standard_normal(tuple(ty.shape))
    (y * tp.tensor(g)).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-12)
    kwargs = {k: v for k, v in kwargs.items() if k != "return_indices"}
    nd = 3 if "3d" in name else 2
    small = (1,) * (len(shape) - nd) + tuple(shape[-nd:])   # one plane: finite differences
    x2 = tp.tensor(RNG.standard_normal(small), requires_grad=True)
    fn = lambda x: getattr(F, name)(x, **kwargs)   # noqa: E731
    assert gradcheck(fn, (x2,))
    assert gradgradcheck(fn, (x2,))


def test_max_pool_keeps_nan():
    x = tp.tensor([[[1.0, float("nan"), 3.0, 2.0]]])
    t = torch.tensor([[[1.0, float("nan"), 3.0, 2.0]]])
    got, idx = F.max_pool1d(x, 2, return_indices=True)
    want, t_idx = TF.max_pool1d(t, 2, return_indices=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())


@pytest.mark.parametrize("call, error, regex, arg", [
    (lambda x: F.max_pool1d(x, 2), ShapeError,
     r"max_pool1d\(\): expected argument 'input' to be 2-D \(C, L\) or 3-D", "input"),
    (lambda x: F.max_pool2d(x, (1, 2, 3)), ArgumentError,
     r"max_pool2d\(\): argument 'kernel_size' must be an int or a pair", "kernel_size"),
    (lambda x: F.avg_pool2d(x, 2, padding=2), ArgumentError,
     r"avg_pool2d\(\): argument 'padding' \(\[2, 2\]\) must be at most half", "padding"),
    (lambda x: F.max_pool3d(x[None], (1, 2)), ArgumentError,
     r"max_pool3d\(\): argument 'kernel_size' must be an int or a triple", "kernel_size"),
    (lambda x: F.fractional_max_pool2d(x, 2), ArgumentError,
     r"fractional_max_pool2d\(\): requires specifying either an 'output_size' or an "
     r"'output_ratio'", "output_size"),
])
def test_functional_pool_errors(call, error, regex, arg):
    x = tp.zeros(1, 2, 4, 4)
    with pytest.raises(error, match=regex) as info:
        call(x)
    assert info.value.arg == arg


@pytest.mark.parametrize("shape, args", [
    ((2, 3, 7, 6), ((3, 2), (2, 2), (1, 1), (1, 2), True)),
    ((3, 5, 5), ((2, 2), (), (0, 0), (1, 1), False)),
    ((1, 2, 6, 7), ((3, 3), (2, 3), (1, 0), (2, 1), True)),
])
def test_max_pool_double_backward_windows_equal_planes(shape, args):
    """The windowed gather (im2col) of max_pool2d's double backward reads the same values
    as the plane-wide one-hot gather that adaptive max pooling uses."""
    from tensorplay.autograd.formulas.pooling import (
        max_pool2d_double_backward, max_pool_double_backward)
    x = tp.tensor(RNG.standard_normal(shape))
    _, indices = tp.max_pool2d_with_indices(x, *args)
    gg = tp.tensor(RNG.standard_normal(shape))
    kernel, stride, padding, dilation, _ = args
    windowed = max_pool2d_double_backward(gg, indices, kernel, stride, padding, dilation)
    np.testing.assert_array_equal(windowed.numpy(),
                                  max_pool_double_backward(gg, indices).numpy())


def test_fractional_max_pool_samples_place_the_windows_as_torch():
    """The same _random_samples give PyTorch's values and indices, from output_size or
    output_ratio; a seeded draw gives samples shaped (batch, channels, dims) of the input's
    dtype (as PyTorch's), the same again under the same seed."""
    for dims, shape in ((2, (2, 3, 9, 7)), (3, (2, 2, 6, 5, 7)), (2, (3, 8, 6))):
        fn, t_fn = getattr(F, f"fractional_max_pool{dims}d"), \
            getattr(TF, f"fractional_max_pool{dims}d")
        a = RNG.standard_normal(shape)
        batch = 1 if len(shape) == dims + 1 else shape[0]
        u = RNG.random((batch, shape[-dims - 1], dims))
        for kwargs in (dict(output_size=3), dict(output_ratio=(0.6,) * dims)):
            y, i = fn(tp.tensor(a), 2, return_indices=True, _random_samples=tp.tensor(u),
                      **kwargs)
            ty, ti = t_fn(torch.tensor(a), 2, return_indices=True,
                          _random_samples=torch.tensor(u), **kwargs)
            np.testing.assert_array_equal(y.numpy(), ty.numpy())
            np.testing.assert_array_equal(i.numpy(), ti.numpy())
        x = tp.tensor(a, dtype=tp.float32)
        tp.manual_seed(5)
        drawn = tp.rand(batch, shape[-dims - 1], dims, dtype=tp.float32)
        tp.manual_seed(5)
        y = fn(x, 2, output_size=3)
        np.testing.assert_array_equal(
            y.numpy(), fn(x, 2, output_size=3, _random_samples=drawn).numpy())
        assert y.dtype == tp.float32 and tuple(y.shape) == tuple(
            t_fn(torch.tensor(a, dtype=torch.float32), 2, output_size=3).shape)


def test_fractional_max_pool_reads_channels_last_input():
    a = RNG.standard_normal((2, 3, 7, 6)).astype(np.float32)
    u = RNG.random((2, 3, 2)).astype(np.float32)
    x = tp.tensor(a).contiguous(memory_format=tp.channels_last)
    tx = torch.tensor(a).contiguous(memory_format=torch.channels_last)
    y = F.fractional_max_pool2d(x, 2, output_size=(4, 3), _random_samples=tp.tensor(u))
    ty = TF.fractional_max_pool2d(tx, 2, output_size=(4, 3), _random_samples=torch.tensor(u))
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    assert y.is_contiguous() == ty.is_contiguous()


@pytest.mark.parametrize("shape, args", [
    ((2, 2, 5, 4, 6), ((2, 3, 2), (1, 2, 2), (1, 1, 1), (2, 1, 1), True)),
    ((2, 4, 4, 3), ((2, 2, 2), (), (0, 0, 0), (1, 1, 1), False)),
])
def test_max_pool3d_gradients_to_second_order(shape, args):
    x = tp.tensor(RNG.standard_normal(shape), requires_grad=True)
    assert gradcheck(lambda x: tp.max_pool3d_with_indices(x, *args)[0], (x,))
    assert gradgradcheck(lambda x: tp.max_pool3d_with_indices(x, *args)[0], (x,))


# ---- max pooling's window loop and its gradient's scatter (cpu_kernels/pooling.py) -----
# Values, indices and gradients against PyTorch on the inputs where the choice of the max
# is a rule: ties (signed zeros among them: the first in window order), NaN (the last NaN
# of a window), -inf beside the padding (never the padding: the window's first position
# inside the plane), and overlapping windows (their gradients added in the dtype, in
# PyTorch's order: the same bits for float32 and float64).
def _max_pool_data(kind, shape, rng):
    if kind == "ties":
        return rng.choice([-1.0, -0.0, 0.0, 1.0], shape)
    a = rng.standard_normal(shape)
    if kind == "nan":
        a[rng.random(shape) < 0.2] = np.nan
    elif kind == "-inf":
        a[rng.random(shape) < 0.7] = -np.inf
    return a


POOL2D = [dict(kernel_size=2), dict(kernel_size=2, ceil_mode=True), dict(kernel_size=3, stride=2, padding=1),
          dict(kernel_size=3, stride=1, padding=1),
          dict(kernel_size=3, stride=1, padding=1, dilation=2),
          dict(kernel_size=3, stride=2, ceil_mode=True),
          dict(kernel_size=(2, 3), stride=(1, 2), padding=1, dilation=(2, 1), ceil_mode=True)]
DTYPES = ["float32", "float64", "float16", "bfloat16"]


def _layouts(a, layout):
    """(tp, torch) tensors of `a` (N, C, H, W) laid out as `layout`."""
    if layout == "transposed":     # a strided view: (N, C, H, W) of a (N, C, W, H) array
        t = np.ascontiguousarray(a.swapaxes(2, 3))
        return tp.from_numpy(t).transpose(2, 3), torch.from_numpy(t).transpose(2, 3)
    if layout == "unbatched":
        return tp.from_numpy(a[0]), torch.from_numpy(a[0])
    x, tx = tp.from_numpy(a), torch.from_numpy(a)
    if layout == "channels_last":
        x, tx = (x.to(memory_format=tp.channels_last),
                 tx.to(memory_format=torch.channels_last))
    return x, tx


def _assert_same(got, want, atol=0):
    got, want = got.float().detach().numpy(), want.float().detach().numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=atol)
    if not atol:      # (the sign of a NaN is no contract)
        np.testing.assert_array_equal(np.signbit(got) & ~np.isnan(got),
                                      np.signbit(want) & ~np.isnan(want))   # -0.0 kept


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed", "unbatched"])
@pytest.mark.parametrize("kind", ["ties", "nan", "-inf", "normal"])
@pytest.mark.parametrize("kwargs", POOL2D, ids=range(len(POOL2D)))
def test_max_pool2d_picks_and_scatters_as_torch(dtype, layout, kind, kwargs):
    rng = np.random.default_rng(7)
    # a channels_last input runs the NHWC kernel
    a = _max_pool_data(kind, (2, 16, 7, 9), rng).astype(np.float32)
    x, tx = _layouts(a, layout)
    x, tx = x.to(getattr(tp, dtype)), tx.to(getattr(torch, dtype))
    x.requires_grad_(), tx.requires_grad_()
    y, idx = F.max_pool2d(x, return_indices=True, **kwargs)
    ty, t_idx = TF.max_pool2d(tx, return_indices=True, **kwargs)
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    _assert_same(y, ty)      # a max is one of the inputs, in any dtype
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    y.backward(tp.from_numpy(g).to(x.dtype))
    ty.backward(torch.from_numpy(g).to(tx.dtype))
    # half types: PyTorch rounds the sums of overlapping windows' gradients (up to 9
    # terms, sums up to about 5) differently from TensorPlay's float64 sums, rounded once:
    # by a few ulps of 4
    _assert_same(x.grad, tx.grad, atol={"float16": 1e-2, "bfloat16": 8e-2}.get(dtype, 0))


@pytest.mark.parametrize("corner", range(4))
def test_max_pool_2x2_loop_hands_a_nan_to_the_general_loop(corner):
    """The 2x2 loop compares by `>` alone: it must say when it read a NaN (at any of a
    window's four places), for its caller to run PyTorch's NaN rule instead."""
    from cpu_kernels.pooling import _max_pool_2x2_loop
    x = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6)
    values, indices = np.empty((2, 2, 3), np.float32), np.empty((2, 2, 3), np.int64)
    assert not _max_pool_2x2_loop(x, values, indices)
    np.testing.assert_array_equal(values, x[:, 1::2, 1::2])
    x[1, 2 + corner // 2, 4 + corner % 2] = np.nan
    assert _max_pool_2x2_loop(x, values, indices)
    y, idx = F.max_pool2d(tp.from_numpy(x), 2, return_indices=True)
    ty, t_idx = TF.max_pool2d(torch.from_numpy(x), 2, return_indices=True)
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    np.testing.assert_array_equal(y.numpy(), ty.numpy())


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
@pytest.mark.parametrize("kwargs", POOL2D, ids=range(len(POOL2D)))
def test_max_pool2d_integer_ties_take_the_first(dtype, kwargs):
    """Integer inputs run the loop too: the first of equal maxima, as PyTorch's contiguous
    kernel (its channels_last one may differ, tests/opinfo avoids ties there)."""
    a = np.random.default_rng(8).integers(0, 3, (2, 3, 7, 9)).astype(dtype)
    y, idx = F.max_pool2d(tp.from_numpy(a), return_indices=True, **kwargs)
    ty, t_idx = TF.max_pool2d(torch.from_numpy(a), return_indices=True, **kwargs)
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    np.testing.assert_array_equal(y.numpy(), ty.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["ties", "nan", "-inf"])
def test_max_pool3d_picks_and_scatters_as_torch(dtype, kind):
    rng = np.random.default_rng(9)
    a = _max_pool_data(kind, (2, 3, 5, 6, 7), rng).astype(dtype)
    kwargs = dict(kernel_size=(2, 3, 2), stride=(1, 2, 1), padding=1, dilation=(2, 1, 1),
                  ceil_mode=True)
    x, tx = tp.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, idx = F.max_pool3d(x, return_indices=True, **kwargs)
    ty, t_idx = TF.max_pool3d(tx, return_indices=True, **kwargs)
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    _assert_same(y, ty)
    g = rng.standard_normal(tuple(ty.shape)).astype(dtype)
    y.backward(tp.tensor(g)), ty.backward(torch.tensor(g))
    _assert_same(x.grad, tx.grad)


def test_max_pool2d_empty_batch_and_gradients_of_overlapping_windows():
    x = tp.zeros((0, 3, 6, 6), requires_grad=True)
    y, idx = F.max_pool2d(x, 3, 1, 1, return_indices=True)
    assert tuple(y.shape) == tuple(idx.shape) == (0, 3, 6, 6)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 6, 6)
    x = tp.tensor(RNG.standard_normal((1, 2, 6, 5)), requires_grad=True)
    for kwargs in (dict(kernel_size=3, stride=1, padding=1),
                   dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)):
        fn = lambda x: F.max_pool2d(x, **kwargs)   # noqa: E731
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize("position", [-1, 30])
def test_max_pool2d_backward_rejects_indices_outside_the_plane(position):
    x = tp.zeros((1, 2, 5, 6))
    _, idx = tp.max_pool2d_with_indices(x, (2, 2), (2, 2), (0, 0), (1, 1), False)
    bad = idx.clone()
    bad[0, 1, 1, 0] = position
    with pytest.raises(tp.errors.DimError, match="indices.*outside the 5 x 6 input plane"):
        tp.max_pool2d_with_indices_backward(tp.ones(tuple(idx.shape)), x, (2, 2), (2, 2),
                                            (0, 0), (1, 1), False, bad)
