"""`tp.optim.RMSprop` (PyTorch's update).

    g = grad (negated when maximize) + weight_decay * p
    v = alpha * v + (1 - alpha) * g * g
    centered:  m = lerp(m, g, 1 - alpha);  avg = sqrt(v - m * m) + eps
    otherwise: avg = sqrt(v) + eps
    momentum > 0:  buf = momentum * buf + g / avg;  p = p - lr * buf
    otherwise:     p = p - lr * g / avg
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.optim.optimizer import (Optimizer, eval_closure, lerp_, new_step_counter,
                                      no_grad_step)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
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
            lr = group["lr"]
            alpha = group["alpha"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            momentum = group["momentum"]
            centered = group["centered"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = new_step_counter()
                    state["square_avg"] = tp.zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = tp.zeros_like(p)
                    if centered:
                        state["grad_avg"] = tp.zeros_like(p)
                if group["maximize"]:
                    grad = -grad
                state["step"].add_(1)
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                square_avg = state["square_avg"]
                square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                if centered:
                    grad_avg = state["grad_avg"]
                    lerp_(grad_avg, grad, 1 - alpha)
                    avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg = avg.add_(eps)
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    buf.mul_(momentum).addcdiv_(grad, avg)
                    p.add_(buf, alpha=-lr)
                else:
                    p.addcdiv_(grad, avg, value=-lr)
        return loss
