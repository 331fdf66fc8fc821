"""Database entries: the LSTM and GRU recurrence ops behind nn.LSTM and nn.GRU
(_lstm_sequence, _gru_sequence and their backwards), and the torch-level recurrent
functions (torch.lstm, torch.gru_cell, ...). PyTorch has no twin of the recurrence ops, so
their references are the recurrence written in torch ops (forward) and torch's autograd
through it (backward). Their gradients are tested through nn.LSTM and nn.GRU in
tests/test_nn_rnn.py (the ops have no derivative of their own).
"""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.core import ErrorInput, OpInfo, SampleInput, make_tensor, rng_for

E = ErrorInput
S = SampleInput
DTYPES = (tp.float32, tp.float64)
TOL = {tp.float32: (1e-5, 1e-5)}

# (steps, batch, hidden, layout of gi)
SHAPES = ((3, 2, 4, "contiguous"), (1, 3, 2, "strided"), (4, 1, 3, "transposed"))


def _torch_lstm(gi, h0, c0, w_hh):
    """(output, h_n, c_n, workspace) in torch ops; the workspace is flat:
    [gates (L, N, 4H) | cells (L, N, H) | tanh(cells) (L, N, H)]."""
    h, c = h0, c0
    outs, gates, cells = [], [], []
    for gi_t in gi.unbind(0):
        i, f, g, o = (gi_t + h @ w_hh.T).chunk(4, 1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c = f * c + i * g
        h = o * c.tanh()
        outs.append(h)
        gates.append(torch.cat([i, f, g, o], 1))
        cells.append(c)
    cells = torch.stack(cells)
    workspace = torch.cat([torch.stack(gates).reshape(-1), cells.reshape(-1),
                           cells.tanh().reshape(-1)])
    return torch.stack(outs), h, c, workspace


def _ref_lstm_sequence_backward(grad_output, grad_hn, grad_cn, output, h0, c0, w_hh,
                                workspace):
    """Torch's autograd through _torch_lstm, its input gi recovered from the workspace
    (pre-activation gates = logit / atanh of the saved activations), in float64."""
    steps, batch, hidden = output.shape
    dtype = output.dtype
    gates = workspace[:4 * steps * batch * hidden].double().reshape(steps, batch, 4 * hidden)
    i, f, g, o = gates.chunk(4, 2)
    pre = torch.cat([i.logit(), f.logit(), g.atanh(), o.logit()], 2)
    h_prev = torch.cat([h0.double()[None], output.double()[:-1]])
    gi = pre - h_prev @ w_hh.double().T
    leaves = [x.double().detach().requires_grad_() for x in (gi, h0, c0, w_hh)]
    out, h_n, c_n, _ = _torch_lstm(*leaves)
    grads = torch.autograd.grad([out, h_n, c_n], leaves,
                                [grad_output.double(), grad_hn.double(), grad_cn.double()])
    return tuple(x.to(dtype) for x in grads)


def _from_torch(t, dtype, device):
    return tp.tensor(t.detach().numpy(), dtype=dtype, device=device)


def _inputs(op, device, dtype, steps, batch, hidden, layout):
    rng = rng_for(op.full_name, dtype, steps, batch, hidden)
    gi = make_tensor((steps, batch, 4 * hidden), dtype, device, rng=rng, layout=layout)
    h0, c0 = (make_tensor((batch, hidden), dtype, device, rng=rng, low=-1, high=1)
              for _ in range(2))
    w_hh = make_tensor((4 * hidden, hidden), dtype, device, rng=rng, low=-0.5, high=0.5)
    return gi, h0, c0, w_hh


def _lstm_sequence_samples(op, device, dtype, requires_grad):
    for steps, batch, hidden, layout in SHAPES:
        gi, h0, c0, w_hh = _inputs(op, device, dtype, steps, batch, hidden, layout)
        yield S(gi, (h0, c0, w_hh), name=f"L={steps} N={batch} H={hidden} gi {layout}")


def _lstm_sequence_backward_samples(op, device, dtype, requires_grad):
    for steps, batch, hidden, layout in SHAPES:
        gi, h0, c0, w_hh = _inputs(op, device, dtype, steps, batch, hidden, layout)
        output, _, _, workspace = _torch_lstm(*(torch.from_numpy(x.cpu().numpy().copy())
                                                 for x in (gi, h0, c0, w_hh)))
        rng = rng_for(op.full_name, dtype, "grads", steps)
        grads = [make_tensor(shape, dtype, device, rng=rng)
                 for shape in ((steps, batch, hidden), (batch, hidden), (batch, hidden))]
        yield S(grads[0], (grads[1], grads[2], _from_torch(output, dtype, device), h0, c0,
                           w_hh, _from_torch(workspace, dtype, device)),
                name=f"L={steps} N={batch} H={hidden}")


def errors_lstm_sequence(op, device):
    rng = rng_for("lstm errors")
    gi = make_tensor((2, 3, 8), tp.float32, device, rng=rng)
    h = make_tensor((3, 2), tp.float32, device, rng=rng)
    w = make_tensor((8, 2), tp.float32, device, rng=rng)
    yield E(S(gi, (h, h, make_tensor((8, 3), tp.float32, device, rng=rng))), ShapeError,
            r"_lstm_sequence\(\): argument 'w_hh' must have shape \[8, 2\]", arg="w_hh",
            torch_raises=False)
    yield E(S(make_tensor((2, 3, 6), tp.float32, device, rng=rng), (h, h, w)), ShapeError,
            r"_lstm_sequence\(\): argument 'gi' must have shape \[2, 3, 8\]", arg="gi",
            torch_raises=False)
    yield E(S(gi, (h, h.double(), w)), DTypeError,
            r"_lstm_sequence\(\): argument 'c0' \(float64\) must have the dtype of 'gi'",
            arg="c0", torch_raises=False)


def errors_lstm_sequence_backward(op, device):
    rng = rng_for("lstm backward errors")
    out = make_tensor((2, 3, 2), tp.float32, device, rng=rng)
    h = make_tensor((3, 2), tp.float32, device, rng=rng)
    w = make_tensor((8, 2), tp.float32, device, rng=rng)
    work = make_tensor((6 * 2 * 3 * 2 - 1,), tp.float32, device, rng=rng)
    yield E(S(out, (h, h, out, h, h, w, work)), ShapeError,
            r"_lstm_sequence_backward\(\): argument 'workspace' must have shape \[72\]",
            arg="workspace", torch_raises=False)




# ---- the GRU recurrence: gi (L, N, 3H), workspace (L, N, 4H) [r | z | gh_n | n] -----------
def _torch_gru(gi, h0, w_hh, b_hh):
    """(output, h_n, workspace) in torch ops. b_hh may also be (L, N, 3H), one bias per step
    and row (how the backward's reference rebuilds gh_n from the workspace)."""
    h = h0
    outs, work = [], []
    for t, gi_t in enumerate(gi.unbind(0)):
        gh = h @ w_hh.T
        if b_hh is not None:
            gh = gh + (b_hh[t] if b_hh.dim() == 3 else b_hh)
        (gi_r, gi_z, gi_n), (gh_r, gh_z, gh_n) = gi_t.chunk(3, 1), gh.chunk(3, 1)
        r, z = (gi_r + gh_r).sigmoid(), (gi_z + gh_z).sigmoid()
        n = (gi_n + r * gh_n).tanh()
        h = n + z * (h - n)
        outs.append(h)
        work.append(torch.cat([r, z, gh_n, n], 1))
    return torch.stack(outs), h, torch.stack(work)


def _ref_gru_sequence_backward(grad_output, grad_hn, output, h0, w_hh, workspace):
    """Torch's autograd through _torch_gru in float64, its inputs rebuilt from the
    workspace: gi's r, z parts from logit(r, z) - h_prev W_hh^T, gi's n part from
    atanh(n) - r gh_n, and a bias per step and row whose n part makes gh_n; d_b_hh sums
    that bias's gradient."""
    steps, batch, hidden = output.shape
    dtype = output.dtype
    r, z, gh_n, n = workspace.double().chunk(4, 2)
    h_prev = torch.cat([h0.double()[None], output.double()[:-1]])
    gh = h_prev @ w_hh.double().T
    gi = torch.cat([r.logit() - gh[..., :hidden], z.logit() - gh[..., hidden:2 * hidden],
                    n.atanh() - r * gh_n], 2)
    bias = torch.cat([torch.zeros_like(r), torch.zeros_like(z), gh_n - gh[..., 2 * hidden:]],
                     2)
    leaves = [x.double().detach().requires_grad_() for x in (gi, h0, w_hh, bias)]
    out, h_n, _ = _torch_gru(*leaves)
    d_gi, d_h0, d_w_hh, d_bias = torch.autograd.grad(
        [out, h_n], leaves, [grad_output.double(), grad_hn.double()])
    return tuple(x.to(dtype) for x in (d_gi, d_h0, d_w_hh, d_bias.sum((0, 1))))


def _gru_inputs(op, device, dtype, steps, batch, hidden, layout):
    rng = rng_for(op.full_name, dtype, steps, batch, hidden)
    gi = make_tensor((steps, batch, 3 * hidden), dtype, device, rng=rng, layout=layout)
    h0 = make_tensor((batch, hidden), dtype, device, rng=rng, low=-1, high=1)
    w_hh = make_tensor((3 * hidden, hidden), dtype, device, rng=rng, low=-0.5, high=0.5)
    b_hh = make_tensor((3 * hidden,), dtype, device, rng=rng, low=-0.5, high=0.5)
    return gi, h0, w_hh, b_hh


def _gru_sequence_samples(op, device, dtype, requires_grad):
    for k, (steps, batch, hidden, layout) in enumerate(SHAPES):
        gi, h0, w_hh, b_hh = _gru_inputs(op, device, dtype, steps, batch, hidden, layout)
        bias = k != 1      # one sample without b_hh
        yield S(gi, (h0, w_hh, b_hh if bias else None),
                name=f"L={steps} N={batch} H={hidden} gi {layout} b_hh={bias}")


def _gru_sequence_backward_samples(op, device, dtype, requires_grad):
    for steps, batch, hidden, layout in SHAPES:
        inputs = _gru_inputs(op, device, dtype, steps, batch, hidden, layout)
        output, _, workspace = _torch_gru(*(torch.from_numpy(x.cpu().numpy().copy())
                                            for x in inputs))
        rng = rng_for(op.full_name, dtype, "grads", steps)
        grads = [make_tensor(shape, dtype, device, rng=rng)
                 for shape in ((steps, batch, hidden), (batch, hidden))]
        yield S(grads[0], (grads[1], _from_torch(output, dtype, device), inputs[1], inputs[2],
                           _from_torch(workspace, dtype, device)),
                name=f"L={steps} N={batch} H={hidden}")


def errors_gru_sequence(op, device):
    rng = rng_for("gru errors")
    gi = make_tensor((2, 3, 6), tp.float32, device, rng=rng)
    h = make_tensor((3, 2), tp.float32, device, rng=rng)
    w = make_tensor((6, 2), tp.float32, device, rng=rng)
    b = make_tensor((6,), tp.float32, device, rng=rng)
    yield E(S(gi, (h, make_tensor((8, 2), tp.float32, device, rng=rng), b)), ShapeError,
            r"_gru_sequence\(\): argument 'w_hh' must have shape \[6, 2\]", arg="w_hh",
            torch_raises=False)
    yield E(S(make_tensor((2, 3, 8), tp.float32, device, rng=rng), (h, w, b)), ShapeError,
            r"_gru_sequence\(\): argument 'gi' must have shape \[2, 3, 6\]", arg="gi",
            torch_raises=False)
    yield E(S(gi, (h, w, make_tensor((4,), tp.float32, device, rng=rng))), ShapeError,
            r"_gru_sequence\(\): argument 'b_hh' must have shape \[6\]", arg="b_hh",
            torch_raises=False)
    yield E(S(gi, (h, w, b.double())), DTypeError,
            r"_gru_sequence\(\): argument 'b_hh' \(float64\) must have the dtype of 'gi'",
            arg="b_hh", torch_raises=False)


def errors_gru_sequence_backward(op, device):
    rng = rng_for("gru backward errors")
    out = make_tensor((2, 3, 2), tp.float32, device, rng=rng)
    h = make_tensor((3, 2), tp.float32, device, rng=rng)
    w = make_tensor((6, 2), tp.float32, device, rng=rng)
    work = make_tensor((2, 3, 6), tp.float32, device, rng=rng)
    yield E(S(out, (h, out, h, w, work)), ShapeError,
            r"_gru_sequence_backward\(\): argument 'workspace' must have shape \[2, 3, 8\]",
            arg="workspace", torch_raises=False)


# ---- torch.lstm / gru / rnn_tanh / rnn_relu and their cells -----------------------------
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
# (steps, batch, input size, hidden, layers, bidirectional, has_biases, batch_first)
SEQ_CASES = ((2, 2, 2, 2, 1, False, True, False), (2, 1, 2, 1, 2, True, False, True))


def _params(rng, dtype, device, grad, gates, input_size, hidden, layers, directions, bias):
    params = []
    for layer in range(layers):
        for _ in range(directions):
            width = input_size if layer == 0 else directions * hidden
            shapes = [(gates * hidden, width), (gates * hidden, hidden)]
            shapes += [(gates * hidden,)] * 2 if bias else []
            params += [make_tensor(s, dtype, device, rng=rng, low=-0.7, high=0.7,
                                   requires_grad=grad) for s in shapes]
    return params


def _sequence_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad
    for T, N, I, H, layers, bidir, bias, batch_first in SEQ_CASES:
        d = 2 if bidir else 1
        x = make_tensor((N, T, I) if batch_first else (T, N, I), dtype, device, rng=rng,
                        requires_grad=grad, layout="transposed" if batch_first else
                        "contiguous")
        states = [make_tensor((layers * d, N, H), dtype, device, rng=rng, requires_grad=grad)
                  for _ in range(2 if op.name == "lstm" else 1)]
        params = _params(rng, dtype, device, grad, GATES[op.name], I, H, layers, d, bias)
        hx = states if op.name == "lstm" else states[0]
        yield S(x, (hx, params, bias, layers, 0.0, False, bidir, batch_first),
                name=f"T={T} N={N} layers={layers} bidirectional={bidir} bias={bias} "
                     f"batch_first={batch_first}")


def _cell_samples(op, device, dtype, requires_grad):
    mode = op.name[:-len("_cell")]
    rng = rng_for(op.full_name, dtype)
    for N, I, H, bias in ((2, 3, 2, True), (1, 2, 3, False), (3, 2, 2, "ih")):
        x = make_tensor((N, I), dtype, device, rng=rng, requires_grad=requires_grad)
        states = [make_tensor((N, H), dtype, device, rng=rng, requires_grad=requires_grad)
                  for _ in range(2 if mode == "lstm" else 1)]
        w = _params(rng, dtype, device, requires_grad, GATES[mode], I, H, 1, 1, True)
        b_hh = w[3] if bias is True else None
        b_ih = w[2] if bias else None
        yield S(x, (states if mode == "lstm" else states[0], w[0], w[1], b_ih, b_hh),
                name=f"N={N} I={I} H={H} biases={bias}")


def errors_sequence(op, device):
    x = make_tensor((2, 1, 2), tp.float32, device, rng=rng_for("rnn errors"))
    h = make_tensor((1, 1, 2), tp.float32, device, rng=rng_for("rnn errors h"))
    hx = [h, h] if op.name == "lstm" else h
    w = _params(rng_for("rnn errors w"), tp.float32, device, False, GATES[op.name], 2, 2, 1, 1,
                True)
    yield E(S(x, (hx, w[:3], True, 1, 0.0, False, False, False)), ArgumentError,
            rf"{op.name}\(\): argument 'params' must hold 4 tensors", arg="params",
            torch_raises=False, meta=False)
    # (PyTorch's rnn_tanh / rnn_relu run a 2-D input through without a word.)
    yield E(S(x[0], (hx, w, True, 1, 0.0, False, False, False)), ShapeError,
            rf"{op.name}\(\): argument 'input' must be 3-D", arg="input", meta=False,
            torch_raises=op.name in ("lstm", "gru"))


RECURRENT = [OpInfo(name, overloads=(f"{name}.input",), dtypes=DTYPES, tolerances=TOL,
                    sample_inputs_func=_sequence_samples, error_inputs_func=errors_sequence)
             for name in GATES] + \
            [OpInfo(f"{name}_cell", overloads=(f"{name}_cell",), dtypes=DTYPES, tolerances=TOL,
                    sample_inputs_func=_cell_samples)
             for name in GATES]

op_db = [
    OpInfo("_lstm_sequence", ref=_torch_lstm, overloads=("_lstm_sequence",), dtypes=DTYPES,
           supports_autograd=False, sample_inputs_func=_lstm_sequence_samples,
           error_inputs_func=errors_lstm_sequence, tolerances=TOL),
    OpInfo("_lstm_sequence_backward", ref=_ref_lstm_sequence_backward,
           overloads=("_lstm_sequence_backward",), dtypes=DTYPES, supports_autograd=False,
           sample_inputs_func=_lstm_sequence_backward_samples,
           error_inputs_func=errors_lstm_sequence_backward, tolerances=TOL),
    OpInfo("_gru_sequence", ref=_torch_gru, overloads=("_gru_sequence",), dtypes=DTYPES,
           supports_autograd=False, sample_inputs_func=_gru_sequence_samples,
           error_inputs_func=errors_gru_sequence, tolerances=TOL),
    OpInfo("_gru_sequence_backward", ref=_ref_gru_sequence_backward,
           overloads=("_gru_sequence_backward",), dtypes=DTYPES, supports_autograd=False,
           sample_inputs_func=_gru_sequence_backward_samples,
           error_inputs_func=errors_gru_sequence_backward, tolerances=TOL),
] + RECURRENT
