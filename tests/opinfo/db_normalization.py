"""Database entries: batch, layer, group, instance and RMS norm, and their native_*
kernels (which also return the statistics their backward reads)."""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.core import FLOATING, ErrorInput, OpInfo, SampleInput, make_tensor, rng_for

E = ErrorInput
S = SampleInput
TF = torch.nn.functional
F = tp.nn.functional
TOL = {tp.float32: (1e-5, 1e-5), tp.float16: (2e-3, 4e-3), tp.bfloat16: (1.6e-2, 2e-2)}
# NOTE: PyTorch's own bfloat16 native_batch_norm_backward depends on the layout: with a
# strided grad_out one grad_weight of the eval samples comes out -2.953 where a contiguous
# one gives -2.859 (a sum that cancels, rounded differently); TensorPlay's matches the
# contiguous one, so bfloat16 gets room for that spread.
BN_BACKWARD_TOL = {**TOL, tp.bfloat16: (4e-2, 1e-1)}


def _grad(dtype, requires_grad):
    return requires_grad and dtype.is_floating_point


def _t(shape, dtype=tp.float32, device="cpu"):
    return make_tensor(shape, dtype, device, rng=rng_for("norm errors", shape, dtype))


# (input shape, layout)
SHAPES = (((4, 3), "contiguous"), ((2, 3, 4), "transposed"), ((2, 3, 2, 2), "strided"))


def _affine(c, dtype, device, rng, grad, present):
    if not present:
        return None, None
    return (make_tensor(c, dtype, device, rng=rng, low=0.5, high=1.5, requires_grad=grad),
            make_tensor(c, dtype, device, rng=rng, requires_grad=grad))


def _batch_norm_cases(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for shape, layout in SHAPES:
        c = shape[1]
        for training, affine, running in ((True, True, True), (True, False, False),
                                          (False, True, True), (False, False, True)):
            x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
            w, b = _affine((c,), dtype, device, rng, grad, affine)
            rm = make_tensor((c,), dtype, device, rng=rng) if running else None
            rv = make_tensor((c,), dtype, device, rng=rng, low=0.5, high=2.0) \
                if running else None
            yield x, w, b, rm, rv, training, \
                f"{list(shape)} {layout} training={training} affine={affine}"


def _batch_norm_samples(op, device, dtype, requires_grad):
    for x, w, b, rm, rv, training, what in _batch_norm_cases(op, device, dtype, requires_grad):
        yield S(x, (rm, rv), {"weight": w, "bias": b, "training": training, "momentum": 0.3,
                              "eps": 1e-3}, name=what)


def _native_batch_norm_samples(op, device, dtype, requires_grad):
    for x, w, b, rm, rv, training, what in _batch_norm_cases(op, device, dtype, requires_grad):
        yield S(x, (w, b, rm, rv, training, 0.1, 1e-5), name=what)


def _ref_native_batch_norm(x, w, b, rm, rv, training, momentum, eps):
    """PyTorch's, except that eval mode returns the running stats it used (PyTorch:
    empty tensors), as TensorPlay's backward reads them from the outputs. They are put
    into the very tensors PyTorch's backward saved (`.data` keeps their version counter),
    so that an in-place change of one makes backward raise in both libraries."""
    out, mean, rstd = torch.native_batch_norm(x, w, b, rm, rv, training, momentum, eps)
    if not training:
        mean.data, rstd.data = rm.clone(), 1 / torch.sqrt(rv + eps)
    return out, mean, rstd


def _native_batch_norm_backward_samples(op, device, dtype, requires_grad):
    """The statistics from the forward op (training) or the running ones (evaluation), a
    grad_out in another layout than the input, and once the parameter gradients alone."""
    rng = rng_for(op.full_name, dtype, "grad_out")
    for x, w, b, rm, rv, training, what in _batch_norm_cases(op, device, dtype, False):
        with tp.no_grad():
            _, mean, invstd = tp.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)
        if not training:
            mean = invstd = None
        g = make_tensor(tuple(x.shape), dtype, device, rng=rng,
                        layout="strided" if x.is_contiguous() else "contiguous")
        masks = [[True, w is not None, b is not None]]
        if w is not None:
            masks.append([False, True, False])
        for mask in masks:
            yield S(g, (x, w, rm, rv, mean, invstd, training, 1e-5, mask),
                    name=f"{what} output_mask={mask}", meta=all(mask))


