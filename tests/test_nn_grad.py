"""tp.nn.grad (torch.nn.grad): a convolution's input and weight gradients, computed
without a graph, equal to PyTorch's and to what autograd gives."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from opinfo.core import assert_close

CASES = [  # (dims, input shape, weight shape, stride, padding, dilation, groups)
    (1, (2, 4, 9), (6, 2, 3), 2, 1, 1, 2),
    (2, (1, 3, 7, 6), (4, 3, 3, 2), (2, 1), (1, 0), 1, 1),
    (2, (2, 2, 8, 8), (2, 1, 3, 3), 3, 2, 2, 2),        # rows lost to the stride
    (3, (1, 2, 5, 4, 5), (3, 2, 2, 2, 3), 1, (0, 1, 1), 1, 1),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}d")
def test_input_and_weight_gradients_equal_pytorchs_and_autograds(case):
    n, in_shape, w_shape, stride, padding, dilation, groups = case
    rng = np.random.default_rng(n)
    x = rng.standard_normal(in_shape).astype(np.float64)
    w = rng.standard_normal(w_shape).astype(np.float64)
    conv = getattr(torch.nn.functional, f"conv{n}d")
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    out = conv(xt, wt, None, stride, padding, dilation, groups)
    g = rng.standard_normal(tuple(out.shape))
    gx_auto, gw_auto = torch.autograd.grad(out, (xt, wt), torch.tensor(g))
    ours = getattr(tp.nn.grad, f"conv{n}d_input")(in_shape, tp.tensor(w), tp.tensor(g), stride,
                                                   padding, dilation, groups)
    theirs = getattr(torch.nn.grad, f"conv{n}d_input")(in_shape, wt.detach(), torch.tensor(g),
                                                        stride, padding, dilation, groups)
    assert_close(ours, theirs)
    assert_close(ours, gx_auto)
    ours = getattr(tp.nn.grad, f"conv{n}d_weight")(tp.tensor(x), w_shape, tp.tensor(g), stride,
                                                    padding, dilation, groups)
    assert_close(ours, gw_auto)
    assert not ours.requires_grad


def test_functional_grad_is_the_module():
    assert tp.nn.functional.grad is tp.nn.grad
