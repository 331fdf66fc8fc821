"""`tp.optim.Adagrad` (PyTorch's dense update).

    g = grad (negated when maximize) + weight_decay * p
    clr = lr / (1 + (t - 1) * lr_decay)
    s = s + g * g                    (s starts at initial_accumulator_value)
    p = p - clr * g / (sqrt(s) + eps)

Unlike the other optimizers, Adagrad creates its state in __init__, as PyTorch does, so a
state_dict taken before the first step already lists every parameter. The update runs per
parameter or over flat buffers of a whole group (`foreach`, see _foreach.py), with the same
ops.
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.optim._foreach import batches
from tensorplay.optim.optimizer import (
    Optimizer, check_nonnegative, eval_closure, new_step_counter, no_grad_step,
)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_nonnegative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                          initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = new_step_counter()
                state["sum"] = tp.full_like(p, group["initial_accumulator_value"])

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)

    @no_grad_step
    def step(self, closure=None):
        """One Adagrad update of every parameter that has a gradient."""
        loss = eval_closure(closure)
        for group in self.param_groups:
            for batch in batches(self, group, ("sum",), has_step=True,
                                 initial=group["initial_accumulator_value"]):
                batch.apply(adagrad_update(batch, group))
        return loss


def adagrad_update(batch, group):
    """The amount to add to the parameters; updates the sum of squares in place."""
    weight_decay = group["weight_decay"]
    grad = batch.grad
    if group["maximize"]:
        grad = -grad
    if weight_decay != 0:
        grad = grad.add(batch.values(), alpha=weight_decay)
    clr = group["lr"] / (1 + (batch.step - 1) * group["lr_decay"])
    state_sum = batch.state["sum"]
    state_sum.copy_(tp.addcmul(state_sum, grad, grad, value=1))
    std = state_sum.sqrt() + group["eps"]
    return (grad / std) * (-clr)
