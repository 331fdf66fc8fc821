"""tp.optim against torch.optim: the same parameters and gradients for 20 steps must give
PyTorch's parameters; state_dicts round-trip and match PyTorch's layout; bad arguments raise
PyTorch's errors."""
import copy
import pickle
import re

import numpy as np
import pytest
import torch

import tensorplay as tp

SHAPES = [(), (3,), (4, 5)]

# (name, kwargs): several option combinations per optimizer.
CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.2, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict()),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6)),
    ("Adam", dict(lr=0.02, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.02, maximize=True)),
    ("AdamW", dict(lr=0.02)),
    ("AdamW", dict(lr=0.02, weight_decay=0.2, amsgrad=True, maximize=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, alpha=0.9)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1)),
    ("Adagrad", dict(lr=0.1, eps=1e-6, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.5, maximize=True)),
    # Appended (the state_dict test below picks cases by index).
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adamax", dict(lr=0.02, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.05, betas=(0.8, 0.99), momentum_decay=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1)),   # rectified from step 17
    ("RAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
    ("Rprop", dict(lr=0.02, maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=1e-3, alpha=0.6, t0=5, weight_decay=0.1)),
    ("ASGD", dict(lr=0.02, t0=3, maximize=True)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-6, 1e-2), d=1.5,
                       weight_decay=0.1)),
    ("Adafactor", dict(lr=0.02, maximize=True)),
]


def _grad(values, target):
    """A deterministic non-linear gradient: that of sum((p - t)^2 + 0.3 sin(3p))."""
    return np.asarray(2 * (values - target) + 0.9 * np.cos(3 * values), dtype=values.dtype)


def _pair(dtype, seed=0):
    rng = np.random.default_rng(seed)
    inits = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in SHAPES]
    targets = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in SHAPES]
    torch_params = [torch.tensor(a, requires_grad=True) for a in inits]
    tp_params = [tp.tensor(a.copy(), requires_grad=True) for a in inits]
    return torch_params, tp_params, targets


def _set_grads(torch_params, tp_params, targets):
    for tpar, ppar, target in zip(torch_params, tp_params, targets):
        tpar.grad = torch.from_numpy(_grad(tpar.detach().numpy(), target))
        ppar.grad = tp.tensor(_grad(ppar.detach().numpy(), target))


def _assert_params_close(torch_params, tp_params, dtype):
    # float32: parameters drift to |p| ~ 10 in some cases, where an ulp is ~1e-6.
    rtol, atol = (1e-5, 1e-5) if dtype == np.float32 else (1e-12, 1e-13)
    for tpar, ppar in zip(torch_params, tp_params):
        np.testing.assert_allclose(ppar.detach().numpy(), tpar.detach().numpy(),
                                   rtol=rtol, atol=atol)


def _case_id(case):
    name, kwargs = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in kwargs.items())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_twenty_steps_match_torch(case, dtype):
    name, kwargs = case
    torch_params, tp_params, targets = _pair(dtype)
    topt = getattr(torch.optim, name)(torch_params, **kwargs)
    popt = getattr(tp.optim, name)(tp_params, **kwargs)
    for _ in range(20):
        _set_grads(torch_params, tp_params, targets)
        topt.step()
        popt.step()
    _assert_params_close(torch_params, tp_params, dtype)
    # State tensors carry PyTorch's names, values and dtypes.
    tstate = topt.state_dict()["state"]
    pstate = popt.state_dict()["state"]
    assert tstate.keys() == pstate.keys()
    for idx in tstate:
        assert tstate[idx].keys() == pstate[idx].keys()
        for key, tval in tstate[idx].items():
            pval = pstate[idx][key]
            assert str(pval.dtype).split(".")[-1] == str(tval.dtype).split(".")[-1]
            # Tolerance relative to the buffer's scale: a momentum buffer of |x| ~ 10 carries
            # float32 noise of that order into its small entries.
            rtol = 1e-5 if dtype == np.float32 else 1e-10
            scale = max(1.0, float(np.abs(tval.numpy()).max()))
            np.testing.assert_allclose(pval.numpy(), tval.numpy(), rtol=rtol, atol=rtol * scale)
    # The step itself records no autograd history.
    for p in tp_params:
        assert p.is_leaf and p.grad_fn is None and p.requires_grad
    for entry in pstate.values():
        assert all(not v.requires_grad for v in entry.values())


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)),
                                         ("Adam", dict(lr=0.01)),
                                         ("RMSprop", dict(lr=0.01, centered=True))])
