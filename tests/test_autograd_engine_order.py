"""The order in which the backward engine runs nodes and hooks, against PyTorch and
against the documented policy.

- The engine runs the ready node created last (a heap keyed by creation order), the
  order PyTorch shares for the nodes of ops (its leaves' AccumulateGrad run as soon as
  they are ready; TensorPlay's when their turn comes, so the order is compared on the
  other nodes). A node whose run leaves one node ready, or two at once, keeps it.
- The usual features keep working with it: diamonds, shared leaves, multiple roots,
  retain_graph, create_graph, hooks, non-contiguous leaves, grad() of some inputs.

Each test compares with PyTorch; the ordering tests also compare with a reference heap
walk written out here, and explain() (which runs every node through the observers'
path) must compute the same gradients.
"""
import heapq
import random

import numpy as np
import pytest
import torch

import tensorplay as tp

from torch_twins import close, leaf_pair


# ---- order of execution --------------------------------------------------------------
def _record_order(module, roots, order):
    """Register a pre-hook on every non-leaf node reachable from `roots`; each appends
    its node's label (the op's name and the number the walk gave it) when it runs."""
    seen = {}
    stack = [r.grad_fn for r in roots]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen or type(fn).__name__ == "AccumulateGrad":
            continue
        seen[fn] = len(seen)
        label = f"{type(fn).__name__}#{seen[fn]}"
        fn.register_prehook(lambda grads, label=label: order.append(label))
        stack.extend(child for child, _ in fn.next_functions)
    return seen


def _random_graph(module, leaves, rng, steps):
    """Ops on a growing pool of tensors: two-input ops make diamonds and shared leaves,
    `sum` and `expand` change shapes, and some pool members are never used."""
    pool = list(leaves)
    for _ in range(steps):
        kind = rng.randrange(5)
        a, b = pool[rng.randrange(len(pool))], pool[rng.randrange(len(pool))]
        if kind == 0:
            pool.append(a * b)
        elif kind == 1:
            pool.append(a + b * 0.5)
        elif kind == 2:
            pool.append(a * 2 - 1)
        elif kind == 3:
            pool.append(a.sum().expand(3) * b)
        else:
            pool.append((a * a).sum(0, keepdim=True) + b)
    return pool


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_match_torch_in_gradients_and_node_order(seed):
    data = [np.random.default_rng(seed + i).standard_normal(3).astype(np.float32)
            for i in range(3)]
    n_roots = 1 + seed % 3
    results = {}
    for module in (tp, torch):
        leaves = [module.tensor(d, requires_grad=True) for d in data]
        pool = _random_graph(module, leaves, random.Random(seed), steps=8)
        roots = [p.sum() for p in pool[-n_roots:]]
        order = []
        _record_order(module, roots, order)
        module.autograd.backward(roots)
        results[module] = ([leaf.grad for leaf in leaves], order)
    (grads, order), (grads_t, order_t) = results[tp], results[torch]
    for g, gt in zip(grads, grads_t):
        if gt is None:
            assert g is None
        else:
            close(g, gt)
    assert order == order_t


def _reference_order(roots):
    """The documented policy written out: count each node's dependencies, then run the
    ready node created last, until none is left."""
    deps, stack, seen = {}, list(roots), set(roots)
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None:
                deps[child] = deps.get(child, 0) + 1
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
    ready = [(-fn._seq, fn) for fn in dict.fromkeys(roots) if fn not in deps]
    heapq.heapify(ready)
    order = []
    while ready:
        fn = heapq.heappop(ready)[1]
        order.append(fn)
        for child, _ in fn.next_functions:
            if child is not None:
                deps[child] -= 1
                if deps[child] == 0:
                    heapq.heappush(ready, (-child._seq, child))
    return order


@pytest.mark.parametrize("seed", range(6))
def test_every_node_runs_in_the_heap_order_leaves_included(seed):
    x = tp.tensor(np.arange(3, dtype=np.float32), requires_grad=True)
    w = tp.tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    pool = _random_graph(tp, [x, w], random.Random(seed), steps=7)
    roots = [pool[-1].sum(), pool[-2].sum()]
    expected = _reference_order([r.grad_fn for r in roots])
    ran = []
    for fn in expected:
        fn.register_prehook(lambda grads, fn=fn: ran.append(fn))
    tp.autograd.backward(roots)
    assert ran == expected


def test_a_chain_and_the_heap_agree_when_a_node_frees_two_at_once():
    """`y = a * b` with a and b made by separate ops: MulBackward makes both ready at
    once, the heap picks the newer; then the chain below each."""
    for module in (tp, torch):
        x = module.tensor([1.0, 2.0], requires_grad=True)
        a = (x * 3).exp()
        b = (x + 1).sin()
        y = (a * b).sum()
        order = []
        _record_order(module, [y], order)
        y.backward()
        if module is tp:
            order_tp, grad_tp = order, x.grad
        else:
            assert order == order_tp
            close(grad_tp, x.grad)


