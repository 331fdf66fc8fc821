"""Database entries for the activations (relu6 ... prelu). The reference is
torch.nn.functional; ours is called as the op (`tp.elu`), and `tp.nn.functional` is
checked against the ops in tests/test_pointwise_activations.py."""
from __future__ import annotations


import torch
import torch.nn.functional as TF

import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError
from opinfo.core import (
    FLOATING, INTEGRAL, ErrorInput, OpInfo, SampleInput, make_tensor, rng_for,
)
from opinfo.samples import sample_inputs_unary

E = ErrorInput
S = SampleInput
# Both sides of every kink (0, +-3) and far tails (overflow in exp, saturation).
EDGES = (0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 6.0, 30.0, -30.0, 100.0, -100.0, float("inf"),
         float("-inf"), float("nan"))


def _t(shape, dtype=tp.float32, device="cpu"):
    return make_tensor(shape, dtype, device, rng=rng_for("errors", shape, dtype))


def with_args(*args, edges=EDGES, **kwargs):
    """Unary samples (with edge values; values from [-5, 5) so the kinks are crossed),
    plus `args`/`kwargs` for the op's parameters."""
    def gen(op, device, dtype, requires_grad):
        for s in sample_inputs_unary(op, device, dtype, requires_grad, low=-5, high=5,
                                     extra_values=edges):
            yield S(s.input, args, dict(kwargs), f"{s.name} {args} {kwargs}", s.meta, s.grad)
    return gen


def samples(*variants, edges=EDGES):
    """Several parameter sets for one op: `samples((args, kwargs), ...)`."""
    def gen(op, device, dtype, requires_grad):
        for args, kwargs in variants:
            yield from with_args(*args, edges=edges, **kwargs)(op, device, dtype, requires_grad)
    return gen


def errors_int_input(op, device):
    yield E(S(_t((3,), tp.int64, device)), DTypeError,
            rf"{op.name}\(\): not implemented for int64 tensors", arg="self")


def errors_gelu(op, device):
    yield from errors_int_input(op, device)
    yield E(S(_t((3,), device=device), kwargs={"approximate": "fast"}), ArgumentError,
            r"gelu\(\): argument 'approximate' must be 'none' or 'tanh', but got 'fast'",
            arg="approximate")


def errors_hardtanh(op, device):
    yield E(S(_t((3,), tp.uint8, device), (-1, 1)), ArgumentError,
            r"hardtanh\(\): cannot clamp an unsigned tensor", arg="min_val")


SIGNED = FLOATING + INTEGRAL[1:]   # hardtanh: no uint8 with its default limits


def _on_clone(fn):
    def call(x, *args, **kwargs):
        return fn(x.clone(), *args, **kwargs)
    call.__name__ = fn.__name__ if hasattr(fn, "__name__") else str(fn)
    return call


def _act(name, sample_fn, dtypes=FLOATING, inplace=True, errors=errors_int_input, ref=None,
         inplace_samples=None, **kw):
    """The op's entry and, with `inplace`, one for `name_` applied to a clone of the input:
    torch has no method for these in-place forms (so the generic in-place test, which
    calls methods, cannot run), and a clone lets the gradient tests go through them."""
    entries = [OpInfo(name, overloads=(name,), dtypes=dtypes, ref=ref or getattr(TF, name),
                      sample_inputs_func=sample_fn, error_inputs_func=errors, method=False,
                      **kw)]
    if inplace:
        entries.append(OpInfo(
            name, "inplace", overloads=(f"{name}_",), dtypes=dtypes, method=False,
            op=_on_clone(getattr(tp, f"{name}_")),
            ref=_on_clone(getattr(torch.ops.aten, f"{name}_")), supports_gradgrad=False,
            sample_inputs_func=inplace_samples or sample_fn, **kw))
    return entries


_HALF_TOL = {tp.float16: (4e-3, 4e-3), tp.bfloat16: (2e-2, 2e-2)}