def errors_batch_norm_backward(op, device):
    x = _t((4, 3), device=device)
    stats = _t((3,), device=device)
    yield E(S(x, (x, None, None, None, stats, None, True, 1e-5, [True, False, False])),
            ArgumentError, rf"{op.name}\(\): training \(train=True\) needs 'save_invstd'",
            arg="save_invstd", torch_raises=False)
    yield E(S(x, (x, None, stats, _t((4,), device=device), None, None, False, 1e-5,
                  [True, False, False])),
            ShapeError, rf"{op.name}\(\): argument 'running_var' must have shape \[3\]",
            arg="running_var", torch_raises=False)


def errors_batch_norm(op, device):
    x = _t((4, 3), device=device)
    yield E(S(x, (None, None), {"weight": _t((4,), device=device), "training": True}),
            ShapeError, r"batch_norm\(\): argument 'weight' must have shape \[3\]", arg="weight")
    yield E(S(_t((1, 3), device=device), (None, None), {"training": True}), ShapeError,
            r"batch_norm\(\): expected more than 1 value per channel when training",
            arg="input")
    yield E(S(_t((4, 3), tp.int64, device=device), (None, None), {"training": True}),
            DTypeError, r"batch_norm\(\): argument 'input' must be a floating point tensor",
            arg="input")


