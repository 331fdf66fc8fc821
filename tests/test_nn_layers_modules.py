"""tp.nn normalization, dropout, embedding, activation and loss modules, and the
tp.nn.functional names composed from ops, against PyTorch: outputs, input and parameter
gradients, running statistics, default inits, repr and state_dict keys."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, ShapeError

F = tp.nn.functional
TF = torch.nn.functional


def _rand(shape, seed, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape)


def _copy_state(tm, m):
    """tp module m takes torch module tm's parameters and buffers (float64)."""
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})


def _compare(t_out, out, rtol=1e-10, atol=1e-12):
    assert tuple(out.shape) == tuple(t_out.shape), (out.shape, t_out.shape)
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol=rtol,
                               atol=atol)


def _check_module(tm, m, arrays, rtol=1e-10, atol=1e-12, grad_inputs=None, extra=()):
    """Run both modules on the float64 `arrays` (+ non-differentiable `extra`), compare
    outputs, then backprop one random upstream gradient and compare the gradients of the
    inputs and of every parameter."""
    tm = tm.double()
    m = m.double()
    _copy_state(tm, m)
    grad_inputs = range(len(arrays)) if grad_inputs is None else grad_inputs
    t_in = [torch.tensor(a, requires_grad=i in grad_inputs) for i, a in enumerate(arrays)]
    x_in = [tp.tensor(a, requires_grad=i in grad_inputs) for i, a in enumerate(arrays)]
    t_out = tm(*t_in, *[torch.tensor(e) for e in extra])
    out = m(*x_in, *[tp.tensor(e) for e in extra])
    _compare(t_out, out, rtol, atol)
    up = _rand(tuple(t_out.shape), 99)
    t_out.backward(torch.tensor(up))
    out.backward(tp.tensor(up))
    for i in grad_inputs:
        _compare(t_in[i].grad, x_in[i].grad, rtol, atol)
    t_params = dict(tm.named_parameters())
    for name, p in m.named_parameters():
        if t_params[name].grad is None:
            assert p.grad is None or not np.any(p.grad.numpy()), name
        else:
            _compare(t_params[name].grad, p.grad, rtol, atol)
    return out


# ---- activations ----------------------------------------------------------------------
ACTIVATIONS = [
    ("ReLU", (), {}), ("ReLU6", (), {}), ("LeakyReLU", (0.2,), {}), ("ELU", (0.7,), {}),
    ("SELU", (), {}), ("CELU", (1.3,), {}), ("GELU", (), {}), ("GELU", ("tanh",), {}),
    ("SiLU", (), {}), ("Mish", (), {}), ("Softplus", (2.0, 1.5), {}), ("Softsign", (), {}),
    ("Softshrink", (0.7,), {}), ("Hardshrink", (0.7,), {}), ("Tanhshrink", (), {}),
    ("Hardtanh", (-0.5, 1.5), {}), ("Hardsigmoid", (), {}), ("Hardswish", (), {}),
    ("Tanh", (), {}), ("Sigmoid", (), {}), ("LogSigmoid", (), {}), ("Threshold", (0.3, -2.0), {}),
    ("GLU", (1,), {}), ("PReLU", (), {}), ("PReLU", (3, 0.1), {}), ("Softmax", (1,), {}),
    ("LogSoftmax", (-1,), {}), ("Softmin", (0,), {}), ("Softmax2d", (), {}),
]


@pytest.mark.parametrize("name,args,kwargs", ACTIVATIONS,
                         ids=[f"{a[0]}{i}" for i, a in enumerate(ACTIVATIONS)])
def test_activation_matches_torch(name, args, kwargs):
    x = _rand((2, 4, 3, 2), 1, -4, 4)
    tm = getattr(torch.nn, name)(*args, **kwargs)
    m = getattr(tp.nn, name)(*args, **kwargs)
    assert repr(m) == repr(tm)
    if name == "PReLU" and args:   # a per-channel slope: 3 channels
        x = x[:, :3]
        with torch.no_grad():
            tm.weight.uniform_(-1, 1)
    # NOTE: PyTorch's float64 gradients of celu and hardsigmoid use float32 constants
    # (`1.0 / alpha.toFloat()`, `1.0f / 6.0f`); ours stay in float64.
    rtol = 1e-7 if name in ("CELU", "Hardsigmoid") else 1e-10
    _check_module(tm, m, [x], rtol=rtol)


