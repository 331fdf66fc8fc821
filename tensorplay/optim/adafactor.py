"""`tp.optim.Adafactor` (PyTorch's update; Shazeer and Stern, 2018): Adam-like steps whose
second moment, for a matrix, is stored factored as a row and a column average, so the
state costs O(m + n) instead of O(m n) per matrix.

    g = grad (negated when maximize)
    beta2_t' = t^beta2_decay                  (1 - beta2_t: the weight of the new average)
    rho_t = min(lr, 1 / sqrt(t))
    alpha = max(eps2, RMS(p)) * rho_t         the step is relative to the parameter's size
    p = p * (1 - lr * wd)                     weight decay (decoupled)
    matrices (the last two dims):
        row_var = lerp(row_var, mean(g^2, dim=-1), beta2_t')
        col_var = lerp(col_var, mean(g^2, dim=-2), beta2_t')
        v = row_var @ col_var / max(mean(row_var, dim=-2), eps1)
    vectors and scalars:
        variance = lerp(variance, g^2, beta2_t');   v = variance
    u = g / sqrt(max(v, eps1^2))
    p = p - alpha / max(1, RMS(u) / d) * u    (clipped update)

eps1 defaults to the dtype's machine epsilon. The update walks the parameters one at a time
(the state's shape depends on each parameter's; `foreach` is accepted for PyTorch's
signature and takes this loop too).
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.optim.optimizer import Optimizer, eval_closure, new_step_counter, no_grad_step

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)

    @no_grad_step
    def step(self, closure=None):
        """One Adafactor update of every parameter that has a gradient."""
        loss = eval_closure(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = new_step_counter()
                    if p.grad.dim() > 1:
                        # The row factor is reduced along the last dim, the column factor
                        # along the one before.
                        row_shape = list(p.grad.shape)
                        row_shape[-1] = 1
                        state["row_var"] = tp.zeros(row_shape, dtype=p.grad.dtype,
                                                    device=p.grad.device)
                        col_shape = list(p.grad.shape)
                        col_shape[-2] = 1
                        state["col_var"] = tp.zeros(col_shape, dtype=p.grad.dtype,
                                                    device=p.grad.device)
                    else:
                        state["variance"] = tp.zeros_like(p.grad)
                adafactor_step(p, state, group)
        return loss


def adafactor_step(param, state, group):
    """Update one parameter and its variance estimate in place."""
    lr = group["lr"]
    eps1, eps2 = group["eps"]
    if eps1 is None:
        eps1 = tp.finfo(param.dtype).eps
    grad = param.grad
    if group["maximize"]:
        grad = -grad
    state["step"].add_(1)
    step = state["step"].item()

    one_minus_beta2_t = step ** group["beta2_decay"]
    rho_t = min(lr, 1 / (step ** 0.5))
    # The step size is relative to the parameter's root mean square (at least eps2).
    alpha = max(eps2, param.norm(2).item() / (param.numel() ** 0.5)) * rho_t
    if group["weight_decay"] != 0:
        param.mul_(1 - lr * group["weight_decay"])

    if grad.dim() > 1:
        row_var, col_var = state["row_var"], state["col_var"]
        # mean(g * g) over a dim, as PyTorch writes it: a norm squared over the size.
        row_mean = tp.norm(grad, dim=-1, keepdim=True).square() / grad.shape[-1]
        row_var.lerp_(row_mean, one_minus_beta2_t)
        col_mean = tp.norm(grad, dim=-2, keepdim=True).square() / grad.shape[-2]
        col_var.lerp_(col_mean, one_minus_beta2_t)
        # The rank-1 estimate of the full second moment, normalized by the rows' mean.
        var_estimate = (row_var @ col_var) / row_var.mean(dim=-2, keepdim=True).clamp(min=eps1)
    else:
        variance = state["variance"]
        variance.lerp_(grad * grad, one_minus_beta2_t)
        var_estimate = variance
    # eps1 squared: the sqrt below brings it back to eps1's magnitude.
    update = var_estimate.clamp(min=eps1 * eps1).rsqrt() * grad
    denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * group["d"]))
    param.add_(update, alpha=-alpha / denom)