ACTIVATIONS = [entry for entries in [
    _act("relu6", with_args(), dtypes=FLOATING + INTEGRAL, inplace=False, errors=None),
    # (torch refuses the backward of leaky_relu_ with a negative slope.)
    _act("leaky_relu", samples(((), {}), ((0.2,), {}), ((-1.5,), {})),
         inplace_samples=samples(((), {}), ((0.2,), {}))),
    _act("elu", samples(((), {}), ((0.5,), {}), ((1.5, 2.0, 0.5), {})), ref=torch._C._nn.elu),
    _act("selu", with_args(), ref=TF.selu),
    _act("celu", samples(((), {}), ((0.5,), {}), ((2.0,), {})), ref=TF.celu),
    # (torch's vectorized float32 gelu gives nan at inf, its float64 gives inf: no inf here.)
    _act("gelu", samples(((), {}), ((), {"approximate": "tanh"}), edges=EDGES[:11] + EDGES[13:]),
         errors=errors_gelu,
         tolerances=_HALF_TOL),
    _act("silu", with_args()),
    _act("mish", with_args(), tolerances=_HALF_TOL),
    _act("softplus", samples(((), {}), ((2.0, 5.0), {}), ((0.5, 1.0), {})), inplace=False),
    # torch's softsign is composite (x / (1 + |x|)): integers divide to float.
    _act("softsign", with_args(), dtypes=FLOATING + INTEGRAL, inplace=False, errors=None),
    _act("hardtanh", samples(((), {}), ((-2.0, 0.5), {}), ((0, 6), {})), dtypes=SIGNED,
         errors=errors_hardtanh),
    _act("hardsigmoid", with_args()),
    _act("hardswish", with_args()),
    _act("threshold", samples(((0.5, -2.0), {}), ((-1, 7), {})), dtypes=SIGNED, errors=None,
         ref=torch.threshold),
    # (negative lambd shrinks nothing; torch accepts it too)
    _act("hardshrink", samples(((), {}), ((1.5,), {}), ((-1.0,), {}), ((), {"lambd": 3})),
         inplace=False, ref=torch.hardshrink),
] for entry in entries]


# ---- gelu's and silu's backward ops --------------------------------------------------
def backward_samples(edges=EDGES, **kwargs):
    """(grad_output, self, **kwargs): the unary samples (and edge values) as `self`, a
    grad_output of the same shape and dtype, contiguous, and once a half-type grad_output
    with a float32 self (the result promotes). PyTorch's CPU gelu_backward cannot
    broadcast (oneDNN refuses), so the shapes match."""
    def gen(op, device, dtype, requires_grad):
        rng = rng_for(op.full_name, dtype, "grad_output")
        grad = requires_grad and dtype in (tp.float32, tp.float64)
        for s in sample_inputs_unary(op, device, dtype, requires_grad, low=-5, high=5,
                                     extra_values=edges):
            g = make_tensor(tuple(s.input.shape), dtype, device, rng=rng, requires_grad=grad)
            yield S(g, (s.input,), dict(kwargs), f"{s.name} {kwargs}", s.meta, s.grad)
        if dtype is tp.float32:
            yield S(make_tensor((3, 4), tp.float16, device, rng=rng),
                    (make_tensor((3, 4), dtype, device, rng=rng),), dict(kwargs),
                    "float16 grad_output, float32 self")
    return gen


def errors_activation_backward(op, device):
    yield E(S(_t((3,), tp.int64, device), (_t((3,), tp.int64, device),)), DTypeError,
            rf"{op.name}\(\): not implemented for int64 tensors \(argument 'self'", arg="self")
    yield E(S(_t((3,), device=device), (_t((4,), device=device),)), ShapeError,
            rf"{op.name}\(\): argument 'self' \(shape \[4\]\) is not broadcastable",
            arg="self")


def errors_gelu_backward(op, device):
    yield from errors_activation_backward(op, device)
    yield E(S(_t((3,), device=device), (_t((3,), device=device),), {"approximate": "fast"}),
            ArgumentError, r"gelu_backward\(\): argument 'approximate' must be 'none' or "
            r"'tanh', but got 'fast'", arg="approximate")


def errors_threshold_backward(op, device):
    yield E(S(_t((3,), device=device), (_t((4,), device=device), 0)), ShapeError,
            rf"{op.name}\(\): argument 'self' \(shape \[4\]\) is not broadcastable",
            arg="self")


def _torch_silu_backward(grad_output, self):
    """PyTorch's silu_backward has no derivative (its silu formula composes one under
    create_graph): when a gradient is asked for, the same value from differentiable ops."""
    if not (grad_output.requires_grad or self.requires_grad):
        return torch.ops.aten.silu_backward(grad_output, self)
    s = torch.sigmoid(self)
    return grad_output * s * (1 + self * (1 - s))


