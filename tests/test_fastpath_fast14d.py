"""The backward engine's round-4 shortcuts (issue 13) against PyTorch and against the
general path.

- A node whose run leaves exactly one node ready runs it next without the heap: the
  order must stay the heap's (newest ready node first), which PyTorch shares for the
  nodes of ops (its leaves' AccumulateGrad run as soon as they are ready; TensorPlay's
  when their turn comes, so the order is compared on the other nodes).
- Node classes read their fields without a `__getattr__`: `grad_fn._saved_<name>` is a
  property per slot (a `__getattr__` for classes whose instances take any attribute).
- `sum_to` returns a gradient of the right shape at once.

Each test compares with PyTorch; the ordering tests also compare with a reference
heap walk written out here, and explain() (which runs every node through the
observers' path) must compute the same gradients.
"""
import heapq
import random

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.autograd.formulas import sum_to
from tensorplay.autograd.node import AccumulateGrad, Node
from tensorplay.utils.logging_tensor import LoggingTensor


def pair(array, requires_grad=True):
    array = np.asarray(array, dtype=np.float32)
    return (tp.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def close(a, b):
    assert a is not None and b is not None
    np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


# ---- order of execution ---------------------------------------------------------------
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
    once, the heap picks the newer; a chain below each runs without the heap."""
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


def test_explain_runs_every_node_through_the_observers_and_agrees():
    x, xt = pair([0.5, -1.0, 2.0])
    with tp.dispatch.explain(records=True) as ex:
        (x * 2 + 1).sum().backward()
    (xt * 2 + 1).sum().backward()
    close(x.grad, xt.grad)
    nodes = [h.text.split()[0] for h in ex.records if h.kind == "node"]
    assert nodes == ["SumBackward0", "AddBackward0", "MulBackward0", "AccumulateGrad"]


# ---- the usual features around the shortcut ---------------------------------------------
def test_diamond_shared_leaf_and_accumulation_into_an_existing_grad():
    x, xt = pair([1.0, -2.0, 3.0])
    w, wt = pair([0.5, 0.5, 2.0])
    for a, b in ((x, w), (xt, wt)):
        for _ in range(2):      # the second pass adds into .grad in place
            h = a * b
            ((h + a) * (h - b)).sum().backward()
    close(x.grad, xt.grad)
    close(w.grad, wt.grad)


def test_multiple_roots_retain_graph_and_a_second_pass():
    x, xt = pair([1.0, 2.0, 3.0])
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
    x, xt = pair([0.5, 1.5, -2.0])
    for a, m in ((x, tp), (xt, torch)):
        y = (a * a * a).sum()
        (g,) = m.autograd.grad(y, a, create_graph=True)
        g.sum().backward()
    close(x.grad, xt.grad)


def test_hooks_see_and_replace_gradients_in_torch_order():
    x, xt = pair([1.0, 2.0])
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


def test_gradients_of_non_contiguous_leaves():
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    x, xt = pair(base)
    for a in (x, xt):
        t = a.t()                       # a transposed view in the middle of the graph
        (t * t[:, :1] + t.sum(0)).sum().backward()
    close(x.grad, xt.grad)


def test_grad_restricted_to_some_inputs_still_skips_the_others():
    x, xt = pair([1.0, 2.0])
    w, wt = pair([3.0, 4.0])
    (gx,) = tp.autograd.grad((x * w).sum(), [x])
    (gxt,) = torch.autograd.grad((xt * wt).sum(), [xt])
    close(gx, gxt)
    assert w.grad is None and x.grad is None


# ---- grad_fn._saved_<name> without __getattr__ ------------------------------------------
def test_saved_values_read_like_torch():
    x, xt = pair([1.0, 2.0, 3.0])
    w, wt = pair([2.0, 0.5, 1.0])
    y, yt = x * w, xt * wt
    assert y.grad_fn._saved_self is x and yt.grad_fn._saved_self is xt
    assert y.grad_fn._saved_other is w and yt.grad_fn._saved_other is wt
    assert (x * 2.5).grad_fn._saved_self is None is (xt * 2.5).grad_fn._saved_self
    z, zt = x.sum(), xt.sum()
    assert tuple(z.grad_fn._saved_self_sizes) == tuple(zt.grad_fn._saved_self_sym_sizes)
    a = tp.add(x, x, alpha=3)
    assert a.grad_fn._saved_alpha == torch.add(xt, xt, alpha=3).grad_fn._saved_alpha
    e = x.exp()
    close(e.grad_fn._saved_result, xt.exp())
    with pytest.raises(AttributeError, match="'MulBackward0' object has no attribute "
                                             "'_saved_nothing'"):
        y.grad_fn._saved_nothing
    with pytest.raises(AttributeError, match="'MulBackward0' object has no attribute "
                                             "'nothing'"):
        y.grad_fn.nothing


def test_saved_tensors_freed_after_backward_still_raise_through_the_property():
    x, _ = pair([1.0, 2.0])
    y = x * x
    y.sum().backward()
    with pytest.raises(tp.errors.AutogradError, match="after they have already been freed"):
        y.grad_fn._saved_self


def test_node_classes_have_no_getattr_unless_instances_take_any_attribute():
    x, _ = pair([1.0, 2.0])
    graph = [(x * 2 + 1).sum().grad_fn]
    while graph[-1].next_functions:
        graph.append(graph[-1].next_functions[0][0])
    for fn in graph:
        assert not hasattr(type(fn), "__getattr__"), type(fn).__name__
    assert type(graph[-1]) is AccumulateGrad

    class Slotted(Node):
        __slots__ = ("value_", "count")

    class Free(Node):        # no __slots__: a __dict__, any attribute
        pass
    s, f = Slotted(), Free()
    s.value_, s.count = 7, 3
    f.weight_ = 5
    assert (s._saved_value, s._saved_count, f._saved_weight) == (7, 3, 5)
    assert not hasattr(Slotted, "__getattr__") and hasattr(Free, "__getattr__")
    with pytest.raises(AttributeError, match="'Free' object has no attribute 'other'"):
        f.other

    class Custom(tp.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.scale_ = 4
            return a * 4

        @staticmethod
        def backward(ctx, g):
            return g * ctx.scale_
    out = Custom.apply(x)
    assert out.grad_fn._saved_scale == 4
    out.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), [4.0, 4.0])


# ---- sum_to -----------------------------------------------------------------------------
def test_sum_to_returns_the_gradient_itself_when_the_shape_matches():
    g = tp.ones(2, 3)
    assert sum_to(g, (2, 3)) is g
    assert sum_to(g, [2, 3]) is g           # a list of sizes takes the general test
    assert tuple(sum_to(g, (1, 3)).shape) == (1, 3)
    assert tuple(sum_to(g, (3,)).shape) == (3,)
    logged = LoggingTensor(tp.ones(2, 3))
    assert sum_to(logged, (2, 3)) is logged


def test_broadcast_gradients_are_still_reduced():
    x, xt = pair(np.ones((1, 3)))
    w, wt = pair(np.arange(6).reshape(2, 3))
    for a, b in ((x, w), (xt, wt)):
        (a * b + a).sum().backward()
    close(x.grad, xt.grad)
    close(w.grad, wt.grad)