def test_param_groups_with_own_options(name, kwargs):
    torch_params, tp_params, targets = _pair(np.float64, seed=1)
    tgroups = [{"params": torch_params[:2]}, {"params": torch_params[2:], "lr": 0.003}]
    pgroups = [{"params": tp_params[:2]}, {"params": tp_params[2:], "lr": 0.003}]
    topt = getattr(torch.optim, name)(tgroups, **kwargs)
    popt = getattr(tp.optim, name)(pgroups, **kwargs)
    for _ in range(10):
        _set_grads(torch_params, tp_params, targets)
        topt.step()
        popt.step()
    _assert_params_close(torch_params, tp_params, np.float64)
    assert repr(popt) == repr(topt)


def test_training_a_linear_model_end_to_end():
    """Loss and gradients from tp's own autograd, Adam steps: the weights follow torch's."""
    torch.manual_seed(0)
    tlin = torch.nn.Linear(4, 3)
    plin = tp.nn.Linear(4, 3)
    plin.weight.data = tp.tensor(tlin.weight.detach().numpy().copy())
    plin.bias.data = tp.tensor(tlin.bias.detach().numpy().copy())
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    topt = torch.optim.Adam(tlin.parameters(), lr=0.05)
    popt = tp.optim.Adam(plin.parameters(), lr=0.05)
    for _ in range(20):
        topt.zero_grad()
        popt.zero_grad()
        ((tlin(torch.from_numpy(x)) - 1.0) ** 2).mean().backward()
        ((plin(tp.tensor(x)) - 1.0) ** 2).mean().backward()
        topt.step()
        popt.step()
    np.testing.assert_allclose(plin.weight.detach().numpy(), tlin.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(plin.bias.detach().numpy(), tlin.bias.detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_closure_runs_with_grad_enabled_and_returns_loss():
    w = tp.tensor(np.array([1.0, -2.0]), requires_grad=True)
    opt = tp.optim.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with tp.no_grad():
        loss = opt.step(closure)
    assert float(loss.item()) == pytest.approx(5.0)
    np.testing.assert_allclose(w.detach().numpy(), [0.8, -1.6])


def test_params_without_grad_are_skipped_and_get_no_state():
    a = tp.tensor(np.ones(2), requires_grad=True)
    b = tp.tensor(np.ones(2), requires_grad=True)
    opt = tp.optim.Adam([a, b], lr=0.1)
    a.grad = tp.tensor(np.ones(2))
    opt.step()
    assert b not in opt.state
    np.testing.assert_array_equal(b.detach().numpy(), [1.0, 1.0])
    assert float(opt.state[a]["step"].item()) == 1.0


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none):
    w = tp.tensor(np.ones(3), requires_grad=True)
    opt = tp.optim.SGD([w], lr=0.1)
    (w * 2).sum().backward()
    opt.zero_grad(set_to_none=set_to_none)
    if set_to_none:
        assert w.grad is None
    else:
        np.testing.assert_array_equal(w.grad.numpy(), np.zeros(3))


def test_named_parameters_are_kept_in_groups():
    lin = tp.nn.Linear(2, 2)
    opt = tp.optim.SGD(lin.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]
    assert opt.state_dict()["param_groups"][0]["params"] == [0, 1]


# ---- state_dict ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", [CASES[2], CASES[7], CASES[10], CASES[14], CASES[16],
                                  CASES[19], CASES[22], CASES[26], CASES[28], CASES[31],
                                  CASES[34], CASES[37]], ids=_case_id)
def test_state_dict_round_trip_continues_like_uninterrupted(case):
    name, kwargs = case
    _, params_a, targets = _pair(np.float32, seed=2)
    opt_a = getattr(tp.optim, name)(params_a, **kwargs)

    def run(params, opt, steps):
        for _ in range(steps):
            for p, t in zip(params, targets):
                p.grad = tp.tensor(_grad(p.detach().numpy(), t))
            opt.step()

    run(params_a, opt_a, 10)
    # Through pickle, as a checkpoint file would be (tp.save is not written yet).
    saved = pickle.dumps(opt_a.state_dict())
    params_b = [tp.tensor(p.detach().numpy().copy(), requires_grad=True) for p in params_a]
    opt_b = getattr(tp.optim, name)(params_b, lr=123.0)
    opt_b.load_state_dict(pickle.loads(saved))
    assert opt_b.param_groups[0]["lr"] == opt_a.param_groups[0]["lr"]
    run(params_a, opt_a, 10)
    run(params_b, opt_b, 10)
    for pa, pb in zip(params_a, params_b):
        np.testing.assert_array_equal(pa.detach().numpy(), pb.detach().numpy())


