"""`tp.optim.NAdam` (PyTorch's update): Adam with Nesterov momentum, whose momentum
coefficient mu_t warms up over the steps (Dozat, 2016).

    g = grad (negated when maximize)
    p = p * (1 - lr * wd)              decoupled_weight_decay (NAdamW)
    g = g + wd * p                     otherwise (L2 penalty)
    mu_t     = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))
    mu_{t+1} = beta1 * (1 - 0.5 * 0.96^((t + 1) * momentum_decay))
    mu_product = mu_product * mu_t     (a 0-d float32 state tensor, as PyTorch keeps it)
    m = lerp(m, g, 1 - beta1)          v = beta2 * v + (1 - beta2) * g * g
    denom = sqrt(v / (1 - beta2^t)) + eps
    p = p - lr (1 - mu_t) / (1 - mu_product) * g / denom
    p = p - lr mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom

Each parameter keeps its own `mu_product`, so the update walks the parameters one at a time
(`foreach` is accepted for PyTorch's signature; both settings take this loop).
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.optim.optimizer import (Optimizer, check_betas, check_nonnegative, eval_closure,
                                        new_step_counter, no_grad_step)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)

    @no_grad_step
    def step(self, closure=None):
        """One NAdam update of every parameter that has a gradient."""
        loss = eval_closure(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:   # PyTorch's keys, in its order
                    state["step"] = new_step_counter()
                    state["mu_product"] = new_step_counter().fill_(1.0)
                    state["exp_avg"] = tp.zeros_like(p)
                    state["exp_avg_sq"] = tp.zeros_like(p)
                nadam_step(p, state, group)
        return loss


def nadam_step(param, state, group):
    """Update one parameter and its state in place."""
    beta1, beta2 = group["betas"]
    lr = group["lr"]
    weight_decay = group["weight_decay"]
    state["step"].add_(1)
    step = state["step"].item()
    grad = param.grad
    if group["maximize"]:
        grad = -grad
    if weight_decay != 0:
        if group["decoupled_weight_decay"]:
            param.mul_(1 - lr * weight_decay)
        else:
            grad = grad.add(param, alpha=weight_decay)

    # The momentum schedule: this step's coefficient and the next one's.
    mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * group["momentum_decay"])))
    mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * group["momentum_decay"])))
    mu_product = state["mu_product"]
    mu_product.mul_(mu)
    # Read back from the float32 tensor, as PyTorch does: its rounding is part of the step.
    mu_product_value = mu_product.item()
    mu_product_next = mu_product_value * mu_next

    exp_avg = state["exp_avg"]
    exp_avg_sq = state["exp_avg_sq"]
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.copy_(tp.addcmul(exp_avg_sq * beta2, grad, grad, value=1 - beta2))
    denom = (exp_avg_sq / (1 - beta2 ** step)).sqrt() + group["eps"]
    # Two separate additions, as PyTorch's two addcdiv_ calls (p + value * (a / denom)):
    # the Nesterov look-ahead mixes the current gradient and the momentum.
    param.add_((grad / denom) * (-lr * (1.0 - mu) / (1.0 - mu_product_value)))
    param.add_((exp_avg / denom) * ((-lr * mu_next) / (1.0 - mu_product_next)))
