"""Database entries for the special functions (family `special`): the gamma family
(lgamma, digamma, polygamma, mvlgamma, igamma, igammac), erfinv, the modified Bessel
functions (i0, special_i0e, special_i1, special_i1e) and the torch.special functions
erfcx, ndtr, ndtri, log_ndtr, entr and xlog1py."""
from __future__ import annotations

from functools import partial

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.core import (
    ALL_DTYPES, FLOATING, INTEGRAL, ErrorInput, OpInfo, SampleInput, make_tensor, rng_for,
)
from opinfo.db_pointwise_math import errors_inplace_int
from opinfo.samples import sample_inputs_binary, sample_inputs_scalar, sample_inputs_unary

E = ErrorInput
S = SampleInput
INF, NAN = float("inf"), float("nan")
# PyTorch's CPU kernels of erfcx, ndtri and log_ndtr take no half types.
FLOAT_NO_HALF = (tp.bool,) + INTEGRAL + (tp.float32, tp.float64)


def _t(shape, dtype=tp.float32, device="cpu"):
    return make_tensor(shape, dtype, device, rng=rng_for("errors", shape, dtype))


def errors_half(op, device):
    yield E(S(_t((3,), tp.float16, device)), DTypeError,
            rf"{op.name}\(\): not implemented for float16 tensors \(argument 'self' is "
            r"float16; expected float32, float64 or an integer tensor\)", arg="self")


# ---- unary float functions -------------------------------------------------------------
# (name, in-place form, dtypes, low, high, edge values, error inputs): the sampled domain
# keeps gradients finite; the edge values (poles, the ends of the domain, inf, nan) are
# compared with PyTorch, not differentiated.
UNARY_FUNCTIONS = (
    ("lgamma", "lgamma_", ALL_DTYPES, 0.1, 6,
     (0.0, -0.0, 1.0, 2.0, -1.0, -2.5, -0.5, INF, -INF, NAN, 1e-30, 200.0), errors_inplace_int),
    # (not at the poles -1, -2, ...: PyTorch's gradient there, trigamma, is a rounding
    # error of sin(pi x), finite, where SciPy's is inf)
    ("digamma", "digamma_", ALL_DTYPES, 0.1, 6,
     (0.0, -0.0, 1.0, -2.5, -0.5, INF, NAN, 1e-30, 200.0), errors_inplace_int),
    ("erfinv", "erfinv_", ALL_DTYPES, -0.9, 0.9,
     (0.0, -0.0, 1.0, -1.0, 0.5, -0.999, 1.5, -2.0, INF, NAN), errors_inplace_int),
    ("i0", "i0_", ALL_DTYPES, None, None,
     (0.0, -0.0, 1e-20, 8.0, -8.0, 30.0, 100.0, INF, -INF, NAN), errors_inplace_int),
    ("special_i0e", None, ALL_DTYPES, None, None,
     (0.0, 1e-20, 8.0, -8.0, 30.0, 1e4, INF, -INF, NAN), None),
    ("special_i1", None, ALL_DTYPES, None, None,
     (0.0, -0.0, 1e-20, 8.0, -8.0, 30.0, INF, -INF, NAN), None),
    ("special_i1e", None, ALL_DTYPES, None, None,
     (0.0, 1e-20, 8.0, -8.0, 30.0, 1e4, INF, -INF, NAN), None),
    ("special_erfcx", None, FLOAT_NO_HALF, -2, 5,
     (0.0, -0.0, 1e-10, -5.0, 10.0, 30.0, 1e5, -30.0, INF, -INF, NAN), errors_half),
    ("special_ndtri", None, FLOAT_NO_HALF, 0.05, 0.95,
     (0.0, 1.0, 0.5, 1e-10, 1e-300, 0.99, -0.5, 1.5, NAN), errors_half),
    ("special_log_ndtr", None, FLOAT_NO_HALF, -5, 5,
     (0.0, -1.0, -1.5, -10.0, -40.0, 10.0, 40.0, INF, -INF, NAN), errors_half),
    ("special_entr", None, ALL_DTYPES, 0.1, 5,
     (0.0, -0.0, -1.0, 1.0, INF, -INF, NAN), None),
    ("special_ndtr", None, ALL_DTYPES, None, None,
     (0.0, -1.0, 1.0, -10.0, 10.0, INF, -INF, NAN), None),
)


def _ref(name):
    """torch.special.x for special_x, torch.x otherwise."""
    return f"special.{name.removeprefix('special_')}" if name.startswith("special_") else name


def _unary_samples(low, high, edges):
    """sample_inputs_unary on [low, high); integers on [0, 2) where that range holds
    fewer than two of them (ndtri's (0, 1))."""
    def samples(op, device, dtype, requires_grad):
        lo, hi = low, high
        if not dtype.is_floating_point and lo is not None and hi - lo < 2:
            lo, hi = 0, 2
        yield from sample_inputs_unary(op, device, dtype, requires_grad, low=lo, high=hi,
                                       extra_values=edges)
    return samples


