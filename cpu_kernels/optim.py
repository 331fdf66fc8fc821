"""The fused optimizer steps on NumPy arrays: _fused_adam_ (Adam, AdamW), _fused_sgd_.

tp.optim.Adam's unfused update is a dozen dispatched ops, each allocating its result, and
an in-place add into the parameters (about 16 passes over memory). Here the same
arithmetic is one compiled loop (cpu_kernels/_loops.py) that reads each element of the
parameters, the gradient and the moments once and writes them once:

    for each element i:
        g = -grad if maximize else grad
        g = g + weight_decay * p                     Adam's L2 penalty (not decoupled)
        m += (1 - beta1) * (g - m)                   lerp(m, g, 1 - beta1) for beta1 > 0.5,
                                                     else m = g - (g - m) * beta1
        v  = v * beta2 + (1 - beta2) * (g * g)
        vmax = max(vmax, v); v = vmax                amsgrad
        p  = p * (1 - lr * weight_decay)             AdamW (decoupled)
        p += (m / (sqrt(v) / sqrt(1 - beta2^t) + eps)) * -(lr / (1 - beta1^t))

Every number is rounded to the tensors' dtype before it enters the loop and every
operation rounds its result in the order written, as the unfused ops do, so both give
the same bits (tests/test_optim.py). One thread, 1M float32 parameters: 0.4 ms, against
2.1 ms for the same arithmetic as a dozen NumPy passes over cache-sized blocks (the
kernel before this one), and 0.5 ms for PyTorch's fused step. float32 and float64 run
here; the other floating dtypes (half, bfloat16) run the unfused ops themselves, one
after the other (`_adam_by_ops`, `_sgd_by_ops`), each rounding as the CPU kernels round
a half type.
"""
from __future__ import annotations

import functools

import numpy as np

from tensorplay.kernel_support.ops import call_below_autograd
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._loops import loop


def fused_adam_(self, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2,
                weight_decay, eps, step, maximize, decoupled):
    """One Adam step of `self` (the parameters) and its moments, in place; returns self."""
    shape_rule("optim.fused_adam_")(
        "_fused_adam_", (self, grad, exp_avg, exp_avg_sq, max_exp_avg_sq))
    np_dtype = self._impl.dtype.np
    if np_dtype not in (np.float32, np.float64):
        return _adam_by_ops(self, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2,
                            weight_decay, eps, step, maximize, decoupled)
    num = np_dtype.type
    bias_correction2_sqrt = num((1 - beta2 ** step) ** 0.5)
    # without amsgrad the loop gets exp_avg_sq in max_exp_avg_sq's place and never writes
    # it there (an array, not None: the loop's types stay the same for every option)
    arrays = (self, grad, exp_avg, exp_avg_sq,
              exp_avg_sq if max_exp_avg_sq is None else max_exp_avg_sq)
    _in_place(_adam_loop, arrays, _adam_constants(
        np_dtype, lr, beta1, beta2, weight_decay, eps, maximize, decoupled,
        max_exp_avg_sq is not None) + (
        # x / 1 is x: once 1 - beta2^t rounds to 1 the division is skipped
        bias_correction2_sqrt != 1, bias_correction2_sqrt, num(eps),
        num(-(lr / (1 - beta1 ** step)))))
    return self


@functools.lru_cache(maxsize=64)
def _adam_constants(np_dtype, lr, beta1, beta2, weight_decay, eps, maximize, decoupled,
                    amsgrad):
    """_adam_loop's arguments that do not change from step to step, rounded to the dtype
    (kept per group's settings: a model's parameters ask for the same few, and making the
    NumPy scalars was a third of the kernel's Python)."""
    num = np_dtype.type
    return (maximize, weight_decay != 0 and not decoupled, num(weight_decay),
            weight_decay != 0 and decoupled, num(1 - lr * weight_decay),
            abs(1 - beta1) < 0.5, num(1 - beta1), num(1) - num(1 - beta1), num(beta2),
            num(1 - beta2), amsgrad)


def fused_sgd_(self, grad, momentum_buffer, lr, weight_decay, momentum, dampening, nesterov,
               maximize, first_step):
    """One SGD step of `self` (the parameters) and its momentum buffer, in place; returns
    self. Per block, as sgd.py's ops do:

        g = -grad if maximize else grad
        g = g + weight_decay * p
        buf = g  (first_step)   or   buf = buf * momentum + g * (1 - dampening)
        g = g + buf * momentum  (nesterov)   or   g = buf
        p += g * -lr
    """
    shape_rule("optim.fused_sgd_")("_fused_sgd_", (self, grad, momentum_buffer))
    np_dtype = self._impl.dtype.np
    if np_dtype not in (np.float32, np.float64):
        return _sgd_by_ops(self, grad, momentum_buffer, lr, weight_decay, momentum, dampening,
                           nesterov, maximize, first_step)
    num = np_dtype.type
    has_buffer = momentum_buffer is not None
    arrays = (self, grad, momentum_buffer if has_buffer else grad)
    _in_place(_sgd_loop, arrays, (
        maximize, weight_decay != 0, num(weight_decay), has_buffer, first_step,
        num(momentum),
        # add(g, alpha=1) adds g itself (cpu_kernels/pointwise.py's _scaled)
        1 - dampening != 1, num(1 - dampening), nesterov, num(-lr)))
    return self


