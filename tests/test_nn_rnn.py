"""tp.nn.RNN / LSTM / GRU and their cells against PyTorch: outputs, final states and the
gradients of every parameter, the input and the initial states, with weights copied from
the torch module through a NumPy state dict."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError

RTOL, ATOL = 1e-4, 1e-5
MODES = {   # name -> (tp class, torch class, extra constructor kwargs)
    "rnn_tanh": ("RNN", {"nonlinearity": "tanh"}),
    "rnn_relu": ("RNN", {"nonlinearity": "relu"}),
    "lstm": ("LSTM", {}),
    "gru": ("GRU", {}),
}


def make_pair(cls, *args, dtype=torch.float32, **kwargs):
    """A torch module and a tp module holding the same weights (copied through NumPy)."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(*args, **kwargs).to(dtype)
    m = getattr(tp.nn, cls)(*args, **kwargs, dtype=tp.float64 if dtype == torch.float64
                            else tp.float32)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return tm, m


def leaf(arr):
    return tp.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)


def flat(result):
    """(output, h) or (output, (h, c)) -> [output, h(, c)]."""
    out, state = result
    return [out] + (list(state) if isinstance(state, tuple) else [state])


def close(a, b, rtol=RTOL, atol=ATOL, what=""):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol,
                               err_msg=what)


def check_against_torch(tm, m, inputs, rtol=RTOL, atol=ATOL, flatten=flat):
    """Run both modules on `inputs` (NumPy arrays or None; states nested as the module
    takes them), compare every result, then backpropagate the same random cotangents and
    compare every gradient (of each parameter, each input and each initial state)."""
    rng = np.random.default_rng(1)
    tp_leaves, torch_leaves = [], []

    def build(value):
        if value is None:
            return None, None
        if isinstance(value, tuple):
            pairs = [build(v) for v in value]
            return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        a, b = leaf(value)
        tp_leaves.append(a)
        torch_leaves.append(b)
        return a, b

    args = [build(v) for v in inputs]
    got = flatten(m(*[a for a, _ in args]))
    want = flatten(tm(*[b for _, b in args]))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert tuple(g.shape) == tuple(w.shape), (i, g.shape, w.shape)
        close(g, w, rtol, atol, f"result {i}")
    cotangents = [rng.standard_normal(tuple(w.shape)).astype(w.detach().numpy().dtype)
                  for w in want]
    sum((g * tp.tensor(c)).sum() for g, c in zip(got, cotangents)).backward()
    sum((w * torch.tensor(c)).sum() for w, c in zip(want, cotangents)).backward()
    for name, tparam in tm.named_parameters():
        close(m.get_parameter(name).grad, tparam.grad, rtol, atol, f"grad of {name}")
    for i, (a, b) in enumerate(zip(tp_leaves, torch_leaves)):
        close(a.grad, b.grad, rtol, atol, f"grad of input {i}")


def random(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---- the layers against torch --------------------------------------------------------------
@pytest.mark.parametrize("mode,num_layers,bidirectional,batch_first,with_state", [
    (mode, *rest) for mode in MODES
    for rest in itertools.product((1, 2), (False, True), (False, True), (False, True))])
def test_layer_matches_torch(mode, num_layers, bidirectional, batch_first, with_state):
    cls, kw = MODES[mode]
    L, N, I, H = 3, 2, 3, 4
    tm, m = make_pair(cls, I, H, num_layers=num_layers, bidirectional=bidirectional,
                      batch_first=batch_first, **kw)
    x = random(N, L, I) if batch_first else random(L, N, I)
    state = None
    if with_state:
        rows = num_layers * (2 if bidirectional else 1)
        state = random(rows, N, H, seed=2)
        if cls == "LSTM":
            state = (state, random(rows, N, H, seed=3))
    check_against_torch(tm, m, [x, state])


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("with_state", [False, True])
def test_unbatched_input_matches_torch(mode, with_state):
    cls, kw = MODES[mode]
    tm, m = make_pair(cls, 3, 4, num_layers=2, bidirectional=True, **kw)
    state = None
    if with_state:
        state = random(4, 4, seed=2)
        if cls == "LSTM":
            state = (state, random(4, 4, seed=3))
    check_against_torch(tm, m, [random(5, 3), state])


def test_lstm_float64_is_tight():
    tm, m = make_pair("LSTM", 3, 5, num_layers=2, bidirectional=True, dtype=torch.float64)
    x = random(4, 2, 3, dtype=np.float64)
    check_against_torch(tm, m, [x, None], rtol=1e-12, atol=1e-13)


def test_gru_without_bias_matches_torch():
    tm, m = make_pair("GRU", 3, 4, num_layers=2, bias=False)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    check_against_torch(tm, m, [random(3, 2, 3), None])


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_projection_matches_torch(bidirectional):
    tm, m = make_pair("LSTM", 3, 5, num_layers=2, proj_size=2, bidirectional=bidirectional,
                      batch_first=True)
    rows = 4 if bidirectional else 2
    check_against_torch(tm, m, [random(2, 3, 3), (random(rows, 2, 2, seed=2),
                                                  random(rows, 2, 5, seed=3))])


def test_state_dict_round_trips_into_torch():
    m = tp.nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    tm = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    sd = m.state_dict()
    assert list(sd) == list(tm.state_dict())
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in sd.items()})
    x = random(3, 2, 3)
    close(m(tp.tensor(x))[0], tm(torch.tensor(x))[0])


