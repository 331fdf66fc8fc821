"""The optimizers beyond SGD/Adam/RMSprop/Adagrad/Adadelta against torch.optim: LBFGS's
trajectory (closure-based, with and without the strong Wolfe line search), state_dicts that
cross between the frameworks both ways, and parameters without a gradient.

The 20-step parity of Adamax, NAdam, RAdam, Rprop, ASGD and Adafactor, their argument checks
and reprs are in test_optim.py's tables (CASES, FOREACH_CASES, BAD_ARGS)."""
import re

import numpy as np
import pytest
import torch

import tensorplay as tp

# ---- LBFGS ---------------------------------------------------------------------------------

RNG = np.random.default_rng(7)
_M = RNG.standard_normal((5, 5))
A = _M @ _M.T + 5 * np.eye(5)          # symmetric positive definite
B = RNG.standard_normal(5)
C = RNG.standard_normal((2, 3))


def _quadratic(lib, x, w):
    """0.5 x'Ax - b'x + |w - c|^2 / 2 over two parameters (a vector and a matrix), so the
    flat vector LBFGS works on spans both."""
    A_, B_, C_ = (lib.tensor(a.astype(x.detach().numpy().dtype)) for a in (A, B, C))
    return 0.5 * (x * (A_ @ x)).sum() - (B_ * x).sum() + 0.5 * ((w - C_) ** 2).sum()


