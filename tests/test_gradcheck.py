"""gradcheck / gradgradcheck: pass on correct gradients, fail (with PyTorch's message)
on wrong ones."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.autograd import GradcheckError, gradcheck, gradgradcheck

RNG = np.random.default_rng(1)


def leaf(*shape, low=-1.0, high=1.0):
    return tp.tensor(RNG.uniform(low, high, shape), dtype=tp.float64, requires_grad=True)


GOOD = {
    "tanh_of_product": (lambda x, y: (x * y).tanh(), lambda: (leaf(3), leaf(3))),
    "broadcast_div": (lambda x, y: x / (y * y + 1), lambda: (leaf(2, 3), leaf(3))),
    "matmul_sigmoid": (lambda a, b: a.matmul(b).sigmoid(), lambda: (leaf(2, 3), leaf(3, 4))),
    "pow_log_mean": (lambda x: (x ** 3 + (x * x + 1).log()).mean(), lambda: (leaf(4),)),
    "two_outputs": (lambda x: (x.exp(), x.sin() * x), lambda: (leaf(3),)),
    "view_and_transpose": (lambda x: x.view(3, 2).transpose(0, 1).relu() * x[0],
                           lambda: (leaf(2, 3, low=0.1),)),
}


@pytest.mark.parametrize("name", sorted(GOOD))
def test_gradcheck_and_gradgradcheck_pass_on_correct_gradients(name):
    func, make = GOOD[name]
    inputs = make()
    assert gradcheck(func, inputs)
    assert gradgradcheck(func, inputs)


def test_same_verdict_as_torch_gradcheck():
    a = RNG.uniform(-1, 1, (3,))
    ours = gradcheck(lambda x: (x * x).tanh(), (tp.tensor(a, requires_grad=True),))
    theirs = torch.autograd.gradcheck(lambda x: (x * x).tanh(),
                                      (torch.tensor(a, requires_grad=True),))
    assert ours == theirs is True


class WrongSquare(tp.autograd.Function):
    """x ** 2 with a backward that forgets the factor 2."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x


class FrozenSquare(tp.autograd.Function):
    """x ** 2 with a correct first derivative that is not itself differentiable in x."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x.detach()


def test_gradcheck_reports_a_wrong_backward():
    x = leaf(3)
    with pytest.raises(GradcheckError, match=r"(?s)Jacobian mismatch for output 0 with respect "
                                             r"to input 0,.*\nnumerical:tensor\(.*\nanalytical:"):
        gradcheck(WrongSquare.apply, (x,))
    assert gradcheck(WrongSquare.apply, (x,), raise_exception=False) is False
    assert isinstance(GradcheckError("x"), RuntimeError)


def test_gradgradcheck_reports_a_wrong_double_backward():
    x = leaf(3)
    assert gradcheck(FrozenSquare.apply, (x,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to "
                                             "input 0"):
        gradgradcheck(FrozenSquare.apply, (x,))


def test_gradcheck_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda x: x * 2, (tp.ones(2, dtype=tp.float64),))


def test_gradcheck_warns_about_single_precision():
    x = tp.tensor([0.5, 0.25], requires_grad=True)
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double "
                                         "precision floating point"):
        gradcheck(lambda t: t * 2, (x,), atol=1e-2, rtol=1e-2)


def test_gradcheck_with_non_tensor_arguments_and_partial_requires_grad():
    a, b = leaf(3), tp.tensor(RNG.uniform(size=3), dtype=tp.float64)
    assert gradcheck(lambda x, k, y: (x * y * k).exp(), (a, 2.5, b))
