"""The backward engine against PyTorch: gradients, accumulation, retain_graph,
higher order, in-place ops on views, long chains and reference cycles."""
import gc

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay._impl import TensorImpl
from tensorplay.autograd.node import collect_next_edges
from tensorplay.autograd.recording import set_history
from tensorplay.autograd.node import Node

RNG = np.random.default_rng(0)


def pair(array, requires_grad=True):
    """The same leaf in TensorPlay and in PyTorch."""
    array = np.asarray(array, dtype=np.float64)
    return (tp.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def close(a, b, **kw):
    a = np.asarray(a.detach()) if hasattr(a, "_impl") else a
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else b
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9, **kw)


# ---- first-order gradients ---------------------------------------------------------------
def test_simple_graph_matches_torch():
    (x, xt), (w, wt) = pair([1.0, -2.0, 3.0]), pair([0.5, 0.25, -1.0])
    for lib_x, lib_w in ((x, w), (xt, wt)):
        y = (lib_x * lib_w + lib_x / (lib_w * lib_w + 1)).tanh()
        (y.exp() - lib_x.sigmoid() * y).sum().backward()
    close(x.grad, xt.grad)
    close(w.grad, wt.grad)


@pytest.mark.parametrize("shapes", [((2, 3), (3,)), ((2, 1), (1, 3)), ((4, 2, 3), (2, 1)),
                                    ((3,), ())])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_broadcasting_reduces_gradients(shapes, op):
    (a, at), (b, bt) = pair(RNG.uniform(1, 2, shapes[0])), pair(RNG.uniform(1, 2, shapes[1]))
    getattr(a, op)(b).pow(2).sum().backward()
    getattr(at, op)(bt).pow(2).sum().backward()
    assert tuple(b.grad.shape) == tuple(bt.grad.shape)
    close(a.grad, at.grad)
    close(b.grad, bt.grad)


def test_matmul_mean_relu_graph():
    (a, at), (b, bt) = pair(RNG.normal(size=(4, 3))), pair(RNG.normal(size=(3, 5)))
    for x, y in ((a, b), (at, bt)):
        (x.matmul(y).relu().mean() + x.transpose(0, 1).sum() * 0.5).backward()
    close(a.grad, at.grad)
    close(b.grad, bt.grad)


def test_gradients_accumulate_over_two_backward_calls():
    x, xt = pair([1.0, 2.0])
    for t in (x, xt):
        (t * t).sum().backward()
        first = t.grad
        (t * 3).sum().backward()
        assert t.grad is first          # accumulated in place, as in PyTorch
    close(x.grad, xt.grad)


def test_diamond_and_shared_subgraph():
    x, xt = pair([0.5, -1.5])
    for t in (x, xt):
        h = t.tanh()
        (h * h + h.exp() * h).sum().backward()
    close(x.grad, xt.grad)


def test_retain_graph_allows_a_second_backward():
    x, xt = pair([1.0, 2.0, 3.0])
    for t in (x, xt):
        y = (t.sigmoid() * t).sum()
        y.backward(retain_graph=True)
        y.backward()
    close(x.grad, xt.grad)


def test_second_backward_without_retain_graph_raises():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = (x.tanh() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                           "time .* Specify retain_graph=True"):
        y.backward()


def test_backward_error_messages():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and "
                                           "does not have a grad_fn"):
        tp.ones(2).sum().backward()
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape "
                                           r"of tensorplay.Size\(\[2\]\)"):
        (x * 2).backward(tp.ones(2))


def test_backward_with_gradient_and_inputs():
    (x, xt), (w, wt) = pair([1.0, 2.0]), pair([3.0, -1.0])
    for a, b in ((x, w), (xt, wt)):
        y = a * b
        y.backward(a.detach() + 1, inputs=[b])
    assert x.grad is None and xt.grad is None
    close(w.grad, wt.grad)


def test_backward_inputs_fills_grad_of_non_leaf():
    x, xt = pair([1.0, 2.0])
    grads = []
    for t in (x, xt):
        h = t * t
        (h.exp()).sum().backward(inputs=[h])
        grads.append(h.grad)
    close(grads[0], grads[1])
    assert x.grad is None


# ---- grad() -------------------------------------------------------------------------------
def test_grad_returns_without_touching_dot_grad():
    (x, xt), (w, wt) = pair([1.0, 2.0]), pair([0.5, -1.0])
    gx, gw = tp.autograd.grad((x * w).exp().sum(), (x, w))
    gxt, gwt = torch.autograd.grad((xt * wt).exp().sum(), (xt, wt))
    close(gx, gxt)
    close(gw, gwt)
    assert x.grad is None and w.grad is None


