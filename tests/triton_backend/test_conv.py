"""Convolution (triton_kernels/conv.py: implicit GEMMs), fold/unfold (fold.py) and
batch/group norm on `cuda` against PyTorch: what the operator database does not reach -
several programs per launch and tails, NCHW and channels_last, fp16/bf16, non-contiguous
inputs, the output_mask of the backward, split-K, autotuning, the typed error for a rank
the kernels leave out."""
import numpy as np
import pytest
import torch

from triton_util import CUDA, make

import tensorplay as tp
import tensorplay.nn.functional as NF
from tensorplay.dispatch import autotune
from tensorplay.errors import ShapeError
from triton_kernels import conv, fold


def torch_of(t):
    """A float64 torch copy of t's values (NumPy has no bfloat16 torch understands)."""
    return torch.from_numpy(np.asarray(t.detach().cpu()).astype(np.float64))


def close(got, expected, rtol, atol):
    assert got.device == CUDA
    np.testing.assert_allclose(np.asarray(got.detach().cpu()).astype(np.float64),
                               expected.detach().double().numpy(), rtol=rtol, atol=atol)


@pytest.fixture
def small_tiles(monkeypatch):
    """16 x 16 x 16 GEMM tiles (tl.dot's smallest): the shapes below take several programs
    along M and N, several K steps, and tails in each."""
    monkeypatch.setattr(conv, "CONFIGS", [conv._config(16, 16, 16, 1, 4)])
    monkeypatch.setattr(conv, "GATHER_CONFIGS", conv.CONFIGS)
    monkeypatch.setattr(fold, "BLOCK_ROWS", 8)
    monkeypatch.setattr(fold, "BLOCK_COLS", 4)


def laid_out(t, layout):
    """t (on cuda) with the same values in another memory layout."""
    if layout == "channels_last":
        return t.to(memory_format=tp.channels_last)
    if layout == "transposed":       # the last two dims stored swapped
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == "strided":          # every other element of a wider tensor
        wide = tp.zeros(tuple(t.shape[:-1]) + (2 * t.shape[-1],), dtype=t.dtype).cuda()
        wide[..., ::2] = t
        return wide[..., ::2]
    return t


def check_conv(xs, ws, stride, padding, dilation, groups, transposed=False,
               output_padding=None, dtype=tp.float32, layout="contiguous", bias=True,
               mask=(True, True, True), tol=1e-5):
    """tp.convolution and tp.convolution_backward on cuda vs aten's in float64 on the same
    (rounded) values: forward, each gradient output_mask asks for (None otherwise), the
    dtype and, for a channels_last call, the layout of the results."""
    output_padding = output_padding or (0,) * len(stride)
    c_out = ws[1] * groups if transposed else ws[0]
    x, w = make(xs, seed=1).to(dtype), (make(ws, seed=2) * 0.5).to(dtype)
    b = make((c_out,), seed=3).to(dtype) if bias else None
    xc = laid_out(x.cuda(), layout)
    wc = w.cuda()
    bc = b.cuda() if bias else None
    args = (stride, padding, dilation, transposed, output_padding, groups)
    out = tp.convolution(xc, wc, bc, *args)
    tx, tw = torch_of(x), torch_of(w)
    tb = torch_of(b) if bias else None
    ref = torch.convolution(tx, tw, tb, *args)
    assert out.dtype is dtype and tuple(out.shape) == tuple(ref.shape)
    scale = max(1.0, float(ref.abs().max())) if ref.numel() else 1.0
    close(out, ref, tol, tol * scale)
    g = make(tuple(ref.shape), seed=4).to(dtype)
    grads = tp.convolution_backward(g.cuda(), xc, wc, [c_out] if bias else None, *args,
                                    list(mask))
    expected = torch.ops.aten.convolution_backward(
        torch_of(g), tx, tw, [c_out] if bias else None, *args, list(mask))
    for got, want, wanted in zip(grads, expected, mask):
        if not wanted:
            assert got is None
            continue
        assert got.dtype is dtype and tuple(got.shape) == tuple(want.shape)
        scale = max(1.0, float(want.abs().max())) if want.numel() else 1.0
        close(got, want, tol, tol * scale)
    if layout == "channels_last":
        assert out.is_contiguous(memory_format=tp.channels_last)
        if mask[0]:
            assert grads[0].is_contiguous(memory_format=tp.channels_last)
    return out, grads


