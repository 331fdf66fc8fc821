"""Recording an op for autograd: the generated wrapper, its node and what the node
saves, against PyTorch and against the watched path.

- A generated wrapper reads the steps of autograd/recording.py: nothing to record, run
  the op below autograd at once; else make the node (`Node.__init__` makes its edges),
  save what the formulas read, run the op below autograd (`below_autograd`) and make
  the node the result's grad_fn (`set_history`). Unwatched, `below_autograd` takes the
  route memo; while explain() or a profiler listens, the watched loop; a Python key or
  mode below autograd sees the op either way. Both give the same graph and gradients.
- `set_history` attaches a fresh single floating output in its first branch, which
  writes what the general branch (`_attach`) writes, the REQUIRES_GRAD flag included;
  an output that already has history, is not floating, or is one of several takes the
  general branch (and its errors).
- Node classes read their fields without a `__getattr__`: `grad_fn._saved_<name>` is a
  property per slot (a `__getattr__` only for classes whose instances take any
  attribute). An input no formula reads in this call is the shared NOT_SAVED.

The edges a node keeps to its inputs (a leaf's AccumulateGrad):
tests/test_autograd_leaf_edges.py.
"""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay._generated import autograd_wrappers, ops
from tensorplay._generated.autograd_nodes import AddBackward0
from tensorplay.dispatch.keys import REQUIRES_GRAD
from tensorplay.autograd.recording import set_history
from tensorplay.autograd.node import AccumulateGrad, Node
from tensorplay.errors import AutogradError
from tensorplay.utils.dispatch_mode import LoggingMode

from torch_twins import close, leaf_pair, numpy_of


def _graph(fn):
    """The backward graph under `fn` as nested (node name, children) for comparison."""
    if fn is None:
        return None
    return (type(fn).__name__, tuple(_graph(child) for child, _ in fn.next_functions))


def _step(lib, x, w):
    """A small recorded program: leaf and non-leaf inputs, a plain input, wrapped numbers."""
    y = x * 2 + 1
    z = lib.add(y, w, alpha=3) - x / 4
    return (z * z).sum() + x.sum()


# ---- the op below autograd, watched or not ------------------------------------------
def test_recorded_program_matches_pytorch_values_graph_and_gradients(leaves):
    x, xt, w, wt = leaves
    loss, loss_t = _step(tp, x, w), _step(torch, xt, wt)
    np.testing.assert_allclose(numpy_of(loss), loss_t.detach().numpy(), rtol=1e-6)
    assert _graph(loss.grad_fn) == _graph(loss_t.grad_fn)
    loss.backward()
    loss_t.backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
    assert w.grad is None and wt.grad is None


def test_the_route_memo_and_the_watched_loop_give_the_same_graph_and_gradients(leaves):
    """explain() sets the dispatcher's watch: `below_autograd` then takes the watched
    loop instead of the route memo."""
    x, _, w, _ = leaves
    plain = _step(tp, x, w)
    plain.backward()
    grad_plain = x.grad.clone()
    x.grad = None
    with tp.dispatch.explain(records=True) as log:
        watched = _step(tp, x, w)
    assert any(h.kind == "dispatch" and "AutogradCPU" in h.text for h in log.records)
    # the hop below autograd is reported, so that path went through the dispatcher
    assert any(h.kind == "dispatch" and h.text.startswith("CPU") for h in log.records)
    watched.backward()
    np.testing.assert_array_equal(numpy_of(watched), numpy_of(plain))
    assert _graph(watched.grad_fn) == _graph(plain.grad_fn)
    np.testing.assert_array_equal(x.grad.numpy(), grad_plain.numpy())


def test_a_dispatch_mode_below_autograd_still_sees_the_recorded_op(leaves):
    """A mode adds the Python key to the thread's included mask: the wrapper's call
    below autograd reaches the mode."""
    x, _, w, _ = leaves
    with LoggingMode() as log:
        y = tp.add(x, w)
    assert any("add.Tensor" in line for line in log.lines)
    assert type(y.grad_fn).__name__ == "AddBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3), np.float32))


