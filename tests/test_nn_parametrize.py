"""tp.nn.utils.parametrize / .parametrizations and the older hook forms (weight_norm,
spectral_norm) against PyTorch's: values, gradients and state-dict keys for the same
initial weights (spectral_norm's u, v copied from PyTorch's buffers)."""
from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
import torch
import torch.nn.utils.parametrizations as TPZ
import torch.nn.utils.parametrize as TP

import tensorplay as tp
import tensorplay.nn.utils.parametrizations as PZ
import tensorplay.nn.utils.parametrize as P


def close(a, b, rtol=1e-9, atol=1e-11):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    np.testing.assert_allclose(a, b.detach().numpy(), rtol=rtol, atol=atol)


def linear_pair(cls="Linear", args=(4, 3), seed=0):
    """The same module in both libraries, float64, weights copied from PyTorch's."""
    torch.manual_seed(seed)
    tm = getattr(torch.nn, cls)(*args).double()
    m = getattr(tp.nn, cls)(*args, dtype=tp.float64)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return m, tm


def numpy_state(module):
    return {k: v.detach().numpy() for k, v in module.state_dict().items()}


def compare_forward_backward(m, tm, in_shape, rtol=1e-9):
    """Outputs, input gradient and every parameter's gradient, same input both sides."""
    arr = np.random.default_rng(1).standard_normal(in_shape)
    x, xt = tp.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)
    y, yt = m(x), tm(xt)
    close(y, yt, rtol=rtol)
    w = np.random.default_rng(2).standard_normal(tuple(y.shape))
    (y * tp.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    close(x.grad, xt.grad, rtol=rtol)
    ours = dict(m.named_parameters())
    theirs = dict(tm.named_parameters())
    assert sorted(ours) == sorted(theirs)
    for name, p in ours.items():
        close(p.grad, theirs[name].grad, rtol=rtol)


# ---- register_parametrization -----------------------------------------------------------
class Symmetric(tp.nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class TorchSymmetric(torch.nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class Scale(tp.nn.Module):
    def forward(self, X):
        return 2 * X

    def right_inverse(self, X):
        return X / 2


class RankOne(tp.nn.Module):
    """A parametrization of several tensors: right_inverse returns two."""

    def forward(self, x, y):
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, Z):
        return Z[:, 0].clone(), (Z[0] / Z[0, 0]).clone()


def test_register_read_assign_and_remove():
    m, tm = linear_pair(args=(3, 3))
    P.register_parametrization(m, "weight", Symmetric())
    TP.register_parametrization(tm, "weight", TorchSymmetric())
    assert type(m).__name__ == "ParametrizedLinear"
    assert P.type_before_parametrizations(m) is tp.nn.Linear
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight")
    assert not P.is_parametrized(m, "bias")
    assert isinstance(m.parametrizations.weight, P.ParametrizationList)
    assert list(m.state_dict()) == list(tm.state_dict())
    close(m.weight, tm.weight)
    compare_forward_backward(m, tm, (2, 3))
    # Assigning runs right_inverse; the original keeps its identity.
    original = m.parametrizations.weight.original
    value = np.arange(9.0).reshape(3, 3)
    m.weight = tp.tensor(value)
    assert m.parametrizations.weight.original is original
    close(m.weight, TorchSymmetric()(torch.tensor(value).triu()))
    # Chained: Scale after Symmetric.
    P.register_parametrization(m, "weight", Scale())
    close(m.weight, 2 * TorchSymmetric()(torch.tensor(value).triu()))
    assert len(m.parametrizations.weight) == 2
    # A plain Linear is untouched by the class swap.
    assert not hasattr(type(tp.nn.Linear(2, 2)), "parametrizations")
    P.remove_parametrizations(m, "weight", leave_parametrized=True)
    assert type(m) is tp.nn.Linear and not P.is_parametrized(m)
    assert isinstance(m._parameters["weight"], tp.nn.Parameter)
    close(m.weight, 2 * TorchSymmetric()(torch.tensor(value).triu()))


def test_remove_without_leaving_parametrized_and_errors():
    m, _ = linear_pair(args=(3, 3))
    before = m.weight.detach().clone()
    P.register_parametrization(m, "weight", Scale())
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    close(m.weight, torch.tensor(before.numpy() / 2))
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(m, "weight")
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        P.register_parametrization(m, "nope", Scale())

    class Shrink(tp.nn.Module):
        def forward(self, X):
            return X[:1]

    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(m, "weight", Shrink())
    P.register_parametrization(m, "weight", Shrink(), unsafe=True)
    assert tuple(m.weight.shape) == (1, 3)


def test_several_originals():
    m = tp.nn.Linear(3, 3, dtype=tp.float64)
    with tp.no_grad():
        m.weight.copy_(tp.tensor(np.outer([1.0, 2.0, 3.0], [2.0, 1.0, 0.5])))
    P.register_parametrization(m, "weight", RankOne())
    names = sorted(dict(m.named_parameters()))
    assert names == ["bias", "parametrizations.weight.original0",
                     "parametrizations.weight.original1"]
    close(m.weight, torch.tensor(np.outer([1.0, 2.0, 3.0], [2.0, 1.0, 0.5])))
    with pytest.raises(ValueError, match="sequence of tensors"):
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
    P.remove_parametrizations(m, "weight")
    assert sorted(dict(m.named_parameters())) == ["bias", "weight"]


def test_cached_computes_once():
    calls = []

    class Counting(tp.nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 1

    m = tp.nn.Linear(2, 2)
    P.register_parametrization(m, "weight", Counting())
    calls.clear()
    with P.cached():
        a, b = m.weight, m.weight
    assert len(calls) == 1 and a is b
    m.weight, m.weight
    assert len(calls) == 3


def test_transfer_parametrizations_and_params():
    source = tp.nn.Linear(3, 3)
    P.register_parametrization(source, "weight", Symmetric())
    target = tp.nn.Linear(3, 3)
    P.transfer_parametrizations_and_params(source, target)
    assert P.is_parametrized(target, "weight")
    assert target.parametrizations.weight.original is source.parametrizations.weight.original
    close(target.weight, torch.tensor(source.weight.detach().numpy()))


def test_deepcopy_and_pickling_refused():
    m = tp.nn.Linear(3, 3)
    P.register_parametrization(m, "weight", Symmetric())
    twin = copy.deepcopy(m)
    assert type(twin) is type(m)
    close(twin.weight, torch.tensor(m.weight.detach().numpy()))
    import pickle
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(m)


# ---- weight_norm, spectral_norm, orthogonal --------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization_matches_torch(dim):
    m, tm = linear_pair()
    PZ.weight_norm(m, dim=dim)
    TPZ.weight_norm(tm, dim=dim)
    assert list(m.state_dict()) == list(tm.state_dict())
    for k, v in tm.state_dict().items():
        close(m.state_dict()[k], v)
    compare_forward_backward(m, tm, (2, 4))


def test_weight_norm_loads_the_hook_forms_state_dict():
    m, tm = linear_pair()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3).double())
    PZ.weight_norm(m)
    m.load_state_dict({k: v.detach().numpy() for k, v in old.state_dict().items()})
    close(m.weight, old.weight)


@pytest.mark.parametrize("cls, args, in_shape", [
    ("Linear", (4, 3), (2, 4)),
    ("Conv2d", (2, 3, 2), (1, 2, 4, 4)),
    ("ConvTranspose2d", (2, 3, 2), (1, 2, 3, 3)),
], ids=["linear", "conv", "conv_transpose"])
def test_spectral_norm_parametrization_matches_torch(cls, args, in_shape):
    m, tm = linear_pair(cls, args)
    TPZ.spectral_norm(tm, n_power_iterations=2)
    PZ.spectral_norm(m, n_power_iterations=2)
    assert list(m.state_dict()) == list(tm.state_dict())
    # u, v as PyTorch's random start gave them (after its 15 warm-up steps).
    m.load_state_dict(numpy_state(tm))
    for step in range(2):              # training mode: each forward iterates again
        compare_forward_backward(m, tm, in_shape, rtol=1e-8)
        m.zero_grad(), tm.zero_grad()
        close(m.parametrizations.weight[0]._u, tm.parametrizations.weight[0]._u)
        close(m.parametrizations.weight[0]._v, tm.parametrizations.weight[0]._v)
    m.eval(), tm.eval()
    compare_forward_backward(m, tm, in_shape, rtol=1e-8)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)], ids=["square", "tall", "wide"])