def _rosenbrock(lib, x, w):
    """Rosenbrock's valley in 4 dims (x) plus a quartic bowl (w): a hard, non-quadratic case
    where the line search brackets and zooms."""
    rosen = (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()
    return rosen + ((w - 0.5) ** 4).sum()


def _lbfgs_pair(dtype, x0, w0, **kwargs):
    tparams = [torch.tensor(x0.astype(dtype), requires_grad=True),
               torch.tensor(w0.astype(dtype), requires_grad=True)]
    pparams = [tp.tensor(x0.astype(dtype), requires_grad=True),
               tp.tensor(w0.astype(dtype), requires_grad=True)]
    return (tparams, torch.optim.LBFGS(tparams, **kwargs)), \
        (pparams, tp.optim.LBFGS(pparams, **kwargs))


def _closure(lib, fn, params, opt, losses):
    def closure():
        opt.zero_grad()
        loss = fn(lib, *params)
        loss.backward()
        losses.append(float(loss.detach()))
        return loss
    return closure


def _run_lbfgs(fn, dtype, steps, x0, w0, **kwargs):
    """`steps` step() calls in both frameworks; returns both trajectories (the parameters
    after each step), both lists of closure losses, and the optimizers."""
    (tparams, topt), (pparams, popt) = _lbfgs_pair(dtype, x0, w0, **kwargs)
    tlosses, plosses = [], []
    ttraj, ptraj = [], []
    for _ in range(steps):
        tloss = topt.step(_closure(torch, fn, tparams, topt, tlosses))
        ploss = popt.step(_closure(tp, fn, pparams, popt, plosses))
        assert float(ploss.detach()) == pytest.approx(float(tloss.detach()), rel=1e-5, abs=1e-7)
        ttraj.append(np.concatenate([p.detach().numpy().ravel() for p in tparams]))
        ptraj.append(np.concatenate([p.detach().numpy().ravel() for p in pparams]))
    return (ttraj, tlosses, topt), (ptraj, plosses, popt)


LBFGS_CASES = [
    ("quadratic", dict()),
    ("quadratic", dict(lr=0.5, max_iter=4, history_size=3)),
    ("quadratic", dict(line_search_fn="strong_wolfe")),
    ("rosenbrock", dict(max_iter=5, history_size=4, lr=0.05)),
    ("rosenbrock", dict(line_search_fn="strong_wolfe")),
    ("rosenbrock", dict(line_search_fn="strong_wolfe", max_iter=7, max_eval=9,
                        history_size=3)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("problem, kwargs", LBFGS_CASES,
                         ids=[f"{p}-" + "-".join(f"{k}={v}" for k, v in kw.items())
                              for p, kw in LBFGS_CASES])
def test_lbfgs_trajectory_matches_torch(problem, kwargs, dtype):
    fn = _quadratic if problem == "quadratic" else _rosenbrock
    x0 = np.array([-1.2, 1.0, -0.5, 0.8, 0.3]) if problem == "quadratic" \
        else np.array([-1.2, 1.0, -0.5, 0.8])
    w0 = np.zeros((2, 3))
    # float32 on Rosenbrock's narrow valley amplifies the last-bit differences of the
    # reductions (sum and dot orders) step after step (float64 shows the path is the same):
    # one step() there, the full four everywhere else.
    steps = 1 if (problem == "rosenbrock" and dtype == np.float32) else 4
    (ttraj, tlosses, topt), (ptraj, plosses, popt) = _run_lbfgs(fn, dtype, steps, x0, w0,
                                                                **kwargs)
    # The same number of closure calls (the line search's branches were the same) ...
    assert len(plosses) == len(tlosses)
    # ... and the same points; float32 rounding differs in the dot products' order.
    rtol, atol = (1e-9, 1e-10) if dtype == np.float64 else (2e-4, 2e-5)
    np.testing.assert_allclose(plosses, tlosses, rtol=rtol, atol=atol)
    for t_point, p_point in zip(ttraj, ptraj):
        np.testing.assert_allclose(p_point, t_point, rtol=rtol, atol=atol)
    # The optimizer made progress, and the state has PyTorch's entries and counts.
    assert plosses[-1] < plosses[0]
    tstate = topt.state[topt.param_groups[0]["params"][0]]
    pstate = popt.state[popt.param_groups[0]["params"][0]]
    assert sorted(pstate) == sorted(tstate)
    for key in ("func_evals", "n_iter"):
        assert pstate[key] == tstate[key]
    assert len(pstate["old_dirs"]) == len(tstate["old_dirs"])
    np.testing.assert_allclose(pstate["d"].numpy(), tstate["d"].numpy(), rtol=rtol * 10,
                               atol=atol * 10)
    np.testing.assert_allclose(float(pstate["H_diag"]), float(tstate["H_diag"]),
                               rtol=rtol * 10)


def test_lbfgs_solves_the_quadratic():
    x0, w0 = np.zeros(5), np.zeros((2, 3))
    (_, _), (params, opt) = _lbfgs_pair(np.float64, x0, w0, line_search_fn="strong_wolfe")
    for _ in range(3):
        opt.step(_closure(tp, _quadratic, params, opt, []))
    # It stops once the loss changes by less than tolerance_change (1e-9).
    np.testing.assert_allclose(params[0].detach().numpy(), np.linalg.solve(A, B), atol=1e-4)
    np.testing.assert_allclose(params[1].detach().numpy(), C, atol=1e-4)


def _to_tp(value):
    if isinstance(value, torch.Tensor):
        return tp.tensor(value.detach().numpy().copy())
    if isinstance(value, dict):
        return {k: _to_tp(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_tp(v) for v in value]
    return value


def _to_torch(value):
    if isinstance(value, tp.Tensor):
        return torch.from_numpy(value.detach().numpy().copy())
    if isinstance(value, dict):
        return {k: _to_torch(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_torch(v) for v in value]
    return value


def test_lbfgs_loads_torch_state_and_continues_like_torch():
    """Two steps in torch, its state_dict (history lists included) loaded into tp, then two
    more steps in each: the same points."""
    x0, w0 = np.array([-1.2, 1.0, -0.5, 0.8]), np.zeros((2, 3))
    kwargs = dict(line_search_fn="strong_wolfe", max_iter=5, history_size=4)
    (tparams, topt), (pparams, _) = _lbfgs_pair(np.float64, x0, w0, lr=0.3, **kwargs)
    for _ in range(2):
        topt.step(_closure(torch, _rosenbrock, tparams, topt, []))
    sd = _to_tp(topt.state_dict())
    for tpar, ppar in zip(tparams, pparams):
        ppar.data = tp.tensor(tpar.detach().numpy().copy())
    popt = tp.optim.LBFGS(pparams)
    popt.load_state_dict(sd)
    assert popt.param_groups[0]["lr"] == 0.3 and popt.param_groups[0]["history_size"] == 4
    assert len(popt.state[pparams[0]]["old_dirs"]) == len(sd["state"][0]["old_dirs"]) > 0
    assert popt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]
    for _ in range(2):
        topt.step(_closure(torch, _rosenbrock, tparams, topt, []))
        popt.step(_closure(tp, _rosenbrock, pparams, popt, []))
    for tpar, ppar in zip(tparams, pparams):
        np.testing.assert_allclose(ppar.detach().numpy(), tpar.detach().numpy(), rtol=1e-9,
                                   atol=1e-10)


def test_lbfgs_errors_like_torch():
    w = tp.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        tp.optim.LBFGS([{"params": [w]}, {"params": [tp.zeros(1, requires_grad=True)]}])
    opt = tp.optim.LBFGS([w], line_search_fn="armijo")

    def closure():
        opt.zero_grad()
        loss = ((w - 1) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)
    assert tp.optim.LBFGS([w], max_iter=8).param_groups[0]["max_eval"] == 10


# ---- the state_dict both ways --------------------------------------------------------------

ELEMENTWISE = [
    ("Adamax", dict(lr=0.05, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1)),
    ("Rprop", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, t0=3, lambd=1e-3)),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1)),
]
SHAPES = [(), (3,), (4, 5), (2, 3, 4)]


def _grad(values, target):
    return np.asarray(2 * (values - target) + 0.9 * np.cos(3 * values), dtype=values.dtype)


def _params(lib, dtype, seed=0):
    rng = np.random.default_rng(seed)
    inits = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in SHAPES]
    targets = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in SHAPES]
    return [lib.tensor(a.copy(), requires_grad=True) for a in inits], targets


