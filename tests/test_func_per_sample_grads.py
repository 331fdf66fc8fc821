"""Per-sample gradients through every layer: `vmap(grad(loss), in_dims=(None, 0, 0))` of
nn.RNN, LSTM, GRU, MultiheadAttention and TransformerEncoderLayer against a loop of
per-example gradients and against torch.func on the same weights; custom
autograd.Functions under vmap; jacrev's chunk_size, grad(is_grads_batched=True),
stack_module_state and replace_all_batch_norm_modules_ against PyTorch."""
import numpy as np
import pytest
import torch
import torch.func as tf

import tensorplay as tp
from tensorplay.errors import AutogradError
from tensorplay.func import functional_call, grad, jacrev, vmap
from tensorplay.func.fallback import fallback_ops, reset_fallback_ops

RNG = np.random.default_rng(5)
BATCH = 3


def pair(*shape):
    a = RNG.standard_normal(shape)
    return tp.tensor(a, dtype=tp.float64), torch.tensor(a, dtype=torch.float64)


def assert_close(ours, theirs, tol=1e-9):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tol,
                               atol=tol)


# ---- the five modules, built in both libraries from one definition ---------------------------
def self_attention(nn, need_weights):
    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True, dtype=DTYPE[nn])

        def forward(self, x):
            return self.attn(x, x, x, need_weights=need_weights)[0]
    return SelfAttention()


DTYPE = {tp.nn: tp.float64, torch.nn: torch.float64}
MODULES = {
    # name: (module of an nn namespace, input features, output features, the shapes of
    # a recurrent module's initial states per example)
    "rnn": (lambda nn: nn.RNN(4, 5, batch_first=True, dtype=DTYPE[nn]), 4, 5, [(1, 1, 5)]),
    "lstm": (lambda nn: nn.LSTM(4, 5, num_layers=2, batch_first=True, dtype=DTYPE[nn]), 4, 5,
             [(2, 1, 5)] * 2),
    "bidirectional_lstm": (lambda nn: nn.LSTM(4, 3, batch_first=True, bidirectional=True,
                                              dtype=DTYPE[nn]), 4, 6, [(2, 1, 3)] * 2),
    "gru": (lambda nn: nn.GRU(4, 5, batch_first=True, dtype=DTYPE[nn]), 4, 5, [(1, 1, 5)]),
    "multihead_attention": (lambda nn: self_attention(nn, True), 8, 8, []),
    "multihead_attention_sdpa": (lambda nn: self_attention(nn, False), 8, 8, []),
    "transformer_encoder_layer": (lambda nn: nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, batch_first=True, dtype=DTYPE[nn]), 8, 8, []),
}


def make_pair(name):
    build = MODULES[name][0]
    ours, theirs = build(tp.nn), build(torch.nn)
    with torch.no_grad():
        for k, v in ours.state_dict().items():
            theirs.state_dict()[k].copy_(torch.from_numpy(v.numpy()))
    return ours, theirs


def loss_of(functional_call_, module):
    """The loss of one example (a sequence, and a recurrent module's initial states):
    squared error of the output, plus the final states (so their gradients flow too)."""
    def loss(params, x, y, states):
        args = (x.unsqueeze(0),)
        if states:
            args += (states[0] if len(states) == 1 else tuple(states),)
        out = functional_call_(module, params, args)
        extra = 0
        if isinstance(out, tuple):
            out, finals = out
            for s in finals if isinstance(finals, tuple) else (finals,):
                extra = extra + (s * s).sum() * 0.5
        return ((out - y.unsqueeze(0)) ** 2).sum() + extra
    return loss


