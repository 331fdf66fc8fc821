"""Database entries: the fused optimizer steps _fused_adam_ (tp.optim.Adam and AdamW call
it) and _fused_sgd_ (tp.optim.SGD). The references are PyTorch's own single-tensor
updates (torch.optim.adam's `_single_tensor_adam`, torch.optim.sgd's `_single_tensor_sgd`,
one step) written out in torch ops; tests/test_optim.py checks the state they update and
whole optimizers against torch.optim.
"""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import DTypeError, ShapeError
from opinfo.core import ErrorInput, OpInfo, SampleInput, make_tensor, rng_for

E = ErrorInput
S = SampleInput
DTYPES = (tp.float32, tp.float64)

# (shape, layout, amsgrad, weight_decay, decoupled, maximize, beta1, step): every branch
# of the step, a multi-block size (the CPU kernel works in blocks of 16k) and strided inputs
CASES = (
    ((5, 7), "contiguous", False, 0.0, False, False, 0.9, 1.0),
    ((40000,), "contiguous", True, 0.1, False, False, 0.9, 3.0),
    ((6, 5), "transposed", False, 0.01, True, True, 0.9, 7.0),
    ((3, 4), "strided", True, 0.0, False, True, 0.3, 2.0),
    ((17,), "contiguous", False, 0.1, True, False, 0.0, 10.0),
)


