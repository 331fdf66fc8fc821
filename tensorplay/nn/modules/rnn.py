"""RNN, LSTM and GRU: multi-layer, optionally bidirectional recurrent layers.

Parameters carry PyTorch's names, shapes and order, so state dicts exchange both ways:

    for layer k, for direction ("" then "_reverse"):
        weight_ih_l{k}{sfx}  (G*hidden, in_k)   in_0 = input_size, in_k = D * out_size
        weight_hh_l{k}{sfx}  (G*hidden, out_size)
        bias_ih_l{k}{sfx}, bias_hh_l{k}{sfx}  (G*hidden,)
        weight_hr_l{k}{sfx}  (proj_size, hidden)        LSTM with proj_size > 0 only

with G = 1 (RNN), 4 (LSTM) or 3 (GRU), D = 2 if bidirectional else 1 and out_size =
proj_size or hidden_size. Each layer and direction projects its whole input sequence with
one matmul (x @ W_ih.T + b for every step at once); the loop over time then pays only
`h @ W_hh.T` and the gate arithmetic per step (_rnn_cells.py). The LSTM (without
proj_size) and the GRU run that loop as one autograd node whose forward and backward are
one op each, `_lstm_sequence` / `_gru_sequence` and their backwards (_rnn_fused.py; a NumPy
time loop on the CPU, tp ops elsewhere); the RNN and the projected LSTM record each step's
ops.

A PackedSequence input (tp.nn.utils.rnn) runs the step functions on a batch that shrinks
(forward in time) or grows (backward in time) with the sequences still running, so each
sequence's final state is its own last step's; the output is packed the same way.
"""
from __future__ import annotations

import numbers
import warnings

import tensorplay as tp
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape
from tensorplay.meta import rnn as rnn_rules
from tensorplay.nn.modules._rnn_cells import (
    GRUCell, LSTMCell, RNNCell, RNNCellBase, check_size, gru_step, lstm_step, reset_uniform,
    rnn_relu_step, rnn_tanh_step,
)
from tensorplay.nn.modules._rnn_fused import GRUSequence, LSTMSequence
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def apply_permutation(tensor, permutation, dim=1):
    """`tensor` with its entries along `dim` reordered by `permutation` (how PyTorch's RNNs
    put a PackedSequence's hidden states back in the caller's batch order)."""
    return tensor.index_select(dim, permutation)


def _stack_states(states):
    """The final states of every layer and direction, (layers * D, N, *), in new memory
    as a stack makes it (an in-place change of h_n must not reach a tensor the steps'
    backward saved). One layer in one direction, the common case, is copied by clone:
    stack's composite (a check per tensor, unsqueeze, cat) costs three times as much."""
    return states[0].unsqueeze(0).clone() if len(states) == 1 else tp.stack(states, 0)


