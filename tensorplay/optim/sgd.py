"""`tp.optim.SGD`: stochastic gradient descent with optional momentum (PyTorch's update).

    g = grad (negated when maximize) + weight_decay * p
    buf = g                                  on the first step
    buf = momentum * buf + (1 - dampening) * g    afterwards
    g = g + momentum * buf  (nesterov)   or   g = buf
    p = p - lr * g

The update runs per parameter or over flat buffers of a whole group (`foreach`, see
_foreach.py), with the same ops.
"""
from __future__ import annotations

from tensorplay.optim._foreach import batches
from tensorplay.optim.optimizer import Optimizer, eval_closure, no_grad_step

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)

    @no_grad_step
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = eval_closure(closure)
        for group in self.param_groups:
            names = ("momentum_buffer",) if group["momentum"] != 0 else ()
            for batch in batches(self, group, names, has_step=False):
                batch.apply(sgd_update(batch, group))
        return loss


def sgd_update(batch, group):
    """The amount to add to the parameters; updates the momentum buffer in place (a new
    buffer starts as a copy of the gradient, as PyTorch's does)."""
    momentum = group["momentum"]
    weight_decay = group["weight_decay"]
    grad = batch.grad
    if group["maximize"]:
        grad = -grad
    if weight_decay != 0:
        grad = grad.add(batch.values(), alpha=weight_decay)
    if momentum != 0:
        buf = batch.state["momentum_buffer"]
        if all(batch.fresh):
            buf.copy_(grad)
        else:
            buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            if any(batch.fresh):
                batch.copy_where_fresh(buf, grad)
        if group["nesterov"]:
            grad = grad.add(buf, alpha=momentum)
        else:
            grad = buf
    # p.add_(g, alpha=-lr) computes p + g * (-lr): the same.
    return grad * (-group["lr"])
