"""tp.optim.Muon, tp.optim.swa_utils and tp.optim.swap_in_optimizer_params_and_state
against PyTorch 2.13's: the same parameters and gradients give PyTorch's parameters and
state_dicts step by step; the weight averages, the SWALR schedule and update_bn's
BatchNorm statistics are PyTorch's; bad arguments raise PyTorch's errors."""
import copy

import numpy as np
import pytest
import torch

import tensorplay as tp

MUON_SHAPES = [(4, 5), (6, 3), (3, 3)]      # wide, tall (iterated transposed), square


def _grad(values, target):
    """A deterministic non-linear gradient: that of sum((p - t)^2 + 0.3 sin(3p))."""
    return np.asarray(2 * (values - target) + 0.9 * np.cos(3 * values), dtype=values.dtype)


def _pair(dtype, shapes, seed=0):
    rng = np.random.default_rng(seed)
    inits = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in shapes]
    targets = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in shapes]
    return ([torch.tensor(a, requires_grad=True) for a in inits],
            [tp.tensor(a.copy(), requires_grad=True) for a in inits], targets)


def _set_grads(torch_params, tp_params, targets):
    for tpar, ppar, target in zip(torch_params, tp_params, targets):
        tpar.grad = torch.from_numpy(_grad(tpar.detach().numpy(), target))
        ppar.grad = tp.tensor(_grad(ppar.detach().numpy(), target))


def _close(ours, theirs, dtype):
    rtol, atol = (1e-5, 1e-6) if dtype == np.float32 else (1e-12, 1e-13)
    np.testing.assert_allclose(np.asarray(ours.detach().tolist()), theirs.detach().numpy(),
                               rtol=rtol, atol=atol)


