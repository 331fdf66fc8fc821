"""Operator database entries: pooling ops and their backwards.

The backward ops are compared with PyTorch's aten ops of the same name; their inputs
(indices, shapes) come from running the forward op on the same sample.
"""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.core import ALL_BUT_BOOL, FLOATING, ErrorInput, OpInfo, SampleInput, make_tensor, \
    rng_for

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
]
