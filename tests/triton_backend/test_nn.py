"""The fused row kernels on `cuda` (triton_kernels/softmax.py, losses.py, dropout.py) against the CPU backend:
softmax / log_softmax forward and backward (one-pass rows and long, looped rows),
layer_norm, rms_norm, cross-entropy forward and backward, dropout; the fused norm and
activation backward ops (triton_kernels/normalization.py, gelu_backward / silu_backward)
against PyTorch on both devices, and double backward through them."""
import numpy as np
import pytest

from triton_util import CUDA, assert_same, make

import tensorplay as tp
import tensorplay.nn.functional as NF
from tensorplay.errors import DimError
from triton_kernels import _rows

X = make((4, 6, 5), seed=1)
TARGET = tp.tensor([0, 4, 2, 2, 1, 3])


def check(fn, *args, rtol=1e-5, atol=1e-6):
    def on(device):
        out = fn(*[a.to(device) if isinstance(a, tp.Tensor) else a for a in args])
        return out if isinstance(out, tuple) else (out,)
    for got, expected in zip(on("cuda"), on("cpu")):
        assert_same(got, expected, rtol=rtol, atol=atol)


def grads(device, fn, *args):
    leaves = [a.to(device).detach().requires_grad_() if a.dtype.is_floating_point
              else a.to(device) for a in args]
    out = fn(*leaves)
    (out * tp.arange(float(out.numel()), device=device).view(out.shape)).sum().backward()
    return [leaf.grad for leaf in leaves if leaf.dtype.is_floating_point]


def check_grads(fn, *args, atol=1e-5):
    for got, expected in zip(grads("cuda", fn, *args), grads("cpu", fn, *args)):
        if expected is None:          # a non-differentiable input (cross-entropy's weight)
            assert got is None
        else:
            assert_same(got, expected, rtol=1e-4, atol=atol)


@pytest.mark.parametrize("dim", [-1, 1, 0])
def test_softmax_and_log_softmax_along_any_dim(dim):
    check(lambda t: tp.softmax(t, dim), X)
    check(lambda t: tp.log_softmax(t, dim), X)
    check_grads(lambda t: tp.softmax(t, dim), X)
    check_grads(lambda t: tp.log_softmax(t, dim), X)


def test_softmax_edge_rows_and_half_types():
    rows = tp.tensor([[1e4, 0.0, -float("inf")], [-float("inf")] * 3, [0.0, 0.0, 0.0]])
    check(lambda t: tp.softmax(t, -1), rows)
    check(lambda t: tp.log_softmax(t, -1), rows)
    check(lambda t: tp.softmax(t, -1), X.half(), rtol=1e-3, atol=1e-3)
    check(lambda t: tp.softmax(t, 0), tp.tensor(2.0))
    out = tp._softmax(X.half().cuda(), -1, True)     # half_to_float: the CUDA-only variant
    assert out.dtype is tp.float32 and out.device == CUDA


def test_long_rows_take_the_looped_kernels(monkeypatch):
    monkeypatch.setattr(_rows, "MAX_ONE_PASS", 8)
    x = make((3, 50), seed=2) * 10
    check(lambda t: tp.softmax(t, -1), x)
    check(lambda t: tp.log_softmax(t, -1), x)
    check_grads(lambda t: tp.softmax(t, -1), x)
    check(lambda t, y: NF.cross_entropy(t, y), x, tp.tensor([3, 49, 0]))


def test_layer_norm_and_rms_norm():
    w, b = make((5,), seed=3), make((5,), seed=4)
    check(lambda t, w, b: NF.layer_norm(t, [5], w, b), X, w, b)
    check(lambda t: NF.layer_norm(t, [6, 5]), X)
    check(lambda t: tp.native_layer_norm(t, [5], None, None, 1e-5), X)
    check(lambda t, w, b: NF.layer_norm(t, [5], w, b), X.to(tp.bfloat16), w.to(tp.bfloat16),
          b.to(tp.bfloat16), rtol=2e-2, atol=2e-2)
    check(lambda t, w: NF.rms_norm(t, [5], w), X, w)
    check(lambda t: tp._fused_rms_norm(t, [5], None, None), X.half(), rtol=1e-3, atol=1e-3)
    # The input gradient subtracts two row means of grad * weight (grad up to 119 here):
    # float32 rounding of those sums is ~1e-7 * 119 * 5 per element, and the CPU kernel
    # sums in PyTorch's order, the Triton kernel in its own; both are ~3e-5 from float64.
    check_grads(lambda t, w, b: NF.layer_norm(t, [5], w, b), X, w, b, atol=1e-4)
    check_grads(lambda t, w: NF.rms_norm(t, [5], w), X, w)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_forward_and_backward(reduction):
    logits = make((6, 5), seed=5)
    check(lambda t, y: NF.cross_entropy(t, y, reduction=reduction), logits, TARGET)
    weight = make((5,), low=0.1, high=1.0, seed=6)
    check(lambda t, y, w: NF.cross_entropy(t, y, weight=w, ignore_index=2,
                                           reduction=reduction), logits, TARGET, weight)
    check_grads(lambda t: NF.cross_entropy(t, TARGET.to(t.device), reduction=reduction),
                logits)
    check_grads(lambda t, w: NF.cross_entropy(t, TARGET.to(t.device), weight=w,
                                              ignore_index=2, reduction=reduction),
                logits, weight)


