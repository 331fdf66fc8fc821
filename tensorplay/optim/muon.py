"""`tp.optim.Muon` (PyTorch 2.13's update): momentum, then the update matrix replaced by
the nearest (semi-)orthogonal matrix, for the 2-D weights of hidden layers.

    B = lerp(B, g, 1 - momentum)                   the momentum buffer
    U = lerp(g, B, momentum)  (nesterov)   or   U = B
    O = NS(U)                                      ≈ U V (U Vᵀ from the SVD of U, singular values -> ~1)
    p = p (1 - lr weight_decay)                    decoupled weight decay
    p = p - lr' O,   lr' = lr sqrt(max(1, A/B))        ("original", Keller Jordan's)
                  or lr' = 0.2 lr sqrt(max(A, B))      ("match_rms_adamw", Moonshot's)

Why orthogonalize: the momentum matrix of a layer is dominated by a few directions;
setting all its singular values to ~1 gives every direction an equal step. The
orthogonalization is not an SVD but ns_steps of a Newton-Schulz iteration, a quintic
polynomial X <- aX + (bXXᵀ + c(XXᵀ)²)X applied to X/|X|, run in bfloat16 as PyTorch's is
(the iteration only needs a rough answer: singular values land in about [0.7, 1.2]).
Biases, embeddings and other non-2-D parameters belong to another optimizer (AdamW)."""
from __future__ import annotations

import math

import tensorplay as tp
from tensorplay.optim.optimizer import Optimizer, eval_closure, no_grad_step

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """An approximately orthogonal matrix with grad's singular vectors (grad's "zeroth
    power"), by ns_steps Newton-Schulz iterations in bfloat16."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    ortho_grad = grad.bfloat16()
    tall = grad.size(0) > grad.size(1)
    if tall:
        ortho_grad = ortho_grad.T        # iterate on the wide side: the Gram matrix is smaller
    # scaled so that every singular value is <= 1, where the iteration converges
    ortho_grad = ortho_grad.div(ortho_grad.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram_matrix = ortho_grad @ ortho_grad.T
        gram_update = tp.addmm(gram_matrix, gram_matrix, gram_matrix, beta=b, alpha=c)
        ortho_grad = tp.addmm(ortho_grad, gram_update, ortho_grad, beta=a)
    if tall:
        ortho_grad = ortho_grad.T
    return ortho_grad


def _adjust_lr(lr, adjust_lr_fn, param_shape):
    """Scale lr so that updates of rectangular matrices have a comparable RMS."""
    A, B = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        adjusted_ratio = math.sqrt(max(1, A / B))
    elif adjust_lr_fn == "match_rms_adamw":
        adjusted_ratio = 0.2 * math.sqrt(max(A, B))
    else:
        adjusted_ratio = 1.0
    return lr * adjusted_ratio


class Muon(Optimizer):
    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):
        if isinstance(lr, tp.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    @no_grad_step
    def step(self, closure=None):
        """One Muon update of every parameter that has a gradient."""
        loss = eval_closure(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            momentum = group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.dtype.is_complex:
                    raise RuntimeError("Muon does not support complex parameters")
                if p.grad.is_sparse:
                    raise RuntimeError("Muon does not support sparse gradients")
                grad = p.grad
                if grad.ndim != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = tp.zeros_like(grad)
                buf = state["momentum_buffer"]
                buf.lerp_(grad, 1 - momentum)
                update = grad.lerp(buf, momentum) if group["nesterov"] else buf
                update = _zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                     group["ns_steps"], group["eps"])
                adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], p.shape)
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(update, alpha=-adjusted_lr)
        return loss
