"""Database entries for the random ops. PyTorch's generator is not ours, so the samples
here are the degenerate draws whose result is certain (std=0, from_ == to, p in {0, 1},
one category with weight): they check shapes, dtypes, in-place behaviour, Meta and errors
against PyTorch. The distributions and reproducibility: tests/test_pointwise_random.py."""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.core import (
    ALL_DTYPES, FLOATING, TP_DTYPE, ErrorInput, OpInfo, SampleInput, make_tensor, rng_for,
)

E = ErrorInput
S = SampleInput
SHAPES = (((3, 4), "contiguous"), ((3, 4), "transposed"), ((2, 3, 4), "strided"),
          ((), "contiguous"), ((0, 3), "contiguous"))


def _t(shape, dtype=tp.float32, device="cpu"):
    return make_tensor(shape, dtype, device, rng=rng_for("errors", shape, dtype))


def _fill_samples(*args_list):
    def gen(op, device, dtype, requires_grad):
        rng = rng_for(op.full_name, dtype)
        for args in args_list:
            for shape, layout in SHAPES:
                yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout), args,
                        name=f"{list(shape)} {layout} {args}")
    return gen


def errors_fill(bad_args, arg, regex):
    def gen(op, device):
        yield E(S(_t((3,), tp.int64, device), ()), DTypeError,
                rf"{op.name}\(\): not implemented for int64 tensors", arg="self")
        yield E(S(_t((3,), device=device), bad_args), ArgumentError, rf"{op.name}\(\): {regex}",
                arg=arg)
    return gen


def _probability_tensor(shape, dtype, device, rng):
    """0/1 values (certain outcomes) of `dtype`."""
    return make_tensor(shape, tp.bool, device, rng=rng).to(dtype)


def _bernoulli_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout in SHAPES:
        yield S(_probability_tensor(shape, dtype, device, rng).transpose(0, -1)
                if layout == "transposed" else _probability_tensor(shape, dtype, device, rng),
                name=f"{list(shape)} probabilities 0/1")


def _bernoulli_p_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for p in (0.0, 1.0):
        for shape, layout in SHAPES:
            yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout), (p,),
                    name=f"{list(shape)} {layout} p={p}")


def _bernoulli_tensor_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, pshape in (((3, 4), (3, 4)), ((3, 4), (4,)), ((), ()), ((0, 2), (2,))):
        yield S(make_tensor(shape, dtype, device, rng=rng),
                (_probability_tensor(pshape, tp.float32, device, rng),), name=f"{list(shape)}")


def errors_bernoulli(op, device):
    yield E(S(tp.tensor([0.5, 1.5], device=device)), ArgumentError,
            r"bernoulli\(\): argument 'self' must hold probabilities in \[0, 1\], but it "
            r"contains 1.5", arg="self", meta=False)
    yield E(S(_t((3,), tp.int64, device)), DTypeError,
            r"bernoulli\(\): not implemented for int64 tensors", arg="self")


def _multinomial_samples(op, device, dtype, requires_grad):
    one_hot = tp.tensor([[0.0, 2.0, 0.0], [0.0, 0.0, 0.5]], dtype=dtype, device=device)
    yield S(one_hot, (3, True), name="one category per row, with replacement")
    yield S(one_hot[0], (1,), name="1-D, without replacement")
    yield S(one_hot.t().contiguous().t(), (2,), {"replacement": True}, name="non-contiguous")


def errors_multinomial(op, device):
    yield E(S(_t((2, 2, 2), device=device), (1,)), ShapeError,
            r"multinomial\(\): argument 'self' must be 1-D or 2-D", arg="self")
    yield E(S(_t((3,), tp.int64, device), (1,)), DTypeError,
            r"multinomial\(\): not implemented for int64 tensors", arg="self")
    yield E(S(_t((3,), device=device), (4,)), ShapeError,
            r"multinomial\(\): cannot draw 4 samples without replacement from 3 categories",
            arg="num_samples")
    yield E(S(tp.tensor([1.0, -1.0], device=device), (1,)), ArgumentError,
            r"multinomial\(\): argument 'self' must hold finite, non-negative weights",
            arg="self", meta=False)
    yield E(S(_t((3,), device=device), (0,)), ArgumentError,
            r"multinomial\(\): argument 'num_samples' must be positive", arg="num_samples")


