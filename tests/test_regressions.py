"""Regression tests for silent wrong results (issue 12), each checked against torch."""
import numpy as np
import pytest
import torch

import tensorplay as tp


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_dim_of_0dim_does_not_alias_input(op):
    x, tx = tp.tensor(3.0), torch.tensor(3.0)
    values = getattr(x, op)(dim=0).values
    tvalues = getattr(tx, op)(dim=0).values
    x.add_(1)
    tx.add_(1)
    assert values.item() == tvalues.item() == 3.0


@pytest.mark.parametrize("lo, hi", [(3.0, 1.0), (1.0, 3.0), (2.0, 2.0)])
def test_clamp_tensor_bounds_gradients_match_torch(lo, hi):
    xs = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, float("nan")]
    n = len(xs)

    def run(m):
        x = m.tensor(xs, requires_grad=True)
        lo_t = m.tensor([lo] * n, requires_grad=True)
        hi_t = m.tensor([hi] * n, requires_grad=True)
        y = m.clamp(x, min=lo_t, max=hi_t)
        y.sum().backward()
        return [np.asarray(t.tolist()) for t in (y, x.grad, lo_t.grad, hi_t.grad)]

    for got, want in zip(run(tp), run(torch)):
        np.testing.assert_array_equal(got, want)
