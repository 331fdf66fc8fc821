"""tp.nn.utils.rnn (PackedSequence, pack/pad helpers) and RNN / LSTM / GRU over packed
input, against torch.nn.utils.rnn and torch's modules with the same weights: packed data,
outputs, final states (each sequence's own last step) and every gradient."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.utils.rnn as trnn

import tensorplay as tp
import tensorplay.nn.utils.rnn as rnn
from tensorplay.errors import ArgumentError, ShapeError

LENGTHS = [3, 5, 1, 4]          # unsorted, so pack sorts and unsorts


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol)


def pair(shape, seed=0):
    arr = np.random.default_rng(seed).standard_normal(shape)
    return tp.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)


def test_pack_and_pad_match_torch_both_ways():
    x, xt = pair((5, 4, 2))
    p = rnn.pack_padded_sequence(x, LENGTHS, enforce_sorted=False)
    pt = trnn.pack_padded_sequence(xt, LENGTHS, enforce_sorted=False)
    assert isinstance(p, tuple) and p._fields == pt._fields
    close(p.data, pt.data)
    assert p.batch_sizes.tolist() == pt.batch_sizes.tolist()
    assert p.batch_sizes.dtype == tp.int64
    assert p.sorted_indices.tolist() == pt.sorted_indices.tolist()
    assert p.unsorted_indices.tolist() == pt.unsorted_indices.tolist()
    padded, lengths = rnn.pad_packed_sequence(p, batch_first=True, padding_value=-1.0,
                                              total_length=6)
    padded_t, lengths_t = trnn.pad_packed_sequence(pt, batch_first=True, padding_value=-1.0,
                                                   total_length=6)
    close(padded, padded_t)
    assert lengths.tolist() == lengths_t.tolist() == LENGTHS
    weights = np.random.default_rng(3).standard_normal(tuple(padded.shape))
    (padded * tp.tensor(weights)).sum().backward()
    (padded_t * torch.tensor(weights)).sum().backward()
    close(x.grad, xt.grad)       # zero where the input was padding


def test_pad_sequence_sides_and_unpad():
    seqs = [pair((n, 3), seed=n) for n in (2, 4, 1)]
    for batch_first in (False, True):
        for side in ("right", "left"):
            ours = rnn.pad_sequence([s[0] for s in seqs], batch_first, 0.5, side)
            theirs = trnn.pad_sequence([s[1] for s in seqs], batch_first, 0.5, side)
            close(ours, theirs)
    padded = rnn.pad_sequence([s[0] for s in seqs], batch_first=True)
    for a, (b, _) in zip(rnn.unpad_sequence(padded, tp.tensor([2, 4, 1]), batch_first=True),
                         seqs):
        close(a, b)
    with pytest.raises(ValueError, match="padding_side"):
        rnn.pad_sequence([seqs[0][0]], padding_side="middle")


def test_pack_sequence_unpack_sequence_and_invert_permutation():
    seqs = [pair((n, 2), seed=n)[0] for n in (4, 2, 3)]
    with pytest.raises(ArgumentError, match="enforce_sorted"):
        rnn.pack_sequence(seqs)
    packed = rnn.pack_sequence(seqs, enforce_sorted=False)
    packed_t = trnn.pack_sequence([torch.tensor(s.detach().numpy()) for s in seqs],
                                  enforce_sorted=False)
    close(packed.data, packed_t.data)
    for a, b in zip(rnn.unpack_sequence(packed), seqs):
        close(a, b)
    perm = tp.tensor([2, 0, 3, 1])
    assert rnn.invert_permutation(perm).tolist() == \
        trnn.invert_permutation(torch.tensor([2, 0, 3, 1])).tolist()
    assert rnn.invert_permutation(None) is None


def test_packed_sequence_conversions_and_errors():
    x, _ = pair((3, 2, 2))
    p = rnn.pack_padded_sequence(x, [3, 2])
    assert p.sorted_indices is None and p.unsorted_indices is None
    assert p.to(tp.float64) is p
    q = p.float()
    assert q.data.dtype == tp.float32 and q.batch_sizes is p.batch_sizes
    assert p.cpu() is p and not p.is_cuda
    assert rnn.PackedSequence((p.data, p.batch_sizes)).batch_sizes is p.batch_sizes
    with pytest.raises(ShapeError, match="greater than 0"):
        rnn.pack_padded_sequence(x, [3, 0])
    with pytest.raises(ShapeError, match="batch_size"):
        rnn.pack_padded_sequence(x, [3, 2, 1])
    with pytest.raises(ValueError, match="total_length=2"):
        rnn.pad_packed_sequence(p, total_length=2)


CASES = [("RNN", {}), ("GRU", {}), ("LSTM", {}), ("LSTM", {"proj_size": 2})]


@pytest.mark.parametrize("batch_first", [False, True], ids=["time_first", "batch_first"])
@pytest.mark.parametrize("cls, extra", CASES, ids=[f"{c}{e}" for c, e in CASES])
def test_rnn_over_packed_input_matches_torch(cls, extra, batch_first):
    """2 layers, bidirectional, unsorted lengths, given initial states: the packed output,
    the final states (at each sequence's own end) and all gradients as PyTorch's."""
    torch.manual_seed(0)
    kwargs = dict(num_layers=2, bidirectional=True, batch_first=batch_first, **extra)
    tm = getattr(torch.nn, cls)(3, 4, **kwargs).double()
    m = getattr(tp.nn, cls)(3, 4, dtype=tp.float64, **kwargs)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    shape = (4, 5, 3) if batch_first else (5, 4, 3)
    x, xt = pair(shape)
    h_size = extra.get("proj_size") or 4
    h0, h0t = pair((4, 4, h_size), seed=1)
    states, states_t = (h0, h0t)
    if cls == "LSTM":
        c0, c0t = pair((4, 4, 4), seed=2)
        states, states_t = (h0, c0), (h0t, c0t)
    out, hn = m(rnn.pack_padded_sequence(x, LENGTHS, batch_first, enforce_sorted=False),
                states)
    out_t, hn_t = tm(trnn.pack_padded_sequence(xt, LENGTHS, batch_first,
                                               enforce_sorted=False), states_t)
    assert isinstance(out, rnn.PackedSequence)
    assert out.batch_sizes.tolist() == out_t.batch_sizes.tolist()
    close(out.data, out_t.data)
    finals = list(hn) if cls == "LSTM" else [hn]
    finals_t = list(hn_t) if cls == "LSTM" else [hn_t]
    for a, b in zip(finals, finals_t):
        close(a, b)
    rng = np.random.default_rng(4)
    loss, loss_t = 0, 0
    for a, b in zip([out.data] + finals, [out_t.data] + finals_t):
        w = rng.standard_normal(tuple(a.shape))
        loss = loss + (a * tp.tensor(w)).sum()
        loss_t = loss_t + (b * torch.tensor(w)).sum()
    loss.backward()
    loss_t.backward()
    leaves = [x, h0] + ([c0] if cls == "LSTM" else [])
    leaves_t = [xt, h0t] + ([c0t] if cls == "LSTM" else [])
    for a, b in zip(leaves, leaves_t):
        close(a.grad, b.grad)
    for (name, p), (_, pt) in zip(m.named_parameters(), tm.named_parameters()):
        close(p.grad, pt.grad)


def test_packed_input_without_states_and_sorted_batch():
    torch.manual_seed(1)
    tm = torch.nn.GRU(2, 3).double()
    m = tp.nn.GRU(2, 3, dtype=tp.float64)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    x, xt = pair((4, 3, 2))
    out, h = m(rnn.pack_padded_sequence(x, [4, 2, 1]))
    out_t, h_t = tm(trnn.pack_padded_sequence(xt, [4, 2, 1]))
    close(out.data, out_t.data)
    close(h, h_t)
    padded, _ = rnn.pad_packed_sequence(out)
    padded_t, _ = trnn.pad_packed_sequence(out_t)
    close(padded, padded_t)
