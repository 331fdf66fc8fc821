"""Round 3 of the dispatch fast path (issue 13): the shortcuts of a recorded op and of the
engine, each against PyTorch and against the general path it stands in for.

- `wrap_number` (every `x * 2` makes one) builds a CPU int/float/bool directly
  (`_creation.wrapped_scalar`); other values and devices take `scalar_tensor`.
- `set_history` attaches a fresh floating output without calls; an output that already
  has history, or is not floating, takes the general path (and its errors).
- A leaf's `AccumulateGrad` is made without `Node.__init__`'s call: the same fields.
- The engine's `_discover` has no `seen` set; a single root's buffer is made directly.
"""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import AutogradError


# ---- the engine ---------------------------------------------------------------------------
def test_backward_of_two_roots_where_one_feeds_the_other():
    x = tp.tensor([1.0, -2.0, 0.5], requires_grad=True)
    xt = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    y, yt = x * 3, xt * 3
    z, zt = (y * y).sum(), (yt * yt).sum()
    tp.autograd.backward([z, y], [tp.tensor(1.0), tp.ones(3)])
    torch.autograd.backward([zt, yt], [torch.tensor(1.0), torch.ones(3)])
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_backward_through_a_diamond_counts_each_dependency():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    a, at = x * 2, xt * 2
    b, bt = a * a + a.exp() + a, at * at + at.exp() + at
    b.sum().backward()
    bt.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)


def test_root_that_is_output_one_of_a_node_uses_the_general_buffer():
    x = tp.tensor([[3.0, 1.0], [0.0, 2.0]], requires_grad=True)
    xt = torch.tensor([[3.0, 1.0], [0.0, 2.0]], requires_grad=True)
    values, _ = x.max(dim=1)
    vt, _ = xt.max(dim=1)
    values.sum().backward()
    vt.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
    out = x.split(1, dim=0)[1]          # output 1 of a multi-output node as the root
    outt = xt.split(1, dim=0)[1]
    out.sum().backward()
    outt.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_tiny_step_repeated_accumulates_like_pytorch():
    x = tp.tensor(np.linspace(-1, 1, 8), dtype=tp.float32, requires_grad=True)
    xt = torch.tensor(np.linspace(-1, 1, 8), dtype=torch.float32, requires_grad=True)
    for _ in range(3):
        (x * 2 + 1).sum().backward()
        (xt * 2 + 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_implicit_seed_errors_match_pytorch():
    x = tp.ones(3, requires_grad=True)
    xt = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="implicitly created only for scalar"):
        (xt * 2).backward()
    with pytest.raises(AutogradError, match="implicitly created only for scalar"):
        (x * 2).backward()
    with pytest.raises(RuntimeError):
        torch.ones(()).backward()
    with pytest.raises(AutogradError, match="does not require grad"):
        tp.ones(()).backward()
