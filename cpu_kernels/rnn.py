"""The LSTM recurrence over a whole sequence, forward and backward, as two NumPy kernels.

Run op by op, one LSTM step is about a dozen TensorPlay calls, each paying the
dispatcher's few microseconds, which at small sizes cost more than the arithmetic.
Here the time loop runs on arrays: one matmul into a preallocated buffer and a handful
of in-place ufuncs per step. nn.LSTM reaches these through
tensorplay/nn/modules/_rnn_fused.py (LSTMSequence).

The workspace the forward leaves for the backward is one flat buffer (cuDNN's "reserve
space") of three regions, each contiguous so the per-step ufuncs run on dense rows:

    gates (L, N, 4H): [ i | f | g | o ]      i, f, o = sigmoid(.), g = tanh(.)
    cells (L, N, H):  c_t
    tanh  (L, N, H):  tanh(c_t)

NOTE: sigmoid(x) = (1 + tanh(x / 2)) / 2, so one tanh over all four gates, scaled
per gate, gives the three sigmoids and the tanh in three calls instead of five.
"""
from __future__ import annotations

import numpy as np

from cpu_kernels._common import accumulate_dtype, out
from tensorplay.kernel_support.ops import shape_rule


def _gate_scale(hidden, np_dtype):
    """(scale, shift) per gate column: 1/2 and 1/2 for the sigmoid gates i, f, o; 1 and 0
    for g, the tanh gate."""
    scale = np.full(4 * hidden, 0.5, np_dtype)
    scale[2 * hidden:3 * hidden] = 1.0
    shift = np.full(4 * hidden, 0.5, np_dtype)
    shift[2 * hidden:3 * hidden] = 0.0
    return scale, shift


def split_workspace(work, steps, batch, hidden):
    """The (gates, cells, tanh of cells) regions of a flat workspace, as views."""
    block = steps * batch * hidden
    gates = work[:4 * block].reshape(steps, batch, 4 * hidden)
    cells = work[4 * block:5 * block].reshape(steps, batch, hidden)
    return gates, cells, work[5 * block:].reshape(steps, batch, hidden)


def _arrays(dtype, *tensors):
    np_dtype = accumulate_dtype(dtype)
    return [t._impl.array().astype(np_dtype, copy=False) for t in tensors]


def lstm_sequence(gi, h0, c0, w_hh):
    """(output, h_n, c_n, workspace) of the LSTM over gi (L, N, 4H), rows [i | f | g | o]
    holding x_t @ W_ih.T + b_ih + b_hh; h0, c0 (N, H); w_hh (4H, H).

        for t in 0 .. L-1:
            gates = gi[t] + h @ W_hh.T;   i, f, o = sigmoid(.);  g = tanh(.)
            c = f * c + i * g;            h = o * tanh(c);       output[t] = h
    """
    spec = shape_rule("rnn.lstm_sequence")("_lstm_sequence", (gi, h0, c0, w_hh))
    dtype = spec[0].dtype
    a_gi, h, c, w = _arrays(dtype, gi, h0, c0, w_hh)
    steps, batch, hidden = a_gi.shape[0], h.shape[0], h.shape[1]
    scale, shift = _gate_scale(hidden, a_gi.dtype)
    # The 1/2 of the sigmoid gates folded into the inputs and the weight once; the weight
    # made contiguous (BLAS is twice as fast on it at these sizes).
    gi_scaled = a_gi * scale
    w_scaled = np.ascontiguousarray(w.T * scale)
    work = np.empty(6 * steps * batch * hidden, a_gi.dtype)
    all_gates, cells, tanh_cells = split_workspace(work, steps, batch, hidden)
    output = np.empty((steps, batch, hidden), a_gi.dtype)
    product = np.empty((batch, hidden), a_gi.dtype)
    for t in range(steps):
        gates = all_gates[t]
        np.matmul(h, w_scaled, out=gates)
        gates += gi_scaled[t]
        np.tanh(gates, out=gates)
        gates *= scale
        gates += shift
        i, f = gates[:, :hidden], gates[:, hidden:2 * hidden]
        g, o = gates[:, 2 * hidden:3 * hidden], gates[:, 3 * hidden:]
        np.multiply(f, c, out=cells[t])
        np.multiply(i, g, out=product)
        cells[t] += product
        np.tanh(cells[t], out=tanh_cells[t])
        np.multiply(o, tanh_cells[t], out=output[t])
        h, c = output[t], cells[t]
    return (out(output, dtype), out(h.copy(), dtype), out(c.copy(), dtype),
            out(work, spec[3].dtype))


def lstm_sequence_backward(grad_output, grad_hn, grad_cn, output, h0, c0, w_hh, workspace):
    """(d_gi, d_h0, d_c0, d_w_hh) of _lstm_sequence, from its output and workspace.

        dgates_t = [dc, dc, dc, dh] * M_t,  M_t = [g i(1-i), c_{t-1} f(1-f), i(1-g^2),
                                                   tanh(c_t) o(1-o)]
        for t in L-1 .. 0:
            dh = grad_output[t] + dgates_{t+1} @ W_hh             (+ grad_hn at t = L-1)
            dc = dc_{t+1} * f_{t+1} + dh * o_t (1 - tanh(c_t)^2)  (dc_L = grad_cn)
        d_gi = dgates;  d_w_hh = sum_t dgates_t.T @ h_{t-1};  d_h0 = dgates_0 @ W_hh;
        d_c0 = dc_0 * f_0

    M and o (1 - tanh(c)^2) are computed for all steps at once before the loop.
    """
    spec = shape_rule("rnn.lstm_sequence_backward")(
        "_lstm_sequence_backward",
        (grad_output, grad_hn, grad_cn, output, h0, c0, w_hh, workspace))
    dtype = spec[0].dtype
    d_out, d_hn, d_cn, y, h0_a, c0_a, w, work = _arrays(
        dtype, grad_output, grad_hn, grad_cn, output, h0, c0, w_hh, workspace)
    steps, batch, hidden = y.shape
    gates, cells, tanh_c = split_workspace(work, steps, batch, hidden)
    i, f = gates[..., :hidden], gates[..., hidden:2 * hidden]
    g, o = gates[..., 2 * hidden:3 * hidden], gates[..., 3 * hidden:]
    c_prev = np.concatenate([c0_a[None], cells[:-1]], 0)
    h_prev = np.concatenate([h0_a[None], y[:-1]], 0)
    dgates = np.concatenate([g * i * (1 - i), c_prev * f * (1 - f), i * (1 - g * g),
                             tanh_c * o * (1 - o)], 2)
    dc_from_h = o * (1 - tanh_c * tanh_c)
    # Per step, dgates[t] viewed as (N, 4, H): the first three gates take dc, the last dh.
    by_gate = dgates.reshape(steps, batch, 4, hidden)
    dh = d_out[-1] + d_hn
    dc = d_cn.copy()
    product = np.empty((batch, hidden), y.dtype)
    for t in range(steps - 1, -1, -1):
        if t < steps - 1:
            np.matmul(dgates[t + 1], w, out=dh)
            dh += d_out[t]
            dc *= f[t + 1]
        np.multiply(dh, dc_from_h[t], out=product)
        dc += product
        by_gate[t, :, :3] *= dc[:, None, :]
        by_gate[t, :, 3] *= dh
    flat = dgates.reshape(steps * batch, 4 * hidden)
    d_w_hh = flat.T @ h_prev.reshape(steps * batch, hidden)
    d_h0 = dgates[0] @ w
    d_c0 = dc * f[0]
    return out(dgates, dtype), out(d_h0, dtype), out(d_c0, dtype), out(d_w_hh, dtype)