def test_state_dict_layout_matches_torch_and_loads_torch_state():
    """A torch state_dict (tensors converted) loaded into tp continues as torch does."""
    torch_params, tp_params, targets = _pair(np.float64, seed=3)
    topt = torch.optim.Adam(torch_params, lr=0.01, amsgrad=True)
    for _ in range(5):
        _set_grads(torch_params, [tp.tensor(p.detach().numpy()) for p in torch_params],
                   targets)
        topt.step()
    tsd = topt.state_dict()
    psd = {"state": {k: {n: tp.tensor(v.numpy().copy()) for n, v in s.items()}
                     for k, s in tsd["state"].items()},
           "param_groups": copy.deepcopy(tsd["param_groups"])}
    for tpar, ppar in zip(torch_params, tp_params):
        ppar.data = tp.tensor(tpar.detach().numpy().copy())
    popt = tp.optim.Adam(tp_params, lr=0.5)
    popt.load_state_dict(psd)
    own = popt.state_dict()
    assert own["param_groups"] == tsd["param_groups"]
    assert {k: sorted(v) for k, v in own["state"].items()} == \
        {k: sorted(v) for k, v in tsd["state"].items()}
    for _ in range(10):
        _set_grads(torch_params, tp_params, targets)
        topt.step()
        popt.step()
    _assert_params_close(torch_params, tp_params, np.float64)


def test_loaded_state_is_a_copy():
    _, params, targets = _pair(np.float32)
    opt = tp.optim.SGD(params, lr=0.1, momentum=0.9)
    for p, t in zip(params, targets):
        p.grad = tp.tensor(_grad(p.detach().numpy(), t))
    opt.step()
    other = tp.optim.SGD([tp.tensor(p.detach().numpy(), requires_grad=True) for p in params],
                         lr=0.1)
    other.load_state_dict(opt.state_dict())
    buf = opt.state[params[1]]["momentum_buffer"]
    assert other.state[other.param_groups[0]["params"][1]]["momentum_buffer"] is not buf
    assert other.param_groups[0]["momentum"] == 0.9


def test_load_state_dict_checks_group_sizes():
    _, params, _ = _pair(np.float32)
    sd = tp.optim.SGD(params, lr=0.1).state_dict()
    with pytest.raises(ValueError, match="doesn't match the size"):
        tp.optim.SGD(params[:2], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        tp.optim.SGD([{"params": params[:1]}, {"params": params[1:]}],
                     lr=0.1).load_state_dict(sd)


# ---- errors -------------------------------------------------------------------------------

BAD_ARGS = [
    ("SGD", dict(lr=-1)), ("SGD", dict(lr=0.1, momentum=-0.5)),
    ("SGD", dict(lr=0.1, weight_decay=-1)), ("SGD", dict(lr=0.1, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)),
    ("Adam", dict(lr=-1)), ("Adam", dict(eps=-1.0)), ("Adam", dict(betas=(1.0, 0.9))),
    ("Adam", dict(betas=(0.9, -0.1))), ("Adam", dict(weight_decay=-0.1)),
    ("AdamW", dict(lr=-0.5)), ("RMSprop", dict(alpha=-1)), ("RMSprop", dict(momentum=-1)),
    ("Adagrad", dict(lr_decay=-1)), ("Adagrad", dict(initial_accumulator_value=-1)),
    ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(eps=-1)),
    ("Adamax", dict(lr=-1)), ("Adamax", dict(betas=(0.9, 1.0))), ("Adamax", dict(eps=-1)),
    ("Adamax", dict(weight_decay=-1)), ("NAdam", dict(momentum_decay=-1)),
    ("NAdam", dict(betas=(-0.1, 0.9))), ("NAdam", dict(weight_decay=-1)),
    ("RAdam", dict(eps=-1)), ("RAdam", dict(betas=(1.0, 0.9))),
    ("Rprop", dict(lr=-1)), ("Rprop", dict(etas=(1.0, 1.2))), ("Rprop", dict(etas=(0.5, 1.0))),
    ("ASGD", dict(lr=-1)), ("ASGD", dict(weight_decay=-1)),
    ("Adafactor", dict(lr=-1)), ("Adafactor", dict(beta2_decay=0.1)),
    ("Adafactor", dict(eps=(-1, 1e-3))), ("Adafactor", dict(eps=(None, -1))),
    ("Adafactor", dict(d=0.5)), ("Adafactor", dict(weight_decay=-1)),
    ("LBFGS", dict(lr=-1)),
]