def _steps(lib, params, opt, targets, n, skip=()):
    for _ in range(n):
        for i, (p, t) in enumerate(zip(params, targets)):
            if i in skip:
                p.grad = None
                continue
            g = _grad(p.detach().numpy(), t)
            p.grad = torch.from_numpy(g) if lib is torch else tp.tensor(g)
        opt.step()


def _close(lib_params, torch_params, dtype):
    rtol, atol = (1e-5, 1e-5) if dtype == np.float32 else (1e-11, 1e-12)
    for p, t in zip(lib_params, torch_params):
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, kwargs", ELEMENTWISE, ids=[c[0] + str(i)
                                                           for i, c in enumerate(ELEMENTWISE)])
def test_torch_state_loads_into_tp_and_tp_state_into_torch(name, kwargs, dtype):
    """5 steps in torch; its state_dict loaded into tp and into a fresh torch optimizer
    (loading casts the 0-d float32 states, NAdam's mu_product, ASGD's eta and mu, to a float64
    parameter's dtype, in both); 5 steps in both; tp's state_dict loaded into another fresh
    torch optimizer; 5 steps in all three: the same parameters. The last parameter gets no
    gradient on the first steps, so it starts later (and the state then holds entries of
    different step counts)."""
    first, targets = _params(torch, dtype)
    pparams, _ = _params(tp, dtype)
    first_opt = getattr(torch.optim, name)(first, **kwargs)
    _steps(torch, first, first_opt, targets, 5, skip={3})
    tparams = [torch.tensor(p.detach().numpy().copy(), requires_grad=True) for p in first]
    topt = getattr(torch.optim, name)(tparams, lr=1.0)
    topt.load_state_dict(first_opt.state_dict())
    popt = getattr(tp.optim, name)(pparams, lr=1.0)
    for tpar, ppar in zip(tparams, pparams):
        ppar.data = tp.tensor(tpar.detach().numpy().copy())
    popt.load_state_dict(_to_tp(first_opt.state_dict()))
    assert 3 not in popt.state_dict()["state"]
    _steps(torch, tparams, topt, targets, 5)
    _steps(tp, pparams, popt, targets, 5)
    _close(pparams, tparams, dtype)

    # tp's state into torch, and into tp again: both load it alike (the 0-d states that
    # came after the first load are float32 again, cast once more), and continue alike.
    back_params = [torch.tensor(p.detach().numpy().copy(), requires_grad=True)
                   for p in pparams]
    back = getattr(torch.optim, name)(back_params, lr=1.0)
    psd = popt.state_dict()
    back.load_state_dict(_to_torch(psd))
    again_params = [tp.tensor(p.detach().numpy().copy(), requires_grad=True) for p in pparams]
    again = getattr(tp.optim, name)(again_params, lr=1.0)
    again.load_state_dict(psd)
    tsd = topt.state_dict()
    assert psd["param_groups"] == tsd["param_groups"]
    for idx, entry in tsd["state"].items():
        assert sorted(psd["state"][idx]) == sorted(entry)
        for key, value in entry.items():
            assert str(psd["state"][idx][key].dtype).split(".")[-1] == \
                str(value.dtype).split(".")[-1], key
    _steps(torch, tparams, topt, targets, 5)
    _steps(tp, pparams, popt, targets, 5)
    _steps(torch, back_params, back, targets, 5)
    _steps(tp, again_params, again, targets, 5)
    _close(pparams, tparams, dtype)
    _close(again_params, back_params, dtype)


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "Rprop", "ASGD", "Adafactor"])
def test_params_without_grad_are_skipped(name):
    a = tp.tensor(np.ones(2), requires_grad=True)
    b = tp.tensor(np.ones((2, 2)), requires_grad=True)
    opt = getattr(tp.optim, name)([a, b])
    a.grad = tp.tensor(np.array([0.5, -1.0]))
    opt.step()
    opt.step()
    assert b not in opt.state
    np.testing.assert_array_equal(b.detach().numpy(), np.ones((2, 2)))
    assert float(opt.state[a]["step"].item()) == 2.0
    assert not np.array_equal(a.detach().numpy(), np.ones(2))
    assert a.is_leaf and a.grad_fn is None


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "Rprop", "ASGD", "Adafactor"])
def test_param_groups_with_own_options(name):
    tparams, targets = _params(torch, np.float64, seed=1)
    pparams, _ = _params(tp, np.float64, seed=1)
    topt = getattr(torch.optim, name)([{"params": tparams[:2]},
                                       {"params": tparams[2:], "lr": 0.003}], lr=0.05)
    popt = getattr(tp.optim, name)([{"params": pparams[:2]},
                                    {"params": pparams[2:], "lr": 0.003}], lr=0.05)
    _steps(torch, tparams, topt, targets, 8)
    _steps(tp, pparams, popt, targets, 8)
    _close(pparams, tparams, np.float64)
    assert repr(popt) == repr(topt)


