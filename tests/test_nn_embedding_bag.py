"""F.embedding_bag and nn.EmbeddingBag against PyTorch (2-D and 1-D inputs, every mode,
per-sample weights, padding_idx, max_norm), and scale_grad_by_freq against embedding's."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tensorplay as tp
import tensorplay.nn as nn
import tensorplay.nn.functional as F
from tensorplay.errors import ArgumentError, ShapeError

RNG = np.random.default_rng(7)


def _weights(shape=(7, 3)):
    a = RNG.standard_normal(shape)
    return tp.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


CASES = [
    dict(input=[[1, 2, 4], [5, 4, 3]], mode="sum"),
    dict(input=[[1, 2, 4], [5, 4, 3]], mode="max", padding_idx=4),
    dict(input=[1, 2, 4, 5, 4, 3, 6], offsets=[0, 2, 2, 5], mode="mean", padding_idx=-1),
    dict(input=[1, 2, 4, 5, 4, 3], offsets=[0, 2, 6], mode="sum", include_last_offset=True,
         per_sample_weights=True),
    dict(input=[[0, 6], [6, 6]], mode="mean", padding_idx=6),
]


@pytest.mark.parametrize("case", CASES, ids=[c["mode"] + str(i) for i, c in enumerate(CASES)])
def test_embedding_bag_matches_torch(case):
    case = dict(case)
    w, tw = _weights()
    idx = np.array(case.pop("input"))
    kw, tkw = {}, {}
    if "offsets" in case:
        off = np.array(case.pop("offsets"))
        kw["offsets"], tkw["offsets"] = tp.tensor(off), torch.tensor(off)
    if case.pop("per_sample_weights", False):
        p = RNG.random(idx.shape)
        kw["per_sample_weights"] = tp.tensor(p, requires_grad=True)
        tkw["per_sample_weights"] = torch.tensor(p, requires_grad=True)
    y = F.embedding_bag(tp.tensor(idx), w, **kw, **case)
    ty = TF.embedding_bag(torch.tensor(idx), tw, **tkw, **case)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), atol=1e-12)
    g = RNG.standard_normal(tuple(ty.shape))
    (y * tp.tensor(g)).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), atol=1e-12)
    if "per_sample_weights" in kw:
        np.testing.assert_allclose(kw["per_sample_weights"].grad.numpy(),
                                   tkw["per_sample_weights"].grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq_divides_by_each_rows_count(mode):
    """Each row's gradient divided by its own count, as F.embedding's (the bag sum of
    embedding's rows is the same function)."""
    idx = tp.tensor([[0, 3, 3], [1, 4, 3]])
    w, tw = _weights((5, 2))
    F.embedding_bag(idx, w, mode=mode, scale_grad_by_freq=True).pow(2).sum().backward()
    rows = TF.embedding(torch.tensor(idx.numpy()), tw, scale_grad_by_freq=True)
    bags = rows.sum(1) if mode == "sum" else rows.mean(1)
    bags.pow(2).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), atol=1e-12)


def test_module_matches_torch_and_prints_like_it():
    torch.manual_seed(0)
    tbag = torch.nn.EmbeddingBag(6, 3, mode="max", padding_idx=2)
    bag = nn.EmbeddingBag(6, 3, mode="max", padding_idx=2)
    with tp.no_grad():
        bag.weight.copy_(tp.tensor(tbag.weight.detach().numpy()))
    assert repr(bag) == repr(tbag)
    assert not bag.weight[2].detach().numpy().any()
    idx, off = [1, 2, 5, 0, 2], [0, 3]
    y = bag(tp.tensor(idx), tp.tensor(off))
    ty = tbag(torch.tensor(idx), torch.tensor(off))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), atol=1e-6)
    frozen = nn.EmbeddingBag.from_pretrained(tp.ones(3, 2), mode="sum")
    assert not frozen.weight.requires_grad
    assert frozen(tp.tensor([[0, 1]])).tolist() == [[2.0, 2.0]]


def test_max_norm_renormalizes_the_rows_read():
    w, tw = _weights()
    with tp.no_grad(), torch.no_grad():
        F.embedding_bag(tp.tensor([[0, 1]]), w, max_norm=0.5)
        TF.embedding_bag(torch.tensor([[0, 1]]), tw, max_norm=0.5)
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), atol=1e-7)


@pytest.mark.parametrize("call, error, regex, arg", [
    (lambda w: F.embedding_bag(tp.tensor([[0, 1]]), w, tp.tensor([0])), ArgumentError,
     r"embedding_bag\(\): if input is 2D, then argument 'offsets' has to be None", "offsets"),
    (lambda w: F.embedding_bag(tp.tensor([0, 1]), w), ShapeError,
     r"embedding_bag\(\): argument 'offsets' has to be a 1D Tensor", "offsets"),
    (lambda w: F.embedding_bag(tp.tensor([[[0]]]), w), ShapeError,
     r"embedding_bag\(\): argument 'input' has to be a 1D or 2D Tensor", "input"),
    (lambda w: F.embedding_bag(tp.tensor([[0]]), w, mode="min"), ArgumentError,
     r"embedding_bag\(\): argument 'mode' has to be one of sum, mean or max", "mode"),
    (lambda w: F.embedding_bag(tp.tensor([[0]]), w, mode="max", scale_grad_by_freq=True),
     ArgumentError, r"embedding_bag\(\): max mode does not support scaling",
     "scale_grad_by_freq"),
    (lambda w: F.embedding_bag(tp.tensor([[0]]), w, per_sample_weights=tp.ones(1, 1)),
     ArgumentError, r"embedding_bag\(\): argument 'per_sample_weights' was not None",
     "per_sample_weights"),
])
def test_errors(call, error, regex, arg):
    with pytest.raises(error, match=regex) as info:
        call(tp.ones(3, 2))
    assert info.value.arg == arg