@pytest.mark.parametrize("case", BAD_ARGS, ids=_case_id)
def test_bad_arguments_raise_like_torch(case):
    name, kwargs = case
    with pytest.raises(Exception) as texc:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(type(texc.value), match=re.escape(str(texc.value))):
        getattr(tp.optim, name)([tp.zeros(2, requires_grad=True)], **kwargs)


def test_bad_params_raise_like_torch():
    w = tp.zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        tp.optim.SGD(w, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        tp.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        tp.optim.SGD([{"params": {w}}], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        tp.optim.SGD([w, 3.0], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        tp.optim.SGD([w * 2], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        tp.optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    opt = tp.optim.SGD([w], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": w})
    with pytest.raises(ValueError, match="Some param names are missing"):
        tp.optim.SGD([("a", w), tp.zeros(1, requires_grad=True)], lr=0.1)


def test_required_option_must_be_given():
    class Plain(tp.optim.Optimizer):
        def __init__(self, params, lr=tp.optim.optimizer.required):
            super().__init__(params, dict(lr=lr))

    w = tp.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="required optimization parameter lr"):
        Plain([w])
    opt = Plain([{"params": [w], "lr": 0.5}])
    opt.add_param_group({"params": [tp.zeros(1, requires_grad=True)], "lr": 0.1})
    assert [g["lr"] for g in opt.param_groups] == [0.5, 0.1]
    with pytest.raises(ValueError, match="required optimization parameter lr"):
        opt.add_param_group({"params": [tp.zeros(1, requires_grad=True)]})


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta",
                                  "Adamax", "NAdam", "RAdam", "Rprop", "ASGD", "Adafactor",
                                  "LBFGS", "SparseAdam"])
def test_repr_matches_torch(name):
    kwargs = dict(lr=0.1)
    t = getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], **kwargs)
    p = getattr(tp.optim, name)([tp.zeros(1, requires_grad=True)], **kwargs)
    assert repr(p) == repr(t)


# ---- foreach: the flat multi-tensor path -----------------------------------------------
#
# foreach=True runs the same elementwise ops as the loop over flat buffers, so the two
# must agree bit for bit (not just to a tolerance), and both must follow torch. A tiny
# CHUNK_BYTES makes the CPU batches end inside parameters, which exercises the segments.

FOREACH_CASES = [
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.2, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1, maximize=True)),
    ("SGD", dict(lr=0.1)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6)),
    ("Adam", dict(lr=0.02, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("Adam", dict(lr=0.02, betas=(0.3, 0.9))),          # lerp weight >= 0.5
    ("AdamW", dict(lr=0.02, weight_decay=0.2, amsgrad=True)),
    ("AdamW", dict(lr=0.02, maximize=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1)),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, maximize=True)),
    ("RAdam", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1)),
    ("RAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True)),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)),
]

FOREACH_SHAPES = [(), (3,), (4, 5), (2, 3, 2), (7,)]


def _groups(params, lib_kwargs):
    """Two groups, the second with its own lr."""
    return [{"params": params[:3]}, {"params": params[3:], "lr": 0.003}]


def _three(name, kwargs, dtype, seed=0):
    """(torch optimizer, loop optimizer, foreach optimizer) over equal parameters."""
    rng = np.random.default_rng(seed)
    inits = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in FOREACH_SHAPES]
    targets = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in FOREACH_SHAPES]
    tparams = [torch.tensor(a, requires_grad=True) for a in inits]
    loop = [tp.tensor(a.copy(), requires_grad=True) for a in inits]
    flat = [tp.tensor(a.copy(), requires_grad=True) for a in inits]
    topt = getattr(torch.optim, name)(_groups(tparams, kwargs), **kwargs)
    lopt = getattr(tp.optim, name)(_groups(loop, kwargs), foreach=False, **kwargs)
    fopt = getattr(tp.optim, name)(_groups(flat, kwargs), foreach=True, **kwargs)
    return (tparams, topt), (loop, lopt), (flat, fopt), targets


