"""Backward helpers of the normalizations (see derivatives.yaml): batch, layer, group
and RMS norm.

Written with TensorPlay ops only, so their results can be differentiated again.
"""
from __future__ import annotations

import math

from tensorplay._generated import functional as F
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.kernel_support.arguments import machine_eps


# ---- normalization ------------------------------------------------------------------
# NOTE: without create_graph the backward reads the mean and rstd that the forward
# kernel saved. With create_graph (grad mode on during backward) it recomputes them
# from the input with TensorPlay ops, so that the second derivative sees how they
# depend on the input (the saved ones are constants to autograd).
def _stats(x, dims, eps, saved_mean, saved_rstd, stat_shape):
    if grad_state.enabled:
        mean = x.mean(dims, True)
        d = x - mean
        return mean, 1 / F.sqrt((d * d).mean(dims, True) + eps)
    mean = None if saved_mean is None else saved_mean.reshape(stat_shape)
    return mean, saved_rstd.reshape(stat_shape)


def _normalized_grad(grad_xhat, xhat, rstd, dims):
    """d/dx of xhat = (x - mean(x)) * rstd(x), applied to grad_xhat:
    rstd * (g - mean(g) - xhat * mean(g * xhat)), means over the normalized dims."""
    return rstd * (grad_xhat - grad_xhat.mean(dims, True)
                   - xhat * (grad_xhat * xhat).mean(dims, True))


def _affine_grads(grad, xhat, weight, bias, dims, param_shape):
    """(grad_weight, grad_bias): sums over every dim the parameter is broadcast along.
    `bias` is the bias or only its sizes; None: there is none."""
    gw = None if weight is None else (grad * xhat).sum(dims).reshape(param_shape)
    gb = None if bias is None else grad.sum(dims).reshape(param_shape)
    return gw, gb


def _channel_shape(x):
    shape = [1] * x.dim()
    shape[1] = x.shape[1]
    return shape


# NOTE: batch and group norm save what PyTorch's formulas save, so that an in-place change
# raises in backward alike: not the bias (only whether there is one, `bias_sizes`), and
# for batch norm the running stats, in both modes. Their values are not read here: the
# forward returns the statistics it used (the running ones in eval mode), and training
# updates the running stats in place without bumping their version, as PyTorch's does.
def batch_norm_backward(grad, input, weight, bias_sizes, running_mean, running_var,
                        save_mean, save_rstd, training, eps, grad_input_mask):
    """Gradients of native_batch_norm for (input, weight, bias). In eval mode the stats
    are the running ones: constants, so the input gradient is grad * weight * rstd.

    A plain backward() takes the fused op native_batch_norm_backward, one kernel over the
    saved mean and rstd (training) or the running stats (evaluation), as PyTorch's does
    in both modes: its sums are PyTorch's (per image in float, added in double), where
    the composed sum of grad * xhat rounds differently (seed 4029939: an eval-mode weight
    gradient of cancelling 1e30s 6e-5 off). See layer_norm_backward for why create_graph
    composes the backward from differentiable ops instead. grad_input_mask (which of
    input, weight, bias this pass wants) is its output_mask, as in PyTorch: a grad() for
    the input alone makes no weight and bias gradients."""
    if not grad_state.enabled and (training or (running_mean is not None
                                                and running_var is not None)):
        want_input, want_weight, want_bias = grad_input_mask
        stats = (None, None) if training else (running_mean, running_var)
        return F.native_batch_norm_backward(
            grad, input, weight, *stats, save_mean, save_rstd, training, eps,
            [want_input, want_weight and weight is not None,
             want_bias and bias_sizes is not None])
    shape = _channel_shape(input)
    dims = [0] + list(range(2, input.dim()))
    w = None if weight is None else weight.reshape(shape)
    if training:
        mean, rstd = _stats(input, dims, eps, save_mean, save_rstd, shape)
    else:
        mean, rstd = save_mean.reshape(shape), save_rstd.reshape(shape)
    xhat = (input - mean) * rstd
    grad_xhat = grad if w is None else grad * w
    if training:
        gi = _normalized_grad(grad_xhat, xhat, rstd, dims)
    else:
        gi = grad_xhat * rstd
    gw, gb = _affine_grads(grad, xhat, weight, bias_sizes, dims, (input.shape[1],))
    return gi, gw, gb


