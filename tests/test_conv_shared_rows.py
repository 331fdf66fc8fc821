"""The same-size convolution on the columns that the kernel rows share
(cpu_kernels/_conv_same.py, _SharedRowPlan): one copy of C * KW rows of the row-padded
input serves every kernel row at its own offset, one product per row, summed. Taken
forward (where no columns are kept for a weight gradient) and in grad_input, from
SHARED_ROWS_BATCH images and SHARED_ROWS_CHANNELS channels on. Against PyTorch for
kernels, dilations, dtypes and biases, batches of several chunks, and a gradient that
holds NaN; most tests lower the channel bound so that small shapes take the path."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from cpu_kernels import _conv_same

F = tp.nn.functional
KERNELS = [((3, 3), (1, 1)), ((5, 3), (1, 2)), ((3, 5), (2, 1)), ((1, 3), (1, 1)),
           ((3, 1), (1, 1))]


@pytest.fixture
def shared_fills(monkeypatch):
    """The images that the shared-row columns were filled from, per fill; any channel
    count takes them."""
    fills = []
    original = _conv_same._SharedRowPlan.fill
    monkeypatch.setattr(_conv_same._SharedRowPlan, "fill",
                        lambda plan, x: fills.append(x.shape[0]) or original(plan, x))
    monkeypatch.setattr(_conv_same, "SHARED_ROWS_CHANNELS", 1)
    return fills


def _arrays(dtype, batch, channels, size, kernel):
    c_in, c_out = channels
    rng = np.random.default_rng(0)
    return (rng.standard_normal((batch, c_in) + size).astype(dtype),
            rng.standard_normal((c_out, c_in) + kernel).astype(dtype),
            rng.standard_normal(c_out).astype(dtype),
            rng.standard_normal((batch, c_out) + size).astype(dtype))


def _padding(kernel, dilation):
    return tuple(d * (k - 1) // 2 for d, k in zip(dilation, kernel))


def _grad_input(dtype, batch, channels, size, kernel, dilation, g_nan=False, fills=None):
    """(TensorPlay's grad_input, PyTorch's) of a same-size convolution; `fills` (a list)
    is emptied after the forward, so that it holds the backward's."""
    xa, wa, _, ga = _arrays(dtype, batch, channels, size, kernel)
    if g_nan:
        ga[batch - 1, 0, 0, size[1] - 1] = np.nan     # a corner: the wrapped columns' case
    padding = _padding(kernel, dilation)
    x, xt = tp.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    out = F.conv2d(x, tp.tensor(wa), padding=padding, dilation=dilation)
    if fills is not None:
        fills.clear()
    out.backward(tp.tensor(ga))
    torch.nn.functional.conv2d(xt, torch.tensor(wa), padding=padding,
                               dilation=dilation).backward(torch.tensor(ga))
    return x.grad.numpy(), xt.grad.numpy()


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-4), (np.float64, 1e-12)])
@pytest.mark.parametrize("kernel, dilation", KERNELS)
def test_grad_input_from_shared_rows_matches_torch(shared_fills, dtype, tol, kernel,
                                                   dilation):
    mine, theirs = _grad_input(dtype, 8, (3, 5), (7, 6), kernel, dilation,
                               fills=shared_fills)
    np.testing.assert_allclose(mine, theirs, rtol=tol, atol=tol)
    # (a kernel of one row has nothing to share: it keeps the full columns)
    assert shared_fills == ([] if kernel[0] == 1 else [8])


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-4), (np.float64, 1e-12)])
@pytest.mark.parametrize("kernel, dilation", KERNELS)
@pytest.mark.parametrize("bias", [True, False])
def test_forward_from_shared_rows_matches_torch(shared_fills, dtype, tol, kernel, dilation,
                                                bias):
    """Without gradients, and in training with a weight gradient whose columns are not
    kept (this product is below KEEP_WORK): both forwards on the shared rows, and the
    weight and bias gradients (from their own columns) still PyTorch's."""
    xa, wa, ba, ga = _arrays(dtype, 9, (4, 3), (6, 7), kernel)
    padding = _padding(kernel, dilation)
    b, bt = (tp.tensor(ba), torch.tensor(ba)) if bias else (None, None)
    with tp.no_grad():
        mine = F.conv2d(tp.tensor(xa), tp.tensor(wa), b, padding=padding, dilation=dilation)
    theirs = torch.nn.functional.conv2d(torch.tensor(xa), torch.tensor(wa), bt,
                                        padding=padding, dilation=dilation)
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=tol, atol=tol)
    w, wt = tp.tensor(wa, requires_grad=True), torch.tensor(wa, requires_grad=True)
    out = F.conv2d(tp.tensor(xa), w, b, padding=padding, dilation=dilation)
    out_t = torch.nn.functional.conv2d(torch.tensor(xa), wt, bt, padding=padding,
                                       dilation=dilation)
    np.testing.assert_allclose(out.detach().numpy(), out_t.detach().numpy(), rtol=tol,
                               atol=tol)
    out.backward(tp.tensor(ga))
    out_t.backward(torch.tensor(ga))
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=tol, atol=tol)
    assert shared_fills == ([] if kernel[0] == 1 else [9, 9])