# ---- SparseAdam ----------------------------------------------------------------------------

def _sparse_grad(lib, rows, values, shape):
    indices = np.array([rows])
    if lib is torch:
        return torch.sparse_coo_tensor(torch.from_numpy(indices), torch.from_numpy(values),
                                       shape, check_invariants=True)
    return tp.sparse_coo_tensor(tp.tensor(indices), tp.tensor(values), shape)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kwargs", [dict(), dict(lr=0.05, betas=(0.8, 0.9), eps=1e-6),
                                    dict(lr=0.02, maximize=True)])
def test_sparse_adam_matches_torch(kwargs, dtype):
    """Sparse gradients of an embedding-like table: rows repeated within a step (summed by
    coalesce), rows that get no gradient for a while, a step with no entries at all."""
    rng = np.random.default_rng(4)
    shape = (6, 3)
    init = rng.standard_normal(shape).astype(dtype)
    tparam = torch.tensor(init.copy(), requires_grad=True)
    pparam = tp.tensor(init.copy(), requires_grad=True)
    topt = torch.optim.SparseAdam([tparam], **kwargs)
    popt = tp.optim.SparseAdam([pparam], **kwargs)
    for step in range(12):
        rows = [] if step == 5 else list(rng.integers(0, 4 if step < 8 else 6, size=4))
        values = rng.standard_normal((len(rows), 3)).astype(dtype)
        tparam.grad = _sparse_grad(torch, rows, values, shape)
        pparam.grad = _sparse_grad(tp, rows, values, shape)
        topt.step()
        popt.step()
    rtol, atol = (1e-5, 1e-6) if dtype == np.float32 else (1e-12, 1e-13)
    np.testing.assert_allclose(pparam.detach().numpy(), tparam.detach().numpy(), rtol=rtol,
                               atol=atol)
    tstate, pstate = topt.state[tparam], popt.state[pparam]
    assert pstate["step"] == tstate["step"] == 12
    for key in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_allclose(pstate[key].numpy(), tstate[key].numpy(), rtol=rtol,
                                   atol=atol)