def test_orthogonal_matches_torch(orthogonal_map, shape):
    m, tm = linear_pair(args=(shape[1], shape[0]))
    torch.manual_seed(5)        # the trivialization completes a non-square Q at random
    TPZ.orthogonal(tm, orthogonal_map=orthogonal_map)
    PZ.orthogonal(m, orthogonal_map=orthogonal_map)
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict(numpy_state(tm))         # the same base
    Q = m.weight.detach().numpy()
    small = min(shape)
    gram = Q.T @ Q if shape[0] >= shape[1] else Q @ Q.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-10)
    # Move the original away from the identity point, then compare value and gradients.
    delta = np.random.default_rng(3).standard_normal(shape) * 0.3
    with tp.no_grad(), torch.no_grad():
        m.parametrizations.weight.original.add_(tp.tensor(delta))
        tm.parametrizations.weight.original.add_(torch.tensor(delta))
    compare_forward_backward(m, tm, (2, shape[1]), rtol=1e-7)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_without_trivialization(orthogonal_map):
    """householder: the original is geqrf's reflectors (right_inverse); the others have
    no right_inverse without a base, so the weight itself becomes the original."""
    m, tm = linear_pair(args=(3, 4))
    TPZ.orthogonal(tm, orthogonal_map=orthogonal_map, use_trivialization=False)
    PZ.orthogonal(m, orthogonal_map=orthogonal_map, use_trivialization=False)
    assert list(m.state_dict()) == list(tm.state_dict())
    close(m.parametrizations.weight.original, tm.parametrizations.weight.original, rtol=1e-7)
    compare_forward_backward(m, tm, (2, 3), rtol=1e-7)
    if orthogonal_map != "householder":
        with pytest.raises(NotImplementedError, match="use_trivialization=False"):
            m.weight = tp.zeros(4, 3, dtype=tp.float64)