def test_cross_entropy_checks_targets_on_the_host():
    with pytest.raises(DimError, match=r"Target 7 is out of bounds"):
        NF.cross_entropy(make((2, 5)).cuda(), tp.tensor([1, 7], device="cuda"))
    ignored = NF.cross_entropy(make((2, 5)).cuda(), tp.tensor([-100, 1], device="cuda"))
    assert np.isfinite(ignored.item())


def test_dropout_is_reproducible_and_unbiased():
    x = tp.ones(20000, device="cuda")
    tp.manual_seed(3)
    a = NF.dropout(x, 0.3)
    tp.manual_seed(3)
    b = NF.dropout(x, 0.3)
    assert a.tolist() == b.tolist()
    values = np.asarray(a.cpu())
    np.testing.assert_allclose(np.unique(values), [0.0, 1 / 0.7], rtol=1e-6)
    assert abs(values.mean() - 1.0) < 0.03
    out, keep = tp.native_dropout(x, 0.5, False)
    assert out.tolist() == x.tolist() and keep.all().item()
    assert NF.dropout(x, 1.0).sum().item() == 0.0

    def grad(device):
        leaf = tp.ones(1000, device=device).requires_grad_()
        tp.manual_seed(4)
        y = NF.dropout(leaf, 0.25)
        y.sum().backward()
        return y, leaf.grad

    y, g = grad("cuda")
    assert g.tolist() == y.detach().tolist()      # d(x * keep * scale)/dx = keep * scale


def test_nll_loss_and_the_other_cross_entropy_forms():
    logp = tp.log_softmax(make((6, 5), seed=7), 1)
    check(lambda x, t: NF.nll_loss(x, t), logp, TARGET)
    check(lambda x, t: NF.nll_loss(x, t, reduction="none", ignore_index=4), logp, TARGET)
    images = make((2, 5, 3, 4), seed=8)                       # (N, C, d1, d2)
    labels = tp.tensor(np.random.default_rng(0).integers(0, 5, (2, 3, 4)))
    check(lambda x, t: NF.cross_entropy(x, t), images, labels)
    check(lambda x, t: NF.cross_entropy(x, t, label_smoothing=0.2), make((6, 5)), TARGET)
    check_grads(lambda x: NF.cross_entropy(x, labels.to(x.device)), images)
    check_grads(lambda x: NF.nll_loss(x, TARGET.to(x.device), reduction="sum"), logp)


def test_binary_cross_entropy_with_logits():
    x, y = make((3, 4), low=-30, high=30, seed=9), make((3, 4), low=0, high=1, seed=10)
    pos = make((4,), low=0.5, high=2, seed=11)
    for reduction in ("mean", "sum", "none"):
        check(lambda a, b: NF.binary_cross_entropy_with_logits(a, b, reduction=reduction), x, y)
    check(lambda a, b, p: NF.binary_cross_entropy_with_logits(a, b, pos_weight=p), x, y, pos)
    check_grads(lambda a: NF.binary_cross_entropy_with_logits(a, y.to(a.device)), x)


# ---- the fused backward ops, against PyTorch on both devices --------------------------------
def _torch(t):
    import torch
    return torch.from_numpy(np.asarray(t.detach().cpu()).astype(np.float64))


def _assert_torch(got, expected, tol):
    assert got is not None
    np.testing.assert_allclose(np.asarray(got.detach().cpu()).astype(np.float64),
                               expected.detach().numpy(), rtol=tol, atol=tol)