@pytest.mark.parametrize("name", list(MODULES))
def test_per_sample_grads_match_a_loop_and_torch_func(name):
    """(torch.func's fused RNN ops need the initial states batched, given per example: a
    state made inside the module would be unbatched, which they refuse to write.)"""
    ours, theirs = make_pair(name)
    _, features, out_features, state_shapes = MODULES[name]
    x, tx = pair(BATCH, 3, features)
    y, ty = pair(BATCH, 3, out_features)
    states = [pair(BATCH, *shape) for shape in state_shapes]
    s, ts = [o for o, _ in states], [t for _, t in states]
    params = {k: v.detach() for k, v in ours.named_parameters()}
    loss = loss_of(functional_call, ours)
    reset_fallback_ops()
    per_sample = vmap(grad(loss), in_dims=(None, 0, 0, 0))(params, x, y, s)
    assert fallback_ops() == []      # every op batched by a rule, none looped

    looped = [grad(loss)(params, x[i], y[i], [t[i] for t in s]) for i in range(BATCH)]
    t_params = {k: v.detach() for k, v in theirs.named_parameters()}
    t_per_sample = tf.vmap(tf.grad(loss_of(tf.functional_call, theirs)),
                           in_dims=(None, 0, 0, 0))(t_params, tx, ty, ts)
    assert list(per_sample) == list(t_per_sample)
    for k in params:
        for i in range(BATCH):
            assert_close(per_sample[k][i], looped[i][k])
        assert_close(per_sample[k], t_per_sample[k])


def test_lstm_per_sample_grads_equal_autograd_grad_per_example():
    """Initial states made inside the module (zeros), and each example's gradients from
    tp.autograd.grad on the module's own parameters."""
    ours, _ = make_pair("lstm")
    x, _ = pair(BATCH, 3, 4)
    y, _ = pair(BATCH, 3, 5)
    params = {k: v.detach() for k, v in ours.named_parameters()}
    loss = loss_of(functional_call, ours)
    per_sample = vmap(grad(loss), in_dims=(None, 0, 0, None))(params, x, y, [])
    for i in range(BATCH):
        value = loss(dict(ours.named_parameters()), x[i], y[i], [])
        grads = tp.autograd.grad(value, list(ours.parameters()))
        for (k, _), g in zip(ours.named_parameters(), grads):
            assert_close(per_sample[k][i], g)


def explained(fn):
    with tp.dispatch.explain(file=False) as e:
        fn()
    return "\n".join(e.lines)


def test_explain_names_the_rnn_and_attention_rules():
    ours, _ = make_pair("lstm")
    x, _ = pair(BATCH, 3, 4)
    y, _ = pair(BATCH, 3, 5)
    params = {k: v.detach() for k, v in ours.named_parameters()}
    text = explained(lambda: vmap(grad(loss_of(functional_call, ours)),
                                  in_dims=(None, 0, 0, None))(params, x, y, []))
    assert "batching rule tensorplay.func.batching_rules.rnn.lstm_sequence_rule" in text
    assert "batching rule tensorplay.func.batching_rules.rnn.lstm_sequence_backward_rule" in text
    q, _ = pair(BATCH, 2, 3, 4)
    text = explained(lambda: vmap(tp.nn.functional.scaled_dot_product_attention)(q, q, q))
    assert ("batching rule tensorplay.func.batching_rules.attention."
            "scaled_dot_product_attention_rule") in text


def test_lstm_ensemble_weights_run_per_example():
    """Weights that differ per example (an ensemble) cannot share one fused call: the
    rule hands those calls to the per-example loop, and explain() says so."""
    models = [tp.nn.LSTM(3, 4, dtype=tp.float64) for _ in range(2)]
    params, buffers = tp.func.stack_module_state(models)
    x, _ = pair(5, 1, 3)

    def run(p, b, x):
        return functional_call(models[0], (p, b), (x,))[0]
    reset_fallback_ops()
    with pytest.warns(UserWarning, match="no batching rule for _lstm_sequence"):
        out = vmap(run, in_dims=(0, 0, None))(params, buffers, x)
    for i, m in enumerate(models):
        assert_close(out[i], m(x)[0])
    text = explained(lambda: vmap(run, in_dims=(0, 0, None))(params, buffers, x))
    assert "fallback loop over 2 examples" in text


