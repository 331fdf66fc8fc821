"""tp.nn.utils against torch.nn.utils: clip_grad_norm_ returns torch's total norm and scales
the gradients the same way; clip_grad_value_; parameters <-> vector."""
import numpy as np
import pytest
import torch

import tensorplay as tp

SHAPES = [(), (3,), (4, 5)]


def _pair(scale=1.0, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    tparams, pparams = [], []
    for shape in SHAPES:
        value = np.asarray(rng.standard_normal(shape), dtype=dtype)
        grad = np.asarray(rng.standard_normal(shape) * scale, dtype=dtype)
        t = torch.tensor(value, requires_grad=True)
        t.grad = torch.tensor(grad)
        p = tp.tensor(value.copy(), requires_grad=True)
        p.grad = tp.tensor(grad.copy())
        tparams.append(t)
        pparams.append(p)
    return tparams, pparams


def _assert_grads_close(tparams, pparams, rtol=1e-6):
    for t, p in zip(tparams, pparams):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, float("inf"), "inf", 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type, max_norm, dtype):
    tparams, pparams = _pair(dtype=dtype)
    tnorm = torch.nn.utils.clip_grad_norm_(tparams, max_norm, norm_type=norm_type)
    pnorm = tp.nn.utils.clip_grad_norm_(pparams, max_norm, norm_type=norm_type, foreach=True)
    assert isinstance(pnorm, tp.Tensor) and pnorm.dim() == 0
    rtol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(pnorm.item(), tnorm.item(), rtol=rtol)
    _assert_grads_close(tparams, pparams, rtol)


def test_clip_grad_norm_single_tensor_generator_and_missing_grads():
    tparams, pparams = _pair(scale=5.0)
    tparams[1].grad = None
    pparams[1].grad = None
    tnorm = torch.nn.utils.clip_grad_norm_(tparams[2], 1.0)
    pnorm = tp.nn.utils.clip_grad_norm_(pparams[2], 1.0)
    np.testing.assert_allclose(pnorm.item(), tnorm.item(), rtol=1e-6)
    tnorm = torch.nn.utils.clip_grad_norm_((p for p in tparams), 1.0)
    pnorm = tp.nn.utils.clip_grad_norm_((p for p in pparams), 1.0)
    np.testing.assert_allclose(pnorm.item(), tnorm.item(), rtol=1e-6)
    assert pparams[1].grad is None
    _assert_grads_close([tparams[0], tparams[2]], [pparams[0], pparams[2]])
    with pytest.warns(UserWarning, match="empty generator"):
        assert tp.nn.utils.clip_grad_norm_((p for p in []), 1.0).item() == 0.0


def test_clip_grad_norm_on_a_model_after_backward():
    torch.manual_seed(0)
    tlin = torch.nn.Linear(5, 3)
    plin = tp.nn.Linear(5, 3)
    plin.weight.data = tp.tensor(tlin.weight.detach().numpy().copy())
    plin.bias.data = tp.tensor(tlin.bias.detach().numpy().copy())
    x = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
    (tlin(torch.from_numpy(x)) ** 2).sum().backward()
    (plin(tp.tensor(x)) ** 2).sum().backward()
    tnorm = torch.nn.utils.clip_grad_norm_(tlin.parameters(), 0.1)
    pnorm = tp.nn.utils.clip_grad_norm_(plin.parameters(), 0.1)
    np.testing.assert_allclose(pnorm.item(), tnorm.item(), rtol=1e-5)
    np.testing.assert_allclose(plin.weight.grad.numpy(), tlin.weight.grad.numpy(), rtol=1e-5)
    assert plin.weight.grad.grad_fn is None


def test_non_finite_norm():
    tparams, pparams = _pair()
    tparams[1].grad[0] = float("nan")
    g = pparams[1].grad.numpy().copy()
    g[0] = np.nan
    pparams[1].grad = tp.tensor(g)
    with pytest.raises(RuntimeError, match="non-finite"):
        tp.nn.utils.clip_grad_norm_(pparams, 1.0, error_if_nonfinite=True)
    tnorm = torch.nn.utils.clip_grad_norm_(tparams, 1.0)
    pnorm = tp.nn.utils.clip_grad_norm_(pparams, 1.0)
    assert np.isnan(pnorm.item()) and np.isnan(tnorm.item())
    _assert_grads_close(tparams, pparams)    # all nan, as torch's


def test_get_total_norm_matches_torch():
    tparams, pparams = _pair()
    tnorm = torch.nn.utils.get_total_norm([p.grad for p in tparams], 3.0)
    pnorm = tp.nn.utils.get_total_norm([p.grad for p in pparams], 3.0)
    np.testing.assert_allclose(pnorm.item(), tnorm.item(), rtol=1e-6)
    assert tp.nn.utils.get_total_norm([]).item() == 0.0


@pytest.mark.parametrize("clip_value", [0.3, 2])
def test_clip_grad_value_matches_torch(clip_value):
    tparams, pparams = _pair(scale=2.0)
    torch.nn.utils.clip_grad_value_(tparams, clip_value)
    tp.nn.utils.clip_grad_value_(pparams, clip_value)
    _assert_grads_close(tparams, pparams, rtol=0)


def test_parameters_to_vector_and_back():
    tparams, pparams = _pair()
    tvec = torch.nn.utils.parameters_to_vector(tparams)
    pvec = tp.nn.utils.parameters_to_vector(pparams)
    np.testing.assert_array_equal(pvec.detach().numpy(), tvec.detach().numpy())
    new = np.arange(pvec.numel(), dtype=np.float32)
    torch.nn.utils.vector_to_parameters(torch.from_numpy(new.copy()), tparams)
    tp.nn.utils.vector_to_parameters(tp.tensor(new.copy()), pparams)
    for t, p in zip(tparams, pparams):
        assert tuple(p.shape) == tuple(t.shape)
        np.testing.assert_array_equal(p.detach().numpy(), t.detach().numpy())
        assert p.requires_grad
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: ndarray"):
        tp.nn.utils.vector_to_parameters(new, pparams)
