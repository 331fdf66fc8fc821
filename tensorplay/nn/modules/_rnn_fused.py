"""The LSTM and GRU recurrences over a whole sequence as one autograd node each, the way
cuDNN does it.

Recorded op by op, one LSTM step leaves about a dozen autograd nodes behind, and both
the engine's per-node cost and the dispatcher's per-op cost (not the arithmetic, at
these sizes) then dominate. `LSTMSequence` hands the whole forward loop to one operator
and the whole backward loop to another (ops.yaml):

    _lstm_sequence(gi, h0, c0, w_hh) -> (output, h_n, c_n, workspace)
    _lstm_sequence_backward(d_output, d_h_n, d_c_n, output, h0, c0, w_hh, workspace)
        -> (d_gi, d_h0, d_c0, d_w_hh)

and `GRUSequence` likewise (_gru_sequence, _gru_sequence_backward; gi = x @ W_ih.T + b_ih,
b_hh apart since its n part is multiplied by the reset gate).

gi = x @ W_ih.T + b_ih + b_hh comes in precomputed for every step (one matmul for the
sequence). On the CPU each op is one NumPy loop over time (cpu_kernels/rnn.py, where the
recurrence and its backward are written out); other devices run the same algorithm
composed from tp ops (tensorplay/composite/rnn.py).

NOTE: the two ops have no derivative of their own (the workspace is a constant to
autograd), so the fast backward is not itself differentiable. When a backward runs with
create_graph=True, `backward` instead recomputes the recurrence op by op (lstm_step,
recorded) and differentiates that, so second derivatives come out right, at the
op-by-op speed.
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.rnn import gru_sequence_jvp, lstm_sequence_jvp
from tensorplay.autograd.function import Function
from tensorplay.nn.modules._rnn_cells import gru_step, lstm_step

__all__ = ["LSTMSequence", "GRUSequence"]


class LSTMSequence(Function):
    """(output (L, N, H), h_n (N, H), c_n (N, H), workspace) = LSTMSequence.apply(gi, h0, c0,
    w_hh), gi (L, N, 4H) the input projection of every step with both biases, in time order.
    The workspace (what the backward reads) is an output marked non-differentiable, so
    that setup_context can save it: that form (a ctx-free forward) is what tp.vmap runs,
    with the batching rules of the two ops (generate_vmap_rule)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(gi, h0, c0, w_hh):
        return F._lstm_sequence(gi, h0, c0, w_hh)

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        gi, h0, c0, w_hh = inputs
        output, _, _, workspace = outputs
        ctx.mark_non_differentiable(workspace)
        # Missing gradients stay None (_zeros_for makes the two small ones the kernel
        # reads): the workspace's zero gradient would be a buffer as large as six outputs.
        ctx.set_materialize_grads(False)
        if any(ctx.needs_input_grad):
            ctx.save_for_backward(gi, output, h0, c0, w_hh, workspace)
        ctx.save_for_forward(gi, h0, c0, w_hh, output)

    @staticmethod
    def jvp(ctx, gi_t, h0_t, c0_t, w_hh_t):
        """Forward mode: the tangents of (output, h_n, c_n) from the recurrence's steps
        (lstm_sequence_jvp, also _lstm_sequence's tangent formula); the workspace has
        none."""
        gi, h0, c0, w_hh, output = ctx.saved_tensors
        return (*lstm_sequence_jvp(gi, h0, c0, w_hh, output, gi_t, h0_t, c0_t, w_hh_t), None)

    @staticmethod
    def backward(ctx, d_output, d_hn, d_cn, _d_workspace):
        gi, output, h0, c0, w_hh, workspace = ctx.saved_tensors
        inputs = (gi, h0, c0, w_hh)
        d_output, d_hn, d_cn = _zeros_for((d_output, d_hn, d_cn), (output, h0, c0), output.dtype)
        if tp.is_grad_enabled():
            return _recorded_backward(ctx, inputs, output.dtype, (d_output, d_hn, d_cn))
        if all(t.dtype is output.dtype for t in inputs):
            return F._lstm_sequence_backward(d_output, d_hn, d_cn, output, h0, c0, w_hh,
                                             workspace)
        # Under tp.autocast the op ran in the autocast dtype (its policy is `lower`) on
        # inputs cast to it: so does its backward, and each input gets its gradient in
        # its own dtype (a float32 weight, a float32 .grad).
        _, h0, c0, w_hh = (t.to(output.dtype) for t in inputs)
        grads = F._lstm_sequence_backward(d_output, d_hn, d_cn, output, h0, c0, w_hh,
                                          workspace)
        return tuple(g.to(t.dtype) for g, t in zip(grads, inputs))


