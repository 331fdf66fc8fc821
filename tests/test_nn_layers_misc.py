"""Dropout's randomness, and gradient properties of embedding that the operator database
cannot check against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.autograd import gradcheck
from tensorplay.errors import ArgumentError

F = tp.nn.functional


def test_dropout_is_reproducible_under_manual_seed_and_generator():
    x = tp.ones(200)
    tp.manual_seed(3)
    a = F.dropout(x, 0.3)
    tp.manual_seed(3)
    b = F.dropout(x, 0.3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    g1, g2 = tp.Generator().manual_seed(5), tp.Generator().manual_seed(5)
    c = F.dropout(x, 0.3, generator=g1)
    d = F.dropout(x, 0.3, generator=g2)
    np.testing.assert_array_equal(c.numpy(), d.numpy())
    assert not np.array_equal(a.numpy(), F.dropout(x, 0.3).numpy()), "draws must advance"


def test_dropout_keeps_about_1_minus_p_and_scales_them():
    tp.manual_seed(0)
    y = F.dropout(tp.ones(20000), 0.25).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.75)


def test_dropout_gradient_is_the_mask_scaled():
    x = tp.randn(50, requires_grad=True)
    out, mask = tp.native_dropout(x, 0.4, True)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), mask.numpy() / 0.6, rtol=1e-6)
    np.testing.assert_allclose(out.detach().numpy(), x.detach().numpy() * mask.numpy() / 0.6,
                               rtol=1e-6)


def test_dropout_edges():
    x = tp.randn(10)
    assert not F.dropout(x, 1.0).numpy().any()
    assert F.dropout(x, 0.5, training=False) is x
    with pytest.raises(ArgumentError, match=r"dropout\(\): dropout probability"):
        F.dropout(x, -0.1)
    y = x.clone()
    assert F.dropout(y, 0.5, inplace=True) is y


def test_embedding_gradient_accumulates_repeats_and_skips_padding():
    w = tp.randn(4, 2, requires_grad=True)
    idx = tp.tensor([[1, 1, 3], [0, 1, 0]])
    F.embedding(idx, w, padding_idx=0).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[0, 0], [3, 3], [0, 0], [1, 1]])


def test_embedding_backward_by_freq_double_backward():
    """embedding_dense_backward is linear in grad_output: gradcheck of that map checks its
    derivative formula, scale_grad_by_freq included (PyTorch's ignores the scaling)."""
    idx = tp.tensor([[1, 1, 3], [0, 1, 2]])
    g = tp.randn(2, 3, 2, dtype=tp.float64, requires_grad=True)
    for freq in (False, True):
        assert gradcheck(lambda t: tp.embedding_dense_backward(t, idx, 5, 2, freq), (g,))


def test_sdpa_dropout_uses_the_seeded_generator():
    q = tp.randn(2, 3, 4)
    tp.manual_seed(1)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    tp.manual_seed(1)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    ref = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(q.numpy()),) * 3)
    assert not np.allclose(a.numpy(), ref.numpy())
