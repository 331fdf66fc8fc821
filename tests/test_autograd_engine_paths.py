"""The engine's steps around each node against PyTorch: the seed of `loss.backward()`
made straight from NumPy (a view's or a subclass's takes `ones_like`), the buffers that
sum the gradients arriving at a node per output, `release_saved` skipped for nodes that
save nothing, and `validate_outputs` comparing a gradient's metadata. Where a step has
a shortcut, the tests also walk the general case next to it, so both must agree with
PyTorch."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay._generated.autograd_nodes import AddBackward0, MulBackward0, SumBackward0
from tensorplay.autograd.node import AccumulateGrad, Node
from tensorplay.errors import AutogradError

DTYPES = [("float32", tp.float32, torch.float32), ("float64", tp.float64, torch.float64),
          ("float16", tp.float16, torch.float16), ("bfloat16", tp.bfloat16, torch.bfloat16)]


def pair(array, dtype=(tp.float32, torch.float32)):
    array = np.asarray(array, dtype=np.float64)
    return (tp.tensor(array, dtype=dtype[0], requires_grad=True),
            torch.tensor(array, dtype=dtype[1], requires_grad=True))


def close(a, b):
    np.testing.assert_allclose(np.asarray(a.detach().float()), b.detach().float().numpy(),
                               rtol=1e-6, atol=1e-9)


# ---- the implicit seed -------------------------------------------------------------------
@pytest.mark.parametrize("name,tp_dtype,torch_dtype", DTYPES, ids=[d[0] for d in DTYPES])
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)], ids=["0-dim", "1", "1x1"])
def test_seed_is_a_one_of_the_output_dtype_and_shape(name, tp_dtype, torch_dtype, shape):
    x, xt = pair([0.5, -1.5, 2.0], (tp_dtype, torch_dtype))
    seeds = []
    y = (x * 3).sum().reshape(shape)
    yt = (xt * 3).sum().reshape(shape)
    y.register_hook(lambda g: seeds.append(g))
    yt.register_hook(lambda g: seeds.append(g))
    y.backward()
    yt.backward()
    seed, seed_t = seeds
    assert seed.dtype == tp_dtype and tuple(seed.shape) == tuple(seed_t.shape) == shape
    assert seed._impl.is_contiguous and not seed.requires_grad
    close(seed, seed_t)
    close(x.grad, xt.grad)
    assert x.grad.dtype == tp_dtype


def test_seed_of_a_view_output_takes_the_general_path():
    x, xt = pair([[1.0, 2.0], [3.0, 4.0]])
    y = (x * x)[1, 0]           # a view: its impl is not a plain TensorImpl
    yt = (xt * xt)[1, 0]
    y.backward()
    yt.backward()
    close(x.grad, xt.grad)


def test_a_seed_is_a_new_tensor_each_call():
    """A hook may keep (or modify) the seed: the next backward must not see it."""
    x, xt = pair([1.0, 2.0])
    kept = []

    def hook(g):
        kept.append(g)
        g.mul_(0)   # the hook owns its gradient tensor in PyTorch too
    for a in (x, xt):
        for _ in range(2):
            y = (a * 2).sum()
            y.register_hook(hook)
            y.backward()
    assert kept[0] is not kept[1]
    close(x.grad, xt.grad)


# ---- buffers: gradients summed per output -------------------------------------------------
def _two_outputs(module):
    """The same custom Function in both frameworks: one node with two outputs."""
    class TwoOutputs(module.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 2, a * a

        @staticmethod
        def backward(ctx, g_double, g_square):
            a, = ctx.saved_tensors
            return g_double * 2 + g_square * 2 * a
    return TwoOutputs


@pytest.mark.parametrize("loss", [
    lambda p, q: p.sum() * 2 + (q * q).sum() + p.sum(),
    lambda p, q: (p * 3).sum(),                   # output 1 gets no gradient: zeros
    lambda p, q: (q * 3).sum(),                   # output 0 gets none
    lambda p, q: q.sum() + (q * q).sum(),         # output 1 gets two gradients
], ids=["both", "first", "second", "second_twice"])
def test_gradients_of_several_outputs_of_one_node_are_summed_per_output(loss):
    x, xt = pair([1.0, -2.0, 3.0])
    loss(*_two_outputs(tp).apply(x)).backward()
    loss(*_two_outputs(torch).apply(xt)).backward()
    close(x.grad, xt.grad)


def test_a_node_reached_by_two_edges_sums_both_gradients():
    x, xt = pair([1.0, -2.0, 3.0])
    for a in (x, xt):
        y = a * 2
        (y * y + y).sum().backward()
    close(x.grad, xt.grad)


def test_grad_captures_each_requested_input_even_twice():
    x, xt = pair([1.0, 2.0])
    y, yt = (x * x * x).sum(), (xt * xt * xt).sum()
    g1, g2 = tp.autograd.grad(y, [x, x])
    t1, t2 = torch.autograd.grad(yt, [xt, xt])
    close(g1, t1)
    close(g2, t2)
    assert x.grad is None


# ---- release_saved ----------------------------------------------------------------------
def test_which_node_classes_release_saved_tensors():
    assert MulBackward0.releases_saved          # saves self and other
    assert not AddBackward0.releases_saved      # saves sizes and alpha only
    assert not SumBackward0.releases_saved
    assert not AccumulateGrad.releases_saved

    class Custom(tp.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    assert Custom._backward_cls.releases_saved      # overrides release_saved

    class NoSaved(Node):
        pass

    class Releases(Node):
        def release_saved(self):
            pass
    assert not NoSaved.releases_saved and Releases.releases_saved


def test_saved_tensors_are_freed_after_backward_and_kept_with_retain_graph():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    (y + 1).sum().backward(retain_graph=True)
    assert y.grad_fn._saved_self is not None
    (y + 1).sum().backward()
    with pytest.raises(AutogradError, match="backward through the graph a second time"):
        y.grad_fn._saved_self
    with pytest.raises(AutogradError, match="backward through the graph a second time"):
        (y + 1).sum().backward()
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    yt = xt * xt
    (yt + 1).sum().backward(retain_graph=True)
    (yt + 1).sum().backward()
    close(x.grad, xt.grad)


# ---- validate_outputs -----------------------------------------------------------------------
def test_a_post_hook_returning_another_dtype_is_cast_and_others_kept():
    x, xt = pair([1.0, 2.0])
    w, wt = pair([3.0, 4.0])
    y = x * w
    y.grad_fn.register_hook(lambda gi, go: (gi[0].double(), gi[1]))
    y.sum().backward()
    (xt * wt).sum().backward()
    assert x.grad.dtype == tp.float32 and w.grad.dtype == tp.float32
    close(x.grad, xt.grad)
    close(w.grad, wt.grad)


def test_a_gradient_that_is_not_a_tensor_is_a_type_error():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: ([1.0, 1.0], None))
    with pytest.raises(TypeError, match=r"MulBackward0 returned an invalid gradient at index "
                                        r"0 - expected a Tensor or None, got list"):
        y.sum().backward()


def test_a_wrong_number_of_gradients_names_the_node():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: (gi[0],))
    with pytest.raises(AutogradError, match=r"Function MulBackward0 returned an incorrect "
                                            r"number of gradients \(expected 2, got 1\)"):
        y.sum().backward()