INPLACE = [("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.1,)), ("ELU", (1.0,)), ("SELU", ()),
           ("CELU", (1.0,)), ("SiLU", ()), ("Mish", ()), ("Hardtanh", (-1.0, 1.0)),
           ("Hardsigmoid", ()), ("Hardswish", ()), ("Threshold", (0.1, 5.0)), ("RReLU", ())]


@pytest.mark.parametrize("name,args", INPLACE, ids=[a[0] for a in INPLACE])
def test_inplace_activation_overwrites_its_input(name, args):
    a = _rand((3, 5), 2, -3, 3)
    rtol = 1e-7 if name in ("CELU", "Hardsigmoid") else 1e-10   # see the test above
    tm = getattr(torch.nn, name)(*args, inplace=True).eval()
    m = getattr(tp.nn, name)(*args, inplace=True).eval()
    assert repr(m) == repr(tm)
    tx, x = torch.tensor(a, requires_grad=True), tp.tensor(a, requires_grad=True)
    ty, y = tx * 1, x * 1
    t_out, out = tm(ty), m(y)
    _compare(t_out, out)
    np.testing.assert_allclose(y.detach().numpy(), t_out.detach().numpy(), rtol=1e-12)
    t_out.sum().backward()
    out.sum().backward()
    _compare(tx.grad, x.grad, rtol)


def test_rrelu_training_draws_slopes_within_bounds():
    a = _rand((400,), 3, -3, 3)
    m = tp.nn.RReLU(0.1, 0.3)
    assert repr(m) == repr(torch.nn.RReLU(0.1, 0.3))
    y = m(tp.tensor(a)).numpy()
    neg = a < 0
    np.testing.assert_array_equal(y[~neg], a[~neg])
    slopes = y[neg] / a[neg]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    np.testing.assert_allclose(m.eval()(tp.tensor(a)).numpy(),
                               TF.rrelu(torch.tensor(a), 0.1, 0.3).numpy(), rtol=1e-12)


def test_prelu_default_init_and_state_dict():
    m, tm = tp.nn.PReLU(4), torch.nn.PReLU(4)
    np.testing.assert_array_equal(m.weight.detach().numpy(), tm.weight.detach().numpy())
    assert list(m.state_dict()) == list(tm.state_dict()) == ["weight"]


def test_activation_bad_inputs():
    with pytest.raises(ShapeError, match="Softmax2d: expected input to be 3D or 4D, got 2D"):
        tp.nn.Softmax2d()(tp.zeros(2, 3))
    with pytest.raises(ArgumentError, match="softshrink.*'lambd' must be >= 0"):
        tp.nn.Softshrink(-1.0)(tp.zeros(2))
    with pytest.raises(ValueError, match="max_val"):
        tp.nn.Hardtanh(1.0, -1.0)


# ---- normalization --------------------------------------------------------------------
@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (5, 3)), ("BatchNorm1d", (4, 3, 2)),
                                       ("BatchNorm2d", (3, 3, 2, 2)),
                                       ("BatchNorm3d", (2, 3, 2, 1, 2))])
def test_batch_norm_training_steps_and_eval_match_torch(cls, shape, momentum):
    tm = getattr(torch.nn, cls)(3, momentum=momentum).double()
    m = getattr(tp.nn, cls)(3, momentum=momentum).double()
    assert repr(m) == repr(tm)
    assert list(m.state_dict()) == list(tm.state_dict())
    with torch.no_grad():
        tm.weight.uniform_(0.5, 1.5)
        tm.bias.uniform_(-1, 1)
    for step in range(3):   # batch statistics in training; running ones folded in
        _check_module(tm, m, [_rand(shape, 10 + step, -1 + step, 2 + step)])
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(m, name).numpy(), getattr(tm, name).numpy(),
                                   rtol=1e-12)
    assert m.num_batches_tracked.dtype == tp.int64 and m.num_batches_tracked.item() == 3
    tm.eval()
    m.eval()
    _check_module(tm, m, [_rand(shape, 20)])
    assert m.num_batches_tracked.item() == 3, "eval must not count batches"


@pytest.mark.parametrize("affine,track", [(False, True), (True, False), (False, False)])
def test_batch_norm_variants(affine, track):
    tm = torch.nn.BatchNorm2d(2, affine=affine, track_running_stats=track).double()
    m = tp.nn.BatchNorm2d(2, affine=affine, track_running_stats=track).double()
    assert repr(m) == repr(tm)
    assert list(m.state_dict()) == list(tm.state_dict())
    _check_module(tm, m, [_rand((3, 2, 2, 2), 30)])
    tm.eval()
    m.eval()   # without running stats, eval still uses the batch's statistics
    _check_module(tm, m, [_rand((3, 2, 2, 2), 31)])


def test_batch_norm_no_bias_and_bad_dims():
    tm, m = torch.nn.BatchNorm1d(3, bias=False), tp.nn.BatchNorm1d(3, bias=False)
    assert repr(m) == repr(tm) and list(m.state_dict()) == list(tm.state_dict())
    _check_module(tm, m, [_rand((4, 3), 32)])
    with pytest.raises(ShapeError, match=r"BatchNorm2d: expected 4-D .* got 3-D"):
        tp.nn.BatchNorm2d(3)(tp.zeros(2, 3, 4))
    with pytest.raises(ShapeError, match="BatchNorm1d"):
        tp.nn.BatchNorm1d(3)(tp.zeros(2, 3, 4, 5))


