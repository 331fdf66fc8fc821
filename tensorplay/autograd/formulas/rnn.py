"""Tangent (forward-mode) helper of the fused LSTM recurrence, _lstm_sequence, written with
TensorPlay ops: nn.LSTM's autograd Function (LSTMSequence.jvp) and the op's own tangent
formula (derivatives.yaml) both call it.
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F


def _zeros_if_none(t, like):
    return _creation.zeros_like(like) if t is None else t


def lstm_sequence_jvp(gi, h0, c0, w_hh, output, gi_t, h0_t, c0_t, w_hh_t):
    """(output, h_n, c_n)'s tangents: the recurrence's steps differentiated one by one,
    gates [i | f | g | o] = gi[t] + h W_hh^T, c' = f c + i g, h' = o tanh(c'):

        d gates = d gi[t] + dh W_hh^T + h dW_hh^T
        di = i (1 - i) d gates_i (f, o alike),  dg = (1 - g^2) d gates_g
        dc' = df c + f dc + di g + i dg,         dh' = do tanh(c') + o (1 - tanh(c')^2) dc'

    The primal states are recomputed from the inputs (the forward kept only the output
    and, in its workspace, its own layout of the gates); h at step t is output[t - 1]."""
    gi_t, h0_t, c0_t, w_hh_t = (_zeros_if_none(t, p) for t, p in
                                ((gi_t, gi), (h0_t, h0), (c0_t, c0), (w_hh_t, w_hh)))
    hidden = h0.shape[-1]
    h, c, dh, dc = h0, c0, h0_t, c0_t
    w_t, dw_t = w_hh.t(), w_hh_t.t()
    douts = []
    for step in range(gi.shape[0]):
        gates = F.addmm(gi[step], h, w_t)
        dgates = gi_t[step] + dh.mm(w_t) + h.mm(dw_t)
        s = F.sigmoid(gates)
        ds = s * (1 - s) * dgates
        i, f, _, o = s.chunk(4, 1)
        di, df, _, do = ds.chunk(4, 1)
        g = F.tanh(gates.narrow(1, 2 * hidden, hidden))
        dg = (1 - g * g) * dgates.narrow(1, 2 * hidden, hidden)
        c_next = f * c + i * g
        dc = df * c + f * dc + di * g + i * dg
        tc = F.tanh(c_next)
        dh = do * tc + o * (1 - tc * tc) * dc
        c = c_next
        h = output[step]
        douts.append(dh)
    return F.stack(douts, 0), dh, dc