op_db = [
    OpInfo("normal_", overloads=("normal_",), dtypes=FLOATING, mutates_input=True,
           sample_inputs_func=_fill_samples((1.5, 0.0), (-2.0, 0.0)),
           error_inputs_func=errors_fill((0.0, -1.0), "std", "argument 'std' must be "
                                         "non-negative")),
    OpInfo("uniform_", overloads=("uniform_",), dtypes=FLOATING, mutates_input=True,
           sample_inputs_func=_fill_samples((2.0, 2.0), (-0.5, -0.5)),
           error_inputs_func=errors_fill((3.0, 2.0), "from_", "expects 'from_' <= 'to'")),
    OpInfo("exponential_", overloads=("exponential_",), dtypes=FLOATING, mutates_input=True,
           sample_inputs_func=_fill_samples((float("inf"),)),
           error_inputs_func=errors_fill((0.0,), "lambd", "argument 'lambd' must be positive")),
    OpInfo("bernoulli", overloads=("bernoulli",), dtypes=FLOATING, supports_autograd=False,
           sample_inputs_func=_bernoulli_samples, error_inputs_func=errors_bernoulli),
    OpInfo("bernoulli", "p", overloads=("bernoulli.p",), dtypes=FLOATING,
           supports_autograd=False, sample_inputs_func=_bernoulli_p_samples),
    OpInfo("bernoulli_", overloads=("bernoulli_.float",), mutates_input=True,
           sample_inputs_func=_bernoulli_p_samples),
    OpInfo("bernoulli_", "tensor", overloads=("bernoulli_.Tensor",), dtypes=ALL_DTYPES,
           mutates_input=True, sample_inputs_func=_bernoulli_tensor_samples),
    OpInfo("multinomial", overloads=("multinomial",), dtypes=FLOATING, supports_autograd=False,
           sample_inputs_func=_multinomial_samples, error_inputs_func=errors_multinomial),
]


# ---- random_, cauchy_, log_normal_, geometric_, poisson, binomial, fill_diagonal_ -------
# Certain draws again: random_(from_, from_ + 1), cauchy_ and log_normal_ with a scale too
# small to move the result, geometric_ with p so close to 1 that the first trial succeeds,
# rates 0 and probabilities 0 and 1. random_() has no certain draw: its entry checks the
# range of the draws. The numbers themselves: tests/test_random_distribution_draws.py.
INTEGERS_AND_FLOATS = (tp.uint8, tp.int8, tp.int16, tp.int32, tp.int64) + FLOATING


def _largest_random(dtype):
    if dtype.is_floating_point:
        return 2 ** {tp.float16: 11, tp.bfloat16: 8, tp.float32: 24, tp.float64: 53}[dtype]
    if dtype is tp.bool:
        return 1
    return {tp.uint8: 255, tp.int8: 127, tp.int16: 2 ** 15 - 1, tp.int32: 2 ** 31 - 1,
            tp.int64: 2 ** 63 - 1}[dtype]


def _in_range_after_random_(lib):
    """random_() of x, then whether every draw lies in [0, the largest integer of x's dtype]."""
    def call(x):
        largest = _largest_random(x.dtype if lib is tp else TP_DTYPE[x.dtype])
        x.random_()
        return (x >= 0) & (x <= largest)
    return call