def test_batch_norm_loads_a_checkpoint_without_the_counter():
    m = tp.nn.BatchNorm1d(2).double()
    assert m.num_batches_tracked.dtype == tp.int64 and m.running_mean.dtype == tp.float64
    sd = {k: v for k, v in m.state_dict().items() if k != "num_batches_tracked"}
    m.load_state_dict(sd)
    assert m.num_batches_tracked.item() == 0


NORMS = [
    ("LayerNorm", (3,), {}, (2, 4, 3)), ("LayerNorm", ((4, 3),), {"eps": 1e-3}, (2, 4, 3)),
    ("LayerNorm", (3,), {"bias": False}, (2, 3)),
    ("LayerNorm", (3,), {"elementwise_affine": False}, (2, 3)),
    ("GroupNorm", (2, 4), {}, (3, 4, 5)), ("GroupNorm", (1, 4), {"affine": False}, (2, 4)),
    ("GroupNorm", (2, 4), {"bias": False}, (2, 4, 2, 2)),
    ("RMSNorm", (3,), {}, (2, 4, 3)), ("RMSNorm", ([4, 3],), {"eps": 1e-4}, (2, 4, 3)),
    ("RMSNorm", (3,), {"elementwise_affine": False}, (5, 3)),
    ("InstanceNorm1d", (3,), {}, (2, 3, 5)), ("InstanceNorm1d", (3,), {"affine": True}, (3, 5)),
    ("InstanceNorm2d", (2,), {"affine": True}, (2, 2, 3, 3)),
    ("InstanceNorm3d", (2,), {}, (2, 2, 2, 2, 3)),
    ("LocalResponseNorm", (3,), {}, (2, 5, 4)),
    ("LocalResponseNorm", (2, 0.1, 0.6, 2.0), {}, (2, 4, 3, 2)),
]


@pytest.mark.parametrize("cls,args,kwargs,shape", NORMS,
                         ids=[f"{n[0]}{i}" for i, n in enumerate(NORMS)])
def test_norm_layers_match_torch(cls, args, kwargs, shape):
    tm = getattr(torch.nn, cls)(*args, **kwargs)
    m = getattr(tp.nn, cls)(*args, **kwargs)
    assert repr(m) == repr(tm)
    assert list(m.state_dict()) == list(tm.state_dict())
    for name, p in tm.named_parameters():   # default init (ones and zeros)
        np.testing.assert_array_equal(getattr(m, name).detach().numpy(), p.detach().numpy())
    with torch.no_grad():
        for p in tm.parameters():
            p.uniform_(0.5, 1.5)
    _check_module(tm, m, [_rand(shape, 40, -3, 3)], rtol=1e-9, atol=1e-11)


def test_instance_norm_running_stats_and_errors():
    tm = torch.nn.InstanceNorm1d(3, track_running_stats=True, affine=True).double()
    m = tp.nn.InstanceNorm1d(3, track_running_stats=True, affine=True).double()
    assert repr(m) == repr(tm) and list(m.state_dict()) == list(tm.state_dict())
    for step in range(2):
        _check_module(tm, m, [_rand((2, 3, 4), 50 + step)])
    np.testing.assert_allclose(m.running_var.numpy(), tm.running_var.numpy(), rtol=1e-12)
    tm.eval()
    m.eval()
    _check_module(tm, m, [_rand((2, 3, 4), 52)])
    with pytest.raises(ShapeError, match="match num_features"):
        m(tp.zeros(2, 4, 4, dtype=tp.float64))
    with pytest.raises(ShapeError, match="InstanceNorm2d"):
        tp.nn.InstanceNorm2d(3)(tp.zeros(3, 4))
    with pytest.raises(ArgumentError, match="divisible"):
        tp.nn.GroupNorm(3, 4)


# ---- dropout --------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
                                 "AlphaDropout", "FeatureAlphaDropout"])
def test_dropout_repr_eval_identity_and_p_check(cls):
    m, tm = getattr(tp.nn, cls)(0.3), getattr(torch.nn, cls)(0.3)
    assert repr(m) == repr(tm)
    assert repr(getattr(tp.nn, cls)(0.2, True)) == repr(getattr(torch.nn, cls)(0.2, True))
    dims = {"Dropout1d": 3, "Dropout2d": 4, "Dropout3d": 5}.get(cls, 2)
    x = tp.tensor(_rand((2, 3, 2, 2, 2)[:dims], 60))
    np.testing.assert_array_equal(m.eval()(x).numpy(), x.numpy())
    with pytest.raises(ArgumentError, match="between 0 and 1, but got 1.5"):
        getattr(tp.nn, cls)(1.5)