MUON_CASES = [
    dict(),
    dict(lr=0.02, momentum=0.9, nesterov=False, weight_decay=0.0),
    dict(lr=0.05, weight_decay=0.3, adjust_lr_fn="match_rms_adamw"),
    dict(lr=0.01, ns_steps=3, ns_coefficients=(3.0, -3.2, 1.2), eps=1e-5, adjust_lr_fn="original"),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kwargs", MUON_CASES, ids=lambda k: "-".join(f"{a}={b}" for a, b in k.items()))
def test_muon_steps_and_state_match_torch(kwargs, dtype):
    """Ten steps, each from the same parameters and buffers (ours are set to PyTorch's
    after each comparison, so a difference cannot compound).

    The Newton-Schulz iteration runs in bfloat16 in both. Its matmuls accumulate in
    float32 and round once to bfloat16, PyTorch's (oneDNN) and ours (numpy) summing in
    different orders: about one entry in a thousand rounds to the neighbouring bfloat16
    (one ulp, 2^-7 relative). So every entry must agree to within the learning rate
    times one such ulp, and almost all of them exactly (to float rounding)."""
    torch_params, tp_params, targets = _pair(dtype, MUON_SHAPES)
    topt = torch.optim.Muon(torch_params, **kwargs)
    popt = tp.optim.Muon(tp_params, **kwargs)
    lr = kwargs.get("lr", 1e-3)
    one_ulp = lr * 1.5 * 2.0 ** -7        # lr' <= 1.5 lr here; |update entries| < 2
    exact, entries = 0, 0
    for _ in range(10):
        _set_grads(torch_params, tp_params, targets)
        topt.step()
        popt.step()
        for tpar, ppar in zip(torch_params, tp_params):
            diff = np.abs(np.asarray(ppar.detach().tolist()) - tpar.detach().numpy())
            assert diff.max() <= one_ulp, diff.max()
            exact += int((diff <= (1e-6 if dtype == np.float32 else 1e-13)).sum())
            entries += diff.size
            _close(popt.state[ppar]["momentum_buffer"], topt.state[tpar]["momentum_buffer"], dtype)
            ppar.data = tp.tensor(tpar.detach().numpy().copy())
    assert exact >= 0.98 * entries, (exact, entries)
    tsd, psd = topt.state_dict(), popt.state_dict()
    assert psd["param_groups"] == tsd["param_groups"]
    assert tsd["state"].keys() == psd["state"].keys()
    for idx in tsd["state"]:
        assert list(psd["state"][idx]) == list(tsd["state"][idx]) == ["momentum_buffer"]
        assert str(psd["state"][idx]["momentum_buffer"].dtype).split(".")[-1] == \
            str(tsd["state"][idx]["momentum_buffer"].dtype).split(".")[-1]
    for p in tp_params:
        assert p.is_leaf and p.grad_fn is None


def test_muon_loads_torch_state_and_continues_like_torch():
    torch_params, tp_params, targets = _pair(np.float64, MUON_SHAPES, seed=3)
    topt = torch.optim.Muon(torch_params, lr=0.03)
    for _ in range(4):
        _set_grads(torch_params, [tp.tensor(p.detach().numpy()) for p in torch_params], targets)
        topt.step()
    tsd = topt.state_dict()
    psd = {"state": {k: {n: tp.tensor(v.numpy().copy()) for n, v in s.items()}
                     for k, s in tsd["state"].items()},
           "param_groups": copy.deepcopy(tsd["param_groups"])}
    for tpar, ppar in zip(torch_params, tp_params):
        ppar.data = tp.tensor(tpar.detach().numpy().copy())
    popt = tp.optim.Muon(tp_params, lr=0.5)
    popt.load_state_dict(psd)
    assert popt.param_groups[0]["lr"] == 0.03
    for _ in range(5):
        _set_grads(torch_params, tp_params, targets)
        topt.step()
        popt.step()
    for tpar, ppar in zip(torch_params, tp_params):     # to a bfloat16 ulp (see above) times lr
        np.testing.assert_allclose(np.asarray(ppar.detach().tolist()), tpar.detach().numpy(),
                                   atol=5 * 0.03 * 1.5 * 2.0 ** -7)


def test_muon_orthogonalizes_and_errors_like_torch():
    # the Newton-Schulz result has singular values near 1 whatever the input's scale
    from tensorplay.optim.muon import _zeropower_via_newtonschulz
    g = tp.tensor(np.random.default_rng(0).standard_normal((8, 5)) * 30.0, dtype=tp.float32)
    s = np.linalg.svd(np.asarray(_zeropower_via_newtonschulz(g, (3.4445, -4.7750, 2.0315), 5, 1e-7)
                                 .float().tolist()), compute_uv=False)
    assert s.min() > 0.5 and s.max() < 1.3, s
    cases = [(dict(lr=-1.0), "Learning rate should be >= 0 but is: -1.0"),
             (dict(momentum=-0.1), "momentum should be >= 0 but is: -0.1"),
             (dict(weight_decay=-0.1), "weight decay should be >= 0 but is: -0.1"),
             (dict(adjust_lr_fn="bogus"), "Adjust learning rate function bogus is not supported")]
    for kwargs, message in cases:
        for module in (torch.optim, tp.optim):
            with pytest.raises(ValueError, match=message):
                module.Muon([(torch if module is torch.optim else tp).zeros(2, 2, requires_grad=True)],
                            **kwargs)
    with pytest.raises(ValueError, match=r"Muon only supports 2D parameters whereas we found a "
                                         r"parameter with size: tensorplay.Size\(\[3\]\)"):
        tp.optim.Muon([tp.zeros(3, requires_grad=True)])
    p = tp.zeros(2, 2, requires_grad=True)
    p.grad = tp.ones(2, 2)
    with pytest.raises(ValueError, match="Number of steps must be less than 100"):
        tp.optim.Muon([p], ns_steps=100).step()
    assert repr(tp.optim.Muon([tp.zeros(2, 2, requires_grad=True)], lr=0.1)) == \
        repr(torch.optim.Muon([torch.zeros(2, 2, requires_grad=True)], lr=0.1))


# ---- swa_utils --------------------------------------------------------------------------

def _twin_models(seed=0):
    """A small MLP with BatchNorm, in both frameworks, with the same weights."""
    torch.manual_seed(seed)
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(),
                                 torch.nn.Linear(6, 2))
    pmodel = tp.nn.Sequential(tp.nn.Linear(4, 6), tp.nn.BatchNorm1d(6), tp.nn.ReLU(),
                              tp.nn.Linear(6, 2))
    pmodel.load_state_dict({k: tp.tensor(v.numpy().copy()) for k, v in tmodel.state_dict().items()})
    return tmodel, pmodel


