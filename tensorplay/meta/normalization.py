"""Shape and dtype rules of the normalizations: batch, layer, group and RMS norm and
their backward ops.

Same contract as rules.py: `rule(op, args) -> OutSpec` (a tuple for several
outputs) or a typed error that names the op and the argument. The CPU kernels call
the `check_*` helpers for what NumPy would not catch (an integer input, a class
index out of range).
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import OutSpec
from tensorplay.meta._nn import check_floating, check_size


def _sizes(t):
    return t._impl.sizes


# ---- normalization ------------------------------------------------------------------
def _check_affine(op, weight, bias, channels, what):
    check_size(op, weight, "weight", (channels,) if isinstance(channels, int) else channels,
               what)
    check_size(op, bias, "bias", (channels,) if isinstance(channels, int) else channels, what)


def native_batch_norm(op, args):
    input, weight, bias, running_mean, running_var, training, momentum, eps = args
    check_floating(op, input, "input")
    sizes = _sizes(input)
    if len(sizes) < 2:
        raise ShapeError(f"{op}(): argument 'input' must have at least 2 dimensions (N, C, "
                         f"...), but got shape {fmt_shape(sizes)}", op=op, arg="input")
    c = sizes[1]
    if not training and (running_mean is None or running_var is None):
        raise ArgumentError(f"{op}(): evaluation mode (training=False) needs 'running_mean' "
                            f"and 'running_var'", op=op, arg="running_mean")
    if not training and 0 in sizes:
        # PyTorch's kernel returns an empty input's empty result before it looks at the
        # weight or the running stats (the stats returned: the running ones, see
        # cpu_kernels/normalization.py)
        d = input._impl.dtype
        return (OutSpec(sizes, d), OutSpec(_sizes(running_mean), running_mean._impl.dtype),
                OutSpec(_sizes(running_var), running_var._impl.dtype))
    _check_affine(op, weight, bias, c, "one value per channel")
    check_size(op, running_mean, "running_mean", (c,), "one value per channel")
    check_size(op, running_var, "running_var", (c,), "one value per channel")
    if training:
        per_channel = 1
        for i, s in enumerate(sizes):
            per_channel *= s if i != 1 else 1
        if per_channel == 0 and op != "batch_norm":
            # batch_norm returns early on an empty input (composite/normalization.py), its
            # native kernel has no statistics to take: PyTorch's refuses it
            raise ShapeError(f"{op}(): argument 'input' must have at least one element in "
                             f"training mode, but got shape {fmt_shape(sizes)}", op=op,
                             arg="input")
        if per_channel == 1:
            raise ShapeError(f"{op}(): expected more than 1 value per channel when training, "
                             f"got input of shape {fmt_shape(sizes)} (argument 'input')",
                             op=op, arg="input")
    sd = stats_dtype(op, input, (("weight", weight), ("bias", bias),
                                 ("running_mean", running_mean), ("running_var", running_var)))
    stats = (c,)
    return OutSpec(sizes, input._impl.dtype), OutSpec(stats, sd), OutSpec(stats, sd)


def native_batch_norm_backward(op, args):
    """(grad_input, grad_weight, grad_bias) specs; training reads save_mean and
    save_invstd, evaluation running_mean and running_var (one value per channel each)."""
    (grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps,
     output_mask) = args
    check_floating(op, input, "input")
    sizes = _sizes(input)
    if len(sizes) < 2:
        raise ShapeError(f"{op}(): argument 'input' must have at least 2 dimensions (N, C, "
                         f"...), but got shape {fmt_shape(sizes)}", op=op, arg="input")
    check_size(op, grad_out, "grad_out", sizes, "the input's shape")
    c = sizes[1]
    stats = (("save_mean", save_mean), ("save_invstd", save_invstd)) if train else \
        (("running_mean", running_mean), ("running_var", running_var))
    for name, t in stats:
        if t is None:
            mode = "training (train=True)" if train else "evaluation (train=False)"
            raise ArgumentError(f"{op}(): {mode} needs '{name}'", op=op, arg=name)
        check_size(op, t, name, (c,), "one value per channel")
    check_size(op, weight, "weight", (c,), "one value per channel")
    d = input._impl.dtype
    # the parameters' dtype: float32 ones of a half input ("mixed") get float32 gradients
    pd = d if weight is None else weight._impl.dtype
    grad_in = OutSpec(sizes, d) if output_mask[0] else None
    grad_w = OutSpec((c,), pd) if output_mask[1] else None
    grad_b = OutSpec((c,), pd) if output_mask[2] else None
    return grad_in, grad_w, grad_b


def _normalized(op, input, normalized_shape):
    sizes = tuple(_sizes(input))
    shape = tuple(normalized_shape)
    if not shape or sizes[len(sizes) - len(shape):] != shape or len(shape) > len(sizes):
        raise ShapeError(f"{op}(): argument 'normalized_shape' {list(shape)} must be the "
                         f"trailing dimensions of the input's shape {fmt_shape(sizes)}",
                         op=op, arg="normalized_shape")
    return sizes[:len(sizes) - len(shape)] + (1,) * len(shape)


def stats_dtype(op, input, params):
    """The dtype of a norm's statistics, after PyTorch's (CPU) checks of the parameters'
    dtypes. `params` = [(name, tensor or None)] in the op's order (weight, bias, then the
    running statistics of batch norm); the first one given decides:

        of the input's dtype: every parameter must be           -> stats in input's dtype
        of another dtype ("mixed"): every parameter float32,
            and the input float16 or bfloat16                   -> stats in float32
    """
    d = input._impl.dtype
    given = [(name, t._impl.dtype) for name, t in params if t is not None]
    if not given or given[0][1] is d:
        for name, pd in given:
            if pd is not d:
                raise DTypeError(f"{op}(): argument '{name}' must have the input's dtype "
                                 f"{d.name}, as '{given[0][0]}' has, but got {pd.name}",
                                 op=op, arg=name)
        return d
    first = given[0][0]
    for name, pd in given:
        if pd is not dt.float32:
            raise DTypeError(f"{op}(): mixed dtype (CPU): argument '{name}' must be float32, "
                             f"as '{first}' is not of the input's dtype {d.name}, but got "
                             f"{pd.name}", op=op, arg=name)
    if d not in (dt.float16, dt.bfloat16):
        raise DTypeError(f"{op}(): mixed dtype (CPU): float32 parameters ('{first}') need the "
                         f"input to be float32 too, or float16 or bfloat16, but argument "
                         f"'input' is {d.name}", op=op, arg="input")
    return dt.float32


def native_layer_norm(op, args):
    input, normalized_shape, weight, bias, eps = args
    check_floating(op, input, "input")
    sd = stats_dtype(op, input, (("weight", weight), ("bias", bias)))
    stats = _normalized(op, input, normalized_shape)
    _check_affine(op, weight, bias, tuple(normalized_shape), "the normalized shape")
    d = input._impl.dtype
    return OutSpec(_sizes(input), d), OutSpec(stats, sd), OutSpec(stats, sd)


def fused_rms_norm(op, args):
    input, normalized_shape, weight, eps = args
    check_floating(op, input, "input")
    stats = _normalized(op, input, normalized_shape)
    check_size(op, weight, "weight", tuple(normalized_shape), "the normalized shape")
    d = input._impl.dtype
    return OutSpec(_sizes(input), d), OutSpec(stats, dt.float32 if d.itemsize == 2 else d)


def _norm_backward(op, grad_out, input, normalized_shape, stats, params):
    """The checks both norm backwards share: grad_out has the input's shape, each saved
    statistic one value per normalized row; `params` = [(name, tensor, wanted)] are the
    affine parameters and whether output_mask asks for their gradient."""
    check_floating(op, input, "input")
    stat_sizes = _normalized(op, input, normalized_shape)
    check_size(op, grad_out, "grad_out", _sizes(input), "the input's shape")
    rows = 1
    for s in stat_sizes:
        rows *= s
    for name, t in stats:
        if t._impl.numel() != rows:
            raise ShapeError(f"{op}(): argument '{name}' must hold one value per normalized "
                             f"row ({rows}), but got shape {fmt_shape(_sizes(t))}", op=op,
                             arg=name)
    specs = []
    for name, t, wanted in params:
        check_size(op, t, name, tuple(normalized_shape), "the normalized shape")
        if wanted and t is None:
            raise ArgumentError(f"{op}(): output_mask asks for the gradient of '{name}', "
                                f"but argument '{name}' is None", op=op, arg=name)
        specs.append(OutSpec(_sizes(t), t._impl.dtype) if wanted else None)
    return specs


def native_layer_norm_backward(op, args):
    grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask = args
    grad_w, grad_b = _norm_backward(op, grad_out, input, normalized_shape,
                                    [("mean", mean), ("rstd", rstd)],
                                    [("weight", weight, output_mask[1]),
                                     ("bias", bias, output_mask[2])])
    grad_in = OutSpec(_sizes(input), input._impl.dtype) if output_mask[0] else None
    return grad_in, grad_w, grad_b


def fused_rms_norm_backward(op, args):
    grad_out, input, normalized_shape, rstd, weight, output_mask = args
    (grad_w,) = _norm_backward(op, grad_out, input, normalized_shape, [("rstd", rstd)],
                               [("weight", weight, output_mask[1])])
    grad_in = OutSpec(_sizes(input), input._impl.dtype) if output_mask[0] else None
    return grad_in, grad_w


def native_group_norm(op, args):
    input, weight, bias, N, C, HxW, group, eps = args
    check_floating(op, input, "input")
    sd = stats_dtype(op, input, (("weight", weight), ("bias", bias)))
    sizes = _sizes(input)
    if len(sizes) < 2 or sizes[0] != N or sizes[1] != C:
        raise ShapeError(f"{op}(): argument 'input' must have shape (N={N}, C={C}, ...), but "
                         f"got {fmt_shape(sizes)}", op=op, arg="input")
    numel = 1
    for s in sizes:
        numel *= s
    if numel != N * C * HxW:
        raise ShapeError(f"{op}(): argument 'input' must hold N * C * HxW = {N} * {C} * {HxW} "
                         f"elements, but got shape {fmt_shape(sizes)}", op=op, arg="input")
    if group <= 0 or C % group:
        raise ArgumentError(f"{op}(): the number of channels ({C}) must be divisible by "
                            f"argument 'group' ({group})", op=op, arg="group")
    numel = 1
    for s in sizes:
        numel *= s
    if numel != N * C * HxW:
        raise ShapeError(f"{op}(): argument 'input' of shape {fmt_shape(sizes)} must hold "
                         f"N * C * HxW = {N} * {C} * {HxW} elements, but holds {numel}",
                         op=op, arg="input")
    _check_affine(op, weight, bias, C, "one value per channel")
    d = input._impl.dtype
    return OutSpec(sizes, d), OutSpec((N, group), sd), OutSpec((N, group), sd)