def test_dropout_scales_kept_elements_and_zeros_whole_channels():
    tp.manual_seed(0)
    x = tp.ones(40, 50, 2, dtype=tp.float64)
    y = tp.nn.Dropout(0.25)(x).numpy()
    assert set(np.unique(y)) <= {0.0, 1 / 0.75}
    assert abs((y == 0).mean() - 0.25) < 0.03
    for cls, shape in [("Dropout1d", (40, 50, 3)), ("Dropout2d", (40, 50, 2, 2)),
                       ("Dropout3d", (40, 50, 2, 1, 2))]:
        y = getattr(tp.nn, cls)(0.4)(tp.ones(*shape)).numpy().reshape(40, 50, -1)
        # one draw per (sample, channel): each channel is all zero or all 1 / (1 - p)
        assert np.all(y.min(-1) == y.max(-1)), cls
        assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.6)}
        assert abs((y[..., 0] == 0).mean() - 0.4) < 0.04, cls
    unbatched = tp.nn.Dropout1d(0.5)(tp.ones(30, 4)).numpy()
    assert unbatched.shape == (30, 4) and np.all(unbatched.min(1) == unbatched.max(1))
    with pytest.raises(ShapeError, match="dropout1d"):
        tp.nn.Dropout1d()(tp.ones(2, 3, 4, 5))
    for fn in (F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout, F.feature_alpha_dropout):
        with pytest.raises(ArgumentError, match="between 0 and 1, but got -0.1"):
            fn(tp.ones(2, 3, 4, 5, 6), -0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tp.nn.Dropout2d()(tp.ones(2, 3, 4))
    assert any("3D input to dropout2d" in str(w.message) for w in caught)


def test_dropout_gradient_and_extremes():
    tp.manual_seed(1)
    x = tp.tensor(_rand((6, 5), 61), requires_grad=True)
    y = F.dropout2d(x.unsqueeze(-1).unsqueeze(-1), 0.5).squeeze(-1).squeeze(-1)
    y.sum().backward()
    mask = (y.detach().numpy() != 0)
    np.testing.assert_allclose(x.grad.numpy(), mask * 2.0)
    np.testing.assert_array_equal(F.dropout1d(tp.ones(2, 3, 4), 1.0).numpy(), 0)
    z = tp.ones(2, 3, 4)
    assert F.dropout1d(z, 0.0) is z and F.alpha_dropout(z, 0.5) is z


def _mode(a):
    """The most frequent value of `a` (alpha dropout's dropped units share one value)."""
    values, counts = np.unique(a.round(12), return_counts=True)
    return values[counts.argmax()], counts.max()


def test_alpha_dropout_keeps_mean_and_variance():
    tp.manual_seed(2)
    x = tp.randn(100000, dtype=tp.float64)
    y = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.015 and abs(y.std() - 1) < 0.015
    torch.manual_seed(0)
    t = TF.alpha_dropout(torch.randn(20000, dtype=torch.float64), 0.2, True).numpy()
    (value, count), (t_value, _) = _mode(y), _mode(t)
    np.testing.assert_allclose(value, t_value, rtol=1e-9)
    assert abs(count / y.size - 0.2) < 0.01
    # the kept units are an affine map of the input, the same one as PyTorch's
    kept = ~np.isclose(y, value, rtol=1e-12, atol=0)
    slope = np.polyfit(x.numpy()[kept], y[kept], 1)[0]
    t_in = torch.tensor(np.linspace(-1, 1, 9))
    torch.manual_seed(1)
    t_y = TF.alpha_dropout(t_in, 0.2, True).numpy()
    t_kept = ~np.isclose(t_y, t_value)
    np.testing.assert_allclose(slope, np.polyfit(t_in.numpy()[t_kept], t_y[t_kept], 1)[0],
                               rtol=1e-9)
    f = F.feature_alpha_dropout(tp.randn(60, 40, 3, dtype=tp.float64), 0.5, True).numpy()
    dropped = np.isclose(f, _mode(f)[0])
    assert np.all(dropped.min(-1) == dropped.max(-1)), "one draw per channel"


# ---- embedding ------------------------------------------------------------------------
def test_embedding_matches_torch_with_negative_padding_idx():
    tm = torch.nn.Embedding(7, 3, padding_idx=-2)
    m = tp.nn.Embedding(7, 3, padding_idx=-2)
    assert repr(m) == repr(tm) and m.padding_idx == tm.padding_idx == 5
    assert list(m.state_dict()) == ["weight"]
    np.testing.assert_array_equal(m.weight.detach().numpy()[5], 0)
    idx = np.array([[0, 5, 2], [5, 6, 0]])
    _check_module(tm, m, [], extra=[idx])
    assert np.all(m.weight.grad.numpy()[5] == 0)


def test_embedding_default_init_is_standard_normal():
    tp.manual_seed(3)
    w = tp.nn.Embedding(2000, 50).weight.detach().numpy()
    assert abs(w.mean()) < 0.01 and abs(w.std() - 1) < 0.01


def test_embedding_from_pretrained_and_max_norm():
    a = _rand((5, 3), 70)
    m = tp.nn.Embedding.from_pretrained(tp.tensor(a))
    tm = torch.nn.Embedding.from_pretrained(torch.tensor(a))
    assert repr(m) == repr(tm) and not m.weight.requires_grad
    assert tp.nn.Embedding.from_pretrained(tp.tensor(a), freeze=False).weight.requires_grad
    tm = torch.nn.Embedding(6, 4, max_norm=1.5, norm_type=1.0).double()
    m = tp.nn.Embedding(6, 4, max_norm=1.5, norm_type=1.0).double()
    assert repr(m) == repr(tm)
    idx = np.array([1, 3, 3, 0])
    _check_module(tm, m, [], extra=[idx])
    # the rows looked up were renormalized in place, the others left alone
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(),
                               rtol=1e-12)
    with pytest.raises(ArgumentError, match="padding_idx"):
        tp.nn.Embedding(4, 2, padding_idx=4)
    with pytest.raises(ShapeError, match="2-D"):
        tp.nn.Embedding.from_pretrained(tp.zeros(3))