def _train_step(tmodel, pmodel, topt, popt, x):
    for model, opt, xx, lib in ((tmodel, topt, torch.tensor(x), torch), (pmodel, popt, tp.tensor(x), tp)):
        opt.zero_grad()
        (model(xx) ** 2).mean().backward()
        opt.step()


def _assert_state_close(pmodule, tmodule):
    tsd, psd = tmodule.state_dict(), pmodule.state_dict()
    assert list(psd) == list(tsd)
    for k in tsd:
        np.testing.assert_allclose(np.asarray(psd[k].tolist()), tsd[k].numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=k)


@pytest.mark.parametrize("how", ["swa", "ema_multi", "ema", "swa_buffers", "custom"])
def test_averaged_model_follows_torchs(how):
    tmodel, pmodel = _twin_models()
    T, P = torch.optim.swa_utils, tp.optim.swa_utils
    kwargs = {"swa": ({}, {}),
              "ema_multi": ({"multi_avg_fn": T.get_ema_multi_avg_fn(0.9)},
                            {"multi_avg_fn": P.get_ema_multi_avg_fn(0.9)}),
              "ema": ({"avg_fn": T.get_ema_avg_fn(0.8)}, {"avg_fn": P.get_ema_avg_fn(0.8)}),
              # (PyTorch's multi_avg_fn raises on BatchNorm's int64 num_batches_tracked)
              "swa_buffers": ({"use_buffers": True}, {"use_buffers": True}),
              "custom": ({"avg_fn": lambda a, m, n: 0.5 * a + 0.5 * m},
                         {"avg_fn": lambda a, m, n: 0.5 * a + 0.5 * m})}[how]
    tavg, pavg = T.AveragedModel(tmodel, **kwargs[0]), P.AveragedModel(pmodel, **kwargs[1])
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.1, momentum=0.9)
    popt = tp.optim.SGD(pmodel.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(1)
    for _ in range(6):
        _train_step(tmodel, pmodel, topt, popt, rng.standard_normal((8, 4)).astype(np.float32))
        tavg.update_parameters(tmodel)
        pavg.update_parameters(pmodel)
    assert int(pavg.n_averaged) == int(tavg.n_averaged) == 6
    _assert_state_close(pavg, tavg)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    tavg.eval()
    pavg.eval()
    np.testing.assert_allclose(np.asarray(pavg(tp.tensor(x)).tolist()), tavg(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert pavg.module is not pmodel                          # a copy, not the model itself
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        P.AveragedModel(pmodel, avg_fn=P.get_swa_avg_fn(), multi_avg_fn=P.get_swa_multi_avg_fn())


def test_average_functions_equal_torchs_and_check_decay():
    T, P = torch.optim.swa_utils, tp.optim.swa_utils
    a, b = np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.7, -1.5])
    for make_t, make_p in [(T.get_swa_avg_fn(), P.get_swa_avg_fn()),
                           (T.get_ema_avg_fn(0.7), P.get_ema_avg_fn(0.7))]:
        for n in (0, 3, torch.tensor(4)):
            n_p = tp.tensor(int(n)) if isinstance(n, torch.Tensor) else n
            np.testing.assert_allclose(np.asarray(make_p(tp.tensor(a), tp.tensor(b), n_p).tolist()),
                                       make_t(torch.tensor(a), torch.tensor(b), n).numpy(), rtol=1e-15)
    # (PyTorch's swa multi_avg_fn fails on integer tensors, either way it is called:
    # addcdiv refuses them, add_ a float alpha; EMA's falls back to arithmetic)
    for make_t, make_p, dtypes in [(T.get_swa_multi_avg_fn(), P.get_swa_multi_avg_fn(), ("float64",)),
                                   (T.get_ema_multi_avg_fn(0.7), P.get_ema_multi_avg_fn(0.7),
                                    ("float64", "int64"))]:
        for dtype in dtypes:
            ta, tb = [torch.tensor(a * 10).to(getattr(torch, dtype))], [torch.tensor(b * 10).to(getattr(torch, dtype))]
            pa = [tp.tensor(ta[0].tolist(), dtype=getattr(tp, dtype))]
            pb = [tp.tensor(tb[0].tolist(), dtype=getattr(tp, dtype))]
            make_t(ta, tb, torch.tensor(2))
            make_p(pa, pb, tp.tensor(2))
            np.testing.assert_allclose(np.asarray(pa[0].tolist()), ta[0].numpy(), rtol=1e-15)
            assert str(pa[0].dtype).split(".")[-1] == dtype
    for bad in (-0.1, 1.5):
        for module in (T, P):
            with pytest.raises(ValueError, match=f"Invalid decay value {bad} provided"):
                module.get_ema_avg_fn(bad)
            with pytest.raises(ValueError, match=f"Invalid decay value {bad} provided"):
                module.get_ema_multi_avg_fn(bad)


@pytest.mark.parametrize("kwargs", [dict(swa_lr=0.05), dict(swa_lr=[0.01, 0.2], anneal_epochs=3,
                                                             anneal_strategy="linear"),
                                    dict(swa_lr=0.5, anneal_epochs=0)])
def test_swalr_schedule_and_state_dict_equal_torchs(kwargs):
    def make(lib):
        w = [lib.zeros(1, requires_grad=True), lib.zeros(1, requires_grad=True)]
        opt = lib.optim.SGD([{"params": w[:1]}, {"params": w[1:], "lr": 0.3}], lr=0.1)
        return opt, lib.optim.swa_utils.SWALR(opt, **kwargs)

    topt, tsched = make(torch)
    popt, psched = make(tp)
    for _ in range(14):
        assert psched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-14, abs=1e-15)
        assert [g["swa_lr"] for g in popt.param_groups] == [g["swa_lr"] for g in topt.param_groups]
        topt.step()
        popt.step()
        tsched.step()
        psched.step()
    tsd, psd = tsched.state_dict(), psched.state_dict()
    assert sorted(psd) == sorted(k for k in tsd if k != "_get_lr_called_within_step")
    popt2, psched2 = make(tp)
    psched2.load_state_dict(psd)
    assert psched2.anneal_func == psched.anneal_func and psched2.get_last_lr() == psched.get_last_lr()