def _step_all(runs, targets, skip=()):
    """One step of every (params, optimizer) in runs, with the same gradients; parameters
    whose index is in `skip` get no gradient this step."""
    for params, opt in runs:
        for i, (p, t) in enumerate(zip(params, targets)):
            if i in skip:
                p.grad = None
                continue
            values = p.detach().numpy()
            grad = _grad(values, t)
            p.grad = torch.from_numpy(grad) if isinstance(p, torch.Tensor) else tp.tensor(grad)
        opt.step()


def _assert_same_bits(params_a, params_b):
    for a, b in zip(params_a, params_b):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.fixture(params=["default chunks", "12-byte chunks"])
def chunk_bytes(request, monkeypatch):
    from tensorplay.optim import _foreach
    if request.param != "default chunks":
        monkeypatch.setattr(_foreach, "CHUNK_BYTES", 12)
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", FOREACH_CASES, ids=[_case_id(c) for c in FOREACH_CASES])
def test_foreach_equals_loop_bit_for_bit_and_follows_torch(case, dtype, chunk_bytes):
    name, kwargs = case
    (tparams, topt), (loop, lopt), (flat, fopt), targets = _three(name, kwargs, dtype)
    for _ in range(20):
        _step_all([(tparams, topt), (loop, lopt), (flat, fopt)], targets)
    _assert_same_bits(loop, flat)
    _assert_params_close(tparams, flat, dtype)
    lstate, fstate = lopt.state_dict(), fopt.state_dict()
    assert lstate["param_groups"] == [dict(g, foreach=False) for g in fstate["param_groups"]]
    assert lstate["state"].keys() == fstate["state"].keys() == topt.state_dict()["state"].keys()
    for idx, entry in lstate["state"].items():
        assert list(entry) == list(fstate["state"][idx])
        for key, value in entry.items():
            got = fstate["state"][idx][key]
            assert got.shape == value.shape and got.dtype == value.dtype
            np.testing.assert_array_equal(got.numpy(), value.numpy())


def test_foreach_state_is_views_of_one_buffer_that_follow_the_steps():
    (_, _), (_, _), (flat, fopt), targets = _three("Adam", dict(lr=0.01), np.float32)
    _step_all([(flat, fopt)], targets)
    held = fopt.state[flat[1]]["exp_avg"]
    before = held.numpy().copy()
    _step_all([(flat, fopt)], targets)
    # The tensor a user holds is updated in place, as in the loop (and in PyTorch).
    assert fopt.state[flat[1]]["exp_avg"] is held
    assert not np.array_equal(held.numpy(), before)
    # Within a group, every parameter's buffer lives in one storage, end to end.
    first, second = (fopt.state[p]["exp_avg"] for p in flat[:2])
    assert first.untyped_storage() is second.untyped_storage()
    assert second.data_ptr() - first.data_ptr() == first.numel() * first.element_size()
    assert fopt.state[flat[3]]["exp_avg"].untyped_storage() is not first.untyped_storage()


@pytest.mark.parametrize("source, target", [(False, True), (True, False)])
@pytest.mark.parametrize("case", [FOREACH_CASES[0], FOREACH_CASES[4], FOREACH_CASES[8],
                                  FOREACH_CASES[10], FOREACH_CASES[11]], ids=_case_id)
def test_load_state_dict_between_foreach_and_loop(case, source, target, tmp_path):
    """10 steps, a checkpoint through tp.save / tp.load, 10 more steps in an optimizer of the
    other kind: the same bits as 20 uninterrupted steps."""
    name, kwargs = case
    (_, _), (loop, lopt), (params, opt), targets = _three(name, kwargs, np.float64)
    opt.param_groups[0]["foreach"] = opt.param_groups[1]["foreach"] = source
    for _ in range(10):
        _step_all([(loop, lopt), (params, opt)], targets)
    tp.save({"params": [p.detach() for p in params], "optimizer": opt.state_dict()},
            tmp_path / "ckpt.tp")
    saved = tp.load(tmp_path / "ckpt.tp")
    resumed = [tp.tensor(p.numpy().copy(), requires_grad=True) for p in saved["params"]]
    ropt = getattr(tp.optim, name)(_groups(resumed, kwargs), foreach=target, lr=1.0)
    ropt.load_state_dict(saved["optimizer"])
    assert [g["foreach"] for g in ropt.param_groups] == [source, source]
    for group in ropt.param_groups:   # the loaded options say `source`: run as `target`
        group["foreach"] = target
    for _ in range(10):
        _step_all([(loop, lopt), (resumed, ropt)], targets)
    _assert_same_bits(loop, resumed)


