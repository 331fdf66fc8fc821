"""How a leaf's gradient lands in `.grad`, against PyTorch and against the watched path.

- AccumulateGrad accumulates in one function (`_accumulate`): the first gradient becomes
  `.grad` (stolen or cloned, version 0), each later one is added into it in place.
- The first gradient is stolen, not copied, only when nothing else can reach it: a
  gradient the user keeps (or a NumPy view of it), one on the user's NumPy memory, one
  handed to two leaves, one seen by a hook or given by the user, the argument of an
  AccumulateGrad called by hand, and any gradient while explain() watches, under
  create_graph or that must change layout is copied. Where reference counts prove nothing
  (CPython 3.14) it is always copied.
- Threads accumulating into one leaf lose nothing; `.grad` takes PyTorch's layouts
  (a 2-d leaf's first gradient is a known difference, described in benchmarks/FASTPATH.md).
"""
import threading

import numpy as np
import torch

import tensorplay as tp
from tensorplay.autograd.node import AccumulateGrad

from autograd_graphs import hook_every_node
from torch_twins import close, leaf_pair


# ---- accumulation over steps, layouts and threads ------------------------------------
def test_tiny_step_accumulates_like_torch_and_bumps_the_grad_version():
    x, xt = leaf_pair(np.random.RandomState(0).rand(8))
    versions = []
    for _ in range(3):
        (x * 2 + 1).sum().backward()
        (xt * 2 + 1).sum().backward()
        close(x.grad, xt.grad)
        versions.append(x.grad._version)
    # the first gradient is stolen or cloned (version 0), each later one added in place
    assert versions == [0, 1, 2]
    assert x.grad.dtype == tp.float32 and tuple(x.grad.shape) == (8,)


def test_tiny_step_repeated_accumulates_like_pytorch():
    x = tp.tensor(np.linspace(-1, 1, 8), dtype=tp.float32, requires_grad=True)
    xt = torch.tensor(np.linspace(-1, 1, 8), dtype=torch.float32, requires_grad=True)
    for _ in range(3):
        (x * 2 + 1).sum().backward()
        (xt * 2 + 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_a_grad_set_by_the_user_is_added_into_in_place():
    x, xt = leaf_pair([1.0, 2.0])
    x.grad, xt.grad = tp.tensor([10.0, 20.0]), torch.tensor([10.0, 20.0])
    kept = x.grad
    (x * 3).sum().backward()
    (xt * 3).sum().backward()
    close(x.grad, xt.grad)
    assert kept is x.grad and kept.tolist() == [13.0, 23.0]


def test_a_leaf_detached_in_place_after_the_graph_gets_no_gradient():
    x, xt = leaf_pair([1.0, 2.0])
    loss, loss_t = (x * 2).sum(), (xt * 2).sum()
    x.requires_grad_(False)
    xt.requires_grad_(False)
    loss.backward()
    loss_t.backward()
    assert x.grad is None and xt.grad is None


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
    x, xt = leaf_pair(rng.rand(3, 4))
    (x.t() * 2).sum().backward()           # the gradient arrives transposed
    (xt.t() * 2).sum().backward()
    close(x.grad, xt.grad)
    # (A 2-d leaf's first .grad takes the gradient's layout, not the leaf's as in torch:
    # a known difference, described in benchmarks/FASTPATH.md; a hooked pass agrees.)
    general = tp.tensor(rng.rand(3, 4).astype(np.float32), requires_grad=True)
    loss = (general.t() * 2).sum()
    hook_every_node(loss)
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


# ---- AccumulateGrad steals a leaf's first gradient only when nothing else can reach it ---
def _custom(keep=None, twice=False, make=None):
    """A custom Function whose backward returns `g * 2` (or `make(g)`), records where its
    memory is, and hands it to `keep` (the user holding on to it) when given one."""
    class Double(tp.autograd.Function):
        ptrs = []

        @staticmethod
        def forward(ctx, a, b=None):
            return a * 2 if b is None else a * 2 + b

        @staticmethod
        def backward(ctx, g):
            r = make(g) if make is not None else g * 2
            Double.ptrs.append(r.data_ptr())
            if keep is not None:
                keep(r)
            return (r, r) if twice else r
    return Double


def test_a_fresh_first_gradient_becomes_grad_without_a_copy():
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    fn = _custom()
    fn.apply(x).sum().backward()
    assert x.grad.data_ptr() == fn.ptrs[0]          # stolen
    # ... and it is what the copy would have been: the observed path copies
    y = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with tp.dispatch.explain(records=True):
        fn.apply(y).sum().backward()
    assert y.grad.data_ptr() != fn.ptrs[1]          # copied while observed
    for a in (x, y):
        assert a.grad._version == 0 and not a.grad.requires_grad and a.grad.grad_fn is None
        assert a.grad.is_leaf and a.grad.is_contiguous() and a.grad.stride() == (1,)
    assert x.grad.tolist() == y.grad.tolist() == [2.0, 2.0, 2.0]
    # a profiler keeps no reference to the gradient: the step it times steals as well
    z = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with tp.profiler.profile() as prof:
        fn.apply(z).sum().backward()
    assert z.grad.data_ptr() == fn.ptrs[2]          # stolen while profiled
    assert "clone" not in {e.name for e in prof.events}
    xt = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (xt * 2).sum().backward()
    close(x.grad, xt.grad)


def _assert_not_aliased(leaf, held):
    """`.grad` must not share memory with a tensor the user can still modify."""
    before = leaf.grad.tolist()
    assert leaf.grad.data_ptr() != held.data_ptr()
    held.add_(100)
    assert leaf.grad.tolist() == before


def test_a_gradient_the_user_keeps_is_copied():
    kept = []
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    _custom(keep=kept.append).apply(x).sum().backward()
    _assert_not_aliased(x, kept[0])


def test_a_gradient_whose_numpy_view_the_user_keeps_is_copied():
    kept = []
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    _custom(keep=lambda r: kept.append(r.numpy())).apply(x).sum().backward()
    before = x.grad.tolist()
    kept[0] += 100
    assert x.grad.tolist() == before


def test_a_gradient_on_user_numpy_memory_is_copied():
    memory = np.array([5.0, 6.0], dtype=np.float32)
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    _custom(make=lambda g: tp.from_numpy(memory)).apply(x).sum().backward()
    memory += 100
    assert x.grad.tolist() == [5.0, 6.0]


def test_one_gradient_for_two_leaves_is_not_shared_by_them():
    a = tp.tensor([1.0, 2.0], requires_grad=True)
    b = tp.tensor([3.0, 4.0], requires_grad=True)
    _custom(twice=True).apply(a, b).sum().backward()
    assert a.grad.data_ptr() != b.grad.data_ptr()
    b.grad.add_(1)
    assert a.grad.tolist() == [2.0, 2.0] and b.grad.tolist() == [3.0, 3.0]


def test_gradients_seen_by_hooks_or_given_by_the_user_are_copied():
    seen = []
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(seen.append)                     # a leaf hook keeps its argument
    (x * 3).sum().backward()
    _assert_not_aliased(x, seen[0])

    mine = tp.tensor([7.0, 8.0])
    w = tp.tensor([1.0, 2.0], requires_grad=True)
    w.register_hook(lambda g: mine)                  # a hook hands over a user tensor
    (w * 3).sum().backward()
    _assert_not_aliased(w, mine)

    outs = []
    v = tp.tensor([1.0, 2.0], requires_grad=True)
    y = v * 3
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: outs.append(grad_inputs[0]))
    y.sum().backward()                               # a post-hook keeps the producer's output
    _assert_not_aliased(v, outs[0])

    seed = tp.tensor([1.0, 1.0])
    u = tp.tensor([1.0, 2.0], requires_grad=True)
    u.backward(seed)                                 # the root's gradient is the user's
    _assert_not_aliased(u, seed)