def test_parameter_shapes_and_order_follow_torch():
    for cls, kw in [("RNN", {}), ("LSTM", {"proj_size": 2}), ("GRU", {"bias": False})]:
        m = getattr(tp.nn, cls)(3, 5, num_layers=3, bidirectional=True, **kw)
        tm = getattr(torch.nn, cls)(3, 5, num_layers=3, bidirectional=True, **kw)
        assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == \
            [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
        assert len(m.all_weights) == 6
        m.flatten_parameters()   # a documented no-op


# ---- the cells -------------------------------------------------------------------------------
CELLS = {"rnn_tanh": ("RNNCell", {}), "rnn_relu": ("RNNCell", {"nonlinearity": "relu"}),
         "lstm": ("LSTMCell", {}), "gru": ("GRUCell", {})}


@pytest.mark.parametrize("mode", list(CELLS))
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_state", [False, True])
def test_cell_matches_torch(mode, batched, with_state):
    cls, kw = CELLS[mode]
    tm, m = make_pair(cls, 3, 4, **kw)
    lead = (2,) if batched else ()
    state = None
    if with_state:
        state = random(*lead, 4, seed=2)
        if cls == "LSTMCell":
            state = (state, random(*lead, 4, seed=3))
    check_against_torch(tm, m, [random(*lead, 3), state],
                        flatten=lambda r: list(r) if isinstance(r, tuple) else [r])


def test_cell_without_bias():
    tm, m = make_pair("GRUCell", 3, 4, bias=False)
    assert m.bias_ih is None and "bias_ih" not in m.state_dict()
    x = random(2, 3)
    close(m(tp.tensor(x)), tm(torch.tensor(x)))


@pytest.mark.parametrize("mode", list(CELLS))
@pytest.mark.parametrize("batch,inp,hidden", [(2, 0, 4), (0, 0, 4), (0, 3, 4), (2, 3, 0)])
def test_cell_of_an_empty_dim_matches_torch(mode, batch, inp, hidden):
    """PyTorch's cells take input_size and hidden_size 0 (RNNBase alone refuses them):
    the parameters are empty, the output and every gradient too, or zero."""
    cls, kw = CELLS[mode]
    tm, m = make_pair(cls, inp, hidden, **kw)
    state = random(batch, hidden, seed=2)
    if cls == "LSTMCell":
        state = (state, random(batch, hidden, seed=3))
    check_against_torch(tm, m, [random(batch, inp), state],
                        flatten=lambda r: list(r) if isinstance(r, tuple) else [r])


def test_cell_refuses_a_negative_size():
    """PyTorch's torch.empty raises RuntimeError there; ShapeError is one."""
    with pytest.raises(RuntimeError):
        torch.nn.LSTMCell(-1, 4)
    with pytest.raises(ShapeError, match=r"LSTMCell\(\): argument 'input_size' must be "
                                         r"non-negative, but got -1"):
        tp.nn.LSTMCell(-1, 4)


# ---- init, dropout, devices ------------------------------------------------------------------
@pytest.mark.parametrize("cls", ["LSTM", "GRUCell"])
def test_default_init_is_uniform_within_one_over_sqrt_hidden(cls):
    tp.manual_seed(0)
    m = getattr(tp.nn, cls)(10, 16) if cls.endswith("Cell") else getattr(tp.nn, cls)(10, 16, 2)
    bound = 1 / math.sqrt(16)
    values = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    # U(-b, b): mean 0, variance b^2 / 3; thousands of draws pin both down.
    assert abs(values.mean()) < 0.05 * bound
    assert abs(values.var() - bound ** 2 / 3) < 0.1 * bound ** 2 / 3
    assert abs(values).max() > 0.95 * bound


def test_dropout_between_layers_only_in_training():
    m = tp.nn.GRU(3, 8, num_layers=3, dropout=0.5)
    x = tp.tensor(random(4, 2, 3))
    tp.manual_seed(0)
    a = m(x)[0].detach().numpy()
    tp.manual_seed(1)
    b = m(x)[0].detach().numpy()
    assert not np.allclose(a, b), "training output must depend on the dropout draw"
    m.eval()
    e1, e2 = m(x)[0].detach().numpy(), m(x)[0].detach().numpy()
    np.testing.assert_array_equal(e1, e2)
    # eval equals torch's eval with the same weights (dropout is off).
    tm = torch.nn.GRU(3, 8, num_layers=3, dropout=0.5).eval()
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    np.testing.assert_allclose(e1, tm(torch.tensor(x.numpy()))[0].detach().numpy(),
                               rtol=RTOL, atol=ATOL)


def test_dropout_with_one_layer_warns_and_does_nothing():
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        m = tp.nn.LSTM(3, 4, dropout=0.3)
    x = tp.tensor(random(3, 2, 3))
    np.testing.assert_array_equal(m(x)[0].detach().numpy(), m(x)[0].detach().numpy())


def test_float64_module_and_to():
    m = tp.nn.LSTM(3, 4, dtype=tp.float64)
    assert all(p.dtype == tp.float64 for p in m.parameters())
    out, (h, c) = m(tp.tensor(random(2, 1, 3, dtype=np.float64)))
    assert out.dtype == h.dtype == c.dtype == tp.float64


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_cuda_matches_cpu(cls):
    util = pytest.importorskip("triton_util")
    tp.manual_seed(0)
    m = getattr(tp.nn, cls)(3, 4, bidirectional=True)
    x = util.make((2, 1, 3))
    out, states = m(x)
    states = states if cls == "LSTM" else (states,)
    (out.sum() + states[0].sum()).backward()
    grads = {n: p.grad for n, p in m.named_parameters()}
    m.zero_grad()
    m.to(util.CUDA)
    xc = x.to(util.CUDA)
    out_c, states_c = m(xc)
    states_c = states_c if cls == "LSTM" else (states_c,)
    (out_c.sum() + states_c[0].sum()).backward()
    for got, want in zip((out_c, *states_c), (out, *states)):
        util.assert_same(got.detach(), want.detach(), rtol=1e-5, atol=1e-6)
    for n, p in m.named_parameters():
        util.assert_same(p.grad, grads[n], rtol=1e-5, atol=1e-6)
    g = tp.nn.GRUCell(3, 4)
    expected = g(x[0])
    g.to(util.CUDA)
    util.assert_same(g(xc[0]).detach(), expected.detach(), rtol=1e-5, atol=1e-6)


# ---- bad inputs ------------------------------------------------------------------------------
def test_constructor_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"RNN\(\): unknown nonlinearity 'sigmoid'"):
        tp.nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match=r"LSTM\(\): argument 'hidden_size' must be greater "
                                         r"than zero, but got 0"):
        tp.nn.LSTM(3, 0)
    with pytest.raises(ArgumentError, match=r"GRU\(\): argument 'num_layers' must be int, "
                                            r"but got float"):
        tp.nn.GRU(3, 4, num_layers=1.5)
    with pytest.raises(ValueError, match=r"dropout should be a number in range \[0, 1\]"):
        tp.nn.GRU(3, 4, num_layers=2, dropout=1.5)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        tp.nn.modules.rnn.RNNBase("GRU", 3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        tp.nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match=r"RNNCell\(\): unknown nonlinearity"):
        tp.nn.RNNCell(3, 4, nonlinearity="gelu")