UNARY = [
    OpInfo(name, overloads=(name,) + ((inplace,) if inplace else ()), inplace=inplace,
           ref=_ref(name), dtypes=dtypes, sample_inputs_func=_unary_samples(low, high, edges),
           error_inputs_func=errors)
    for name, inplace, dtypes, low, high, edges, errors in UNARY_FUNCTIONS
]


# ---- polygamma(n, self) and mvlgamma(self, p) ---------------------------------------
def _polygamma_samples(op, device, dtype, requires_grad):
    """polygamma's order n comes first: the samples hold (self, n), op swaps them."""
    for s in sample_inputs_unary(op, device, dtype, requires_grad, low=0.5, high=5,
                                 extra_values=(0.0, -0.0, 1.0, -1.5, INF, -INF, NAN)):
        yield S(s.input, (1,), name=f"{s.name} n=1", grad=s.grad)
    if dtype.is_floating_point:
        # trigamma's poles: PyTorch's reflection divides by sin(pi x) squared, the rounding
        # error of pi x at a negative integer (a huge finite value; inf at 0 and in float16)
        poles = tp.tensor([-1.0, -2.0, -3.0, 0.0], dtype=dtype, device=device)
        yield S(poles, (1,), name="poles n=1", grad=False)
    rng = rng_for(op.full_name, dtype, "orders")
    for n in (0, 2, 3):     # the other orders: one sample each, and their edge values
        x = make_tensor((3, 4), dtype, device, rng=rng, low=0.5, high=5,
                        requires_grad=requires_grad and dtype.is_floating_point)
        yield S(x, (n,), name=f"n={n}")
        if dtype.is_floating_point:
            edges = tp.tensor([0.0, -0.0, -1.5, INF, -INF, NAN], dtype=dtype, device=device)
            yield S(edges, (n,), name=f"edge values n={n}", grad=False)


def errors_polygamma(op, device):
    yield E(S(_t((3,), device=device), (-1,)), ArgumentError,
            r"polygamma\(\): argument 'n' must be a non-negative integer \(the order of the "
            r"derivative\), but got -1", arg="n")
    yield E(S(_t((3,), device=device), (-1,)), ArgumentError,
            r"polygamma_\(\): argument 'n' must be a non-negative integer", arg="n",
            inplace=True)
    yield E(S(_t((3,), tp.int64, device), (1,)), DTypeError,
            r"polygamma_\(\): result type float32 can't be cast to the desired output type "
            r"int64", arg="self", inplace=True)


def _mvlgamma_samples(op, device, dtype, requires_grad):
    """x > (p - 1) / 2, where the multivariate gamma function is defined."""
    for s in sample_inputs_unary(op, device, dtype, requires_grad, low=2, high=6):
        yield S(s.input, (2,), name=f"{s.name} p=2")
    rng = rng_for(op.full_name, dtype, "p")
    for p in (1, 3):
        x = make_tensor((3, 4), dtype, device, rng=rng, low=p, high=p + 4,
                        requires_grad=requires_grad and dtype.is_floating_point)
        yield S(x, (p,), name=f"p={p}")


def errors_mvlgamma(op, device):
    yield E(S(_t((3,), device=device), (0,)), ArgumentError,
            r"mvlgamma\(\): argument 'p' must be greater than or equal to 1, but got 0",
            arg="p", meta=False)
    yield E(S(_t((3,), tp.bool, device), (1,)), DTypeError,
            r"mvlgamma\(\): argument 'self' may not be a bool tensor", arg="self", meta=False)
    yield E(S(_t((3,), tp.int64, device), (1,)), DTypeError,
            r"mvlgamma_\(\): result type float32 can't be cast to the desired output type "
            r"int64", arg="self", inplace=True, meta=False)


GAMMA = [
    OpInfo("polygamma", overloads=("polygamma", "polygamma_"), inplace="polygamma_",
           op=lambda x, n: tp.polygamma(n, x), ref=lambda x, n: torch.polygamma(n, x),
           method=lambda x, n: x.polygamma(n), sample_inputs_func=_polygamma_samples,
           error_inputs_func=errors_polygamma),
    OpInfo("mvlgamma", overloads=("mvlgamma", "mvlgamma_"), inplace="mvlgamma_",
           dtypes=tuple(d for d in ALL_DTYPES if d is not tp.bool),
           sample_inputs_func=_mvlgamma_samples, error_inputs_func=errors_mvlgamma),
]