def layer_norm_backward(grad, input, normalized_shape, weight, bias, mean, rstd, eps):
    """Gradients of native_layer_norm for (input, weight, bias).

    A plain backward() (grad mode off while it runs: nothing records this backward) takes
    the fused op native_layer_norm_backward, one kernel over the saved mean and rstd.
    With create_graph=True the backward is itself recorded, so it is composed from
    differentiable ops instead, the statistics recomputed from the input (the fused op
    has no derivative; the saved statistics are constants to autograd)."""
    if not grad_state.enabled:
        return F.native_layer_norm_backward(grad, input, normalized_shape, mean, rstd, weight,
                                            bias, [True, weight is not None, bias is not None])
    k = len(normalized_shape)
    lead = input.dim() - k
    dims = list(range(lead, input.dim()))
    stat_shape = list(input.shape[:lead]) + [1] * k
    mean, rstd = _stats(input, dims, eps, mean, rstd, stat_shape)
    xhat = (input - mean) * rstd
    grad_xhat = grad if weight is None else grad * weight
    # NOTE: factored as the fused kernel (and PyTorch's) factors it, so an infinite
    # weight gives the same infinities and NaNs on both paths; see group_norm_backward.
    n = math.prod(normalized_shape)
    s = 1.0 / n if n else 0.0    # n == 0: no element to normalize, an empty gradient
    ds = (grad_xhat * input).sum(dims, True)
    db = grad_xhat.sum(dims, True)
    b = (db * mean - ds) * rstd * rstd * rstd * s
    c = -b * mean - db * rstd * s
    gi = (rstd * grad if weight is None else rstd * grad * weight) + b * input + c
    gw, gb = _affine_grads(grad, xhat, weight, bias, list(range(lead)), tuple(normalized_shape))
    return gi, gw, gb


def group_norm_backward(grad, input, weight, bias_sizes, mean, rstd, N, C, HxW, group, eps):
    """Gradients of native_group_norm, factored as PyTorch's kernel factors them. With the
    input viewed as (N, group, D = C // group, HxW), s = 1 / (D * HxW), w = weight or 1,
    per (sample, channel) ds = sum(grad * x), db = sum(grad), and per (sample, group)
    ds_w = sum_c ds * w, db_w = sum_c db * w:

        grad_input  = rstd * w * grad + c2 * x + c3
                      c2 = (db_w * mean - ds_w) * rstd**3 * s,  c3 = -c2 * mean - db_w * rstd * s
        grad_weight = sum_n (ds - db * mean) * rstd;   grad_bias = sum_n db

    NOTE: the same factoring as PyTorch's gives the same infinities and NaNs (an infinite
    weight enters through ds_w and db_w), where the layer-norm form of the formula
    (rstd * (g - mean(g) - xhat * mean(g * xhat))) meets inf - inf in other places."""
    d = C // group
    x = input.reshape((N, group, d, HxW))
    g = grad.reshape((N, group, d, HxW))
    mean, rstd = _stats(x, [2, 3], eps, mean, rstd, (N, group, 1, 1))
    mean, rstd = mean.reshape((N, group, 1)), rstd.reshape((N, group, 1))
    ds = (g * x).sum([3])                     # (N, group, D)
    db = g.sum([3])
    w = None if weight is None else weight.reshape((1, group, d))
    ds_w = (ds if w is None else ds * w).sum([2], True)
    db_w = (db if w is None else db * w).sum([2], True)
    s = 1.0 / (d * HxW) if d * HxW else 0.0    # an empty group: an empty grad_input
    c2 = (db_w * mean - ds_w) * rstd * rstd * rstd * s
    c3 = -c2 * mean - db_w * rstd * s
    c1 = rstd if w is None else rstd * w
    gi = c1.unsqueeze(3) * g + c2.unsqueeze(3) * x + c3.unsqueeze(3)
    gw = None if weight is None else ((ds - db * mean) * rstd).sum([0]).reshape((C,))
    gb = None if bias_sizes is None else db.sum([0]).reshape((C,))
    return gi.reshape(tuple(input.shape)), gw, gb