def test_forward_errors_name_what_was_expected():
    m = tp.nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(ShapeError, match=r"input.size\(-1\) must be equal to input_size. "
                                         r"Expected 3, got 5"):
        m(tp.zeros(2, 1, 5))
    with pytest.raises(ShapeError, match=r"expected input to be 2-D \(unbatched\) or 3-D, "
                                         r"but got 4-D"):
        m(tp.zeros(2, 1, 1, 3))
    with pytest.raises(ShapeError, match=r"expected hidden size \[2, 1, 4\] for argument "
                                         r"'h_0', got \[1, 1, 4\]"):
        m(tp.zeros(2, 1, 3), (tp.zeros(1, 1, 4), tp.zeros(2, 1, 4)))
    with pytest.raises(ShapeError, match=r"'c_0', got \[2, 1, 4\] \(unbatched input needs "
                                         r"2-D states\)"):
        m(tp.zeros(2, 3), (tp.zeros(2, 4), tp.zeros(2, 1, 4)))
    with pytest.raises(ArgumentError, match=r"argument 'hx' must be a pair \(h_0, c_0\)"):
        m(tp.zeros(2, 1, 3), tp.zeros(2, 1, 4))
    with pytest.raises(ArgumentError, match=r"argument 'input' must be a Tensor, but got "
                                            r"list"):
        m([[1.0, 2.0, 3.0]])
    with pytest.raises(DTypeError, match=r"argument 'hx' must have the input's dtype "
                                         r"\(float32\), but got float64"):
        tp.nn.GRU(3, 4)(tp.zeros(2, 1, 3), tp.zeros(1, 1, 4, dtype=tp.float64))
    cell = tp.nn.GRUCell(3, 4)
    with pytest.raises(ShapeError, match=r"GRUCell.forward\(\): input has inconsistent "
                                         r"input_size: got 2 expected 3"):
        cell(tp.zeros(5, 2))
    with pytest.raises(ShapeError, match=r"expected hx of shape \[5, 4\], but got \[4\]"):
        cell(tp.zeros(5, 3), tp.zeros(4))
    with pytest.raises(ShapeError, match=r"expected input to be 1-D \(unbatched\) or 2-D"):
        cell(tp.zeros(1, 5, 3))


