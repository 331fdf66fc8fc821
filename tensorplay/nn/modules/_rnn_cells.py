"""One time step of the Elman RNN, the LSTM and the GRU, and the cell modules built on them.

Each step function takes the *input projection* of the step already computed,
`gi = x_t @ W_ih.T + b_ih` (RNN and LSTM fold `b_hh` into it as well, since the two biases
are only ever added together), so that a sequence layer (rnn.py) projects the whole input
sequence with one matmul and pays only `h @ W_hh.T` per step. The cells call the same
functions with a one-step projection, so cells and layers share one definition of the math.

Gate order is PyTorch's, so weights exchange with it unchanged:

    LSTM  rows of W_ih / W_hh:  [i | f | g | o]   (input, forget, cell, output)
    GRU   rows of W_ih / W_hh:  [r | z | n]        (reset, update, new)
"""
from __future__ import annotations

import math

import tensorplay as tp
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


# ---- the step functions -------------------------------------------------------------------
def rnn_tanh_step(gi, h, w_hh_t):
    """h' = tanh(gi + h @ W_hh.T), with gi = x @ W_ih.T + b_ih + b_hh."""
    return tp.tanh(tp.addmm(gi, h, w_hh_t))


def rnn_relu_step(gi, h, w_hh_t):
    """h' = relu(gi + h @ W_hh.T)."""
    return tp.relu(tp.addmm(gi, h, w_hh_t))


def lstm_step(gi, h, c, w_hh_t, w_hr_t=None):
    """(h', c') of one LSTM step; gi holds x @ W_ih.T + b_ih + b_hh, rows [i | f | g | o].

        i, f, o = sigmoid(gates[i]), sigmoid(gates[f]), sigmoid(gates[o])
        g = tanh(gates[g])
        c' = f * c + i * g
        h' = o * tanh(c')            (then h' @ W_hr.T when the LSTM has a projection)

    NOTE: one sigmoid over all four gates (the g quarter is computed and never used) costs
    less than three sigmoids on slices: per-op overhead, not arithmetic, dominates here.
    """
    hidden = c.shape[-1]
    gates = tp.addmm(gi, h, w_hh_t)
    i, f, _, o = tp.sigmoid(gates).chunk(4, 1)
    g = tp.tanh(gates.narrow(1, 2 * hidden, hidden))
    c = tp.addcmul(f * c, i, g)
    h = o * tp.tanh(c)
    if w_hr_t is not None:
        h = h.mm(w_hr_t)
    return h, c


def gru_step(gi, h, w_hh_t, b_hh):
    """h' of one GRU step; gi = x @ W_ih.T + b_ih (b_hh kept apart: the n gate needs it).

        r, z = sigmoid(gi[r, z] + gh[r, z])      with gh = h @ W_hh.T + b_hh
        n = tanh(gi[n] + r * gh[n])              (r multiplies W_hn h + b_hn, as in PyTorch)
        h' = (1 - z) * n + z * h  =  n + z * (h - n)
    """
    hidden = h.shape[-1]
    gh = h.mm(w_hh_t) if b_hh is None else tp.addmm(b_hh, h, w_hh_t)
    r, z = tp.sigmoid(gi.narrow(1, 0, 2 * hidden) + gh.narrow(1, 0, 2 * hidden)).chunk(2, 1)
    n = tp.tanh(tp.addcmul(gi.narrow(1, 2 * hidden, hidden), r,
                           gh.narrow(1, 2 * hidden, hidden)))
    return tp.addcmul(n, z, h - n)


# ---- argument checks shared with rnn.py ----------------------------------------------------
def check_size(cls_name, arg, value, minimum=1):
    """A layer size: an int of at least `minimum`. RNN, LSTM and GRU need 1 (PyTorch's
    RNNBase raises ValueError under it); the cells take 0, as PyTorch's, whose parameters
    are then empty, and refuse only a negative size (a RuntimeError there, from
    torch.empty). ShapeError is both."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"{cls_name}(): argument '{arg}' must be int, but got "
                            f"{type(value).__name__}", op=cls_name, arg=arg)
    if value < minimum:
        bound = "greater than zero" if minimum else "non-negative"
        raise ShapeError(f"{cls_name}(): argument '{arg}' must be {bound}, but got {value}",
                         op=cls_name, arg=arg)


def reset_uniform(module, hidden_size):
    """PyTorch's RNN init: every parameter ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    with tp.no_grad():
        for weight in module.parameters():
            weight.uniform_(-bound, bound)