def test_foreach_with_gradients_that_come_and_go(chunk_bytes):
    """Parameters without a gradient are skipped (and get no state until they have one);
    the flat buffers are rebuilt around them, keeping the state so far."""
    (tparams, topt), (loop, lopt), (flat, fopt), targets = _three(
        "SGD", dict(lr=0.05, momentum=0.9, dampening=0.3), np.float32)
    runs = [(tparams, topt), (loop, lopt), (flat, fopt)]
    _step_all(runs, targets, skip={1, 4})
    assert flat[1] not in fopt.state and flat[0] in fopt.state
    for skip in [{1}, set(), {0, 2}, set(), set()]:
        _step_all(runs, targets, skip=skip)
    _assert_same_bits(loop, flat)
    _assert_params_close(tparams, flat, np.float32)


def test_foreach_with_step_counts_that_differ():
    """A parameter whose state was loaded with another step count cannot share the group's
    bias corrections: the step falls back to the loop for that group and still matches."""
    (tparams, topt), (loop, lopt), (flat, fopt), targets = _three(
        "Adam", dict(lr=0.02), np.float64)
    runs = [(tparams, topt), (loop, lopt), (flat, fopt)]
    _step_all(runs, targets, skip={0})
    for _ in range(4):
        _step_all(runs, targets)
    assert fopt.state[flat[0]]["step"].item() == 4 and fopt.state[flat[1]]["step"].item() == 5
    _assert_same_bits(loop, flat)
    _assert_params_close(tparams, flat, np.float64)


@pytest.mark.parametrize("name, state, flat_default", [
    ("RMSprop", "square_avg", True),
    # fused steps (one op per parameter): None is the loop on the CPU, True the flat path
    ("Adam", "exp_avg", False),
    ("SGD", "momentum_buffer", False),
])
def test_foreach_none_is_the_flat_path_and_false_the_loop(name, state, flat_default):
    def storages(foreach, **kwargs):
        params = [tp.zeros(3, requires_grad=True), tp.zeros(2, requires_grad=True)]
        opt = getattr(tp.optim, name)(params, lr=0.1, foreach=foreach, **kwargs)
        for p in params:
            p.grad = tp.ones(p.shape)
        opt.step()
        opt.step()
        a, b = (opt.state[p][state] for p in params)
        return a.untyped_storage() is b.untyped_storage()

    kwargs = dict(momentum=0.9) if name == "SGD" else {}
    default = getattr(tp.optim, name)([tp.zeros(1, requires_grad=True)])
    assert default.param_groups[0]["foreach"] is None
    assert storages(None, **kwargs) is flat_default
    assert storages(True, **kwargs)
    assert not storages(False, **kwargs)


def test_foreach_keeps_non_contiguous_parameters_whole():
    loop_p = tp.tensor(np.arange(12.0).reshape(4, 3)).t().detach().requires_grad_(True)
    flat_p = tp.tensor(np.arange(12.0).reshape(4, 3)).t().detach().requires_grad_(True)
    assert not flat_p.is_contiguous() and flat_p.shape == (3, 4)
    others = [tp.tensor(np.ones(5), requires_grad=True) for _ in range(2)]
    lopt = tp.optim.Adam([loop_p, others[0]], lr=0.1, foreach=False)
    fopt = tp.optim.Adam([flat_p, others[1]], lr=0.1, foreach=True)
    for _ in range(3):
        for p in (loop_p, flat_p):
            p.grad = tp.tensor(np.sin(p.detach().numpy()))
        for p in others:
            p.grad = tp.ones(5, dtype=tp.float64)
        lopt.step()
        fopt.step()
    assert not flat_p.is_contiguous()
    _assert_same_bits([loop_p, others[0]], [flat_p, others[1]])