# ---- layer norm and RMS norm ------------------------------------------------------------
def _layer_norm_cases(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for shape, layout, k in (((4, 5), "contiguous", 1), ((2, 3, 4), "transposed", 2),
                             ((2, 3, 4), "strided", 1), ((0, 3), "contiguous", 1)):
        for affine in (True, False):
            norm = shape[len(shape) - k:]
            x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
            w, b = _affine(norm, dtype, device, rng, grad, affine)
            yield x, list(norm), w, b, f"{list(shape)} {layout} over {list(norm)} " \
                                       f"affine={affine}"


def _layer_norm_samples(op, device, dtype, requires_grad):
    for x, norm, w, b, what in _layer_norm_cases(op, device, dtype, requires_grad):
        yield S(x, (norm,), {"weight": w, "bias": b, "eps": 1e-4}, name=what)


def _native_layer_norm_samples(op, device, dtype, requires_grad):
    for x, norm, w, b, what in _layer_norm_cases(op, device, dtype, requires_grad):
        yield S(x, (norm, w, b, 1e-5), name=what)


def _rms_norm_samples(op, device, dtype, requires_grad):
    for i, (x, norm, w, _, what) in enumerate(_layer_norm_cases(op, device, dtype,
                                                                requires_grad)):
        yield S(x, (norm,), {"weight": w, "eps": None if i % 2 else 1e-5}, name=what)


def _fused_rms_norm_samples(op, device, dtype, requires_grad):
    for i, (x, norm, w, _, what) in enumerate(_layer_norm_cases(op, device, dtype,
                                                                requires_grad)):
        yield S(x, (norm, w, None if i % 2 else 1e-5), name=what)


def _norm_backward_cases(op, device, dtype, rms):
    """(grad_out, input, normalized_shape, statistics, weight, bias, output_mask, name):
    the statistics from the forward op, a grad_out in another layout than the input, and
    once the parameter gradients alone. (The Meta test compares every output: it runs the
    samples whose mask leaves none out.)"""
    rng = rng_for(op.full_name, dtype, "grad_out")
    for x, norm, w, b, what in _layer_norm_cases(op, device, dtype, False):
        with tp.no_grad():
            if rms:
                stats = tp._fused_rms_norm(x, norm, w, None)[1:]
            else:
                stats = tp.native_layer_norm(x, norm, w, b, 1e-5)[1:]
        g = make_tensor(tuple(x.shape), dtype, device, rng=rng,
                        layout="strided" if x.is_contiguous() else "contiguous")
        masks = [[True, w is not None, b is not None]]
        if w is not None:
            masks.append([False, True, False])
        for mask in masks:
            yield g, x, norm, stats, w, b, mask, f"{what} output_mask={mask}"


def _native_layer_norm_backward_samples(op, device, dtype, requires_grad):
    for g, x, norm, (mean, rstd), w, b, mask, what in _norm_backward_cases(op, device, dtype,
                                                                           False):
        yield S(g, (x, norm, mean, rstd, w, b, mask), name=what, meta=all(mask))


def _fused_rms_norm_backward_samples(op, device, dtype, requires_grad):
    for g, x, norm, (rstd,), w, _, mask, what in _norm_backward_cases(op, device, dtype, True):
        yield S(g, (x, norm, rstd, w, mask[:2]), name=what, meta=all(mask[:2]))


def errors_norm_backward(op, device):
    x, g = _t((3, 4), device=device), _t((3, 5), device=device)
    stats = _t((3, 1), device=device)
    rms = op.name == "_fused_rms_norm_backward"
    args = (x, [4], stats, _t((4,), device=device), [True, True]) if rms else \
        (x, [4], stats, stats, _t((4,), device=device), None, [True, True, False])
    # (PyTorch's CPU native_layer_norm_backward does not check grad_out's shape.)
    yield E(S(g, args), ShapeError, rf"{op.name}\(\): argument 'grad_out' must have shape "
            r"\[3, 4\]", arg="grad_out", torch_raises=rms)
    bad_stats = (x, [4], _t((4, 1), device=device), None, [True, False]) if rms else \
        (x, [4], stats, _t((4, 1), device=device), None, None, [True, False, False])
    yield E(S(x, bad_stats), ShapeError, rf"{op.name}\(\): argument 'rstd' must hold one "
            r"value per normalized row \(3\)", arg="rstd", torch_raises=False)


def errors_layer_norm(op, device):
    yield E(S(_t((3, 4), device=device), ([3],)), ShapeError,
            rf"{op.name}\(\): argument 'normalized_shape' \[3\] must be the trailing "
            r"dimensions", arg="normalized_shape")
    yield E(S(_t((3, 4), device=device), ([4],), {"weight": _t((3,), device=device)}),
            ShapeError, rf"{op.name}\(\): argument 'weight' must have shape \[4\]",
            arg="weight")


# ---- group norm and instance norm -------------------------------------------------------
def _group_norm_cases(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for i, (shape, layout, groups) in enumerate((((2, 4, 3), "contiguous", 2),
                                                 ((2, 6, 2, 2), "strided", 3),
                                                 ((3, 4, 3), "transposed", 2),
                                                 ((2, 4, 3), "contiguous", 1))):
        for affine in (True, False) if i == 0 else (i % 2 == 1,):
            x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
            w, b = _affine((shape[1],), dtype, device, rng, grad, affine)
            yield x, groups, w, b, f"{list(shape)} {layout} groups={groups} affine={affine}"


def _group_norm_samples(op, device, dtype, requires_grad):
    for x, groups, w, b, what in _group_norm_cases(op, device, dtype, requires_grad):
        yield S(x, (groups,), {"weight": w, "bias": b, "eps": 1e-4}, name=what)


def _native_group_norm_samples(op, device, dtype, requires_grad):
    for x, groups, w, b, what in _group_norm_cases(op, device, dtype, requires_grad):
        n, c = x.shape[0], x.shape[1]
        yield S(x, (w, b, n, c, x.numel() // (n * c), groups, 1e-5), name=what)


def errors_group_norm(op, device):
    yield E(S(_t((2, 4, 3), device=device), (3,)), ArgumentError,
            r"group_norm\(\): the number of channels \(4\) must be divisible by argument "
            r"'num_groups' \(3\)", arg="num_groups")


def _instance_norm_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for shape, layout in (((2, 3, 4), "contiguous"), ((2, 3, 2, 2), "strided")):
        for use_input_stats, affine, running in ((True, True, True), (True, False, False),
                                                 (False, True, True)):
            c = shape[1]
            x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
            w, b = _affine((c,), dtype, device, rng, grad, affine)
            rm = make_tensor((c,), dtype, device, rng=rng) if running else None
            rv = make_tensor((c,), dtype, device, rng=rng, low=0.5, high=2.0) \
                if running else None
            yield S(x, (), {"running_mean": rm, "running_var": rv, "weight": w, "bias": b,
                            "use_input_stats": use_input_stats, "momentum": 0.2},
                    name=f"{list(shape)} {layout} input stats={use_input_stats} "
                         f"affine={affine} running={running}")


def errors_instance_norm(op, device):
    yield E(S(_t((2, 3), device=device)), ShapeError,
            r"instance_norm\(\): argument 'input' must have at least 3 dimensions", arg="input")


class _StridedNativeGroupNorm(torch.autograd.Function):
    """PyTorch's native_group_norm on a strided input (TensorPlay's extension: PyTorch's
    kernel refuses one), as one node that saves what PyTorch's saves (input, weight and
    the mean and rstd outputs): the input itself, not the dense copy the kernel reads, so
    an in-place change of it makes backward raise in both libraries."""

    @staticmethod
    def forward(ctx, x, w, b, *args):
        out, mean, rstd = torch.native_group_norm(x.contiguous(), w, b, *args)
        ctx.save_for_backward(x, w, mean, rstd)
        ctx.has_bias, ctx.args = b is not None, args
        ctx.mark_non_differentiable(mean, rstd)
        return out, mean, rstd

    @staticmethod
    def backward(ctx, grad, _grad_mean, _grad_rstd):
        x, w, _, _ = ctx.saved_tensors
        with torch.enable_grad():
            x = x.detach().requires_grad_(True)
            w = None if w is None else w.detach().requires_grad_(True)
            b = torch.zeros(x.shape[1], dtype=x.dtype, requires_grad=True) \
                if ctx.has_bias else None
            out = torch.native_group_norm(x.contiguous(), w, b, *ctx.args)[0]
            inputs = [t for t in (x, w, b) if t is not None]
            grads = iter(torch.autograd.grad(out, inputs, grad))
        gx, gw, gb = (next(grads) if t is not None else None for t in (x, w, b))
        return (gx, gw, gb) + (None,) * len(ctx.args)


def _ref_native_group_norm(x, *args):
    # PyTorch's needs a contiguous input, and its statistics are differentiable; here not.
    if not x.is_contiguous():
        return _StridedNativeGroupNorm.apply(x, *args)
    out, mean, rstd = torch.native_group_norm(x, *args)
    return out, mean.detach(), rstd.detach()


def _ref_fused_rms_norm_backward(*args):
    # PyTorch has no CPU kernel for it: its own decomposition is the reference.
    from torch._decomp.decompositions import _fused_rms_norm_backward
    return _fused_rms_norm_backward(*args)


def _ref_fused_rms_norm(*args):
    out, rstd = torch._fused_rms_norm(*args)
    return out, rstd.detach()   # a statistic, not differentiable here (nor in native_layer_norm)


# The native_* entries skip gradcheck: their statistics outputs are not differentiable,
# while finite differences see them move. The user-facing entries run gradcheck and
# gradgradcheck through the same backward formulas.

# ---- the SyncBatchNorm internals --------------------------------------------------------
# PyTorch serves these for CUDA only (batch_norm_update_stats excepted), so the references
# are PyTorch's formulas (Normalization.cuh) in torch ops; tests/test_nn_sync_batch_norm.py
# checks the pieces together against F.batch_norm and its gradient.
SYNC_DTYPES = (tp.float32, tp.float64)


def _dims(x):
    return [d for d in range(x.dim()) if d != 1]


def _chan(t, x):
    return t.reshape((1, -1) + (1,) * (x.dim() - 2))


def _ref_stats(x, eps):
    mean = x.mean(_dims(x))
    return mean, (x.var(_dims(x), unbiased=False) + eps).rsqrt()


def _ref_elemt(x, w, b, mean, invstd, eps):
    out = (x - _chan(mean, x)) * _chan(invstd, x)
    out = out if w is None else out * _chan(w, x)
    return out if b is None else out + _chan(b, x)


def _ref_gather(x, mean, invstd, rm, rv, momentum, eps, counts):
    counts = torch.full((mean.shape[0],), float(counts), dtype=mean.dtype) \
        if isinstance(counts, int) else counts.to(mean.dtype)
    n, avg, var_n = 0.0, torch.zeros_like(mean[0]), torch.zeros_like(mean[0])
    for j in range(mean.shape[0]):      # Welford's merge, one process at a time (PyTorch's)
        c, m, v = counts[j], mean[j], invstd[j].pow(-2) - eps
        factor = 1.0 / max(1.0, float(n + c))
        var_n = var_n + v * c + (m - avg).square() * n * c * factor
        avg = n * factor * avg + c * factor * m
        n = n + c
    if rm is not None:
        rm.copy_(rm * (1 - momentum) + avg * momentum)
    if rv is not None:
        rv.copy_(rv * (1 - momentum) + var_n / (n - 1) * momentum)
    return avg, (var_n / n + eps).rsqrt()


def _ref_backward_reduce(dy, x, mean, invstd, w, input_g, weight_g, bias_g):
    sum_dy = dy.sum(_dims(x))
    sum_dy_xmu = (dy * (x - _chan(mean, x))).sum(_dims(x))
    return (sum_dy if input_g else None, sum_dy_xmu if input_g else None,
            sum_dy_xmu * invstd if weight_g else None, sum_dy if bias_g else None)


def _ref_backward_elemt(dy, x, mean, invstd, w, sum_dy, sum_dy_xmu, count):
    norm = 1.0 / float(count.sum())
    factor = _chan(invstd if w is None else invstd * w, x)
    inv = _chan(invstd, x)
    return (dy - _chan(sum_dy * norm, x)
            - (x - _chan(mean, x)) * inv * inv * _chan(sum_dy_xmu * norm, x)) * factor


SYNC_SHAPES = (((4, 3, 2), "contiguous"), ((3, 2), "strided"), ((2, 3, 2, 2), "transposed"))


def _sync_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for k, (shape, layout) in enumerate(SYNC_SHAPES):
        c = shape[1]
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout)
        mean = make_tensor((c,), dtype, device, rng=rng)
        invstd = make_tensor((c,), dtype, device, rng=rng, low=0.5, high=2.0)
        w = make_tensor((c,), dtype, device, rng=rng) if k != 1 else None
        dy = make_tensor(shape, dtype, device, rng=rng)
        name = f"{list(shape)} {layout} weight={w is not None}"
        if op.name == "batch_norm_stats":
            yield S(x, (1e-5,), name=name)
        elif op.name == "batch_norm_elemt":
            b = make_tensor((c,), dtype, device, rng=rng) if k != 2 else None
            yield S(x, (w, b, mean, invstd, 1e-5), name=name)
        elif op.name.startswith("batch_norm_gather_stats"):
            means = make_tensor((k + 2, c), dtype, device, rng=rng)
            invstds = make_tensor((k + 2, c), dtype, device, rng=rng, low=0.5, high=2.0)
            rm = make_tensor((c,), dtype, device, rng=rng) if k != 1 else None
            rv = make_tensor((c,), dtype, device, rng=rng, low=0.5, high=2.0) \
                if k != 1 else None
            count = tp.tensor([3.0 + j for j in range(k + 2)], dtype=dtype, device=device) \
                if op.name.endswith("counts") else 4
            yield S(x, (means, invstds, rm, rv, 0.1, 1e-5, count), name=name)
        elif op.name == "batch_norm_backward_reduce":
            flags = (k != 1, w is not None, k != 2)
            # (Meta compares every output's shape: only where none is left out.)
            yield S(dy, (x, mean, invstd, w) + flags, name=name, meta=all(flags))
        elif op.name == "batch_norm_backward_elemt":
            sums = make_tensor((c,), dtype, device, rng=rng)
            sums_xmu = make_tensor((c,), dtype, device, rng=rng)
            count = tp.tensor([5, 7], dtype=tp.int32, device=device)
            yield S(dy, (x, mean, invstd, w, sums, sums_xmu, count), name=name)
        else:
            rm = make_tensor((c,), dtype, device, rng=rng) if k != 1 else None
            rv = make_tensor((c,), dtype, device, rng=rng, low=0.5, high=2.0) \
                if k != 1 else None
            yield S(x, (rm, rv, 0.1), name=name)


def errors_gather(op, device):
    x, m = _t((4, 3), device=device), _t((2, 3), device=device)
    count = tp.tensor([1.0, 2.0, 3.0], device=device) if op.name.endswith("counts") else None
    if count is not None:
        yield E(S(x, (m, m, None, None, 0.1, 1e-5, count)), ShapeError,
                rf"{op.name}\(\): argument 'counts' must hold one count per row of 'mean'",
                arg="counts", torch_raises=False, meta=False)
    yield E(S(x, (m[0], m[0], None, None, 0.1, 1e-5, count if count is not None else 2)),
            ShapeError, rf"{op.name}\(\): arguments 'mean' and 'invstd' must be "
            r"\(world_size, C\)", arg="mean", torch_raises=False, meta=False)


SYNC_REFS = {"batch_norm_stats": _ref_stats, "batch_norm_elemt": _ref_elemt,
             "batch_norm_gather_stats": _ref_gather,
             "batch_norm_gather_stats_with_counts": _ref_gather,
             "batch_norm_backward_reduce": _ref_backward_reduce,
             "batch_norm_backward_elemt": _ref_backward_elemt,
             "batch_norm_update_stats": torch.batch_norm_update_stats}
SYNC_BATCH_NORM = [
    OpInfo(name, ref=ref, overloads=(name,), dtypes=SYNC_DTYPES, supports_autograd=False,
           sample_inputs_func=_sync_samples, tolerances=TOL,
           error_inputs_func=errors_gather if "gather" in name else None)
    for name, ref in SYNC_REFS.items()]

op_db = [
    OpInfo("batch_norm", op=F.batch_norm, ref=TF.batch_norm, overloads=("batch_norm",),
           dtypes=FLOATING, sample_inputs_func=_batch_norm_samples,
           error_inputs_func=errors_batch_norm, tolerances=TOL),
    OpInfo("native_batch_norm", ref=_ref_native_batch_norm, overloads=("native_batch_norm",),
           dtypes=FLOATING, gradcheck=False, sample_inputs_func=_native_batch_norm_samples, tolerances=TOL),
    OpInfo("native_batch_norm_backward", ref=torch.ops.aten.native_batch_norm_backward,
           overloads=("native_batch_norm_backward",), dtypes=FLOATING,
           supports_autograd=False, sample_inputs_func=_native_batch_norm_backward_samples,
           error_inputs_func=errors_batch_norm_backward, tolerances=BN_BACKWARD_TOL),
    OpInfo("layer_norm", op=F.layer_norm, ref=TF.layer_norm, overloads=("layer_norm",),
           dtypes=FLOATING, sample_inputs_func=_layer_norm_samples,
           error_inputs_func=errors_layer_norm, tolerances=TOL),
    OpInfo("native_layer_norm", ref=torch.native_layer_norm, overloads=("native_layer_norm",),
           dtypes=FLOATING, gradcheck=False, sample_inputs_func=_native_layer_norm_samples, tolerances=TOL),
    OpInfo("rms_norm", op=F.rms_norm, ref=TF.rms_norm, overloads=("rms_norm",), dtypes=FLOATING,
           sample_inputs_func=_rms_norm_samples, error_inputs_func=errors_layer_norm,
           tolerances=TOL),
    OpInfo("_fused_rms_norm", ref=_ref_fused_rms_norm, overloads=("_fused_rms_norm",),
           dtypes=FLOATING, gradcheck=False, sample_inputs_func=_fused_rms_norm_samples, tolerances=TOL),
    # The fused backward ops run inside the backward of a plain backward() only; with
    # create_graph the formulas compose differentiable ops instead (see
    # formulas/normalization.py), so these ops have no derivative of their own, as in
    # PyTorch's rms case. Their gradients are tested through layer_norm and rms_norm.
    OpInfo("native_layer_norm_backward", ref=torch.ops.aten.native_layer_norm_backward,
           overloads=("native_layer_norm_backward",), dtypes=FLOATING,
           supports_autograd=False, sample_inputs_func=_native_layer_norm_backward_samples,
           error_inputs_func=errors_norm_backward, tolerances=TOL),
    OpInfo("_fused_rms_norm_backward", ref=_ref_fused_rms_norm_backward,
           overloads=("_fused_rms_norm_backward",), dtypes=FLOATING,
           supports_autograd=False, sample_inputs_func=_fused_rms_norm_backward_samples,
           error_inputs_func=errors_norm_backward, tolerances=TOL),
    OpInfo("group_norm", op=F.group_norm, ref=TF.group_norm, overloads=("group_norm",),
           dtypes=FLOATING, sample_inputs_func=_group_norm_samples,
           error_inputs_func=errors_group_norm, tolerances=TOL),
    OpInfo("native_group_norm", ref=_ref_native_group_norm, overloads=("native_group_norm",),
           dtypes=FLOATING, gradcheck=False, sample_inputs_func=_native_group_norm_samples, tolerances=TOL),
    OpInfo("instance_norm", op=F.instance_norm, ref=TF.instance_norm,
           overloads=("instance_norm", "batch_norm"), dtypes=FLOATING,
           sample_inputs_func=_instance_norm_samples, error_inputs_func=errors_instance_norm,
           tolerances=TOL),
] + SYNC_BATCH_NORM
