"""The backward engine's round-5 shortcuts (issue 13) against PyTorch and against the
general path.

- `loss.backward()` with no argument, on a 0-dim CPU loss with a history, starts the pass
  in `engine.tensor_backward` (seed and root edge made directly); any other call takes
  `engine.backward` with its checks and messages.
- A plain pass (no inputs, no retained graph, accumulating) shares one task; it runs a
  node with nothing hooked, retained or watched (and anomaly mode off) without
  `_Task.evaluate`, and a leaf's AccumulateGrad by handing it its buffer.
- `needs_input_grad` reads the thread-local `exec_state` only while some thread runs a
  pass restricted to some inputs (`node.restricted_passes` counts them).
- AccumulateGrad accumulates in one function (`_accumulate`).

The general path is reached from the same graphs by a hook that does nothing (a node
pre-hook sends its node through `evaluate`), by `retain_graph=True`, or by
`tp.autograd.backward`, and must give the same gradients, errors and order.
"""
import threading

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.autograd import node as node_module
from tensorplay.errors import AutogradError


def pair(array, requires_grad=True):
    array = np.asarray(array, dtype=np.float32)
    return (tp.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def close(a, b):
    assert a is not None and b is not None
    np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def _hook_everything(loss):
    """A pre-hook that does nothing on every node above the leaves: each then runs
    through `_Task.evaluate`, the general path."""
    stack, seen = [loss.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen or type(fn).__name__ == "AccumulateGrad":
            continue
        seen.add(fn)
        fn.register_prehook(lambda grads: None)
        stack.extend(child for child, _ in fn.next_functions)


# ---- loss.backward() ------------------------------------------------------------------
def test_tiny_step_accumulates_like_torch_and_bumps_the_grad_version():
    x, xt = pair(np.random.RandomState(0).rand(8))
    versions = []
    for _ in range(3):
        (x * 2 + 1).sum().backward()
        (xt * 2 + 1).sum().backward()
        close(x.grad, xt.grad)
        versions.append(x.grad._version)
    # the first gradient is stolen or cloned (version 0), each later one added in place
    assert versions == [0, 1, 2]
    assert x.grad.dtype == tp.float32 and tuple(x.grad.shape) == (8,)


@pytest.mark.parametrize("how", ["method", "general", "hooked", "retained"])
def test_every_way_of_running_a_graph_gives_the_same_gradients(how):
    rng = np.random.RandomState(1)
    (a, at), (b, bt) = pair(rng.rand(3, 4)), pair(rng.rand(4))
    loss = ((a * b).sum(1) * (a - b).mean()).sum()
    ((at * bt).sum(1) * (at - bt).mean()).sum().backward()
    if how == "method":
        loss.backward()
    elif how == "general":
        tp.autograd.backward(loss)
    elif how == "hooked":
        _hook_everything(loss)
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
    x, xt = pair([1.0, 2.0, 3.0])
    loss, loss_t = make(x * x), make(xt * xt)
    loss.backward()
    loss_t.backward()
    close(x.grad, xt.grad)


def test_a_leaf_loss_gets_its_seed_as_grad():
    x, xt = pair(3.0)
    x.backward()
    xt.backward()
    close(x.grad, xt.grad)


@pytest.mark.parametrize("case", ["no_grad", "not_scalar", "non_tensor_gradient"])
def test_errors_are_the_general_paths(case):
    x, xt = pair([1.0, 2.0])
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


def test_second_backward_of_a_freed_graph_raises_the_torch_message():
    x, xt = pair([1.0, 2.0])
    loss, loss_t = (x * x).sum(), (xt * xt).sum()
    loss.backward()
    loss_t.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss_t.backward()
    with pytest.raises(AutogradError, match="backward through the graph a second time"):
        loss.backward()


def test_retained_graph_then_plain_pass_then_freed():
    x, xt = pair([1.0, -2.0, 3.0])
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
    x, xt = pair([0.5, 1.5])
    (gx,) = tp.autograd.grad((x ** 3).sum(), [x], create_graph=True)
    (gxt,) = torch.autograd.grad((xt ** 3).sum(), [xt], create_graph=True)
    gx.sum().backward()
    gxt.sum().backward()
    close(x.grad, xt.grad)
    y, yt = pair([0.5, 1.5])
    (y ** 3).sum().backward(create_graph=True)
    (yt ** 3).sum().backward(create_graph=True)
    close(y.grad, yt.grad)
    assert y.grad.requires_grad and yt.grad.requires_grad


# ---- graphs: chains, diamonds, shared leaves, multiple roots ---------------------------
def test_diamond_and_shared_leaf_match_torch():
    (x, xt), (w, wt) = pair([1.0, 2.0, 3.0]), pair([0.5, -1.0, 2.0])
    for mod, a, b in ((tp, x, w), (torch, xt, wt)):
        h = a * b
        left, right = h * 2, h + a
        (left * right).sum().backward()
    close(x.grad, xt.grad)
    close(w.grad, wt.grad)


def test_multiple_roots_match_torch():
    (x, xt) = pair([1.0, 2.0, 3.0])
    tp.autograd.backward([(x * 2).sum(), (x * x).mean()])
    torch.autograd.backward([(xt * 2).sum(), (xt * xt).mean()])
    close(x.grad, xt.grad)


def test_a_wrong_shape_from_an_unhooked_node_raises_like_the_general_path():
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
            _hook_everything(loss)
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


# ---- hooks ---------------------------------------------------------------------------


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


# ---- grad() and restricted passes ------------------------------------------------------
def test_restricted_pass_computes_only_what_is_needed_and_counts_back_to_zero():
    (x, xt), (w, wt) = pair([1.0, 2.0]), pair([3.0, 4.0])
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


# ---- accumulation ---------------------------------------------------------------------
def test_threads_accumulating_into_one_leaf_lose_nothing():
    x = tp.tensor(np.ones(4, np.float32), requires_grad=True)
    steps, workers = 40, 4

    def worker():
        for _ in range(steps):
            (x * 2).sum().backward()
    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert x.grad.tolist() == [2.0 * steps * workers] * 4


def test_non_contiguous_gradients_and_grad_layouts_match_torch():
    rng = np.random.RandomState(2)
    x, xt = pair(rng.rand(3, 4))
    (x.t() * 2).sum().backward()           # the gradient arrives transposed
    (xt.t() * 2).sum().backward()
    close(x.grad, xt.grad)
    # (A 2-d leaf's first .grad takes the gradient's layout, not the leaf's as in torch:
    # a known difference, benchmarks/FASTPATH.md round 4; the general path agrees.)
    general = tp.tensor(rng.rand(3, 4).astype(np.float32), requires_grad=True)
    loss = (general.t() * 2).sum()
    _hook_everything(loss)
    loss.backward()
    assert x.grad.stride() == general.grad.stride()
    data = rng.rand(2, 3, 4, 5).astype(np.float32)
    c = tp.tensor(data).contiguous(memory_format=tp.channels_last).requires_grad_()
    ct = torch.tensor(data).contiguous(memory_format=torch.channels_last).requires_grad_()
    (c * 3).sum().backward()
    (ct * 3).sum().backward()
    close(c.grad, ct.grad)
    assert c.grad.stride() == ct.grad.stride()
    for _ in range(2):      # later gradients are added in place: the layout stays
        (c * c).sum().backward()
        (ct * ct).sum().backward()
    close(c.grad, ct.grad)
    assert c.grad.stride() == ct.grad.stride()


def test_a_leaf_detached_in_place_after_the_graph_gets_no_gradient():
    x, xt = pair([1.0, 2.0])
    loss, loss_t = (x * 2).sum(), (xt * 2).sum()
    x.requires_grad_(False)
    xt.requires_grad_(False)
    loss.backward()
    loss_t.backward()
    assert x.grad is None and xt.grad is None


def test_a_grad_set_by_the_user_is_added_into_in_place():
    x, xt = pair([1.0, 2.0])
    x.grad, xt.grad = tp.tensor([10.0, 20.0]), torch.tensor([10.0, 20.0])
    kept = x.grad
    (x * 3).sum().backward()
    (xt * 3).sum().backward()
    close(x.grad, xt.grad)
    assert kept is x.grad and kept.tolist() == [13.0, 23.0]


def test_hooks_on_a_leafs_accumulate_grad_node_run_like_torch():
    logs = []
    for mod in (tp, torch):
        log = []
        x = mod.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        acc = y.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda grads: log.append(("pre", grads[0].tolist())))
        acc.register_hook(lambda gi, go: log.append(("post", len(gi), go[0].tolist())))
        y.sum().backward()
        logs.append((log, x.grad.tolist()))
    assert logs[0] == logs[1]


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
                _hook_everything(loss)
            loss.backward()
        grad = x.grad.elem if subclass else x.grad
        return mode.lines, grad.tolist()
    for subclass in (False, True):
        plain, general = run(False, subclass), run(True, subclass)
        assert plain == general
        assert plain[1] == [2.0, 2.0] and any("expand" in line for line in plain[0])
    assert any("add_" in line for line in run(False, False)[0])
