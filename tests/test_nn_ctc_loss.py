"""nn.CTCLoss / F.ctc_loss against PyTorch: reductions, blank, zero_infinity, padded and
concatenated targets, lengths as lists or tensors, an unbatched input, the gradient of the
logits; and the deprecated NLLLoss2d."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp
import tensorplay.nn as nn

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize("as_tensors", [True, False])
def test_ctc_loss_matches_torch(reduction, padded, as_tensors):
    T, N, C = 7, 3, 5
    logits = RNG.standard_normal((T, N, C))
    il, tl = [7, 5, 6], [3, 1, 0]
    rows = [[1, 2, 2], [4, 0, 0], [0, 0, 0]]
    targets = rows if padded else [1, 2, 2, 4]
    x, tx = tp.tensor(logits, requires_grad=True), torch.tensor(logits, requires_grad=True)
    lengths = (tp.tensor(il), tp.tensor(tl)) if as_tensors else (il, tl)
    tlengths = (torch.tensor(il), torch.tensor(tl)) if as_tensors else (il, tl)
    loss = nn.CTCLoss(blank=3, reduction=reduction)(x.log_softmax(2), tp.tensor(targets),
                                                    *lengths)
    tloss = torch.nn.CTCLoss(blank=3, reduction=reduction)(tx.log_softmax(2),
                                                           torch.tensor(targets), *tlengths)
    np.testing.assert_allclose(loss.detach().numpy(), tloss.detach().numpy(), rtol=1e-12)
    loss.sum().backward()
    tloss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_zero_infinity_and_unbatched():
    logits = RNG.standard_normal((2, 4))
    x, tx = tp.tensor(logits, requires_grad=True), torch.tensor(logits, requires_grad=True)
    # three labels cannot fit in two frames: an infinite loss, made 0 with its gradient
    loss = tp.nn.functional.ctc_loss(x.log_softmax(1), tp.tensor([1, 2, 3]), [2], [3],
                                     reduction="sum", zero_infinity=True)
    tloss = torch.nn.functional.ctc_loss(tx.log_softmax(1), torch.tensor([1, 2, 3]), [2], [3],
                                         reduction="sum", zero_infinity=True)
    assert loss.item() == tloss.item() == 0.0
    loss.backward()
    tloss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    assert tp.nn.functional.ctc_loss(x.log_softmax(1), tp.tensor([1, 2, 3]), [2], [3],
                                     reduction="none").item() == float("inf")


def test_nll_loss_2d_is_nll_loss_with_a_warning():
    with pytest.warns(FutureWarning, match="NLLLoss2d` has been deprecated"):
        loss = nn.NLLLoss2d(reduction="sum")
    assert isinstance(loss, nn.NLLLoss)
    x = tp.randn(2, 3, 2, 2).log_softmax(1)
    y = tp.tensor([[[0, 1], [2, 0]], [[1, 1], [0, 2]]])
    assert tp.allclose(loss(x, y), nn.NLLLoss(reduction="sum")(x, y))


# ---- a label outside the classes: PyTorch's kernel reads past log_probs (undefined values);
# TensorPlay refuses it. A float target is cast to int64 labels first: -inf becomes one.
@pytest.mark.parametrize("targets", [[[1, 2], [2, 7]], [[1.0, 2.0], [2.0, -np.inf]]],
                         ids=["int64", "float64 with -inf"])
def test_ctc_loss_refuses_a_label_outside_the_classes(targets):
    log_probs = tp.zeros(4, 2, 3, dtype=tp.float64).log_softmax(-1)
    with pytest.raises(tp.errors.ArgumentError,
                       match=r"_ctc_loss\(\): argument 'targets' holds the label -?\d+, "
                             r"outside the 3 classes") as info:
        tp.nn.functional.ctc_loss(log_probs, tp.tensor(targets), [4, 4], [2, 2])
    assert info.value.arg == "targets"