def test_swalr_errors_like_torch():
    for lib in (torch, tp):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
        with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got x"):
            lib.optim.swa_utils.SWALR(opt, 0.1, anneal_strategy="x")
        with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
            lib.optim.swa_utils.SWALR(opt, 0.1, anneal_epochs=-1)
        with pytest.raises(ValueError, match="swa_lr must have the same length as optimizer.param_groups"):
            lib.optim.swa_utils.SWALR(opt, [0.1, 0.2])


def test_update_bn_recomputes_batchnorm_statistics_as_torchs():
    tmodel, pmodel = _twin_models(seed=2)
    tavg, pavg = torch.optim.swa_utils.AveragedModel(tmodel), tp.optim.swa_utils.AveragedModel(pmodel)
    rng = np.random.default_rng(5)
    batches = [rng.standard_normal((5, 4)).astype(np.float32) * (i + 1) for i in range(4)]
    tavg.eval()
    pavg.eval()
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], tavg)
    tp.optim.swa_utils.update_bn([(tp.tensor(b), 0) for b in batches], pavg)
    _assert_state_close(pavg, tavg)
    assert not pavg.training                                     # the mode is restored
    bn = pavg.module[1]
    assert bn.momentum == 0.1 and int(bn.num_batches_tracked) == 4
    tp.optim.swa_utils.update_bn([tp.zeros(2, 2)], tp.nn.Linear(2, 2))     # no BatchNorm: nothing


# ---- swap_in_optimizer_params_and_state -----------------------------------------------