def test_foreach_on_cuda_matches_cpu():
    pytest.importorskip("triton")
    if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
        pytest.skip("no GPU and no Triton interpreter")
    rng = np.random.default_rng(0)
    inits = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (5,)]]
    cpu = [tp.tensor(a.copy(), requires_grad=True) for a in inits]
    dev = [tp.tensor(a.copy()).to("cuda").requires_grad_(True) for a in inits]
    copt = tp.optim.Adam(cpu, lr=0.05, weight_decay=0.1, foreach=True)
    dopt = tp.optim.Adam(dev, lr=0.05, weight_decay=0.1, foreach=True)
    for _ in range(3):
        for c, d in zip(cpu, dev):
            g = np.cos(c.detach().numpy())
            c.grad = tp.tensor(g)
            d.grad = tp.tensor(g).to("cuda")
        copt.step()
        dopt.step()
    for c, d in zip(cpu, dev):
        assert d.device.type == "cuda"
        np.testing.assert_allclose(d.detach().cpu().numpy(), c.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    assert dopt.state[dev[0]]["exp_avg"].device.type == "cuda"
    assert dopt.state[dev[0]]["step"].device.type == "cpu"


def test_deepcopy_of_a_foreach_optimizer_continues_independently():
    (_, _), (_, _), (params, opt), targets = _three("Adam", dict(lr=0.02, amsgrad=True),
                                                    np.float64)
    for _ in range(3):
        _step_all([(params, opt)], targets)
    twin = copy.deepcopy({"params": params, "opt": opt})
    twin_params, twin_opt = twin["params"], twin["opt"]
    assert twin_opt.state[twin_params[0]]["exp_avg"] is not opt.state[params[0]]["exp_avg"]
    for _ in range(3):
        _step_all([(params, opt), (twin_params, twin_opt)], targets)
    _assert_same_bits(params, twin_params)


FUSED_CASES = [c for c in CASES if c[0] in ("Adam", "AdamW", "SGD")] + [
    ("Adam", dict(lr=0.02, betas=(0.3, 0.9), weight_decay=0.1, maximize=True)),
]


@pytest.mark.parametrize("foreach", [False, True, None])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", FUSED_CASES, ids=[_case_id(c) for c in FUSED_CASES])
def test_fused_step_equals_the_unfused_ops_bit_for_bit(case, dtype, foreach):
    """Adam's and SGD's default step is one op per batch, _fused_adam_ or _fused_sgd_
    (cpu_kernels/optim.py); with differentiable=True they run the ops autograd can record.
    Same bits, parameters and state, over a 40000-element parameter, a transposed one (the
    kernel's copy-in, copy-out path) and a 0-d one; the last one gets no gradient
    on the first step, so its momentum starts later than the others'."""
    name, kwargs = case
    rng = np.random.default_rng(3)
    shapes = [(40000,), (6, 5), (), (3, 2)]
    inits = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in shapes]
    targets = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in shapes]
    runs = []
    for differentiable in (False, True):
        params = [tp.tensor(a.copy(), requires_grad=True) for a in inits]
        params[1] = tp.tensor(inits[1].T.copy()).t().requires_grad_(True)   # strided
        opt = getattr(tp.optim, name)(params, foreach=foreach, differentiable=differentiable,
                                      **kwargs)
        runs.append((params, opt))
    targets[1] = np.ascontiguousarray(targets[1])
    for i in range(5):
        _step_all(runs, targets, skip=(3,) if i == 0 else ())
    (fused, fused_opt), (ops, ops_opt) = runs
    assert not fused[1].is_contiguous()
    _assert_same_bits(fused, ops)
    for p_fused, p_ops in zip(fused, ops):
        for key, value in ops_opt.state[p_ops].items():
            np.testing.assert_array_equal(fused_opt.state[p_fused][key].numpy(), value.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_adam_late_steps_equal_the_unfused_ops_and_follow_torch(dtype):
    """Once sqrt(1 - beta2^t) rounds to 1 in the dtype, the fused kernel skips its division
    by it (x / 1 is x): still the bits of the unfused ops (which divide), and torch's
    numbers. beta2 = 0.5 gets there by step ~27 in float32 and ~55 in float64."""
    kwargs = dict(lr=0.01, betas=(0.9, 0.5), weight_decay=0.05)
    rng = np.random.default_rng(5)
    shapes = [(40000,), (3, 2)]
    inits = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in shapes]
    targets = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in shapes]
    tparams = [torch.tensor(a, requires_grad=True) for a in inits]
    runs = [(tparams, torch.optim.Adam(tparams, **kwargs))]
    for differentiable in (False, True):
        params = [tp.tensor(a.copy(), requires_grad=True) for a in inits]
        runs.append((params, tp.optim.Adam(params, differentiable=differentiable, **kwargs)))
    steps = 60
    assert dtype((1 - 0.5 ** steps) ** 0.5) == 1
    for _ in range(steps):
        _step_all(runs, targets)
    _assert_same_bits(runs[1][0], runs[2][0])
    _assert_params_close(tparams, runs[1][0], dtype)


