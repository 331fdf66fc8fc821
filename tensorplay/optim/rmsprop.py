"""`tp.optim.RMSprop` (PyTorch's update).

    g = grad (negated when maximize) + weight_decay * p
    v = alpha * v + (1 - alpha) * g * g
    centered:  m = lerp(m, g, 1 - alpha);  avg = sqrt(v - m * m) + eps
    otherwise: avg = sqrt(v) + eps
    momentum > 0:  buf = momentum * buf + g / avg;  p = p - lr * buf
    otherwise:     p = p - lr * g / avg

The update runs per parameter or over flat buffers of a whole group (`foreach`, see
_foreach.py), with the same ops.
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.optim._foreach import batches
from tensorplay.optim.optimizer import Optimizer, check_nonnegative, eval_closure, no_grad_step

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_nonnegative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay,
                          alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("maximize", False)

    @no_grad_step
    def step(self, closure=None):
        """One RMSprop update of every parameter that has a gradient."""
        loss = eval_closure(closure)
        for group in self.param_groups:
            names = ("square_avg",)
            if group["momentum"] > 0:
                names += ("momentum_buffer",)
            if group["centered"]:
                names += ("grad_avg",)
            for batch in batches(self, group, names, has_step=True):
                batch.apply(rmsprop_update(batch, group))
        return loss


def rmsprop_update(batch, group):
    """The amount to add to the parameters; updates the averages in place."""
    alpha = group["alpha"]
    weight_decay = group["weight_decay"]
    grad = batch.grad
    if group["maximize"]:
        grad = -grad
    if weight_decay != 0:
        grad = grad.add(batch.values(), alpha=weight_decay)
    square_avg = batch.state["square_avg"]
    square_avg.copy_(tp.addcmul(square_avg * alpha, grad, grad, value=1 - alpha))
    if group["centered"]:
        grad_avg = batch.state["grad_avg"]
        grad_avg.lerp_(grad, 1 - alpha)
        avg = tp.addcmul(square_avg, grad_avg, grad_avg, value=-1).sqrt()
    else:
        avg = square_avg.sqrt()
    avg = avg + group["eps"]
    if group["momentum"] > 0:
        buf = batch.state["momentum_buffer"]
        buf.copy_(tp.addcdiv(buf * group["momentum"], grad, avg))
        return buf * (-group["lr"])
    # p.addcdiv_(g, avg, value=-lr) computes p + value * (g / avg): the same.
    return (grad / avg) * (-group["lr"])
