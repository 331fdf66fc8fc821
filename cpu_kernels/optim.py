"""The fused optimizer steps on NumPy arrays: _fused_adam_ (Adam, AdamW), _fused_sgd_.

tp.optim.Adam's unfused update is a dozen dispatched ops, each allocating its result, and
an in-place add into the parameters (about 16 passes over memory). Here the same
arithmetic runs as `out=` ufunc passes over blocks of BLOCK elements with two block-sized
scratch arrays, so every pass after a block's first reads from cache and nothing is
allocated:

    for each block [i, i + BLOCK):
        g = -grad if maximize else grad
        g = g + weight_decay * p                     Adam's L2 penalty (not decoupled)
        m += (1 - beta1) * (g - m)                   lerp(m, g, 1 - beta1) for beta1 > 0.5,
                                                     else m = g - (g - m) * beta1
        v  = v * beta2 + (1 - beta2) * (g * g)
        vmax = max(vmax, v); v = vmax                amsgrad
        p  = p * (1 - lr * weight_decay)             AdamW (decoupled)
        p += (m / (sqrt(v) / sqrt(1 - beta2^t) + eps)) * -(lr / (1 - beta1^t))

Every number is rounded to the tensors' dtype before it enters a pass and every pass
rounds its result, as the unfused ops do (NumPy casts a number to float32 against a
float32 array), so both give the same bits. float32 and float64 run here; the other
floating dtypes (half, bfloat16) run the unfused ops themselves, one after the other
(`_adam_by_ops`, `_sgd_by_ops`), each rounding as the CPU kernels round a half type.
"""
from __future__ import annotations

import numpy as np

from tensorplay.kernel_support.ops import call_below_autograd
from tensorplay.kernel_support.ops import shape_rule

# Elements per block. A pass costs NumPy's per-call overhead (~0.3 us, a dozen calls a
# block) plus its loop (~0.1 ns an element in or out of L2): memory is not what bounds it
# until the arrays leave L3. Measured on a 1M-element Adam step (CPU time, one thread):
# 16K-element blocks (the six arrays in L2) 20% slower than 128K, 8K 40% slower; blocks of
# 64K-256K within 5% of each other; one pass over a whole 4M-element array 30% slower.
BLOCK = 128 * 1024


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
    c = dict(
        maximize=maximize,
        l2=num(weight_decay) if weight_decay != 0 and not decoupled else None,
        decay=num(1 - lr * weight_decay) if weight_decay != 0 and decoupled else None,
        lerp_from_start=abs(1 - beta1) < 0.5, lerp_weight=num(1 - beta1),
        lerp_rest=num(1) - num(1 - beta1), beta2=num(beta2), one_minus_beta2=num(1 - beta2),
        eps=num(eps), bias_correction2_sqrt=num((1 - beta2 ** step) ** 0.5),
        neg_step_size=num(-(lr / (1 - beta1 ** step))))
    _blocked(_adam_block, (self, grad, exp_avg, exp_avg_sq, max_exp_avg_sq), np_dtype, c)
    return self


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
    c = dict(
        maximize=maximize, l2=num(weight_decay) if weight_decay != 0 else None,
        first_step=first_step, momentum=num(momentum), nesterov=nesterov,
        # add(g, alpha=1) adds g itself (cpu_kernels/pointwise.py's _scaled)
        damped=None if 1 - dampening == 1 else num(1 - dampening), neg_lr=num(-lr))
    _blocked(_sgd_block, (self, grad, momentum_buffer), np_dtype, c)
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

def _blocked(body, tensors, np_dtype, c):
    """body(*arrays, g_buf, s_buf, c) over blocks of BLOCK elements of every tensor (None
    stays None), with two scratch arrays; one block of everything when one is strided
    (the arrays are views, so the writes land)."""
    arrays = [None if t is None else t._impl.array() for t in tensors]
    given = [a for a in arrays if a is not None]
    if not all(a.flags.c_contiguous for a in given):
        scratch = [np.empty(given[0].shape, np_dtype) for _ in range(2)]
        body(*arrays, *scratch, c)
        return
    flat = [None if a is None else a.reshape(-1) for a in arrays]   # views: contiguous
    n = flat[0].size
    scratch = [np.empty(min(BLOCK, n), np_dtype) for _ in range(2)]
    for i in range(0, n, BLOCK):
        j = min(i + BLOCK, n)
        body(*[None if a is None else a[i:j] for a in flat], *[b[:j - i] for b in scratch], c)


def _adam_block(p, g, m, v, vmax, g_buf, s_buf, c):
    """One block of the Adam step (the module doc's loop body), in place."""
    if c["maximize"]:
        np.negative(g, out=g_buf)
        g = g_buf
    if c["l2"] is not None:
        np.multiply(p, c["l2"], out=s_buf)
        np.add(g, s_buf, out=g_buf)
        g = g_buf
    np.subtract(g, m, out=s_buf)
    if c["lerp_from_start"]:
        s_buf *= c["lerp_weight"]
        m += s_buf
    else:
        s_buf *= c["lerp_rest"]
        np.subtract(g, s_buf, out=m)
    np.square(g, out=s_buf)                 # g * g, reading g once
    s_buf *= c["one_minus_beta2"]
    v *= c["beta2"]
    v += s_buf
    if vmax is not None:
        np.maximum(vmax, v, out=vmax)
        v = vmax
    np.sqrt(v, out=s_buf)
    if c["bias_correction2_sqrt"] != 1:     # x / 1 is x: late steps skip the pass
        s_buf /= c["bias_correction2_sqrt"]
    s_buf += c["eps"]
    # into s_buf itself: a pass over two arrays costs less than one over three
    np.divide(m, s_buf, out=s_buf)
    s_buf *= c["neg_step_size"]
    if c["decay"] is not None:
        p *= c["decay"]
    p += s_buf


def _sgd_block(p, g, buf, g_buf, s_buf, c):
    """One block of the SGD step (fused_sgd_'s loop body), in place."""
    if c["maximize"]:
        np.negative(g, out=g_buf)
        g = g_buf
    if c["l2"] is not None:
        np.multiply(p, c["l2"], out=s_buf)
        np.add(g, s_buf, out=g_buf)
        g = g_buf
    if buf is not None:
        if c["first_step"]:
            np.copyto(buf, g)
        else:
            buf *= c["momentum"]
            if c["damped"] is None:
                buf += g
            else:
                np.multiply(g, c["damped"], out=s_buf)
                buf += s_buf
        if c["nesterov"]:
            np.multiply(buf, c["momentum"], out=s_buf)
            np.add(g, s_buf, out=g_buf)
            g = g_buf
        else:
            g = buf
    np.multiply(g, c["neg_lr"], out=s_buf)
    p += s_buf
