"""tp.compile's frontend: decorator forms, the module wrapper, guards and recompiles,
graph breaks (eager's results on every call) and fullgraph's error, reset, explain,
source, and the compiled backward (training steps equal to eager's)."""
import copy
import logging

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay import nn
from tensorplay.compiler import Unsupported


@pytest.fixture(autouse=True)
def _fresh():
    tp.compiler.reset()
    tp.manual_seed(0)
    yield
    tp.compiler.reset()


def close(a, b, atol=1e-6):
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(close(x, y, atol) for x, y in zip(a, b))
    return a.shape == b.shape and a.dtype == b.dtype and tp.allclose(a, b, atol=atol)


def mlp_fn(x, w, b):
    return tp.tanh(x @ w + b).sum(-1)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(tp.relu(self.fc1(x)))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        x = tp.nn.functional.max_pool2d(tp.relu(self.bn(self.conv(x))), 2)
        return self.fc(x.flatten(1))


# ---- the forms of tp.compile -------------------------------------------------------------
def test_decorator_forms_give_eagers_values():
    x, w, b = tp.randn(3, 4), tp.randn(4, 5), tp.randn(5)
    expected = mlp_fn(x, w, b)

    @tp.compile
    def plain(x, w, b):
        return mlp_fn(x, w, b)

    @tp.compile(fullgraph=True, backend="eager")
    def with_args(x, w, b):
        return mlp_fn(x, w, b)

    called = tp.compile(mlp_fn, mode="default")
    for f in (plain, with_args, called):
        assert close(f(x, w, b), expected) and close(f(x, w, b), expected)
        assert f.compiles == 1
    assert called.__name__ == "mlp_fn"
    assert tp.compile(mlp_fn, disable=True) is mlp_fn
    assert tp.compile is tp.compiler.compile
    assert tp.compiler.list_backends() == ["default", "eager"]


def test_bad_arguments_are_typed_errors():
    with pytest.raises(tp.errors.ArgumentError, match="'backend'"):
        tp.compile(mlp_fn, backend="inductor-ish")
    with pytest.raises(tp.errors.ArgumentError, match="'mode'"):
        tp.compile(mlp_fn, mode="fastest")
    with pytest.raises(tp.errors.ArgumentError, match="mode or options"):
        tp.compile(mlp_fn, mode="default", options={})


def test_custom_backend_gets_the_graph_and_example_inputs():
    seen = []

    def backend(graph, example_inputs):
        seen.append(([n.target for n in graph.nodes], [tuple(t.shape) for t in example_inputs]))
        return lambda *tensors: tp.export.program.run_graph(graph, tensors)

    f = tp.compile(mlp_fn, backend=backend)
    x, w, b = tp.randn(3, 4), tp.randn(4, 5), tp.randn(5)
    f(x, w, b)
    assert close(f(x, w, b), mlp_fn(x, w, b))
    assert seen == [(["mm", "add.Tensor", "tanh", "sum.dim_IntList"], [(3, 4), (4, 5), (5,)])]


def test_compiled_module_wraps_the_original():
    model = MLP()
    compiled = tp.compile(model)
    assert isinstance(compiled, tp.compiler.OptimizedModule)
    assert list(compiled.state_dict()) == ["_orig_mod." + k for k in model.state_dict()]
    assert compiled.fc1 is model.fc1                     # attributes read through
    x = tp.randn(2, 8)
    with tp.no_grad():
        assert close(compiled(x), model(x)) and close(compiled(x), model(x))
    assert "linear" in compiled.source()


def test_a_copy_of_a_compiled_module_runs_its_own_parameters():
    compiled = tp.compile(MLP())
    x = tp.randn(2, 8)
    compiled(x)
    twin = copy.deepcopy(compiled)
    with tp.no_grad():
        twin._orig_mod.fc2.bias.add_(1.0)
        assert close(twin(x), twin._orig_mod(x)) and close(twin(x), compiled(x) + 1.0)


def test_module_compile_in_place_keeps_the_state_dict():
    model = MLP()
    reference = copy.deepcopy(model)
    keys = list(model.state_dict())
    model.compile(backend="eager")
    assert list(model.state_dict()) == keys
    x = tp.randn(2, 8)
    with tp.no_grad():
        assert close(model(x), reference(x)) and close(model(x), reference(x))
    assert model.forward.compiles == 1


