"""`tp.nn.utils.rnn`: batches of sequences of different lengths, as PyTorch's.

A padded batch (T, B, *) wastes the steps after each sequence's end, and an RNN run over
it would carry its hidden state through the padding. A *packed* sequence keeps only the
real steps, time step by time step, the sequences sorted longest first:

    sequences  a b c      packed data   a x b c        (T = 3 steps)
               x          batch_sizes   2 1 1          (how many sequences reach step t)

so step t's rows are a contiguous slice of `data` and the sequences still running are
always its first batch_sizes[t] rows: an RNN over a PackedSequence (nn/modules/rnn.py)
shrinks its batch as sequences end. `sorted_indices` remembers the sort (None when the
caller's batch was already sorted), `unsorted_indices` undoes it.

Everything here is composed of differentiable tp ops (slices, cat, index_select), so the
gradient flows from the packed data back into the padded input.
"""
from __future__ import annotations

from collections import namedtuple

import tensorplay as tp
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


def _bind(optional, fn):
    return None if optional is None else fn(optional)


class PackedSequence(namedtuple("PackedSequence_",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """data (sum of lengths, *), batch_sizes (T,) int64 on the CPU, sorted_indices and
    unsorted_indices (B,) int64 on data's device, or None. Made by pack_padded_sequence /
    pack_sequence, not by hand. `to`, `cuda`, `cpu`, `double`... convert `data` (and move
    the indices with it); batch_sizes stays on the CPU: the RNN loops read it in Python."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:       # PackedSequence((data, batch_sizes), ...)
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should "
                "never be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn.")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """`data.to(*args, **kwargs)`; self when that changes nothing."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        non_blocking = kwargs.get("non_blocking", False)

        def move(t):
            return t.to(data.device, non_blocking=non_blocking)

        return type(self)(data, self.batch_sizes, _bind(self.sorted_indices, move),
                          _bind(self.unsorted_indices, move))

    def cuda(self, device=None, non_blocking=False):
        if isinstance(device, int):
            device = f"cuda:{device}"
        return self.to(device="cuda" if device is None else device,
                       non_blocking=non_blocking)

    def cpu(self):
        return self.to(device="cpu")

    def pin_memory(self):
        return type(self)(self.data.pin_memory(), self.batch_sizes,
                          _bind(self.sorted_indices, lambda t: t.pin_memory()),
                          _bind(self.unsorted_indices, lambda t: t.pin_memory()))

    def double(self):
        return self.to(dtype=tp.float64)

    def float(self):
        return self.to(dtype=tp.float32)

    def half(self):
        return self.to(dtype=tp.float16)

    def long(self):
        return self.to(dtype=tp.int64)

    def int(self):
        return self.to(dtype=tp.int32)

    def short(self):
        return self.to(dtype=tp.int16)

    def char(self):
        return self.to(dtype=tp.int8)

    def byte(self):
        return self.to(dtype=tp.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return self.data.is_pinned()


def invert_permutation(permutation):
    """The permutation p' with p'[p[i]] = i (None for None)."""
    if permutation is None:
        return None
    output = tp.empty_like(permutation)
    output.scatter_(0, permutation,
                    tp.arange(permutation.numel(), device=permutation.device))
    return output


def _lengths_list(lengths):
    """`lengths` (a list or a 1-D int tensor) as Python ints, checked as PyTorch does."""
    if getattr(lengths, "_impl", None) is not None:
        if lengths.dim() != 1:
            raise ShapeError(f"pack_padded_sequence(): 'lengths' argument should be a 1D "
                             f"CPU int64 tensor, but got {lengths.dim()}D tensor",
                             op="pack_padded_sequence", arg="lengths")
        return [int(n) for n in lengths.tolist()]
    return [int(n) for n in lengths]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) (or (B, T, *) with batch_first) whose sequence b has
    lengths[b] steps. With enforce_sorted=True the lengths must already be decreasing;
    otherwise the batch is sorted here and the PackedSequence remembers how."""
    op = "pack_padded_sequence"
    lengths = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    if len(lengths) != input.shape[batch_dim]:
        raise ShapeError(f"{op}(): Expected `len(lengths)` to be equal to batch_size, but "
                         f"got {len(lengths)} (batch_size={input.shape[batch_dim]})",
                         op=op, arg="lengths")
    if enforce_sorted:
        sorted_indices = None
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise ArgumentError(
                f"{op}(): `lengths` array must be sorted in decreasing order when "
                f"`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                f"pack_padded_sequence and/or pack_sequence to sidestep this requirement if "
                f"you do not need ONNX exportability.", op=op, arg="lengths")
    else:
        # A stable sort, longest first (ties keep the caller's order, as PyTorch's CPU sort).
        order = sorted(range(len(lengths)), key=lambda b: -lengths[b])
        lengths = [lengths[b] for b in order]
        sorted_indices = tp.tensor(order, dtype=tp.int64, device=input.device)
        input = input.index_select(batch_dim, sorted_indices)
    if lengths and lengths[-1] <= 0:
        raise ShapeError(f"{op}(): Length of all samples has to be greater than 0, but found "
                         f"an element in 'lengths' that is <= 0", op=op, arg="lengths")
    steps = input.shape[1 if batch_first else 0]
    if lengths and lengths[0] > steps:
        raise ShapeError(f"{op}(): the longest length {lengths[0]} is more than the "
                         f"{steps} steps of the input of shape "
                         f"{fmt_shape(tuple(input.shape))}", op=op, arg="lengths")
    if batch_first:
        input = input.transpose(0, 1)
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0])]
    # Step t's rows are the first batch_sizes[t] sequences (the sort puts them there).
    data = tp.cat([input[t, :bs] for t, bs in enumerate(batch_sizes)], 0)
    return PackedSequence(data, tp.tensor(batch_sizes, dtype=tp.int64), sorted_indices)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded (T, B, *) or (B, T, *), lengths (B,)
    int64), in the caller's original batch order. total_length pads to that many steps
    (for DataParallel-style gathering); it must be at least the longest length."""
    batch_sizes = [int(n) for n in sequence.batch_sizes.tolist()]
    max_seq_length = len(batch_sizes)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{max_seq_length}")
        max_seq_length = total_length
    data = sequence.data
    batch = batch_sizes[0]
    feature = tuple(data.shape[1:])
    steps, offset = [], 0
    for bs in batch_sizes:
        rows = data[offset:offset + bs]
        offset += bs
        if bs < batch:
            rows = tp.cat([rows, data.new_full((batch - bs,) + feature, padding_value)], 0)
        steps.append(rows)
    steps += [data.new_full((batch,) + feature, padding_value)] * (max_seq_length
                                                                   - len(batch_sizes))
    padded = tp.stack(steps, 0)
    if batch_first:
        padded = padded.transpose(0, 1)
    lengths = tp.tensor([sum(1 for bs in batch_sizes if bs > b) for b in range(batch)],
                        dtype=tp.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.cpu()]
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences (L_i, *) into (T, B, *) (or (B, T, *)), T the longest L_i, the
    shorter ones padded with padding_value on `padding_side` ('right' or 'left')."""
    op = "pad_sequence"
    if getattr(sequences, "_impl", None) is not None:
        sequences = sequences.unbind(0)
    elif not hasattr(sequences, "__iter__"):
        raise ArgumentError(f"pad_sequence: Expected iterable for input sequences, but got "
                            f"arg of type: {type(sequences)}", op=op, arg="sequences")
    sequences = tuple(sequences)
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if not sequences:
        raise ArgumentError(f"{op}(): received an empty list of sequences", op=op,
                            arg="sequences")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            fill = s.new_full((missing,) + tuple(s.shape[1:]), padding_value)
            s = tp.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return tp.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences a padded batch holds: sequence b is its first lengths[b]
    steps."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(n)] for seq, n in zip(padded_sequences, _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences (L_i, *); with enforce_sorted they must be longest first."""
    lengths = tp.tensor([s.shape[0] for s in sequences], dtype=tp.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences a PackedSequence holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