@pytest.mark.parametrize("mask", [None, "bool", "causal"])
def test_sdpa_of_4d_examples_matches_torch_func(mask):
    (q, tq), (k, tk), (v, tv) = pair(BATCH, 1, 2, 3, 4), pair(BATCH, 1, 2, 5, 4), \
        pair(BATCH, 1, 2, 5, 4)
    bool_mask = np.tril(np.ones((3, 5), bool))
    kwargs = {"causal": {"is_causal": True}, None: {}}.get(mask)
    if mask == "bool":
        kwargs, t_kwargs = {"attn_mask": tp.tensor(bool_mask)}, \
            {"attn_mask": torch.tensor(bool_mask)}
    else:
        t_kwargs = kwargs

    def f(lib, kw):
        return lambda q, k, v: (lib.nn.functional.scaled_dot_product_attention(
            q, k, v, **kw) ** 2).sum()
    ours = vmap(grad(f(tp, kwargs), argnums=(0, 1, 2)))(q, k, v)
    theirs = tf.vmap(tf.grad(f(torch, t_kwargs), argnums=(0, 1, 2)))(tq, tk, tv)
    for o, t in zip(ours, theirs):
        assert_close(o, t)
    out = vmap(lambda q, k, v: tp.nn.functional.scaled_dot_product_attention(
        q, k, v, **kwargs))(q, k, v)
    assert_close(out, torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **t_kwargs))


def test_sdpa_with_dropout_obeys_randomness():
    q, _ = pair(BATCH, 2, 3, 4)
    sdpa = tp.nn.functional.scaled_dot_product_attention
    with pytest.raises(tp.func.VmapError, match="randomness error mode"):
        vmap(lambda q: sdpa(q, q, q, dropout_p=0.5))(q)
    out = vmap(lambda q: sdpa(q, q, q, dropout_p=0.5), randomness="different")(q)
    assert tuple(out.shape) == (BATCH, 2, 3, 4)


