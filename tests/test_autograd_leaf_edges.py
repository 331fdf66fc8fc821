"""The edges a recorded op keeps to its inputs, and a leaf's AccumulateGrad, each against
PyTorch and against the general path.

- `Node.__init__` makes a node's edges from the op's differentiable inputs, one per
  input (one per element of a list, an empty one for an optional input not given):
  `input_edge`'s answer for each, its common cases written out there. An input that
  does not require grad gets the edge (None, 0): views, batched (vmap) and subclass
  tensors included.
- A leaf's AccumulateGrad (`grad_accumulator`) holds the leaf's impl and wraps it as
  `variable` on first use; it is kept weakly on the impl: while alive it is shared by
  every graph, and a dead one is made anew.
- A plain leaf with no AccumulateGrad alive is stored in the edge as its impl; the
  AccumulateGrad is made when the edge is first read (`next_functions`) or when backward
  starts (engine._discover), by the rule the record-time edge used: the live one, else new.
- Anomaly mode records the trace of the nodes and accumulators it makes; a graph and its
  leaf are freed without the garbage collector.

How the accumulator adds a gradient into `.grad`: tests/test_autograd_accumulation.py.
"""
import gc
import weakref

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.autograd.node import NO_EDGE, AccumulateGrad, Node, impl_edge, input_edge

from torch_twins import numpy_of


# ---- inputs that do not require grad -------------------------------------------------
def test_edges_of_inputs_that_do_not_require_grad():
    x = tp.ones(2, 3, requires_grad=True)
    w = tp.ones(2, 3)
    xt = torch.ones(2, 3, requires_grad=True)
    wt = torch.ones(2, 3)
    for a, b, at, bt in [(x, w, xt, wt), (w, x, wt, xt), (x, w.t().t(), xt, wt.t().t()),
                         (x, w[0], xt, wt[0])]:
        ours = [fn is None for fn, _ in tp.mul(a, b).grad_fn.next_functions]
        theirs = [fn is None for fn, _ in torch.mul(at, bt).grad_fn.next_functions]
        assert ours == theirs
    with tp.no_grad():
        v = x[0]                    # a view made in no_grad: requires grad through its base
    assert v._impl.requires_grad
    assert (v * w[0]).grad_fn.next_functions[1] == (None, 0)


def test_gradients_through_mixed_inputs_match_pytorch():
    data = np.random.rand(3, 4).astype(np.float32)
    x, xt = tp.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    c, ct = tp.tensor(data + 1), torch.tensor(data + 1)
    for _ in range(2):      # the second pass reuses the live accumulator of the first
        ((x * c + c) / (c + x.t().t())).sum().backward()
        ((xt * ct + ct) / (ct + xt.t().t())).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)


def test_node_init_makes_the_edges_input_edge_gives():
    """Every kind of input: a tensor that needs no gradient, a plain leaf with and
    without a live accumulator, outputs 0 and 1 of a node, a view of a leaf, a view
    that requires grad through its base only, a leaf view, an optional input not given,
    and a Tensor[] input (with a None element)."""
    x = tp.ones(4, requires_grad=True)
    kept = tp.ones(4, requires_grad=True)
    live = impl_edge(kept._impl)[0]                 # an accumulator alive
    _, second = tp.std_mean(x)                      # output 1 of StdMeanBackward0
    with tp.no_grad():
        no_grad_view = x[1:3]
    leaf_view = tp.ones(4)[:2]
    leaf_view.requires_grad_()
    inputs = [tp.ones(4), x, kept, x * 2, second, x[:2], no_grad_view, leaf_view, None,
              [x, None, x * 3]]
    expected = []
    for t in inputs:
        if t is None:
            expected.append(NO_EDGE)
        elif isinstance(t, list):
            expected.extend(NO_EDGE if e is None else input_edge(e._impl) for e in t)
        else:
            expected.append(input_edge(t._impl))
    node = Node(*inputs)
    assert node._edges == tuple(expected)
    assert expected[0] == NO_EDGE and expected[1] == (x._impl, 0)       # not made yet
    assert expected[2] == (live, 0) and expected[4][1] == 1
    assert expected[6] == NO_EDGE and expected[-2] == NO_EDGE
    # read: the leaf's edge becomes its accumulator, the one impl_edge gives
    assert node.next_functions[1] == impl_edge(x._impl)


def test_vmap_and_subclass_inputs_keep_their_edges():
    x = tp.ones(4, 3, requires_grad=True)
    w = tp.ones(3)
    out = tp.func.vmap(lambda row: row * w)(x)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones((4, 3)))