def test_repr_follows_torch():
    assert repr(tp.nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)) == \
        repr(torch.nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True))
    assert repr(tp.nn.GRUCell(3, 4, bias=False)) == repr(torch.nn.GRUCell(3, 4, bias=False))


# ---- the fused LSTM and GRU recurrences (_rnn_fused.py) --------------------------------------
def test_lstm_sequence_passes_gradcheck():
    from tensorplay.autograd import gradcheck
    from tensorplay.nn.modules._rnn_fused import LSTMSequence
    rng = np.random.default_rng(0)
    args = [tp.tensor(rng.standard_normal(shape), dtype=tp.float64, requires_grad=True)
            for shape in [(3, 2, 8), (2, 2), (2, 2), (8, 2)]]
    # (the fourth output, the workspace, is not differentiable)
    assert gradcheck(lambda *a: LSTMSequence.apply(*a)[:3], args)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_sequence_of_one_step_matches_torch(bidirectional):
    tm, m = make_pair("LSTM", 3, 4, bidirectional=bidirectional)
    rows = 2 if bidirectional else 1
    check_against_torch(tm, m, [random(1, 2, 3), (random(rows, 2, 4, seed=2),
                                                  random(rows, 2, 4, seed=3))])


@pytest.mark.parametrize("bias", [True, False])
def test_gru_sequence_passes_gradcheck(bias):
    from tensorplay.autograd import gradcheck
    from tensorplay.nn.modules._rnn_fused import GRUSequence
    rng = np.random.default_rng(0)
    shapes = [(3, 2, 6), (2, 2), (6, 2)] + [(6,)] * bias
    args = [tp.tensor(rng.standard_normal(shape), dtype=tp.float64, requires_grad=True)
            for shape in shapes]
    # (the third output, the workspace, is not differentiable)
    assert gradcheck(lambda *a: GRUSequence.apply(*a[:3], a[3] if bias else None)[:2], args)


