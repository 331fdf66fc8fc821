"""Operator database entries: pooling ops (2-D, 3-D, fractional, unpooling, the
torch-level 1-D forms) and their backwards.

The backward ops are compared with PyTorch's aten ops of the same name; their inputs
(indices, shapes) come from running the forward op on the same sample.
"""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError
from opinfo.core import ALL_BUT_BOOL, FLOATING, ErrorInput, OpInfo, SampleInput, make_tensor, \
    rng_for

FLOAT32_64 = (tp.float32, tp.float64)
E = ErrorInput
S = SampleInput
aten = torch.ops.aten


def _grad(dtype, requires_grad):
    return requires_grad and dtype.is_floating_point


def _t(shape, dtype=tp.float32):
    return make_tensor(shape, dtype, "cpu", rng=rng_for("errors", shape, dtype))


# (input shape, layout, kernel, stride, padding, dilation, ceil_mode)
MAX_CASES = (
    ((2, 2, 5, 4), "contiguous", (2, 2), (), (0, 0), (1, 1), False),
    ((1, 3, 6, 5), "transposed", (3, 2), (2, 1), (1, 1), (1, 2), True),
    ((2, 4, 5), "strided", (2, 3), (2, 2), (1, 0), (2, 1), True),
    ((0, 2, 3, 3), "contiguous", (2, 2), (1, 1), (0, 0), (1, 1), False),
)


def _distinct(x, rng):
    """Integer samples with no ties: which of two equal maxima is "the" argmax is up to
    the implementation (PyTorch's differs between memory layouts)."""
    n = x.numel()
    values = rng.permutation(n) - (0 if x.dtype is tp.uint8 else n // 2)
    x.copy_(tp.tensor(values.reshape(tuple(x.shape))))
    return x


def sample_inputs_max_pool(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, k, s, p, d, ceil in MAX_CASES:
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout,
                        requires_grad=_grad(dtype, requires_grad))
        if not dtype.is_floating_point:
            x = _distinct(x, rng)
        yield S(x, (k, s, p, d, ceil), name=f"{list(shape)} {layout} k={k} s={s} p={p} d={d}")


def sample_inputs_max_pool_backward(op, device, dtype, requires_grad):
    for sample in sample_inputs_max_pool(op, device, dtype, False):
        k, s, p, d, ceil = sample.args
        values, indices = tp.max_pool2d_with_indices(sample.input, *sample.args)
        g = make_tensor(tuple(values.shape), dtype, device, rng=rng_for(op.name, sample.name),
                        requires_grad=_grad(dtype, requires_grad))
        yield S(g, (sample.input, k, s or k, p, d, ceil, indices), name=sample.name)


def errors_max_pool(op, device):
    yield E(S(_t((5, 5)), ((2, 2),)), ShapeError,
            r"max_pool2d_with_indices\(\): expected argument 'self' to be 3-D \(C, H, W\) or "
            r"4-D", arg="self")
    yield E(S(_t((1, 1, 2, 2)), ((3, 3),)), ShapeError,
            r"max_pool2d_with_indices\(\): the output would be empty", arg="self")
    yield E(S(_t((1, 1, 4, 4)), ((2, 2), (2, 2), (2, 2))), ArgumentError,
            r"max_pool2d_with_indices\(\): argument 'padding' \(\[2, 2\]\) must be at most half",
            arg="padding")
    yield E(S(_t((1, 1, 4, 4)), ((2, 0),)), ArgumentError,
            r"max_pool2d_with_indices\(\): argument 'kernel_size' must be positive",
            arg="kernel_size")
    yield E(S(_t((1, 1, 4, 4), tp.bool), ((2, 2),)), DTypeError,
            r"max_pool2d_with_indices\(\): not implemented for bool tensors", arg="self")


# (input shape, layout, kernel, stride, padding, ceil_mode, count_include_pad, divisor)
AVG_CASES = (
    ((2, 2, 5, 4), "contiguous", (2, 2), (), (0, 0), False, True, None),
    ((1, 3, 6, 5), "transposed", (3, 2), (2, 1), (1, 1), True, True, None),
    ((2, 5, 5), "strided", (3, 3), (2, 2), (1, 1), True, False, None),
    ((1, 2, 4, 4), "contiguous", (2, 3), (1, 2), (1, 1), False, True, 4),
)


def sample_inputs_avg_pool(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, k, s, p, ceil, include, divisor in AVG_CASES:
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout,
                            requires_grad=_grad(dtype, requires_grad)),
                (k, s, p, ceil, include, divisor),
                name=f"{list(shape)} {layout} k={k} s={s} p={p} ceil={ceil} pad={include} "
                     f"divisor={divisor}")