def rms_norm_backward(grad, input, normalized_shape, weight, rstd, eps):
    """Gradients of _fused_rms_norm for (input, weight): with xhat = x * rstd,
    grad_input = rstd * (g - xhat * mean(g * xhat)), g = grad * weight.

    As layer_norm_backward: the fused op _fused_rms_norm_backward when this backward is
    not recorded (grad mode off), the composition below with create_graph=True."""
    if not grad_state.enabled:
        return F._fused_rms_norm_backward(grad, input, normalized_shape, rstd, weight,
                                          [True, weight is not None])
    k = len(normalized_shape)
    lead = input.dim() - k
    dims = list(range(lead, input.dim()))
    if eps is None:
        eps = machine_eps(input.dtype)
    rstd = 1 / F.sqrt((input * input).mean(dims, True) + eps)
    xhat = input * rstd
    grad_xhat = grad if weight is None else grad * weight
    gi = rstd * (grad_xhat - xhat * (grad_xhat * xhat).mean(dims, True))
    gw = None if weight is None else \
        (grad * xhat).sum(list(range(lead))).reshape(tuple(normalized_shape))
    return gi, gw




# ---- tangents (forward mode) -------------------------------------------------------------
# xhat = (x - mean) * rstd with rstd = (var + eps)^-1/2 over the normalized dims:
#   d mean = mean(dx),  d rstd = -rstd^3 mean((x - mean) dx),
#   d xhat = rstd (dx - d mean) - xhat * rstd * mean(xhat dx)
# (a fixed mean and rstd, batch norm in eval mode: d xhat = rstd dx), and the affine
# y = xhat w + b adds xhat dw + db.

def _xhat_jvp(x, dx, mean, rstd, dims):
    xhat = (x - mean) * rstd
    dxhat = rstd * (dx - dx.mean(dims, True)) - xhat * rstd * (xhat * dx).mean(dims, True)
    return xhat, dxhat


def _affine_jvp(xhat, dxhat, weight_p, weight_t, bias_t, view):
    out = dxhat if weight_p is None else dxhat * weight_p.reshape(view)
    if weight_t is not None:
        out = out + xhat * weight_t.reshape(view)
    if bias_t is not None:
        out = out + bias_t.reshape(view)
    return out


def batch_norm_jvp(input_p, input_t, weight_p, weight_t, bias_p, bias_t, running_mean,
                   running_var, save_mean, save_invstd, training, eps):
    """Statistics over every dim but the channels (dim 1); eval mode uses the running ones,
    constants."""
    view = [1, input_p.shape[1]] + [1] * (input_p.dim() - 2)
    dims = [d for d in range(input_p.dim()) if d != 1]
    if training:
        xhat, dxhat = _xhat_jvp(input_p, input_t, save_mean.reshape(view),
                                save_invstd.reshape(view), dims)
    else:
        rstd = (running_var + eps).rsqrt().reshape(view)
        xhat = (input_p - running_mean.reshape(view)) * rstd
        dxhat = input_t * rstd
    return _affine_jvp(xhat, dxhat, weight_p, weight_t, bias_t, view)


def layer_norm_jvp(input_p, input_t, weight_p, weight_t, bias_p, bias_t, mean, rstd,
                   normalized_shape):
    """Statistics over the trailing normalized_shape dims (mean, rstd keep them as 1s)."""
    k = len(normalized_shape)
    dims = list(range(input_p.dim() - k, input_p.dim()))
    stat = list(input_p.shape[:input_p.dim() - k]) + [1] * k
    xhat, dxhat = _xhat_jvp(input_p, input_t, mean.reshape(stat), rstd.reshape(stat), dims)
    return _affine_jvp(xhat, dxhat, weight_p, weight_t, bias_t, list(normalized_shape))


def _prod(sizes):
    out = 1
    for s in sizes:
        out *= s
    return out


def group_norm_jvp(input_p, input_t, weight_p, weight_t, bias_p, bias_t, mean, rstd, group):
    """Statistics per (sample, group of channels): the input seen as (N, group, rest)."""
    N = input_p.shape[0]
    rest = input_p.numel() // (N * group) if N else _prod(input_p.shape[1:]) // group
    x = input_p.reshape([N, group, rest])      # (-1 is ambiguous for an empty batch)
    dx = input_t.reshape([N, group, rest])
    xhat, dxhat = _xhat_jvp(x, dx, mean.reshape([N, group, 1]), rstd.reshape([N, group, 1]),
                            [2])
    shape = list(input_p.shape)
    view = [1, shape[1]] + [1] * (len(shape) - 2)
    return _affine_jvp(xhat.reshape(shape), dxhat.reshape(shape), weight_p, weight_t,
                       bias_t, view)