def _torch_fused_adam_(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2,
                       weight_decay, eps, step, maximize, decoupled):
    """One step of torch.optim.adam's _single_tensor_adam, in place; returns param."""
    if maximize:
        grad = -grad
    if weight_decay != 0:
        if decoupled:
            param.mul_(1 - lr * weight_decay)
        else:
            grad = grad.add(param, alpha=weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    if max_exp_avg_sq is not None:
        torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        exp_avg_sq = max_exp_avg_sq
    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
    return param.addcdiv_(exp_avg, denom, value=-step_size)


def _state(shape, dtype, device, rng, layout):
    """(param, grad, exp_avg, exp_avg_sq): the second moment is non-negative."""
    param, grad, exp_avg = (make_tensor(shape, dtype, device, rng=rng, layout=layout)
                            for _ in range(3))
    exp_avg_sq = make_tensor(shape, dtype, device, rng=rng, low=0, high=2, layout=layout)
    return param, grad, exp_avg, exp_avg_sq


def _fused_adam_samples(op, device, dtype, requires_grad):
    for shape, layout, amsgrad, wd, decoupled, maximize, beta1, step in CASES:
        rng = rng_for(op.full_name, dtype, shape, layout)
        param, grad, exp_avg, exp_avg_sq = _state(shape, dtype, device, rng, layout)
        max_sq = (make_tensor(shape, dtype, device, rng=rng, low=0, high=2, layout=layout)
                  if amsgrad else None)
        yield S(param, (grad, exp_avg, exp_avg_sq, max_sq, 0.01, beta1, 0.999, wd, 1e-8,
                        step, maximize, decoupled),
                name=f"{shape} {layout} amsgrad={amsgrad} weight_decay={wd} "
                     f"decoupled={decoupled} maximize={maximize} beta1={beta1} step={step}")


def errors_fused_adam_(op, device):
    rng = rng_for("fused adam errors")
    param, grad, exp_avg, exp_avg_sq = _state((4, 3), tp.float32, device, rng, "contiguous")
    hyper = (0.01, 0.9, 0.999, 0.0, 1e-8, 1.0, False, False)
    yield E(S(param, (grad, make_tensor((3, 4), tp.float32, device, rng=rng), exp_avg_sq,
                      None, *hyper)),
            ShapeError, r"_fused_adam_\(\): argument 'exp_avg' must have shape \[4, 3\]",
            arg="exp_avg", torch_raises=False)
    yield E(S(param, (grad, exp_avg, exp_avg_sq, exp_avg_sq.double(), *hyper)), DTypeError,
            r"_fused_adam_\(\): argument 'max_exp_avg_sq' \(float64\) must have the dtype "
            r"of 'self' \(float32\)", arg="max_exp_avg_sq", torch_raises=False)
    yield E(S(param.to(tp.int64), (grad.to(tp.int64), exp_avg.to(tp.int64),
                                    exp_avg_sq.to(tp.int64), None, *hyper)),
            DTypeError, r"_fused_adam_\(\): argument 'self' must be a floating point tensor",
            arg="self", torch_raises=False)


# (shape, layout, momentum, dampening, weight_decay, nesterov, maximize, first_step)
SGD_CASES = (
    ((5, 7), "contiguous", 0.0, 0.0, 0.0, False, False, False),
    ((40000,), "contiguous", 0.9, 0.0, 0.01, False, False, False),
    ((6, 5), "transposed", 0.9, 0.2, 0.0, False, True, False),
    ((3, 4), "strided", 0.8, 0.0, 0.1, True, True, True),
    ((17,), "contiguous", 0.5, 0.1, 0.0, False, False, True),
)


def _torch_fused_sgd_(param, grad, momentum_buffer, lr, weight_decay, momentum, dampening,
                      nesterov, maximize, first_step):
    """One step of torch.optim.sgd's _single_tensor_sgd, in place; returns param."""
    if maximize:
        grad = -grad
    if weight_decay != 0:
        grad = grad.add(param, alpha=weight_decay)
    if momentum_buffer is not None:
        if first_step:
            momentum_buffer.copy_(grad)
        else:
            momentum_buffer.mul_(momentum).add_(grad, alpha=1 - dampening)
        grad = grad.add(momentum_buffer, alpha=momentum) if nesterov else momentum_buffer
    return param.add_(grad, alpha=-lr)


def _fused_sgd_samples(op, device, dtype, requires_grad):
    for shape, layout, momentum, dampening, wd, nesterov, maximize, first in SGD_CASES:
        rng = rng_for(op.full_name, dtype, shape, layout)
        param, grad, buf = (make_tensor(shape, dtype, device, rng=rng, layout=layout)
                            for _ in range(3))
        yield S(param, (grad, buf if momentum != 0 else None, 0.05, wd, momentum, dampening,
                        nesterov, maximize, first),
                name=f"{shape} {layout} momentum={momentum} dampening={dampening} "
                     f"weight_decay={wd} nesterov={nesterov} maximize={maximize} "
                     f"first_step={first}")


def errors_fused_sgd_(op, device):
    rng = rng_for("fused sgd errors")
    param, grad = (make_tensor((4, 3), tp.float32, device, rng=rng) for _ in range(2))
    yield E(S(param, (make_tensor((12,), tp.float32, device, rng=rng), None, 0.1, 0.0, 0.0,
                      0.0, False, False, False)),
            ShapeError, r"_fused_sgd_\(\): argument 'grad' must have shape \[4, 3\]",
            arg="grad", torch_raises=False)
    yield E(S(param, (grad, grad.double(), 0.1, 0.0, 0.9, 0.0, False, False, False)),
            DTypeError, r"_fused_sgd_\(\): argument 'momentum_buffer' \(float64\) must have "
            r"the dtype of 'self' \(float32\)", arg="momentum_buffer", torch_raises=False)


op_db = [
    OpInfo("_fused_adam_", ref=_torch_fused_adam_, overloads=("_fused_adam_",), dtypes=DTYPES,
           mutates_input=True, method=False, supports_autograd=False,
           sample_inputs_func=_fused_adam_samples, error_inputs_func=errors_fused_adam_,
           tolerances={tp.float32: (1e-5, 1e-6)}),
    OpInfo("_fused_sgd_", ref=_torch_fused_sgd_, overloads=("_fused_sgd_",), dtypes=DTYPES,
           mutates_input=True, method=False, supports_autograd=False,
           sample_inputs_func=_fused_sgd_samples, error_inputs_func=errors_fused_sgd_,
           tolerances={tp.float32: (1e-5, 1e-6)}),
]