def sample_inputs_avg_pool_backward(op, device, dtype, requires_grad):
    for sample in sample_inputs_avg_pool(op, device, dtype, False):
        k, s, p, ceil, include, divisor = sample.args
        out = tp.avg_pool2d(sample.input, *sample.args)
        g = make_tensor(tuple(out.shape), dtype, device, rng=rng_for(op.name, sample.name),
                        requires_grad=_grad(dtype, requires_grad))
        yield S(g, (sample.input, k, s or k, p, ceil, include, divisor), name=sample.name)


def errors_avg_pool(op, device):
    yield E(S(_t((1, 1, 4, 4), tp.int32), ((2, 2),)), DTypeError,
            r"avg_pool2d\(\): argument 'self' must have a floating point dtype", arg="self")
    yield E(S(_t((1, 1, 4, 4)), ((2, 2), (2, 2), (0, 0), False, True, 0)), ArgumentError,
            r"avg_pool2d\(\): argument 'divisor_override' must not be zero",
            arg="divisor_override")
    yield E(S(_t((1, 1, 2, 2)), ((3, 3),)), ShapeError,
            r"avg_pool2d\(\): the output would be empty", arg="self")


# (input shape, layout, output size)
ADAPTIVE_CASES = (
    ((2, 2, 5, 7), "contiguous", (2, 3)),
    ((1, 3, 6, 5), "transposed", (6, 5)),
    ((2, 5, 4), "strided", (3, 1)),
    ((1, 2, 3, 3), "contiguous", (4, 5)),
)


def sample_inputs_adaptive(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, size in ADAPTIVE_CASES:
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout,
                            requires_grad=_grad(dtype, requires_grad)),
                (size,), name=f"{list(shape)} {layout} -> {size}")


def sample_inputs_adaptive_avg_backward(op, device, dtype, requires_grad):
    for sample in sample_inputs_adaptive(op, device, dtype, False):
        out = tp.adaptive_avg_pool2d(sample.input, *sample.args)
        g = make_tensor(tuple(out.shape), dtype, device, rng=rng_for(op.name, sample.name),
                        requires_grad=_grad(dtype, requires_grad))
        yield S(g, (sample.input,), name=sample.name)


def sample_inputs_adaptive_max_backward(op, device, dtype, requires_grad):
    for sample in sample_inputs_adaptive(op, device, dtype, False):
        out, indices = tp.adaptive_max_pool2d(sample.input, *sample.args)
        g = make_tensor(tuple(out.shape), dtype, device, rng=rng_for(op.name, sample.name),
                        requires_grad=_grad(dtype, requires_grad))
        yield S(g, (sample.input, indices), name=sample.name)


def errors_adaptive(op, device):
    yield E(S(_t((2, 3, 4, 4, 4)), ((2, 2),)), ShapeError,
            rf"{op.name}\(\): expected argument 'self' to be 3-D", arg="self")
    yield E(S(_t((1, 2, 4, 4)), ((2, 2, 2),)), ArgumentError,
            rf"{op.name}\(\): argument 'output_size' must have 2 element", arg="output_size")
    yield E(S(_t((1, 2, 4, 4), tp.int64), ((2, 2),)), DTypeError,
            rf"{op.name}\(\): argument 'self' must have a floating point dtype", arg="self")


# ---- 3-D ------------------------------------------------------------------------------
# (input shape, layout, kernel, stride, padding, dilation, ceil_mode)
MAX3_CASES = (
    ((1, 1, 3, 4, 4), "contiguous", (2, 2, 2), (), (0, 0, 0), (1, 1, 1), False),
    ((2, 3, 4, 3), "transposed", (2, 3, 2), (1, 2, 1), (1, 1, 1), (1, 1, 2), True),
    ((1, 2, 4, 3, 3), "strided", (3, 2, 2), (2, 2, 1), (1, 0, 1), (1, 2, 1), True),
    ((0, 2, 3, 3, 3), "contiguous", (2, 2, 2), (1, 1, 1), (0, 0, 0), (1, 1, 1), False),
)


