"""tp.vmap against the per-example loop, for every op of the operator database, plus
nesting, pytrees, errors, randomness, in-place rules and per-example gradients.

    test_op_matches_loop[<op>]   vmap(op) over a batch of 2 examples == stacking op on
                                 each example, with in_dims 0, 1 and -1 and with only the
                                 first tensor batched (one sample per op; every sample with
                                 `-m slow`)
    test_ops_with_rules_take_no_fallback   prints tp.func.fallback_ops(); fails when an op
                                 with a batching rule ran the per-example fallback
    then: nesting (against torch.func), pytrees and in/out dims, typed errors, in-place
    rules, randomness modes, per-example gradients (tp.autograd.grad inside vmap, one and
    two levels, create_graph; backward outside vmap; captured tensors; vmap over
    cotangents), composition with tp.func (grad, jacrev, hessian), explain() and the
    fallback warning.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay.func import VmapError, fallback_ops
from tensorplay.func.batching_rules import RULES
from tensorplay.func.fallback import declined_ops, reset_fallback_ops
from tensorplay._generated.op_tags import OP_TAGS
from opinfo import op_db
from opinfo.core import tp_to_numpy

BATCH = 2


def _dtype(op):
    return tp.float32 if tp.float32 in op.dtypes else op.dtypes[0]


def _is_random(op):
    return any("random" in OP_TAGS.get(name, ()) for name in op.overloads) or \
        op.name in ("native_dropout", "dropout", "multinomial", "svd_lowrank", "pca_lowrank")


# ---- building batches from a sample -------------------------------------------------------
def _leaves(sample):
    return sample.tensors()


def _rebuild(sample, leaves):
    it = iter(leaves)
    return sample.map_tensors(lambda t: next(it))


def _other_example(t):
    """A second example with the same values in another order (so it stays in the op's
    domain: positive, valid indices...)."""
    if t.numel() < 2:
        return t.clone()
    return t.detach().reshape(-1).flip(0).reshape(t.shape).clone()


def _run(op, sample, leaves):
    s = _rebuild(sample, [t.clone() for t in leaves])
    return op.call(s)


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _examples(op, sample, batched):
    """Per-leaf lists of BATCH examples (unbatched leaves: the same one) and the loop's
    outputs; the second example falls back to a copy of the first when the op rejects it
    (ops whose inputs must be sorted, say)."""
    leaves = _leaves(sample)
    first = [t.detach() for t in leaves]
    second = [_other_example(t) if b else t.detach() for t, b in zip(first, batched)]
    try:
        outs = [_run(op, sample, first), _run(op, sample, second)]
    except Exception:  # noqa: BLE001 - the second example is not valid for this op
        second = first
        outs = [_run(op, sample, first), _run(op, sample, first)]
    return [first, second], outs


def _stack_at(examples, dim):
    return tp.stack([e.clone() for e in examples], dim)


def _check(op, sample, in_dim, batched):
    exs, outs = _examples(op, sample, batched)
    if not all(isinstance(o, tp.Tensor) for out in outs for o in _flat(out)):
        pytest.skip("the op returns non-tensors (vmap batches tensors only)")
    physical, in_dims = [], []
    for k, b in enumerate(batched):
        leaf = exs[0][k]
        if not b:
            physical.append(leaf.clone())
            in_dims.append(None)
            continue
        d = in_dim if leaf.dim() > 0 or in_dim == 0 else 0
        physical.append(_stack_at([e[k] for e in exs], d if d >= 0 else leaf.dim()))
        in_dims.append(d)

    def f(*leaves):
        return op.call(_rebuild(sample, list(leaves)))

    randomness = "different" if _is_random(op) else "error"
    if not all(batched) and _writes_other_arguments(op, sample):
        # PyTorch's rule: batched values may not be written into an unbatched tensor.
        with pytest.raises(VmapError, match="vmapped over|was not batched"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tp.vmap(f, in_dims=tuple(in_dims), randomness=randomness)(*physical)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = tp.vmap(f, in_dims=tuple(in_dims), randomness=randomness)(*physical)
    got = _flat(got)
    for k, g in enumerate(got):
        expected = tp.stack([_flat(o)[k].detach() for o in outs])
        where = f"{op.full_name} output {k}, in_dims={tuple(in_dims)}, sample {sample!r}"
        assert tuple(g.shape) == tuple(expected.shape), where
        assert g.dtype == expected.dtype, where
        a, e = tp_to_numpy(g.detach()), tp_to_numpy(expected)
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5, equal_nan=True,
                                       err_msg=where)
        else:
            np.testing.assert_array_equal(a, e, err_msg=where)


def _writes_other_arguments(op, sample):
    """The op changes the values of a tensor other than its first one (an optimizer's
    state, batch norm's running statistics)."""
    leaves = [t.detach().clone() for t in _leaves(sample)]
    before = [tp_to_numpy(t).copy() for t in leaves]
    op.call(_rebuild(sample, leaves))
    return any(not np.array_equal(tp_to_numpy(t), b, equal_nan=True)
               for t, b in list(zip(leaves, before))[1:])


def _modes(n_leaves):
    modes = [(0, None), (1, None), (-1, None)]
    if n_leaves > 1:
        modes.append((0, "first only"))
    return modes


def _batched_flags(n, mode):
    return [True] * n if mode is None else [True] + [False] * (n - 1)


CPU_OPS = [op for op in op_db]


# Ops whose batching rule refuses vmap (they address or change the storage under one
# example, which the batch shares): vmap must raise VmapError instead of matching a loop.
VMAP_REFUSED = {"as_strided_scatter", "as_strided_", "resize_", "resize_as_"}


# Ops whose first argument is read for its dtype and device only (batch_norm_gather_stats
# combines the statistics its other arguments hold): batching that argument alone batches
# nothing they compute, so the "first only" mode has nothing to check.
FIRST_ARGUMENT_UNREAD = {"batch_norm_gather_stats", "batch_norm_gather_stats_with_counts"}

# Ops that read the values of an argument other than the first (istft refuses a window
# whose overlap-added square is zero somewhere: PyTorch's istft reads it with .item() too).
# Batched, that argument cannot be read (vmap must raise VmapError); with the first argument
# alone batched the op must match the loop.
READS_OTHER_ARGUMENTS = {"istft"}


def _op_check(op, samples):
    ran = False
    for sample in samples:
        n = len(_leaves(sample))
        if n == 0:
            continue
        if op.name in VMAP_REFUSED:
            physical = [tp.stack([t.detach(), t.detach()]) for t in _leaves(sample)]
            with pytest.raises(VmapError, match=rf"vmap: {op.name}\(\) addresses the storage"):
                tp.vmap(lambda *ls: op.call(_rebuild(sample, list(ls))))(*physical)
            ran = True
            continue
        for in_dim, mode in _modes(n):
            if mode == "first only" and op.name in FIRST_ARGUMENT_UNREAD:
                continue
            if mode is None and op.name in READS_OTHER_ARGUMENTS:
                physical = [tp.stack([t.detach(), t.detach()]) for t in _leaves(sample)]
                with pytest.raises(VmapError, match="read the values of a batched tensor"):
                    tp.vmap(lambda *ls: op.call(_rebuild(sample, list(ls))))(*physical)
                continue
            _check(op, sample, in_dim, _batched_flags(n, mode))
            ran = True
    if not ran:
        pytest.skip("no tensor inputs")


@pytest.mark.parametrize("op", CPU_OPS, ids=lambda op: op.full_name)
def test_op_matches_loop(op):
    samples = op.sample_inputs("cpu", _dtype(op))
    _op_check(op, samples[:1])


@pytest.mark.slow
@pytest.mark.parametrize("op", CPU_OPS, ids=lambda op: op.full_name)
def test_op_matches_loop_all_samples(op):
    _op_check(op, op.sample_inputs("cpu", _dtype(op)))


def test_ops_with_rules_take_no_fallback(capsys):
    """Runs after the sweep above (file order): the ops that ran per example, printed;
    an op with a batching rule may only be there when its rule handed the call over on
    purpose (NeedsFallback: an argument combination it does not cover)."""
    with capsys.disabled():
        print(f"\nvmap fallback ops ({len(fallback_ops())}): {', '.join(fallback_ops())}")
        print(f"rules that handed a call to the fallback: {', '.join(declined_ops())}")
    wrong = sorted((set(fallback_ops()) - set(declined_ops())) & set(RULES))
    assert not wrong, f"ops with a batching rule took the fallback: {wrong}"


# ---- nesting, pytrees, in_dims / out_dims --------------------------------------------------------
def _t(*shape, seed=0):
    return tp.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(tp_to_numpy(a.detach()), tp_to_numpy(b.detach()), rtol=tol,
                               atol=tol)


def test_tp_vmap_is_tp_func_vmap():
    assert tp.vmap is tp.func.vmap


def test_nested_vmap_levels():
    x, y = _t(2, 3, 4), _t(3, 4, seed=1)
    got = tp.vmap(tp.vmap(lambda a, b: (a * b).sum(), in_dims=(0, 0)), in_dims=(0, None))(x, y)
    _close(got, (x * y).sum(-1))
    # The inner level batches over dim 1 of the outer example; out_dims moves it last.
    got = tp.vmap(tp.vmap(lambda a: a.exp(), in_dims=1, out_dims=1), in_dims=0)(x)
    _close(got, x.exp())
    z = _t(4, 5, seed=2)
    got = tp.vmap(lambda a: tp.vmap(lambda b: tp.matmul(a, b), in_dims=1)(z))(x)   # a: [3, 4]
    expected = tp.stack([tp.stack([tp.matmul(x[i], z[:, j]) for j in range(5)]) for i in range(2)])
    _close(got, expected)


def test_three_levels_match_torch():
    x = _t(2, 3, 4, 5)
    f = lambda v: (v.softmax(-1) * v).sum()      # noqa: E731
    got = tp.vmap(tp.vmap(tp.vmap(f)))(x)
    tx = torch.tensor(tp_to_numpy(x))
    expected = torch.func.vmap(torch.func.vmap(torch.func.vmap(
        lambda v: (v.softmax(-1) * v).sum())))(tx)
    np.testing.assert_allclose(tp_to_numpy(got), expected.numpy(), rtol=1e-5, atol=1e-5)


def test_pytree_inputs_and_outputs():
    x, y, w = _t(3, 4), _t(4, 3, seed=1), _t(4, seed=2)

    def f(pair, d, scale, nothing):
        a, b = pair
        assert nothing is None and scale == 2.0
        return {"sum": a + b * scale + d["w"], "both": [a, None, 7]}

    out = tp.vmap(f, in_dims=((0, 1), {"w": None}, None, None))((x, y), {"w": w}, 2.0, None)
    _close(out["sum"], x + y.t() * 2.0 + w)
    _close(out["both"][0], x)
    assert out["both"][1] is None and out["both"][2] == 7
    a, b = tp.vmap(lambda v: (v, v.sum()), out_dims=(1, 0))(x)
    _close(a, x.t())
    _close(b, x.sum(1))


def test_unbatched_output_is_expanded_and_out_dims_none():
    x, c = _t(3, 2), _t(2, seed=1)
    out = tp.vmap(lambda v, k: (v, k * 2), in_dims=(0, None))(x, c)
    _close(out[1], (c * 2).expand(3, 2))
    same = tp.vmap(lambda v, k: k * 2, in_dims=(0, None), out_dims=None)(x, c)
    _close(same, c * 2)


def test_chunk_size_gives_the_same_result():
    x = _t(7, 3)
    _close(tp.vmap(lambda v: v.softmax(0), chunk_size=3)(x), tp.vmap(lambda v: v.softmax(0))(x))


def test_vmap_matches_torch_func_vmap_on_a_model():
    x, w, b = _t(5, 3, 4), _t(6, 4, seed=1), _t(6, seed=2)

    def f(v, weight, bias):
        return F.log_softmax(F.linear(v, weight, bias).relu(), -1).mean(0)

    got = tp.vmap(f, in_dims=(0, None, None))(x, w, b)
    tt = [torch.tensor(tp_to_numpy(t)) for t in (x, w, b)]
    expected = torch.func.vmap(
        lambda v, weight, bias: torch.nn.functional.log_softmax(
            torch.nn.functional.linear(v, weight, bias).relu(), -1).mean(0),
        in_dims=(0, None, None))(*tt)
    np.testing.assert_allclose(tp_to_numpy(got), expected.numpy(), rtol=1e-5, atol=1e-5)


# ---- errors --------------------------------------------------------------------------------------
def test_errors_name_the_argument():
    x, y = _t(3, 2), _t(4, 2)
    with pytest.raises(VmapError, match="same size in the mapped dimension") as e:
        tp.vmap(lambda a, b: a + b)(x, y)
    assert e.value.arg == "in_dims"
    with pytest.raises(VmapError, match="in_dims is not compatible"):
        tp.vmap(lambda a, b: a + b, in_dims=(0,))(x, x)
    with pytest.raises(VmapError, match=r"-2 <= in_dim < 2"):
        tp.vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(VmapError, match="non-Tensor"):
        tp.vmap(lambda a, k: a * k)(x, 2.0)
    with pytest.raises(VmapError, match="must be an int, None"):
        tp.vmap(lambda a: a, in_dims="0")(x)
    with pytest.raises(VmapError, match="randomness"):
        tp.vmap(lambda a: a, randomness="sometimes")
    with pytest.raises(VmapError, match="at least one"):
        tp.vmap(lambda a: a, in_dims=None)(x)
    with pytest.raises(VmapError, match="read the values"):
        tp.vmap(lambda a: a.sum().item())(x)


def test_escaped_batched_tensor_is_an_error():
    kept = []
    tp.vmap(lambda a: kept.append(a) or a)(_t(3, 2))
    with pytest.raises(VmapError, match="escaped"):
        kept[0] + 1


# ---- in-place ------------------------------------------------------------------------------------
def test_inplace_into_batched_and_into_unbatched():
    x, y = _t(3, 4), _t(4, seed=1)

    def f(a, b):
        a.mul_(2).add_(b)       # batched self: fine, written per example
        return a

    base = x.clone()
    out = tp.vmap(f, in_dims=(0, None))(base, y)
    _close(out, x * 2 + y)
    _close(base, x * 2 + y)     # the physical batch was written
    with pytest.raises(VmapError, match="vmapped over but `self` not"):
        tp.vmap(lambda a, b: b.add_(a), in_dims=(0, None))(x, y.clone())
    # in-place view ops reseat the batched tensor
    out = tp.vmap(lambda a: a.unsqueeze_(0).transpose_(0, 1))(x.clone())
    assert out.shape == (3, 4, 1)


# ---- randomness ----------------------------------------------------------------------------------
def test_randomness_modes():
    x = tp.full((4, 1000), 0.5)
    with pytest.raises(VmapError, match="randomness error mode"):
        tp.vmap(lambda p: tp.bernoulli(p))(x)
    tp.manual_seed(0)
    diff = tp.vmap(lambda p: tp.bernoulli(p), randomness="different")(x)
    assert not all(tp.equal(diff[0], diff[i]) for i in range(1, 4))
    same = tp.vmap(lambda p: tp.bernoulli(p), randomness="same")(x)
    assert all(tp.equal(same[0], same[i]) for i in range(1, 4))
    assert 400 < float(same[0].sum()) < 600
    drop = tp.vmap(lambda v: F.dropout(v, 0.5), randomness="same")(tp.ones(3, 100))
    assert tp.equal(drop[0], drop[1]) and tp.equal(drop[1], drop[2])
    drop = tp.vmap(lambda v: F.dropout(v, 0.5), randomness="different")(tp.ones(3, 100))
    assert not tp.equal(drop[0], drop[1])
    filled = tp.vmap(lambda v: v.normal_(), randomness="same")(tp.zeros(3, 50))
    assert tp.equal(filled[0], filled[2])
    # not training: no randomness, so no error either
    _close(tp.vmap(lambda v: F.dropout(v, 0.5, training=False))(x), x)


# ---- autograd ------------------------------------------------------------------------------------
def _mlp_params(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(5, 6), (5,), (3, 5), (3,)]
    return [tp.tensor(rng.standard_normal(s).astype(np.float64) * 0.5) for s in shapes]


def _mlp_loss(w1, b1, w2, b2, x, y):
    return F.cross_entropy(F.linear(F.linear(x, w1, b1).tanh(), w2, b2), y)


def test_per_example_grads_inside_vmap_match_the_loop():
    params = _mlp_params()
    x = tp.tensor(np.random.default_rng(1).standard_normal((4, 6)))
    y = tp.tensor([0, 2, 1, 2])

    def grads(w1, b1, w2, b2, xi, yi, create_graph):
        ps = [p.detach().requires_grad_() for p in (w1, b1, w2, b2)]
        loss = _mlp_loss(*ps, xi, yi)
        return tp.autograd.grad(loss, ps, create_graph=create_graph)

    for create_graph in (False, True):
        got = tp.vmap(lambda *a: grads(*a, create_graph), in_dims=(None,) * 4 + (0, 0))(
            *params, x, y)
        loop = [grads(*params, x[i], y[i], create_graph) for i in range(4)]
        for k in range(4):
            _close(got[k], tp.stack([g[k] for g in loop]), 1e-10)
    # ... and against torch.func.vmap(torch.func.grad(...))
    tparams = [torch.tensor(p.numpy()) for p in params]
    tgrads = torch.func.vmap(torch.func.grad(
        lambda ps, xi, yi: torch.nn.functional.cross_entropy(torch.nn.functional.linear(
            torch.nn.functional.linear(xi, ps[0], ps[1]).tanh(), ps[2], ps[3]), yi)),
        in_dims=(None, 0, 0))(tparams, torch.tensor(x.numpy()), torch.tensor(y.numpy()))
    for k in range(4):
        np.testing.assert_allclose(tp_to_numpy(got[k]), tgrads[k].numpy(), rtol=1e-10)


def test_second_order_per_example_grad_with_create_graph():
    w = tp.tensor([0.5, -1.0, 2.0], dtype=tp.float64)
    x = tp.tensor(np.random.default_rng(2).standard_normal((3, 3)))

    def hvp_diag(wi, xi):
        wi = wi.detach().requires_grad_()
        loss = ((wi * xi).sum()) ** 3
        (g,) = tp.autograd.grad(loss, wi, create_graph=True)
        (h,) = tp.autograd.grad(g.sum(), wi)
        return h

    got = tp.vmap(hvp_diag, in_dims=(None, 0))(w, x)
    expected = tp.stack([hvp_diag(w, x[i]) for i in range(3)])
    _close(got, expected, 1e-10)


def test_per_example_grads_under_two_vmap_levels():
    w = tp.tensor(np.random.default_rng(5).standard_normal(3))
    x = tp.tensor(np.random.default_rng(6).standard_normal((2, 4, 3)))

    def g(wi, xi):
        wi = wi.detach().requires_grad_()
        return tp.autograd.grad((wi * xi).sin().sum() * wi.sum(), wi)[0]

    got = tp.vmap(tp.vmap(g, in_dims=(None, 0)), in_dims=(None, 0))(w, x)
    expected = tp.stack([tp.stack([g(w, x[i, j]) for j in range(4)]) for i in range(2)])
    _close(got, expected, 1e-10)


def test_backward_outside_vmap_matches_the_loop():
    params = [p.requires_grad_() for p in _mlp_params(3)]
    x = tp.tensor(np.random.default_rng(4).standard_normal((4, 6)))
    y = tp.tensor([1, 0, 2, 2])
    loss = tp.vmap(_mlp_loss, in_dims=(None,) * 4 + (0, 0))(*params, x, y).sum()
    loss.backward()
    got = [p.grad.clone() for p in params]
    for p in params:
        p.grad = None
    sum(_mlp_loss(*params, x[i], y[i]) for i in range(4)).backward()
    for g, p in zip(got, params):
        _close(g, p.grad, 1e-10)


def test_vmap_over_cotangents_gives_the_jacobian():
    """jacrev's recipe: the graph is built once, outside vmap; vmap runs the backward
    formulas on a batch of cotangents (BatchedTensors flow through the engine)."""
    x = tp.tensor(np.random.default_rng(7).standard_normal(3), requires_grad=True)
    out = (x.sin() * x.sum()).exp()

    def vjp(v):
        return tp.autograd.grad(out, x, grad_outputs=v, retain_graph=True)[0]

    jac = tp.vmap(vjp)(tp.eye(3, dtype=tp.float64))
    tx = torch.tensor(x.detach().numpy())
    expected = torch.autograd.functional.jacobian(lambda t: (t.sin() * t.sum()).exp(), tx)
    np.testing.assert_allclose(jac.numpy(), expected.numpy(), rtol=1e-12)


def test_grad_of_a_captured_tensor_is_per_example():
    """A tensor the function closes over has no slice per example: its per-example
    gradients are Jacobian rows, from one backward pass on a batch of cotangents."""
    w = tp.tensor(np.random.default_rng(8).standard_normal(3), requires_grad=True)
    x = tp.tensor(np.random.default_rng(9).standard_normal((4, 3)))

    def g(xi):
        return tp.autograd.grad((w * xi).sin().sum() * (w * w).sum(), w)[0]

    _close(tp.vmap(g)(x), tp.stack([g(x[i]) for i in range(4)]), 1e-10)


def test_vmap_composes_with_tp_func_transforms():
    rng = np.random.default_rng(10)
    x = tp.tensor(rng.standard_normal((4, 3)))
    tx = torch.tensor(x.numpy())
    f = lambda v: (v.sin() * v.sum()).exp().sum()            # noqa: E731
    jac = tp.vmap(tp.func.jacrev(lambda v: v.sin() * v.sum()))(x)
    tjac = torch.func.vmap(torch.func.jacrev(lambda v: v.sin() * v.sum()))(tx)
    np.testing.assert_allclose(jac.numpy(), tjac.numpy(), rtol=1e-12)
    hess = tp.vmap(tp.func.hessian(f))(x)
    thess = torch.func.vmap(torch.func.hessian(lambda v: (v.sin() * v.sum()).exp().sum()))(tx)
    np.testing.assert_allclose(hess.numpy(), thess.numpy(), rtol=1e-10, atol=1e-12)
    grads = tp.vmap(tp.func.grad(lambda w, xi: (w * xi).tanh().sum()), in_dims=(None, 0))(
        x[0], x)
    assert not grads.requires_grad
    tgrads = torch.func.vmap(torch.func.grad(lambda w, xi: (w * xi).tanh().sum()),
                             in_dims=(None, 0))(tx[0], tx)
    np.testing.assert_allclose(grads.numpy(), tgrads.numpy(), rtol=1e-12)


# ---- explain -------------------------------------------------------------------------------------
def test_explain_shows_the_rule_or_the_fallback():
    x = _t(3, 4)
    with tp.dispatch.explain(file=False) as ex:
        tp.vmap(lambda v: v.exp())(x)
    assert "VmapCPU -> tensorplay.func.vmap.batching_kernel" in ex.text
    assert "batching rule tensorplay.func.batching_rules.pointwise_rule" in ex.text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tp.dispatch.explain(file=False) as ex:
            tp.vmap(lambda v: v.as_strided((2,), (1,)))(x)
    assert "fallback loop over 3 examples" in ex.text


def test_fallback_warns_once_and_is_listed():
    x = _t(3, 4)
    reset_fallback_ops()
    with pytest.warns(UserWarning, match="no batching rule for as_strided"):
        tp.vmap(lambda v: v.as_strided((2,), (2,)))(x)
    assert "as_strided" in fallback_ops()
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # the second time: listed, not warned
        tp.vmap(lambda v: v.as_strided((2,), (2,)))(x)