def test_a_batch_in_several_chunks(shared_fills):
    """37 images of the digits CNN's second layer: two chunks (19 and 18 images), each with
    its own plan, the sums written into each chunk's slice of the result."""
    mine, theirs = _grad_input(np.float32, 37, (16, 32), (8, 8), (3, 3), (1, 1),
                               fills=shared_fills)
    np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-4)
    assert len(shared_fills) == 2 and sum(shared_fills) == 37


def test_which_convolutions_share_rows():
    """By default: from SHARED_ROWS_BATCH images and SHARED_ROWS_CHANNELS channels of the
    convolved tensor on (the input forward, g in grad_input), with more than one kernel
    row."""
    batch, channels = _conv_same.SHARED_ROWS_BATCH, _conv_same.SHARED_ROWS_CHANNELS
    assert _conv_same._shares_rows(batch, channels, 3)
    assert not _conv_same._shares_rows(batch - 1, channels, 3)
    assert not _conv_same._shares_rows(batch, channels - 1, 3)
    assert not _conv_same._shares_rows(batch, channels, 1)


def test_the_default_bound_picks_the_digits_cnn_grad_input(monkeypatch):
    """The digits CNN's second layer at batch 32: its grad_input (g's 32 channels) shares
    rows, its forward (16 input channels) keeps the full columns."""
    fills = []
    original = _conv_same._SharedRowPlan.fill
    monkeypatch.setattr(_conv_same._SharedRowPlan, "fill",
                        lambda plan, x: fills.append(plan.cols.shape[1]) or original(plan, x))
    mine, theirs = _grad_input(np.float32, 32, (16, 32), (8, 8), (3, 3), (1, 1))
    np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-4)
    assert fills == [32 * 3, 32 * 3]      # g's columns only: 32 channels x 3 kernel columns


def test_a_small_batch_keeps_the_full_columns(shared_fills):
    batch = _conv_same.SHARED_ROWS_BATCH - 1
    mine, theirs = _grad_input(np.float32, batch, (16, 32), (8, 8), (3, 3), (1, 1),
                               fills=shared_fills)
    np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-4)
    assert shared_fills == []


def test_a_nan_in_the_gradient_reaches_only_its_kernel_footprint(shared_fills):
    """A NaN in the last column of the first row: a wrapped column that read it would put
    NaN in the next row's first column, where PyTorch's grad_input is finite."""
    mine, theirs = _grad_input(np.float64, 8, (2, 3), (5, 5), (3, 3), (1, 1), g_nan=True,
                               fills=shared_fills)
    np.testing.assert_array_equal(np.isnan(mine), np.isnan(theirs))
    np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-12)
    assert shared_fills == [8]


def test_gradcheck_through_shared_rows(shared_fills):
    x = tp.tensor(np.random.default_rng(2).standard_normal((8, 2, 4, 5)), requires_grad=True)
    w = tp.tensor(np.random.default_rng(3).standard_normal((3, 2, 3, 3)), requires_grad=True)
    b = tp.tensor(np.random.default_rng(4).standard_normal(3), requires_grad=True)
    assert tp.autograd.gradcheck(lambda a, v, c: F.conv2d(a, v, c, padding=1), (x, w, b))
    assert shared_fills