def sample_inputs_max_pool3d(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, k, s, p, d, ceil in MAX3_CASES:
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout,
                        requires_grad=_grad(dtype, requires_grad))
        if not dtype.is_floating_point:
            x = _distinct(x, rng)
        yield S(x, (k, s, p, d, ceil), name=f"{list(shape)} {layout} k={k} s={s} p={p} d={d}")


def sample_inputs_max_pool3d_backward(op, device, dtype, requires_grad):
    for sample in sample_inputs_max_pool3d(op, device, dtype, False):
        k, s, p, d, ceil = sample.args
        values, indices = tp.max_pool3d_with_indices(sample.input, *sample.args)
        g = make_tensor(tuple(values.shape), dtype, device, rng=rng_for(op.name, sample.name),
                        requires_grad=_grad(dtype, requires_grad))
        yield S(g, (sample.input, k, s or k, p, d, ceil, indices), name=sample.name)


def errors_max_pool3d(op, device):
    yield E(S(_t((4, 4, 4)), ((2, 2, 2),)), ShapeError,
            r"max_pool3d_with_indices\(\): expected argument 'self' to be 4-D \(C, D, H, W\) "
            r"or 5-D \(N, C, D, H, W\)", arg="self")
    yield E(S(_t((1, 1, 4, 4, 4)), ((2, 2),)), ArgumentError,
            r"max_pool3d_with_indices\(\): argument 'kernel_size' must have 3 element",
            arg="kernel_size")
    yield E(S(_t((1, 1, 2, 4, 4)), ((3, 2, 2),)), ShapeError,
            r"max_pool3d_with_indices\(\): the output would be empty", arg="self")
    yield E(S(_t((1, 1, 4, 4, 4)), ((2, 2, 2), (1, 1, 1), (0, 2, 0))), ArgumentError,
            r"max_pool3d_with_indices\(\): argument 'padding' \(\[0, 2, 0\]\) must be at "
            r"most half", arg="padding")
    yield E(S(_t((1, 1, 4, 4, 4), tp.bool), ((2, 2, 2),)), DTypeError,
            r"max_pool3d_with_indices\(\): not implemented for bool tensors", arg="self")


# (input shape, layout, kernel, stride, padding, ceil_mode, count_include_pad, divisor)
AVG3_CASES = (
    ((1, 1, 3, 4, 4), "contiguous", (2, 2, 2), (), (0, 0, 0), False, True, None),
    ((2, 4, 3, 3), "transposed", (3, 2, 2), (2, 1, 2), (1, 1, 1), True, True, None),
    ((1, 1, 5, 4, 3), "strided", (3, 3, 2), (2, 2, 1), (1, 1, 0), True, False, None),
    ((1, 1, 3, 4, 3), "contiguous", (2, 3, 2), (1, 2, 1), (1, 1, 1), False, True, 5),
)


def sample_inputs_avg_pool3d(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, k, s, p, ceil, include, divisor in AVG3_CASES:
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout,
                            requires_grad=_grad(dtype, requires_grad)),
                (k, s, p, ceil, include, divisor),
                name=f"{list(shape)} {layout} k={k} s={s} p={p} ceil={ceil} pad={include} "
                     f"divisor={divisor}")


def sample_inputs_avg_pool3d_backward(op, device, dtype, requires_grad):
    for sample in sample_inputs_avg_pool3d(op, device, dtype, False):
        k, s, p, ceil, include, divisor = sample.args
        out = tp.avg_pool3d(sample.input, *sample.args)
        g = make_tensor(tuple(out.shape), dtype, device, rng=rng_for(op.name, sample.name),
                        requires_grad=_grad(dtype, requires_grad))
        yield S(g, (sample.input, k, s or k, p, ceil, include, divisor), name=sample.name)


def errors_avg_pool3d(op, device):
    yield E(S(_t((1, 1, 4, 4, 4), tp.int32), ((2, 2, 2),)), DTypeError,
            r"avg_pool3d\(\): argument 'self' must have a floating point dtype", arg="self")
    yield E(S(_t((1, 1, 4, 4, 4)), ((2, 2, 2), (2, 2, 2), (0, 0, 0), False, True, 0)),
            ArgumentError, r"avg_pool3d\(\): argument 'divisor_override' must not be zero",
            arg="divisor_override")
    yield E(S(_t((1, 1, 4, 4, 4)), ((2, 2, 2), (0, 1, 1))), ArgumentError,
            r"avg_pool3d\(\): argument 'stride' must be positive", arg="stride")