class RNNBase(Module):
    """The shared machinery: parameters, argument checks, the layer/direction loop."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        check_size(name, "input_size", input_size)
        check_size(name, "hidden_size", hidden_size)
        check_size(name, "num_layers", num_layers)
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Number) \
                or not 0 <= dropout <= 1:
            raise ValueError(f"{name}(): dropout should be a number in range [0, 1] "
                             f"representing the probability of an element being zeroed, "
                             f"but got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"{name}: dropout option adds dropout after all but last recurrent "
                          f"layer, so non-zero dropout expects num_layers greater than 1, "
                          f"but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=3)
        if isinstance(proj_size, bool) or not isinstance(proj_size, int) or proj_size < 0:
            raise ValueError(f"{name}(): proj_size should be a non-negative integer, "
                             f"but got {proj_size!r}")
        if proj_size and mode != "LSTM":
            raise ValueError(f"{name}(): proj_size argument is only supported for LSTM, "
                             f"not RNN or GRU")
        if proj_size >= hidden_size:
            raise ValueError(f"{name}(): proj_size has to be smaller than hidden_size, "
                             f"but got proj_size={proj_size} and hidden_size={hidden_size}")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size

        directions = 2 if bidirectional else 1
        out_size = proj_size or hidden_size
        gates = _GATES[mode] * hidden_size
        kw = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else out_size * directions
            for direction in range(directions):
                sfx = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = [("weight_ih", (gates, in_size)), ("weight_hh", (gates, out_size))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for base, shape in shapes:
                    setattr(self, base + sfx, Parameter(tp.empty(*shape, **kw)))
                    self._flat_weights_names.append(base + sfx)
        self.reset_parameters()

    def reset_parameters(self):
        reset_uniform(self, self.hidden_size)

    def flatten_parameters(self):
        """A no-op. PyTorch packs the weights into one cuDNN buffer here; we have no
        cuDNN, and our kernels read each weight where it lives."""

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters grouped per layer and direction, as PyTorch's `all_weights`."""
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional
                                                                   else 1))
        flat = self._flat_weights
        return [flat[i:i + per] for i in range(0, len(flat), per)]

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if self.batch_first is not False:
            text += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            text += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            text += f", bidirectional={self.bidirectional}"
        return text

    # ---- forward ---------------------------------------------------------------------------
    def _check_input(self, input):
        name = f"{type(self).__name__}.forward"
        if getattr(input, "_impl", None) is None:
            raise ArgumentError(f"{name}(): argument 'input' must be a Tensor, but got "
                                f"{type(input).__name__}", op=name, arg="input")
        if input.dim() not in (2, 3):
            raise ShapeError(f"{name}(): expected input to be 2-D (unbatched) or 3-D, but got "
                             f"{input.dim()}-D input of shape {fmt_shape(tuple(input.shape))}",
                             op=name, arg="input")
        if input.shape[0] == 0 or (input.dim() == 3 and input.shape[1] == 0):
            raise ShapeError(f"{name}(): expected a non-empty sequence and batch, but got "
                             f"input of shape {fmt_shape(tuple(input.shape))}",
                             op=name, arg="input")
        if input.shape[-1] != self.input_size:
            raise ShapeError(f"{name}(): input.size(-1) must be equal to input_size. "
                             f"Expected {self.input_size}, got {input.shape[-1]}",
                             op=name, arg="input")

    def _states(self, input, batch, state, arg, size, batched):
        """The initial state `arg` as (layers * D, batch, size), zeros when None."""
        name = f"{type(self).__name__}.forward"
        rows = self.num_layers * (2 if self.bidirectional else 1)
        if state is None:
            return tp.zeros(rows, batch, size, dtype=input.dtype, device=input.device)
        if getattr(state, "_impl", None) is None:
            raise ArgumentError(f"{name}(): argument '{arg}' must be a Tensor, but got "
                                f"{type(state).__name__}", op=name, arg=arg)
        expected = (rows, batch, size) if batched else (rows, size)
        if tuple(state.shape) != expected:
            raise ShapeError(f"{name}(): expected hidden size {fmt_shape(expected)} for "
                             f"argument '{arg}', got {fmt_shape(tuple(state.shape))}"
                             + ("" if batched else " (unbatched input needs 2-D states)"),
                             op=name, arg=arg)
        if state.dtype != input.dtype:
            # c_0 is promoted in f * c_0 + i * g off PyTorch's oneDNN kernel: cast when that
            # gives the input's dtype (the fused recurrence takes one dtype); h_0 never is.
            onednn = arg == "c_0" and rnn_rules.lstm_runs_onednn(input)
            promoted = arg == "c_0" and not onednn and \
                tp.promote_types(state.dtype, input.dtype) == input.dtype
            rnn_rules.check_state_dtype(name, input, arg, state, promoted, onednn)
            state = state.to(input.dtype)
        return state if batched else state.unsqueeze(1)

    def _run(self, input, states, batch_sizes=None):
        """input (L, N, in), or a PackedSequence's data (sum of lengths, in) with its
        `batch_sizes` as Python ints; states: a list (one per state kind) of
        (layers * D, N, *). Returns (output (L, N, D * out) or packed (sum, D * out),
        final states in the states' layout)."""
        directions = 2 if self.bidirectional else 1
        finals = [[] for _ in states]
        layer_input = input
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                row = layer * directions + direction
                sfx = f"_l{layer}" + ("_reverse" if direction else "")
                layer_states = [s[row] for s in states]
                if batch_sizes is None:
                    out, last = self._run_direction(layer_input, layer_states, sfx,
                                                    reverse=direction == 1)
                else:
                    out, last = self._run_packed_direction(layer_input, batch_sizes,
                                                           layer_states, sfx,
                                                           reverse=direction == 1)
                outputs.append(out)
                for kind, value in zip(finals, last):
                    kind.append(value)
            layer_input = outputs[0] if directions == 1 else tp.cat(outputs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_input = tp.nn.functional.dropout(layer_input, self.dropout, True)
        return layer_input, [_stack_states(kind) for kind in finals]

    def _projection(self, input, sfx):
        """x @ W_ih.T + b for every step at once (RNN and LSTM fold b_hh in: the two biases
        are only ever added together; the GRU's n gate needs b_hh apart)."""
        b_ih = getattr(self, "bias_ih" + sfx) if self.bias else None
        if b_ih is not None and self.mode != "GRU":
            b_ih = b_ih + getattr(self, "bias_hh" + sfx)
        return tp.linear(input, getattr(self, "weight_ih" + sfx), b_ih)

    def _step(self, sfx):
        """This layer and direction's step as `step(gi_t, states) -> states` (h first),
        over the step functions of _rnn_cells.py."""
        w_hh_t = getattr(self, "weight_hh" + sfx).t()
        if self.mode == "LSTM":
            w_hr = getattr(self, "weight_hr" + sfx) if self.proj_size else None
            w_hr_t = None if w_hr is None else w_hr.t()
            return lambda gi, states: lstm_step(gi, states[0], states[1], w_hh_t, w_hr_t)
        if self.mode == "GRU":
            b_hh = getattr(self, "bias_hh" + sfx) if self.bias else None
            return lambda gi, states: (gru_step(gi, states[0], w_hh_t, b_hh),)
        step = rnn_tanh_step if self.mode == "RNN_TANH" else rnn_relu_step
        return lambda gi, states: (step(gi, states[0], w_hh_t),)

    def _run_direction(self, input, states, sfx, reverse):
        """One layer, one direction over the whole sequence; returns (output, states)."""
        projected = self._projection(input, sfx)
        if self.mode == "LSTM" and not self.proj_size:
            # The whole recurrence as one autograd node (_rnn_fused.py), always run forward
            # in time: the reverse direction flips its input and output around it.
            if reverse:
                projected = projected.flip([0])
            out, h, c, _ = LSTMSequence.apply(projected, states[0], states[1],
                                              getattr(self, "weight_hh" + sfx))
            return (out.flip([0]) if reverse else out), (h, c)
        if self.mode == "GRU":
            # Likewise one autograd node (GRUSequence); b_hh goes in apart from gi.
            if reverse:
                projected = projected.flip([0])
            b_hh = getattr(self, "bias_hh" + sfx) if self.bias else None
            out, h, _ = GRUSequence.apply(projected, states[0],
                                          getattr(self, "weight_hh" + sfx), b_hh)
            return (out.flip([0]) if reverse else out), (h,)
        step = self._step(sfx)
        steps = projected.unbind(0)
        order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
        outs = [None] * len(steps)
        for t in order:
            states = step(steps[t], states)
            outs[t] = states[0]
        return tp.stack(outs, 0), tuple(states)

    def _run_packed_direction(self, data, batch_sizes, states, sfx, reverse):
        """One layer, one direction over packed data: step t runs on the first
        batch_sizes[t] sequences only (longest first), so each sequence's final state is
        the one of its own last step, as PyTorch's packed RNNs. Forward in time the batch
        shrinks: the rows that leave at step t are final there. Backward in time it grows:
        a sequence joins at its last step with its initial state. Returns (packed
        output, final states (N, *) in the packed batch order)."""
        step = self._step(sfx)
        steps = self._projection(data, sfx).split(batch_sizes, 0)
        outs = [None] * len(steps)
        if reverse:
            running = [s[:batch_sizes[-1]] for s in states]
            for t in range(len(steps) - 1, -1, -1):
                joined = running[0].shape[0]
                if batch_sizes[t] > joined:
                    running = [tp.cat([r, s[joined:batch_sizes[t]]], 0)
                               for r, s in zip(running, states)]
                running = step(steps[t], running)
                outs[t] = running[0]
            return tp.cat(outs, 0), tuple(running)
        running, ended = list(states), []
        for t, gi in enumerate(steps):
            if batch_sizes[t] < running[0].shape[0]:
                ended.append([r[batch_sizes[t]:] for r in running])
                running = [r[:batch_sizes[t]] for r in running]
            running = step(gi, running)
            outs[t] = running[0]
        # The rows that ended last are the first ones left: final rows in batch order.
        finals = tuple(tp.cat([r] + [e[k] for e in reversed(ended)], 0)
                       for k, r in enumerate(running))
        return tp.cat(outs, 0), finals

    def _forward(self, input, states):
        """Shared by the three forwards: layout changes around `_run`. `states` lists
        (arg name, tensor or None, size) per state kind."""
        # Imported here: tp.nn.utils builds on the modules (its parametrizations are
        # Modules), so the modules may not import it at module level.
        from tensorplay.nn.utils.rnn import PackedSequence
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, states)
        self._check_input(input)
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        full = [self._states(input, input.shape[1], value, arg, size, batched)
                for arg, value, size in states]
        output, finals = self._run(input, full)
        if not batched:
            return output.squeeze(1), [f.squeeze(1) for f in finals]
        if self.batch_first:
            output = output.transpose(0, 1)
        return output, finals

    def _forward_packed(self, packed, states):
        """A PackedSequence in, a PackedSequence out (batch_first plays no part: packed
        data has no batch dimension). The states the caller gives and gets back are in
        the caller's batch order; the loop runs in the packed (sorted) order."""
        data = packed.data
        name = f"{type(self).__name__}.forward"
        if data.dim() != 2 or data.shape[-1] != self.input_size:
            raise ShapeError(f"{name}(): a PackedSequence's data must be 2-D (steps, "
                             f"input_size={self.input_size}), but got shape "
                             f"{fmt_shape(tuple(data.shape))}", op=name, arg="input")
        batch_sizes = [int(n) for n in packed.batch_sizes.tolist()]
        full = []
        for arg, value, size in states:
            state = self._states(data, batch_sizes[0], value, arg, size, True)
            if value is not None and packed.sorted_indices is not None:
                state = apply_permutation(state, packed.sorted_indices)
            full.append(state)
        output, finals = self._run(data, full, batch_sizes)
        if packed.unsorted_indices is not None:
            finals = [apply_permutation(f, packed.unsorted_indices) for f in finals]
        return type(packed)(output, packed.batch_sizes, packed.sorted_indices,
                            packed.unsorted_indices), finals


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t @ W_ih.T + b_ih + h_{t-1} @ W_hh.T + b_hh) (or relu).

    Input (L, N, input_size), (N, L, input_size) with batch_first, or unbatched
    (L, input_size); hx (num_layers * D, N, hidden_size). Returns (output, h_n)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None,
                 dtype=None):
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if nonlinearity not in modes:
            raise ValueError(f"RNN(): unknown nonlinearity {nonlinearity!r}; expected 'tanh' "
                             f"or 'relu'")
        self.nonlinearity = nonlinearity
        super().__init__(modes[nonlinearity], input_size, hidden_size, num_layers, bias,
                         batch_first, dropout, bidirectional, 0, device, dtype)

    def extra_repr(self):
        text = super().extra_repr()
        if self.nonlinearity != "tanh":
            text += f", nonlinearity={self.nonlinearity!r}"
        return text

    def forward(self, input, hx=None):
        output, (h_n,) = self._forward(input, [("hx", hx, self.hidden_size)])
        return output, h_n


class LSTM(RNNBase):
    """Long short-term memory, gates [i | f | g | o]; with proj_size > 0 the hidden state is
    projected by weight_hr to proj_size features (h_0 and the output then have proj_size).

    Returns (output, (h_n, c_n))."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)

    def forward(self, input, hx=None):
        if hx is None:
            hx = (None, None)
        elif not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise ArgumentError(f"LSTM.forward(): argument 'hx' must be a pair (h_0, c_0), "
                                f"but got {type(hx).__name__}", op="LSTM.forward", arg="hx")
        output, (h_n, c_n) = self._forward(
            input, [("h_0", hx[0], self.proj_size or self.hidden_size),
                    ("c_0", hx[1], self.hidden_size)])
        return output, (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit, gates [r | z | n], n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).

    Returns (output, h_n)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype)

    def forward(self, input, hx=None):
        output, (h_n,) = self._forward(input, [("hx", hx, self.hidden_size)])
        return output, h_n
