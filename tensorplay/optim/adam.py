"""`tp.optim.Adam` and `tp.optim.AdamW` (PyTorch's single-tensor update, step by step).

    g = grad (negated when maximize)
    p = p * (1 - lr * wd)            AdamW (decoupled weight decay)
    g = g + wd * p                   Adam (L2 penalty folded into the gradient)
    m = lerp(m, g, 1 - beta1)        v = beta2 * v + (1 - beta2) * g * g
    v_max = max(v_max, v)            amsgrad: the denominator uses v_max instead of v
    p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

The bias corrections are Python floats computed from the step count, as PyTorch's eager CPU
path does (it reads the float32 `step` tensor with .item()).
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.optim.optimizer import (Optimizer, eval_closure, lerp_, new_step_counter,
                                      no_grad_step)

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
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

    def _state_for(self, p, amsgrad):
        """The parameter's buffers, created on its first step (zeros like the parameter)."""
        state = self.state[p]
        if len(state) == 0:
            state["step"] = new_step_counter()
            state["exp_avg"] = tp.zeros_like(p)
            state["exp_avg_sq"] = tp.zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = tp.zeros_like(p)
        return state

    @no_grad_step
    def step(self, closure=None):
        """One Adam update of every parameter that has a gradient; returns the closure's loss."""
        loss = eval_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr = group["lr"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            amsgrad = group["amsgrad"]
            maximize = group["maximize"]
            decoupled = group["decoupled_weight_decay"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = self._state_for(p, amsgrad)
                if maximize:
                    grad = -grad
                # The count is read back as a Python float anyway: fill_ is cheaper than add_.
                step = state["step"].item() + 1
                state["step"].fill_(step)
                if weight_decay != 0:
                    if decoupled:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                exp_avg = state["exp_avg"]
                exp_avg_sq = state["exp_avg_sq"]
                lerp_(exp_avg, grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)

                bias_correction1 = 1 - beta1 ** step
                bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
                step_size = lr / bias_correction1
                if amsgrad:
                    max_sq = state["max_exp_avg_sq"]
                    max_sq.copy_(tp.maximum(max_sq, exp_avg_sq))
                    denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                else:
                    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                p.addcdiv_(exp_avg, denom, value=-step_size)
        return loss


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