def test_in_place_op_on_a_non_leaf_bumps_the_version_like_torch(leaves):
    x, xt, w, wt = leaves
    y, yt = x * 1, xt * 1
    before = y._version
    y.add_(w)
    yt.add_(wt)
    assert y._version == before + 1 == yt._version
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__ == "AddBackward0"
    y.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_a_saved_tensor_modified_in_place_still_raises(leaves):
    x, xt, _, _ = leaves
    y, yt = x * 1, xt * 1
    z, zt = y * y, yt * yt
    y.add_(1)
    yt.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        zt.sum().backward()
    with pytest.raises(AutogradError, match="modified by an inplace operation"):
        z.sum().backward()


def test_a_missing_backend_kernel_raises_the_dispatcher_error():
    """A backend slot with nothing in it: the route below the wrapper misses there, and
    the miss error names the op and the key, exactly as the dispatcher's loop does."""
    from tensorplay.dispatch.dispatcher import Routes
    handle = ops.add_Tensor
    saved, saved_routes = list(handle.resolved), handle.routes
    x = tp.ones(2, requires_grad=True)
    try:
        handle.resolved = [None] + saved[1:]        # as if CPU had no kernel for add
        handle.routes = Routes(handle)              # what _resolve gives a new table
        with pytest.raises(NotImplementedError, match="add.Tensor.*CPU"):
            tp.add(x, x)
    finally:
        handle.resolved, handle.routes = saved, saved_routes
    assert tp.add(x, x).grad_fn is not None


def test_no_wrapper_argument_is_shadowed_by_a_local():
    import inspect
    from tensorplay.codegen.gen_autograd import WRAPPER_LOCALS
    for fn in autograd_wrappers.WRAPPERS.values():
        params = list(inspect.signature(fn).parameters)[1:]      # after `ks`
        assert not set(params) & WRAPPER_LOCALS, fn.__name__


# ---- set_history ---------------------------------------------------------------------
def test_set_history_on_a_fresh_output_records_its_meta():
    a = tp.ones(2, 3, dtype=tp.float64)
    node = AddBackward0()
    set_history(a, node)
    assert a.grad_fn is node and a.requires_grad and a._impl.output_nr == 0
    assert node._output_meta == (((2, 3), tp.float64, a.device),)


def test_set_history_refuses_an_output_that_has_history():
    x = tp.ones(2, requires_grad=True)
    with pytest.raises(AutogradError, match="already has autograd history"):
        set_history(x, AddBackward0())          # a leaf that requires grad
    y = x * 2
    with pytest.raises(AutogradError, match="already has autograd history"):
        set_history(y, AddBackward0())          # an output with a grad_fn


def test_set_history_refuses_an_integer_output_like_pytorch():
    x = tp.ones(3, requires_grad=True)
    xt = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        xt.sum(dtype=torch.int32)
    with pytest.raises(AutogradError, match="Autograd not support dtype"):
        x.sum(dtype=tp.int32)


