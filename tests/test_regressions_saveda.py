"""Regressions of issue 12's fuzzer (cluster: saved tensors of in-place ops and views):
which tensors a backward node saves decides whether a later in-place write makes backward
raise, so each test runs the same program in TensorPlay and in PyTorch and compares
"raises" (and the gradients where both run)."""
import numpy as np
import pytest
import torch

import tensorplay as tp

VALUES = [-1.0, 0.0, 2.0, float("nan"), -3.0]


def _inplace_activation(lib, name):
    """(call, args) of an in-place activation: TensorPlay's function, PyTorch's aten op
    (torch has no public function for most of these in-place forms)."""
    fn = getattr(tp, name) if lib is tp else getattr(torch.ops.aten, name)
    return fn


def _outcome(run):
    """'raises' when backward refuses a modified saved tensor, else the gradient."""
    try:
        return run()
    except RuntimeError as err:
        assert "modified by an inplace operation" in str(err), err
        if isinstance(err, tp.errors.TensorPlayError):
            assert isinstance(err, tp.errors.AutogradError)
        return "raises"


@pytest.mark.parametrize("name, args", [("elu_", ()), ("elu_", (1.5, 2.0, 0.5)),
                                        ("celu_", (0.5,)), ("selu_", ()),
                                        ("leaky_relu_", (0.2,)), ("leaky_relu_", (0.0,))])
@pytest.mark.parametrize("write_after", [False, True])
def test_inplace_activation_saves_its_result(name, args, write_after):
    """elu_, celu_, selu_ and leaky_relu_ save their result (PyTorch's EluBackward1,
    LeakyReluBackward1): a write into it afterwards makes backward raise; without one,
    the gradient computed from the result is PyTorch's (nan and 0 included)."""
    def run(lib):
        x = lib.tensor(VALUES, dtype=lib.float64, requires_grad=True)
        y = _inplace_activation(lib, name)(x.clone(), *args)
        if write_after:
            with lib.no_grad():
                y.mul_(1)
        y.backward(lib.ones(len(VALUES), dtype=lib.float64))
        return x.grad.tolist()

    got, want = _outcome(lambda: run(tp)), _outcome(lambda: run(torch))
    assert (got == "raises") == (want == "raises") == write_after
    if not write_after:
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("name, args", [("elu_", (-1.0,)), ("celu_", (-1.0,)),
                                        ("leaky_relu_", (-0.5,))])
def test_inplace_activation_with_negative_slope_refuses_backward(name, args):
    """The result's sign no longer tells the branch: PyTorch refuses the backward."""
    x = tp.tensor(VALUES, dtype=tp.float64, requires_grad=True)
    y = _inplace_activation(tp, name)(x.clone(), *args)
    with pytest.raises(tp.errors.AutogradError, match="negative slope"):
        y.sum().backward()
    tx = torch.tensor(VALUES, dtype=torch.float64, requires_grad=True)
    ty = _inplace_activation(torch, name)(tx.clone(), *args)
    with pytest.raises(RuntimeError, match="negative slope"):
        ty.sum().backward()
