"""Convolution, fold/unfold and batch/group norm on `cuda` (triton_kernels/conv.py,
fold.py, softmax.py) against PyTorch: what the operator database does not reach -
several programs per launch, fp16, non-contiguous inputs, the running statistics,
the typed error for a rank the kernels leave out."""
import numpy as np
import pytest
import torch

from triton_util import CUDA, make

import tensorplay as tp
import tensorplay.nn.functional as NF
from tensorplay.errors import ShapeError
from triton_kernels import conv


def torch_of(t):
    """A float64 torch copy of t's values (NumPy has no bfloat16 torch understands)."""
    return torch.from_numpy(np.asarray(t.detach().cpu()).astype(np.float64))


def close(got, expected, rtol, atol):
    assert got.device == CUDA
    np.testing.assert_allclose(np.asarray(got.detach().cpu()).astype(np.float64),
                               expected.detach().double().numpy(), rtol=rtol, atol=atol)


@pytest.fixture
def small_tiles(monkeypatch):
    """8 x 4 tiles: the test shapes below take several programs along both grid axes."""
    monkeypatch.setattr(conv, "BLOCK_ROWS", 8)
    monkeypatch.setattr(conv, "BLOCK_COLS", 4)


def conv2d_both(x, w, b, stride, padding, dilation, groups, dtype=tp.float32, tol=1e-4,
                layout=None):
    """conv2d forward and backward on cuda (autograd through convolution_backward) vs
    torch.nn.functional.conv2d in float64."""
    xc, wc, bc = (t.to(dtype).cuda() for t in (x, w, b))
    if layout == "transposed":       # the same values, stored H-W swapped
        xc = xc.transpose(2, 3).contiguous().transpose(2, 3)
    elif layout == "strided":        # every other column of a wider tensor
        wide = tp.zeros(tuple(x.shape[:3]) + (2 * x.shape[3],), dtype=dtype).cuda()
        wide[:, :, :, ::2] = xc
        xc = wide[:, :, :, ::2]
    if layout is not None:
        assert not xc.is_contiguous()
    for t in (xc, wc, bc):
        t.requires_grad_()
    out = NF.conv2d(xc, wc, bc, stride, padding, dilation, groups)
    seed = tp.arange(float(out.numel())).view(tuple(out.shape)).cuda()
    (out * seed.to(dtype)).sum().backward()

    tx, tw, tb = (torch_of(t.to(dtype)).requires_grad_() for t in (x, w, b))
    ref = torch.nn.functional.conv2d(tx, tw, tb, stride, padding, dilation, groups)
    (ref * torch.arange(float(ref.numel())).view(ref.shape).double()).sum().backward()
    assert out.dtype is dtype and tuple(out.shape) == tuple(ref.shape)
    scale = float(ref.numel())      # the gradients' seed grows with the position
    close(out, ref, tol, tol)
    for got, expected in ((xc.grad, tx.grad), (wc.grad, tw.grad), (bc.grad, tb.grad)):
        close(got, expected, tol, tol * scale)


