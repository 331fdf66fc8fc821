"""The LSTM recurrence ops composed from TensorPlay ops: what every backend without a
kernel of its own runs (the `cuda` device; the CPU has the NumPy loop of
cpu_kernels/rnn.py). Same arithmetic and the same flat workspace, one op at a time:

    workspace = [ gates (L, N, 4H) | cells (L, N, H) | tanh(cells) (L, N, H) ], flattened

These run below autograd (the ops' derivatives are nn.LSTM's autograd Function), so
nothing here is recorded.
"""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.meta import rnn as rules


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