def test_a_compiled_method_binds_its_instance():
    class Scaler:
        def __init__(self):
            self.w = tp.randn(3)

        @tp.compile
        def apply(self, x):
            return x * self.w

    s = Scaler()
    x = tp.randn(3)
    assert close(s.apply(x), x * s.w) and close(s.apply(x), x * s.w)
    s.w.mul_(2.0)                       # state is read live, not frozen
    assert close(s.apply(x), x * s.w)


# ---- guards and recompiles -----------------------------------------------------------------
def test_guards_recompile_on_shape_dtype_requires_grad_and_grad_mode():
    f = tp.compile(mlp_fn)
    x, w, b = tp.randn(3, 4), tp.randn(4, 5), tp.randn(5)
    f(x, w, b)
    f(x, w, b)
    assert f.compiles == 1
    f(tp.randn(6, 4), w, b)                                    # shape
    assert f.compiles == 2
    f(x.double(), w.double(), b.double())                      # dtype
    assert f.compiles == 3
    f(x, w.requires_grad_(), b)                                # requires_grad
    assert f.compiles == 4
    with tp.no_grad():                                         # grad mode
        out = f(x, w, b)
    assert f.compiles == 5 and not out.requires_grad
    f(x.t().contiguous().t(), w, b)                            # layout: not contiguous
    assert f.compiles == 6
    f(x, w, b)
    assert f.compiles == 6


def test_python_arguments_are_guarded_by_value():
    f = tp.compile(lambda x, k, flag: x * k if flag else x - k)
    x = tp.randn(3)
    assert close(f(x, 2.0, True), x * 2.0)
    assert close(f(x, 3.0, True), x * 3.0)
    assert close(f(x, 3.0, False), x - 3.0)
    assert close(f(x, 3.0, False), x - 3.0)
    assert f.compiles == 3


def test_recompile_limit_then_eager_with_a_warning(caplog):
    f = tp.compile(lambda x: x.sum(0) * 2)
    with caplog.at_level(logging.WARNING, logger="tensorplay.compiler"):
        for n in range(1, 12):
            x = tp.randn(n, 2)
            assert close(f(x), x.sum(0) * 2)
    assert f.compiles == tp.compiler.config.cache_size_limit == 8
    assert sum("recompile limit" in r.message for r in caplog.records) == 1


def test_recompile_reason_is_logged(caplog):
    f = tp.compile(lambda x: x + 1)
    f(tp.randn(2))
    with caplog.at_level(logging.INFO, logger="tensorplay.compiler"):
        f(tp.randn(3))
    assert any("recompiling" in r.message and "float32[3]" in r.message and
               "was: arg0: float32[2]" in r.message for r in caplog.records)


def test_state_guards_parameter_identity_requires_grad_and_train_mode():
    model = SmallCNN()
    f = tp.compile(model)
    x = tp.randn(2, 1, 8, 8)
    with tp.no_grad():
        f(x)
        f(x)
        assert f._compiled.compiles == 1
        model.eval()                                    # BatchNorm reads its running stats
        assert close(f(x), model(x), 1e-5)
        assert f._compiled.compiles == 2
        model.fc.weight = nn.Parameter(tp.randn(3, 64))   # a new tensor in the slot
        assert close(f(x), model(x), 1e-5)
        assert f._compiled.compiles == 3
    model.fc.weight.requires_grad_(False)
    f(x)
    assert f._compiled.compiles == 4


def test_in_place_updates_of_state_are_replayed():
    """BatchNorm's running statistics in training mode: the replay writes them too."""
    model, reference = SmallCNN(), None
    reference = copy.deepcopy(model)
    f = tp.compile(model, backend="eager")
    for _ in range(3):
        x = tp.randn(4, 1, 8, 8)
        with tp.no_grad():
            assert close(f(x), reference(x), 1e-5)
    assert close(model.bn.running_mean, reference.bn.running_mean)
    assert int(model.bn.num_batches_tracked) == 3


def test_a_tensor_made_inside_and_written_in_place_starts_afresh_each_call():
    def f(x):
        acc = tp.zeros(3)
        acc.add_(x)
        return acc * 2

    g = tp.compile(f)
    x = tp.randn(3)
    assert close(g(x), f(x)) and close(g(x), f(x)) and close(g(x), f(x))


# ---- graph breaks ---------------------------------------------------------------------------
def branchy(x):
    if x.sum() > 0:             # bool(t): data-dependent
        return x * 2
    return x - 1


