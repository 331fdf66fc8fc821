"""Every way of running backward gives PyTorch's gradients, errors and order:
`loss.backward()`, `tp.autograd.backward`, `grad()` restricted to some inputs,
retain_graph, create_graph, hooks, each shortcut against the general path.

- `loss.backward()` with no argument, on a 0-dim CPU loss with a history, starts the pass
  in `engine.tensor_backward` (seed and root edge made directly); any other call takes
  `engine.backward` with its checks and messages.
- A plain pass (no inputs, no retained graph, accumulating) shares one task
  (`_PLAIN_TASK`); every pass runs each node through `_Task.evaluate`.
- `needs_input_grad` reads the thread-local `exec_state` only while some thread runs a
  pass restricted to some inputs (`node.restricted_passes` counts them).
- A root may be any output of its node (output 1 of a multi-output node included).

The same graphs run with a hook that does nothing on every node, with
`retain_graph=True`, or through `tp.autograd.backward` must give the same gradients,
errors and order.
"""
import threading

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.autograd import node as node_module
from tensorplay.errors import AutogradError

from autograd_graphs import hook_every_node
from torch_twins import close, leaf_pair


# ---- loss.backward() -----------------------------------------------------------------
@pytest.mark.parametrize("how", ["method", "general", "hooked", "retained"])
def test_every_way_of_running_a_graph_gives_the_same_gradients(how):
    rng = np.random.RandomState(1)
    (a, at), (b, bt) = leaf_pair(rng.rand(3, 4)), leaf_pair(rng.rand(4))
    loss = ((a * b).sum(1) * (a - b).mean()).sum()
    ((at * bt).sum(1) * (at - bt).mean()).sum().backward()
    if how == "method":
        loss.backward()
    elif how == "general":
        tp.autograd.backward(loss)
    elif how == "hooked":
        hook_every_node(loss)
        loss.backward()
    else:
        loss.backward(retain_graph=True)
    close(a.grad, at.grad)
    close(b.grad, bt.grad)


@pytest.mark.parametrize("make", [
    lambda t: t.sum(),                                    # 0-dim: the fast path
    lambda t: t.sum().reshape(1),                         # one element, not 0-dim
    lambda t: t.double().sum(),                           # another dtype
])
def test_seeds_of_every_scalar_loss_match_torch(make):
    x, xt = leaf_pair([1.0, 2.0, 3.0])
    loss, loss_t = make(x * x), make(xt * xt)
    loss.backward()
    loss_t.backward()
    close(x.grad, xt.grad)


def test_a_leaf_loss_gets_its_seed_as_grad():
    x, xt = leaf_pair(3.0)
    x.backward()
    xt.backward()
    close(x.grad, xt.grad)


@pytest.mark.parametrize("case", ["no_grad", "not_scalar", "non_tensor_gradient"])
def test_errors_match_torch(case):
    x, xt = leaf_pair([1.0, 2.0])
    if case == "no_grad":
        loss, loss_t = tp.tensor(1.0), torch.tensor(1.0)
        expected = "element 0 of tensors does not require grad and does not have a grad_fn"
        with pytest.raises(RuntimeError, match=expected):
            loss_t.backward()
        with pytest.raises(AutogradError, match=expected):
            loss.backward()
    elif case == "not_scalar":
        expected = "grad can be implicitly created only for scalar outputs"
        with pytest.raises(RuntimeError, match=expected):
            (xt * 2).backward()
        with pytest.raises(AutogradError, match=expected):
            (x * 2).backward()
    else:
        with pytest.raises(TypeError, match="gradients can be either Tensors or None"):
            (x * 2).sum().backward(gradient=[1.0])


def test_implicit_seed_errors_match_pytorch():
    x = tp.ones(3, requires_grad=True)
    xt = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="implicitly created only for scalar"):
        (xt * 2).backward()
    with pytest.raises(AutogradError, match="implicitly created only for scalar"):
        (x * 2).backward()
    with pytest.raises(RuntimeError):
        torch.ones(()).backward()
    with pytest.raises(AutogradError, match="does not require grad"):
        tp.ones(()).backward()


def test_second_backward_of_a_freed_graph_raises_the_torch_message():
    x, xt = leaf_pair([1.0, 2.0])
    loss, loss_t = (x * x).sum(), (xt * xt).sum()
    loss.backward()
    loss_t.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss_t.backward()
    with pytest.raises(AutogradError, match="backward through the graph a second time"):
        loss.backward()


