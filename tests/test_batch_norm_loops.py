"""Batch norm's compiled loops (cpu_kernels/normalization.py: the statistics summed down
the images, the scale-and-shift pass, the backward's coefficients and grad_input pass)
against PyTorch, over the inputs they take (float32 and float64, row-major, ranks 3 to 5,
one image, one element a plane; a float16 input computes in float32 there too) and those
next to them that keep NumPy's passes (non-contiguous, channels-last, 2-D, an empty
batch), in training and evaluation. (Not as opinfo samples: the fuzzer draws its
programs from those, and a new sample would change what every seed replays.)"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
import cpu_kernels.normalization as normalization

F = tp.nn.functional
TF = torch.nn.functional

TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-10, atol=1e-12),
       np.float16: dict(rtol=2e-3, atol=4e-3)}


def _run(lib, x, w, b, rm, rv, g, training, layout):
    """(output, running_mean, running_var, grad_input, grad_weight, grad_bias) of
    batch_norm in `lib` for NumPy arrays x, w, b, rm, rv and the incoming gradient g."""
    def tensor(a, grad=False):
        t = lib.tensor(a)
        return t.requires_grad_(True) if grad else t
    xt = tensor(x)
    if layout == "transposed":          # the same values, strided memory
        xt = tensor(np.ascontiguousarray(np.swapaxes(x, 0, -1))).transpose(0, -1)
    elif layout == "channels_last":
        xt = xt.contiguous(memory_format=lib.channels_last)
    xt.requires_grad_(True)
    wt, bt = tensor(w, True), tensor(b, True)
    rmt, rvt = tensor(rm), tensor(rv)
    y = lib.nn.functional.batch_norm(xt, rmt, rvt, wt, bt, training=training,
                                     momentum=0.3, eps=1e-3)
    grads = lib.autograd.grad(y, (xt, wt, bt), tensor(g))
    return [v.detach().numpy() for v in (y, rmt, rvt, *grads)]


def _check(x, w, b, rm, rv, g, training, layout="contiguous"):
    ours = _run(tp, x, w, b, rm, rv, g, training, layout)
    theirs = _run(torch, x, w, b, rm, rv, g, training, layout)
    names = ("output", "running_mean", "running_var", "grad_input", "grad_weight",
             "grad_bias")
    for name, o, t in zip(names, ours, theirs):
        np.testing.assert_allclose(o, t, **TOL[x.dtype.type], err_msg=name)


def _arrays(shape, dtype, seed=0, offset=0.5):
    rng = np.random.default_rng(seed)
    c = shape[1]
    x = (rng.standard_normal(shape) + offset).astype(dtype)
    w = rng.uniform(0.5, 2, c).astype(dtype)
    b = rng.standard_normal(c).astype(dtype)
    rm = rng.standard_normal(c).astype(dtype)
    rv = rng.uniform(0.5, 2, c).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    return x, w, b, rm, rv, g


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(5, 3, 4, 4), (1, 3, 7), (3, 2, 3, 2, 2), (6, 3, 1, 1),
                                   (4, 3, 17), (7, 3)])
def test_batch_norm_matches_torch(shape, dtype, training):
    _check(*_arrays(shape, dtype), training)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_of_float16_matches_torch(training):
    # computed in float32 (the loops' float32 code), rounded once
    _check(*_arrays((4, 3, 3, 5), np.float16), training)


@pytest.mark.parametrize("layout", ["transposed", "channels_last"])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_of_other_layouts_matches_torch(layout, training):
    # (channels_last with 32 channels: the NHWC kernel's row loops; transposed: NumPy's passes)
    _check(*_arrays((3, 32, 3, 2), np.float32), training, layout)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_far_from_zero_takes_the_centered_sums(training):
    # means 10 standard deviations away: the backward's dot is summed centered
    _check(*_arrays((4, 3, 5, 5), np.float32, offset=10.0), training)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_infinite_and_nan_values_as_torch(training):
    x, w, b, rm, rv, g = _arrays((4, 4, 3, 3), np.float32)
    x[1, 0, 2, 1] = np.inf          # channel 0: infinite inputs
    x[0, 0, 0, 0] = -np.inf
    x[2, 1, 0, 0] = np.nan          # channel 1: a NaN
    w[2] = np.inf                   # channel 2: an infinite weight
    x[:, 3] = np.array([1e30, -1e30, 3e38, -3e38], np.float32)[:, None, None]   # overflows
    with warnings.catch_warnings():
        warnings.simplefilter("error")    # (and no NumPy warning on the way)
        _check(x, w, b, rm, rv, g, training)


def test_batch_norm_of_an_empty_batch_in_evaluation():
    _check(*_arrays((0, 3, 4, 4), np.float32), False)


def test_batch_norm_float64_gradients_pass_gradcheck():
    x, w, b, rm, rv, _ = _arrays((3, 2, 4, 3), np.float64)
    inputs = [tp.tensor(a, requires_grad=True) for a in (x, w, b)]
    for training in (True, False):
        assert tp.autograd.gradcheck(
            lambda x, w, b: F.batch_norm(x, tp.tensor(rm), tp.tensor(rv), w, b,
                                         training=training, eps=1e-3),
            inputs)


@pytest.mark.parametrize("layout, shape, training, loops", [
    # training: the statistics, then rstd, the running statistics and the output in one
    # loop; evaluation: the running statistics' scale and shift
    ("contiguous", (4, 3, 2, 5), True, {"_sums_down_rows", "_training_output",
                                        "_plane_sums", "_backward_coefficients",
                                        "_grad_input_planes"}),
    ("contiguous", (4, 3, 2, 5), False, {"_scale_and_shift_planes",
                                         "_grad_input_planes"}),
    # the NHWC kernel's rows (8 channels or more), and a 2-D input's
    ("channels_last", (3, 32, 2, 3), True, {"_sums_down_rows", "_scale_and_shift_rows",
                                            "_centered_products_rows",
                                            "_backward_coefficients", "_grad_input_rows"}),
    ("contiguous", (5, 3), True, {"_sums_down_rows", "_scale_and_shift_rows",
                                  "_centered_products_rows", "_backward_coefficients",
                                  "_grad_input_rows"}),
])
def test_batch_norm_takes_its_loops(monkeypatch, layout, shape, training, loops):
    """The loops are the path of these inputs (a test that fails if a condition sends
    one to other code instead)."""
    called = set()
    for name in loops:
        loop = getattr(normalization, name)
        monkeypatch.setattr(normalization, name,
                            lambda *args, _loop=loop, _name=name: (called.add(_name),
                                                                   _loop(*args))[1])
    _check(*_arrays(shape, np.float32), training, layout)
    assert called == loops
