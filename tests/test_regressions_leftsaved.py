"""Regressions of the long fuzz profile's last saved-tensor mismatches (issue 12, branch
leftsaved): which tensors an op saves for backward is visible (an in-place change of a saved
tensor makes backward raise), so it must be PyTorch's."""
from __future__ import annotations

import pytest
import torch

import tensorplay as tp

VERSION_ERROR = "modified by an inplace operation"


def _raises_after_inplace(lib, make, change):
    """Build inputs with `make(lib)`, run the op, change one input in place under no_grad,
    and report whether backward raised the saved-tensor version error."""
    inputs, out = make(lib)
    with lib.no_grad():
        change(inputs)
    try:
        out.sum().backward()
    except Exception as e:  # noqa: BLE001 - each library's own error type
        assert VERSION_ERROR in str(e), e
        return True
    return False


def _both(make, change):
    return (_raises_after_inplace(tp, make, change), _raises_after_inplace(torch, make, change))


def _einsum(equation, shapes, requires_grad):
    def make(lib):
        xs = [lib.ones(*s, dtype=lib.float64, requires_grad=r)
              for s, r in zip(shapes, requires_grad)]
        return xs, lib.einsum(equation, *xs)
    return make


@pytest.mark.parametrize("equation,shapes,requires_grad,changed", [
    ("ij->j", [(3, 4)], [True], 0),          # seed 13533: a sum saves nothing
    ("ij->", [(3, 4)], [True], 0),           # seed 89036
    ("ii", [(3, 3)], [True], 0),             # seed 96563: a trace saves nothing
    ("ij,jk", [(3, 4), (4, 5)], [False, True], 1),   # seed 40928: only A's gradient reads B
    ("ij,jk", [(3, 4), (4, 5)], [True, False], 0),
    ("ij,jk", [(3, 4), (4, 5)], [True, True], 0),    # both gradients: each operand saved
])
def test_einsum_saves_an_operand_only_for_the_others_gradients(equation, shapes,
                                                               requires_grad, changed):
    def change(xs):
        xs[changed].add_(1)
    tp_raised, torch_raised = _both(_einsum(equation, shapes, requires_grad), change)
    assert tp_raised == torch_raised


def test_einsum_unsaved_operand_still_gets_its_gradient():
    a = tp.arange(12.0, dtype=tp.float64).reshape(3, 4)
    b = tp.arange(20.0, dtype=tp.float64).reshape(4, 5).requires_grad_()
    tp.einsum("ij,jk", a, b).sum().backward()
    ta = torch.arange(12.0, dtype=torch.float64).reshape(3, 4)
    tb = torch.arange(20.0, dtype=torch.float64).reshape(4, 5).requires_grad_()
    torch.einsum("ij,jk", ta, tb).sum().backward()
    assert b.grad.tolist() == tb.grad.tolist()
    x = tp.arange(12.0, dtype=tp.float64).reshape(3, 4).requires_grad_()
    tp.einsum("ij->j", x).backward(tp.ones(4, dtype=tp.float64))
    assert x.grad.tolist() == [[1.0] * 4] * 3
