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
import torch

import tensorplay as tp


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
