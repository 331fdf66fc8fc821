"""Tangent (forward-mode) helpers of the fused LSTM and GRU recurrences (_lstm_sequence,
_gru_sequence), written with TensorPlay ops: nn.LSTM's and nn.GRU's autograd Functions
(LSTMSequence.jvp, GRUSequence.jvp) and the ops' own tangent formulas (derivatives.yaml)
call them.
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


def gru_sequence_jvp(gi, h0, w_hh, b_hh, output, gi_t, h0_t, w_hh_t, b_hh_t):
    """(output, h_n)'s tangents of the fused GRU recurrence, _gru_sequence, step by step:
    gh = h W_hh^T + b_hh, [r | z] = sigmoid(gi[t][r, z] + gh[r, z]),
    n = tanh(gi[t][n] + r gh[n]), h' = n + z (h - n):

        d gh = dh W_hh^T + h dW_hh^T + db_hh
        dr = r (1 - r) (d gi_r + d gh_r)   (dz alike)
        dn = (1 - n^2) (d gi_n + dr gh_n + r d gh_n)
        dh' = dn + dz (h - n) + z (dh - dn)

    b_hh (and any tangent) may be None; h at step t is output[t - 1]."""
    gi_t, h0_t, w_hh_t = (_zeros_if_none(t, p) for t, p in
                          ((gi_t, gi), (h0_t, h0), (w_hh_t, w_hh)))
    hidden = h0.shape[-1]
    h, dh = h0, h0_t
    w_t, dw_t = w_hh.t(), w_hh_t.t()
    douts = []
    for step in range(gi.shape[0]):
        gh = h.mm(w_t) if b_hh is None else F.addmm(b_hh, h, w_t)
        dgh = dh.mm(w_t) + h.mm(dw_t)
        if b_hh_t is not None:
            dgh = dgh + b_hh_t
        g, dg = gi[step], gi_t[step]
        rz = F.sigmoid(g.narrow(1, 0, 2 * hidden) + gh.narrow(1, 0, 2 * hidden))
        drz = rz * (1 - rz) * (dg.narrow(1, 0, 2 * hidden) + dgh.narrow(1, 0, 2 * hidden))
        r, z = rz.chunk(2, 1)
        dr, dz = drz.chunk(2, 1)
        gh_n, dgh_n = gh.narrow(1, 2 * hidden, hidden), dgh.narrow(1, 2 * hidden, hidden)
        n = F.tanh(g.narrow(1, 2 * hidden, hidden) + r * gh_n)
        dn = (1 - n * n) * (dg.narrow(1, 2 * hidden, hidden) + dr * gh_n + r * dgh_n)
        dh = dn + dz * (h - n) + z * (dh - dn)
        h = output[step]
        douts.append(dh)
    return F.stack(douts, 0), dh
