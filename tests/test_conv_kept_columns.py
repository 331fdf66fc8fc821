"""The same-size convolution's forward keeps its columns for the weight gradient
(cpu_kernels/_conv_same.py, cpu_kernels/_kept.py): the backward that finds them sums one product
per image over them instead of copying the columns again. Gradients against PyTorch's
either way; the columns are taken only by the backward of the forward that kept them, of
the same input, unchanged."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from cpu_kernels import _conv_same
from cpu_kernels._kept import last_kept
from cpu_kernels.conv import _same_keep_key

F = tp.nn.functional


@pytest.fixture
def kept_calls(monkeypatch):
    """The calls of the weight gradient from kept columns, counted."""
    calls = []
    original = _conv_same._weight_grad_kept
    monkeypatch.setattr(_conv_same, "_weight_grad_kept",
                        lambda *args: calls.append(1) or original(*args))
    monkeypatch.setattr(last_kept, "key", None)
    return calls


def _arrays(seed, x_shape, w_shape):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(x_shape).astype(np.float32),
            rng.standard_normal(w_shape).astype(np.float32) * 0.1,
            rng.standard_normal(w_shape[0]).astype(np.float32))


@pytest.mark.parametrize("batch", [1, 32])
@pytest.mark.parametrize("bias, bias_grad", [(True, True), (True, False), (False, False)])
def test_the_weight_gradient_from_kept_columns_matches_torch(kept_calls, batch, bias,
                                                             bias_grad):
    """The digits CNN's second layer (two chunks of 16 images at batch 32, each written
    into its slice of the kept buffer); a bias that needs no gradient leaves the row of
    ones out of the product, and with no bias there is none."""
    xa, wa, ba = _arrays(0, (batch, 16, 8, 8), (32, 16, 3, 3))
    x, w = tp.tensor(xa, requires_grad=True), tp.tensor(wa, requires_grad=True)
    xt, wt = torch.tensor(xa, requires_grad=True), torch.tensor(wa, requires_grad=True)
    b = tp.tensor(ba, requires_grad=bias_grad) if bias else None
    bt = torch.tensor(ba, requires_grad=bias_grad) if bias else None
    g = np.random.default_rng(1).standard_normal((batch, 32, 8, 8)).astype(np.float32)
    F.conv2d(x, w, b, padding=1).backward(tp.tensor(g))
    torch.nn.functional.conv2d(xt, wt, bt, padding=1).backward(torch.tensor(g))
    assert kept_calls == [1]
    pairs = [(x, xt), (w, wt)] + ([(b, bt)] if bias_grad else [])
    for mine, theirs in pairs:
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-4,
                                   atol=1e-4)


def test_two_layers_of_one_shape_each_get_their_own_columns(kept_calls):
    """Two convolutions of the same shape one after the other: the second forward's
    columns replace the first's in the one slot, so the second's backward takes them and
    the first's copies its own again. Both gradients match PyTorch's."""
    torch.manual_seed(0)
    first, second = torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.Conv2d(16, 16, 3, padding=1)
    mine = [tp.nn.Conv2d(16, 16, 3, padding=1) for _ in range(2)]
    for m, t in zip(mine, (first, second)):
        m.load_state_dict({k: tp.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    xa = np.random.default_rng(2).standard_normal((8, 16, 8, 8)).astype(np.float32)
    mine[1](mine[0](tp.tensor(xa))).square().sum().backward()
    second(first(torch.tensor(xa))).square().sum().backward()
    assert kept_calls == [1]
    for m, t in zip(mine, (first, second)):
        np.testing.assert_allclose(m.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-4,
                                   atol=1e-4)
        np.testing.assert_allclose(m.bias.grad.numpy(), t.bias.grad.numpy(), rtol=1e-4,
                                   atol=1e-4)


def test_the_columns_are_named_by_the_input_and_its_version(kept_calls):
    """The key holds the input's memory and version: after an in-place write (its
    version moves on), or for another tensor of the same values, the key differs and no
    columns are found."""
    xa, wa, ba = _arrays(3, (4, 16, 8, 8), (32, 16, 3, 3))
    x, w = tp.tensor(xa), tp.tensor(wa, requires_grad=True)
    F.conv2d(x, w, None, padding=1)
    key = last_kept.key
    assert last_kept.get(key) is not None
    x.add_(1.0)
    assert _same_keep_key(x, xa, (1, 1), (1, 1), (1, 1), (3, 3)) != key
    other = tp.tensor(xa)
    assert _same_keep_key(other, xa, (1, 1), (1, 1), (1, 1), (3, 3)) != key
    assert last_kept.get(
        _same_keep_key(other, xa, (1, 1), (1, 1), (1, 1), (3, 3))) is None


@pytest.mark.parametrize("case", ["no_grad", "frozen weight", "one input channel",
                                  "too large"])
def test_nothing_is_kept_where_it_would_not_pay(kept_calls, case, monkeypatch):
    """No weight gradient coming (grad mode off, a weight that does not require grad), an
    image's product below KEEP_WORK (one input channel), or a batch whose columns pass
    KEEP_COLUMNS_BYTES: the forward writes its chunk buffers only."""
    c_in = 1 if case == "one input channel" else 16
    xa, wa, ba = _arrays(4, (4, c_in, 8, 8), (32, c_in, 3, 3))
    x = tp.tensor(xa)
    w = tp.tensor(wa, requires_grad=case != "frozen weight")
    if case == "too large":
        monkeypatch.setattr(_conv_same, "KEEP_COLUMNS_BYTES", 4 * (16 * 9 + 1) * 64 * 4 - 1)
    if case == "no_grad":
        with tp.no_grad():
            F.conv2d(x, w, tp.tensor(ba), padding=1)
    else:
        F.conv2d(x, w, tp.tensor(ba), padding=1)
    assert last_kept.key is None
