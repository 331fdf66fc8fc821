"""`tp.optim.Adamax` (PyTorch's update): Adam with the infinity norm in place of the second
moment.

    g = grad (negated when maximize) + weight_decay * p
    m = lerp(m, g, 1 - beta1)
    u = max(beta2 * u, |g| + eps)          the "exp_inf" state
    p = p - lr / (1 - beta1^t) * m / u

The update runs per parameter or over flat buffers of a whole group (`foreach`, see
_foreach.py), with the same ops.
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.optim._foreach import batches
from tensorplay.optim.optimizer import (Optimizer, check_betas, check_nonnegative, eval_closure,
                                        no_grad_step)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
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
        """One Adamax update of every parameter that has a gradient."""
        loss = eval_closure(closure)
        for group in self.param_groups:
            for batch in batches(self, group, ("exp_avg", "exp_inf"), has_step=True):
                batch.apply(adamax_update(batch, group))
        return loss


def adamax_update(batch, group):
    """The amount to add to the parameters; updates both moments in place."""
    beta1, beta2 = group["betas"]
    grad = batch.grad
    if group["maximize"]:
        grad = -grad
    if group["weight_decay"] != 0:
        grad = grad.add(batch.values(), alpha=group["weight_decay"])
    exp_avg = batch.state["exp_avg"]
    exp_inf = batch.state["exp_inf"]
    exp_avg.lerp_(grad, 1 - beta1)
    # The infinity norm decays, but never below the current gradient's size.
    exp_inf.copy_(tp.maximum(exp_inf * beta2, grad.abs() + group["eps"]))
    clr = group["lr"] / (1 - beta1 ** batch.step)
    # p.addcdiv_(m, u, value=-clr) computes p + value * (m / u): the same.
    return (exp_avg / exp_inf) * (-clr)
