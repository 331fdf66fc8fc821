"""tp.nn.functional convolutions against PyTorch: argument forms the `convolution` op
does not take itself (ints for tuples, padding="same"/"valid", unbatched inputs), the
output_mask of convolution_backward, and higher-order gradients through F.conv2d."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay.autograd import gradcheck, gradgradcheck
from tensorplay.errors import ArgumentError, ShapeError

RNG = np.random.default_rng(7)


def pair(*shape, requires_grad=True):
    a = RNG.standard_normal(shape)
    return (tp.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


CASES = [
    ("conv1d", (2, 3, 9), (4, 3, 3), dict(stride=2, padding=1)),
    ("conv1d", (3, 8), (2, 3, 4), dict(padding="same", dilation=2)),       # unbatched
    ("conv2d", (2, 4, 7, 6), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 2),
                                                 dilation=(1, 2), groups=2)),
    ("conv2d", (1, 2, 5, 6), (3, 2, 2, 3), dict(padding="same")),          # odd total pad
    ("conv2d", (1, 2, 5, 6), (3, 2, 2, 3), dict(padding="valid")),
    ("conv3d", (1, 2, 4, 3, 4), (3, 2, 2, 2, 3), dict(padding=1, stride=(1, 2, 1))),
    ("conv_transpose1d", (2, 3, 5), (3, 2, 3), dict(stride=3, padding=1, output_padding=2,
                                                     dilation=3)),
    ("conv_transpose2d", (2, 4, 4, 3), (4, 3, 3, 2), dict(stride=(2, 3), padding=(1, 0),
                                                           output_padding=(1, 2), groups=2)),
    ("conv_transpose2d", (4, 3, 3), (4, 2, 3, 3), dict(stride=2)),        # unbatched
    ("conv_transpose3d", (1, 2, 2, 3, 2), (2, 2, 2, 2, 2), dict(stride=2, padding=1)),
]


@pytest.mark.parametrize("name, x_shape, w_shape, kwargs", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_functional_conv_matches_torch(name, x_shape, w_shape, kwargs):
    x, tx = pair(*x_shape)
    w, tw = pair(*w_shape)
    groups = kwargs.get("groups", 1)
    b, tb = pair(w_shape[1] * groups if "transpose" in name else w_shape[0])
    y = getattr(F, name)(x, w, b, **kwargs)
    ty = getattr(TF, name)(tx, tw, tb, **kwargs)
    assert tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), atol=1e-10)
    g = RNG.standard_normal(tuple(ty.shape))
    (y * tp.tensor(g)).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    for a, ta in ((x, tx), (w, tw), (b, tb)):
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), atol=1e-10)


# Stride 1 runs through the CPU kernel's run layout (flat padded planes, garbage columns
# cropped from the output and fed zero gradients): padding, dilation, groups, kernels as
# large as the padded input (one output row), 1x1 kernels, 1-3 spatial dims.
RUN_CASES = [
    ("conv1d", (2, 3, 9), (4, 3, 3), dict(padding=2, dilation=2)),
    ("conv2d", (3, 4, 5, 7), (6, 2, 3, 2), dict(padding=(2, 1), dilation=(2, 1), groups=2)),
    ("conv2d", (2, 1, 4, 4), (3, 1, 4, 4), {}),
    ("conv2d", (2, 1, 3, 2), (3, 1, 5, 3), dict(padding=1)),
    ("conv2d", (2, 3, 6, 5), (4, 3, 1, 1), {}),
    ("conv2d", (2, 3, 5, 4), (2, 3, 3, 2), dict(padding=(1, 2))),      # rows keep own padding
    ("conv3d", (2, 4, 3, 4, 5), (4, 2, 2, 3, 2), dict(padding=(1, 0, 2), dilation=(1, 1, 2),
                                                      groups=2)),
    ("conv2d", (4, 16, 8, 8), (32, 16, 3, 3), dict(padding=1)),          # the digits CNN
    ("conv_transpose2d", (2, 3, 4, 5), (3, 2, 3, 2), dict(padding=(1, 0), dilation=2)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name, x_shape, w_shape, kwargs", RUN_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(RUN_CASES)])
def test_stride_one_convs_match_torch(name, x_shape, w_shape, kwargs, dtype):
    rng = np.random.default_rng(3)
    groups = kwargs.get("groups", 1)
    b_shape = (w_shape[1] * groups if "transpose" in name else w_shape[0],)
    arrays = [rng.standard_normal(s).astype(dtype) for s in (x_shape, w_shape, b_shape)]
    ours = [tp.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = getattr(F, name)(*ours, **kwargs)
    ty = getattr(TF, name)(*theirs, **kwargs)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    assert y.dtype == getattr(tp, dtype) and tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), **tol)
    g = rng.standard_normal(tuple(ty.shape)).astype(dtype)
    (y * tp.tensor(g)).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    for a, ta in zip(ours, theirs):
        assert a.grad.dtype == a.dtype
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), **tol)


@pytest.mark.parametrize("mask", [[True, False, False], [False, True, False],
                                  [True, True, True]])
def test_convolution_backward_mask_stride_one(mask):
    _backward_mask_matches_torch((2, 2, 5, 4), (3, 2, 2, 3), (2, 3, 5, 6),
                                 ((1, 1), (1, 2), (2, 1), False, (0, 0), 1, mask))


def _backward_mask_matches_torch(x_shape, w_shape, g_shape, args):
    """convolution_backward computes the gradients the mask (args' last) asks for, equal
    to PyTorch's, and None for the others."""
    x, tx = pair(*x_shape, requires_grad=False)
    w, tw = pair(*w_shape, requires_grad=False)
    g, tg = pair(*g_shape, requires_grad=False)
    got = tp.convolution_backward(g, x, w, (w_shape[0],), *args)
    want = torch.ops.aten.convolution_backward(tg, tx, tw, [w_shape[0]], *args)
    for a, e in zip(got, want):
        assert (a is None) == (e is None)
        if e is not None:
            np.testing.assert_allclose(a.numpy(), e.numpy(), atol=1e-10)


def test_conv2d_gradgradcheck_with_padding_same():
    x, _ = pair(1, 2, 4, 3)
    w, _ = pair(2, 2, 2, 2)
    b, _ = pair(2)
    fn = lambda x, w, b: F.conv2d(x, w, b, padding="same")   # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


@pytest.mark.parametrize("mask", [[True, False, False], [False, True, False],
                                  [False, False, True], [True, False, True]])
def test_convolution_backward_mask(mask):
    x, tx = pair(2, 2, 5, 4, requires_grad=False)
    w, tw = pair(3, 2, 2, 3, requires_grad=False)
    g, tg = pair(2, 3, 2, 2, requires_grad=False)
    args = ((2, 1), (0, 0), (1, 1), False, (0, 0), 1, mask)
    got = tp.convolution_backward(g, x, w, (3,), *args)
    want = torch.ops.aten.convolution_backward(tg, tx, tw, [3], *args)
    for a, e in zip(got, want):
        assert (a is None) == (e is None)
        if e is not None:
            np.testing.assert_allclose(a.numpy(), e.numpy(), atol=1e-10)
    meta = tp.convolution_backward(g.to("meta"), x.to("meta"), w.to("meta"), (3,), *args)
    assert [m is None for m in meta] == [not m for m in mask]


def test_first_layer_computes_no_input_gradient():
    """The input of a first layer needs no gradient: only grad_weight and grad_bias run."""
    from opinfo.core import record_calls
    x, _ = pair(1, 2, 4, 4, requires_grad=False)
    w, _ = pair(3, 2, 3, 3)
    y = F.conv2d(x, w)
    with record_calls() as called:
        y.sum().backward()
    assert "convolution_backward" in called and x.grad is None and w.grad is not None


def _kernels_run(fn):
    """[(op name, kernel name)] of the convolution ops `fn()` runs, forward and backward."""
    with tp.profiler.profile() as prof:
        fn()
    return [(e.name, e.kernel) for e in prof.events if e.name.startswith("convolution")]


def test_one_convolution_backward_call_for_all_gradients():
    """As PyTorch's: input, weight and bias gradients from one call (the output mask), the
    same-size candidates taking the digits CNN's layer (3x3, padding 1), the per-image
    ones a convolution without padding (36 output positions per image)."""
    x, tx = pair(4, 16, 8, 8)
    w, tw = pair(32, 16, 3, 3)
    b, tb = pair(32)
    for padding, kernels in ((1, ("convolution_same", "convolution_backward_same")),
                             (0, ("convolution_per_image",
                                  "convolution_backward_transposed_input"))):
        for a in (x, w, b):
            a.grad = None
        for a in (tx, tw, tb):
            a.grad = None
        ran = _kernels_run(lambda: F.conv2d(x, w, b, padding=padding).sum().backward())
        assert ran == [("convolution", f"cpu_kernels.conv.{kernels[0]}"),
                       ("convolution_backward", f"cpu_kernels.conv.{kernels[1]}")]
        TF.conv2d(tx, tw, tb, padding=padding).sum().backward()
        for a, ta in ((x, tx), (w, tw), (b, tb)):
            np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10,
                                       atol=1e-10)
    # An image of 3 x 3 outputs: one wide product, col2im for the input gradient.
    x2, _ = pair(2, 2, 5, 5)
    ran = _kernels_run(lambda: F.conv2d(x2, w[:, :2], stride=2).sum().backward())
    assert ran == [("convolution", "cpu_kernels.conv.convolution"),
                   ("convolution_backward", "cpu_kernels.conv.convolution_backward")]