# ---- losses ---------------------------------------------------------------------------
def _probs(shape, seed):
    return _rand(shape, seed, 0.05, 0.95)


LOSSES = [   # (class, ctor args, kwargs, [differentiable arrays], [other arrays])
    ("L1Loss", (), {}, [_rand((3, 4), 1), _rand((3, 4), 2)], []),
    ("MSELoss", (), {"reduction": "sum"}, [_rand((3, 4), 1), _rand((3, 4), 2)], []),
    ("CrossEntropyLoss", (), {"label_smoothing": 0.1, "ignore_index": 1},
     [_rand((4, 3), 3)], [np.array([0, 1, 2, 2])]),
    ("CrossEntropyLoss", (), {"weight": torch.tensor([0.2, 1.0, 3.0], dtype=torch.float64)},
     [_rand((4, 3, 2), 4)], [np.array([[0, 1], [2, 2], [1, 0], [0, 0]])]),
    ("CrossEntropyLoss", (), {}, [_rand((4, 3), 5), _probs((4, 3), 6)], []),
    ("NLLLoss", (), {"reduction": "none"}, [_rand((4, 3), 7)], [np.array([2, 0, 1, 1])]),
    ("BCELoss", (), {"weight": torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)},
     [_probs((2, 3), 8), _probs((2, 3), 9)], []),
    ("BCEWithLogitsLoss", (), {"pos_weight": torch.tensor([2.0, 0.5, 1.0],
                                                          dtype=torch.float64)},
     [_rand((2, 3), 10), _probs((2, 3), 11)], []),
    ("KLDivLoss", (), {"reduction": "batchmean", "log_target": True},
     [_rand((3, 4), 12), _rand((3, 4), 13)], []),
    ("SmoothL1Loss", (), {"beta": 0.5}, [_rand((5,), 14), _rand((5,), 15)], []),
    ("HuberLoss", (), {"delta": 0.7}, [_rand((5,), 16), _rand((5,), 17)], []),
    ("MarginRankingLoss", (0.3,), {}, [_rand((5,), 18), _rand((5,), 19)],
     [np.array([1.0, -1, 1, -1, 1])]),
    ("CosineEmbeddingLoss", (0.2,), {}, [_rand((4, 3), 20), _rand((4, 3), 21)],
     [np.array([1.0, -1, -1, 1])]),
    ("HingeEmbeddingLoss", (1.5,), {}, [_rand((6,), 22)], [np.array([1.0, -1, 1, -1, -1, 1])]),
    ("SoftMarginLoss", (), {}, [_rand((2, 3), 23)], [np.array([[1.0, -1, 1], [-1, -1, 1]])]),
    ("MultiLabelSoftMarginLoss", (), {"weight": torch.tensor([1.0, 0.5, 2.0],
                                                             dtype=torch.float64)},
     [_rand((2, 3), 24)], [np.array([[1.0, 0, 1], [0, 0, 1]])]),
    ("MultiLabelMarginLoss", (), {}, [_rand((3, 4), 25)],
     [np.array([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 0]])]),
    ("MultiMarginLoss", (), {}, [_rand((4, 3), 26)], [np.array([0, 2, 1, 2])]),
    ("MultiMarginLoss", (2, 0.7), {"weight": torch.tensor([1.0, 2.0, 0.5],
                                                          dtype=torch.float64)},
     [_rand((4, 3), 27)], [np.array([0, 2, 1, 2])]),
    ("TripletMarginLoss", (), {"swap": True}, [_rand((4, 3), 28), _rand((4, 3), 29),
                                               _rand((4, 3), 30)], []),
    ("TripletMarginLoss", (0.5, 1.0), {}, [_rand((4, 3), 31), _rand((4, 3), 32),
                                           _rand((4, 3), 33)], []),
    ("TripletMarginWithDistanceLoss", (), {"margin": 2.0},
     [_rand((4, 3), 34), _rand((4, 3), 35), _rand((4, 3), 36)], []),
    ("PoissonNLLLoss", (), {}, [_rand((6,), 37)], [_rand((6,), 38, 0, 4)]),
    ("PoissonNLLLoss", (False, True), {}, [_probs((6,), 39) * 3], [_rand((6,), 40, 0, 4)]),
    ("GaussianNLLLoss", (), {"full": True}, [_rand((3, 2), 41), _rand((3, 2), 42),
                                             _rand((3, 2), 43, 0.1, 1)], []),
    ("GaussianNLLLoss", (), {"reduction": "sum"}, [_rand((3, 2), 44), _rand((3, 2), 45),
                                                   _rand((3,), 46, 0.1, 1)], []),
]