def _zeros_for(grads, like, dtype):
    """The gradients with zeros (`like`'s shapes, in the outputs' `dtype`) where an output
    got none: with materialize_grads off, backward sees None there."""
    return tuple(tp.zeros_like(t, dtype=dtype) if g is None else g for g, t in zip(grads, like))


def _recorded_backward(ctx, inputs, dtype, grads):
    """The backward of create_graph=True: recompute the steps with autograd recording and
    differentiate them, so the result carries a graph (a second derivative is exact).
    `dtype` is the one the forward ran in (the autocast dtype under tp.autocast)."""
    gi, h, c, w_hh = (t.to(dtype) for t in inputs)
    w_hh_t = w_hh.t()
    outs = []
    for gi_t in gi.unbind(0):
        h, c = lstm_step(gi_t, h, c, w_hh_t)
        outs.append(h)
    wanted = [t for t, need in zip(inputs, ctx.needs_input_grad) if need]
    found = iter(tp.autograd.grad([tp.stack(outs, 0), h, c], wanted, list(grads),
                                  create_graph=True, allow_unused=True))
    return tuple(next(found) if need else None for need in ctx.needs_input_grad)


class GRUSequence(Function):
    """(output (L, N, H), h_n (N, H), workspace) = GRUSequence.apply(gi, h0, w_hh, b_hh),
    gi (L, N, 3H) = x @ W_ih.T + b_ih for every step; b_hh (3H,) or None. The same
    arrangement as LSTMSequence: _gru_sequence forward, _gru_sequence_backward backward,
    the steps recorded op by op (gru_step) when the backward must be differentiable."""

    generate_vmap_rule = True

    @staticmethod
    def forward(gi, h0, w_hh, b_hh):
        return F._gru_sequence(gi, h0, w_hh, b_hh)

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        gi, h0, w_hh, b_hh = inputs
        output, _, workspace = outputs
        ctx.mark_non_differentiable(workspace)
        ctx.set_materialize_grads(False)       # as LSTMSequence's
        if any(ctx.needs_input_grad):
            ctx.save_for_backward(gi, output, h0, w_hh, b_hh, workspace)
        ctx.save_for_forward(gi, h0, w_hh, b_hh, output)

    @staticmethod
    def jvp(ctx, gi_t, h0_t, w_hh_t, b_hh_t):
        gi, h0, w_hh, b_hh, output = ctx.saved_tensors
        return (*gru_sequence_jvp(gi, h0, w_hh, b_hh, output, gi_t, h0_t, w_hh_t, b_hh_t),
                None)

    @staticmethod
    def backward(ctx, d_output, d_hn, _d_workspace):
        gi, output, h0, w_hh, b_hh, workspace = ctx.saved_tensors
        inputs = (gi, h0, w_hh, b_hh)
        d_output, d_hn = _zeros_for((d_output, d_hn), (output, h0), output.dtype)
        if tp.is_grad_enabled():
            return _recorded_gru_backward(ctx, inputs, output.dtype, (d_output, d_hn))
        # Under tp.autocast the op ran in the autocast dtype: see LSTMSequence.backward.
        _, h0, w_hh = (t.to(output.dtype) for t in inputs[:3])
        grads = F._gru_sequence_backward(d_output, d_hn, output, h0, w_hh, workspace)
        return tuple(None if t is None else g.to(t.dtype) for g, t in zip(grads, inputs))


def _recorded_gru_backward(ctx, inputs, dtype, grads):
    """GRUSequence's backward with create_graph=True, as _recorded_backward's."""
    gi, h, w_hh, b_hh = (None if t is None else t.to(dtype) for t in inputs)
    w_hh_t = w_hh.t()
    outs = []
    for gi_t in gi.unbind(0):
        h = gru_step(gi_t, h, w_hh_t, b_hh)
        outs.append(h)
    wanted = [t for t, need in zip(inputs, ctx.needs_input_grad) if need]
    found = iter(tp.autograd.grad([tp.stack(outs, 0), h], wanted, list(grads),
                                  create_graph=True, allow_unused=True))
    return tuple(next(found) if need else None for need in ctx.needs_input_grad)