def _layer_norm_backward_vs_torch(device, shape, k, dtype, affine, tol):
    """native_layer_norm_backward (and _fused_rms_norm_backward) on `device` against
    PyTorch's float64 autograd of layer_norm (rms_norm) at the same values."""
    import torch
    x, g = make(shape, dtype, seed=20), make(shape, dtype, seed=21)
    norm = list(shape[len(shape) - k:])
    w = make(norm, dtype, low=0.5, high=1.5, seed=22) if affine else None
    b = make(norm, dtype, seed=23) if affine else None
    on = [None if t is None else t.to(device) for t in (x, g, w, b)]
    xd, gd, wd, bd = on
    gd = gd.t().contiguous().t() if len(shape) == 2 else gd      # a column-major grad_out
    tx = _torch(x).requires_grad_()
    tw, tb = [None if t is None else _torch(t).requires_grad_() for t in (w, b)]
    mask = [True, affine, affine]

    _, mean, rstd = tp.native_layer_norm(xd, norm, wd, bd, 1e-5)
    got = tp.native_layer_norm_backward(gd, xd, norm, mean, rstd, wd, bd, mask)
    torch.nn.functional.layer_norm(tx, norm, tw, tb, 1e-5).backward(_torch(g))
    for out, leaf in zip(got, (tx, tw, tb)):
        if leaf is None:
            assert out is None
        else:
            assert out.device.type == device and out.dtype is dtype
            _assert_torch(out, leaf.grad, tol)

    tx.grad = None
    tw = None if w is None else _torch(w).requires_grad_()
    _, rstd = tp._fused_rms_norm(xd, norm, wd, 1e-5)
    got = tp._fused_rms_norm_backward(gd, xd, norm, rstd, wd, mask[:2])
    torch.nn.functional.rms_norm(tx, norm, tw, 1e-5).backward(_torch(g))
    _assert_torch(got[0], tx.grad, tol)
    if affine:
        _assert_torch(got[1], tw.grad, tol)
    else:
        assert got[1] is None


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("shape, k", [((3, 7), 1), ((20, 5), 1), ((2, 3, 4), 2), ((0, 4), 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_norm_backward_ops_match_pytorch(device, shape, k, affine):
    # (20, 5): more rows than the backward kernel's programs, so each sums several rows.
    _layer_norm_backward_vs_torch(device, shape, k, tp.float32, affine, 1e-4)


@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16, tp.float64])
def test_norm_backward_ops_in_other_dtypes(dtype):
    tol = {tp.float16: 2e-2, tp.bfloat16: 8e-2, tp.float64: 1e-10}[dtype]
    _layer_norm_backward_vs_torch("cuda", (6, 9), 1, dtype, True, tol)


def test_long_rows_take_the_looped_norm_backward(monkeypatch):
    from triton_kernels import normalization as norm_fused
    monkeypatch.setattr(norm_fused, "BACKWARD_ONE_PASS", 8)
    monkeypatch.setattr(norm_fused, "PROGRAMS", 2)
    _layer_norm_backward_vs_torch("cuda", (5, 50), 1, tp.float32, True, 1e-4)


def test_plain_backward_takes_the_fused_norm_kernel(monkeypatch):
    from triton_kernels import normalization as norm_fused
    launched = []

    def spy(name, kernel, *args, **meta):
        launched.append(name)
        return launch(name, kernel, *args, **meta)
    launch = norm_fused.launch
    monkeypatch.setattr(norm_fused, "launch", spy)
    w, b = make((5,), seed=3).cuda(), make((5,), seed=4).cuda()
    x = X.cuda().requires_grad_()
    NF.layer_norm(x, [5], w, b).sum().backward()
    assert launched == ["native_layer_norm", "native_layer_norm_backward"]
    launched.clear()
    (g,) = tp.autograd.grad(NF.rms_norm(x, [5], w).sum(), [x], create_graph=True)
    assert launched == ["_fused_rms_norm"] and g.requires_grad   # composed, differentiable


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_activation_backward_ops_match_pytorch(device):
    import torch
    x, g = make((4, 6), seed=30, low=-6, high=6), make((4, 6), seed=31)
    for approximate in ("none", "tanh"):
        got = tp.gelu_backward(g.to(device), x.to(device), approximate=approximate)
        _assert_torch(got, torch.ops.aten.gelu_backward(_torch(g), _torch(x),
                                                        approximate=approximate), 1e-5)
    _assert_torch(tp.silu_backward(g.to(device), x.to(device)),
                  torch.ops.aten.silu_backward(_torch(g), _torch(x)), 1e-5)
    half = tp.silu_backward(g.half().to(device), x.to(device))   # promotes to float32
    assert half.dtype is tp.float32 and half.device.type == device


# (cuda under the interpreter takes 20 s: in the slow set; the formulas are the same on
# both devices, and the CPU case runs by default)
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.slow)])
def test_double_backward_through_the_fused_backwards(device):
    from tensorplay.autograd import gradgradcheck
    x = make((3, 4), tp.float64, seed=40).to(device).requires_grad_()
    w = make((4,), tp.float64, low=0.5, high=1.5, seed=41).to(device).requires_grad_()
    b = make((4,), tp.float64, seed=42).to(device).requires_grad_()
    assert gradgradcheck(lambda a, c, d: NF.layer_norm(a, [4], c, d), (x, w, b))
    assert gradgradcheck(lambda a, c: NF.rms_norm(a, [4], c, 1e-5), (x, w))
    assert gradgradcheck(lambda a: NF.gelu(a), (x,))
    assert gradgradcheck(lambda a: NF.gelu(a, approximate="tanh"), (x,))
    assert gradgradcheck(lambda a: NF.silu(a), (x,))