# (input shape, weight shape, stride, padding, dilation, groups)
CASES = {
    "3x3 padded": ((2, 5, 6, 7), (6, 5, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    "strided dilated grouped": ((2, 6, 7, 9), (6, 3, 3, 2), (2, 1), (1, 2), (2, 3), 2),
    "depthwise": ((2, 4, 6, 5), (4, 1, 3, 3), (2, 2), (1, 1), (1, 1), 4),
    "1x1 over one K tile": ((2, 20, 5, 3), (18, 20, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    "windows that skip pixels": ((1, 3, 7, 6), (4, 3, 2, 2), (3, 2), (0, 0), (1, 1), 1),
    "1d": ((2, 3, 9), (4, 3, 3), (2,), (1,), (2,), 1),
    "3d": ((1, 2, 3, 4, 3), (3, 2, 2, 2, 2), (1, 2, 1), (1, 0, 1), (1, 1, 1), 1),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_conv_in_several_programs(small_tiles, case):
    check_conv(*CASES[case])


@pytest.mark.parametrize("case", ["strided dilated grouped", "depthwise", "3x3 padded"])
def test_conv_channels_last(small_tiles, case):
    check_conv(*CASES[case], layout="channels_last")


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_conv_channel_tiles(small_tiles, layout):
    """16 channels per group, a multiple of the 16-wide tiles: the conv kernel's K loop
    walks kernel offsets, then channel tiles, in both addressings (forward and
    grad_input), and each weight-gradient tile holds the channels of one offset."""
    with tp.dispatch.explain(file=False) as ex:
        check_conv((1, 32, 5, 4), (32, 16, 3, 3), (2, 2), (1, 1), (1, 1), 2, layout=layout)
    launches = [line for line in ex.lines if "implicit GEMM" in line and "grid=" in line]
    assert len(launches) == 3 and all("CHANNEL_BLOCKS=True" in line for line in launches)


@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_conv_non_contiguous_input(layout):
    check_conv(*CASES["strided dilated grouped"], layout=layout)


@pytest.mark.parametrize("dtype, tol", [(tp.float16, 1e-2), (tp.bfloat16, 3e-2)])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_conv_half_types(small_tiles, dtype, tol, layout):
    """fp16/bf16 operands, float32 sums (one rounding at the end): close to the float64
    result of the same rounded values."""
    check_conv((2, 20, 5, 4), (6, 20, 3, 3), (1, 1), (1, 1), (1, 1), 1, dtype=dtype,
               layout=layout, tol=tol)


def test_conv_float64():
    check_conv(*CASES["strided dilated grouped"], dtype=tp.float64, tol=1e-12)


def test_conv_transposed_in_several_programs(small_tiles):
    check_conv((2, 4, 4, 3), (4, 3, 3, 2), (2, 3), (1, 0), (1, 2), 2, transposed=True,
               output_padding=(1, 2))


def test_conv_transposed_1d_dilation_over_stride():
    check_conv((2, 2, 4), (2, 3, 2), (1,), (0,), (3,), 1, transposed=True,
               output_padding=(2,), bias=False)


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, False),
                                  (False, False, True), (False, True, True)])
def test_conv_backward_honours_output_mask(mask):
    check_conv(*CASES["strided dilated grouped"], mask=mask)


def test_conv_empty_batch():
    """No windows: an empty result and grad_input; zero grad_weight and grad_bias."""
    _, (gi, gw, gb) = check_conv((0, 4, 5, 5), (3, 4, 2, 2), (1, 1), (0, 0), (1, 1), 1)
    assert gi.numel() == 0 and not np.asarray(gw.cpu()).any() and not np.asarray(gb.cpu()).any()


def test_integer_conv_is_exact():
    x, w = make((2, 3, 5, 4), tp.int64, seed=5), make((4, 3, 2, 3), tp.int64, seed=6)
    for dtype in (tp.int64, tp.int8):
        got = tp.convolution(x.to(dtype).cuda(), w.to(dtype).cuda(), None, [2, 1], [1, 1],
                             [1, 1], False, [0, 0], 1)
        ref = torch.convolution(torch.from_numpy(np.asarray(x.to(dtype))),
                                torch.from_numpy(np.asarray(w.to(dtype))), None, [2, 1],
                                [1, 1], [1, 1], False, [0, 0], 1)
        assert got.dtype is dtype
        np.testing.assert_array_equal(np.asarray(got.cpu()), ref.numpy())


def test_weight_grad_split_k(small_tiles, monkeypatch):
    """A small weight and a long sum: the weight gradient is summed in several splits
    (float32 slices for fp16, added on the host), the same values as one: 72 positions
    in 4 splits of 18, for 1 x 2 tiles of the (4, 3 * 9) gradient."""
    monkeypatch.setattr(conv, "MIN_SPLIT_R", 16)
    with tp.dispatch.explain(file=False) as ex:
        check_conv((2, 3, 6, 6), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1,
                   mask=(False, True, False))
        check_conv((2, 3, 6, 6), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1,
                   mask=(False, True, False), dtype=tp.float16, tol=1e-2)
    launches = [line for line in ex.lines if "conv weight grad" in line and "grid=" in line]
    assert len(launches) == 2 and all("grid=(2, 1, 4)" in line for line in launches), launches


def test_conv_grad_weight_of_a_channels_last_weight_is_channels_last():
    x = make((2, 3, 5, 5)).cuda()
    w = make((4, 3, 3, 3), seed=1).cuda().to(memory_format=tp.channels_last)
    g = make((2, 4, 3, 3), seed=2).cuda()
    _, gw, _ = tp.convolution_backward(g, x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0],
                                       1, [False, True, False])
    assert gw.is_contiguous(memory_format=tp.channels_last)
    ref = torch.ops.aten.convolution_backward(torch_of(g), torch_of(x), torch_of(w), None,
                                              [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
                                              [False, True, False])[1]
    close(gw, ref, 1e-5, 1e-5)


def test_conv_through_autograd():
    """F.conv2d forward and backward: autograd reaches convolution_backward."""
    x, w, b = make((2, 4, 5, 6), seed=7), make((4, 2, 3, 3), seed=8), make((4,), seed=9)
    xc, wc, bc = (t.cuda().requires_grad_() for t in (x, w, b))
    out = NF.conv2d(xc, wc, bc, (1, 2), (1, 1), (1, 1), 2)
    (out * out).sum().backward()
    tx, tw, tb = (torch_of(t).requires_grad_() for t in (x, w, b))
    ref = torch.nn.functional.conv2d(tx, tw, tb, (1, 2), (1, 1), (1, 1), 2)
    (ref * ref).sum().backward()
    close(out, ref, 1e-5, 1e-5)
    for got, expected in ((xc.grad, tx.grad), (wc.grad, tw.grad), (bc.grad, tb.grad)):
        close(got, expected, 1e-5, 1e-4)


def test_more_than_three_spatial_dims_is_a_typed_error():
    x, w = make((1, 1, 2, 2, 2, 2)).cuda(), make((1, 1, 1, 1, 1, 1)).cuda()
    with pytest.raises(ShapeError, match=r"convolution\(\): the cuda kernels handle 1 to 3 "
                                         r"spatial dims, but argument 'input' has 4"):
        tp.convolution(x, w, None, [1] * 4, [0] * 4, [1] * 4, False, [0] * 4, 1)


def test_explain_shows_the_implicit_gemm():
    """One launch per direction, no window matrix (im2col) and no matmul; float32 in IEEE
    precision unless tp.backends.cuda.matmul.allow_tf32, fp16 in tensor-core form."""
    x, w = make((1, 2, 4, 4)).cuda(), make((3, 2, 2, 2)).cuda()

    def launches(x, w):
        with tp.dispatch.explain(file=False) as ex:
            tp.convolution(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
        return [line for line in ex.lines if "grid=" in line]
    text = "\n".join(launches(x, w))
    assert "conv (implicit GEMM) grid=" in text and "PRECISION=ieee" in text
    assert "im2col" not in text and "matmul" not in text
    before = tp.backends.cuda.matmul.allow_tf32
    tp.backends.cuda.matmul.allow_tf32 = True
    try:
        assert "PRECISION=tf32" in "\n".join(launches(x, w))
    finally:
        tp.backends.cuda.matmul.allow_tf32 = before
    half = "\n".join(launches(x.half(), w.half()))
    assert "PRECISION=tf32" in half and "UPCAST=True" in half     # (the interpreter's bf16)


def test_conv_configs_are_autotuned_per_bucket():
    """With autotuning on, each config computes the same values, the fastest is kept per
    bucket of the GEMM sizes, and the next call in the bucket reuses it."""
    before = autotune.options.enabled
    tp.dispatch.enable_autotune()
    try:
        check_conv(*CASES["3x3 padded"])
        kept = autotune.choices("conv")
        # M = 2 * 6 * 7 = 84, O = 6, K = 5 * 9 = 45: one key per addressing
        assert ((128, 8, 64), False, False, "float32") in kept
        assert ((128, 8, 64), True, False, "float32") in kept
        assert all(len(choice.times) == len(conv.CONFIGS) for choice in kept.values())
        assert autotune.choices("conv weight grad")
        with tp.dispatch.explain(file=False) as ex:
            check_conv(*CASES["3x3 padded"], mask=(False, False, True))
        assert any("kept from the measurement" in line for line in ex.lines)
    finally:
        autotune.options.enabled = before
        autotune.bump_version()


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