def test_orthogonal_bad_map():
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        PZ.orthogonal(tp.nn.Linear(2, 2), orthogonal_map="qr")


# ---- the hook forms --------------------------------------------------------------------
def test_weight_norm_hook_form_matches_torch():
    m, tm = linear_pair()
    with pytest.warns(FutureWarning, match="deprecated"):
        tp.nn.utils.weight_norm(m, dim=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        torch.nn.utils.weight_norm(tm, dim=0)
    assert list(m.state_dict()) == list(tm.state_dict())
    compare_forward_backward(m, tm, (2, 4))
    tp.nn.utils.remove_weight_norm(m)
    torch.nn.utils.remove_weight_norm(tm)
    assert list(m.state_dict()) == list(tm.state_dict())
    close(m.weight, tm.weight)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        tp.nn.utils.remove_weight_norm(m)


def test_spectral_norm_hook_form_matches_torch():
    m, tm = linear_pair("Conv1d", (2, 3, 2))
    torch.nn.utils.spectral_norm(tm)
    tp.nn.utils.spectral_norm(m)
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict(numpy_state(tm))         # weight_u, weight_v from PyTorch
    for _ in range(2):
        compare_forward_backward(m, tm, (1, 2, 5))
        m.zero_grad(), tm.zero_grad()
        close(m.weight_u, tm.weight_u)
    tp.nn.utils.remove_spectral_norm(m)
    torch.nn.utils.remove_spectral_norm(tm)
    assert list(m.state_dict()) == list(tm.state_dict())
    close(m.weight, tm.weight)
