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
