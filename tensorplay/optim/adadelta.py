"""`tp.optim.Adadelta` (PyTorch's update).

    g = grad (negated when maximize) + weight_decay * p
    v = rho * v + (1 - rho) * g * g
    delta = sqrt(u + eps) / sqrt(v + eps) * g
    u = rho * u + (1 - rho) * delta * delta
    p = p - lr * delta

The update runs per parameter or over flat buffers of a whole group (`foreach`, see
_foreach.py), with the same ops.
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.optim._foreach import batches
from tensorplay.optim.optimizer import Optimizer, check_nonnegative, eval_closure, no_grad_step

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_nonnegative(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonnegative(eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)

    @no_grad_step
    def step(self, closure=None):
        """One Adadelta update of every parameter that has a gradient."""
        loss = eval_closure(closure)
        for group in self.param_groups:
            for batch in batches(self, group, ("square_avg", "acc_delta"), has_step=True):
                batch.apply(adadelta_update(batch, group))
        return loss


def adadelta_update(batch, group):
    """The amount to add to the parameters; updates both averages in place."""
    rho = group["rho"]
    eps = group["eps"]
    weight_decay = group["weight_decay"]
    grad = batch.grad
    if group["maximize"]:
        grad = -grad
    if weight_decay != 0:
        grad = grad.add(batch.values(), alpha=weight_decay)
    square_avg = batch.state["square_avg"]
    acc_delta = batch.state["acc_delta"]
    square_avg.copy_(tp.addcmul(square_avg * rho, grad, grad, value=1 - rho))
    std = (square_avg + eps).sqrt()
    delta = (acc_delta + eps).sqrt() / std * grad
    acc_delta.copy_(tp.addcmul(acc_delta * rho, delta, delta, value=1 - rho))
    return delta * (-group["lr"])
