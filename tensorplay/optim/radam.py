"""`tp.optim.RAdam` (PyTorch's update): Adam whose adaptive step is switched on only once the
variance of the second moment estimate is tractable, and "rectified" by a factor r_t.

    g = grad (negated when maximize)
    p = p * (1 - lr * wd)            decoupled_weight_decay
    g = g + wd * p                   otherwise (L2 penalty)
    m = lerp(m, g, 1 - beta1)        v = beta2 * v + (1 - beta2) * g * g
    rho_inf = 2 / (1 - beta2) - 1    rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
    rho_t > 5:  p = p - m / (1 - beta1^t) * lr * sqrt(1 - beta2^t) / (sqrt(v) + eps) * r_t
    otherwise:  p = p - m / (1 - beta1^t) * lr           (plain momentum SGD)
    r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))

rho_t and r_t are Python floats of the step count, as in PyTorch's eager path. The update
runs per parameter or over flat buffers of a whole group (`foreach`, see _foreach.py).
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.optim._foreach import batches
from tensorplay.optim.optimizer import (Optimizer, check_betas, check_nonnegative, eval_closure,
                                        no_grad_step)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("capturable", False)

    @no_grad_step
    def step(self, closure=None):
        """One RAdam update of every parameter that has a gradient."""
        loss = eval_closure(closure)
        for group in self.param_groups:
            decoupled = group["decoupled_weight_decay"] and group["weight_decay"] != 0
            scale = 1 - group["lr"] * group["weight_decay"] if decoupled else None
            for batch in batches(self, group, ("exp_avg", "exp_avg_sq"), has_step=True):
                batch.apply(radam_update(batch, group), scale)
        return loss


def radam_update(batch, group):
    """The amount to add to the parameters (after the decoupled decay, which
    Batch.apply does first); updates both moments in place."""
    beta1, beta2 = group["betas"]
    lr = group["lr"]
    step = batch.step
    grad = batch.grad
    if group["maximize"]:
        grad = -grad
    if group["weight_decay"] != 0 and not group["decoupled_weight_decay"]:
        grad = grad.add(batch.values(), alpha=group["weight_decay"])
    exp_avg = batch.state["exp_avg"]
    exp_avg_sq = batch.state["exp_avg_sq"]
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.copy_(tp.addcmul(exp_avg_sq * beta2, grad, grad, value=1 - beta2))

    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    corrected = exp_avg / bias_correction1
    # The length of the approximated simple moving average, and its limit.
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
    if rho_t <= 5.0:   # early steps: the variance is not tractable yet, no adaptive step
        return -(corrected * lr)
    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
    adaptive_lr = (bias_correction2 ** 0.5) / (exp_avg_sq.sqrt() + group["eps"])
    return -(corrected * lr * adaptive_lr * rect)