# ---- the incomplete gamma functions: a gradient for `other` only --------------------
def _igamma_samples(op, device, dtype, requires_grad):
    """P(a, x) for a > 0, x > 0. PyTorch has no derivative in a (self): only x (other)
    requires grad."""
    for s in sample_inputs_binary(op, device, dtype, requires_grad, low=0.5, high=4,
                                  rhs_low=0.1, rhs_high=5):
        yield S(s.input.detach(), s.args, s.kwargs, s.name)
    if dtype.is_floating_point:
        edges = tp.tensor([0.0, 1.0, 2.0, 0.5, INF, NAN, 3.0], dtype=dtype, device=device)
        x = tp.tensor([1.0, 0.0, INF, 1e-10, 1.0, 1.0, NAN], dtype=dtype, device=device)
        yield S(edges, (x,), name="edge values", grad=False)


def errors_igamma(op, device):
    yield E(S(_t((3,), tp.int64, device), (_t((3,), tp.int64, device),)), DTypeError,
            rf"{op.name}\(\): not implemented for int64 tensors \(argument 'self' is int64; "
            r"expected a floating point tensor\)", arg="self")
    yield E(S(_t((3, 4), device=device), (_t((5,), device=device),)), ShapeError,
            rf"{op.name}\(\): argument 'other' \(shape \[5\]\) is not broadcastable",
            arg="other")
    yield E(S(_t((3, 1), device=device), (_t((3, 4), device=device),)), ShapeError,
            rf"{op.inplace}\(\): output with shape \[3, 1\] doesn't match the broadcast shape",
            arg="self", inplace=True)


INCOMPLETE_GAMMA = [
    OpInfo(name, overloads=(name, f"{name}_"), inplace=f"{name}_", dtypes=FLOATING,
           sample_inputs_func=_igamma_samples, error_inputs_func=errors_igamma)
    for name in ("igamma", "igammac")
]


# ---- xlog1py: self * log1p(other), with a number on either side --------------------
def errors_xlog1py(op, device):
    yield E(S(_t((3, 4), device=device), (_t((5,), device=device),)), ShapeError,
            r"special_xlog1py\(\): argument 'other' \(shape \[5\]\) is not broadcastable",
            arg="other")


XLOG1PY = [
    # xlog1py(0, y) is 0 even where log1p(y) is -inf or nan: the samples hold zeros in self.
    OpInfo("special_xlog1py", overloads=("special_xlog1py",), ref="special.xlog1py",
           sample_inputs_func=partial(sample_inputs_binary, low=-1, high=2, rhs_low=-0.9,
                                      rhs_high=3.0),
           error_inputs_func=errors_xlog1py),
    OpInfo("special_xlog1py", "self_scalar", overloads=("special_xlog1py.self_scalar",),
           op=lambda x, number: tp.special_xlog1py(number, x),
           ref=lambda x, number: torch.special.xlog1py(number, x),
           sample_inputs_func=partial(sample_inputs_scalar, low=-0.9, high=3.0)),
    OpInfo("special_xlog1py", "other_scalar", overloads=("special_xlog1py.other_scalar",),
           op=lambda x, number: tp.special_xlog1py(x, number),
           ref=lambda x, number: torch.special.xlog1py(x, number),
           sample_inputs_func=partial(sample_inputs_scalar, nonnegative=True)),
]


# ---- torch.special names that call an op with other arguments (the rest are alias_of:,
# tested by tests/test_aliases.py) ----------------------------------------------------
def _round_samples(op, device, dtype, requires_grad):
    for s in sample_inputs_unary(op, device, dtype, requires_grad, low=-50, high=50,
                                 shapes=(((3, 4), "contiguous"), ((3, 4), "transposed"),
                                         ((), "contiguous"))):
        yield s
        yield S(s.input, (), {"decimals": 1}, f"{s.name} decimals=1")


def _log_softmax_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_floating_point
    yield S(make_tensor((3, 4), dtype, device, rng=rng, requires_grad=grad), (1,), name="dim=1")
    yield S(make_tensor((3, 4), dtype, device, rng=rng, layout="transposed",
                        requires_grad=grad), (0,), {"dtype": tp.float64}, "dim=0 float64")
    yield S(make_tensor((), dtype, device, rng=rng, requires_grad=grad), (0,), name="0-dim")


RENAMED = [
    OpInfo("special_round", overloads=("special_round",), ref="special.round",
           dtypes=FLOATING, sample_inputs_func=_round_samples),
    OpInfo("special_log_softmax", overloads=("special_log_softmax",),
           ref="special.log_softmax", dtypes=FLOATING,
           sample_inputs_func=_log_softmax_samples),
    OpInfo("special_xlogy", "self_scalar", overloads=("special_xlogy.self_scalar",),
           op=lambda x, number: tp.special_xlogy(number, x),
           ref=lambda x, number: torch.special.xlogy(number, x),
           sample_inputs_func=partial(sample_inputs_scalar, low=0.1, high=3.0)),
]

op_db = UNARY + GAMMA + INCOMPLETE_GAMMA + XLOG1PY + RENAMED