def test_retained_graph_then_plain_pass_then_freed():
    x, xt = leaf_pair([1.0, -2.0, 3.0])
    loss, loss_t = (x * x * 3).sum(), (xt * xt * 3).sum()
    for _ in range(2):
        loss.backward(retain_graph=True)
        loss_t.backward(retain_graph=True)
    loss.backward()
    loss_t.backward()
    close(x.grad, xt.grad)
    with pytest.raises(AutogradError, match="second time"):
        loss.backward()


@pytest.mark.filterwarnings(r"ignore:Using backward\(\) with create_graph")
def test_create_graph_double_backward_follows_torch():
    x, xt = leaf_pair([0.5, 1.5])
    (gx,) = tp.autograd.grad((x ** 3).sum(), [x], create_graph=True)
    (gxt,) = torch.autograd.grad((xt ** 3).sum(), [xt], create_graph=True)
    gx.sum().backward()
    gxt.sum().backward()
    close(x.grad, xt.grad)
    y, yt = leaf_pair([0.5, 1.5])
    (y ** 3).sum().backward(create_graph=True)
    (yt ** 3).sum().backward(create_graph=True)
    close(y.grad, yt.grad)
    assert y.grad.requires_grad and yt.grad.requires_grad


# ---- graphs: chains, diamonds, shared leaves, multiple roots -------------------------
def test_diamond_and_shared_leaf_match_torch():
    (x, xt), (w, wt) = leaf_pair([1.0, 2.0, 3.0]), leaf_pair([0.5, -1.0, 2.0])
    for mod, a, b in ((tp, x, w), (torch, xt, wt)):
        h = a * b
        left, right = h * 2, h + a
        (left * right).sum().backward()
    close(x.grad, xt.grad)
    close(w.grad, wt.grad)


def test_backward_through_a_diamond_counts_each_dependency():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    a, at = x * 2, xt * 2
    b, bt = a * a + a.exp() + a, at * at + at.exp() + at
    b.sum().backward()
    bt.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)


def test_multiple_roots_match_torch():
    (x, xt) = leaf_pair([1.0, 2.0, 3.0])
    tp.autograd.backward([(x * 2).sum(), (x * x).mean()])
    torch.autograd.backward([(xt * 2).sum(), (xt * xt).mean()])
    close(x.grad, xt.grad)


def test_backward_of_two_roots_where_one_feeds_the_other():
    x = tp.tensor([1.0, -2.0, 0.5], requires_grad=True)
    xt = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    y, yt = x * 3, xt * 3
    z, zt = (y * y).sum(), (yt * yt).sum()
    tp.autograd.backward([z, y], [tp.tensor(1.0), tp.ones(3)])
    torch.autograd.backward([zt, yt], [torch.tensor(1.0), torch.ones(3)])
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_a_root_that_is_output_one_of_a_node_matches_torch():
    x = tp.tensor([[3.0, 1.0], [0.0, 2.0]], requires_grad=True)
    xt = torch.tensor([[3.0, 1.0], [0.0, 2.0]], requires_grad=True)
    values, _ = x.max(dim=1)
    vt, _ = xt.max(dim=1)
    values.sum().backward()
    vt.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
    out = x.split(1, dim=0)[1]          # output 1 of a multi-output node as the root
    outt = xt.split(1, dim=0)[1]
    out.sum().backward()
    outt.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_a_wrong_shape_from_a_node_raises_the_same_with_or_without_hooks():
    class Bad(tp.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1

        @staticmethod
        def backward(ctx, g):
            return g.sum()

    messages = []
    for hooked in (False, True):
        x = tp.tensor([1.0, 2.0], requires_grad=True)
        loss = Bad.apply(x * 2).sum()
        if hooked:
            hook_every_node(loss)
        with pytest.raises(AutogradError) as info:
            loss.backward()
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "invalid gradient at index 0" in messages[0]


def test_a_raising_node_raises_through_the_plain_pass_and_in_anomaly_mode():
    class Boom(tp.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    x = tp.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="boom"):
        Boom.apply(x).sum().backward()
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="boom"):
        with tp.autograd.detect_anomaly():
            Boom.apply(x).sum().backward()


def test_anomaly_mode_still_finds_nan_gradients():
    x = tp.tensor([0.0], requires_grad=True)
    with pytest.warns(UserWarning), pytest.raises(AutogradError, match="returned nan values"):
        with tp.autograd.detect_anomaly():
            (x.sqrt() * 0).sum().backward()


