"""The fused row kernels on `cuda` (triton_kernels/nn_fused.py) against the CPU backend:
softmax / log_softmax forward and backward (one-pass rows and long, looped rows),
layer_norm, rms_norm, cross-entropy forward and backward, dropout."""
import numpy as np
import pytest

from triton_util import CUDA, assert_same, make

import tensorplay as tp
import tensorplay.nn.functional as NF
from tensorplay.errors import DimError
from triton_kernels import nn_fused

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


def check_grads(fn, *args):
    for got, expected in zip(grads("cuda", fn, *args), grads("cpu", fn, *args)):
        if expected is None:          # a non-differentiable input (cross-entropy's weight)
            assert got is None
        else:
            assert_same(got, expected, rtol=1e-4, atol=1e-5)


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
    monkeypatch.setattr(nn_fused, "MAX_ONE_PASS", 8)
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
    check_grads(lambda t, w, b: NF.layer_norm(t, [5], w, b), X, w, b)
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
