"""Shape and dtype rules of the recurrent ops: _lstm_sequence, _gru_sequence and their
backwards.

Same contract as rules.py: `rule(op, args) -> tuple of OutSpec` or a typed error that
names the op and the argument. Sizes: L steps, N batch rows, H hidden units; the LSTM's
workspace is flat, six (N, H) blocks per step, the GRU's (L, N, 4H) (cpu_kernels/rnn.py
describes them).
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import OutSpec, check_devices
from tensorplay.meta._nn import check_floating, check_size


def _sequence_sizes(op, gi, h0, gates=4):
    """(L, N, H) from gi (L, N, gates * H) and h0 (N, H), checking the two agree."""
    if len(gi._impl.sizes) != 3 or gi._impl.sizes[0] == 0:
        raise ShapeError(f"{op}(): argument 'gi' must be 3-D (steps, batch, {gates} * hidden) "
                         f"with at least one step, but got {fmt_shape(gi._impl.sizes)}",
                         op=op, arg="gi")
    if len(h0._impl.sizes) != 2:
        raise ShapeError(f"{op}(): argument 'h0' must be 2-D (batch, hidden), but got "
                         f"{fmt_shape(h0._impl.sizes)}", op=op, arg="h0")
    steps, batch = gi._impl.sizes[:2]
    hidden = h0._impl.sizes[1]
    check_size(op, gi, "gi", (steps, batch, gates * hidden),
               f"(steps, batch, {gates} * hidden)")
    return steps, batch, hidden


def _output_sizes(op, output):
    """(L, N, H) of a recurrence's output, which must have at least one step."""
    if len(output._impl.sizes) != 3 or output._impl.sizes[0] == 0:
        raise ShapeError(f"{op}(): argument 'output' must be 3-D (steps, batch, hidden) with "
                         f"at least one step, but got {fmt_shape(output._impl.sizes)}",
                         op=op, arg="output")
    return output._impl.sizes


def _check_dtypes(op, named):
    first_name, first = named[0]
    check_floating(op, first, first_name)
    for name, t in named[1:]:
        if t._impl.dtype is not first._impl.dtype:
            raise DTypeError(f"{op}(): argument '{name}' ({t._impl.dtype.name}) must have the "
                             f"dtype of '{first_name}' ({first._impl.dtype.name})",
                             op=op, arg=name)


def lstm_sequence(op, args):
    gi, h0, c0, w_hh = args
    named = [("gi", gi), ("h0", h0), ("c0", c0), ("w_hh", w_hh)]
    check_devices(op, named)
    _check_dtypes(op, named)
    steps, batch, hidden = _sequence_sizes(op, gi, h0)
    check_size(op, c0, "c0", (batch, hidden), "h0's shape")
    check_size(op, w_hh, "w_hh", (4 * hidden, hidden), "(4 * hidden, hidden)")
    d = gi._impl.dtype
    return (OutSpec((steps, batch, hidden), d), OutSpec((batch, hidden), d),
            OutSpec((batch, hidden), d),
            OutSpec((6 * steps * batch * hidden,), d))


def lstm_sequence_backward(op, args):
    grad_output, grad_hn, grad_cn, output, h0, c0, w_hh, workspace = args
    named = [("grad_output", grad_output), ("grad_hn", grad_hn), ("grad_cn", grad_cn),
             ("output", output), ("h0", h0), ("c0", c0), ("w_hh", w_hh),
             ("workspace", workspace)]
    check_devices(op, named)
    _check_dtypes(op, named[:-1])
    steps, batch, hidden = _output_sizes(op, output)
    for name, t in (("h0", h0), ("c0", c0), ("grad_hn", grad_hn), ("grad_cn", grad_cn)):
        check_size(op, t, name, (batch, hidden), "(batch, hidden) of the output")
    check_size(op, grad_output, "grad_output", (steps, batch, hidden), "the output's shape")
    check_size(op, w_hh, "w_hh", (4 * hidden, hidden), "(4 * hidden, hidden)")
    check_size(op, workspace, "workspace", (6 * steps * batch * hidden,),
               "6 * steps * batch * hidden")
    d = output._impl.dtype
    return (OutSpec((steps, batch, 4 * hidden), d), OutSpec((batch, hidden), d),
            OutSpec((batch, hidden), d), OutSpec((4 * hidden, hidden), d))