def errors_random_(op, device):
    yield E(S(_t((3,), device=device), (5, 2)), ArgumentError,
            r"random_\(\): expects 'from_' to be less than 'to', but got from_=5 >= to=2",
            arg="from_")
    yield E(S(_t((3,), tp.int8, device), (0, 300)), ArgumentError,
            r"random_\(\): 'to' - 1 is out of bounds for int8", arg="to")
    yield E(S(_t((3,), tp.int8, device), (-200, 3)), ArgumentError,
            r"random_\(\): 'from_' is out of bounds for int8", arg="from_")
    yield E(S(_t((3,), tp.uint8, device), (-1, None)), ArgumentError,
            r"random_\(\): 'from_' is out of bounds for uint8", arg="from_")


def errors_random_to(op, device):
    yield E(S(_t((3,), device=device), (-5,)), ArgumentError,
            r"random_\(\): expects 'from_' to be less than 'to', but got from_=0 >= to=-5",
            arg="from_")


def _random_from_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    low = 0 if dtype in (tp.uint8, tp.bool) else -3
    for shape, layout in SHAPES:
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout), (low, low + 1),
                name=f"{list(shape)} {layout} [{low}, {low + 1})")
    yield S(make_tensor((3, 4), dtype, device, rng=rng), (1, 2), name="[1, 2)")
    if not dtype.is_floating_point:     # (a float's range up to 2^digits has two values)
        top = _largest_random(dtype)
        yield S(make_tensor((2, 3), dtype, device, rng=rng), (top, None),
                name="[the largest integer, to=None]")


def _random_to_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout in SHAPES:
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout), (1,),
                name=f"{list(shape)} {layout} to=1")


def _random_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout in SHAPES:
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout),
                name=f"{list(shape)} {layout}")


def _scaled_fill_samples(tiny):
    """cauchy_(median, sigma) and log_normal_(mean, std) with sigma/std = `tiny`: the draw
    moves the result by less than half a unit in the last place."""
    return _fill_samples((2.0, tiny), (-0.5, tiny))


def errors_positive_scale(arg, what):
    def gen(op, device):
        yield E(S(_t((3,), tp.int64, device), ()), DTypeError,
                rf"{op.name}\(\): the {what} distribution is a continuous probability "
                r"distribution: argument 'self' must be a floating point tensor", arg="self")
        yield E(S(_t((3,), device=device), (0.0, -1.0)), ArgumentError,
                rf"{op.name}\(\): expects {arg} > 0.0, but found {arg}=-1.0", arg=arg)
    return gen


def errors_geometric(op, device):
    yield E(S(_t((3,), tp.bool, device), (0.5,)), DTypeError,
            r"geometric_\(\): not implemented for bool tensors", arg="self")
    for p in (0.0, 1.5):
        yield E(S(_t((3,), device=device), (p,)), ArgumentError,
                rf"geometric_\(\): expects p to be in \(0, 1\), but got p={p}", arg="p")


def _poisson_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout in SHAPES:
        zeros = make_tensor(shape, dtype, device, rng=rng, layout=layout) * 0
        yield S(zeros, name=f"{list(shape)} {layout} rates 0")


def errors_poisson(op, device):
    yield E(S(tp.tensor([1.0, -1.0], device=device)), ArgumentError,
            r"poisson\(\): invalid Poisson rate, expected rate to be non-negative",
            arg="self", meta=False)
    yield E(S(_t((3,), tp.int64, device)), DTypeError,
            r"poisson\(\): not implemented for int64 tensors", arg="self")


def _binomial_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    counts = make_tensor((3, 4), dtype, device, rng=rng, low=0, high=20).round()
    yield S(counts, (_probability_tensor((3, 4), dtype, device, rng),), name="p 0 or 1")
    yield S(counts.t(), (_probability_tensor((3,), dtype, device, rng),),
            name="transposed count, broadcast p")
    yield S(counts * 0, (make_tensor((1, 4), dtype, device, rng=rng, low=0, high=1),),
            name="count 0, any p")
    yield S(make_tensor((0, 2), dtype, device, rng=rng), (make_tensor((2,), dtype, device,
                                                                      rng=rng),),
            name="empty")


