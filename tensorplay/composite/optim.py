"""The fused optimizer steps composed from TensorPlay ops: what every backend without a
kernel of its own runs (the `cuda` device; the CPU has the NumPy passes of
cpu_kernels/optim.py, which sends half and bfloat16 here). The same ops, in the same
order, as tp.optim's unfused updates (adam.py, sgd.py), so both give the same numbers. It runs below
autograd (tp.optim calls it under no_grad).
"""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.meta import optim as rules


def fused_adam_(self, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2,
                weight_decay, eps, step, maximize, decoupled):
    """One Adam step of `self` in place (see cpu_kernels/optim.py for the formula)."""
    rules.fused_adam_("_fused_adam_", (self, grad, exp_avg, exp_avg_sq, max_exp_avg_sq))
    if maximize:
        grad = F.neg(grad)
    if weight_decay != 0 and not decoupled:
        grad = F.add(grad, self, alpha=weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.copy_(F.addcmul(F.mul(exp_avg_sq, beta2), grad, grad, value=1 - beta2))
    if max_exp_avg_sq is not None:
        max_exp_avg_sq.copy_(F.maximum(max_exp_avg_sq, exp_avg_sq))
        exp_avg_sq = max_exp_avg_sq
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    denom = F.add(F.div(F.sqrt(exp_avg_sq), bias_correction2_sqrt), eps)
    if weight_decay != 0 and decoupled:
        self.mul_(1 - lr * weight_decay)
    return self.add_(F.mul(F.div(exp_avg, denom), -step_size))


def fused_sgd_(self, grad, momentum_buffer, lr, weight_decay, momentum, dampening, nesterov,
               maximize, first_step):
    """One SGD step of `self` in place (see cpu_kernels/optim.py for the formula)."""
    rules.fused_sgd_("_fused_sgd_", (self, grad, momentum_buffer))
    if maximize:
        grad = F.neg(grad)
    if weight_decay != 0:
        grad = F.add(grad, self, alpha=weight_decay)
    if momentum_buffer is not None:
        if first_step:
            momentum_buffer.copy_(grad)
        else:
            momentum_buffer.mul_(momentum).add_(grad, alpha=1 - dampening)
        grad = F.add(grad, momentum_buffer, alpha=momentum) if nesterov else momentum_buffer
    return self.add_(F.mul(grad, -lr))