def _recording_function(module, label, order):
    """A custom Function that records when its backward runs: a node with no hook on it,
    whose order is seen from inside."""
    class Record(module.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1

        @staticmethod
        def backward(ctx, g):
            order.append(label)
            return g
    return Record.apply


def test_unhooked_nodes_run_in_torch_order():
    orders = []
    for mod, (x, _) in ((tp, leaf_pair([1.0, 2.0])), (torch, leaf_pair([1.0, 2.0])[::-1])):
        order = []
        rec = {k: _recording_function(mod, k, order) for k in "abcde"}
        a = rec["a"](x)
        b, c = rec["b"](a * 2), rec["c"](a + 1)
        d = rec["d"](b * c)
        e = rec["e"](c.exp())
        (d.sum() + e.sum()).backward()
        orders.append(order)
    assert orders[0] == orders[1]


def test_explain_runs_every_node_through_the_observers_and_agrees():
    x, xt = leaf_pair([0.5, -1.0, 2.0])
    with tp.dispatch.explain(records=True) as ex:
        (x * 2 + 1).sum().backward()
    (xt * 2 + 1).sum().backward()
    close(x.grad, xt.grad)
    nodes = [h.text.split()[0] for h in ex.records if h.kind == "node"]
    assert nodes == ["SumBackward0", "AddBackward0", "MulBackward0", "AccumulateGrad"]


# ---- hooks ---------------------------------------------------------------------------
def test_hooks_see_and_replace_gradients_in_torch_order():
    x, xt = leaf_pair([1.0, 2.0])
    seen = {}
    for a, m in ((x, tp), (xt, torch)):
        log = seen[m] = []
        h = a * 2
        k = h + 1
        h.register_hook(lambda g, log=log: log.append(("h", g.tolist())) or g * 10)
        k.register_hook(lambda g, log=log: log.append(("k", g.tolist())))
        a.register_hook(lambda g, log=log: log.append(("leaf", g.tolist())))
        k.grad_fn.register_prehook(lambda gs, log=log: log.append(("pre", len(gs))))
        k.sum().backward()
    assert seen[tp] == seen[torch]
    close(x.grad, xt.grad)


def test_hooks_of_every_kind_run_in_torch_order():
    logs = []
    for mod in (tp, torch):
        log = []
        x = mod.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: log.append("leaf tensor hook"))
        x.register_post_accumulate_grad_hook(lambda t: log.append("post accumulate"))
        y = x * 3
        y.retain_grad()
        y.register_hook(lambda g: log.append("tensor hook") or g * 2)
        y.grad_fn.register_prehook(lambda grads: log.append("pre hook"))
        y.grad_fn.register_hook(lambda gi, go: log.append("post hook"))
        y.sum().backward()
        logs.append((log, x.grad.tolist(), y.grad.tolist()))
    assert logs[0] == logs[1]


# ---- the usual features ----------------------------------------------------------------
def test_diamond_shared_leaf_and_accumulation_into_an_existing_grad():
    x, xt = leaf_pair([1.0, -2.0, 3.0])
    w, wt = leaf_pair([0.5, 0.5, 2.0])
    for a, b in ((x, w), (xt, wt)):
        for _ in range(2):      # the second pass adds into .grad in place
            h = a * b
            ((h + a) * (h - b)).sum().backward()
    close(x.grad, xt.grad)
    close(w.grad, wt.grad)


def test_multiple_roots_retain_graph_and_a_second_pass():
    x, xt = leaf_pair([1.0, 2.0, 3.0])
    for a in (x, xt):
        h = a * a
        y1, y2 = h.sum(), (h * 3).mean()
        (tp if a is x else torch).autograd.backward([y1, y2], retain_graph=True)
        (tp if a is x else torch).autograd.backward([y2])
    close(x.grad, xt.grad)
    h = x * x
    y = h.sum()
    y.backward()
    with pytest.raises(tp.errors.AutogradError, match="second time"):
        y.backward()


def test_create_graph_double_backward_follows_torch():
    x, xt = leaf_pair([0.5, 1.5, -2.0])
    for a, m in ((x, tp), (xt, torch)):
        y = (a * a * a).sum()
        (g,) = m.autograd.grad(y, a, create_graph=True)
        g.sum().backward()
    close(x.grad, xt.grad)


def test_gradients_of_non_contiguous_leaves():
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    x, xt = leaf_pair(base)
    for a in (x, xt):
        t = a.t()                       # a transposed view in the middle of the graph
        (t * t[:, :1] + t.sum(0)).sum().backward()
    close(x.grad, xt.grad)


def test_grad_restricted_to_some_inputs_still_skips_the_others():
    x, xt = leaf_pair([1.0, 2.0])
    w, wt = leaf_pair([3.0, 4.0])
    (gx,) = tp.autograd.grad((x * w).sum(), [x])
    (gxt,) = torch.autograd.grad((xt * wt).sum(), [xt])
    close(gx, gxt)
    assert w.grad is None and x.grad is None