# ---- half and bfloat16: the unfused ops ----------------------------------------------
# The ops tp.optim's unfused updates (adam.py, sgd.py) run, in their order, through the
# dispatcher below autograd (tensorplay/kernel_support/compose.py): the same numbers as
# the Composite kernel of tensorplay/composite/optim.py, which the `cuda` device runs.
def _adam_by_ops(self, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2,
                 weight_decay, eps, step, maximize, decoupled):
    if maximize:
        grad = call_below_autograd("neg", grad)
    if weight_decay != 0 and not decoupled:
        grad = call_below_autograd("add.Tensor", grad, self, weight_decay)
    call_below_autograd("lerp_.Scalar", exp_avg, grad, 1 - beta1)
    decayed = call_below_autograd("mul.Scalar", exp_avg_sq, beta2)
    updated = call_below_autograd("addcmul", decayed, grad, grad, 1 - beta2)
    call_below_autograd("copy_", exp_avg_sq, updated, False)
    if max_exp_avg_sq is not None:
        largest = call_below_autograd("maximum", max_exp_avg_sq, exp_avg_sq)
        call_below_autograd("copy_", max_exp_avg_sq, largest, False)
        exp_avg_sq = max_exp_avg_sq
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    root = call_below_autograd("sqrt", exp_avg_sq)
    corrected = call_below_autograd("div.Scalar", root, bias_correction2_sqrt)
    denom = call_below_autograd("add.Scalar", corrected, eps, 1)
    if weight_decay != 0 and decoupled:
        call_below_autograd("mul_.Scalar", self, 1 - lr * weight_decay)
    ratio = call_below_autograd("div.Tensor", exp_avg, denom)
    update = call_below_autograd("mul.Scalar", ratio, -step_size)
    return call_below_autograd("add_.Tensor", self, update, 1)


def _sgd_by_ops(self, grad, momentum_buffer, lr, weight_decay, momentum, dampening, nesterov,
                maximize, first_step):
    if maximize:
        grad = call_below_autograd("neg", grad)
    if weight_decay != 0:
        grad = call_below_autograd("add.Tensor", grad, self, weight_decay)
    if momentum_buffer is not None:
        if first_step:
            call_below_autograd("copy_", momentum_buffer, grad, False)
        else:
            call_below_autograd("mul_.Scalar", momentum_buffer, momentum)
            call_below_autograd("add_.Tensor", momentum_buffer, grad, 1 - dampening)
        if nesterov:
            grad = call_below_autograd("add.Tensor", grad, momentum_buffer, momentum)
        else:
            grad = momentum_buffer
    update = call_below_autograd("mul.Scalar", grad, -lr)
    return call_below_autograd("add_.Tensor", self, update, 1)

def _in_place(body, tensors, numbers):
    """body(*flat arrays, *numbers), the loop writing the tensors' memory in place. A
    strided tensor (a transposed parameter) is copied to a contiguous array and back."""
    flat = []
    for t in tensors:
        if not t._impl.is_contiguous:
            break
        flat.append(t._impl.array().reshape(-1))     # a view: the writes land
    else:
        body(*flat, *numbers)
        return
    arrays = [t._impl.array() for t in tensors]
    # one copy per distinct tensor (one passed twice stays one array in the loop)
    copies = {id(a): (a, np.ascontiguousarray(a)) for a in arrays}
    body(*[copies[id(a)][1].reshape(-1) for a in arrays], *numbers)
    for a, work in copies.values():
        if work is not a:
            np.copyto(a, work)


@loop
def _adam_loop(p, grad, m, v, vmax, maximize, l2, weight_decay, decay, decay_factor,
               lerp_from_start, lerp_weight, lerp_rest, beta2, one_minus_beta2, amsgrad,
               bias_corrected, bias_correction2_sqrt, eps, neg_step_size):
    """The module doc's loop, in the order of the unfused ops (adam.py)."""
    for i in range(p.size):
        g = -grad[i] if maximize else grad[i]
        if l2:
            g = g + p[i] * weight_decay
        if lerp_from_start:
            mi = m[i] + (g - m[i]) * lerp_weight
        else:
            mi = g - (g - m[i]) * lerp_rest
        m[i] = mi
        vi = v[i] * beta2 + (g * g) * one_minus_beta2
        v[i] = vi
        if amsgrad:
            largest = vmax[i]
            if not (largest >= vi or largest != largest):    # NaN spreads, as np.maximum
                largest = vi
            vmax[i] = largest
            vi = largest
        denom = np.sqrt(vi)
        if bias_corrected:
            denom = denom / bias_correction2_sqrt
        denom = denom + eps
        pi = p[i] * decay_factor if decay else p[i]
        p[i] = pi + (mi / denom) * neg_step_size


@loop
def _sgd_loop(p, grad, buf, maximize, l2, weight_decay, has_buffer, first_step, momentum,
              damped, one_minus_dampening, nesterov, neg_lr):
    """fused_sgd_'s loop, in the order of the unfused ops (sgd.py)."""
    for i in range(p.size):
        g = -grad[i] if maximize else grad[i]
        if l2:
            g = g + p[i] * weight_decay
        if has_buffer:
            if first_step:
                b = g
            elif damped:
                b = buf[i] * momentum + g * one_minus_dampening
            else:
                b = buf[i] * momentum + g
            buf[i] = b
            g = g + b * momentum if nesterov else b
        p[i] = p[i] + g * neg_lr
