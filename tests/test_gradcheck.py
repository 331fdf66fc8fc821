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
    # fast mode (test_ops.py's default gradgradcheck) catches it too
    with pytest.raises(GradcheckError, match="fast mode"):
        gradgradcheck(FrozenSquare.apply, (x,), fast_mode=True)


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


# ---- PyTorch's arguments ----------------------------------------------------------------
def _torch_and_tp(a):
    return torch.tensor(a, requires_grad=True), tp.tensor(a, requires_grad=True)


@pytest.mark.parametrize("noncontiguous", [False, True])
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_gradgradcheck_draws_grad_outputs_from_the_global_generator_as_torch(kind,
                                                                            noncontiguous):
    """tp.manual_seed decides the random grad_outputs, and gradgradcheck leaves the
    generator where PyTorch's leaves it: the next random numbers are the same."""
    a = RNG.uniform(-1, 1, (2, 3))
    t, p = _torch_and_tp(a)
    if kind == "real":
        f_t, f_p = (lambda x: (x.sin(), x * x)), (lambda x: (x.sin(), x * x))
    else:
        f_t, f_p = (lambda x: torch.complex(x.sin(), x * x)), \
            (lambda x: tp.complex(x.sin(), x * x))
    torch.manual_seed(7)
    tp.manual_seed(7)
    assert torch.autograd.gradgradcheck(f_t, (t,), gen_non_contig_grad_outputs=noncontiguous)
    assert gradgradcheck(f_p, (p,), gen_non_contig_grad_outputs=noncontiguous)
    np.testing.assert_array_equal(np.asarray(tp.rand(5)), torch.rand(5).numpy())


@pytest.mark.parametrize("dtype,noncontiguous", [("float64", False), ("float64", True),
                                                 ("complex128", False), ("float32", True)])
def test_random_grad_outputs_are_torch_testing_make_tensor(dtype, noncontiguous):
    from tensorplay.autograd.gradcheck import _random_grad_output
    torch.manual_seed(3)
    tp.manual_seed(3)
    want = torch.testing.make_tensor((3, 4), dtype=getattr(torch, dtype), device="cpu",
                                     low=-1, high=1, requires_grad=True,
                                     noncontiguous=noncontiguous)
    got = _random_grad_output(tp.zeros(3, 4, dtype=getattr(tp, dtype)), noncontiguous)
    assert got.requires_grad and got.is_contiguous() == want.is_contiguous()
    np.testing.assert_array_equal(np.asarray(got.detach()), want.detach().numpy())


def test_gradcheck_accepts_every_torch_argument():
    import inspect
    for ours, theirs in ((gradcheck, torch.autograd.gradcheck),
                         (gradgradcheck, torch.autograd.gradgradcheck)):
        mine = inspect.signature(ours).parameters
        assert [n for n in inspect.signature(theirs).parameters if n not in mine] == []
    x = leaf(3)
    assert gradcheck(lambda x: (x.sin(), x.exp()), (x,), check_undefined_grad=True,
                     check_batched_grad=True, check_backward_ad=True, fast_mode=True,
                     masked=False, nondet_tol=0.0, check_grad_dtypes=True)
    assert gradgradcheck(lambda x: (x.sin(), x.exp()), (x,), check_batched_grad=True,
                         fast_mode=True, gen_non_contig_grad_outputs=True)


class _WrongJvp(FrozenSquare):
    """x ** 2 with a right (first-order) backward and a jvp that forgets the factor 2 x."""

    @staticmethod
    def jvp(ctx, tangent):
        return tangent


def test_forward_ad_checks_compare_forward_mode_with_finite_differences():
    """check_forward_ad (and its batched form, and gradgradcheck's forward over reverse)
    pass on correct tangents and catch a wrong jvp with PyTorch's message."""
    f = lambda x: (x.sin() * x.exp()).tanh()        # noqa: E731
    assert gradcheck(f, (leaf(4),), check_forward_ad=True, check_batched_forward_grad=True)
    assert gradgradcheck(f, (leaf(3),), check_fwd_over_rev=True)
    with pytest.raises(GradcheckError, match="Jacobian computed with forward mode mismatch "
                                             "for output 0 with respect to input 0"):
        gradcheck(_WrongJvp.apply, (leaf(3),), check_forward_ad=True, check_backward_ad=False)
    assert gradcheck(_WrongJvp.apply, (leaf(3),))       # its backward is right
    with pytest.raises(AssertionError, match="at least one of check_forward_ad"):
        gradcheck(lambda x: x.sin(), (leaf(3),), check_backward_ad=False)


class _ScaledSin(tp.autograd.Function):
    """sin with a backward 10% too large: every mode of the check must catch it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * x.cos() * 1.1


def test_fast_mode_catches_a_wrong_backward():
    assert not gradcheck(_ScaledSin.apply, (leaf(4),), fast_mode=True, raise_exception=False)
    with pytest.raises(GradcheckError, match="fast mode"):
        gradcheck(_ScaledSin.apply, (leaf(4),), fast_mode=True)


class _LeakyPair(tp.autograd.Function):
    """Two outputs, right Jacobians, but a backward that invents a gradient when no
    output sends one (all zeros): what check_undefined_grad is there to catch."""

    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        silent = float((g1.abs().sum() + g2.abs().sum()).item()) == 0.0
        return g1 * 2 + g2 * 3 + (1.0 if silent else 0.0)


def test_undefined_grad_check_catches_a_backward_that_invents_gradient():
    with pytest.raises(GradcheckError, match="undefined or zero"):
        gradcheck(_LeakyPair.apply, (leaf(3),))
    assert gradcheck(_LeakyPair.apply, (leaf(3),), check_undefined_grad=False)


def test_batched_grad_check_runs_backward_under_vmap():
    x = leaf(3)
    assert gradcheck(lambda x: (x * x).tanh(), (x,), check_batched_grad=True)
