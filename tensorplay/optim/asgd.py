"""`tp.optim.ASGD` (PyTorch's update): averaged stochastic gradient descent (Polyak and
Juditsky, 1992), with a decaying step size.

    g = grad (negated when maximize) + weight_decay * p
    p = p * (1 - lambd * eta)          decay term
    p = p - eta * g
    ax = p                             while mu == 1 (until step t0)
    ax = ax + mu * (p - ax)            afterwards: the running average of the iterates
    eta = lr / (1 + lambd * lr * t)^alpha
    mu  = 1 / max(1, t - t0)

`eta` and `mu` are 0-d float32 state tensors, as PyTorch keeps them (their rounding is part
of the next step); `ax` holds the averaged parameters, the ones to evaluate with. Each
parameter keeps its own eta and mu, so the update walks the parameters one at a time
(`foreach` is accepted for PyTorch's signature; both settings take this loop).
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.optim.optimizer import (Optimizer, check_nonnegative, eval_closure,
                                        new_step_counter, no_grad_step)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_nonnegative(lr=lr, weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    @no_grad_step
    def step(self, closure=None):
        """One ASGD update of every parameter that has a gradient."""
        loss = eval_closure(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:   # PyTorch's keys, in its order
                    state["step"] = new_step_counter()
                    state["eta"] = new_step_counter().fill_(group["lr"])
                    state["mu"] = new_step_counter().fill_(1.0)
                    state["ax"] = tp.zeros_like(p)
                asgd_step(p, state, group)
        return loss


def asgd_step(param, state, group):
    """Update one parameter, its average and its schedule in place."""
    lr, lambd = group["lr"], group["lambd"]
    state["step"].add_(1)
    grad = param.grad
    if group["maximize"]:
        grad = -grad
    if group["weight_decay"] != 0:
        grad = grad.add(param, alpha=group["weight_decay"])
    eta = state["eta"].item()
    param.mul_(1 - lambd * eta)
    param.add_(grad, alpha=-eta)

    ax, mu = state["ax"], state["mu"]
    if mu.item() != 1:
        ax.add_((param - ax) * mu.item())
    else:   # averaging has not started: the average is the current point
        ax.copy_(param)

    step = state["step"].item()
    # PyTorch copies tensor(value) in, a tensor of the default dtype: the new values are
    # rounded to float32 even where eta and mu were loaded as float64 (a float64 model's).
    state["eta"].copy_(tp.tensor(lr / ((1 + lambd * lr * step) ** group["alpha"])))
    mu.copy_(tp.tensor(1 / max(1, step - group["t0"])))