def test_sparse_adam_errors_like_torch():
    w = tp.zeros(3, requires_grad=True)
    w.grad = tp.ones(3)
    with pytest.raises(RuntimeError, match="does not support dense gradients"):
        tp.optim.SparseAdam([w]).step()
    for kwargs, message in [(dict(lr=0.0), "Invalid learning rate: 0.0"),
                            (dict(eps=0.0), "Invalid epsilon value: 0.0"),
                            (dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            torch.optim.SparseAdam([torch.zeros(3, requires_grad=True)], **kwargs)
        with pytest.raises(ValueError, match=re.escape(message)):
            tp.optim.SparseAdam([w], **kwargs)


def test_lbfgs_with_a_parameter_the_loss_does_not_use():
    """A parameter without a gradient counts as a zero gradient in the flat vector (and does
    not move), as in PyTorch."""
    runs = []
    for lib in (torch, tp):
        x = lib.tensor(np.array([-1.2, 1.0, -0.5, 0.8]), requires_grad=True)
        unused = lib.tensor(np.array([3.0, 4.0]), requires_grad=True)
        opt = lib.optim.LBFGS([unused, x], line_search_fn="strong_wolfe", max_iter=6)

        def closure():
            opt.zero_grad()
            loss = (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()
            loss.backward()
            return loss

        for _ in range(2):
            opt.step(closure)
        runs.append((x.detach().numpy(), unused.detach().numpy()))
    (tx, tunused), (px, punused) = runs
    np.testing.assert_allclose(px, tx, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(punused, [3.0, 4.0])


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "Rprop", "ASGD", "Adafactor"])
def test_non_contiguous_parameters(name):
    """A transposed parameter (and its transposed gradient) steps as torch's does, and stays
    the same tensor."""
    rng = np.random.default_rng(5)
    init = rng.standard_normal((4, 3))
    target = rng.standard_normal((3, 4))
    tparam = torch.tensor(init.copy()).t().requires_grad_(True)
    pparam = tp.tensor(init.copy()).t().detach().requires_grad_(True)
    assert not pparam.is_contiguous()
    topt = getattr(torch.optim, name)([tparam], lr=0.05)
    popt = getattr(tp.optim, name)([pparam], lr=0.05)
    for _ in range(8):
        g = _grad(tparam.detach().numpy(), target)
        tparam.grad = torch.from_numpy(g.T.copy()).t()
        pparam.grad = tp.tensor(g.T.copy()).t()
        topt.step()
        popt.step()
    assert not pparam.is_contiguous()
    np.testing.assert_allclose(pparam.detach().numpy(), tparam.detach().numpy(), rtol=1e-11,
                               atol=1e-12)
