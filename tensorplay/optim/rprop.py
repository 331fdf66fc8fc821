"""`tp.optim.Rprop` (PyTorch's update): resilient backpropagation, which uses only the sign of
the gradient and keeps a step size per element.

    g = grad (negated when maximize)
    s = sign(g * prev)
    step_size = clamp(step_size * (etaplus if s > 0, etaminus if s < 0, 1 if s == 0),
                      step_size_min, step_size_max)
    g = 0 where s < 0                      (the sign flipped: wait a step before moving)
    p = p - sign(g) * step_size;   prev = g

step_size starts at lr, prev at 0. The update runs per parameter or over flat buffers of a
whole group (`foreach`, see _foreach.py), with the same ops.
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.optim._foreach import batches
from tensorplay.optim.optimizer import Optimizer, check_nonnegative, eval_closure, no_grad_step

__all__ = ["Rprop"]


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_nonnegative(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable,
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
        """One Rprop update of every parameter that has a gradient."""
        loss = eval_closure(closure)
        for group in self.param_groups:
            # New step sizes start at lr, previous gradients at 0.
            initial = {"step_size": group["lr"]}
            for batch in batches(self, group, ("prev", "step_size"), has_step=True,
                                 initial=initial):
                batch.apply(rprop_update(batch, group))
        return loss


def rprop_update(batch, group):
    """The amount to add to the parameters; updates prev and the step sizes in place."""
    etaminus, etaplus = group["etas"]
    step_size_min, step_size_max = group["step_sizes"]
    grad = batch.grad
    if group["maximize"]:
        grad = -grad
    prev = batch.state["prev"]
    step_size = batch.state["step_size"]
    sign = (grad * prev).sign()
    # Same sign as last time: speed up; flipped: we jumped over a minimum, slow down.
    factor = tp.where(sign > 0, etaplus, tp.where(sign < 0, etaminus, tp.ones_like(sign)))
    step_size.copy_((step_size * factor).clamp(step_size_min, step_size_max))
    # After a flip the element does not move this step, and the next step does not count
    # it as a flip again (prev = 0).
    grad = tp.where(sign < 0, 0.0, grad)
    prev.copy_(grad)
    # p.addcmul_(sign(g), step_size, value=-1) computes p + (-1) * (sign(g) * step_size).
    return -(grad.sign() * step_size)
