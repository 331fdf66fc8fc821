"""Batching rules of the fused LSTM and GRU recurrences (_lstm_sequence, _gru_sequence and
their backwards): the batch of examples joins the op's own batch N.

    example:   gi (L, N, 4H)   h0, c0 (N, H)   w_hh (4H, H)
    one call:  gi (L, B*N, 4H) h0, c0 (B*N, H) w_hh (4H, H)    example b is rows b*N..b*N+N-1

One w_hh serves every example. Under `vmap(grad(f))` the weight is batched only as an
expanded view of one tensor (each example differentiates its own copy): the ops are not
differentiable themselves (nn.LSTM's autograd Function holds their derivative), so the
rule reads that one tensor. Weights that really differ per example run per example.

The flat workspace (gates | cells | tanh of cells, each (L, N, k)) is per example as the
op lays it out for N rows, so the rules reorder it between the two layouts.
"""
from __future__ import annotations

from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.func.batching_rules import NeedsFallback, batch_size, call, materialize

_WIDTHS = (4, 1, 1)     # the workspace's regions, in units of H per (step, row)


def _shared_weight(w_hh, bdim, op):
    """The one w_hh of the batch (see the module docstring), or NeedsFallback."""
    if bdim is None:
        return w_hh
    if w_hh._impl.strides[bdim] == 0:
        return w_hh.select(bdim, 0)
    raise NeedsFallback(op.name)


def _rows(x, bdim, size):
    """(N, k) per example -> (B*N, k)."""
    x = materialize(x, bdim, size)
    return x.reshape((size * x.shape[1],) + tuple(x.shape[2:]))


def _steps(x, bdim, size):
    """(L, N, k) per example -> (L, B*N, k)."""
    x = materialize(x, bdim, size).movedim(0, 1)
    return x.reshape((x.shape[0], size * x.shape[2]) + tuple(x.shape[3:]))


def _workspace_per_example(work, steps, size, batch, hidden):
    """The workspace of B*N rows -> (B, workspace of N rows)."""
    parts, start = [], 0
    for width in _WIDTHS:
        n = steps * size * batch * width * hidden
        region = work.narrow(0, start, n).reshape((steps, size, batch * width * hidden))
        parts.append(region.movedim(1, 0).reshape((size, -1)))
        start += n
    return _cat(parts, 1)


def _workspace_joined(work, steps, size, batch, hidden):
    """(B, workspace of N rows) -> the workspace of B*N rows."""
    parts, start = [], 0
    for width in _WIDTHS:
        n = steps * batch * width * hidden
        region = work.narrow(1, start, n).reshape((size, steps, batch * width * hidden))
        parts.append(region.movedim(0, 1).reshape((-1,)))
        start += n
    return _cat(parts, 0)


def _cat(parts, dim):
    return call(dispatcher.find("cat"), parts, dim)


def lstm_sequence_rule(op, args, bdims):
    gi, h0, c0, w_hh = args
    size = batch_size(args, bdims)
    w_hh = _shared_weight(w_hh, bdims[3], op)
    gi = _steps(gi, bdims[0], size)
    h0 = _rows(h0, bdims[1], size)
    steps, batch, hidden = gi.shape[0], h0.shape[0] // size, h0.shape[1]
    output, h_n, c_n, work = call(op, gi, h0, _rows(c0, bdims[2], size), w_hh)
    output = output.view((steps, size, batch, hidden))
    h_n = h_n.view((size, batch, hidden))
    c_n = c_n.view((size, batch, hidden))
    work = _workspace_per_example(work, steps, size, batch, hidden)
    return (output, h_n, c_n, work), (1, 0, 0, 0)