@pytest.mark.parametrize("read", ["item", "bool", "int", "tolist", "numpy"])
def test_a_value_read_into_python_breaks_and_stays_correct(read):
    reads = {"item": lambda t: t.sum().item() > 0, "bool": lambda t: bool(t.sum() > 0),
             "int": lambda t: int(t.sum() > 0) == 1, "tolist": lambda t: t.tolist()[0] > 0,
             "numpy": lambda t: t.numpy()[0] > 0}

    def f(x):
        return x * 2 if reads[read](x) else x - 1

    g = tp.compile(f)
    for x in (tp.ones(3), -tp.ones(3), tp.ones(3), -tp.ones(3)):
        assert close(g(x), f(x))
    reasons = [r.reason for r in g.explain().break_reasons]
    assert len(reasons) == 1 and "reads a tensor's values into Python" in reasons[0]


def test_fullgraph_turns_a_break_into_an_error_naming_the_reason():
    with pytest.raises(Unsupported, match=r"graph break: bool\(\) reads"):
        tp.compile(branchy, fullgraph=True)(tp.ones(3))
    with pytest.raises(Unsupported, match="nonzero"):
        tp.compile(tp.nonzero, fullgraph=True)(tp.ones(3))
    with pytest.raises(Unsupported, match="random"):
        tp.compile(lambda x: x * tp.rand(3), fullgraph=True)(tp.ones(3))


def test_random_ops_are_nodes_that_draw_anew_on_each_replay():
    """dropout's bernoulli_ is captured as a node: each replay calls its kernel, which
    draws from the generator as eager does (the same numbers under the same seed, new
    ones on the next call), so a model with dropout compiles without a break."""
    def f(x):
        return tp.nn.functional.dropout(x, 0.5, training=True) * 3

    g = tp.compile(f, fullgraph=True)
    x = tp.ones(64)
    outs = []
    for seed in (7, 7, 8):
        tp.manual_seed(seed)
        expected = f(x)
        tp.manual_seed(seed)
        outs.append(g(x))
        assert close(outs[-1], expected)
    assert tp.equal(outs[0], outs[1]) and not tp.equal(outs[1], outs[2])
    assert g.explain().graph_break_count == 0 and g.compiles == 1


def test_random_creation_functions_break_and_match_eager_under_the_same_seed():
    """tp.randn is not dispatched: the graph would hold its numbers as a constant, so it
    is a break (the guard set runs eagerly)."""
    def f(x):
        return x + tp.randn(4)

    g = tp.compile(f)
    x = tp.ones(4)
    for _ in range(3):
        tp.manual_seed(7)
        expected = f(x)
        tp.manual_seed(7)
        assert close(g(x), expected)
    assert any("random" in r.reason for r in g.explain().break_reasons)


def test_training_step_with_dropout_equals_eagers_under_the_same_seed():
    tp.manual_seed(0)
    model = tp.nn.Sequential(tp.nn.Linear(8, 16), tp.nn.ReLU(), tp.nn.Dropout(0.3),
                             tp.nn.Linear(16, 3))
    fast = tp.compile(model)
    x, y = tp.randn(5, 8), tp.tensor([0, 2, 1, 1, 0])
    for seed in (1, 2, 3):
        grads = []
        for m in (fast, model):
            tp.manual_seed(seed)
            tp.nn.functional.cross_entropy(m(x), y).backward()
            grads.append([p.grad.clone() for p in model.parameters()])
            model.zero_grad()
        assert all(close(a, b) for a, b in zip(*grads))
    assert fast.explain().graph_break_count == 0


def test_data_dependent_output_size_breaks():
    g = tp.compile(lambda x: tp.nonzero(x).float().sum())
    for x in (tp.tensor([1.0, 0.0, 2.0]), tp.tensor([0.0, 0.0, 3.0])):
        assert close(g(x), tp.nonzero(x).float().sum())
    assert "nonzero" in g.explain().break_reasons[0].reason


def test_storing_a_tensor_into_python_state_breaks():
    class Recorder:
        last = None

    rec = Recorder()

    def f(x):
        rec.last = x * 2
        return rec.last + 1

    g = tp.compile(f)
    for x in (tp.ones(2), tp.zeros(2)):
        assert close(g(x), x * 2 + 1) and close(rec.last, x * 2)
    assert "stored a tensor" in g.explain().break_reasons[0].reason