@pytest.mark.parametrize("stride, padding, dilation, groups", [
    ((1, 1), (0, 0), (1, 1), 1),
    ((2, 1), (1, 2), (1, 1), 2),
    ((1, 2), (2, 1), (2, 3), 3),
])
def test_conv2d_forward_backward_in_several_programs(small_tiles, stride, padding, dilation,
                                                     groups):
    x = make((2, 6, 7, 9), seed=1)
    w = make((6, 6 // groups, 3, 2), seed=2)
    b = make((6,), seed=3)
    conv2d_both(x, w, b, stride, padding, dilation, groups)


@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_conv2d_non_contiguous_input(layout):
    conv2d_both(make((2, 4, 5, 6), seed=4), make((4, 2, 3, 3), seed=5), make((4,), seed=6),
                (1, 2), (1, 1), (1, 1), 2, layout=layout)


@pytest.mark.parametrize("dtype, tol", [(tp.float16, 2e-2), (tp.bfloat16, 5e-2)])
def test_conv2d_half_types(dtype, tol):
    x, w, b = make((1, 4, 6, 6), seed=7), make((4, 4, 3, 3), seed=8) * 0.25, make((4,), seed=9)
    conv2d_both(x, w, b, (1, 1), (1, 1), (1, 1), 1, dtype=dtype, tol=tol)


def test_conv_transpose2d_in_several_programs(small_tiles):
    x, w, b = make((2, 4, 4, 3), seed=10), make((4, 3, 3, 2), seed=11), make((6,), seed=12)
    xc, wc, bc = (t.cuda().requires_grad_() for t in (x, w, b))
    out = NF.conv_transpose2d(xc, wc, bc, (2, 3), (1, 0), (1, 2), 2, (1, 2))
    out.sum().backward()
    tx, tw, tb = (torch_of(t).requires_grad_() for t in (x, w, b))
    ref = torch.nn.functional.conv_transpose2d(tx, tw, tb, (2, 3), (1, 0), (1, 2), 2, (1, 2))
    ref.sum().backward()
    close(out, ref, 1e-5, 1e-5)
    for got, expected in ((xc.grad, tx.grad), (wc.grad, tw.grad), (bc.grad, tb.grad)):
        close(got, expected, 1e-5, 1e-4)


def test_more_than_three_spatial_dims_is_a_typed_error():
    x, w = make((1, 1, 2, 2, 2, 2)).cuda(), make((1, 1, 1, 1, 1, 1)).cuda()
    with pytest.raises(ShapeError, match=r"convolution\(\): the cuda kernels handle 1 to 3 "
                                         r"spatial dims, but argument 'input' has 4"):
        tp.convolution(x, w, None, [1] * 4, [0] * 4, [1] * 4, False, [0] * 4, 1)


def test_unfold_and_fold_in_several_programs(small_tiles):
    x = make((2, 3, 6, 7), seed=13)
    got = NF.unfold(x.cuda(), (3, 2), dilation=(1, 2), padding=(1, 0), stride=(2, 1))
    ref = torch.nn.functional.unfold(torch_of(x), (3, 2), dilation=(1, 2), padding=(1, 0),
                                     stride=(2, 1))
    close(got, ref, 1e-6, 1e-6)
    cols = make(tuple(ref.shape), seed=14)
    strided = cols.cuda().transpose(1, 2).contiguous().transpose(1, 2)   # any strides
    got = NF.fold(strided, (6, 7), (3, 2), dilation=(1, 2), padding=(1, 0), stride=(2, 1))
    ref = torch.nn.functional.fold(torch_of(cols), (6, 7), (3, 2), dilation=(1, 2),
                                   padding=(1, 0), stride=(2, 1))
    close(got, ref, 1e-5, 1e-5)


def test_batch_norm_running_statistics_on_the_device():
    x = make((4, 3, 5, 2), seed=15)
    rm, rv = make((3,), seed=16), make((3,), low=0.5, high=2.0, seed=17)
    # A non-contiguous running mean: updated through a copy, still in place.
    rm_wide = tp.zeros(6).cuda()
    rm_wide[::2] = rm.cuda()
    rm_c, rv_c = rm_wide[::2], rv.cuda()
    version, rm_version = rv_c._version, rm_c._version
    out = NF.batch_norm(x.cuda(), rm_c, rv_c, training=True, momentum=0.3)
    trm, trv = torch_of(rm), torch_of(rv)
    ref = torch.nn.functional.batch_norm(torch_of(x), trm, trv, training=True, momentum=0.3)
    close(out, ref, 1e-5, 1e-5)
    close(rm_c, trm, 1e-6, 1e-6)
    close(rv_c, trv, 1e-6, 1e-6)
    # updated in place without a version bump, as PyTorch's kernel (backward saves them)
    assert rv_c._version == version and rm_c._version == rm_version
    out = NF.batch_norm(x.cuda(), rm_c, rv_c, training=False)
    close(out, torch.nn.functional.batch_norm(torch_of(x), trm, trv), 1e-5, 1e-5)


def test_batch_norm_long_rows_and_half_input(monkeypatch):
    from triton_kernels import _rows
    monkeypatch.setattr(_rows, "MAX_ONE_PASS", 4)     # rows of 30 take 8 blocks each
    x, w, b = make((5, 3, 6), seed=18), make((3,), seed=19), make((3,), seed=20)
    for dtype, tol in ((tp.float32, 1e-5), (tp.float16, 1e-2)):
        out, mean, rstd = tp.native_batch_norm(x.to(dtype).cuda(), w.to(dtype).cuda(),
                                               b.to(dtype).cuda(), None, None, True, 0.1, 1e-5)
        ref = torch.native_batch_norm(torch_of(x.to(dtype)).float(), torch_of(w.to(dtype)).float(),
                                      torch_of(b.to(dtype)).float(), None, None, True, 0.1,
                                      1e-5)
        assert out.dtype is dtype and mean.dtype is dtype
        for got, expected in zip((out, mean, rstd), ref):
            close(got, expected, tol, tol)


def test_group_norm_forward_backward():
    x, w, b = make((3, 6, 4, 3), seed=21), make((6,), seed=22), make((6,), seed=23)
    xc, wc, bc = (t.cuda().requires_grad_() for t in (x, w, b))
    out = NF.group_norm(xc, 3, wc, bc)
    (out * out).sum().backward()
    tx, tw, tb = (torch_of(t).requires_grad_() for t in (x, w, b))
    ref = torch.nn.functional.group_norm(tx, 3, tw, tb)
    (ref * ref).sum().backward()
    close(out, ref, 1e-5, 1e-5)
    for got, expected in ((xc.grad, tx.grad), (wc.grad, tw.grad), (bc.grad, tb.grad)):
        close(got, expected, 1e-4, 1e-4)


def test_explain_shows_the_triton_kernels():
    x, w = make((1, 2, 4, 4)).cuda(), make((3, 2, 2, 2)).cuda()
    with tp.dispatch.explain(file=False) as ex:
        tp.convolution(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    text = "\n".join(ex.lines)
    assert "im2col grid=" in text and "matmul" in text