@pytest.mark.parametrize("cls,args,kwargs,arrays,extra", LOSSES,
                         ids=[f"{c[0]}{i}" for i, c in enumerate(LOSSES)])
def test_loss_matches_torch(cls, args, kwargs, arrays, extra):
    tm = getattr(torch.nn, cls)(*args, **kwargs)
    tp_kwargs = {k: tp.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v
                 for k, v in kwargs.items()}
    m = getattr(tp.nn, cls)(*args, **tp_kwargs)
    assert repr(m) == repr(tm)
    assert list(m.state_dict()) == list(tm.state_dict())
    _check_module(tm, m, arrays, extra=extra)


def test_loss_legacy_flags_and_bad_arguments():
    assert tp.nn.MSELoss(size_average=False).reduction == "sum"
    assert tp.nn.L1Loss(reduce=False).reduction == "none"
    with pytest.raises(ArgumentError, match="p == 1 and p == 2"):
        tp.nn.MultiMarginLoss(p=3)
    with pytest.raises(ShapeError, match="1-D"):
        tp.nn.MultiMarginLoss(weight=tp.ones(2, 2))
    with pytest.raises(ArgumentError, match="'margin' must be greater than 0"):
        tp.nn.TripletMarginLoss(margin=0)
    with pytest.raises(ShapeError, match="same number of dimensions"):
        F.triplet_margin_loss(tp.zeros(2, 3), tp.zeros(2, 3), tp.zeros(3))
    with pytest.raises(ShapeError, match="incorrect size"):
        F.gaussian_nll_loss(tp.zeros(2, 3), tp.zeros(2, 3), tp.ones(3, 3))
    with pytest.raises(ArgumentError, match="negative"):
        F.gaussian_nll_loss(tp.zeros(2, 3), tp.zeros(2, 3), -1.0)
    with pytest.raises(ArgumentError, match="'reduction'"):
        F.soft_margin_loss(tp.zeros(2), tp.ones(2), reduction="avg")