def test_set_history_on_outputs_and_differentiability_lists():
    x = tp.tensor([3.0, 1.0, 2.0], requires_grad=True)
    xt = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
    values, indices = x.sort()
    vt, it = xt.sort()
    assert values.grad_fn is not None and indices.grad_fn is None
    assert not indices.requires_grad
    (values * tp.tensor([1.0, 2.0, 3.0])).sum().backward()
    (vt * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


AUTOGRAD_FIELDS = ("requires_grad", "output_nr", "retains_grad", "base", "grad",
                   "grad_accumulator", "hooks", "wrapped_number", "keys", "grad_fn")


def test_the_fresh_output_branch_writes_what_the_general_branch_writes():
    """set_history's first branch (a fresh single floating output) against `_attach`,
    which an output-differentiability list sends the same output to."""
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    b = tp.tensor([3.0, 4.0])
    fresh, general = tp.add(x.detach(), b), tp.add(x.detach(), b)
    fresh_node, general_node = AddBackward0(x, b), AddBackward0(x, b)
    set_history(fresh, fresh_node)
    set_history(general, general_node, output_differentiability=(True,))
    for field in AUTOGRAD_FIELDS:
        mine, theirs = getattr(fresh._impl, field), getattr(general._impl, field)
        if field == "grad_fn":
            assert mine is fresh_node and theirs is general_node
        else:
            assert mine == theirs, field
    assert fresh._impl.keys & REQUIRES_GRAD and fresh.requires_grad
    assert fresh_node._output_meta == general_node._output_meta == \
        (((2,), tp.float32, fresh.device),)
    recorded = tp.add(x, b)                  # what the wrapper made, through the same branch
    for field in AUTOGRAD_FIELDS[:-1]:
        assert getattr(recorded._impl, field) == getattr(fresh._impl, field), field
    assert recorded.grad_fn._output_meta == fresh_node._output_meta


def test_integer_and_multi_output_results_take_set_history():
    x, xt = tp.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        xt.sum(dtype=torch.int32)
    with pytest.raises(AutogradError, match="Autograd not support dtype: Int"):
        x.sum(dtype=tp.int32)
    assert not x.to(tp.int32).requires_grad and not xt.to(torch.int32).requires_grad
    values, indices = x.max(dim=0)
    vt, it = xt.max(dim=0)
    assert values.requires_grad and not indices.requires_grad and not it.requires_grad


# ---- grad mode, inference mode, in-place on leaves -----------------------------------
def test_no_grad_and_inference_mode_record_nothing(leaves):
    x, xt, w, wt = leaves
    with tp.no_grad():
        y = tp.add(x, w)
    with torch.no_grad():
        yt = torch.add(xt, wt)
    assert y.grad_fn is None and not y.requires_grad and yt.grad_fn is None
    with tp.inference_mode():
        z = x * 2
    assert z.grad_fn is None and z._impl.inference and not z.requires_grad


def test_in_place_on_a_leaf_that_requires_grad_is_refused_like_pytorch(leaves):
    x, xt, w, wt = leaves
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        xt.add_(wt)
    with pytest.raises(AutogradError, match="leaf Variable that requires grad"):
        x.add_(w)
    assert x._version == 0


# ---- what a node saves, and grad_fn._saved_<name> without __getattr__ ----------------
def test_saved_values_read_like_torch():
    x, xt = leaf_pair([1.0, 2.0, 3.0])
    w, wt = leaf_pair([2.0, 0.5, 1.0])
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
    x, _ = leaf_pair([1.0, 2.0])
    y = x * x
    y.sum().backward()
    with pytest.raises(tp.errors.AutogradError, match="after they have already been freed"):
        y.grad_fn._saved_self


def test_node_classes_have_no_getattr_unless_instances_take_any_attribute():
    x, _ = leaf_pair([1.0, 2.0])
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


def test_an_unread_input_is_the_shared_not_saved_and_reads_as_none_like_pytorch():
    from tensorplay.autograd.saved import NOT_SAVED
    x, xt = tp.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True)
    y, yt = x * 2, xt * 2
    assert y.grad_fn.self_ is NOT_SAVED
    assert y.grad_fn._saved_self is None and yt.grad_fn._saved_self is None
    y.sum().backward()
    yt.sum().backward()
    # freed by backward: the saved `other` raises, the unsaved `self` still reads None
    assert y.grad_fn._saved_self is None and yt.grad_fn._saved_self is None
    with pytest.raises(tp.errors.AutogradError, match="second time"):
        y.grad_fn._saved_other
    with pytest.raises(RuntimeError, match="second time"):
        yt.grad_fn._saved_other
    with pytest.raises(tp.errors.AutogradError, match="second time"):
        y.sum().backward()
    assert NOT_SAVED.unpack() is None and repr(NOT_SAVED) == "<SavedVariable None>"


def test_saved_when_read_gradients_match_pytorch():
    data = np.array([1.5, -2.0, 3.0], np.float32)
    for a_grad, b_grad in [(True, False), (False, True), (True, True)]:
        a, at = tp.tensor(data, requires_grad=a_grad), torch.tensor(data, requires_grad=a_grad)
        b, bt = tp.tensor(data + 1, requires_grad=b_grad), torch.tensor(data + 1,
                                                                         requires_grad=b_grad)
        node, node_t = (a * b).grad_fn, (at * bt).grad_fn
        assert (node._saved_self is None) == (node_t._saved_self is None)
        assert (node._saved_other is None) == (node_t._saved_other is None)
        (a * b / (b + 1)).sum().backward()
        (at * bt / (bt + 1)).sum().backward()
        for ours, theirs in [(a, at), (b, bt)]:
            if theirs.grad is None:
                assert ours.grad is None
            else:
                np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6)


def test_saving_an_inference_tensor_raises_like_pytorch():
    with tp.inference_mode():
        c = tp.ones(3)
    with torch.inference_mode():
        ct = torch.ones(3)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved"):
        torch.ones(3, requires_grad=True) * ct
    with pytest.raises(AutogradError, match="Inference tensors cannot be saved"):
        tp.ones(3, requires_grad=True) * c
