"""`tp.optim.Adam` and `tp.optim.AdamW` (PyTorch's update, step by step).

    g = grad (negated when maximize)
    p = p * (1 - lr * wd)            AdamW (decoupled weight decay)
    g = g + wd * p                   Adam (L2 penalty folded into the gradient)
    m = lerp(m, g, 1 - beta1)        v = beta2 * v + (1 - beta2) * g * g
    v_max = max(v_max, v)            amsgrad: the denominator uses v_max instead of v
    p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

The bias corrections are Python floats computed from the step count, as PyTorch's eager CPU
path does (it reads the float32 `step` tensor with .item()). The update runs per parameter
or over flat buffers of a whole group (`foreach`, see _foreach.py), as one fused op,
`_fused_adam_`, or, with `differentiable=True`, as the ops above, which autograd records
(both give the same numbers bit for bit).
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay._generated import functional as F
from tensorplay.optim._foreach import batches
from tensorplay.optim.optimizer import Optimizer, check_nonnegative, eval_closure, no_grad_step

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        check_nonnegative(lr=lr, eps=eps)
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("decoupled_weight_decay", False)

    @no_grad_step
    def step(self, closure=None):
        """One Adam update of every parameter that has a gradient; returns the closure's loss."""
        loss = eval_closure(closure)
        for group in self.param_groups:
            names = ("exp_avg", "exp_avg_sq")
            if group["amsgrad"]:
                names += ("max_exp_avg_sq",)
            decoupled = group["decoupled_weight_decay"] and group["weight_decay"] != 0
            scale = 1 - group["lr"] * group["weight_decay"] if decoupled else None
            fused = not group["differentiable"]
            for batch in batches(self, group, names, has_step=True, fused=fused):
                if fused:
                    fused_adam_step(batch, group)
                else:
                    batch.apply(adam_update(batch, group), scale)
        return loss


def fused_adam_step(batch, group):
    """The whole update (parameters and moments) as one op, `_fused_adam_`: the same
    arithmetic as adam_update and Batch.apply, in a few passes without temporaries
    (cpu_kernels/optim.py). Autograd cannot record it, hence differentiable=True's ops."""
    beta1, beta2 = group["betas"]
    values = batch.values()
    F._fused_adam_(values, batch.grad, batch.state["exp_avg"], batch.state["exp_avg_sq"],
                   batch.state["max_exp_avg_sq"] if group["amsgrad"] else None,
                   group["lr"], beta1, beta2, group["weight_decay"], group["eps"], batch.step,
                   group["maximize"], group["decoupled_weight_decay"])
    batch.store(values)


def adam_update(batch, group):
    """The amount to add to the parameters; updates the moment buffers in place.

    Every op writes a new tensor or one state buffer, never the gradient (in foreach it
    may be a view of a parameter's .grad). In-place kernels compute into a temporary and
    copy it back, so `buf.copy_(expression)` costs no more than `buf.op_(...)` and saves a
    copy where the expression chains several ops.
    """
    beta1, beta2 = group["betas"]
    lr = group["lr"]
    weight_decay = group["weight_decay"]
    step = batch.step
    grad = batch.grad
    if group["maximize"]:
        grad = -grad
    if weight_decay != 0 and not group["decoupled_weight_decay"]:
        grad = grad.add(batch.values(), alpha=weight_decay)
    exp_avg = batch.state["exp_avg"]
    exp_avg_sq = batch.state["exp_avg_sq"]
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.copy_(tp.addcmul(exp_avg_sq * beta2, grad, grad, value=1 - beta2))
    bias_correction1 = 1 - beta1 ** step
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    step_size = lr / bias_correction1
    if group["amsgrad"]:
        max_sq = batch.state["max_exp_avg_sq"]
        max_sq.copy_(tp.maximum(max_sq, exp_avg_sq))
        exp_avg_sq = max_sq
    denom = exp_avg_sq.sqrt() / bias_correction2_sqrt + group["eps"]
    # p.addcdiv_(m, denom, value=-step_size) computes p + value * (m / denom): the same.
    return (exp_avg / denom) * (-step_size)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): the decay shrinks the parameter
    directly instead of entering the moment estimates. Default weight_decay is 1e-2."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
