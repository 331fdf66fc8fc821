"""The LSTM recurrence over a whole sequence as one autograd node, the way cuDNN does it.

Recorded op by op, one LSTM step leaves about a dozen autograd nodes behind, and the
engine's per-node cost (not the arithmetic, at these sizes) then dominates the backward
pass. `LSTMSequence` runs the forward loop untracked and writes the backward by hand:

    forward, per step t (gi_t = x_t @ W_ih.T + b_ih + b_hh comes in precomputed):
        gates = gi_t + h @ W_hh.T;  i, f, o = sigmoid(.);  g = tanh(.)
        c = f * c + i * g;          h = o * tanh(c)

    backward, per step t from last to first (5 ops):
        dh = dout_t + dgates_{t+1} @ W_hh            (dh_n for the last step)
        dc = dc_{t+1} * f_{t+1} + dh * o_t * (1 - tanh(c_t)^2)
        dgates_t = [dc, dc, dc, dh] * M_t,   M_t = [g i(1-i), c_{t-1} f(1-f),
                                                    i (1-g^2), tanh(c_t) o(1-o)]
    and after the loop, for all steps at once (one matmul each):
        dW_hh = sum_t dgates_t.T @ h_{t-1};   d gi = dgates

M and the (1 - tanh^2) factor are computed for every step together before the loop, so
the per-step work stays at five ops. Everything is tp ops, so the cuda device works too.

NOTE: the saved activations were computed without a graph, so the fast backward is not
itself differentiable. When a backward runs with create_graph=True, `backward` instead
recomputes the recurrence op by op (lstm_step, recorded) and differentiates that, so
second derivatives come out right, at the op-by-op speed.
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.autograd.function import Function
from tensorplay.nn.modules.rnn_cells import lstm_step

__all__ = ["LSTMSequence"]


class LSTMSequence(Function):
    """(output (L, N, H), h_n (N, H), c_n (N, H)) = LSTMSequence.apply(gi, h0, c0, w_hh),
    gi (L, N, 4H) the input projection of every step with both biases, in time order."""

    @staticmethod
    def forward(ctx, gi, h0, c0, w_hh):
        hidden = h0.shape[-1]
        w_hh_t = w_hh.t()
        keep = any(ctx.needs_input_grad)
        h, c = h0, c0
        hs, cs, sigs, gs, tcs = [], [], [], [], []
        for gi_t in gi.unbind(0):
            gates = tp.addmm(gi_t, h, w_hh_t)
            sig = tp.sigmoid(gates)
            # Three narrows, not chunk: chunk goes through split and makes all four views.
            i = sig.narrow(1, 0, hidden)
            f = sig.narrow(1, hidden, hidden)
            o = sig.narrow(1, 3 * hidden, hidden)
            g = tp.tanh(gates.narrow(1, 2 * hidden, hidden))
            c = tp.addcmul(f * c, i, g)
            tc = tp.tanh(c)
            h = o * tc
            hs.append(h)
            if keep:
                cs.append(c)
                sigs.append(sig)
                gs.append(g)
                tcs.append(tc)
        output = tp.stack(hs, 0)
        if keep:
            ctx.save_for_backward(gi, output, h0, c0, w_hh, tp.stack(cs, 0),
                                  tp.stack(sigs, 0), tp.stack(gs, 0), tp.stack(tcs, 0))
        return output, h, c

    @staticmethod
    def backward(ctx, d_output, d_hn, d_cn):
        gi, output, h0, c0, w_hh, cells, sigs, gs, tcs = ctx.saved_tensors
        if tp.is_grad_enabled():
            return _recorded_backward(ctx, (gi, h0, c0, w_hh), (d_output, d_hn, d_cn))
        steps, hidden = output.shape[0], h0.shape[-1]
        i, f, _, o = sigs.chunk(4, 2)
        c_prev = tp.cat([c0.unsqueeze(0), cells.narrow(0, 0, steps - 1)], 0)
        h_prev = tp.cat([h0.unsqueeze(0), output.narrow(0, 0, steps - 1)], 0)
        # M: what dgates is, per gate, once multiplied by [dc, dc, dc, dh]; see the docstring.
        factors = tp.cat([gs * i * (1 - i), c_prev * f * (1 - f), i * (1 - gs * gs),
                          tcs * o * (1 - o)], 2).unbind(0)
        dc_from_h = (o * (1 - tcs * tcs)).unbind(0)
        forget = f.unbind(0)
        d_out = d_output.unbind(0)

        dgates = [None] * steps
        dh, dc = d_out[-1] + d_hn, d_cn
        for t in range(steps - 1, -1, -1):
            if t < steps - 1:
                dh = tp.addmm(d_out[t], dgates[t + 1], w_hh)
                dc = dc * forget[t + 1]
            dc = tp.addcmul(dc, dh, dc_from_h[t])
            dgates[t] = tp.cat([dc, dc, dc, dh], 1) * factors[t]
        d_gi = tp.stack(dgates, 0)
        flat = d_gi.reshape(steps * d_gi.shape[1], 4 * hidden)
        d_w_hh = flat.t().mm(h_prev.reshape(flat.shape[0], hidden))
        d_h0 = dgates[0].mm(w_hh)
        d_c0 = dc * forget[0]
        return d_gi, d_h0, d_c0, d_w_hh


def _recorded_backward(ctx, inputs, grads):
    """The backward of create_graph=True: recompute the steps with autograd recording and
    differentiate them, so the result carries a graph (a second derivative is exact)."""
    gi, h, c, w_hh = inputs
    w_hh_t = w_hh.t()
    outs = []
    for gi_t in gi.unbind(0):
        h, c = lstm_step(gi_t, h, c, w_hh_t)
        outs.append(h)
    wanted = [t for t, need in zip(inputs, ctx.needs_input_grad) if need]
    found = iter(tp.autograd.grad([tp.stack(outs, 0), h, c], wanted, list(grads),
                                  create_graph=True, allow_unused=True))
    return tuple(next(found) if need else None for need in ctx.needs_input_grad)