# ---- hooks and dispatch modes --------------------------------------------------------
def test_hooks_added_after_a_plain_pass_run_on_the_next():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    loss = y.sum()
    loss.backward(retain_graph=True)
    seen = []
    y.grad_fn.register_prehook(lambda grads: seen.append("pre"))
    x.register_hook(lambda g: seen.append("leaf"))
    loss.backward()
    assert seen == ["pre", "leaf"]
    assert x.grad.tolist() == [4.0, 4.0]


def test_a_dispatch_mode_and_a_tensor_subclass_see_the_same_backward_ops_either_way():
    from tensorplay.utils.dispatch_mode import LoggingMode
    from tensorplay.utils.logging_tensor import LoggingTensor

    def run(hooked, subclass):
        if subclass:    # its own leaf: the loss is a LoggingTensor (the general path)
            x = LoggingTensor(tp.tensor([1.0, 2.0]), requires_grad=True)
        else:           # a .grad to add into: the in-place add_ shows in the log
            x = tp.tensor([1.0, 2.0], requires_grad=True)
            x.grad = tp.zeros(2)
        with LoggingMode() as mode:
            loss = (x * 2 + 1).sum()
            if hooked:
                hook_every_node(loss)
            loss.backward()
        grad = x.grad.elem if subclass else x.grad
        return mode.lines, grad.tolist()
    for subclass in (False, True):
        plain, general = run(False, subclass), run(True, subclass)
        assert plain == general
        assert plain[1] == [2.0, 2.0] and any("expand" in line for line in plain[0])
    assert any("add_" in line for line in run(False, False)[0])


# ---- grad() and restricted passes ----------------------------------------------------
def test_restricted_pass_computes_only_what_is_needed_and_counts_back_to_zero():
    (x, xt), (w, wt) = leaf_pair([1.0, 2.0]), leaf_pair([3.0, 4.0])
    (gx,) = tp.autograd.grad((x * w).sum(), [x])
    (gxt,) = torch.autograd.grad((xt * wt).sum(), [xt])
    close(gx, gxt)
    assert w.grad is None and node_module.restricted_passes == 0
    (x * w).sum().backward(inputs=[w])
    assert x.grad is None and w.grad.tolist() == [1.0, 2.0]
    assert node_module.restricted_passes == 0


def test_the_count_comes_back_when_a_restricted_pass_raises():
    x = tp.tensor([1.0], requires_grad=True)

    def boom(g):
        raise ValueError("boom")
    y = x * 2
    y.register_hook(boom)
    with pytest.raises(ValueError):
        tp.autograd.grad(y.sum(), [x])
    assert node_module.restricted_passes == 0 and node_module.exec_state.needed is None


def test_a_plain_pass_inside_a_restricted_one_and_the_reverse():
    x, w = tp.tensor([1.0, 2.0], requires_grad=True), tp.tensor([3.0, 4.0], requires_grad=True)
    inner = []

    def run_plain(g):
        v = tp.tensor([5.0], requires_grad=True)
        with tp.enable_grad():      # off in a hook of a pass without create_graph
            (v * 3).sum().backward()
        inner.append(v.grad.tolist())
    y = x * w
    y.register_hook(run_plain)
    (gx,) = tp.autograd.grad(y.sum(), [x])
    assert gx.tolist() == [3.0, 4.0] and inner == [[3.0]] and w.grad is None

    def run_restricted(g):
        a, b = tp.tensor([2.0], requires_grad=True), tp.tensor([7.0], requires_grad=True)
        with tp.enable_grad():
            inner.append(tp.autograd.grad((a * b).sum(), [a])[0].tolist())
    z = x * w
    z.register_hook(run_restricted)
    z.sum().backward()
    assert inner[-1] == [7.0] and x.grad.tolist() == [3.0, 4.0]
    assert w.grad.tolist() == [1.0, 2.0]
    assert node_module.restricted_passes == 0


def test_threads_with_restricted_and_plain_passes_get_their_own_answers():
    errors = []

    def worker(restricted):
        try:
            for _ in range(30):
                x = tp.tensor([1.0, 2.0], requires_grad=True)
                w = tp.tensor([3.0, 4.0], requires_grad=True)
                if restricted:
                    (gx,) = tp.autograd.grad((x * w).sum(), [x])
                    assert gx.tolist() == [3.0, 4.0]
                else:
                    (x * w).sum().backward()
                    assert x.grad.tolist() == [3.0, 4.0] and w.grad.tolist() == [1.0, 2.0]
        except Exception as e:      # reported below: an assert in a thread is lost
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(i % 2 == 0,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and node_module.restricted_passes == 0
