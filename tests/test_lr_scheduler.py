"""tp.optim.lr_scheduler against torch.optim.lr_scheduler: 20 steps give PyTorch's learning
rates (and momenta, for OneCycleLR) to 1e-12; state_dicts round-trip; bad arguments raise
PyTorch's errors."""
import pickle
import re

import numpy as np
import pytest
import torch

import tensorplay as tp


def _optimizers(name="SGD", n_groups=2, **kwargs):
    kwargs.setdefault("lr", 0.1)
    tgroups = [{"params": [torch.zeros(2, requires_grad=True)], "lr": 0.1 * (i + 1)}
               for i in range(n_groups)]
    pgroups = [{"params": [tp.zeros(2, requires_grad=True)], "lr": 0.1 * (i + 1)}
               for i in range(n_groups)]
    return getattr(torch.optim, name)(tgroups, **kwargs), getattr(tp.optim, name)(pgroups,
                                                                                 **kwargs)


def _half(epoch):
    return 0.5 ** (epoch // 3) + 0.01 * epoch


# (name, kwargs, optimizer name, optimizer kwargs)
CASES = [
    ("StepLR", dict(step_size=3), "SGD", {}),
    ("StepLR", dict(step_size=4, gamma=0.5), "Adam", {}),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 11], gamma=0.3), "SGD", {}),
    ("ExponentialLR", dict(gamma=0.9), "SGD", {}),
    ("CosineAnnealingLR", dict(T_max=7), "SGD", {}),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01), "Adam", {}),
    ("CosineAnnealingWarmRestarts", dict(T_0=4), "SGD", {}),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.001), "SGD", {}),
    ("LambdaLR", dict(lr_lambda=_half), "SGD", {}),
    ("LinearLR", dict(), "SGD", {}),
    ("LinearLR", dict(start_factor=0.2, end_factor=0.9, total_iters=8), "SGD", {}),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=21), "SGD", dict(momentum=0.9)),
    ("OneCycleLR", dict(max_lr=[0.5, 0.8], total_steps=25, anneal_strategy="linear"), "SGD",
     dict(momentum=0.9)),
    ("OneCycleLR", dict(max_lr=0.01, epochs=3, steps_per_epoch=7, three_phase=True), "Adam",
     {}),
    ("OneCycleLR", dict(max_lr=0.3, total_steps=20, cycle_momentum=False, pct_start=0.5),
     "Adagrad", {}),
]


def _case_id(case):
    return case[0] + "-" + "-".join(f"{k}={getattr(v, '__name__', v)}"
                                    for k, v in case[1].items()) + "-" + case[2]


def _momenta(opt):
    out = []
    for g in opt.param_groups:
        out.append(g["betas"][0] if "betas" in g else g.get("momentum", 0.0))
    return out


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_twenty_steps_match_torch(case):
    name, kwargs, opt_name, opt_kwargs = case
    topt, popt = _optimizers(opt_name, **opt_kwargs)
    tsched = getattr(torch.optim.lr_scheduler, name)(topt, **kwargs)
    psched = getattr(tp.optim.lr_scheduler, name)(popt, **kwargs)
    np.testing.assert_allclose(psched.get_last_lr(), tsched.get_last_lr(), rtol=1e-12)
    for _ in range(20):
        topt.step()
        popt.step()
        tsched.step()
        psched.step()
        np.testing.assert_allclose(psched.get_last_lr(), tsched.get_last_lr(), rtol=1e-12)
        np.testing.assert_allclose([g["lr"] for g in popt.param_groups],
                                   [g["lr"] for g in topt.param_groups], rtol=1e-12)
        np.testing.assert_allclose(_momenta(popt), _momenta(topt), rtol=1e-12)
    assert psched.last_epoch == tsched.last_epoch
    assert [g["initial_lr"] for g in popt.param_groups] == \
        [g["initial_lr"] for g in topt.param_groups]


def test_sequential_lr_matches_torch():
    lrs = {}
    for lib, (opt_mod, sched_mod) in {"torch": (torch.optim, torch.optim.lr_scheduler),
                                      "tp": (tp.optim, tp.optim.lr_scheduler)}.items():
        zeros = torch.zeros if lib == "torch" else tp.zeros
        opt = opt_mod.SGD([zeros(2, requires_grad=True)], lr=0.5)
        warm = sched_mod.LinearLR(opt, start_factor=0.1, total_iters=4)
        cos = sched_mod.CosineAnnealingLR(opt, T_max=8, eta_min=0.01)
        decay = sched_mod.ExponentialLR(opt, gamma=0.8)
        seq = sched_mod.SequentialLR(opt, [warm, cos, decay], milestones=[4, 12])
        out = [seq.get_last_lr()[0]]
        for _ in range(20):
            opt.step()
            seq.step()
            out.append(seq.get_last_lr()[0])
        lrs[lib] = out
    np.testing.assert_allclose(lrs["tp"], lrs["torch"], rtol=1e-12)