def lstm_sequence_backward_rule(op, args, bdims):
    """The gradients of gi, h0 and c0 come per row, so per example; the op's d_w_hh sums
    over all B*N rows, so each example's is computed from d_gi instead:
    d_w_hh = sum over steps and rows of d_gates^T h_prev (gates = gi + h_prev @ w_hh^T)."""
    grad_output, grad_hn, grad_cn, output, h0, c0, w_hh, work = args
    size = batch_size(args, bdims)
    w_hh = _shared_weight(w_hh, bdims[6], op)
    output = _steps(output, bdims[3], size)
    h0 = _rows(h0, bdims[4], size)
    steps, rows, hidden = output.shape
    batch = rows // size
    work = _workspace_joined(materialize(work, bdims[7], size), steps, size, batch, hidden)
    d_gi, d_h0, d_c0, _ = call(op, _steps(grad_output, bdims[0], size),
                               _rows(grad_hn, bdims[1], size), _rows(grad_cn, bdims[2], size),
                               output, h0, _rows(c0, bdims[5], size), w_hh, work)
    h_prev = _cat([h0.unsqueeze(0), output.narrow(0, 0, steps - 1)], 0)
    # (L, B*N, k) -> (B, L*N, k): each example's steps and rows side by side
    per_example = [t.view((steps, size, batch, t.shape[2])).movedim(1, 0)
                   .reshape((size, steps * batch, t.shape[2])) for t in (d_gi, h_prev)]
    d_w_hh = per_example[0].transpose(1, 2).bmm(per_example[1])
    return ((d_gi.view((steps, size, batch, 4 * hidden)), d_h0.view((size, batch, hidden)),
             d_c0.view((size, batch, hidden)), d_w_hh), (1, 0, 0, 0))


# ---- the GRU: its workspace is (L, N, 4H), batched like the output ------------------------
def gru_sequence_rule(op, args, bdims):
    """The examples join the op's batch, w_hh and b_hh shared (see the module docstring)."""
    gi, h0, w_hh, b_hh = args
    size = batch_size(args, bdims)
    w_hh = _shared_weight(w_hh, bdims[2], op)
    if b_hh is not None:
        b_hh = _shared_weight(b_hh, bdims[3], op)
    gi = _steps(gi, bdims[0], size)
    h0 = _rows(h0, bdims[1], size)
    steps, batch, hidden = gi.shape[0], h0.shape[0] // size, h0.shape[1]
    output, h_n, work = call(op, gi, h0, w_hh, b_hh)
    return ((output.view((steps, size, batch, hidden)), h_n.view((size, batch, hidden)),
             work.view((steps, size, batch, 4 * hidden))), (1, 0, 1))


def gru_sequence_backward_rule(op, args, bdims):
    """As the LSTM's: d_gi and d_h0 per row; d_w_hh and d_b_hh per example from the
    hidden side's gate gradients d_gh = [d_gi_r | d_gi_z | d_gi_n * r] (r in the
    workspace): d_w_hh = sum of d_gh^T h_prev, d_b_hh = sum of d_gh."""
    grad_output, grad_hn, output, h0, w_hh, work = args
    size = batch_size(args, bdims)
    w_hh = _shared_weight(w_hh, bdims[4], op)
    output = _steps(output, bdims[2], size)
    h0 = _rows(h0, bdims[3], size)
    work = _steps(work, bdims[5], size)
    steps, rows, hidden = output.shape
    batch = rows // size
    d_gi, d_h0, _, _ = call(op, _steps(grad_output, bdims[0], size),
                            _rows(grad_hn, bdims[1], size), output, h0, w_hh, work)
    d_gh = _cat([d_gi.narrow(2, 0, 2 * hidden),
                 d_gi.narrow(2, 2 * hidden, hidden) * work.narrow(2, 0, hidden)], 2)
    h_prev = _cat([h0.unsqueeze(0), output.narrow(0, 0, steps - 1)], 0)
    per_example = [t.view((steps, size, batch, t.shape[2])).movedim(1, 0)
                   .reshape((size, steps * batch, t.shape[2])) for t in (d_gh, h_prev)]
    d_w_hh = per_example[0].transpose(1, 2).bmm(per_example[1])
    d_b_hh = per_example[0].sum(1)
    return ((d_gi.view((steps, size, batch, 3 * hidden)), d_h0.view((size, batch, hidden)),
             d_w_hh, d_b_hh), (1, 0, 0, 0))
