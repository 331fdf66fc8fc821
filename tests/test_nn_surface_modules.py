"""The thin nn modules over existing functional ops (padding, pixel/channel shuffle,
fold/unfold, distances, LP pooling, max unpooling), against PyTorch: repr, forward and
the gradient of the input."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp

RNG = np.random.default_rng(0)


def _data(shape):
    return RNG.standard_normal(shape).astype(np.float32)


CASES = [
    ("ConstantPad1d", ((1, 2), 3.5), [(2, 3, 5)]),
    ("ConstantPad2d", (1, -1.0), [(2, 3, 4, 5)]),
    ("ConstantPad3d", ((1, 0, 2, 1, 0, 1), 0.5), [(1, 2, 3, 4, 5)]),
    ("ZeroPad1d", (2,), [(3, 5)]),
    ("ZeroPad2d", ((1, 2, 0, 1),), [(2, 3, 4, 5)]),
    ("ZeroPad3d", (1,), [(1, 2, 3, 4, 5)]),
    ("ReflectionPad1d", (2,), [(2, 3, 5)]),
    ("ReflectionPad2d", ((1, 2, 2, 1),), [(2, 3, 4, 5)]),
    ("ReflectionPad3d", (1,), [(1, 2, 3, 4, 5)]),
    ("ReplicationPad1d", ((3, 1),), [(2, 3, 5)]),
    ("ReplicationPad2d", (2,), [(3, 4, 5)]),
    ("ReplicationPad3d", ((1, 0, 0, 1, 2, 0),), [(1, 2, 3, 4, 5)]),
    ("CircularPad1d", (2,), [(2, 3, 5)]),
    ("CircularPad2d", ((1, 2, 0, 1),), [(2, 3, 4, 5)]),
    ("CircularPad3d", (1,), [(1, 2, 3, 4, 5)]),
    ("PixelShuffle", (2,), [(2, 8, 3, 4)]),
    ("PixelUnshuffle", (2,), [(2, 2, 4, 6)]),
    ("ChannelShuffle", (3,), [(2, 6, 2, 2)]),
    ("Fold", ((4, 5), 2), [(2, 12, 12)]),
    ("Unfold", ((2, 3),), [(2, 3, 4, 5)]),
    ("Unfold", (2, 1, 1, 2), [(1, 2, 5, 5)]),
    ("PairwiseDistance", (), [(4, 6), (4, 6)]),
    ("PairwiseDistance", (1.0, 1e-6, True), [(4, 6), (1, 6)]),
    ("CosineSimilarity", (), [(4, 6), (4, 6)]),
    ("CosineSimilarity", (0, 1e-6), [(4, 6), (4, 6)]),
    ("LPPool1d", (2, 3), [(2, 3, 7)]),
    ("LPPool2d", (1.5, (2, 3), 1), [(2, 3, 5, 6)]),
    ("LPPool3d", (2, (2, 1, 2)), [(1, 2, 4, 3, 5)]),
    ("LPPool3d", (3, 2, 1, True), [(2, 3, 4, 4)]),                  # unbatched
]


@pytest.mark.parametrize("name,args,shapes", CASES, ids=[f"{c[0]}{c[1]}" for c in CASES])
def test_module_matches_torch(name, args, shapes):
    ours, theirs = getattr(tp.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    data = [_data(s) for s in shapes]
    if name.startswith("LPPool"):
        data = [np.abs(d) + 0.1 for d in data]   # smooth p-norms
    xs = [tp.tensor(d, requires_grad=True) for d in data]
    txs = [torch.tensor(d, requires_grad=True) for d in data]
    out, t_out = ours(*xs), theirs(*txs)
    np.testing.assert_allclose(np.asarray(out.detach()), t_out.detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    weights = _data(tuple(t_out.shape))
    (out * tp.tensor(weights)).sum().backward()
    (t_out * torch.tensor(weights)).sum().backward()
    for x, tx in zip(xs, txs):
        np.testing.assert_allclose(np.asarray(x.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_inverts_max_pool_as_torch(dims):
    shape = {1: (2, 3, 8), 2: (2, 3, 4, 6), 3: (2, 2, 4, 2, 6)}[dims]
    data = _data(shape)
    pool = getattr(tp.nn, f"MaxPool{dims}d")(2, return_indices=True)
    t_pool = getattr(torch.nn, f"MaxPool{dims}d")(2, return_indices=True)
    unpool, t_unpool = getattr(tp.nn, f"MaxUnpool{dims}d")(2), \
        getattr(torch.nn, f"MaxUnpool{dims}d")(2)
    assert repr(unpool) == repr(t_unpool)
    out, idx = pool(tp.tensor(data))
    t_out, t_idx = t_pool(torch.tensor(data))
    np.testing.assert_allclose(np.asarray(unpool(out, idx)), t_unpool(t_out, t_idx).numpy())
    size = list(shape[:-1]) + [shape[-1] + 1]
    np.testing.assert_allclose(np.asarray(unpool(out, idx, output_size=size)),
                               t_unpool(t_out, t_idx, output_size=size).numpy())


def test_circular_pad_checks_the_input_dims_as_torch():
    for m in (tp, torch):
        with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
            m.nn.CircularPad2d(1)(m.ones(2, 3))