def test_kept_columns_serve_only_their_own_input():
    """The forward's columns stay for the backward of the same input; a later forward of
    another input of the same shape replaces them, and an earlier conv's backward then
    makes its own columns again."""
    x1, tx1 = pair(2, 3, 6, 6)
    x2, tx2 = pair(2, 3, 6, 6)
    w, tw = pair(4, 3, 3, 3)
    y1 = F.conv2d(x1, w, padding=1)
    y2 = F.conv2d(x2, w, padding=1)
    (y1 * 2).sum().backward()
    y2.sum().backward()
    (TF.conv2d(tx1, tw, padding=1) * 2).sum().backward()
    TF.conv2d(tx2, tw, padding=1).sum().backward()
    for a, ta in ((x1, tx1), (x2, tx2), (w, tw)):
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-10)


# The same-size candidates (stride 1, padding d*(k-1)/2: cpu_kernels/_conv_same.py): square
# and oblong kernels, no row padding (1 x 3), dilation, padding wider than the image (5 x 5
# on a 1-pixel-wide image: wrapped reads reach the buffer's ends), a 1x1 kernel on a
# non-contiguous input, no bias; each with fewer output than input channels or as many
# (grad_input as the adjoint convolution) and with more (grad_input by col2im).
SAME_CASES = [
    ((4, 16, 8, 8), (32, 16, 3, 3), dict(padding=1), True),             # the digits CNN
    ((3, 2, 5, 7), (3, 2, 5, 3), dict(padding=(2, 1)), True),
    ((5, 2, 4, 6), (3, 2, 1, 3), dict(padding=(0, 1)), True),
    ((2, 3, 7, 5), (2, 3, 3, 3), dict(padding=(2, 3), dilation=(2, 3)), False),
    ((2, 2, 7, 5), (3, 2, 3, 3), dict(padding=(2, 3), dilation=(2, 3)), False),
    ((3, 2, 3, 1), (2, 2, 5, 5), dict(padding=2), True),
    ((3, 2, 3, 1), (4, 2, 5, 5), dict(padding=2), True),
    ((2, 3, 4, 5), (4, 3, 1, 1), {}, "transposed"),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("x_shape, w_shape, kwargs, bias", SAME_CASES)
def test_same_size_candidates_match_torch(x_shape, w_shape, kwargs, bias, dtype):
    """Values and the three gradients as PyTorch's, from convolution_same and
    convolution_backward_same, for two batch sizes (each its own column plan)."""
    rng = np.random.default_rng(11)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    for batch in (x_shape[0], 1):
        shape = (batch,) + x_shape[1:]
        arrays = [rng.standard_normal(s).astype(dtype) for s in (shape, w_shape, w_shape[:1])]
        ours = [tp.tensor(a, requires_grad=True) for a in arrays]
        theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
        x, tx = ours[0], theirs[0]
        if bias == "transposed":   # a non-contiguous input (the 1x1 candidate wants one)
            x = ours[0].detach().transpose(2, 3).contiguous().transpose(2, 3)
            x.requires_grad_()
            ours[0] = x
        b, tb = (ours[2], theirs[2]) if bias else (None, None)
        g = rng.standard_normal(tuple(TF.conv2d(tx, theirs[1], tb, **kwargs).shape))
        y = None

        def run():
            nonlocal y
            y = F.conv2d(x, ours[1], b, **kwargs)
            (y * tp.tensor(g.astype(dtype))).sum().backward()
        ran = _kernels_run(run)
        assert ran == [("convolution", "cpu_kernels.conv.convolution_same"),
                       ("convolution_backward", "cpu_kernels.conv.convolution_backward_same")]
        ty = TF.conv2d(tx, theirs[1], tb, **kwargs)
        (ty * torch.tensor(g.astype(dtype))).sum().backward()
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), **tol)
        for a, ta in zip(ours, theirs):
            if ta.grad is not None:
                assert a.grad.dtype == a.dtype
                np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), **tol)