def errors_binomial(op, device):
    yield E(S(_t((3,), tp.int64, device), (_t((3,), tp.int64, device),)), DTypeError,
            r"binomial\(\): not implemented for int64 tensors", arg="count")
    yield E(S(_t((3,), device=device), (_t((3,), tp.float64, device),)), DTypeError,
            r"binomial\(\): expected argument 'prob' to have dtype float32", arg="prob")
    yield E(S(_t((3,), device=device), (_t((4,), device=device),)), ShapeError,
            r"binomial\(\): argument 'prob' \(shape \[4\]\) is not broadcastable", arg="prob")


def _fill_diagonal_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    value = True if dtype is tp.bool else 7
    for shape, layout, wrap in (((3, 3), "contiguous", False), ((4, 3), "transposed", False),
                                ((7, 3), "contiguous", True), ((2, 5), "strided", True),
                                ((3, 3, 3), "contiguous", False), ((0, 3), "contiguous", False)):
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout), (value,),
                {"wrap": wrap}, name=f"{list(shape)} {layout} wrap={wrap}")
    if dtype is tp.int64:
        yield S(make_tensor((3, 4), dtype, device, rng=rng), (2.5,), name="a float into int64")


def errors_fill_diagonal(op, device):
    yield E(S(_t((3,), device=device), (1.0,)), ShapeError,
            r"fill_diagonal_\(\): dimensions must larger than 1", arg="self", meta=False)
    yield E(S(_t((3, 3, 2), device=device), (1.0,)), ShapeError,
            r"fill_diagonal_\(\): all dimensions of input must be of equal length",
            arg="self", meta=False)


op_db += [
    OpInfo("random_", "from", overloads=("random_.from",), dtypes=ALL_DTYPES,
           mutates_input=True, sample_inputs_func=_random_from_samples,
           error_inputs_func=errors_random_),
    OpInfo("random_", "to", overloads=("random_.to",), dtypes=ALL_DTYPES, mutates_input=True,
           sample_inputs_func=_random_to_samples, error_inputs_func=errors_random_to),
    OpInfo("random_", overloads=("random_",), dtypes=ALL_DTYPES, supports_autograd=False,
           op=_in_range_after_random_(tp), ref=_in_range_after_random_(torch),
           sample_inputs_func=_random_samples),
    OpInfo("cauchy_", overloads=("cauchy_",), dtypes=FLOATING, mutates_input=True,
           sample_inputs_func=_scaled_fill_samples(1e-300),
           error_inputs_func=errors_positive_scale("sigma", "Cauchy")),
    OpInfo("log_normal_", overloads=("log_normal_",), dtypes=FLOATING, mutates_input=True,
           sample_inputs_func=_scaled_fill_samples(1e-300),
           error_inputs_func=errors_positive_scale("std", "log-normal")),
    OpInfo("geometric_", overloads=("geometric_",), dtypes=INTEGERS_AND_FLOATS,
           mutates_input=True, sample_inputs_func=_fill_samples((1 - 1e-12,)),
           error_inputs_func=errors_geometric),
    OpInfo("poisson", overloads=("poisson",), dtypes=FLOATING, supports_autograd=False,
           sample_inputs_func=_poisson_samples, error_inputs_func=errors_poisson),
    OpInfo("binomial", overloads=("binomial",), dtypes=(tp.float32, tp.float64),
           supports_autograd=False, sample_inputs_func=_binomial_samples,
           error_inputs_func=errors_binomial),
    OpInfo("fill_diagonal_", overloads=("fill_diagonal_",), ref="Tensor.fill_diagonal_",
           mutates_input=True, sample_inputs_func=_fill_diagonal_samples,
           error_inputs_func=errors_fill_diagonal),
]