def test_grad_allow_unused():
    x, y = tp.ones(2, requires_grad=True), tp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors appears to not "
                                           "have been used in the graph. Set allow_unused=True"):
        tp.autograd.grad((x * 2).sum(), (x, y))
    gx, gy = tp.autograd.grad((x * 2).sum(), (x, y), allow_unused=True)
    assert gy is None
    close(gx, np.array([2.0, 2.0]))
    _, gz = tp.autograd.grad((x * 2).sum(), (x, y), materialize_grads=True)
    close(gz, np.zeros(2))


def test_grad_with_respect_to_intermediate():
    x, xt = pair([0.1, 0.2, 0.3])
    h, ht = x.sin(), xt.sin()
    (g,), (gt,) = tp.autograd.grad((h * h).sum(), h), torch.autograd.grad((ht * ht).sum(), ht)
    close(g, gt)


HIGHER_ORDER = {
    "tanh": lambda m: lambda x: x.tanh(),
    "sigmoid": lambda m: lambda x: x.sigmoid(),
    "mul": lambda m: lambda x: x * x * x,
    "div": lambda m: lambda x: 1 / (x * x + 2),
    "pow": lambda m: lambda x: x ** 3 + x.pow(2.5),
    "exp": lambda m: lambda x: (x * 0.5).exp(),
    "log": lambda m: lambda x: (x * x + 1).log(),
    "chain": lambda m: lambda x: ((x.tanh() * x).sigmoid() / (x.exp() + 1)).log(),
}


@pytest.mark.parametrize("name", sorted(HIGHER_ORDER))
def test_third_order_gradients_match_torch(name):
    x, xt = pair([0.3, 0.7, 1.2])
    results = []
    for t, lib in ((x, tp), (xt, torch)):
        f = HIGHER_ORDER[name](lib)
        (g1,) = lib.autograd.grad(f(t).sum(), t, create_graph=True)
        (g2,) = lib.autograd.grad(g1.sum(), t, create_graph=True)
        (g3,) = lib.autograd.grad(g2.sum(), t)
        results.append((g1, g2, g3))
    for ours, theirs in zip(*results):
        close(ours, theirs)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_create_graph_backward_makes_grad_with_history():
    x, xt = pair([1.0, 2.0])
    for t in (x, xt):
        (t ** 3).sum().backward(create_graph=True)
        assert t.grad.requires_grad
        g = t.grad
        t.grad = None
        g.sum().backward()
    close(x.grad, xt.grad)


def test_hessian_of_mlp_loss_matches_torch():
    data = RNG.normal(size=(6, 3))
    params = [RNG.normal(size=(3, 4)), RNG.normal(size=(4,)), RNG.normal(size=(4, 1))]

    def loss(x):
        def f(w1, b1, w2):
            h = (x.matmul(w1) + b1).tanh()
            return ((h.matmul(w2) - 1) ** 2).mean()
        return f

    ours = tp.autograd.functional.hessian(loss(tp.tensor(data)),
                                          tuple(tp.tensor(p) for p in params))
    theirs = torch.autograd.functional.hessian(loss(torch.tensor(data)),
                                               tuple(torch.tensor(p) for p in params))
    for i in range(3):
        for j in range(3):
            assert tuple(ours[i][j].shape) == tuple(theirs[i][j].shape)
            close(ours[i][j], theirs[i][j])


def _f(x):
    return x.exp() * x.sum()


def _scalar(x):
    return (x.tanh() * x).sum()


def test_functional_jacobian_vjp_hvp_hessian_match_torch():
    a, v = RNG.normal(size=3), np.array([1.0, -2.0, 0.5])
    x, xt = tp.tensor(a), torch.tensor(a)
    F, TF = tp.autograd.functional, torch.autograd.functional
    close(F.jacobian(_f, x), TF.jacobian(_f, xt))
    close(F.vjp(_f, x, tp.tensor(v))[1], TF.vjp(_f, xt, torch.tensor(v))[1])
    close(F.jvp(_scalar, x, tp.tensor(v))[1], TF.jvp(_scalar, xt, torch.tensor(v))[1])
    close(F.hvp(_scalar, x, tp.tensor(v))[1], TF.hvp(_scalar, xt, torch.tensor(v))[1])
    close(F.vhp(_scalar, x, tp.tensor(v))[1], TF.vhp(_scalar, xt, torch.tensor(v))[1])
    close(F.hessian(_scalar, x), TF.hessian(_scalar, xt))


def test_jvp_through_a_broadcast_0dim_tensor():
    """Double backward of `x * x.sum()` reshapes a 0-dim gradient to [1]."""
    a, v = RNG.normal(size=3), np.array([1.0, -2.0, 0.5])
    ours = tp.autograd.functional.jvp(_f, tp.tensor(a), tp.tensor(v))[1]
    close(ours, torch.autograd.functional.jvp(_f, torch.tensor(a), torch.tensor(v))[1])