def test_a_node_called_by_hand_copies():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    acc = (x * 1).grad_fn.next_functions[0][0]
    assert type(acc) is AccumulateGrad
    g = tp.tensor([4.0, 5.0])
    acc(g)
    _assert_not_aliased(x, g)


def test_views_create_graph_and_channels_last_keep_their_copies():
    x, xt = leaf_pair([1.0, 2.0, 3.0])
    x.sum().backward()                               # an expanded view: copied contiguous
    xt.sum().backward()
    assert x.grad.stride() == xt.grad.stride() == (1,)
    close(x.grad, xt.grad)

    y = tp.tensor([1.0, 2.0], requires_grad=True)
    fn = _custom()
    fn.apply(y).sum().backward(create_graph=True)    # grad mode on: never stolen
    assert y.grad.data_ptr() != fn.ptrs[0]

    data = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
    w = tp.tensor(data).contiguous(memory_format=tp.channels_last).requires_grad_()
    wt = torch.tensor(data).contiguous(memory_format=torch.channels_last).requires_grad_()
    fn = _custom()
    fn.apply(w).sum().backward()
    (wt * 2).sum().backward()
    assert w.grad.stride() == wt.grad.stride()       # the layout contract's copy
    close(w.grad, wt.grad)


def test_stealing_and_copying_agree_over_a_training_loop_with_set_to_none():
    results = []
    for observed in (False, True):
        model = tp.nn.Linear(3, 2)
        with tp.no_grad():
            model.weight.copy_(tp.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]))
            model.bias.copy_(tp.tensor([0.01, -0.02]))
        opt = tp.optim.SGD(model.parameters(), lr=0.1)
        inputs = tp.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
        for _ in range(3):
            opt.zero_grad()
            if observed:
                with tp.dispatch.explain(records=True):
                    (model(inputs) ** 2).sum().backward()
            else:
                (model(inputs) ** 2).sum().backward()
            opt.step()
        results.append([p.detach().numpy().copy() for p in model.parameters()])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_no_stealing_where_the_reference_counts_are_not_known(monkeypatch):
    """On a Python whose frames may borrow references (CPython 3.14), the counts
    `_stealable` compares with prove nothing: the first gradient is copied there."""
    from tensorplay.autograd import node as node_module
    monkeypatch.setattr(node_module, "_COUNTS_HOLD", False)
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    fn = _custom()
    fn.apply(x).sum().backward()
    assert x.grad.data_ptr() != fn.ptrs[0]          # copied
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