def test_chained_schedulers_match_torch():
    """Two schedulers on one optimizer compose because the formulas are recursive."""
    topt, popt = _optimizers()
    tsch = [torch.optim.lr_scheduler.ExponentialLR(topt, 0.9),
            torch.optim.lr_scheduler.MultiStepLR(topt, [3, 7], 0.5)]
    psch = [tp.optim.lr_scheduler.ExponentialLR(popt, 0.9),
            tp.optim.lr_scheduler.MultiStepLR(popt, [3, 7], 0.5)]
    for _ in range(20):
        topt.step()
        popt.step()
        for s in tsch + psch:
            s.step()
        np.testing.assert_allclose(psch[1].get_last_lr(), tsch[1].get_last_lr(), rtol=1e-12)


@pytest.mark.parametrize("kwargs", [dict(), dict(mode="max", factor=0.5, patience=2,
                                                 threshold=0.1, threshold_mode="abs",
                                                 cooldown=2, min_lr=[0.02, 0.05]),
                                    dict(patience=1, cooldown=1, min_lr=0.03)])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    topt, popt = _optimizers()
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kwargs)
    psched = tp.optim.lr_scheduler.ReduceLROnPlateau(popt, **kwargs)
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.94, 1.2, 0.5, 0.5, 0.5, 0.5, 0.5, 0.49, 0.6,
               0.6, 0.6, 0.6, 0.6, 0.7, 0.7] * 2
    for m in metrics:
        tsched.step(m)
        psched.step(tp.tensor(m))
        np.testing.assert_allclose(psched.get_last_lr(), tsched.get_last_lr(), rtol=1e-12)
        assert psched.num_bad_epochs == tsched.num_bad_epochs
        assert psched.cooldown_counter == tsched.cooldown_counter


@pytest.mark.parametrize("case", [CASES[2], CASES[5], CASES[7], CASES[11]], ids=_case_id)
def test_state_dict_round_trip(case):
    name, kwargs, opt_name, opt_kwargs = case
    _, popt = _optimizers(opt_name, **opt_kwargs)
    sched = getattr(tp.optim.lr_scheduler, name)(popt, **kwargs)
    for _ in range(6):
        popt.step()
        sched.step()
    saved_sched = pickle.dumps(sched.state_dict())
    saved_opt = pickle.dumps(popt.state_dict())
    _, popt2 = _optimizers(opt_name, **opt_kwargs)
    sched2 = getattr(tp.optim.lr_scheduler, name)(popt2, **kwargs)
    popt2.load_state_dict(pickle.loads(saved_opt))
    sched2.load_state_dict(pickle.loads(saved_sched))
    for _ in range(8):
        for opt, s in ((popt, sched), (popt2, sched2)):
            opt.step()
            s.step()
        assert sched2.get_last_lr() == sched.get_last_lr()
    assert "optimizer" not in sched.state_dict()


def test_lambda_lr_state_dict_skips_plain_functions():
    _, popt = _optimizers()
    sched = tp.optim.lr_scheduler.LambdaLR(popt, [_half, lambda e: 0.9 ** e])
    assert sched.state_dict()["lr_lambdas"] == [None, None]
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        tp.optim.lr_scheduler.LambdaLR(popt, [_half])


BAD = [
    ("LinearLR", dict(start_factor=0)), ("LinearLR", dict(end_factor=1.5)),
    ("CosineAnnealingWarmRestarts", dict(T_0=0)),
    ("CosineAnnealingWarmRestarts", dict(T_0=2, T_mult=0)),
    ("OneCycleLR", dict(max_lr=0.1)), ("OneCycleLR", dict(max_lr=0.1, total_steps=0)),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=5, pct_start=1.5)),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=5, anneal_strategy="exp")),
    ("OneCycleLR", dict(max_lr=[0.1], total_steps=5)),
    ("ReduceLROnPlateau", dict(factor=1.0)), ("ReduceLROnPlateau", dict(mode="avg")),
    ("ReduceLROnPlateau", dict(threshold_mode="x")),
    ("ReduceLROnPlateau", dict(min_lr=[0.1])),
]


@pytest.mark.parametrize("case", BAD, ids=lambda c: c[0] + str(sorted(c[1])))
def test_bad_arguments_raise_like_torch(case):
    name, kwargs = case
    topt, popt = _optimizers()
    with pytest.raises(Exception) as texc:
        getattr(torch.optim.lr_scheduler, name)(topt, **kwargs)
    with pytest.raises(type(texc.value), match=re.escape(str(texc.value))):
        getattr(tp.optim.lr_scheduler, name)(popt, **kwargs)


def test_errors_for_wrong_optimizer_and_overrun():
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        tp.optim.lr_scheduler.StepLR([], step_size=2)
    _, popt = _optimizers("Adagrad")
    with pytest.raises(ValueError, match="must support momentum or beta1"):
        tp.optim.lr_scheduler.OneCycleLR(popt, max_lr=0.1, total_steps=5)
    _, popt = _optimizers()
    sched = tp.optim.lr_scheduler.OneCycleLR(popt, max_lr=0.1, total_steps=3)
    for _ in range(3):
        sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        sched.step()
    _, popt = _optimizers()
    with pytest.raises(KeyError, match="initial_lr"):
        tp.optim.lr_scheduler.StepLR(popt, step_size=2, last_epoch=3)