def test_disable_is_a_break_and_is_compiling_is_true_only_while_capturing():
    seen = []

    @tp.compiler.disable
    def helper(x):
        seen.append(tp.compiler.is_compiling())
        return x + 1

    g = tp.compile(lambda x: helper(x) * 2)
    x = tp.randn(3)
    assert close(g(x), (x + 1) * 2) and close(g(x), (x + 1) * 2)
    assert seen == [True, False]
    assert "tp.compiler.disable" in g.explain().break_reasons[0].reason
    assert not tp.compiler.is_compiling()


# ---- reset, explain, source ------------------------------------------------------------------
def test_reset_forgets_every_compiled_graph():
    f = tp.compile(mlp_fn)
    x, w, b = tp.randn(3, 4), tp.randn(4, 5), tp.randn(5)
    f(x, w, b)
    tp.compiler.reset()
    assert f.compiles == 0 and f.explain().graph_count == 0
    f(x, w, b)
    assert f.compiles == 1


def test_explain_lists_graphs_guards_breaks_and_source():
    f = tp.compile(mlp_fn)
    x, w, b = tp.randn(3, 4), tp.randn(4, 5, requires_grad=True), tp.randn(5)
    f(x, w, b)
    out = f.explain()
    assert out.graph_count == 2 and out.graph_break_count == 0     # forward + backward
    assert out.ops_per_graph[0] == ["mm", "add.Tensor", "tanh", "sum.dim_IntList"]
    assert "arg1: float32[4, 5] on cpu, requires_grad=True, contiguous" in out.out_guards[0]
    assert "grad mode enabled" in out.out_guards[0]
    text = str(out)
    assert "Graph Count: 2" in text and "tp.ops.tanh.default" in text
    source = f.source()
    # the forward's and the backward's generated code: mm's kernel called directly, the
    # pointwise tail fused, the backward taking the output's gradient
    assert "_k_mm(" in source and "fused: add.Tensor, tanh" in source
    assert "tangent_0" in source
    # the module-level form, as torch._dynamo.explain
    broken = tp.compiler.explain(branchy)(tp.ones(3))
    assert broken.graph_count == 0 and broken.graph_break_count == 1


# ---- compiled backward -------------------------------------------------------------------------
def test_joint_graph_gradients_equal_eagers():
    def f(x, w, idx_src):
        y = x @ w
        return y.relu().sum(0), y.argmax(1), (x * 3).detach()

    g = tp.compile(f)
    x, w = tp.randn(4, 3, requires_grad=True), tp.randn(3, 2, requires_grad=True)
    for _ in range(2):
        out, idx, d = g(x, w, None)
        assert not idx.requires_grad and not d.requires_grad and out.requires_grad
        gx, gw = tp.autograd.grad(out.sum(), [x, w])
        e_out, e_idx, e_d = f(x, w, None)
        ex, ew = tp.autograd.grad(e_out.sum(), [x, w])
        assert close(out, e_out) and tp.equal(idx, e_idx) and close(d, e_d)
        assert close(gx, ex) and close(gw, ew)
    assert type(out.grad_fn).__name__ == "CompiledGraphFunctionBackward"


def test_unused_inputs_and_outputs_without_gradient():
    def f(x, y, z):
        return x * 2, y.sum() * 0 + 1, z.exp()

    g = tp.compile(f)
    x, y, z = (tp.randn(3, requires_grad=True) for _ in range(3))
    g(x, y, z)
    a, b, c = g(x, y, z)
    a.sum().backward(retain_graph=True)     # b, c get no gradient: y.grad, z.grad stay None
    assert tp.equal(x.grad, tp.full((3,), 2.0))
    assert y.grad is None and z.grad is None
    (b + c).sum().backward()
    e = [t.detach().requires_grad_() for t in (x, y, z)]
    eb, ec = f(*e)[1:]
    (eb + ec).sum().backward()
    assert close(y.grad, e[1].grad) and close(z.grad, e[2].grad)