# ---- custom autograd.Functions under vmap -----------------------------------------------------
def exp_function(lib):
    class Exp(lib.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y
    return Exp


SEEN = []


def scale_function(lib):
    """x * w with a vmap staticmethod, which records what it was given."""
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(x, w):
            return x * w

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w, g * x

        @staticmethod
        def vmap(info, in_dims, x, w):
            SEEN.append((info.batch_size, info.randomness, tuple(in_dims)))
            x = x.movedim(in_dims[0], 0) if in_dims[0] is not None else x
            w = w.movedim(in_dims[1], 0) if in_dims[1] is not None else w
            return x * w, 0
    return Scale


def test_function_with_generate_vmap_rule_matches_torch():
    (x, tx), ours, theirs = pair(BATCH, 4), exp_function(tp), exp_function(torch)
    assert_close(vmap(ours.apply)(x), tf.vmap(theirs.apply)(tx))
    g = vmap(grad(lambda v: (ours.apply(v) * v).sum()))(x)
    tg = tf.vmap(tf.grad(lambda v: (theirs.apply(v) * v).sum()))(tx)
    assert_close(g, tg)
    for i in range(BATCH):
        xi = x[i].detach().requires_grad_()
        (gi,) = tp.autograd.grad((ours.apply(xi) * xi).sum(), xi)
        assert_close(g[i], gi)
    # nested vmaps, and a backward run after vmap returned
    x2, tx2 = pair(2, BATCH, 4)
    assert_close(vmap(vmap(grad(lambda v: ours.apply(v).sum())))(x2), tx2.exp())
    text = explained(lambda: vmap(ours.apply)(x))
    assert "autograd.Function Exp by generate_vmap_rule" in text
    leaf = x.detach().requires_grad_()
    out = vmap(ours.apply)(leaf)
    assert "ExpBackward" in out.grad_fn.name()
    out.sum().backward()
    assert_close(leaf.grad, tx.exp())


def test_function_with_vmap_staticmethod_gets_torchs_arguments():
    (x, tx), (w, tw) = pair(BATCH, 4), pair(4)
    SEEN.clear()
    out = vmap(scale_function(tp).apply, in_dims=(0, None))(x, w)
    ours_seen = list(SEEN)
    SEEN.clear()
    t_out = tf.vmap(scale_function(torch).apply, in_dims=(0, None))(tx, tw)
    assert ours_seen == SEEN == [(BATCH, "error", (0, None))]
    text = explained(lambda: vmap(scale_function(tp).apply, in_dims=(0, None))(x, w))
    assert "autograd.Function Scale by its vmap staticmethod, in_dims=(0, None)" in text
    assert_close(out, t_out)
    g = vmap(grad(lambda a, b: scale_function(tp).apply(a, b).sum(), argnums=(0, 1)),
             in_dims=(0, None))(x, w)
    tg = tf.vmap(tf.grad(lambda a, b: scale_function(torch).apply(a, b).sum(),
                         argnums=(0, 1)), in_dims=(0, None))(tx, tw)
    for o, t in zip(g, tg):
        assert_close(o, t)


def error_of(fn):
    try:
        fn()
    except (RuntimeError, NotImplementedError) as e:
        return type(e), str(e)
    raise AssertionError("no error")


@pytest.mark.parametrize("kind", ["neither", "both", "ctx_style"])
def test_function_without_vmap_support_raises_torchs_error(kind):
    def build(lib):
        body = {
            "forward": staticmethod(lambda x: x * 2),
            "setup_context": staticmethod(lambda ctx, inputs, output: None),
            "backward": staticmethod(lambda ctx, g: g * 2),
        }
        if kind == "both":
            body["generate_vmap_rule"] = True
            body["vmap"] = staticmethod(lambda info, in_dims, x: (x * 2, in_dims[0]))
        if kind == "ctx_style":
            body["forward"] = staticmethod(lambda ctx, x: x * 2)
            del body["setup_context"]
        return type("Double", (lib.autograd.Function,), body)
    x, tx = pair(BATCH, 2)
    ours, theirs = error_of(lambda: vmap(build(tp).apply)(x)), \
        error_of(lambda: tf.vmap(build(torch).apply)(tx))
    assert issubclass(ours[0], AutogradError)
    assert ours[1] == theirs[1]


# ---- jacrev(chunk_size), grad(is_grads_batched) ----------------------------------------------
def two_outputs(v):
    return v.sin() * v.sum(), v[:2] * v[1:3]


@pytest.mark.parametrize("chunk_size", [None, 1, 2, 3, 100])
def test_jacrev_chunk_size_matches_torch(chunk_size, monkeypatch):
    x, tx = pair(4)
    from tensorplay.func import transforms
    rows = []
    real = transforms._map_over_rows
    monkeypatch.setattr(transforms, "_map_over_rows",
                        lambda fn, r: rows.append(r.shape[0]) or real(fn, r))
    ours = jacrev(two_outputs, chunk_size=chunk_size)(x)
    theirs = tf.jacrev(two_outputs, chunk_size=chunk_size)(tx)
    for o, t in zip(ours, theirs):
        assert_close(o, t)
    # 6 output elements: one batched pass, chunks of chunk_size, or a plain loop
    expected = {None: [6], 1: [], 2: [2, 2, 2], 3: [3, 3], 100: [6]}[chunk_size]
    assert rows == expected
    pre = jacrev(two_outputs, chunk_size=chunk_size, _preallocate_and_copy=True)(x)
    for o, t in zip(pre, theirs):
        assert_close(o, t)


def test_jacrev_chunk_size_must_be_positive():
    with pytest.raises(ValueError, match="jacrev: `chunk_size` should be greater than 0."):
        jacrev(two_outputs, chunk_size=0)
    with pytest.raises(ValueError):
        tf.jacrev(two_outputs, chunk_size=0)


def test_grad_with_batched_grad_outputs_matches_torch():
    (x, tx), (v, tv), (u, tu) = pair(3), pair(5, 3), pair(5, 2)
    x.requires_grad_()
    tx.requires_grad_()
    outs = (x.sin() * x.sum(), x[:2].exp())
    t_outs = (tx.sin() * tx.sum(), tx[:2].exp())
    ours = tp.autograd.grad(outs, x, (v, u), is_grads_batched=True)
    theirs = torch.autograd.grad(t_outs, tx, (tv, tu), is_grads_batched=True)
    assert_close(ours[0], theirs[0])
    with pytest.raises(AutogradError, match=r"If `is_grads_batched=True`, we interpret the "
                                            r"first dimension.*grad_output\[1\]"):
        tp.autograd.grad(outs, x, (v, v), is_grads_batched=True)


# ---- ensembles: stack_module_state, replace_all_batch_norm_modules_ ---------------------------
def small_net(nn):
    return nn.Sequential(nn.Linear(3, 4, dtype=DTYPE[nn]), nn.BatchNorm1d(4, dtype=DTYPE[nn]),
                         nn.Tanh(), nn.Linear(4, 2, dtype=DTYPE[nn]))


def test_stack_module_state_has_torchs_structure():
    ours = [small_net(tp.nn) for _ in range(3)]
    theirs = [small_net(torch.nn) for _ in range(3)]
    params, buffers = tp.func.stack_module_state(ours)
    t_params, t_buffers = tf.stack_module_state(theirs)
    for o, t in ((params, t_params), (buffers, t_buffers)):
        assert list(o) == list(t)
        for k in t:
            assert tuple(o[k].shape) == tuple(t[k].shape)
            assert o[k].requires_grad == t[k].requires_grad
            assert o[k].is_leaf == t[k].is_leaf
    assert_close(params["0.weight"][1], torch.from_numpy(ours[1][0].weight.detach().numpy()))
    with pytest.raises(RuntimeError, match="same class"):
        tp.func.stack_module_state([ours[0], tp.nn.Linear(3, 4)])
    ours[0].eval()
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        tp.func.stack_module_state(ours)


def test_replace_all_batch_norm_modules_lets_an_ensemble_train_under_vmap():
    ours, theirs = small_net(tp.nn), small_net(torch.nn)
    with torch.no_grad():
        for k, v in ours.state_dict().items():
            theirs.state_dict()[k].copy_(torch.from_numpy(v.numpy()))
    assert tp.func.replace_all_batch_norm_modules_(ours) is ours
    tf.replace_all_batch_norm_modules_(theirs)
    bn, t_bn = ours[1], theirs[1]
    assert bn.running_mean is None and bn.running_var is None and not bn.track_running_stats
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x, tx = pair(2, 5, 3)   # two ensemble members' batches of 5

    def run(lib_call, model):
        return lambda p, x: lib_call(model, p, (x,))
    params = {k: v.detach() for k, v in ours.named_parameters()}
    t_params = {k: v.detach() for k, v in theirs.named_parameters()}
    reset_fallback_ops()
    out = vmap(run(functional_call, ours), in_dims=(None, 0))(params, x)
    assert_close(out, tf.vmap(run(tf.functional_call, theirs), in_dims=(None, 0))(t_params, tx))
    # each member's gradients, batch norm batched by its rule (B joins the channels)
    def loss(call):
        return lambda p, x: (call(ours if call is functional_call else theirs, p, (x,))
                             ** 2).sum()
    grads = vmap(grad(loss(functional_call)), in_dims=(None, 0))(params, x)
    t_grads = tf.vmap(tf.grad(loss(tf.functional_call)), in_dims=(None, 0))(t_params, tx)
    for k in params:
        assert_close(grads[k], t_grads[k])
    assert fallback_ops() == []
