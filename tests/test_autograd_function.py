"""Custom autograd Functions, against torch.autograd.Function written the same way."""
import numpy as np
import pytest
import torch

import tensorplay as tp


def close(a, b):
    a = np.asarray(a.detach()) if hasattr(a, "_impl") else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


def make_exp(base):
    class Exp(base):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y
    return Exp


def make_scaled_mul(base):
    """Non-tensor argument, two tensor inputs, needs_input_grad."""
    class ScaledMul(base):
        @staticmethod
        def forward(ctx, a, scale, b):
            ctx.save_for_backward(a, b)
            ctx.scale = scale
            ctx.seen_needs = ctx.needs_input_grad
            return a * b * scale

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            ga = grad * b * ctx.scale if ctx.needs_input_grad[0] else None
            gb = grad * a * ctx.scale if ctx.needs_input_grad[2] else None
            return ga, None, gb
    return ScaledMul


def test_custom_exp_matches_torch_including_double_backward():
    a = np.array([0.1, -0.5, 1.5])
    out = []
    for lib, base in ((tp, tp.autograd.Function), (torch, torch.autograd.Function)):
        x = lib.tensor(a, requires_grad=True)
        y = make_exp(base).apply(x * 2)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (g2,) = lib.autograd.grad(g.sum(), x)
        out.append((y, g, g2))
    for ours, theirs in zip(*out):
        close(ours, theirs)


def test_grad_fn_is_named_after_the_function():
    x = tp.ones(2, requires_grad=True)
    y = make_exp(tp.autograd.Function).apply(x)
    assert y.grad_fn.name() == "ExpBackward"
    assert y.grad_fn.next_functions[0][0].name() == "AccumulateGrad"


def test_needs_input_grad_and_non_tensor_arguments():
    ScaledMul = make_scaled_mul(tp.autograd.Function)
    a = tp.tensor([1.0, 2.0], requires_grad=True)
    b = tp.tensor([3.0, 4.0])
    y = ScaledMul.apply(a, 0.5, b)
    assert y.grad_fn.seen_needs == (True, False, False)
    y.sum().backward()
    close(a.grad, [1.5, 2.0])


def test_no_node_without_grad():
    y = make_exp(tp.autograd.Function).apply(tp.ones(2))
    assert y.grad_fn is None and not y.requires_grad
    with tp.no_grad():
        y = make_exp(tp.autograd.Function).apply(tp.ones(2, requires_grad=True))
    assert y.grad_fn is None


def test_mark_non_differentiable_and_materialized_grads():
    class SortLike(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            doubled = x * 2
            flags = (x > 0).float()
            ctx.mark_non_differentiable(flags)
            return doubled, flags

        @staticmethod
        def backward(ctx, g_doubled, g_flags):
            ctx.got = (g_doubled.tolist(), g_flags.tolist())
            return g_doubled * 2

    x = tp.tensor([1.0, -1.0], requires_grad=True)
    doubled, flags = SortLike.apply(x)
    assert doubled.requires_grad and not flags.requires_grad
    (flags * 3).sum()                             # not part of the graph
    doubled.sum().backward()
    close(x.grad, [2.0, 2.0])
    assert doubled.grad_fn.got == ([1.0, 1.0], [0.0, 0.0])


def test_unused_output_gets_zeros_unless_materialize_is_off():
    def make(materialize):
        class Two(tp.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, ga, gb):
                ctx.got_none = gb is None
                return ga * 2 + (0 if gb is None else gb * 3)
        return Two

    for materialize in (True, False):
        x = tp.ones(2, requires_grad=True)
        a, _ = make(materialize).apply(x)
        a.sum().backward()
        assert a.grad_fn.got_none is (not materialize)
        close(x.grad, [2.0, 2.0])


def test_once_differentiable_raises_on_double_backward():
    class Square(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @tp.autograd.once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2 * x

    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = Square.apply(x)
    (g,) = tp.autograd.grad((y * y).sum(), x, create_graph=True)
    close(g, [4.0, 32.0])
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was "
                                           "marked with @once_differentiable"):
        g.sum().backward()
    Square.apply(x).sum().backward()              # first order works
    close(x.grad, [2.0, 4.0])


def test_wrong_number_of_gradients():
    class Bad(tp.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, grad):
            return grad

    a, b = tp.ones(2, requires_grad=True), tp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="function BadBackward returned an incorrect number "
                                           r"of gradients \(expected 2, got 1\)"):
        Bad.apply(a, b).sum().backward()


def test_gradient_for_a_non_tensor_argument_is_an_error():
    class Bad(tp.autograd.Function):
        @staticmethod
        def forward(ctx, a, k):
            return a * k

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    with pytest.raises(RuntimeError, match="returned a gradient different than None at "
                                           "position 2"):
        Bad.apply(tp.ones(2, requires_grad=True), 3.0).sum().backward()


def test_saved_tensors_are_freed_after_backward():
    x = tp.ones(2, requires_grad=True)
    y = make_exp(tp.autograd.Function).apply(x)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                           "time"):
        y.grad_fn.saved_tensors


def test_input_returned_unchanged_keeps_its_own_history():
    class Identity(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 10

    x = tp.ones(2, requires_grad=True)
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and y.grad_fn.name() == "IdentityBackward"
    y.sum().backward()
    close(x.grad, [10.0, 10.0])


def test_broadcast_gradient_of_a_custom_function_is_reduced_like_torch():
    out = []
    for lib, base in ((tp, tp.autograd.Function), (torch, torch.autograd.Function)):
        class AddRow(base):
            @staticmethod
            def forward(ctx, m, row):
                return m + row

            @staticmethod
            def backward(ctx, grad):
                return grad, grad                  # row's gradient left unreduced

        m = lib.ones(2, 3, requires_grad=True)
        row = lib.ones(3, requires_grad=True)
        AddRow.apply(m, row).sum().backward()
        out.append(row.grad)
    close(out[0], out[1])


def test_mark_dirty_inplace_function():
    class AddOneInPlace(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    leaf = tp.tensor([1.0, 2.0], requires_grad=True)
    x = leaf * 2
    y = AddOneInPlace.apply(x)
    assert y is x and x.grad_fn.name() == "AddOneInPlaceBackward"
    (y * y).sum().backward()
    close(leaf.grad, [12.0, 20.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        AddOneInPlace.apply(tp.ones(2, requires_grad=True))


def test_setup_context_style():
    class Cube(tp.autograd.Function):
        @staticmethod
        def forward(x):
            return x * x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x * x

    x = tp.tensor([1.0, 2.0], requires_grad=True)
    Cube.apply(x).sum().backward()
    close(x.grad, [3.0, 12.0])