# ---- a leaf's AccumulateGrad ---------------------------------------------------------
def test_accumulate_grad_sets_every_field_node_init_sets():
    x = tp.ones(2, 2, requires_grad=True)
    acc = AccumulateGrad(x._impl)
    plain = Node()
    for slot in Node.__slots__:
        if slot in ("__weakref__", "_seq", "_output_meta"):
            continue
        assert getattr(acc, slot) == getattr(plain, slot), slot
    assert isinstance(acc._seq, int) and acc._seq < plain._seq     # made first, runs later
    assert acc._output_meta == (((2, 2), tp.float32, x.device),)
    assert acc.variable._impl is x._impl


def test_a_leafs_accumulator_is_kept_weakly_on_its_impl():
    x = tp.ones(2, 2, requires_grad=True)
    assert x._impl.grad_accumulator is None
    fresh = impl_edge(x._impl)[0]
    assert type(fresh) is AccumulateGrad and fresh.leaf is x._impl
    assert fresh.next_functions == () and fresh._hooks is None
    assert fresh._output_meta == (((2, 2), tp.float32, x.device),)
    assert x._impl.grad_accumulator() is fresh
    assert impl_edge(x._impl) == (fresh, 0)


def test_leaf_edge_reuses_the_live_accumulator_and_remakes_a_dead_one():
    x = tp.ones(2, requires_grad=True)
    first = impl_edge(x._impl)[0]
    assert impl_edge(x._impl)[0] is first          # alive: shared by every graph
    y = x * 2
    assert y.grad_fn.next_functions[0][0] is first
    del first, y
    again = impl_edge(x._impl)[0]
    assert isinstance(again, AccumulateGrad) and again.variable._impl is x._impl


def test_accumulator_graph_structure_and_variable(leaves):
    x, xt, w, wt = leaves
    y, yt = x * w, xt * wt
    acc, acc_t = y.grad_fn.next_functions[0][0], yt.grad_fn.next_functions[0][0]
    assert type(acc).__name__ == type(acc_t).__name__ == "AccumulateGrad"
    assert y.grad_fn.next_functions[1] == (None, 0) and yt.grad_fn.next_functions[1] == (None, 0)
    assert acc.leaf is x._impl and acc._variable is None      # not wrapped until asked for
    assert acc.variable._impl is x._impl and acc.variable is acc.variable
    assert (x * 3).grad_fn.next_functions[0][0] is acc       # alive: one per leaf


def test_anomaly_mode_records_the_accumulator_trace_too():
    x = tp.ones(2, requires_grad=True)
    with tp.autograd.detect_anomaly():
        acc = impl_edge(x._impl)[0]
        assert acc._anomaly_trace is not None
    del acc


@pytest.mark.filterwarnings("ignore:Anomaly Detection")
def test_anomaly_mode_traces_recorded_nodes_and_accumulators():
    x = tp.ones(2, requires_grad=True)
    with tp.autograd.detect_anomaly():
        y = x * 3
        assert y.grad_fn._anomaly_trace is not None
        assert y.grad_fn.next_functions[0][0]._anomaly_trace is not None
    assert (x * 3).grad_fn._anomaly_trace is None


# ---- a leaf's AccumulateGrad made when its edge is first read ------------------------
def test_a_leaf_edge_is_the_leaf_until_read_then_its_accumulator():
    from tensorplay._impl import TensorImpl
    x = tp.ones(3, requires_grad=True)
    y = x * 2
    node = y.grad_fn
    assert type(node._edges[0][0]) is TensorImpl and node._edges[0][0] is x._impl
    acc = node.next_functions[0][0]
    assert type(acc) is AccumulateGrad and acc.leaf is x._impl
    assert node._edges[0][0] is acc and node.next_functions[0][0] is acc     # kept
    assert x._impl.grad_accumulator() is acc
    z = x + 1           # the accumulator is alive: the edge is it, as impl_edge gives
    assert z.grad_fn._edges[0][0] is acc


def test_graphs_built_before_a_read_share_one_accumulator():
    x = tp.ones(3, requires_grad=True)
    a, b = x * 2, x * 3
    assert a.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0]


def test_views_subclasses_and_non_plain_leaves_get_their_accumulator_at_once():
    from tensorplay._impl import TensorImpl
    base = tp.ones(2, 3)
    v = base[0]
    v.requires_grad_()
    assert type(v._impl) is not TensorImpl
    assert type((v * 2).grad_fn._edges[0][0]) is AccumulateGrad


def _pair(data, requires_grad=True):
    return (tp.tensor(data, requires_grad=requires_grad),
            torch.tensor(data, requires_grad=requires_grad))


def test_backward_through_deferred_accumulators_matches_pytorch():
    data = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)
    x, xt = _pair(data)
    w, wt = _pair(data[0] + 1)
    out = (x * w + x).sum() + (w * w).sum()            # x used twice, w three times
    out_t = (xt * wt + xt).sum() + (wt * wt).sum()
    out.backward(retain_graph=True)
    out_t.backward(retain_graph=True)
    out.backward()
    out_t.backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-6)