def test_swap_in_optimizer_params_and_state_steps_the_other_parameters_as_torch():
    def run(lib):
        w = [lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True),
             lib.tensor([[0.5, 0.2]], dtype=lib.float64, requires_grad=True)]
        opt = lib.optim.Adam(w, lr=0.1)
        for p in w:
            p.grad = p.detach() * 2
        opt.step()
        saved = copy.deepcopy(opt.state_dict())
        saved["param_groups"][0]["lr"] = 0.01
        other = {"a": lib.tensor([3.0, 3.0], dtype=lib.float64, requires_grad=True),
                 "b": lib.tensor([[1.0, 1.0]], dtype=lib.float64, requires_grad=True)}
        for p in other.values():
            p.grad = lib.ones_like(p)
        with lib.optim.swap_in_optimizer_params_and_state(opt, other, saved):
            assert opt.param_groups[0]["params"] == list(other.values())
            assert opt.param_groups[0]["lr"] == 0.01
            opt.step()
        assert opt.param_groups[0]["params"][0] is w[0] and opt.param_groups[0]["lr"] == 0.1
        return [p.detach().tolist() for p in other.values()], [p.detach().tolist() for p in w], \
            saved["state"][0]["step"].item(), opt.state[w[0]]["step"].item()

    ours, theirs = run(tp), run(torch)
    assert ours[2:] == theirs[2:]
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-14)


def test_swap_in_optimizer_params_and_state_errors_like_torch():
    for lib in (torch, tp):
        w = lib.zeros(2, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)
        with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"w": w}, opt.state_dict()):
                pass
        w.grad = lib.ones(2)
        opt.step()
        sd = opt.state_dict()
        bad = [({"state": sd["state"], "param_groups": []}, "different number of parameter groups"),
               ({"state": {5: {}}, "param_groups": sd["param_groups"]}, "got extra keys \\[5\\]"),
               ({"state": [], "param_groups": sd["param_groups"]}, "to be a dict mapping packed"),
               ({"state": sd["state"], "param_groups": [dict(sd["param_groups"][0], extra=1)]},
                "Keys only in swap-in: \\['extra'\\]")]
        for state, message in bad:
            with pytest.raises(RuntimeError, match=message):
                with lib.optim.swap_in_optimizer_params_and_state(opt, {"w": w}, state):
                    pass


def test_signatures_are_pytorchs():
    import inspect
    pairs = [(torch.optim.Muon, tp.optim.Muon),
             (torch.optim.swap_in_optimizer_params_and_state, tp.optim.swap_in_optimizer_params_and_state)]
    pairs += [(getattr(torch.optim.swa_utils, n), getattr(tp.optim.swa_utils, n))
              for n in torch.optim.swa_utils.__all__]
    assert sorted(tp.optim.swa_utils.__all__) == sorted(torch.optim.swa_utils.__all__)
    for theirs, ours in pairs:
        assert inspect.signature(ours).parameters.keys() == inspect.signature(theirs).parameters.keys()
        for name, parameter in inspect.signature(theirs).parameters.items():
            assert inspect.signature(ours).parameters[name].default == parameter.default, (ours, name)


def test_muon_and_averaged_model_on_cuda_follow_cpu():
    """On the cuda device (a GPU, or Triton's interpreter) Muon's state lives there and
    the steps follow the CPU's to bfloat16 precision: the Newton-Schulz matmuls are
    Triton's there, which round their bfloat16 results in their own order, and five
    iterations carry a few ulps of that into the update."""
    pytest.importorskip("triton")
    if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
        pytest.skip("no GPU and no Triton interpreter")
    a = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    cpu = tp.tensor(a.copy(), requires_grad=True)
    dev = tp.tensor(a.copy()).to("cuda").requires_grad_(True)
    copt = tp.optim.Muon([cpu], lr=0.02, ns_steps=2)
    dopt = tp.optim.Muon([dev], lr=0.02, ns_steps=2)
    g = np.cos(a)
    cpu.grad, dev.grad = tp.tensor(g), tp.tensor(g).to("cuda")
    copt.step()
    dopt.step()
    assert dopt.state[dev]["momentum_buffer"].device.type == "cuda"
    np.testing.assert_allclose(dev.detach().cpu().numpy(), cpu.detach().numpy(), atol=0.02 * 8 * 2.0 ** -7)
    model = tp.nn.Linear(3, 2).to("cuda")
    averaged = tp.optim.swa_utils.AveragedModel(model)
    averaged.update_parameters(model)
    assert averaged.module.weight.device.type == "cuda" and int(averaged.n_averaged) == 1
