"""PyTorch's legacy layers: CrossMapLRN2d (Lua Torch's running-sum window) and the
deprecated Container."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp
import tensorplay.nn as nn
from tensorplay.autograd import gradcheck
from tensorplay.errors import ShapeError


@pytest.mark.parametrize("size, channels", [(5, 7), (3, 4), (1, 3), (4, 2), (2, 6)])
def test_cross_map_lrn2d_matches_torch(size, channels):
    x = np.random.default_rng(size).standard_normal((2, channels, 3, 2))
    y = nn.CrossMapLRN2d(size, 0.5, 0.75, 1.5)(tp.tensor(x))
    ty = torch.nn.CrossMapLRN2d(size, 0.5, 0.75, 1.5)(torch.tensor(x))
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-12, atol=1e-14)
    assert repr(nn.CrossMapLRN2d(size)) == repr(torch.nn.CrossMapLRN2d(size))


def test_cross_map_lrn2d_gradient_is_its_forwards():
    """The gradient is autograd's through the forward. (PyTorch's hand-written backward
    assumes a symmetric window its forward does not use, and fails for size=1.)"""
    x = tp.tensor(np.random.default_rng(0).standard_normal((1, 5, 2, 2)), requires_grad=True)
    assert gradcheck(lambda t: nn.CrossMapLRN2d(3, 0.5, 0.75, 1.5)(t), (x,))


def test_cross_map_lrn2d_needs_4d():
    with pytest.raises(ShapeError, match=r"CrossMapLRN2d.forward\(\): expected argument "
                                         r"'input' to be 4-D, got 3-D") as info:
        nn.CrossMapLRN2d(3)(tp.ones(1, 2, 3))
    assert info.value.arg == "input"


def test_container_is_deprecated_and_holds_its_kwargs():
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        box = nn.Container(fc=nn.Linear(2, 3), act=nn.ReLU())
    assert [name for name, _ in box.named_children()] == ["fc", "act"]
    assert len(list(box.parameters())) == 2


def _adaptive_pair():
    torch.manual_seed(0)
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0,
                                            head_bias=True).double()
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=True,
                                      dtype=tp.float64)
    m.load_state_dict({k: tp.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    assert repr(m) == repr(t)
    return m, t


def test_adaptive_log_softmax_matches_torch():
    m, t = _adaptive_pair()
    x = np.random.default_rng(0).standard_normal((6, 8))
    y = [0, 4, 9, 2, 7, 5]
    a, b = tp.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, tout = m(a, tp.tensor(y)), t(b, torch.tensor(y))
    np.testing.assert_allclose(out.output.detach().numpy(), tout.output.detach().numpy(),
                               atol=1e-12)
    out.loss.backward()
    tout.loss.backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(m.head.weight.grad.numpy(), t.head.weight.grad.numpy(),
                               atol=1e-12)
    np.testing.assert_allclose(m.log_prob(tp.tensor(x)).detach().numpy(),
                               t.log_prob(torch.tensor(x)).detach().numpy(), atol=1e-12)
    assert m.predict(tp.tensor(x)).tolist() == t.predict(torch.tensor(x)).tolist()
    single = m(tp.tensor(x[0]), tp.tensor(9)).output
    assert abs(single.item() - t(torch.tensor(x[0]), torch.tensor(9)).output.item()) < 1e-12


def test_adaptive_log_softmax_errors():
    m, _ = _adaptive_pair()
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])
    with pytest.raises(tp.errors.DimError, match=r"Target values should be in \[0, 9\]"):
        m(tp.ones(2, 8, dtype=tp.float64), tp.tensor([1, 10]))
    with pytest.raises(ShapeError, match="multi-target not supported"):
        m(tp.ones(2, 8, dtype=tp.float64), tp.tensor([[1]]))


@pytest.mark.parametrize("out_features, bias, options, target_kind", [
    ((), True, None, "index"), ((), False, "default", "index"), ((), True, "chunks", "index"),
    ((4, 3), False, None, "index"), ((2,), True, None, "probs")])
def test_linear_cross_entropy_loss_matches_torch(out_features, bias, options, target_kind):
    torch.manual_seed(1)
    smoothing = 0.0 if options else 0.1     # (PyTorch chunks only without smoothing)
    topts = {None: None, "default": torch.nn.LinearCrossEntropyOptions(),
             "chunks": torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2)}[options]
    opts = {None: None, "default": nn.LinearCrossEntropyOptions(),
            "chunks": nn.LinearCrossEntropyOptions(batch_chunk_size=2)}[options]
    t = torch.nn.LinearCrossEntropyLoss(5, 6, out_features=out_features, bias=bias,
                                        dtype=torch.float64, label_smoothing=smoothing,
                                        options=topts)
    m = nn.LinearCrossEntropyLoss(5, 6, out_features=out_features, bias=bias,
                                  dtype=tp.float64, label_smoothing=smoothing, options=opts)
    m.load_state_dict({k: tp.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    assert repr(m) == repr(t)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 5))
    if target_kind == "index":
        y = rng.integers(0, 6, (3,) + out_features)
    else:
        y = rng.random((3, 6) + out_features)
        y = y / y.sum(1, keepdims=True)
    a, b = tp.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    loss, tloss = m(a, tp.tensor(y)), t(b, torch.tensor(y))
    assert abs(loss.item() - tloss.item()) < 1e-12
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(m.linear.weight.grad.numpy(), t.linear.weight.grad.numpy(),
                               atol=1e-12)


def test_linear_cross_entropy_options_are_validated():
    for bad in (dict(acc_policy="fast"), dict(chunking_method="rows"),
                dict(batch_chunk_size=0)):
        with pytest.raises(ValueError):
            nn.LinearCrossEntropyOptions(**bad)
    assert repr(nn.LinearCrossEntropyOptions()) == repr(torch.nn.LinearCrossEntropyOptions())
