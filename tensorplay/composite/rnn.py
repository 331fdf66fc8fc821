"""The LSTM and GRU recurrence ops composed from TensorPlay ops: what every backend
without a kernel of its own runs (the `cuda` device; the CPU has the NumPy loops of
cpu_kernels/rnn.py). Same arithmetic and the same workspaces, one op at a time:

    LSTM: workspace = [ gates (L, N, 4H) | cells (L, N, H) | tanh(cells) (L, N, H) ], flat
    GRU:  workspace (L, N, 4H), per step [ r | z | gh_n | n ]

These run below autograd (the ops' derivatives are nn.LSTM's and nn.GRU's autograd
Functions), so nothing here is recorded. Below them, the torch-level functions
(torch.lstm, torch.gru, torch.rnn_tanh, the cells): ordinary Composites, recorded op by op.
"""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape
from tensorplay.meta import rnn as rules
from tensorplay.nn.modules._rnn_cells import gru_step, lstm_step, rnn_relu_step, rnn_tanh_step


def lstm_sequence(gi, h0, c0, w_hh):
    """(output, h_n, c_n, workspace); see cpu_kernels/rnn.py for the recurrence."""
    rules.lstm_sequence("_lstm_sequence", (gi, h0, c0, w_hh))
    hidden = h0.shape[-1]
    w_hh_t = w_hh.t()
    h, c = h0, c0
    outs, gate_steps, cells = [], [], []
    for gi_t in gi.unbind(0):
        gates = F.addmm(gi_t, h, w_hh_t)
        sig = F.sigmoid(gates)
        i = sig.narrow(1, 0, hidden)
        f = sig.narrow(1, hidden, hidden)
        o = sig.narrow(1, 3 * hidden, hidden)
        g = F.tanh(gates.narrow(1, 2 * hidden, hidden))
        c = F.addcmul(f * c, i, g)
        h = o * F.tanh(c)
        outs.append(h)
        gate_steps.append(F.cat([i, f, g, o], 1))
        cells.append(c)
    cells = F.stack(cells, 0)
    workspace = F.cat([F.stack(gate_steps, 0).reshape(-1), cells.reshape(-1),
                       F.tanh(cells).reshape(-1)], 0)
    return F.stack(outs, 0), h, c, workspace


def lstm_sequence_backward(grad_output, grad_hn, grad_cn, output, h0, c0, w_hh, workspace):
    """(d_gi, d_h0, d_c0, d_w_hh); see cpu_kernels/rnn.py for the formulas."""
    rules.lstm_sequence_backward(
        "_lstm_sequence_backward",
        (grad_output, grad_hn, grad_cn, output, h0, c0, w_hh, workspace))
    steps, batch, hidden = output.shape
    block = steps * batch * hidden
    i, f, g, o = workspace.narrow(0, 0, 4 * block).reshape(steps, batch, 4 * hidden).chunk(4, 2)
    cells = workspace.narrow(0, 4 * block, block).reshape(steps, batch, hidden)
    tanh_c = workspace.narrow(0, 5 * block, block).reshape(steps, batch, hidden)
    c_prev = F.cat([c0.unsqueeze(0), cells.narrow(0, 0, steps - 1)], 0)
    h_prev = F.cat([h0.unsqueeze(0), output.narrow(0, 0, steps - 1)], 0)
    factors = F.cat([g * i * (1 - i), c_prev * f * (1 - f), i * (1 - g * g),
                     tanh_c * o * (1 - o)], 2).unbind(0)
    dc_from_h = (o * (1 - tanh_c * tanh_c)).unbind(0)
    forget = f.unbind(0)
    d_out = grad_output.unbind(0)

    dgates = [None] * steps
    dh, dc = d_out[-1] + grad_hn, grad_cn
    for t in range(steps - 1, -1, -1):
        if t < steps - 1:
            dh = F.addmm(d_out[t], dgates[t + 1], w_hh)
            dc = dc * forget[t + 1]
        dc = F.addcmul(dc, dh, dc_from_h[t])
        dgates[t] = F.cat([dc, dc, dc, dh], 1) * factors[t]
    d_gi = F.stack(dgates, 0)
    flat = d_gi.reshape(steps * d_gi.shape[1], 4 * hidden)
    d_w_hh = flat.t().mm(h_prev.reshape(flat.shape[0], hidden))
    return d_gi, dgates[0].mm(w_hh), dc * forget[0], d_w_hh


