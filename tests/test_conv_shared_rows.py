"""The same-size convolution's grad_input on the columns that the kernel rows share
(cpu_kernels/_conv_same.py, _SharedRowPlan): from SHARED_ROWS_BATCH images on, one copy
of C * KW rows of the row-padded gradient serves every kernel row at its own offset, one
product per row, summed. Against PyTorch's grad_input for kernels, dilations and dtypes,
batches of one and of several chunks, and a gradient that holds NaN."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from cpu_kernels import _conv_same

F = tp.nn.functional


@pytest.fixture
def shared_fills(monkeypatch):
    """The images whose gradient the shared-row columns were filled from, per fill."""
    fills = []
    original = _conv_same._SharedRowPlan.fill
    monkeypatch.setattr(_conv_same._SharedRowPlan, "fill",
                        lambda plan, x: fills.append(x.shape[0]) or original(plan, x))
    return fills


def _grad_input(dtype, batch, channels, size, kernel, dilation, g_nan=False):
    """(TensorPlay's grad_input, PyTorch's) of a same-size convolution."""
    c_in, c_out = channels
    padding = tuple(d * (k - 1) // 2 for d, k in zip(dilation, kernel))
    rng = np.random.default_rng(0)
    xa = rng.standard_normal((batch, c_in) + size).astype(dtype)
    wa = rng.standard_normal((c_out, c_in) + kernel).astype(dtype)
    ga = rng.standard_normal((batch, c_out) + size).astype(dtype)
    if g_nan:
        ga[batch - 1, 0, 0, size[1] - 1] = np.nan     # a corner: the wrapped columns' case
    x, xt = tp.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    F.conv2d(x, tp.tensor(wa), padding=padding, dilation=dilation).backward(tp.tensor(ga))
    torch.nn.functional.conv2d(xt, torch.tensor(wa), padding=padding,
                               dilation=dilation).backward(torch.tensor(ga))
    return x.grad.numpy(), xt.grad.numpy()


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-4), (np.float64, 1e-12)])
@pytest.mark.parametrize("kernel, dilation", [((3, 3), (1, 1)), ((5, 3), (1, 2)),
                                              ((3, 5), (2, 1)), ((1, 3), (1, 1)),
                                              ((3, 1), (1, 1))])
def test_grad_input_from_shared_rows_matches_torch(shared_fills, dtype, tol, kernel,
                                                   dilation):
    mine, theirs = _grad_input(dtype, 8, (3, 5), (7, 6), kernel, dilation)
    np.testing.assert_allclose(mine, theirs, rtol=tol, atol=tol)
    # (a kernel of one row has nothing to share: it keeps the full columns)
    assert shared_fills == ([] if kernel[0] == 1 else [8])


def test_a_batch_in_several_chunks(shared_fills):
    """37 images of the digits CNN's second layer: two chunks (19 and 18 images), each with
    its own plan, the sums written into each chunk's slice of the result."""
    mine, theirs = _grad_input(np.float32, 37, (16, 32), (8, 8), (3, 3), (1, 1))
    np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-4)
    assert len(shared_fills) == 2 and sum(shared_fills) == 37


def test_a_small_batch_keeps_the_full_columns(shared_fills):
    batch = _conv_same.SHARED_ROWS_BATCH - 1
    mine, theirs = _grad_input(np.float32, batch, (16, 32), (8, 8), (3, 3), (1, 1))
    np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-4)
    assert shared_fills == []


def test_a_nan_in_the_gradient_reaches_only_its_kernel_footprint(shared_fills):
    """A NaN in the last column of the first row: a wrapped column that read it would put
    NaN in the next row's first column, where PyTorch's grad_input is finite."""
    mine, theirs = _grad_input(np.float64, 8, (2, 3), (5, 5), (3, 3), (1, 1), g_nan=True)
    np.testing.assert_array_equal(np.isnan(mine), np.isnan(theirs))
    np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-12)
    assert shared_fills == [8]


def test_gradcheck_through_shared_rows(shared_fills):
    x = tp.tensor(np.random.default_rng(2).standard_normal((8, 2, 4, 5)), requires_grad=True)
    w = tp.tensor(np.random.default_rng(3).standard_normal((3, 2, 3, 3)))
    assert tp.autograd.gradcheck(lambda a: F.conv2d(a, w, padding=1), (x,))
    assert shared_fills