def test_grad_with_inputs_and_create_graph_through_deferred_accumulators():
    data = np.array([0.5, -1.5, 2.0], np.float64)
    x, xt = _pair(data)
    w, wt = _pair(data * 2)
    y, yt = (x * w * x).sum(), (xt * wt * xt).sum()
    (gx,) = tp.autograd.grad(y, [x], create_graph=True)
    (gxt,) = torch.autograd.grad(yt, [xt], create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), gxt.detach().numpy())
    gx.sum().backward()
    gxt.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy())
    assert x.grad is not None and xt.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
    gw = tp.autograd.grad((x * w).sum(), w)
    gwt = torch.autograd.grad((xt * wt).sum(), wt)
    np.testing.assert_allclose(gw[0].detach().numpy(), gwt[0].detach().numpy())


def test_hooks_of_leaves_with_deferred_accumulators_run_like_pytorch():
    data = np.array([1.0, 2.0], np.float32)
    x, xt = _pair(data)
    w, wt = _pair(data + 1)
    order, order_t = [], []
    for name, t, log in [("x", x, order), ("w", w, order), ("x", xt, order_t),
                         ("w", wt, order_t)]:
        t.register_hook(lambda g, name=name, log=log: log.append("hook " + name))
        t.register_post_accumulate_grad_hook(lambda p, name=name, log=log:
                                             log.append("post " + name))
    (x * w).sum().backward()
    (xt * wt).sum().backward()
    assert sorted(order) == sorted(order_t)
    for log in (order, order_t):      # each leaf's hook before its own accumulation
        for name in "xw":
            assert log.index("hook " + name) < log.index("post " + name)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_explain_shows_the_accumulators_of_deferred_leaves():
    x = tp.ones(2, requires_grad=True)
    loss = (x * 2).sum()
    with tp.dispatch.explain(records=True) as ex:
        loss.backward()
    nodes = [h.text for h in ex.records if h.kind == "node"]
    assert nodes == ["SumBackward0 (backward of sum)", "MulBackward0 (backward of mul.Tensor)",
                     "AccumulateGrad"]


# ---- hooks, retain_grad and memory ---------------------------------------------------
def test_leaf_hooks_and_post_accumulate_hooks_run_like_pytorch(leaves):
    x, xt, w, wt = leaves
    seen, seen_t = [], []
    x.register_hook(lambda g: g * 2)
    xt.register_hook(lambda g: g * 2)
    x.register_post_accumulate_grad_hook(
        lambda t: seen.append((t._impl is x._impl, numpy_of(t.grad))))
    xt.register_post_accumulate_grad_hook(lambda t: seen_t.append((t is xt, t.grad.numpy())))
    (x * w).sum().backward()
    (xt * wt).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
    assert [s[0] for s in seen] == [s[0] for s in seen_t] == [True]
    np.testing.assert_allclose(seen[0][1], seen_t[0][1])


def test_retain_grad_of_a_non_leaf(leaves):
    x, xt, w, wt = leaves
    y, yt = x + w, xt + wt
    y.retain_grad()
    yt.retain_grad()
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), yt.grad.numpy())
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_leaf_deleted_while_its_graph_lives():
    x, xt = tp.tensor([1.0, -2.0], requires_grad=True), torch.tensor([1.0, -2.0], requires_grad=True)
    w, wt = tp.tensor([3.0, 0.5]), torch.tensor([3.0, 0.5])
    grads, grads_t = [], []
    x.register_hook(lambda g: grads.append(numpy_of(g)))
    xt.register_hook(lambda g: grads_t.append(g.numpy()))
    impl_ref = weakref.ref(x._impl)
    y, yt = (x * w).sum(), (xt * wt).sum()
    del x, xt
    assert impl_ref() is not None                   # the graph's accumulator holds it
    y.backward()
    yt.backward()
    np.testing.assert_allclose(grads[0], grads_t[0])
    assert impl_ref().grad is not None
    del y, yt
    assert impl_ref() is None


def test_graph_and_leaf_are_freed_without_the_garbage_collector():
    gc.disable()
    try:
        x = tp.ones(3, requires_grad=True)
        y = tp.add(x, tp.ones(3)) * 2
        refs = [weakref.ref(x._impl), weakref.ref(y.grad_fn),
                weakref.ref(y.grad_fn.next_functions[0][0].next_functions[0][0])]
        acc = refs[2]()
        assert isinstance(acc, AccumulateGrad)
        acc.variable                                # the wrapped leaf made, then freed too
        del acc
        del y
        assert refs[1]() is None and refs[2]() is None      # the graph dies with its output
        assert refs[0]() is not None
        del x
        assert refs[0]() is None
    finally:
        gc.enable()
