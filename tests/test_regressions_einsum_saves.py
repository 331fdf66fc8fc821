"""einsum saves what PyTorch's composition of it keeps (tensorplay/autograd/einsum_saves.py).

PyTorch builds einsum from views, sums, mul and bmm; an operand whose permuted reshape to
bmm's matrices cannot be a view (a strided operand, fuzz seeds 41879 and 58880), or whose
own letters are summed away first, reaches bmm as a new tensor: an in-place change of it
after the call does not make backward raise there, so it must not here either, and the
gradients must still be those of the values at the call. Each case: build, change one
operand in place under no_grad, backward; raises iff PyTorch raises, same gradients.
An operand is saved only for the other operands' gradients: a sum or a trace of one
operand saves nothing.
"""
import numpy as np
import pytest
import torch

import tensorplay as tp
from saved_tensors import raises_in_both

CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("...ij,...jk", [(2, 1, 2, 3), (3, 3, 2)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("ii,ij->j", [(3, 3), (3, 2)]),
    ("abc,cd->abd", [(2, 3, 4), (4, 2)]),
    ("ijk,jk->i", [(2, 3, 4), (3, 4)]),
    ("i,j->ij", [(3,), (2,)]),
    ("ij,jk,k->i", [(2, 3), (3, 4), (4,)]),
    ("i,i", [(0,), (0,)]),
]


def _run(lib, equation, arrays, transposed, requires_grad, changed):
    tensors = []
    for a, t, r in zip(arrays, transposed, requires_grad):
        x = lib.tensor(np.ascontiguousarray(a.swapaxes(-1, -2)) if t else a,
                       dtype=lib.float64)
        x = x.transpose(-1, -2) if t else x
        tensors.append(x.requires_grad_(r))
    out = lib.einsum(equation, tensors)
    with lib.no_grad():
        tensors[changed].mul_(2)
    try:
        out.sum().backward()
    except RuntimeError:        # TensorPlay's AutogradError is a RuntimeError too
        return None
    return [None if t.grad is None else np.asarray(t.grad.tolist()) for t in tensors]


@pytest.mark.parametrize("equation,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_saves_what_pytorch_keeps(equation, shapes):
    rng = np.random.default_rng(len(equation))
    for _ in range(6):
        arrays = [rng.standard_normal(s) for s in shapes]
        transposed = [len(s) >= 2 and rng.random() < 0.5 for s in shapes]
        requires_grad = [bool(rng.random() < 0.7) for _ in shapes]
        requires_grad[0] = requires_grad[0] or not any(requires_grad)
        changed = int(rng.integers(len(shapes)))
        args = (equation, arrays, transposed, requires_grad, changed)
        expected, got = _run(torch, *args), _run(tp, *args)
        assert (expected is None) == (got is None), (args, expected, got)
        for e, g in zip(expected or (), got or ()):
            assert (e is None) == (g is None)
            if e is not None:
                np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_a_copied_operand_keeps_its_history_for_second_order_grads():
    # the strided operand is saved as a copy made while autograd records: d2/dA dB flows
    a = np.random.default_rng(0).standard_normal((3, 2))
    b = np.random.default_rng(1).standard_normal((3, 4))
    grads = []
    for lib in (torch, tp):
        x = lib.tensor(a, dtype=lib.float64).t().requires_grad_(True)   # strided (2, 3)
        y = lib.tensor(b, dtype=lib.float64).requires_grad_(True)
        out = lib.einsum("ij,jk->ik", [x, y])
        (gy,) = lib.autograd.grad(out.sum(), [y], create_graph=True)
        (gx,) = lib.autograd.grad((gy * gy).sum(), [x])
        grads.append(np.asarray(gx.tolist()))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


# ---- an operand is saved only for the other operands' gradients ----------------------
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
    tp_raised, torch_raised = raises_in_both(_einsum(equation, shapes, requires_grad), change)
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