def test_the_fused_loop_counts_a_groups_steps_in_one_tensor():
    """The default CPU step (fused, one op per parameter) keeps the group's step counters
    as the 0-d views of one tensor, advanced by one add_ a step (_foreach._advanced_steps).
    The counts follow torch's; a state loaded from a state_dict keeps its own counters,
    each advanced in place."""
    rng = np.random.default_rng(7)
    inits = [rng.standard_normal(s).astype(np.float32) for s in ((4, 3), (3,), ())]
    params = [tp.tensor(a, requires_grad=True) for a in inits]
    tparams = [torch.tensor(a, requires_grad=True) for a in inits]
    opt, topt = tp.optim.Adam(params, lr=0.1), torch.optim.Adam(tparams, lr=0.1)
    for _ in range(3):
        _step_all([(params, opt), (tparams, topt)], inits)
    steps = [opt.state[p]["step"] for p in params]
    assert [s.item() for s in steps] == [3.0] * 3 and all(s.dim() == 0 for s in steps)
    assert len({s.data_ptr() - 4 * i for i, s in enumerate(steps)}) == 1    # one tensor
    _assert_params_close(tparams, params, np.float32)
    loaded = tp.optim.Adam(params, lr=0.1)
    loaded.load_state_dict(opt.state_dict())
    own = [loaded.state[p]["step"] for p in params]
    _step_all([(params, loaded)], inits)
    assert all(loaded.state[p]["step"] is s for p, s in zip(params, own))   # the same
    assert [s.item() for s in own] == [4.0] * 3                  # tensors, advanced in place


def test_fused_adam_is_one_op_per_parameter_and_updates_in_place(monkeypatch):
    """The loop path calls _fused_adam_ once per parameter, writing the parameter's own
    storage (no new tensor, the version counter bumped once)."""
    from tensorplay._generated import functional as F
    p = tp.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    p.grad = tp.ones(2, 3)
    opt = tp.optim.Adam([p], lr=0.1, foreach=False)
    ptr, version = p.data_ptr(), p._version
    calls = []
    original = F._fused_adam_
    monkeypatch.setattr(F, "_fused_adam_", lambda *args: calls.append(args) or original(*args))
    opt.step()
    assert len(calls) == 1 and calls[0][0] is p
    assert p.data_ptr() == ptr and p._version == version + 1
    # First step of Adam: every element moves by lr against the gradient's sign.
    np.testing.assert_allclose(p.detach().numpy(), np.arange(6).reshape(2, 3) - 0.1, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_adam_loop_compiled_gives_the_bits_of_its_python_form(dtype):
    """The compiled loop (cpu_kernels/_loops.py: no fastmath, so no reordering and no fused
    multiply-add) and the same function run as plain Python agree bit for bit, amsgrad and
    weight decay on, NaN and inf gradients included."""
    from cpu_kernels.optim import _adam_loop
    rng = np.random.default_rng(7)
    grad = rng.standard_normal(64).astype(dtype)
    grad[[3, 9]] = [np.nan, np.inf]
    start = [rng.standard_normal(64).astype(dtype) for _ in range(2)] + \
        [np.abs(rng.standard_normal(64)).astype(dtype) for _ in range(2)]
    num = np.dtype(dtype).type
    numbers = (False, True, num(0.1), False, num(1), True, num(0.1), num(0.9), num(0.999),
               num(0.001), True, True, num(0.03), num(1e-8), num(-0.01))
    results = []
    for fn in (_adam_loop, _adam_loop.python):
        arrays = [a.copy() for a in start]
        with np.errstate(all="ignore"):
            fn(arrays[0], grad, *arrays[1:], *numbers)
        results.append(arrays)
    for compiled, python in zip(*results):
        np.testing.assert_array_equal(compiled.view(f"u{compiled.itemsize}"),
                                      python.view(f"u{python.itemsize}"))