# (input shape, layout, output size)
ADAPTIVE3_CASES = (
    ((1, 1, 4, 3, 3), "contiguous", (2, 3, 2)),
    ((2, 3, 4, 3), "transposed", (3, 4, 1)),
    ((1, 1, 3, 2, 4), "strided", (4, 2, 5)),
)


def sample_inputs_adaptive3d(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, size in ADAPTIVE3_CASES:
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout,
                            requires_grad=_grad(dtype, requires_grad)),
                (size,), name=f"{list(shape)} {layout} -> {size}")


def sample_inputs_adaptive_avg3d_backward(op, device, dtype, requires_grad):
    for sample in sample_inputs_adaptive3d(op, device, dtype, False):
        out = tp.adaptive_avg_pool3d(sample.input, *sample.args)
        g = make_tensor(tuple(out.shape), dtype, device, rng=rng_for(op.name, sample.name),
                        requires_grad=_grad(dtype, requires_grad))
        yield S(g, (sample.input,), name=sample.name)


def sample_inputs_adaptive_max3d_backward(op, device, dtype, requires_grad):
    for sample in sample_inputs_adaptive3d(op, device, dtype, False):
        out, indices = tp.adaptive_max_pool3d(sample.input, *sample.args)
        g = make_tensor(tuple(out.shape), dtype, device, rng=rng_for(op.name, sample.name),
                        requires_grad=_grad(dtype, requires_grad))
        yield S(g, (sample.input, indices), name=sample.name)


def errors_adaptive3d(op, device):
    yield E(S(_t((3, 4, 4)), ((2, 2, 2),)), ShapeError,
            rf"{op.name}\(\): expected argument 'self' to be 4-D", arg="self")
    yield E(S(_t((1, 2, 4, 4, 4)), ((2, 2),)), ArgumentError,
            rf"{op.name}\(\): argument 'output_size' must have 3 element", arg="output_size")
    yield E(S(_t((1, 2, 4, 4, 4), tp.int64), ((2, 2, 2),)), DTypeError,
            rf"{op.name}\(\): argument 'self' must have a floating point dtype", arg="self")


# ---- fractional max pooling -----------------------------------------------------------
# (input shape, layout, kernel, output size)
FRACTIONAL_CASES = {
    2: (((1, 2, 5, 6), "contiguous", (2, 2), (3, 4)),
        ((2, 5, 4), "transposed", (3, 2), (3, 1)),
        ((1, 2, 5, 5), "strided", (2, 3), (4, 3)),
        ((2, 1, 4, 4), "contiguous", (3, 3), (2, 2))),
    3: (((1, 1, 4, 4, 4), "contiguous", (2, 2, 2), (2, 2, 1)),
        ((1, 3, 4, 4), "transposed", (1, 2, 2), (2, 2, 2)),
        ((2, 1, 3, 4, 5), "strided", (2, 2, 2), (1, 2, 1))),
}


def _samples(shape, nd, dtype, device, rng):
    """random_samples of the input's dtype: one draw in [0, 1) per (batch, channel, dim)."""
    batch = 1 if len(shape) == nd + 1 else shape[0]
    return tp.tensor(rng.random((batch, shape[-nd - 1], nd)), dtype=dtype, device=device)


def sample_inputs_fractional(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    nd = 3 if "3d" in op.name else 2
    for shape, layout, k, size in FRACTIONAL_CASES[nd]:
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout,
                        requires_grad=_grad(dtype, requires_grad))
        yield S(x, (k, size, _samples(shape, nd, dtype, device, rng)),
                name=f"{list(shape)} {layout} k={k} -> {size}")


def sample_inputs_fractional_backward(op, device, dtype, requires_grad):
    forward = op.name.replace("_backward", "")
    for sample in sample_inputs_fractional(OpInfo(forward), device, dtype, False):
        out, indices = getattr(tp, forward)(sample.input, *sample.args)
        g = make_tensor(tuple(out.shape), dtype, device, rng=rng_for(op.name, sample.name),
                        requires_grad=_grad(dtype, requires_grad))
        yield S(g, (sample.input,) + sample.args[:2] + (indices,), name=sample.name)


