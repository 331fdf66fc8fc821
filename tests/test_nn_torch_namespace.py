"""The nn functions PyTorch also serves as torch.* (tensorplay/nn/_torch_namespace.py):
the same function objects where PyTorch's are, and ATen's signatures where PyTorch's
differ from nn.functional's, with the same values (and seeded draws) as PyTorch's."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError
from tensorplay.nn import _torch_namespace

from opinfo.core import assert_close


@pytest.mark.parametrize("name", _torch_namespace.SAME_AS_FUNCTIONAL)
def test_the_same_function_as_nn_functional_where_pytorchs_is(name):
    assert getattr(torch, name) is getattr(torch.nn.functional, name)
    assert getattr(tp, name) is getattr(tp.nn.functional, name)


def _pair(*shape, seed=0, low=-2.0, high=2.0):
    data = np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)
    return tp.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)


@pytest.mark.parametrize("name", ["alpha_dropout", "feature_alpha_dropout", "feature_dropout"])
@pytest.mark.parametrize("train", [False, True])
def test_dropouts_take_a_required_train_flag_and_draw_as_pytorch(name, train):
    x, xt = _pair(2, 3, 4)
    tp.manual_seed(3)
    torch.manual_seed(3)
    got, expected = getattr(tp, name)(x, 0.4, train), getattr(torch, name)(xt, 0.4, train)
    assert_close(got, expected)
    got.sum().backward()
    expected.sum().backward()
    assert_close(x.grad, xt.grad)


def test_rrelu_draws_the_slopes_of_pytorch_and_takes_a_generator():
    x, xt = _pair(3, 5, seed=1)
    g, gt = tp.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    got = tp.rrelu(x, 0.1, 0.3, True, g)
    expected = torch.rrelu(xt, 0.1, 0.3, True, gt)
    assert_close(got, expected)
    got.sum().backward()
    expected.sum().backward()
    assert_close(x.grad, xt.grad)
    assert_close(tp.rrelu(x.detach()), torch.rrelu(xt.detach()))     # eval: the mean slope


@pytest.mark.parametrize("reduction", [0, 1, 2, "sum"])
def test_losses_take_atens_reduction_enum(reduction):
    x, xt = _pair(4, 3)
    y = np.where(np.arange(12).reshape(4, 3) % 3 == 0, -1.0, 1.0).astype(np.float32)
    torch_reduction = reduction if isinstance(reduction, int) else 2
    checks = [
        (tp.hinge_embedding_loss(x, tp.tensor(y), 0.5, reduction),
         torch.hinge_embedding_loss(xt, torch.tensor(y), 0.5, torch_reduction)),
        (tp.poisson_nll_loss(x, tp.tensor(np.abs(y)), True, True, 1e-8, reduction),
         torch.poisson_nll_loss(xt, torch.tensor(np.abs(y)), True, True, 1e-8, torch_reduction)),
    ]
    p, pt = _pair(4, 3, seed=2)
    n, nt = _pair(4, 3, seed=3)
    checks.append((tp.triplet_margin_loss(x, p, n, 1.0, 2.0, 1e-6, True, reduction),
                   torch.triplet_margin_loss(xt, pt, nt, 1.0, 2.0, 1e-6, True, torch_reduction)))
    for got, expected in checks:
        assert_close(got, expected)
        got.sum().backward()
        expected.sum().backward()
    assert_close(x.grad, xt.grad)


def test_a_bad_reduction_names_the_op_and_the_argument():
    x = tp.ones(3)
    with pytest.raises(ArgumentError, match=r"hinge_embedding_loss\(\): argument "
                                            r"'reduction' must be 0 \(none\)") as e:
        tp.hinge_embedding_loss(x, x, 1.0, 3)
    assert e.value.op == "hinge_embedding_loss"


def test_native_channel_shuffle_is_channel_shuffle():
    x = tp.arange(24.0).reshape(1, 6, 2, 2)
    assert_close(tp.native_channel_shuffle(x, 3),
                 torch.native_channel_shuffle(torch.arange(24.0).reshape(1, 6, 2, 2), 3))