# ---- functional compositions ----------------------------------------------------------
def _pair_fn(tp_fn, torch_fn, arrays, rtol=1e-10, **kwargs):
    """tp_fn and torch_fn on float64 copies of `arrays`: values and gradients."""
    xs = [tp.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, t_out = tp_fn(*xs, **kwargs), torch_fn(*ts, **kwargs)
    _compare(t_out, out, rtol)
    up = _rand(tuple(t_out.shape), 98)
    out.backward(tp.tensor(up))
    t_out.backward(torch.tensor(up))
    for x, t in zip(xs, ts):
        _compare(t.grad, x.grad, rtol)


@pytest.mark.parametrize("name,kwargs", [
    ("logsigmoid", {}), ("softshrink", {"lambd": 0.3}), ("hardshrink", {}), ("tanhshrink", {}),
    ("relu", {}), ("tanh", {}), ("sigmoid", {}), ("normalize", {"p": 1.0, "dim": 0}),
    ("normalize", {}), ("local_response_norm", {"size": 2}),
    ("channel_shuffle", {"groups": 2}), ("rrelu", {}),
])
def test_functional_composition_matches_torch(name, kwargs):
    _pair_fn(getattr(F, name), getattr(TF, name) if name != "channel_shuffle"
             else torch.nn.functional.channel_shuffle, [_rand((2, 4, 3), 80, -30, 30)],
             **kwargs)


def test_functional_layers_match_torch():
    _pair_fn(F.bilinear, TF.bilinear, [_rand((3, 2), 81), _rand((3, 4), 82),
                                       _rand((5, 2, 4), 83), _rand((5,), 84)])
    _pair_fn(F.pdist, TF.pdist, [_rand((5, 3), 85)], p=1.5)
    _pair_fn(F.lp_pool2d, TF.lp_pool2d, [_rand((1, 2, 4, 5), 86, 0.1, 2)], norm_type=2,
             kernel_size=2)
    _pair_fn(F.lp_pool1d, TF.lp_pool1d, [_rand((2, 6), 87, 0.1, 2)], norm_type=3,
             kernel_size=3, stride=2)
    a = _rand((1, 2, 4, 4), 88)
    t_out, t_idx = TF.max_pool2d(torch.tensor(a), 2, return_indices=True)
    _pair_fn(lambda x: F.max_unpool2d(x, tp.tensor(t_idx.numpy()), 2),
             lambda x: TF.max_unpool2d(x, t_idx, 2), [t_out.numpy()])
    _pair_fn(lambda x: F.max_unpool2d(x, tp.tensor(t_idx.numpy()), 2, output_size=(5, 5)),
             lambda x: TF.max_unpool2d(x, t_idx, 2, output_size=(5, 5)), [t_out.numpy()])
    t_out, t_idx = TF.max_pool1d(torch.tensor(a[0]), 2, return_indices=True)
    _pair_fn(lambda x: F.max_unpool1d(x, tp.tensor(t_idx.numpy()), 2),
             lambda x: TF.max_unpool1d(x, t_idx, 2), [t_out.numpy()])
    _pair_fn(lambda x, w: F.linear_cross_entropy(x, w, tp.tensor([0, 2, 1])),
             lambda x, w: TF.linear_cross_entropy(x, w, torch.tensor([0, 2, 1])),
             [_rand((3, 4), 89), _rand((3, 4), 90)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _pair_fn(F.upsample_bilinear, TF.upsample_bilinear, [_rand((1, 1, 2, 3), 91)],
                 scale_factor=2)
    out, idx = F.max_pool2d_with_indices(tp.tensor(a), 2)
    np.testing.assert_array_equal(idx.numpy(), TF.max_pool2d(torch.tensor(a), 2,
                                                             return_indices=True)[1].numpy())


def test_gumbel_softmax_soft_and_hard():
    tp.manual_seed(4)
    logits = tp.tensor(_rand((6, 5), 92), requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.detach().numpy().sum(-1), 1, rtol=1e-12)
    hard = F.gumbel_softmax(logits, hard=True)
    h = hard.detach().numpy()
    assert set(np.unique(h)) == {0.0, 1.0} and np.all(h.sum(-1) == 1)
    (hard * tp.tensor(_rand((6, 5), 93))).sum().backward()
    assert logits.grad is not None and np.abs(logits.grad.numpy()).sum() > 0


def test_functional_has_torchs_names():
    missing = {n for n in dir(TF) if not n.startswith("_") and callable(getattr(TF, n))
               and getattr(getattr(TF, n), "__module__", "").startswith("torch")
               and not hasattr(F, n)}
    # No op serves these (3-D pooling, grid sampling, CTC, fractional pooling, the
    # scaled/grouped matmuls, embedding bags) or they are torch internals.
    assert missing <= {
        "ScalingType", "SwizzleType", "Tensor", "adaptive_avg_pool3d", "adaptive_max_pool3d",
        "adaptive_max_pool3d_with_indices", "affine_grid", "assert_int_or_pair", "avg_pool3d",
        "boolean_dispatch", "conv_tbc", "ctc_loss", "embedding_bag", "fractional_max_pool2d",
        "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
        "fractional_max_pool3d_with_indices", "grid_sample", "grouped_mm",
        "handle_torch_function", "has_torch_function", "has_torch_function_unary",
        "has_torch_function_variadic", "lp_pool3d", "max_pool3d", "max_pool3d_with_indices",
        "max_unpool3d", "multi_head_attention_forward", "scaled_grouped_mm", "scaled_mm"}, \
        missing


def test_functional_embedding_keeps_torchs_positional_signature():
    w = tp.tensor(_rand((4, 3), 94) * 3)
    tw = torch.tensor(w.numpy())
    out = F.embedding(tp.tensor([1, 2]), w, None, 1.0)
    t_out = TF.embedding(torch.tensor([1, 2]), tw, None, 1.0)
    _compare(t_out, out)
    np.testing.assert_allclose(w.numpy(), tw.numpy(), rtol=1e-12)


# ---- the cuda device (Triton kernels; the interpreter without a GPU) ------------------
def _cuda_or_skip():
    pytest.importorskip("triton")
    if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
        pytest.skip("no GPU and no Triton interpreter")
    return tp.device("cuda")


CUDA_MODULES = [   # (factory, [differentiable input shapes / arrays], [other inputs])
    (lambda: tp.nn.LayerNorm(3), [(2, 3)], []),
    (lambda: tp.nn.GroupNorm(2, 4), [(2, 4, 2)], []),
    (lambda: tp.nn.RMSNorm(3, eps=1e-5), [(2, 3)], []),
    (lambda: tp.nn.InstanceNorm1d(2, affine=True), [(2, 2, 3)], []),
    (lambda: tp.nn.LocalResponseNorm(2), [(1, 3, 2)], []),
    (lambda: tp.nn.PReLU(2), [(2, 2, 2)], []),
    (lambda: tp.nn.Sequential(tp.nn.GELU("tanh"), tp.nn.LogSigmoid(), tp.nn.Softshrink(0.1),
                              tp.nn.Hardshrink(0.05), tp.nn.Tanhshrink()), [(2, 3)], []),
    (lambda: tp.nn.Softmax2d(), [(1, 3, 2, 1)], []),
    (lambda: tp.nn.Embedding(5, 2, padding_idx=-1, max_norm=1.0), [],
     [np.array([[0, 4], [2, 0]])]),
    (lambda: tp.nn.CrossEntropyLoss(weight=tp.tensor([0.5, 1.0, 2.0]), label_smoothing=0.1),
     [(4, 3)], [np.array([0, 2, 1, 2])]),
    (lambda: tp.nn.BCEWithLogitsLoss(pos_weight=tp.tensor([2.0, 0.5])),
     [(3, 2)], [_probs((3, 2), 5)]),
    (lambda: tp.nn.MultiMarginLoss(p=2, weight=tp.tensor([1.0, 2.0, 0.5])), [(4, 3)],
     [np.array([0, 2, 1, 2])]),
    (lambda: tp.nn.MultiLabelMarginLoss(), [(2, 3)], [np.array([[2, -1, 0], [0, 1, 2]])]),
    (lambda: tp.nn.TripletMarginLoss(swap=True), [(3, 2), (3, 2), (3, 2)], []),
    (lambda: tp.nn.GaussianNLLLoss(full=True), [(3, 2), (3, 2), _probs((3, 1), 6)], []),
    (lambda: tp.nn.PoissonNLLLoss(full=True), [(4,)], [_rand((4,), 7, 0, 3)]),
    (lambda: tp.nn.MultiLabelSoftMarginLoss(), [(2, 3)], [np.array([[1.0, 0, 1], [0, 1, 0]])]),
    (lambda: tp.nn.HingeEmbeddingLoss(), [(4,)], [np.array([1.0, -1, -1, 1])]),
]


@pytest.mark.parametrize("case", range(len(CUDA_MODULES)))
def test_module_on_cuda_matches_cpu(case):
    cuda = _cuda_or_skip()
    factory, shapes, extra = CUDA_MODULES[case]
    m = factory()
    mc = factory()
    with tp.no_grad():
        for p in m.parameters():
            p.uniform_(0.5, 1.5)
    mc.load_state_dict(m.state_dict())
    mc.to(cuda)
    for buf in mc.buffers():
        assert buf.device == cuda
    arrays = [a if isinstance(a, np.ndarray) else _rand(a, 8 + i) for i, a in enumerate(shapes)]
    xs = [tp.tensor(a, dtype=tp.float32, requires_grad=True) for a in arrays]
    xcs = [tp.tensor(a, dtype=tp.float32, device=cuda, requires_grad=True) for a in arrays]
    others = [tp.tensor(e, dtype=tp.float32) if e.dtype.kind == "f" else tp.tensor(e)
              for e in extra]
    out = m(*xs, *others)
    outc = mc(*xcs, *[o.to(cuda) for o in others])
    assert outc.device == cuda
    np.testing.assert_allclose(outc.detach().cpu().numpy(), out.detach().numpy(), rtol=2e-5,
                               atol=1e-6)
    up = _rand(tuple(out.shape), 9).astype(np.float32)
    out.backward(tp.tensor(up))
    outc.backward(tp.tensor(up, device=cuda))
    for x, xc in zip(xs, xcs):
        np.testing.assert_allclose(xc.grad.cpu().numpy(), x.grad.numpy(), rtol=2e-5, atol=1e-6)
    for (name, p), pc in zip(m.named_parameters(), mc.parameters()):
        assert pc.device == cuda, name
        np.testing.assert_allclose(pc.grad.cpu().numpy(), p.grad.numpy(), rtol=2e-5,
                                   atol=1e-6, err_msg=name)


def test_batch_norm_and_dropout_on_cuda():
    cuda = _cuda_or_skip()
    m = tp.nn.BatchNorm1d(2, momentum=None)
    mc = tp.nn.BatchNorm1d(2, momentum=None).to(cuda)
    for step in range(2):
        a = _rand((3, 2, 2), 100 + step)
        got = mc(tp.tensor(a, dtype=tp.float32, device=cuda)).detach().cpu().numpy()
        np.testing.assert_allclose(got, m(tp.tensor(a, dtype=tp.float32)).detach().numpy(),
                                   rtol=2e-5, atol=1e-6)
    assert mc.num_batches_tracked.device == cuda and mc.num_batches_tracked.item() == 2
    assert mc.num_batches_tracked.dtype == tp.int64
    np.testing.assert_allclose(mc.running_var.cpu().numpy(), m.running_var.numpy(), rtol=1e-5)
    mc.eval()
    m.eval()
    a = _rand((2, 2), 102)
    got = mc(tp.tensor(a, dtype=tp.float32, device=cuda)).detach().cpu().numpy()
    np.testing.assert_allclose(got, m(tp.tensor(a, dtype=tp.float32)).detach().numpy(),
                               rtol=2e-5)
    y = tp.nn.Dropout2d(0.5)(tp.ones(20, 10, 1, 2, device=cuda)).cpu().numpy()
    assert np.all(y.min((2, 3)) == y.max((2, 3))) and set(np.unique(y)) == {0.0, 2.0}
    y = F.alpha_dropout(tp.ones(50, device=cuda), 0.3, True).cpu().numpy()
    assert len(np.unique(y)) == 2