def test_a_write_through_detach_stays_apart_from_a_view_of_the_same_geometry():
    """detach's result is a new impl sharing x's memory, made without a dispatch: the
    capture knows it by its memory alone, which x[...] shares too. Its in-place write
    must be a node of its own (an alias), not a write into x[...]: recorded as
    mul_(x[...], x), the view became the product and its gradient went through it
    (fuzzer seed 217458: the lowered call's gradient differed from eager's)."""
    def f(x):
        view = x[...]
        d = x.detach()
        d.mul_(x)
        return x, view, d, view[...]

    def grad_of(fn, k):
        x = tp.tensor(4.5 + 2.25j, dtype=tp.complex64).requires_grad_(True)
        out = fn(x)
        (tp.view_as_real(out[k]) * tp.tensor([1.0, 0.5])).sum().backward()
        return out, x.grad

    for k in range(4):      # each output's gradient on its own (d's through the product)
        g = tp.compile(f)
        eager_out, eager_grad = grad_of(f, k)
        for _ in range(2):  # the capture, then the lowered graph
            out, grad = grad_of(g, k)
            assert close(list(out), list(eager_out)) and close(grad, eager_grad)
        tp.compiler.reset()


def training_run(model, compiled, make_batch, steps=3, optimizer=tp.optim.SGD, **opt_kwargs):
    opt = optimizer(model.parameters(), **opt_kwargs)
    losses = []
    for step in range(steps):
        x, target = make_batch(step)
        opt.zero_grad()
        loss = tp.nn.functional.cross_entropy(compiled(x), target)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


@pytest.mark.parametrize("make, batch, optimizer, kwargs", [
    (MLP, lambda s: (tp.randn(5, 8, generator=tp.Generator().manual_seed(s)),
                     tp.tensor([0, 1, 2, 3, 0])), tp.optim.SGD, dict(lr=0.1, momentum=0.9)),
    (SmallCNN, lambda s: (tp.randn(3, 1, 8, 8, generator=tp.Generator().manual_seed(s)),
                          tp.tensor([0, 2, 1])), tp.optim.Adam, dict(lr=0.01)),
], ids=["mlp-sgd", "cnn-adam"])
def test_training_step_equals_eager(make, batch, optimizer, kwargs):
    eager_model = make()
    model = copy.deepcopy(eager_model)
    compiled = tp.compile(model)
    expected = training_run(eager_model, eager_model, batch, optimizer=optimizer, **kwargs)
    got = training_run(model, compiled, batch, optimizer=optimizer, **kwargs)
    assert got == pytest.approx(expected, rel=1e-5, abs=1e-6)
    for (name, p), q in zip(model.named_parameters(), eager_model.parameters()):
        assert p.grad is not None, name
        assert close(p, q, 1e-5) and close(p.grad, q.grad, 1e-5), name
    assert compiled._compiled.compiles == 1
    assert compiled.explain().graph_count == 2


def test_lstm_cell_loop_equals_eager_forward_and_backward():
    cell = nn.LSTMCell(6, 8)

    def loop(xs, h, c):
        for x in xs:
            h, c = cell(x, (h, c))
        return h

    g = tp.compile(loop)
    xs = [tp.randn(4, 6) for _ in range(5)]
    h0, c0 = tp.zeros(4, 8), tp.zeros(4, 8)
    with tp.no_grad():
        assert close(g(xs, h0, c0), loop(xs, h0, c0)) and close(g(xs, h0, c0), loop(xs, h0, c0))
    for _ in range(2):
        g(xs, h0, c0).sum().backward()
    compiled_grads = [p.grad.clone() for p in cell.parameters()]
    cell.zero_grad()
    for _ in range(2):
        loop(xs, h0, c0).sum().backward()
    assert all(close(a, p.grad, 1e-5) for a, p in zip(compiled_grads, cell.parameters()))
    assert g.compiles == 2          # no_grad, then grad mode


# ---- state, modes, nesting --------------------------------------------------------------------
W = tp.randn(3)


def test_a_global_tensor_is_read_live_and_named_in_the_guards():
    def f(x):
        return x * W

    g = tp.compile(f)
    x = tp.randn(3)
    g(x)
    W.add_(1.0)
    assert close(g(x), x * W)
    out = g.explain()
    assert any(line.startswith("W: the same tensor") for line in out.out_guards[0])
    assert "l_W" in out.graphs[0].python_code()
    assert "t0._impl.requires_grad is False" in out.guard_code[0]


def test_state_reached_through_a_partial_is_read_live():
    import functools

    w = tp.randn(3)
    g = tp.compile(functools.partial(lambda x, w: x * w, w=w))
    x = tp.randn(3)
    g(x)
    w.mul_(3.0)
    assert close(g(x), x * w)


SCALE = 2.0