# ---- scale and memory --------------------------------------------------------------------
def test_ten_thousand_node_chain_needs_no_recursion():
    x = tp.tensor([1.0], dtype=tp.float64, requires_grad=True)
    factor = tp.tensor(1.0001, dtype=tp.float64)
    y = x
    for _ in range(10_000):
        y = y * factor
    y.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), [1.0001 ** 10_000], rtol=1e-4)


def _live_autograd_objects():
    # type(), not isinstance(): some torch objects warn when asked for their __class__
    return sum(1 for o in gc.get_objects() if issubclass(type(o), (Node, TensorImpl)))


LOSSES = {
    "square": lambda w, x, b: ((w * x + b) ** 2).sum(),
    # tanh and exp save their *output*: the case where a cycle is easy to make
    "saves_outputs": lambda w, x, b: ((w * x + b).tanh().exp() * x).sum(),
}


@pytest.mark.parametrize("run_backward", [True, False], ids=["train", "forward_only"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_training_loop_makes_no_reference_cycles(name, run_backward):
    """With the cycle collector off, anything in a cycle would pile up: the count of live
    nodes and impls must not grow with the number of iterations. (backward() frees the
    saved tensors, which would hide a cycle through them: hence the forward-only run.)"""
    f = LOSSES[name]
    w = tp.randn(8, requires_grad=True)
    b = tp.randn(1, requires_grad=True)
    x = tp.randn(8)
    gc.disable()        # (no collection first: both counts see the same earlier garbage)
    try:
        for _ in range(20):             # warm-up: caches, the first .grad tensors
            f(w, x, b).backward()
        before = _live_autograd_objects()
        for _ in range(200):            # a leak of one object an iteration shows as 200
            loss = f(w, x, b)
            if run_backward:
                loss.backward()
        del loss
        after = _live_autograd_objects()
    finally:
        gc.enable()
    assert after - before < 10, f"{after - before} autograd objects leaked in 200 iterations"


# ---- checks the engine makes on what a node returns ---------------------------------------
class _BroadcastBackward(Node):
    """A deliberately wrong node: forgets to sum_to its broadcast gradient."""
    __slots__ = ()
    OP = "fake_broadcast"

    def apply(self, grads):
        return (grads[0],)


def _fake_broadcast(x, rows):
    with tp.no_grad():
        out = x.expand(rows, x.shape[0]).clone()
    node = _BroadcastBackward()
    node.set_next_edges(collect_next_edges(x))
    set_history(out, node)
    return out


def test_unreduced_broadcast_gradient_is_reported_with_the_node_name():
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Function _BroadcastBackward \(backward of "
                                           r"fake_broadcast\) returned a gradient of shape "
                                           r"\[2, 3\] at index 0, but input 0 has shape \[3\]"):
        _fake_broadcast(x, 2).sum().backward()


def test_incompatible_gradient_shape_is_reported():
    x = tp.ones(3, requires_grad=True)
    out = _fake_broadcast(x, 2)
    with pytest.raises(RuntimeError, match=r"returned an invalid gradient at index 0 - got "
                                           r"\[2, 4\] but expected shape compatible with \[3\]"):
        out.grad_fn.register_prehook(lambda grads: (tp.ones(2, 4),))
        out.sum().backward()


def test_gradient_dtype_is_cast_to_the_input_dtype():
    x = tp.ones(3, requires_grad=True)
    y = x * 2
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs:
                            tuple(g.double() if g is not None else None for g in grad_inputs))
    y.sum().backward()
    assert x.grad.dtype == tp.float32


def test_node_pre_and_post_hooks():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    seen = []
    h1 = y.grad_fn.register_prehook(lambda grads: seen.append("pre") or (grads[0] * 10,))
    y.grad_fn.register_hook(lambda gi, go: seen.append(("post", go[0].tolist())))
    y.sum().backward(retain_graph=True)
    assert seen == ["pre", ("post", [10.0, 10.0])]
    close(x.grad, np.array([30.0, 30.0]))
    h1.remove()
    x.grad = None
    y.sum().backward()
    close(x.grad, np.array([3.0, 3.0]))


def test_next_functions_and_names_look_like_torch():
    x = tp.ones(2, requires_grad=True)
    y = (x * 2).sum()
    assert y.grad_fn.name() == "SumBackward0"
    (mul, nr), = y.grad_fn.next_functions
    assert mul.name() == "MulBackward0" and nr == 0
    acc, _ = mul.next_functions[0]
    assert acc.name() == "AccumulateGrad" and acc.variable is not None
    assert acc.variable._impl is x._impl


# ---- in-place ops --------------------------------------------------------------------------
def test_inplace_on_leaf_that_requires_grad_raises():
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                           "in an in-place operation."):
        x.mul_(2)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation."):
        x[0].mul_(2)
    with tp.no_grad():
        x.mul_(2)                       # fine without grad mode, as in PyTorch
    close(x, np.full(3, 2.0))