def test_same_size_candidates_gradcheck():
    x, _ = pair(2, 2, 4, 3)
    w, _ = pair(3, 2, 3, 3)
    b, _ = pair(3)
    fn = lambda x, w, b: F.conv2d(x, w, b, padding=1)   # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


@pytest.mark.parametrize("mask", [[True, False, False], [False, True, False],
                                  [False, False, True], [False, True, True]])
def test_same_size_backward_mask(mask):
    """convolution_backward_same computes what the mask asks, None elsewhere (grad_bias
    with grad_weight comes from the same product, alone from a sum)."""
    _backward_mask_matches_torch((2, 2, 5, 4), (3, 2, 3, 3), (2, 3, 5, 4),
                                 ((1, 1), (1, 1), (1, 1), False, (0, 0), 1, mask))


def test_same_size_candidates_on_an_empty_batch():
    """No images: an empty output, zero grad_weight and grad_bias, PyTorch's shapes."""
    x, tx = pair(0, 2, 5, 5)
    w, tw = pair(3, 2, 3, 3)
    b, tb = pair(3)
    y = F.conv2d(x, w, b, padding=1)
    y.sum().backward()
    ty = TF.conv2d(tx, tw, tb, padding=1)
    ty.sum().backward()
    assert tuple(y.shape) == tuple(ty.shape)
    for a, ta in ((x, tx), (w, tw), (b, tb)):
        assert tuple(a.grad.shape) == tuple(ta.grad.shape)
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), atol=1e-12)