def rms_norm_jvp(input_p, input_t, weight_p, weight_t, rstd, normalized_shape):
    """y = x rstd, rstd = (mean(x^2) + eps)^-1/2: dy = rstd dx - x rstd^3 mean(x dx);
    returns (the output's tangent, rstd's)."""
    k = len(normalized_shape)
    dims = list(range(input_p.dim() - k, input_p.dim()))
    stat = list(input_p.shape[:input_p.dim() - k]) + [1] * k
    r = rstd.reshape(stat)
    drstd = -r.pow(3) * (input_p * input_t).mean(dims, True)
    y = input_p * r
    dy = input_t * r + input_p * drstd
    out = _affine_jvp(y, dy, weight_p, weight_t, None, list(normalized_shape))
    return out, drstd.reshape(tuple(rstd.shape))


# The backward ops' tangents (what forward-over-reverse, hvp, runs into: a plain backward
# takes the fused kernels). As PyTorch's double backward does, the saved statistics are
# read as the functions of the input they are (their own tangents are not used: the
# forward op gives them none), so d xhat and d rstd come from the input's tangent.

def layer_norm_backward_jvp(grad_out_p, grad_out_t, input_p, input_t, normalized_shape, mean,
                            rstd, weight_p, weight_t, output_mask):
    """grad_input = rstd (g' - mean(g') - xhat mean(g' xhat)), g' = grad * weight;
    grad_weight = sum(grad * xhat), grad_bias = sum(grad) over the leading dims."""
    k = len(normalized_shape)
    lead = input_p.dim() - k
    dims = list(range(lead, input_p.dim()))
    stat = list(input_p.shape[:lead]) + [1] * k
    r = rstd.reshape(stat)
    xhat, dxhat = _xhat_jvp(input_p, input_t, mean.reshape(stat), r, dims)
    dr = -r * (xhat * input_t).mean(dims, True) * r
    shape = list(normalized_shape)
    g, dg = grad_out_p, grad_out_t
    if weight_p is not None:
        w = weight_p.reshape(shape)
        g, dg = g * w, dg * w + (0 if weight_t is None else grad_out_p * weight_t.reshape(shape))
    d_input = d_weight = d_bias = None
    if output_mask[0]:
        m = (g * xhat).mean(dims, True)
        h = g - g.mean(dims, True) - xhat * m
        dh = dg - dg.mean(dims, True) - dxhat * m - xhat * (dg * xhat + g * dxhat).mean(dims,
                                                                                       True)
        d_input = dr * h + r * dh
    lead_dims = list(range(lead))
    if output_mask[1] and weight_p is not None:
        d_weight = _sum_lead(grad_out_t * xhat + grad_out_p * dxhat, lead_dims, shape)
    if output_mask[2]:
        d_bias = _sum_lead(grad_out_t, lead_dims, shape)
    return d_input, d_weight, d_bias


def rms_norm_backward_jvp(grad_out_p, grad_out_t, input_p, input_t, normalized_shape, rstd,
                          weight_p, weight_t, output_mask):
    """grad_input = rstd (g' - xhat mean(g' xhat)), xhat = x rstd, g' = grad * weight;
    grad_weight = sum(grad * xhat) over the leading dims."""
    k = len(normalized_shape)
    lead = input_p.dim() - k
    dims = list(range(lead, input_p.dim()))
    r = rstd.reshape(list(input_p.shape[:lead]) + [1] * k)
    xhat = input_p * r
    dr = -r * r * (xhat * input_t).mean(dims, True)
    dxhat = input_t * r + input_p * dr
    shape = list(normalized_shape)
    g, dg = grad_out_p, grad_out_t
    if weight_p is not None:
        w = weight_p.reshape(shape)
        g, dg = g * w, dg * w + (0 if weight_t is None else grad_out_p * weight_t.reshape(shape))
    d_input = d_weight = None
    if output_mask[0]:
        m = (g * xhat).mean(dims, True)
        d_input = dr * (g - xhat * m) + r * (dg - dxhat * m - xhat * (dg * xhat + g * dxhat)
                                            .mean(dims, True))
    if output_mask[1] and weight_p is not None:
        d_weight = _sum_lead(grad_out_t * xhat + grad_out_p * dxhat, list(range(lead)), shape)
    return d_input, d_weight


def _sum_lead(t, lead_dims, shape):
    return (t.sum(lead_dims) if lead_dims else t).reshape(shape)