# ---- the GRU: gi (L, N, 3H), workspace (L, N, 4H) [r | z | gh_n | n] ----------------------
def gru_sequence(op, args):
    gi, h0, w_hh, b_hh = args
    named = [("gi", gi), ("h0", h0), ("w_hh", w_hh)] + ([] if b_hh is None
                                                        else [("b_hh", b_hh)])
    check_devices(op, named)
    _check_dtypes(op, named)
    steps, batch, hidden = _sequence_sizes(op, gi, h0, gates=3)
    check_size(op, w_hh, "w_hh", (3 * hidden, hidden), "(3 * hidden, hidden)")
    if b_hh is not None:
        check_size(op, b_hh, "b_hh", (3 * hidden,), "(3 * hidden,)")
    d = gi._impl.dtype
    return (OutSpec((steps, batch, hidden), d), OutSpec((batch, hidden), d),
            OutSpec((steps, batch, 4 * hidden), d))


def gru_sequence_backward(op, args):
    grad_output, grad_hn, output, h0, w_hh, workspace = args
    named = [("grad_output", grad_output), ("grad_hn", grad_hn), ("output", output),
             ("h0", h0), ("w_hh", w_hh), ("workspace", workspace)]
    check_devices(op, named)
    _check_dtypes(op, named)
    steps, batch, hidden = _output_sizes(op, output)
    for name, t in (("h0", h0), ("grad_hn", grad_hn)):
        check_size(op, t, name, (batch, hidden), "(batch, hidden) of the output")
    check_size(op, grad_output, "grad_output", (steps, batch, hidden), "the output's shape")
    check_size(op, w_hh, "w_hh", (3 * hidden, hidden), "(3 * hidden, hidden)")
    check_size(op, workspace, "workspace", (steps, batch, 4 * hidden),
               "(steps, batch, 4 * hidden)")
    d = output._impl.dtype
    return (OutSpec((steps, batch, 3 * hidden), d), OutSpec((batch, hidden), d),
            OutSpec((3 * hidden, hidden), d), OutSpec((3 * hidden,), d))
# ---- the torch-level recurrent functions (composite/rnn.py) ---------------------------------
# PyTorch computes each gate as addmm(bias, x, weight.T): a bias of another dtype than its
# weight is refused there (an integer bias too, which TensorPlay's promoting add would
# take).
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def check_bias_dtypes(op, w_ih, w_hh, b_ih, b_hh):
    for name, bias, weight_name, weight in (("b_ih", b_ih, "w_ih", w_ih),
                                            ("b_hh", b_hh, "w_hh", w_hh)):
        if bias is not None and bias._impl.dtype is not weight._impl.dtype:
            raise DTypeError(f"{op}(): argument '{name}' ({bias._impl.dtype.name}) must have "
                             f"the same dtype as '{weight_name}' ({weight._impl.dtype.name})",
                             op=op, arg=name)


def check_cell_weights(op, mode, w_ih, w_hh):
    """PyTorch's cells take the hidden size from w_hh (hidden_size columns) and check both
    weights' first dim against it (empty weights included)."""
    if len(w_ih._impl.sizes) != 2 or len(w_hh._impl.sizes) != 2:
        return            # (linear refuses them, naming them)
    gates, hidden = GATES[mode], w_hh._impl.sizes[1]
    for name, w in (("w_ih", w_ih), ("w_hh", w_hh)):
        if w._impl.sizes[0] != gates * hidden:
            raise ShapeError(f"{op}(): argument '{name}' first dim must be {gates} * "
                             f"hidden_size = {gates * hidden} (hidden_size: w_hh's columns), "
                             f"but got {w._impl.sizes[0]}", op=op, arg=name)


def check_state_dtype(op, input, name, state, promoted=False, onednn=False):
    """A hidden state of another dtype than the input's is refused: PyTorch multiplies it
    by w_hh with addmm/mm, which refuses the mix on every path. `promoted`: the LSTM's cell
    state, which only enters f * c + i * g and is promoted there (PyTorch's addmm paths:
    the cells, float64, float16; a bool or integer one is read as numbers). `onednn`: the
    LSTM runs oneDNN's kernel in PyTorch (`lstm_runs_onednn`), which refuses any state
    dtype but the input's, with an internal error ("get_mkldnn_dtype: unsupported data
    type", "could not create a primitive descriptor")."""
    given, expected = state._impl.dtype, input._impl.dtype
    if given is expected or promoted:
        return
    why = (" (PyTorch's oneDNN LSTM kernel, which runs every non-empty float32 sequence, "
           "takes no other)" if onednn else "")
    raise DTypeError(f"{op}(): argument '{name}' must have the input's dtype "
                     f"({expected.name}), but got {given.name}{why}", op=op, arg=name)


def lstm_runs_onednn(input):
    """PyTorch's CPU LSTM over a non-empty float32 sequence runs oneDNN's kernel, which
    takes integer biases (and refuses float ones of another dtype); other dtypes run
    addmm per step, which refuses both."""
    return input._impl.dtype is dt.float32 and input._impl.numel() != 0
