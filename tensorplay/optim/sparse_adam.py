"""`tp.optim.SparseAdam` (PyTorch's update): Adam for sparse (COO) gradients, such as an
embedding table's, where a step touches only the rows that have a gradient.

For the gradient's entries only (its coalesced indices), with m and v the dense moments:

    g = grad (negated when maximize), duplicates summed (coalesce: the update is not linear)
    m = m + (1 - beta1) * (g - m)        the same as lerp, written as the increment added
    v = v + (1 - beta2) * (g^2 - v)      to the dense buffer as a sparse tensor
    p = p - lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps)

Entries without a gradient keep their moments and values: unlike Adam, their moments do not
decay (this is why it is "lazy" Adam). The step count is a plain int, as PyTorch keeps it.
"""
from __future__ import annotations

import math

import tensorplay as tp
from tensorplay.optim.optimizer import Optimizer, check_betas, eval_closure, no_grad_step

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)
        sparse_params = [[i, j] for i, group in enumerate(self.param_groups)
                         for j, p in enumerate(group["params"]) if p.is_sparse]
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires "
                             "dense parameter tensors")

    @no_grad_step
    def step(self, closure=None):
        """One update of the entries of every parameter that have a (sparse) gradient."""
        loss = eval_closure(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if not p.grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = tp.zeros_like(p)
                    state["exp_avg_sq"] = tp.zeros_like(p)
                state["step"] += 1
                sparse_adam_step(p, state, group)
        return loss


def sparse_adam_step(param, state, group):
    """Update the gradient's entries of one parameter and of its moments in place."""
    beta1, beta2 = group["betas"]
    grad = param.grad
    if group["maximize"]:
        grad = -grad
    grad = grad.coalesce()
    indices = grad._indices()
    values = grad._values()
    if values.numel() == 0:
        return

    def make_sparse(entries):
        """`entries` (one per gradient index) as a sparse tensor of the parameter's shape."""
        return tp.sparse_coo_tensor(indices, entries, grad.shape)

    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    # The moments at the gradient's entries, and their increments.
    old_exp_avg = exp_avg.sparse_mask(grad)._values()
    exp_avg_increment = (values - old_exp_avg) * (1 - beta1)
    exp_avg.add_(make_sparse(exp_avg_increment))
    old_exp_avg_sq = exp_avg_sq.sparse_mask(grad)._values()
    exp_avg_sq_increment = (values.pow(2) - old_exp_avg_sq) * (1 - beta2)
    exp_avg_sq.add_(make_sparse(exp_avg_sq_increment))

    # The new moments at those entries, added densely (no second sparse_mask).
    numer = exp_avg_increment + old_exp_avg
    denom = (exp_avg_sq_increment + old_exp_avg_sq).sqrt() + group["eps"]
    step = state["step"]
    step_size = group["lr"] * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    param.add_(make_sparse(-step_size * (numer / denom)))