def _shape(t):
    return fmt_shape(tuple(t.shape))


# ---- the cells ---------------------------------------------------------------------------
class RNNCellBase(Module):
    """Parameters weight_ih (G*hidden, input), weight_hh (G*hidden, hidden), bias_ih,
    bias_hh (G*hidden,), G = number of gates; input (N, input) or unbatched (input,)."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        check_size(name, "input_size", input_size, minimum=0)
        check_size(name, "hidden_size", hidden_size, minimum=0)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gates = num_chunks * hidden_size
        kw = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(tp.empty(gates, input_size, **kw))
        self.weight_hh = Parameter(tp.empty(gates, hidden_size, **kw))
        if bias:
            self.bias_ih = Parameter(tp.empty(gates, **kw))
            self.bias_hh = Parameter(tp.empty(gates, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        reset_uniform(self, self.hidden_size)

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity!r}"
        return text

    def _prepare(self, input, states):
        """Check the input and states; return (input, states, batched) with a batch dim."""
        name = f"{type(self).__name__}.forward"
        if input.dim() not in (1, 2):
            raise ShapeError(f"{name}(): expected input to be 1-D (unbatched) or 2-D "
                             f"(batch, input_size), but got shape {_shape(input)}",
                             op=name, arg="input")
        if input.shape[-1] != self.input_size:
            raise ShapeError(f"{name}(): input has inconsistent input_size: got "
                             f"{input.shape[-1]} expected {self.input_size}",
                             op=name, arg="input")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        batch = input.shape[0]
        out = []
        for arg, state in states:
            if state is None:
                state = tp.zeros(batch, self.hidden_size, dtype=input.dtype,
                                 device=input.device)
            else:
                expected = (batch, self.hidden_size) if batched else (self.hidden_size,)
                if tuple(state.shape) != expected:
                    raise ShapeError(f"{name}(): expected {arg} of shape "
                                     f"{fmt_shape(expected)}, but got {_shape(state)}",
                                     op=name, arg=arg)
                if not batched:
                    state = state.unsqueeze(0)
            out.append(state)
        return input, out, batched

    def _projection(self, input, fold_bias_hh):
        bias = self.bias_ih
        if bias is not None and fold_bias_hh:
            bias = bias + self.bias_hh
        return tp.linear(input, self.weight_ih, bias)


class RNNCell(RNNCellBase):
    """h' = tanh(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell(): unknown nonlinearity {nonlinearity!r}; "
                             f"expected 'tanh' or 'relu'")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input, hx=None):
        input, (h,), batched = self._prepare(input, [("hx", hx)])
        step = rnn_tanh_step if self.nonlinearity == "tanh" else rnn_relu_step
        h = step(self._projection(input, True), h, self.weight_hh.t())
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """(h', c') of one LSTM step; hx is the pair (h, c) or None for zeros."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        if hx is None:
            hx = (None, None)
        elif not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise ArgumentError(f"LSTMCell.forward(): argument 'hx' must be a pair (h_0, c_0), "
                                f"but got {type(hx).__name__}", op="LSTMCell.forward",
                                arg="hx")
        input, (h, c), batched = self._prepare(input, [("h_0", hx[0]), ("c_0", hx[1])])
        h, c = lstm_step(self._projection(input, True), h, c, self.weight_hh.t())
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """h' of one GRU step (PyTorch's formulation: r gates W_hn h + b_hn)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        input, (h,), batched = self._prepare(input, [("hx", hx)])
        h = gru_step(self._projection(input, False), h, self.weight_hh.t(), self.bias_hh)
        return h if batched else h.squeeze(0)
