"""Database entries for the random ops. PyTorch's generator is not ours, so the samples
here are the degenerate draws whose result is certain (std=0, from_ == to, p in {0, 1},
one category with weight): they check shapes, dtypes, in-place behaviour, Meta and errors
against PyTorch. The distributions and reproducibility: tests/test_pointwise_random.py."""
from __future__ import annotations

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.core import (
    ALL_DTYPES, FLOATING, ErrorInput, OpInfo, SampleInput, make_tensor, rng_for,
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
