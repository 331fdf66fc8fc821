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

NOTE: sigmoid(x) = (1 + tanh(x / 2)) / 2, so one tanh over all four gates, the 1/2 of
the input folded into the weight and the projected input once, gives the three sigmoids
and the tanh in three calls instead of five.

At N = 20, H = 64 a step's ufuncs cost their call more than their arithmetic, and a
ufunc over an (N, H) column block of an (N, 4H) row costs three times one over a dense
(N, H) array (NumPy walks it row by row). So the forward works gate-major instead, each
step's gates an (4, N, H) array whose blocks are dense, the sigmoid gates first:
[ i | f | o | g ], and writes the workspace's row layout once at the end.
"""
from __future__ import annotations

import itertools

import numpy as np

from cpu_kernels._common import accumulate_dtype, out
from cpu_kernels._loops import loop
from tensorplay.kernel_support.ops import shape_rule

# The forward's gate-major order [i f o g] as indices of the workspace's [i f g o]: the
# three sigmoid gates side by side, so that a step's loop rescales them as one block.
_GATE_MAJOR = np.array((0, 1, 3, 2))
_GATE_MAJOR.flags.writeable = False


def split_workspace(work, steps, batch, hidden):
    """The (gates, cells, tanh of cells) regions of a flat workspace, as views."""
    block = steps * batch * hidden
    gates = work[:4 * block].reshape(steps, batch, 4 * hidden)
    cells = work[4 * block:5 * block].reshape(steps, batch, hidden)
    return gates, cells, work[5 * block:].reshape(steps, batch, hidden)


def _arrays(dtype, *tensors):
    np_dtype = accumulate_dtype(dtype)
    return [t._impl.array().astype(np_dtype, copy=False) for t in tensors]


def _gate_major_inputs(a_gi, w, hidden):
    """(gates (L, 4, N, H), w4 (4, H, H)): the projected inputs and W_hh.T per gate, in
    the order [i f o g], the sigmoid gates' halved (tanh(x / 2) is their sigmoid's)."""
    steps, batch = a_gi.shape[:2]
    gates = np.empty((steps, 4, batch, hidden), a_gi.dtype)
    w4 = np.empty((4, hidden, hidden), a_gi.dtype)
    _to_gate_major(a_gi.reshape(steps, batch, 4, hidden), w.reshape(4, hidden, hidden),
                   _GATE_MAJOR, a_gi.dtype.type(0.5), gates, w4)
    return gates, w4


@loop
def _to_gate_major(by_gate, w_by_gate, order, half, gates, w4):
    """gates[t, k] = by_gate[t, :, gate] and w4[k] = w_by_gate[gate].T for the k-th gate
    of [i f o g] (gate = order[k], _GATE_MAJOR), the three sigmoid gates' times `half`
    (one pass each way: the strided NumPy copies with their products were eight calls and
    3x slower)."""
    steps, batch, _, hidden = by_gate.shape
    one = half + half
    for k in range(4):
        gate = order[k]
        scale = half if k < 3 else one
        for t in range(steps):
            for n in range(batch):
                for j in range(hidden):
                    gates[t, k, n, j] = by_gate[t, n, gate, j] * scale
        for a in range(hidden):
            for b in range(hidden):
                w4[k, a, b] = w_by_gate[gate, b, a] * scale


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
    gates, w4 = _gate_major_inputs(a_gi, w, hidden)
    work = np.empty(6 * steps * batch * hidden, a_gi.dtype)
    _, cells, tanh_cells = split_workspace(work, steps, batch, hidden)
    output = np.empty((steps, batch, hidden), a_gi.dtype)
    recurrent = np.empty((4, batch, hidden), a_gi.dtype)
    half = a_gi.dtype.type(0.5)     # (a Python 0.5 would make the loop's float32 a double)
    # Positional out= and local names: at ~0.5 us a call, keyword parsing is worth saving.
    add, tanh, matmul, mul = np.add, np.tanh, np.matmul, np.multiply
    # Per-step views by zip: indexing or unpacking them in the loop costs more than a ufunc.
    # NumPy's tanh (vector code; a compiled loop would call the C library's, one element
    # at a time) and a loop for the rest of the step's elementwise work.
    for step, o, c_t, tanh_t, h_t in zip(gates, gates[:, 2], cells, tanh_cells, output):
        matmul(h, w4, recurrent)            # (N, H) @ (4, H, H): the four gates' blocks
        add(step, recurrent, step)
        tanh(step, step)
        _lstm_cell_step(step, c, c_t, half)
        tanh(c_t, tanh_t)
        mul(o, tanh_t, h_t)
        h, c = h_t, c_t
    _write_gates(work, gates)
    return (out(output, dtype), out(h.copy(), dtype), out(c.copy(), dtype),
            out(work, spec[3].dtype))


@loop
def _lstm_cell_step(gates, c, c_t, half):
    """After the tanh of one step's gate-major gates (4, N, H) [i f o g]: the sigmoid
    gates from their tanh(x / 2), and the new cell state, over (N, H):

        i, f, o = tanh * half + half;   c_t = f * c + i * g     (half = 0.5)

    (one pass for what NumPy did in five calls; the same operations in the same order)."""
    for n in range(c.shape[0]):
        for j in range(c.shape[1]):
            i = gates[0, n, j] * half + half
            f = gates[1, n, j] * half + half
            gates[0, n, j] = i
            gates[1, n, j] = f
            gates[2, n, j] = gates[2, n, j] * half + half
            c_t[n, j] = f * c[n, j] + i * gates[3, n, j]


def _write_gates(work, gates):
    """The gate-major (L, 4, N, H) gates [i f o g] into the workspace's (L, N, 4H) rows
    [i f g o]."""
    steps, _, batch, hidden = gates.shape
    _from_gate_major(gates, _GATE_MAJOR,
                     work[:4 * steps * batch * hidden].reshape(steps, batch, 4, hidden))


@loop
def _from_gate_major(gates, order, rows):
    """rows[t, n, order[k]] = gates[t, k, n] for the k-th gate of [i f o g] (order:
    _GATE_MAJOR; one pass where four strided copies took 1.5x as long)."""
    steps, _, batch, hidden = gates.shape
    for t in range(steps):
        for n in range(batch):
            for k in range(4):
                gate = order[k]
                for j in range(hidden):
                    rows[t, n, gate, j] = gates[t, k, n, j]


def lstm_sequence_backward(grad_output, grad_hn, grad_cn, output, h0, c0, w_hh, workspace):
    """(d_gi, d_h0, d_c0, d_w_hh) of _lstm_sequence, from its output and workspace.

        dgates_t = [dc, dc, dc, dh] * M_t,  M_t = [g i(1-i), c_{t-1} f(1-f), i(1-g^2),
                                                   tanh(c_t) o(1-o)]
        for t in L-1 .. 0:
            dh = grad_output[t] + dgates_{t+1} @ W_hh             (+ grad_hn at t = L-1)
            dc = dc_{t+1} * f_{t+1} + dh * o_t (1 - tanh(c_t)^2)  (dc_L = grad_cn)
        d_gi = dgates;  d_w_hh = sum_t dgates_t.T @ h_{t-1};  d_h0 = dgates_0 @ W_hh;
        d_c0 = dc_0 * f_0

    M and o (1 - tanh(c)^2) are computed for all steps at once before the loop, by one
    compiled loop (_gate_factors); the step loop then runs a compiled loop and a product
    per step, d_h0 and d_c0 being its last step's carry.
    """
    spec = shape_rule("rnn.lstm_sequence_backward")(
        "_lstm_sequence_backward",
        (grad_output, grad_hn, grad_cn, output, h0, c0, w_hh, workspace))
    dtype = spec[0].dtype
    d_out, d_hn, d_cn, y, h0_a, c0_a, w, work = _arrays(
        dtype, grad_output, grad_hn, grad_cn, output, h0, c0, w_hh, workspace)
    steps, batch, hidden = y.shape
    gates, cells, tanh_c = split_workspace(work, steps, batch, hidden)
    # M and o (1 - tanh(c)^2) for all steps (_gate_factors), the forget gate as a dense
    # (L, N, H) array: the step loop reads each once, and a column block of the gates
    # would cost it three times a dense one (see the module docstring).
    dgates = np.empty_like(gates)
    dc_from_h = np.empty_like(tanh_c)
    forget = np.empty_like(tanh_c)
    _gate_factors(gates, cells, tanh_c, c0_a, dgates, dc_from_h, forget)
    # Per step, dgates[t] viewed as (N, 4, H): the first three gates take dc, the last dh.
    by_gate = dgates.reshape(steps, batch, 4, hidden)
    dh = d_out[-1] + d_hn
    dc = d_cn.copy()
    # Step t ends by carrying dh and dc to step t - 1; after step 0 they are d_h0 (no
    # output gradient to add) and d_c0. Per step: one loop for the elementwise part
    # (_lstm_backward_step), one product. Views by zip: an index costs more than a call.
    earlier_d_out = itertools.chain(d_out[-2::-1], [None])
    for dgates_t, by_gate_t, dc_from_h_t, f_t, d_out_before in zip(
            dgates[::-1], by_gate[::-1], dc_from_h[::-1], forget[::-1], earlier_d_out):
        _lstm_backward_step(dh, dc, dc_from_h_t, f_t, by_gate_t)
        np.matmul(dgates_t, w, dh)
        if d_out_before is not None:
            np.add(dh, d_out_before, dh)
    # sum_t dgates_t.T @ h_{t-1}: steps 1.. against the output, step 0 against h0.
    d_w_hh = dgates[0].T @ h0_a
    if steps > 1:
        d_w_hh += (dgates[1:].reshape((steps - 1) * batch, 4 * hidden).T
                   @ y[:-1].reshape((steps - 1) * batch, hidden))
    return out(dgates, dtype), out(dh, dtype), out(dc, dtype), out(d_w_hh, dtype)


@loop
def _gate_factors(gates, cells, tanh_c, c0, m, dc_from_h, forget):
    """The factors lstm_sequence_backward's steps multiply by, from the workspace's gates
    (L, N, 4H) [i f g o], cells c_t and tanh(c_t) (L, N, H), and c0 (N, H):

        m = [(1 - i) i g, (1 - f) f c_{t-1}, ((0 - g) g + 1) i, (1 - o) o tanh(c_t)]
        dc_from_h = (1 - tanh(c_t)^2) o;   forget = f      (c_{-1} = c0)

    (one pass where NumPy took twelve, mostly over strided column blocks, 2.3x as long at
    L = 35, N = 20, H = 64; the same operations in the same order as those, so the same
    bits)."""
    steps, batch, hidden = cells.shape
    one = gates.dtype.type(1)
    zero = gates.dtype.type(0)
    for t in range(steps):
        for n in range(batch):
            for j in range(hidden):
                i = gates[t, n, j]
                f = gates[t, n, hidden + j]
                g = gates[t, n, 2 * hidden + j]
                o = gates[t, n, 3 * hidden + j]
                c_before = cells[t - 1, n, j] if t > 0 else c0[n, j]
                tc = tanh_c[t, n, j]
                m[t, n, j] = (one - i) * i * g
                m[t, n, hidden + j] = (one - f) * f * c_before
                m[t, n, 2 * hidden + j] = ((zero - g) * g + one) * i
                m[t, n, 3 * hidden + j] = (one - o) * o * tc
                dc_from_h[t, n, j] = (one - tc * tc) * o
                forget[t, n, j] = f


@loop
def _lstm_backward_step(dh, dc, dc_from_h, f, dgates):
    """The elementwise part of one step of lstm_sequence_backward, in place, over (N, H)
    arrays and dgates (N, 4, H) holding the step's factors M:

        dc = dc + dh * dc_from_h             (dc_from_h = o (1 - tanh(c)^2))
        dgates[:, 0:3] *= dc;  dgates[:, 3] *= dh
        dc = dc * f                          (carried to the step before)

    (One pass where the NumPy form was six calls a step, each costing its call more than
    its arithmetic at N = 20, H = 64; the same operations in the same order, so the same
    bits.)"""
    for n in range(dh.shape[0]):
        for j in range(dh.shape[1]):
            d = dc[n, j] + dh[n, j] * dc_from_h[n, j]
            dgates[n, 0, j] *= d
            dgates[n, 1, j] *= d
            dgates[n, 2, j] *= d
            dgates[n, 3, j] *= dh[n, j]
            dc[n, j] = d * f[n, j]


# ---- the GRU ---------------------------------------------------------------------------
# The GRU's workspace is one (L, N, 4H) tensor, per step [ r | z | gh_n | n ]: the two
# sigmoid gates, the hidden projection of the n gate (W_hn h + b_hn, which r multiplies)
# and the tanh gate. The step's matmul h @ W_hh.T writes straight into the first 3H
# columns: the r and z columns are then turned into the gates in place.


def gru_sequence(gi, h0, w_hh, b_hh):
    """(output, h_n, workspace) of the GRU over gi (L, N, 3H), rows [r | z | n] holding
    x_t @ W_ih.T + b_ih; h0 (N, H); w_hh (3H, H); b_hh (3H,) or None.

        for t in 0 .. L-1:
            gh = h @ W_hh.T + b_hh
            r, z = sigmoid(gi[t][r, z] + gh[r, z])
            n = tanh(gi[t][n] + r * gh[n])
            h = n + z * (h - n);        output[t] = h
    """
    spec = shape_rule("rnn.gru_sequence")("_gru_sequence", (gi, h0, w_hh, b_hh))
    dtype = spec[0].dtype
    a_gi, h, w = _arrays(dtype, gi, h0, w_hh)
    steps, batch, hidden = a_gi.shape[0], h.shape[0], h.shape[1]
    rz = slice(0, 2 * hidden)
    # sigmoid(x) = (1 + tanh(x / 2)) / 2: the 1/2 folded into the r and z columns of the
    # weight and the inputs once, with b_hh's r and z parts (only ever added to gi's).
    w_scaled = np.array(w.T, order="C")
    w_scaled[:, rz] *= 0.5
    gi_rz = a_gi[..., rz] * 0.5
    b_n = None
    if b_hh is not None:
        b = _arrays(dtype, b_hh)[0]
        gi_rz += b[rz] * 0.5
        b_n = b[2 * hidden:]
    gi_n = a_gi[..., 2 * hidden:]
    work = np.empty((steps, batch, 4 * hidden), a_gi.dtype)
    output = np.empty((steps, batch, hidden), a_gi.dtype)
    for t in range(steps):
        step = work[t]
        gates, gh_n, n = step[:, rz], step[:, 2 * hidden:3 * hidden], step[:, 3 * hidden:]
        r, z = step[:, :hidden], step[:, hidden:2 * hidden]
        np.matmul(h, w_scaled, out=step[:, :3 * hidden])
        gates += gi_rz[t]
        np.tanh(gates, out=gates)
        gates *= 0.5
        gates += 0.5
        if b_n is not None:
            gh_n += b_n
        np.multiply(r, gh_n, out=n)
        n += gi_n[t]
        np.tanh(n, out=n)
        np.subtract(h, n, out=output[t])
        output[t] *= z
        output[t] += n
        h = output[t]
    return out(output, dtype), out(h.copy(), dtype), out(work, dtype)


def gru_sequence_backward(grad_output, grad_hn, output, h0, w_hh, workspace):
    """(d_gi, d_h0, d_w_hh, d_b_hh) of _gru_sequence, from its output and workspace.
    With a = the gates' pre-activations and gh = h_{t-1} @ W_hh.T + b_hh:

        da_n = dh (1 - z)(1 - n^2)          da_z = dh (h_{t-1} - n) z (1 - z)
        da_r = da_n gh_n r (1 - r)
        d_gi[t] = [da_r | da_z | da_n];     d_gh[t] = [da_r | da_z | da_n r]
        dh_{t-1} = grad_output[t-1] + d_gh[t] @ W_hh + dh z
        d_w_hh = sum_t d_gh[t].T @ h_{t-1};  d_b_hh = sum_t,rows d_gh[t];  d_h0 = dh_{-1}

    The factors multiplying dh are computed for all steps at once before the loop.
    """
    spec = shape_rule("rnn.gru_sequence_backward")(
        "_gru_sequence_backward", (grad_output, grad_hn, output, h0, w_hh, workspace))
    dtype = spec[0].dtype
    d_out, d_hn, y, h0_a, w, work = _arrays(
        dtype, grad_output, grad_hn, output, h0, w_hh, workspace)
    steps, batch, hidden = y.shape
    r, z = work[..., :hidden], work[..., hidden:2 * hidden]
    gh_n, n = work[..., 2 * hidden:3 * hidden], work[..., 3 * hidden:]
    h_prev = np.concatenate([h0_a[None], y[:-1]], 0)
    n_factor = (1 - z) * (1 - n * n)
    z_factor = (h_prev - n) * z * (1 - z)
    r_factor = gh_n * r * (1 - r)
    d_gi = np.empty((steps, batch, 3 * hidden), y.dtype)
    d_gh = np.empty((steps, batch, 3 * hidden), y.dtype)
    dh = d_out[-1] + d_hn
    dh_prev = np.empty((batch, hidden), y.dtype)
    for t in range(steps - 1, -1, -1):
        da_n = d_gi[t, :, 2 * hidden:]
        np.multiply(dh, n_factor[t], out=da_n)
        np.multiply(dh, z_factor[t], out=d_gh[t, :, hidden:2 * hidden])
        np.multiply(da_n, r_factor[t], out=d_gh[t, :, :hidden])
        np.multiply(da_n, r[t], out=d_gh[t, :, 2 * hidden:])
        np.matmul(d_gh[t], w, out=dh_prev)
        if t > 0:
            dh_prev += d_out[t - 1]
        dh *= z[t]
        dh_prev += dh
        dh, dh_prev = dh_prev, dh
    d_gi[..., :2 * hidden] = d_gh[..., :2 * hidden]
    flat = d_gh.reshape(steps * batch, 3 * hidden)
    d_w_hh = flat.T @ h_prev.reshape(steps * batch, hidden)
    d_b_hh = flat.sum(0)
    return out(d_gi, dtype), out(dh, dtype), out(d_w_hh, dtype), out(d_b_hh, dtype)