def test_python_values_the_function_reaches_are_guarded():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 3.0

        def forward(self, x):
            return x * self.scale * SCALE

    global SCALE
    model = Scaled()
    g = tp.compile(model)
    x = tp.randn(3)
    assert close(g(x), x * 6.0)
    model.scale = 5.0                       # an attribute
    assert close(g(x), x * 10.0)
    SCALE = 1.0                             # a global the code names
    try:
        assert close(g(x), x * 5.0)
    finally:
        SCALE = 2.0
    assert g._compiled.compiles == 3
    assert "self.scale == 3.0" in g.explain().out_guards[0]


def test_changing_a_python_value_inside_is_a_side_effect_break():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x + 1

    model = Counter()
    g = tp.compile(model)
    for _ in range(3):
        g(tp.randn(2))
    assert model.calls == 3
    assert "changed a Python value" in g.explain().break_reasons[0].reason


def test_under_autocast_the_replay_casts_once():
    def f(x, w):
        return (x @ w).relu().sum(-1)

    g = tp.compile(f)
    x, w = tp.randn(3, 4), tp.randn(4, 5, requires_grad=True)
    with tp.autocast("cpu"):
        for _ in range(2):
            got, expected = g(x, w), f(x, w)
            assert got.dtype is tp.bfloat16 and tp.equal(got, expected)
            gw, = tp.autograd.grad(got.float().sum(), [w])
            ew, = tp.autograd.grad(expected.float().sum(), [w])
            assert close(gw, ew)
    g(x, w)                                       # autocast off: another guard set
    assert g.compiles == 2


def test_a_compiled_function_called_inside_another_is_inlined():
    inner = tp.compile(lambda x: x.exp() + 1)
    outer = tp.compile(lambda x: inner(x) * 2)
    x = tp.randn(3)
    assert close(outer(x), (x.exp() + 1) * 2) and close(outer(x), (x.exp() + 1) * 2)
    assert inner.compiles == 0
    assert outer.explain().ops_per_graph[0] == ["exp", "add.Tensor", "mul.Tensor"]


def test_the_default_backend_lowers_every_graph():
    from tensorplay.compiler import lowering
    calls = []
    real = lowering.lower

    def spy(graph, *, device):
        calls.append((len(graph.placeholders), str(device)))
        return real(graph, device=device)

    lowering.lower = spy
    try:
        f = tp.compile(mlp_fn)
        f(tp.randn(3, 4), tp.randn(4, 5, requires_grad=True), tp.randn(5))
    finally:
        lowering.lower = real
    assert calls == [(3, "cpu"), (3, "cpu")]    # forward; x and tanh saved + one tangent


def test_a_whole_training_step_with_backward_inside_runs_eagerly_and_correctly():
    def step(model, opt, x):
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        return loss

    model = nn.Linear(4, 2)
    reference = copy.deepcopy(model)
    opt = tp.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = tp.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    compiled = tp.compile(step)
    for _ in range(3):
        x = tp.randn(3, 4)
        assert close(compiled(model, opt, x), step(reference, ref_opt, x))
        assert close(model.weight, reference.weight)
    assert ".grad" in compiled.explain().break_reasons[0].reason


def test_a_result_compile_cannot_rebuild_breaks_without_running_twice():
    calls = []

    class Box:
        def __init__(self, t):
            self.t = t

    def f(x):
        calls.append(1)
        return Box(x * 2)

    g = tp.compile(f)
    x = tp.randn(2)
    assert close(g(x).t, x * 2) and close(g(x).t, x * 2)
    assert len(calls) == 2
    assert "returns a Box" in g.explain().break_reasons[0].reason


LIMIT, MISSING = float("inf"), float("nan")


def test_value_guards_hold_inf_and_nan():
    g = tp.compile(lambda x: x.clamp(max=LIMIT) if MISSING != MISSING else x)
    x = tp.randn(3)
    assert close(g(x), x) and close(g(x), x)
    assert g.compiles == 1


# ---- results written in place: the passes keep them tensors of their own ------------------
# Each function runs on `T`, tensorplay or torch (the oracle). The graph passes must not
# merge two equal calls when one result is written in place, by its own name or through
# a view (CSE merged the two clones of fuzzer seed 4045741, and clamp_ wrote both), nor
# let a constant written through a view keep the write into the next call.
def _fuzzer_seed_4045741(T, x):
    v0 = x[0, 0].to(T.int16)
    v0.bitwise_or_(6)
    v1 = v0[None]
    v2 = v0.clone()
    v3 = v0.clone()
    v1.zero_()
    v3.clamp_(-1, 1)
    return v0, v1, v2, v3, v1.select(-1, -1)


