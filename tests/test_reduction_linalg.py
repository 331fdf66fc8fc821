"""Linear algebra cases the operator database cannot hold: einsums PyTorch answers with a
view (compared here by value and gradient), and linear's gradients through a batch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.autograd import gradcheck, gradgradcheck


@pytest.mark.parametrize("equation, shape", [("ii->i", (3, 3)), ("ji", (3, 4)),
                                             ("ijj->ij", (2, 3, 3)), ("...ii->...i", (2, 3, 3))])
def test_einsum_one_operand_views(equation, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    a = tp.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    out, t_out = tp.einsum(equation, [a]), torch.einsum(equation, [t])
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy())
    g = np.random.default_rng(1).standard_normal(tuple(t_out.shape))
    out.backward(tp.tensor(g))
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy())
    assert gradgradcheck(lambda y: tp.einsum(equation, [y]), (a,))


def test_einsum_broadcast_gradient_is_summed():
    a = tp.randn(1, 3, dtype=tp.float64, requires_grad=True)
    b = tp.randn(2, 3, dtype=tp.float64, requires_grad=True)
    assert gradcheck(lambda x, y: tp.einsum("ij,ij->ij", [x, y]), (a, b))


def test_list_ops_take_a_list_or_the_tensors_one_by_one():
    a, b = tp.randn(2, 3), tp.randn(3, 4)
    for out in (tp.einsum("ij,jk", a, b), tp.einsum("ij,jk", [a, b]),
                tp.einsum("ij,jk", (a, b)), tp.einsum("ij,jk", tensors=[a, b])):
        np.testing.assert_allclose(out.numpy(), (a @ b).numpy(), rtol=1e-6)
    shapes = [tuple(t.shape) for t in tp.broadcast_tensors([tp.ones(3, 1), tp.ones(4)])]
    assert shapes == [(3, 4), (3, 4)]