def gru_sequence(gi, h0, w_hh, b_hh):
    """(output, h_n, workspace (L, N, 4H) [r | z | gh_n | n]); see cpu_kernels/rnn.py."""
    rules.gru_sequence("_gru_sequence", (gi, h0, w_hh, b_hh))
    hidden = h0.shape[-1]
    w_hh_t = w_hh.t()
    h = h0
    outs, work = [], []
    for gi_t in gi.unbind(0):
        gh = h.mm(w_hh_t) if b_hh is None else F.addmm(b_hh, h, w_hh_t)
        rz = F.sigmoid(gi_t.narrow(1, 0, 2 * hidden) + gh.narrow(1, 0, 2 * hidden))
        r, z = rz.chunk(2, 1)
        gh_n = gh.narrow(1, 2 * hidden, hidden)
        n = F.tanh(F.addcmul(gi_t.narrow(1, 2 * hidden, hidden), r, gh_n))
        h = F.addcmul(n, z, h - n)
        outs.append(h)
        work.append(F.cat([rz, gh_n, n], 1))
    return F.stack(outs, 0), h, F.stack(work, 0)


def gru_sequence_backward(grad_output, grad_hn, output, h0, w_hh, workspace):
    """(d_gi, d_h0, d_w_hh, d_b_hh); see cpu_kernels/rnn.py for the formulas."""
    rules.gru_sequence_backward(
        "_gru_sequence_backward", (grad_output, grad_hn, output, h0, w_hh, workspace))
    steps, batch, hidden = output.shape
    r, z, gh_n, n = workspace.chunk(4, 2)
    h_prev = F.cat([h0.unsqueeze(0), output.narrow(0, 0, steps - 1)], 0)
    n_factor = ((1 - z) * (1 - n * n)).unbind(0)
    z_factor = ((h_prev - n) * z * (1 - z)).unbind(0)
    r_factor = (gh_n * r * (1 - r)).unbind(0)
    r, z = r.unbind(0), z.unbind(0)
    d_out = grad_output.unbind(0)

    d_gi, d_gh = [None] * steps, [None] * steps
    dh = d_out[-1] + grad_hn
    for t in range(steps - 1, -1, -1):
        if t < steps - 1:
            dh = F.addmm(d_out[t], d_gh[t + 1], w_hh) + dh * z[t + 1]
        da_n = dh * n_factor[t]
        da_r, da_z = da_n * r_factor[t], dh * z_factor[t]
        d_gi[t] = F.cat([da_r, da_z, da_n], 1)
        d_gh[t] = F.cat([da_r, da_z, da_n * r[t]], 1)
    d_h0 = d_gh[0].mm(w_hh) + dh * z[0]
    flat = F.stack(d_gh, 0).reshape(steps * batch, 3 * hidden)
    d_w_hh = flat.t().mm(h_prev.reshape(steps * batch, hidden))
    return F.stack(d_gi, 0), d_h0, d_w_hh, flat.sum(0)


# ---- the torch-level recurrent functions (torch.lstm, torch.gru_cell, ...) ----------------
# What nn.LSTM / GRU / RNN and their cells compute, as functions of explicit weights:
# `params` lists, for each layer and then each direction, w_ih, w_hh, then b_ih, b_hh when
# has_biases, then w_hr for an LSTM with a projection; the steps are the layers' own
# (nn/modules/_rnn_cells.py).
_STEPS = {"rnn_tanh": rnn_tanh_step, "rnn_relu": rnn_relu_step}


def _projected(input, w_ih, b_ih, b_hh, mode):
    """x @ W_ih.T + b_ih (+ b_hh, except for the GRU, whose n gate needs it apart)."""
    if b_ih is not None and b_hh is not None and mode != "gru":
        b_ih = b_ih + b_hh
    return F.linear(input, w_ih, b_ih)


def _step(mode, gi, states, w_hh_t, b_hh, w_hr_t=None):
    if mode == "lstm":
        return lstm_step(gi, states[0], states[1], w_hh_t, w_hr_t)
    if mode == "gru":
        return (gru_step(gi, states[0], w_hh_t, b_hh),)
    return (_STEPS[mode](gi, states[0], w_hh_t),)


