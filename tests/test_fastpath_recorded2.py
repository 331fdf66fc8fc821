"""Round 5 of the dispatch fast path (issue 13): a recorded op makes its node and a leaf's
AccumulateGrad without a class call, and reads no edge for an input that does not require
grad. Each shortcut against the general path it stands in for, and against PyTorch.

- The generated autograd wrappers write Node.__init__'s fields themselves
  (`gen_autograd.WRAPPER`): the same fields, the same values.
- `impl_edge` writes AccumulateGrad.__init__'s fields itself: the same fields and values.
- An input that does not require grad gets the edge (None, 0), impl_edge's answer for it,
  without the call: views, batched (vmap) and subclass tensors included.
- A plain leaf with no AccumulateGrad alive is stored in the edge as its impl; the
  AccumulateGrad is made when the edge is first read (`next_functions`) or when backward
  starts (engine._discover), by the rule the record-time edge used: the live one, else new.
- An input no formula reads in this call is the shared NOT_SAVED.
"""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.autograd.graph_edges import impl_edge
from tensorplay.autograd.node import AccumulateGrad

# Fields whose values differ between two nodes by construction.
PER_NODE = {"__weakref__", "_seq", "_output_meta", "_edges"}


def _slots(cls):
    names = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return names


def test_a_fresh_accumulator_matches_accumulate_grad_init():
    x = tp.ones(2, 2, requires_grad=True)
    fresh = impl_edge(x._impl)[0]
    made = AccumulateGrad(x._impl)
    assert type(fresh) is AccumulateGrad
    for slot in _slots(AccumulateGrad):
        if slot in PER_NODE - {"_output_meta"} or slot == "__weakref__":
            continue
        assert getattr(fresh, slot) == getattr(made, slot), slot
    assert fresh._seq < made._seq
    assert x._impl.grad_accumulator() is fresh
    assert impl_edge(x._impl) == (fresh, 0)


@pytest.mark.filterwarnings("ignore:Anomaly Detection")
def test_anomaly_mode_traces_recorded_nodes_and_accumulators():
    x = tp.ones(2, requires_grad=True)
    with tp.autograd.detect_anomaly():
        y = x * 3
        assert y.grad_fn._anomaly_trace is not None
        assert y.grad_fn.next_functions[0][0]._anomaly_trace is not None
    assert (x * 3).grad_fn._anomaly_trace is None


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


def test_vmap_and_subclass_inputs_keep_their_edges():
    x = tp.ones(4, 3, requires_grad=True)
    w = tp.ones(3)
    out = tp.func.vmap(lambda row: row * w)(x)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones((4, 3)))


# ---- a leaf's AccumulateGrad made when its edge is first read ---------------------------------
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
