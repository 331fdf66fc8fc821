"""Shape and dtype rules of convolution and its backward (the Meta kernels and the
typed errors), with the conventions of _spatial.py."""
from __future__ import annotations

from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.arguments import check_list, conv_output_sizes
from tensorplay.kernel_support.checks import OutSpec, check_devices
from tensorplay.meta._spatial import check_not_bool


def _sizes(t):
    return t._impl.sizes


# ---- convolution --------------------------------------------------------------------
def _conv_checks(op, input, weight, bias, stride, padding, dilation, transposed,
                 output_padding, groups):
    """Everything convolution() checks; returns (number of spatial dims, out channels)."""
    check_devices(op, [("input", input), ("weight", weight)] +
                  ([("bias", bias)] if bias is not None else []))
    si, sw = _sizes(input), _sizes(weight)
    if len(sw) < 3:
        raise ShapeError(f"{op}(): argument 'weight' must have at least 3 dims (out channels, "
                         f"in channels, kernel...), but got shape {fmt_shape(sw)}", op=op,
                         arg="weight")
    if len(si) != len(sw):
        raise ShapeError(f"{op}(): expected argument 'input' to be {len(sw)}-D (batch, "
                         f"channels and {len(sw) - 2} spatial dims) for a {len(sw)}-D weight, "
                         f"but got {len(si)}-D input of shape {fmt_shape(si)}", op=op,
                         arg="input")
    for name, t in (("input", input), ("weight", weight)):
        check_not_bool(op, name, t)
    # (PyTorch checks the dtypes only where there is a batch to compute: an empty batch
    # takes its empty path first, in the input's dtype)
    computes = si[0] != 0
    if computes and weight._impl.dtype is not input._impl.dtype:
        raise DTypeError(f"{op}(): argument 'weight' ({weight._impl.dtype.name}) must have the "
                         f"same dtype as 'input' ({input._impl.dtype.name})", op=op,
                         arg="weight")
    k = len(sw) - 2
    check_list(op, "stride", stride, k, 1)
    check_list(op, "padding", padding, k, 0)
    check_list(op, "dilation", dilation, k, 1)
    if groups < 1:
        raise ArgumentError(f"{op}(): argument 'groups' must be positive, but got {groups}",
                            op=op, arg="groups")
    if sw[0] < groups:      # (no channel at all: PyTorch's check_input_shape_forward)
        raise ShapeError(f"{op}(): argument 'weight' (shape {fmt_shape(sw)}) must have at "
                         f"least groups={groups} channels in dim 0, but has {sw[0]}", op=op,
                         arg="weight")
    if sw[0] % groups:
        what = "in" if transposed else "out"
        raise ShapeError(f"{op}(): argument 'weight' (shape {fmt_shape(sw)}) must have its "
                         f"{what} channels (dim 0, {sw[0]}) divisible by groups={groups}",
                         op=op, arg="weight")
    expected_c = sw[0] if transposed else sw[1] * groups
    if si[1] != expected_c:
        raise ShapeError(f"{op}(): expected argument 'input' (shape {fmt_shape(si)}) to have "
                         f"{expected_c} channels for weight of shape {fmt_shape(sw)} and "
                         f"groups={groups}, but got {si[1]} channels", op=op, arg="input")
    out_channels = sw[1] * groups if transposed else sw[0]
    if bias is not None:
        if computes and bias._impl.dtype is not input._impl.dtype:
            raise DTypeError(f"{op}(): argument 'bias' ({bias._impl.dtype.name}) must have the "
                             f"same dtype as 'input' ({input._impl.dtype.name})", op=op,
                             arg="bias")
        if tuple(_sizes(bias)) != (out_channels,):
            raise ShapeError(f"{op}(): expected argument 'bias' to have shape "
                             f"[{out_channels}] (one value per output channel), but got "
                             f"{fmt_shape(_sizes(bias))}", op=op, arg="bias")
    if transposed:
        check_list(op, "output_padding", output_padding, k, 0)
        for op_, s, d in zip(output_padding, stride, dilation):
            if op_ >= s and op_ >= d:
                raise ArgumentError(f"{op}(): argument 'output_padding' ({list(output_padding)})"
                                    f" must be smaller than either stride ({list(stride)}) or "
                                    f"dilation ({list(dilation)})", op=op,
                                    arg="output_padding")
    return k, out_channels


def convolution(op, args):
    (input, weight, bias, stride, padding, dilation, transposed, output_padding,
     groups) = args
    k, out_channels = _conv_checks(op, input, weight, bias, stride, padding, dilation,
                                   transposed, output_padding, groups)
    si, sw = _sizes(input), _sizes(weight)
    if not transposed:
        padded = tuple(i + 2 * p for i, p in zip(si[2:], padding))
        extent = tuple(d * (kk - 1) + 1 for kk, d in zip(sw[2:], dilation))
        if any(e > p for e, p in zip(extent, padded)):
            raise ShapeError(f"{op}(): the kernel (argument 'weight', dilated size "
                             f"{fmt_shape(extent)}) is larger than the padded input "
                             f"{fmt_shape(padded)} (input shape {fmt_shape(si)}, padding "
                             f"{list(padding)})", op=op, arg="weight")
    if si[0] and si[1] and 0 in si[2:]:
        # (PyTorch's check_input_shape_forward: an empty batch or no channels is a valid
        # empty input; an empty image is not, even where padding would make a window fit)
        raise ShapeError(f"{op}(): only an empty batch or zero channels may make the input "
                         f"empty, but got input shape {fmt_shape(si)} (argument 'input')",
                         op=op, arg="input")
    spatial = conv_output_sizes(si, sw, stride, padding, dilation, transposed, output_padding)
    if any(s <= 0 for s in spatial):
        raise ShapeError(f"{op}(): the output would have no elements: spatial size "
                         f"{fmt_shape(spatial)} for input {fmt_shape(si)} (argument 'input')",
                         op=op, arg="input")
    if 0 in si[2:] and si[0] and si[1]:
        # PyTorch's backend selection sends an empty batch or empty channels to its empty
        # path and refuses any other empty input (padding could give it a non-empty
        # result: TensorPlay computed that).
        raise ShapeError(f"{op}(): only an input with zero batch or zero channels may be "
                         f"empty, but got argument 'input' of shape {fmt_shape(si)} (an "
                         f"empty spatial dim)", op=op, arg="input")
    return OutSpec((si[0], out_channels) + spatial, input._impl.dtype)


def convolution_backward(op, args):
    (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
     output_padding, groups, output_mask) = args
    spec = convolution(op, (input, weight, None, stride, padding, dilation, transposed,
                            output_padding, groups))
    if tuple(_sizes(grad_output)) != tuple(spec.sizes):
        raise ShapeError(f"{op}(): argument 'grad_output' must have the convolution's output "
                         f"shape {fmt_shape(spec.sizes)}, but got "
                         f"{fmt_shape(_sizes(grad_output))}", op=op, arg="grad_output")
    dtype = input._impl.dtype
    # Like PyTorch, an output the mask leaves out is not computed: None ("undefined").
    specs = (OutSpec(_sizes(input), dtype), OutSpec(_sizes(weight), dtype),
             OutSpec((spec.sizes[1],), dtype))
    return tuple(s if wanted else None for s, wanted in zip(specs, output_mask))