def test_inplace_on_non_view_rebases_history():
    x, xt = pair([1.0, -2.0, 3.0])
    for t in (x, xt):
        y = t * 2
        y.mul_(t)
        y.add_(t)
        y.relu_()
        y.sum().backward()
    close(x.grad, xt.grad)


def test_modified_saved_output_is_detected_like_torch():
    messages = []
    for t in pair([1.0, -2.0, 3.0]):
        y = t * 2
        y.relu_()                       # saves its result ...
        y.mul_(t)                       # ... which this changes
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        messages.append(str(info.value))
    assert messages[0].startswith(
        "one of the variables needed for gradient computation has been modified by an "
        "inplace operation: [tensorplay.DoubleTensor [3]], which is output 0 of "
        "ReluBackward0, is at version 2; expected version 1 instead.")
    assert "[torch.DoubleTensor [3]], which is output 0 of Relu, is at version 2; expected " \
           "version 1 instead." in messages[1]


INPLACE_ON_VIEWS = {
    "select_mul": lambda leaf: _sum(_then(leaf.clone(), lambda x: x[0].mul_(2))),
    "slice_relu_then_square": lambda leaf: _square(_then(leaf.clone(), lambda x: x[1:].relu_())),
    "mul_by_other_leaf_rows": lambda leaf: _square(
        _then(leaf.clone(), lambda x: x[0].mul_(leaf[1]))),
    "transposed_view": lambda leaf: _then(leaf * 1, lambda x: x.t()[1].mul_(3.0)).tanh().sum(),
    "copy_into_column": lambda leaf: _square(
        _then(leaf * 2, lambda x: x[:, 1].copy_(leaf[:, 0] * leaf[:, 2]))),
    "zero_row": lambda leaf: _sum(_then(leaf * 2, lambda x: x[1].zero_())),
    "view_of_view": lambda leaf: _sum(_then(leaf.clone(), lambda x: _nested(x, leaf))),
}


def _then(x, fn):
    fn(x)
    return x


def _sum(x):
    return x.sum()


def _square(x):
    return (x * x).sum()


def _nested(x, leaf):
    row = x[0]
    row.add_(leaf[1], alpha=2)
    row[1:].div_(leaf[0, :2])


@pytest.mark.parametrize("name", sorted(INPLACE_ON_VIEWS))
def test_inplace_on_views_matches_torch(name):
    a = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    ours, theirs = pair(a)
    INPLACE_ON_VIEWS[name](ours).backward()
    INPLACE_ON_VIEWS[name](theirs).backward()
    close(ours.grad, theirs.grad)


def test_view_made_before_an_inplace_change_of_its_base():
    """b.mul_ changes what the older view `a` sees: a's history is rebuilt from x's."""
    a_np = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    grads = []
    for leaf in pair(a_np):
        x = leaf.clone()
        a, b = x[:, 0:2], x[:, 1:3]
        b.mul_(leaf[:, 0:2])
        (a * 3).sum().backward()
        grads.append(leaf.grad)
    close(*grads)


def test_expanded_view_made_before_an_inplace_change_of_its_base():
    """The rebuilt history of an expanded view must add up its overlapping gradients."""
    grads = []
    for leaf, lib in ((tp.tensor([1.0, 2.0, 3.0], requires_grad=True), tp),
                      (torch.tensor([1.0, 2.0, 3.0], requires_grad=True), torch)):
        x = leaf * leaf
        e = x.expand(2, 3)
        x.mul_(3.0)
        weights = lib.tensor([[1.0], [2.0]])
        (g,) = lib.autograd.grad((e * e * weights).sum(), leaf, create_graph=True)
        (g2,) = lib.autograd.grad(g.sum(), leaf)
        grads.append((g, g2))
    close(grads[0][0], grads[1][0])
    close(grads[0][1], grads[1][1])


def _second_order(change):
    a_np = np.array([0.5, -1.0, 2.0])
    grads = []
    for leaf, lib in ((tp.tensor(a_np, requires_grad=True), tp),
                      (torch.tensor(a_np, requires_grad=True), torch)):
        x = leaf * 1
        change(x, leaf)
        (g,) = lib.autograd.grad((x * x * x).sum(), leaf, create_graph=True)
        (g2,) = lib.autograd.grad((g * g).sum(), leaf)
        grads.append(g2)
    close(*grads)


def test_higher_order_through_inplace_on_view():
    _second_order(lambda x, leaf: x[1:].mul_(3.0))
    _second_order(lambda x, leaf: x[:2].copy_(leaf[1:] * leaf[1:]))


def test_higher_order_through_inplace_op_reading_original_self():
    _second_order(lambda x, leaf: x.mul_(leaf))