def errors_fractional(op, device):
    nd = 3 if "3d" in op.name else 2
    shape = (1, 2) + (5,) * nd
    k, size = (2,) * nd, (3,) * nd
    samples = _t((1, 2, nd))
    yield E(S(_t((5,) * nd), (k, size, samples)), ShapeError,
            rf"{op.name}\(\): expected argument 'self' to be {nd + 1}-D", arg="self")
    yield E(S(_t(shape), ((5,) * nd, size, samples)), ArgumentError,
            rf"{op.name}\(\): argument 'kernel_size' \[{', '.join(['5'] * nd)}\] is too large",
            arg="kernel_size")
    yield E(S(_t(shape), (k, size, _t((1, 2, nd), tp.float64))), DTypeError,
            rf"{op.name}\(\): argument 'random_samples' must have the dtype of 'self'",
            arg="random_samples")
    yield E(S(_t(shape), (k, size, _t((1, 3, nd)))), ShapeError,
            rf"{op.name}\(\): argument 'random_samples' must have shape", arg="random_samples")
    yield E(S(_t(shape, tp.int64), (k, size, _t((1, 2, nd), tp.int64))), DTypeError,
            rf"{op.name}\(\): argument 'self' must have a floating point dtype", arg="self")


# ---- max_unpool3d ---------------------------------------------------------------------
# (input shape, layout, kernel = stride, padding): unpooled back to the input's size
UNPOOL3_CASES = (
    ((1, 2, 4, 5, 4), "contiguous", (2, 2, 2), (0, 0, 0)),
    ((2, 4, 5, 3), "transposed", (2, 3, 2), (1, 1, 1)),
    ((1, 1, 5, 4, 4), "strided", (3, 2, 2), (0, 0, 0)),
)


def sample_inputs_max_unpool3d(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, k, p in UNPOOL3_CASES:
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout)
        values, indices = tp.max_pool3d_with_indices(x, k, k, p)
        values = values.detach().requires_grad_(_grad(dtype, requires_grad))
        yield S(values, (indices, shape[-3:], k, p), name=f"{list(shape)} {layout} k={k}")


def errors_max_unpool3d(op, device):
    x, idx = _t((1, 2, 2, 2, 2)), tp.zeros((1, 2, 2, 2, 2), dtype=tp.int64)
    yield E(S(_t((2, 2, 2)), (idx[0, 0], (4, 4, 4), (2, 2, 2), (0, 0, 0))), ShapeError,
            r"max_unpool3d\(\): expected argument 'self' to be a non-empty 4-D", arg="self")
    yield E(S(x, (idx.int(), (4, 4, 4), (2, 2, 2), (0, 0, 0))), DTypeError,
            r"max_unpool3d\(\): argument 'indices' must have dtype int64", arg="indices")
    yield E(S(x, (idx[..., :1], (4, 4, 4), (2, 2, 2), (0, 0, 0))), ShapeError,
            r"max_unpool3d\(\): argument 'indices' \(shape \[1, 2, 2, 2, 1\]\) must have "
            r"the shape of 'self'", arg="indices")
    yield E(S(x, (idx + 64, (4, 4, 4), (2, 2, 2), (0, 0, 0))), DimError,
            r"max_unpool3d\(\): argument 'indices' holds a position outside", arg="indices",
            meta=False)


# ---- the torch-level 1-D forms, max_pool2d and max_pool3d ------------------------------
# Composites of the 2-D and 3-D ops: their entries leave out gradgradcheck, which would
# repeat those ops' own (the suite's time is short).
def sample_inputs_max_pool1d(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, args in (((2, 3, 9), "contiguous", ((3,), (2,), (1,), (1,), True)),
                                ((3, 8), "transposed", ((2,), (), (0,), (3,), False)),
                                ((1, 2, 7), "strided", ((2,),))):
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout,
                        requires_grad=_grad(dtype, requires_grad))
        if not dtype.is_floating_point:
            x = _distinct(x, rng)
        yield S(x, args, name=f"{list(shape)} {layout} {args}")


def sample_inputs_max_pool2d_3d(op, device, dtype, requires_grad):
    source = sample_inputs_max_pool3d if op.name == "max_pool3d" else sample_inputs_max_pool
    for sample in source(op, device, dtype, requires_grad):
        yield sample


def sample_inputs_avg_pool1d(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, args in (((2, 3, 9), "contiguous", ((3,), (2,), (1,), True, False)),
                                ((3, 8), "transposed", ((2,),)),
                                ((1, 2, 7), "strided", ((4,), (3,), (2,), True, True))):
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout,
                            requires_grad=_grad(dtype, requires_grad)),
                args, name=f"{list(shape)} {layout} {args}")


