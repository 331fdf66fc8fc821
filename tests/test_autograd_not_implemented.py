"""No silent detach: an op with no derivative gives its result a grad_fn that raises in
backward (PyTorch's autograd_not_implemented fallback, tensorplay/autograd/
not_implemented.py), and the ops PyTorch declares non-differentiable say so in
derivatives.yaml. PyTorch is the oracle of which is which."""
import io

import pytest
import torch

import tensorplay as tp
from tensorplay.dispatch.dispatcher import FALLTHROUGH, dispatcher
from tensorplay.dispatch.keys import AUTOGRAD_OFFSET, DispatchKey
from tensorplay.errors import AutogradError


def test_no_dense_autograd_slot_falls_through():
    """The scan: every op with a kernel on a dense backend has something at that backend's
    autograd key (a formula's wrapper, a Composite decomposition, a kernel registered by
    hand, or the not-implemented fallback): nothing reaches a kernel unrecorded."""
    tp.ones(1)
    detached = []
    for name, handle in dispatcher.ops.items():
        for backend in (DispatchKey.CPU, DispatchKey.CUDA, DispatchKey.Meta):
            if handle.slot_registry(backend) is not None and \
                    handle.resolved[backend + AUTOGRAD_OFFSET] is FALLTHROUGH:
                detached.append(f"{name} at {DispatchKey(backend + AUTOGRAD_OFFSET).name}")
    assert not detached


@pytest.mark.parametrize("make", [
    lambda tp, w: tp.bincount(tp.tensor([0, 1, 1]), weights=w),
    lambda tp, w: tp.histogramdd(w.reshape(3, 1), bins=[2]).hist,
], ids=["bincount", "histogramdd"])
def test_a_builtin_op_without_a_formula_raises_at_backward_as_pytorch(make):
    w = tp.tensor([0.5, 1.0, 2.0], requires_grad=True)
    out = make(tp, w)
    expected = make(torch, torch.tensor([0.5, 1.0, 2.0], requires_grad=True))
    assert type(expected.grad_fn).__name__ == "NotImplemented"
    assert out.grad_fn.name() == "NotImplemented" and out.requires_grad
    with pytest.raises(AutogradError, match="derivative for .* is not implemented"):
        out.sum().backward()
    with pytest.raises(RuntimeError, match="derivative for .* is not implemented"):
        expected.sum().backward()


def test_non_differentiable_ops_do_not_require_grad_as_pytorch():
    x = tp.tensor([0.5, 1.0], requires_grad=True)
    xt = torch.tensor([0.5, 1.0], requires_grad=True)
    for name in ("bessel_j0", "modified_bessel_i0", "spherical_bessel_j0"):
        assert getattr(tp.special, name)(x).requires_grad is \
            getattr(torch.special, name)(xt).requires_grad is False
    assert tp.histc(x).requires_grad is torch.histc(xt).requires_grad is False
    n = tp.tensor([2.0, 3.0])
    assert not tp.special.chebyshev_polynomial_t(x, n).requires_grad


def test_integer_and_bool_results_get_no_node():
    x = tp.tensor([0.5, -1.0], requires_grad=True)
    assert x.argmax().grad_fn is None
    assert tp.isnan(x).grad_fn is None
    assert tp.eq(x, x).grad_fn is None


def test_the_fallback_is_skipped_when_nothing_requires_grad():
    buf = io.StringIO()
    with tp.dispatch.explain(file=buf):
        out = tp.bincount(tp.tensor([0, 1]), weights=tp.tensor([1.0, 2.0]))
    assert out.grad_fn is None
    assert "AutogradCPU: no tensor requires grad, nothing to record" in buf.getvalue()
    buf = io.StringIO()
    with tp.dispatch.explain(file=buf):
        tp.bincount(tp.tensor([0, 1]), weights=tp.tensor([1.0, 2.0], requires_grad=True))
    assert "AutogradCPU -> autograd not implemented" in buf.getvalue()