def _cell(mode, input, states, w_ih, w_hh, b_ih, b_hh):
    if input.dim() != 2 or any(s.dim() != 2 for s in states):
        raise ShapeError(f"{mode}_cell(): expected argument 'input' and the hidden states to "
                         f"be 2-D (batch, features), but got input of shape "
                         f"{fmt_shape(tuple(input.shape))}", op=f"{mode}_cell", arg="input")
    rules.check_cell_weights(f"{mode}_cell", mode, w_ih, w_hh)
    rules.check_bias_dtypes(f"{mode}_cell", w_ih, w_hh, b_ih, b_hh)
    _check_state_dtypes(f"{mode}_cell", input, states)
    gi = _projected(input, w_ih, b_ih, b_hh if mode != "gru" else None, mode)
    if mode != "gru" and b_ih is None and b_hh is not None:
        gi = gi + b_hh
    return _step(mode, gi, states, w_hh.t(), b_hh)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """(h', c') of one LSTM step from hx = (h, c)."""
    return _cell("lstm", input, list(hx), w_ih, w_hh, b_ih, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _cell("gru", input, [hx], w_ih, w_hh, b_ih, b_hh)[0]


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _cell("rnn_tanh", input, [hx], w_ih, w_hh, b_ih, b_hh)[0]


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _cell("rnn_relu", input, [hx], w_ih, w_hh, b_ih, b_hh)[0]


def _direction(mode, input, states, weights, has_biases, reverse):
    """One layer, one direction over the sequence input (L, N, in)."""
    w_ih, w_hh = weights[:2]
    b_ih, b_hh = weights[2:4] if has_biases else (None, None)
    w_hr = weights[-1] if len(weights) in (3, 5) else None
    steps = _projected(input, w_ih, b_ih, b_hh, mode).unbind(0)
    w_hh_t, w_hr_t = w_hh.t(), None if w_hr is None else w_hr.t()
    order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
    outs = [None] * len(steps)
    for t in order:
        states = _step(mode, steps[t], states, w_hh_t, b_hh, w_hr_t)
        outs[t] = states[0]
    return F.stack(outs, 0), states


def _check_state_dtypes(op, input, states):
    """hx (h, c for the LSTM) against the input's dtype: h must have it; c is promoted
    where PyTorch computes f * c + i * g with addmm's steps, refused where its oneDNN
    kernel runs (the sequence LSTM on a non-empty float32 input; never the cell)."""
    lstm = len(states) == 2
    onednn = lstm and not op.endswith("_cell") and rules.lstm_runs_onednn(input)
    names = ("hx[0]", "hx[1]") if lstm else ("hx",)
    for k, (name, state) in enumerate(zip(names, states)):
        rules.check_state_dtype(op, input, name, state, promoted=k == 1 and not onednn,
                                onednn=onednn)


def _sequence(mode, input, hx, params, has_biases, num_layers, dropout, train,
              bidirectional, batch_first):
    op = mode
    directions = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    stride, extra = divmod(len(params), num_layers * directions)
    if extra or stride not in ((per, per + 1) if mode == "lstm" else (per,)):
        raise ArgumentError(f"{op}(): argument 'params' must hold {per} tensors (w_ih, w_hh"
                            f"{', b_ih, b_hh' if has_biases else ''}) per layer and direction"
                            f"{' (one more with a projection)' if mode == 'lstm' else ''}, "
                            f"{num_layers * directions} groups, but got {len(params)}", op=op,
                            arg="params")
    if input.dim() != 3:
        raise ShapeError(f"{op}(): argument 'input' must be 3-D (seq, batch, feature), but "
                         f"got shape {fmt_shape(tuple(input.shape))}", op=op, arg="input")
    if has_biases and not (mode == "lstm" and rules.lstm_runs_onednn(input)):
        for row in range(0, len(params), stride):
            rules.check_bias_dtypes(op, *params[row:row + 4])
    x = input.transpose(0, 1) if batch_first else input
    for name, state in zip(("hx", "cx"), hx):
        # (PyTorch's kernels add the state to the batch's gates: one of another batch is
        # refused there, where broadcasting would silently take a batch of 1 for any)
        if state.dim() != 3 or state.shape[0] != num_layers * directions \
                or state.shape[1] != x.shape[1]:
            raise ShapeError(f"{op}(): argument '{name}' must have shape (num_layers * "
                             f"directions = {num_layers * directions}, batch = {x.shape[1]}, "
                             f"hidden), but got {fmt_shape(tuple(state.shape))}", op=op,
                             arg=name)
    _check_state_dtypes(op, input, hx)
    finals = [[] for _ in hx]
    for layer in range(num_layers):
        outputs = []
        for d in range(directions):
            row = layer * directions + d
            out, last = _direction(mode, x, [s[row] for s in hx],
                                   params[row * stride:(row + 1) * stride], has_biases, d == 1)
            outputs.append(out)
            for kind, value in zip(finals, last):
                kind.append(value)
        x = outputs[0] if directions == 1 else F.cat(outputs, 2)
        if dropout > 0 and train and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
    output = x.transpose(0, 1) if batch_first else x
    return (output,) + tuple(F.stack(kind, 0) for kind in finals)


def lstm_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
               batch_first):
    """(output, h_n, c_n) of a multi-layer LSTM; hx = (h_0, c_0)."""
    return _sequence("lstm", input, list(hx), params, has_biases, num_layers, dropout, train,
                     bidirectional, batch_first)


def gru_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
              batch_first):
    return _sequence("gru", input, [hx], params, has_biases, num_layers, dropout, train,
                     bidirectional, batch_first)


def rnn_tanh_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                   batch_first):
    return _sequence("rnn_tanh", input, [hx], params, has_biases, num_layers, dropout, train,
                     bidirectional, batch_first)


def rnn_relu_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                   batch_first):
    return _sequence("rnn_relu", input, [hx], params, has_biases, num_layers, dropout, train,
                     bidirectional, batch_first)