def sample_inputs_adaptive1d(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, size in (((2, 3, 9), "contiguous", (4,)), ((3, 5), "transposed", (7,)),
                                ((1, 2, 7), "strided", (1,))):
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout,
                            requires_grad=_grad(dtype, requires_grad)),
                (size,), name=f"{list(shape)} {layout} -> {size}")


def errors_1d(op, device):
    yield E(S(_t((1, 2, 4, 4)), ((2,),)), ShapeError,
            rf"{op.name}\(\): expected argument 'self' to be 2-D \(C, L\) or 3-D", arg="self")
    name = "output_size" if "adaptive" in op.name else "kernel_size"
    yield E(S(_t((1, 2, 8)), ((2, 2),)), ArgumentError,
            rf"{op.name}\(\): argument '{name}' must have 1 element", arg=name)


op_db = [
    OpInfo("max_pool2d_with_indices", overloads=("max_pool2d_with_indices",),
           dtypes=ALL_BUT_BOOL, ref=aten.max_pool2d_with_indices,
           sample_inputs_func=sample_inputs_max_pool,
           error_inputs_func=errors_max_pool),
    OpInfo("max_pool2d_with_indices_backward",
           overloads=("max_pool2d_with_indices_backward",), dtypes=FLOATING,
           sample_inputs_func=sample_inputs_max_pool_backward,
           ref=aten.max_pool2d_with_indices_backward),
    OpInfo("avg_pool2d", overloads=("avg_pool2d",), dtypes=FLOATING, ref=aten.avg_pool2d,
           sample_inputs_func=sample_inputs_avg_pool, error_inputs_func=errors_avg_pool),
    OpInfo("avg_pool2d_backward", overloads=("avg_pool2d_backward",), dtypes=FLOATING,
           sample_inputs_func=sample_inputs_avg_pool_backward, ref=aten.avg_pool2d_backward),
    OpInfo("adaptive_avg_pool2d", overloads=("adaptive_avg_pool2d",), dtypes=FLOATING,
           ref=aten._adaptive_avg_pool2d, sample_inputs_func=sample_inputs_adaptive,
           error_inputs_func=errors_adaptive),
    OpInfo("adaptive_avg_pool2d_backward", overloads=("adaptive_avg_pool2d_backward",),
           dtypes=FLOATING, ref=aten._adaptive_avg_pool2d_backward,
           sample_inputs_func=sample_inputs_adaptive_avg_backward),
    OpInfo("adaptive_max_pool2d", overloads=("adaptive_max_pool2d",), dtypes=FLOATING,
           ref=aten.adaptive_max_pool2d, sample_inputs_func=sample_inputs_adaptive,
           error_inputs_func=errors_adaptive),
    OpInfo("adaptive_max_pool2d_backward", overloads=("adaptive_max_pool2d_backward",),
           dtypes=FLOATING, ref=aten.adaptive_max_pool2d_backward,
           sample_inputs_func=sample_inputs_adaptive_max_backward),
    OpInfo("max_pool3d_with_indices", overloads=("max_pool3d_with_indices",),
           dtypes=ALL_BUT_BOOL, ref=aten.max_pool3d_with_indices,
           sample_inputs_func=sample_inputs_max_pool3d, error_inputs_func=errors_max_pool3d),
    # (overlapping windows add several bfloat16 gradients into one element: PyTorch rounds
    # each partial sum to bfloat16, the kernel here sums in float32 and rounds once)
    OpInfo("max_pool3d_with_indices_backward",
           overloads=("max_pool3d_with_indices_backward",), dtypes=FLOATING,
           tolerances={tp.bfloat16: (1.6e-2, 3e-2)},
           sample_inputs_func=sample_inputs_max_pool3d_backward,
           ref=aten.max_pool3d_with_indices_backward),
    # PyTorch's CPU avg_pool3d has no half-type kernel
    OpInfo("avg_pool3d", overloads=("avg_pool3d",), dtypes=FLOAT32_64, ref=aten.avg_pool3d,
           sample_inputs_func=sample_inputs_avg_pool3d, error_inputs_func=errors_avg_pool3d),
    OpInfo("avg_pool3d_backward", overloads=("avg_pool3d_backward",), dtypes=FLOAT32_64,
           sample_inputs_func=sample_inputs_avg_pool3d_backward, ref=aten.avg_pool3d_backward),
    OpInfo("adaptive_avg_pool3d", overloads=("adaptive_avg_pool3d",), dtypes=FLOATING,
           ref=aten._adaptive_avg_pool3d, sample_inputs_func=sample_inputs_adaptive3d,
           error_inputs_func=errors_adaptive3d),
    OpInfo("adaptive_avg_pool3d_backward", overloads=("adaptive_avg_pool3d_backward",),
           dtypes=FLOATING, ref=aten._adaptive_avg_pool3d_backward,
           sample_inputs_func=sample_inputs_adaptive_avg3d_backward),
    OpInfo("adaptive_max_pool3d", overloads=("adaptive_max_pool3d",), dtypes=FLOATING,
           ref=aten.adaptive_max_pool3d, sample_inputs_func=sample_inputs_adaptive3d,
           error_inputs_func=errors_adaptive3d),
    OpInfo("adaptive_max_pool3d_backward", overloads=("adaptive_max_pool3d_backward",),
           dtypes=FLOATING, ref=aten.adaptive_max_pool3d_backward,
           sample_inputs_func=sample_inputs_adaptive_max3d_backward),
    # PyTorch's CPU fractional max pooling has no half-type kernel
    OpInfo("fractional_max_pool2d", overloads=("fractional_max_pool2d",), dtypes=FLOAT32_64,
           ref=aten.fractional_max_pool2d, sample_inputs_func=sample_inputs_fractional,
           error_inputs_func=errors_fractional),
    OpInfo("fractional_max_pool2d_backward", overloads=("fractional_max_pool2d_backward",),
           dtypes=FLOAT32_64, ref=aten.fractional_max_pool2d_backward,
           sample_inputs_func=sample_inputs_fractional_backward),
    OpInfo("fractional_max_pool3d", overloads=("fractional_max_pool3d",), dtypes=FLOAT32_64,
           ref=aten.fractional_max_pool3d, sample_inputs_func=sample_inputs_fractional,
           error_inputs_func=errors_fractional),
    OpInfo("fractional_max_pool3d_backward", overloads=("fractional_max_pool3d_backward",),
           dtypes=FLOAT32_64, ref=aten.fractional_max_pool3d_backward,
           sample_inputs_func=sample_inputs_fractional_backward),
    OpInfo("max_unpool3d", overloads=("max_unpool3d",), dtypes=FLOATING,
           ref=aten.max_unpool3d, sample_inputs_func=sample_inputs_max_unpool3d,
           error_inputs_func=errors_max_unpool3d),
    OpInfo("max_pool1d_with_indices", overloads=("max_pool1d_with_indices",),
           dtypes=ALL_BUT_BOOL, ref=torch.max_pool1d_with_indices, supports_gradgrad=False,
           sample_inputs_func=sample_inputs_max_pool1d, error_inputs_func=errors_1d),
    OpInfo("max_pool1d", overloads=("max_pool1d",), dtypes=FLOATING, ref=torch.max_pool1d,
           supports_gradgrad=False, sample_inputs_func=sample_inputs_max_pool1d,
           error_inputs_func=errors_1d),
    OpInfo("max_pool2d", overloads=("max_pool2d",), dtypes=ALL_BUT_BOOL, ref=torch.max_pool2d,
           supports_gradgrad=False, sample_inputs_func=sample_inputs_max_pool2d_3d),
    OpInfo("max_pool3d", overloads=("max_pool3d",), dtypes=ALL_BUT_BOOL, ref=torch.max_pool3d,
           supports_gradgrad=False, sample_inputs_func=sample_inputs_max_pool2d_3d),
    OpInfo("avg_pool1d", overloads=("avg_pool1d",), dtypes=FLOATING, ref=torch.avg_pool1d,
           supports_gradgrad=False, sample_inputs_func=sample_inputs_avg_pool1d,
           error_inputs_func=errors_1d),
    OpInfo("adaptive_avg_pool1d", overloads=("adaptive_avg_pool1d",), dtypes=FLOATING,
           ref=torch.adaptive_avg_pool1d, supports_gradgrad=False,
           sample_inputs_func=sample_inputs_adaptive1d, error_inputs_func=errors_1d),
    OpInfo("adaptive_max_pool1d", overloads=("adaptive_max_pool1d",), dtypes=FLOATING,
           ref=torch.adaptive_max_pool1d, supports_gradgrad=False,
           sample_inputs_func=sample_inputs_adaptive1d, error_inputs_func=errors_1d),
]
