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


def _cross_entropy(shape):
    def make(lib):
        x = lib.ones(*shape, dtype=lib.float64, requires_grad=True)
        t = lib.zeros(shape[0], dtype=lib.int64)
        return [x], lib.nn.functional.cross_entropy(x, t, reduction="none")
    return make


@pytest.mark.parametrize("shape", [(4, 5), (0, 3)])   # seeds 36282, 17931
def test_cross_entropy_does_not_save_its_input(shape):
    def change(xs):
        xs[0][0:1].fill_(7)
    tp_raised, torch_raised = _both(_cross_entropy(shape), change)
    assert tp_raised == torch_raised


def test_cross_entropy_double_backward_without_its_input():
    # The gradient goes back to the input through the saved (differentiable) probabilities.
    values = [[0.5, -1.0, 2.0, 0.0], [1.5, 0.25, -0.5, 3.0], [0.0, 0.0, 1.0, -2.0]]
    results = []
    for lib in (tp, torch):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        loss = lib.nn.functional.cross_entropy(x, lib.tensor([2, 0, 3]))
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum() + (g.sum(1) ** 2).sum(), x)
        results.append((g.detach().tolist(), h.tolist()))
    for a, b in zip(results[0], results[1]):
        for row_a, row_b in zip(a, b):
            assert row_a == pytest.approx(row_b, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])   # seeds 28031, 80045
def test_pad_saves_self_for_reflect_and_replicate_only(mode):
    def make(lib):
        x = lib.ones(2, 5, requires_grad=True)
        return [x], lib.nn.functional.pad(x, (2, 1), mode=mode)

    def change(xs):
        xs[0].fill_(2)
    tp_raised, torch_raised = _both(make, change)
    assert tp_raised == torch_raised


def test_native_group_norm_saves_a_strided_input_itself():
    # seed 90017: PyTorch's kernel refuses a strided input (TensorPlay takes it); its rule
    # saves the input, so the reference is a node that does (tests/opinfo).
    from opinfo.db_nn_layers_norm import _ref_native_group_norm

    def make(lib):
        x = lib.ones(2, 6, 2, 4, dtype=lib.float64)[..., ::2].detach().requires_grad_()
        args = (None, None, 2, 6, 4, 3, 1e-5)
        out = (tp.native_group_norm(x, *args) if lib is tp
               else _ref_native_group_norm(x, *args))[0]
        return [x], out

    def change(xs):
        xs[0].fill_(2)
    assert _both(make, change) == (True, True)
