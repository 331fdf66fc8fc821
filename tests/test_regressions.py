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