@pytest.mark.parametrize("bias", [True, False])
def test_gru_float64_is_tight(bias):
    """The fused kernel in float64 against torch's GRU: every gradient to 1e-10."""
    tm, m = make_pair("GRU", 3, 4, num_layers=2, bidirectional=True, bias=bias,
                      dtype=torch.float64)
    check_against_torch(tm, m, [random(5, 2, 3, dtype=np.float64),
                                random(4, 2, 4, dtype=np.float64, seed=2)],
                        rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("cls,bias", [("LSTM", True), ("GRU", True), ("GRU", False)])
def test_second_derivative_matches_torch(cls, bias):
    """create_graph=True takes the recorded path of _rnn_fused.py: a gradient of a gradient
    must equal torch's (the fast backward alone would drop the second-order terms)."""
    tm, m = make_pair(cls, 3, 4, bidirectional=True, bias=bias)
    x, xt = leaf(random(3, 2, 3))
    (g,) = tp.autograd.grad((m(x)[0] ** 2).sum(), x, create_graph=True)
    (gt,) = torch.autograd.grad((tm(xt)[0] ** 2).sum(), xt, create_graph=True)
    close(g, gt)
    (g ** 2).sum().backward()
    (gt ** 2).sum().backward()
    close(x.grad, xt.grad, what="second derivative wrt the input")
    for name, tparam in tm.named_parameters():
        close(m.get_parameter(name).grad, tparam.grad, what=f"second derivative, {name}")


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_layer_runs_the_recurrence_ops(device, cls):
    """The LSTM's and the GRU's loops are two ops each (_lstm_sequence / _gru_sequence
    forward, their _backward), not a dozen ops per step: on the CPU their NumPy kernels,
    elsewhere their Composites."""
    from opinfo.core import available_devices, record_calls
    if device not in available_devices():
        pytest.skip("no cuda backend")
    m = getattr(tp.nn, cls)(3, 4).to(device)
    x = tp.tensor(random(5, 2, 3), device=device, requires_grad=True)
    with record_calls() as called:
        out, state = m(x)
        (out.sum() + (state[1] if cls == "LSTM" else state).sum()).backward()
    name = f"_{cls.lower()}_sequence"
    assert {name, name + "_backward"} <= called
    per_step = {"sigmoid", "tanh", "addcmul"}
    if device == "cpu":
        assert not per_step & called, sorted(called)
    else:
        assert per_step <= called, sorted(called)


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_packed_input_still_runs_per_step(cls):
    """A PackedSequence's batch changes from step to step: it takes the per-step path,
    not the fused ops, and still matches torch."""
    from opinfo.core import record_calls
    tm, m = make_pair(cls, 3, 4)
    x = random(4, 2, 3)
    packed = tp.nn.utils.rnn.pack_padded_sequence(tp.tensor(x), [4, 2])
    t_packed = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x), [4, 2])
    with record_calls() as called:
        out = m(packed)[0]
    assert f"_{cls.lower()}_sequence" not in called
    close(out.data, tm(t_packed)[0].data)


@pytest.mark.parametrize("op,shapes", [
    ("_lstm_sequence", [(2, 1, 8), (1, 2), (1, 2), (8, 2)]),
    ("_gru_sequence", [(2, 1, 6), (1, 2), (6, 2), (6,)])])
def test_sequence_op_has_no_derivative_of_its_own(op, shapes):
    """Called directly, the fused recurrence op says where its gradient lives instead of
    returning a wrong one."""
    rng = np.random.default_rng(1)
    args = [tp.tensor(rng.standard_normal(shape), requires_grad=True) for shape in shapes]
    out = getattr(tp, op)(*args)[0]
    with pytest.raises(NotImplementedError, match="differentiate nn."):
        out.sum().backward()


def test_empty_sequence_is_rejected():
    with pytest.raises(ShapeError, match="expected a non-empty sequence and batch"):
        tp.nn.LSTM(3, 4)(tp.zeros(0, 2, 3))