def _two_clones_the_second_written(T, x):
    a, b = x.clone(), x.clone()
    b.add_(1)
    return a + 0, b + 0                   # (not returned as they are: CSE may merge them)


def _two_clones_the_first_written(T, x):
    a, b = x.clone(), x.clone()
    a.mul_(3)
    return a + 0, b + 0


def _a_clone_written_through_a_view(T, x):
    a, b = x[0].clone(), x[0].clone()
    b[1:].fill_(7)
    return a * 1, b * 1


def _clone_write_the_original_clone(T, x):
    a = x.clone()
    x.add_(1)
    return a, x.clone(), x


def _two_equal_pure_calls_one_written(T, x):
    a, b = x.abs(), x.abs()
    b.mul_(2)
    return a, b


def _two_equal_pure_calls_one_written_through_a_view(T, x):
    a, b = x.neg(), x.neg()
    b[1:].zero_()
    return a * 1, b * 1


def _two_copies_to_another_dtype_one_written(T, x):
    a, b = x.to(T.float64), x.to(T.float64)
    b.mul_(2)
    return a, b


def _two_reshapes_that_copy_one_written(T, x):
    a, b = x.t().reshape(-1), x.t().reshape(-1)
    a.zero_()
    return a * 1, b * 1


def _a_constant_written_through_a_view(T, x):
    c = T.arange(3, dtype=T.float32)
    c[0].add_(x[0, 0])
    return (c * 1,)


def _a_folded_constant_written_through_a_view(T, x):
    c = T.arange(3, dtype=T.float32) * 2 + 1
    c[1:].mul_(x[0, 1:])
    return (c + x[1],)


@pytest.mark.parametrize("fn", [
    _fuzzer_seed_4045741, _two_clones_the_second_written, _two_clones_the_first_written,
    _a_clone_written_through_a_view, _clone_write_the_original_clone,
    _two_equal_pure_calls_one_written, _two_equal_pure_calls_one_written_through_a_view,
    _two_copies_to_another_dtype_one_written, _two_reshapes_that_copy_one_written,
    _a_constant_written_through_a_view, _a_folded_constant_written_through_a_view,
], ids=lambda fn: fn.__name__.strip("_"))
@pytest.mark.parametrize("backend", ["default", "eager"])
def test_results_written_in_place_stay_apart_as_in_torch(fn, backend):
    values = np.array([[3, -2, 6], [0, 5, -1], [4, 1, -3]], dtype=np.float32)
    x = torch.tensor(values)
    expected = [t.numpy() for t in fn(torch, x)] + [x.numpy()]
    g = tp.compile(lambda x: fn(tp, x), backend=backend)
    for _ in range(3):          # the capture, then the lowered graph twice
        x = tp.tensor(values)
        got = [np.asarray(t) for t in g(x)] + [np.asarray(x)]
        assert [(t.dtype, t.shape) for t in got] == [(t.dtype, t.shape) for t in expected]
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a, b)


def _a_view_of_a_constant(T, x):
    return x + 1, T.arange(3, dtype=T.float32)[0:2]


def _a_view_of_one_of_two_equal_calls(T, x):
    return x.exp(), x.exp()[0:2]


@pytest.mark.parametrize("fn", [_a_view_of_a_constant, _a_view_of_one_of_two_equal_calls],
                         ids=lambda fn: fn.__name__.strip("_"))
def test_a_returned_view_the_caller_writes_shares_nothing_with_other_results(fn):
    """The caller writes the returned view: in torch, that changes neither the other
    result nor the next call's. (The view's base was the constant all calls share, or
    the other result, when CSE merged the two exp calls.)"""
    values = np.zeros(3, dtype=np.float32)
    first, view = fn(torch, torch.tensor(values))
    expected_view = view.numpy().copy()
    view.add_(5)
    expected_first = first.numpy()
    g = tp.compile(lambda x: fn(tp, x))
    for _ in range(3):
        first, view = g(tp.tensor(values))
        np.testing.assert_array_equal(np.asarray(view), expected_view)
        view.add_(5)
        np.testing.assert_array_equal(np.asarray(first), expected_first)