ACTIVATION_BACKWARDS = [
    # (no inf edges, as for gelu: torch's float32 and float64 kernels disagree there.)
    OpInfo("gelu_backward", overloads=("gelu_backward",), dtypes=FLOATING, method=False,
           ref=torch.ops.aten.gelu_backward,
           sample_inputs_func=backward_samples(edges=EDGES[:11] + EDGES[13:]),
           error_inputs_func=errors_gelu_backward, tolerances=_HALF_TOL),
    OpInfo("gelu_backward", "tanh", overloads=("gelu_backward",), dtypes=FLOATING,
           method=False, ref=torch.ops.aten.gelu_backward,
           sample_inputs_func=backward_samples(edges=EDGES[:11] + EDGES[13:],
                                               approximate="tanh"),
           tolerances=_HALF_TOL),
    # relu's backward (threshold 0): NaN in self keeps its gradient, -0.0 drops it.
    OpInfo("threshold_backward", overloads=("threshold_backward",), dtypes=SIGNED,
           method=False, ref=torch.ops.aten.threshold_backward,
           sample_inputs_func=backward_samples(threshold=0),
           error_inputs_func=errors_threshold_backward),
    OpInfo("threshold_backward", "1.5", overloads=("threshold_backward",), dtypes=FLOATING,
           method=False, ref=torch.ops.aten.threshold_backward,
           sample_inputs_func=backward_samples(threshold=1.5)),
    OpInfo("silu_backward", overloads=("silu_backward",), dtypes=FLOATING, method=False,
           ref=_torch_silu_backward, sample_inputs_func=backward_samples(),
           error_inputs_func=errors_activation_backward, tolerances=_HALF_TOL),
]


# ---- glu and prelu: shapes matter ---------------------------------------------------
def _glu_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad
    for shape, dim, layout in (((3, 4), -1, "contiguous"), ((4, 3), 0, "transposed"),
                               ((2, 6, 2), 1, "strided"), ((0, 2), 1, "contiguous"),
                               ((2,), 0, "contiguous")):
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad),
                (dim,), name=f"{list(shape)} dim={dim} {layout}")


def errors_glu(op, device):
    yield E(S(_t((3, 5), device=device), (1,)), ShapeError,
            r"glu\(\): halving dimension must be even, but dimension 1", arg="dim")
    yield E(S(_t((3, 4), device=device), (2,)), DimError, r"glu\(\): Dimension out of range",
            arg="dim")
    yield E(S(_t((), device=device), (0,)), DimError, r"glu\(\): argument 'self' is 0-dim",
            arg="self")


def _prelu_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad

    def t(shape, layout="contiguous", low=None, high=None):
        return make_tensor(shape, dtype, device, rng=rng, layout=layout, low=low, high=high,
                           requires_grad=grad)
    for shape, wshape, layout in (((2, 3, 4), (3,), "contiguous"), ((2, 3), (3,), "transposed"),
                                  ((2, 3, 4, 2), (1,), "strided"), ((4,), (1,), "contiguous"),
                                  ((), (1,), "contiguous"), ((0, 3), (3,), "contiguous"),
                                  ((2, 3), (), "contiguous")):
        yield S(t(shape, layout), (t(wshape, low=0.05, high=0.5),),
                name=f"{list(shape)} weight {list(wshape)} {layout}")


def errors_prelu(op, device):
    yield E(S(_t((2, 3), device=device), (_t((2,), device=device),)), ShapeError,
            r"prelu\(\): argument 'weight' has 2 values, but 'self' \(shape \[2, 3\]\) has 3 "
            "channels", arg="weight")
    yield E(S(_t((4,), device=device), (_t((4,), device=device),)), ShapeError,
            r"prelu\(\): argument 'weight' has 4 values, but 'self' \(shape \[4\]\) has 1 "
            "channels", arg="weight")
    yield E(S(_t((2, 3), device=device), (_t((3,), tp.float64, device),)), DTypeError,
            r"prelu\(\): argument 'weight' must have the dtype of 'self'", arg="weight")


SHAPED = [
    OpInfo("glu", overloads=("glu",), dtypes=FLOATING, ref=TF.glu, method=False,
           sample_inputs_func=_glu_samples, error_inputs_func=errors_glu),
    OpInfo("prelu", overloads=("prelu",), dtypes=FLOATING, ref=TF.prelu, method=False,
           sample_inputs_func=_prelu_samples, error_inputs_func=errors_prelu),
]

op_db = ACTIVATIONS + ACTIVATION_BACKWARDS + SHAPED