ROW_FORM_CASES = [
    ((2, 3, 6, 5), (4, 3, 3, 3), dict(padding=1)),
    ((2, 4, 5, 7), (6, 4, 3, 2), dict(padding=1, dilation=(2, 1))),
    ((2, 3, 6, 6), (4, 3, 3, 3), {}),
    ((2, 3, 6, 6), (4, 3, 3, 3), dict(padding=2)),
]


@pytest.mark.parametrize("x_shape, w_shape, kwargs", ROW_FORM_CASES)
def test_channels_last_row_form_matches_torch(x_shape, w_shape, kwargs):
    """A channels_last call runs the row form (rows @ W^T, NHWC in and out, no layout
    conversion): PyTorch's values, gradients and channels_last strides."""
    x, tx = pair(*x_shape)
    x = x.detach().contiguous(memory_format=tp.channels_last).requires_grad_()
    tx = tx.detach().contiguous(memory_format=torch.channels_last).requires_grad_()
    w, tw = pair(*w_shape)
    b, tb = pair(w_shape[0])
    g = RNG.standard_normal(tuple(TF.conv2d(tx, tw, tb, **kwargs).shape))
    y = None

    def run():
        nonlocal y
        y = F.conv2d(x, w, b, **kwargs)
        (y * tp.tensor(g)).sum().backward()
    ran = _kernels_run(run)
    ty = TF.conv2d(tx, tw, tb, **kwargs)
    (ty * torch.tensor(g)).sum().backward()
    assert ran == [("convolution", "cpu_kernels.conv.convolution_nhwc"),
                   ("convolution_backward", "cpu_kernels.conv.convolution_backward_nhwc")]
    assert y.stride() == ty.stride() and x.grad.stride() == tx.grad.stride()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    for a, ta in ((x, tx), (w, tw), (b, tb)):
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("padding", [0, 1])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_batch_in_chunks_matches_torch(monkeypatch, layout, padding):
    """Columns (rows) larger than CHUNK_BYTES are made a chunk of the batch at a time (here
    two images per chunk, one in the last): the same values and gradients. Padding 1 is
    the same-size candidate's (contiguous), padding 0 the run layout's."""
    from cpu_kernels import _conv_same, conv
    monkeypatch.setattr(conv, "CHUNK_BYTES", 2 * 3 * 9 * 6 * 7 * 8)
    monkeypatch.setattr(_conv_same, "CHUNK_BYTES", 2 * 4 * 9 * 6 * 6 * 8)
    x, tx = pair(5, 3, 6, 6)
    if layout == "channels_last":
        x = x.detach().contiguous(memory_format=tp.channels_last).requires_grad_()
        tx = tx.detach().contiguous(memory_format=torch.channels_last).requires_grad_()
    w, tw = pair(4, 3, 3, 3)
    b, tb = pair(4)
    size = 6 - 2 + 2 * padding
    g = RNG.standard_normal((5, 4, size, size))
    y = F.conv2d(x, w, b, padding=padding)
    (y * tp.tensor(g)).sum().backward()
    ty = TF.conv2d(tx, tw, tb, padding=padding)
    (ty * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    for a, ta in ((x, tx), (w, tw), (b, tb)):
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("bad", ["input", "weight"])
def test_non_finite_values_give_torch_gradients(bad, layout):
    """The run layout's garbage positions get zero gradients; a non-finite value they read
    (0 * inf = NaN) must not reach a real gradient, as it does not in PyTorch's."""
    x, tx = pair(2, 3, 6, 6, requires_grad=False)
    w, tw = pair(4, 3, 3, 3, requires_grad=False)
    if layout == "channels_last":
        x = x.contiguous(memory_format=tp.channels_last)
        tx = tx.contiguous(memory_format=torch.channels_last)
    target = (x, tx) if bad == "input" else (w, tw)
    target[0].numpy()[0, 1, 2, 2] = np.inf        # a view: the tensor's own memory
    target[1].detach()[0, 1, 2, 2] = np.inf
    for a in (x, w, tx, tw):
        a.requires_grad_()
    g = np.random.default_rng(5).standard_normal((2, 4, 6, 6))
    (F.conv2d(x, w, padding=1) * tp.tensor(g)).sum().backward()
    (TF.conv2d(tx, tw, padding=1) * torch.tensor(g)).sum().backward()
    for a, ta in ((x, tx), (w, tw)):
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("call, error, regex, arg", [
    (lambda x, w: F.conv2d(x[0, 0], w), ShapeError, r"conv2d\(\): expected argument 'input' "
     r"to be 3-D \(unbatched\) or 4-D \(batched\), but got 2-D", "input"),
    (lambda x, w: F.conv2d(x, w, padding="full"), ArgumentError,
     r"conv2d\(\): argument 'padding' must be 'valid', 'same' or ints", "padding"),
    (lambda x, w: F.conv2d(x, w, padding="same", stride=2), ArgumentError,
     r"conv2d\(\): padding='same' is not supported for strided convolutions", "padding"),
    (lambda x, w: F.conv2d(x, w, stride=(1, 2, 3)), ArgumentError,
     r"conv2d\(\): argument 'stride' must be an int or a sequence of 2 ints", "stride"),
    (lambda x, w: F.conv2d(x, w, groups=2), ShapeError,
     r"convolution\(\): argument 'weight' .* divisible by groups=2", "weight"),
    (lambda x, w: F.conv2d(x, w[:, :1]), ShapeError,
     r"convolution\(\): expected argument 'input' .* to have 1 channels", "input"),
])
def test_functional_conv_errors(call, error, regex, arg):
    x, _ = pair(1, 2, 5, 5, requires_grad=False)
    w, _ = pair(3, 2, 3, 3, requires_grad=False)
    with pytest.raises(error, match=regex) as info:
        call(x, w)
    assert info.value.arg == arg
