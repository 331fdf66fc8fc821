"""Database entries for tp.special's Bessel and Airy functions, the Hurwitz zeta function
and the orthogonal polynomials (family `bessel`), called through `tp.special` and checked
against `torch.special`.

PyTorch has no derivative for the Bessel functions and the polynomials (their results do
not require grad: supports_autograd=False here; tests/test_special_bessel.py checks that
against PyTorch). zeta has one in `other` (q) only: its samples make only `other`
require grad.
"""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import DTypeError, ShapeError
from opinfo.core import ErrorInput, OpInfo, SampleInput, make_tensor, rng_for

E = ErrorInput
S = SampleInput

# PyTorch computes these in float32 and float64 only: integers and bool become float32,
# float16 and bfloat16 are refused.
DTYPES = (tp.bool, tp.uint8, tp.int8, tp.int16, tp.int32, tp.int64, tp.float32, tp.float64)

# The CPU kernels are SciPy's; PyTorch has its own port of Cephes, whose float64 results
# differ from SciPy's by up to ~3e-7 (relative) for J0, J1, Y0, Y1 near x = 5 and for Ai
# below x = -2.09. (The Triton kernels port PyTorch's code and agree to ~1e-15.)
SCIPY_TOL = {tp.float64: (1e-5, 1e-6)}
# float32: PyTorch evaluates in float32, SciPy in float64 (then rounded): a few ulps apart,
# more where exp(x) is large (I0, I1) or near a zero of the function.
FLOAT32_TOL = {tp.float32: (1e-5, 1e-5)}


def _t(shape, dtype=tp.float32, device="cpu"):
    return make_tensor(shape, dtype, device, rng=rng_for("errors", shape, dtype))


# ---- functions of one variable ---------------------------------------------------------
# (name, PyTorch's argument name, sampled range, edge values)
UNARY = (
    ("airy_ai", "x", -6.0, 6.0, (0.0, -2.09, 2.09, 9.0, -10.0, 104.0, float("nan"))),
    ("bessel_j0", "self", -8.0, 12.0, (0.0, 5.0, -5.0, 1e-6, 30.0, float("nan"))),
    ("bessel_j1", "self", -8.0, 12.0, (0.0, 5.0, -5.0, 30.0, float("nan"))),
    ("bessel_y0", "self", 0.1, 12.0, (0.0, -1.0, 5.0, 30.0, float("inf"), float("nan"))),
    ("bessel_y1", "self", 0.1, 12.0, (0.0, -1.0, 5.0, 30.0, float("inf"), float("nan"))),
    ("modified_bessel_i0", "self", -10.0, 10.0, (0.0, 8.0, -8.0, 50.0, float("nan"))),
    ("modified_bessel_i1", "self", -10.0, 10.0, (0.0, 8.0, -8.0, 50.0, float("nan"))),
    ("modified_bessel_k0", "self", 0.05, 6.0, (0.0, -1.0, 2.0, 50.0, float("inf"))),
    ("modified_bessel_k1", "self", 0.05, 6.0, (0.0, -1.0, 2.0, 50.0, float("inf"))),
    ("scaled_modified_bessel_k0", "x", 0.05, 6.0, (0.0, -1.0, 2.0, 50.0, float("inf"))),
    ("scaled_modified_bessel_k1", "x", 0.05, 6.0, (0.0, -1.0, 2.0, 50.0, float("inf"))),
    ("spherical_bessel_j0", "x", -10.0, 10.0, (0.0, 0.49, -0.5, float("inf"), float("-inf"),
                                               float("nan"))),
)
# 0-dim, non-contiguous (transposed, strided, expanded) and empty: few, since on `cuda`
# the interpreter runs every sample (with the edge values: 6 samples).
SHAPES = (((), "contiguous"), ((3, 4), "transposed"), ((2, 3, 4), "strided"),
          ((3, 4), "expanded"), ((0, 3), "contiguous"))


def _unary_samples(op, device, dtype, requires_grad, low, high, edges):
    rng = rng_for(op.full_name, dtype)
    for shape, layout in SHAPES:
        yield S(make_tensor(shape, dtype, device, rng=rng, low=low, high=high, layout=layout),
                name=f"{list(shape)} {layout}")
    if dtype.is_floating_point:
        yield S(tp.tensor(list(edges), dtype=dtype, device=device), name="edge values",
                grad=False)


def _unary_errors(arg):
    def errors(op, device):
        for half in (tp.float16, tp.bfloat16):
            yield E(S(_t((3,), half, device)), DTypeError,
                    rf"{op.name}\(\): not implemented for {half.name} tensors \(argument "
                    rf"'{arg}' is {half.name}; expected float32, float64", arg=arg)
    return errors


def _unary_entry(name, arg, low, high, edges):
    def samples(op, device, dtype, requires_grad):
        return _unary_samples(op, device, dtype, requires_grad, low, high, edges)
    tol = dict(FLOAT32_TOL)
    if name in ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1"):
        tol.update(SCIPY_TOL)
    return OpInfo(f"special_{name}", overloads=(f"special_{name}",),
                  op=getattr(tp.special, name), ref=getattr(torch.special, name),
                  dtypes=DTYPES, sample_inputs_func=samples,
                  error_inputs_func=_unary_errors(arg), supports_autograd=False,
                  tolerances=tol)


# ---- the polynomials --------------------------------------------------------------------
POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")


def _polynomial_samples(op, device, dtype, requires_grad):
    """x inside and outside [-1, 1] (and [0, 1], for the shifted ones), with the ends; n
    from -1 to 11 (float n is truncated: 2.7 is 2), past the degree where the Chebyshev
    polynomials switch to cos(n acos x); broadcasting, 0-dim, empty, non-contiguous; the
    Scalar overloads (x or n a Python number)."""
    rng = rng_for(op.full_name, dtype)

    def x(shape, layout="contiguous"):
        return make_tensor(shape, dtype, device, rng=rng, low=-1.5, high=1.5, layout=layout)

    def n(shape, layout="contiguous"):
        return make_tensor(shape, dtype, device, rng=rng, low=-1, high=12, layout=layout)

    yield S(x((3, 4)), (n((3, 4)),), name="same shape")
    yield S(x((3, 4), "transposed"), (n((4,), "strided"),), name="broadcast, non-contiguous")
    yield S(x((2, 1)), (n(()),), name="0-dim n")
    yield S(x((0, 3)), (n((3,)),), name="empty")
    if dtype.is_floating_point:
        ends = tp.tensor([-1.0, 0.0, 0.5, 1.0, 2.0, -0.3], dtype=dtype, device=device)
        degrees = tp.tensor([[0.0], [1.0], [2.7], [7.0], [9.0], [-0.5], [30.0]], dtype=dtype,
                            device=device)
        yield S(ends, (degrees,), name="ends, truncated and large n", grad=False)
    # the n_scalar overload
    yield S(x((5,)), (3,), name="n a Python int (n_scalar)")
    yield S(x((5,)), (7.9,), name="n a Python float (n_scalar)")


def _x_scalar_samples(op, device, dtype, requires_grad):
    """The x_scalar overload, `f(number, n)`: the sample's input is n (see _swapped)."""
    rng = rng_for(op.full_name, dtype)
    for x in (0.25, 2, -1, 1.5):
        yield S(make_tensor((5,), dtype, device, rng=rng, low=-1, high=12), (x,),
                name=f"x = {x!r}")
    yield S(make_tensor((2, 3), dtype, device, rng=rng, low=-1, high=12, layout="transposed"),
            (0.5,), name="non-contiguous n")


def _swapped(fn):
    """fn(x, n) called as f(n, x): the generic tests want a tensor as the sample's input."""
    return lambda n, x: fn(x, n)


def _polynomial_errors(op, device):
    yield E(S(_t((3, 4), device=device), (_t((5,), device=device),)), ShapeError,
            rf"{op.name}\(\): argument 'n' \(shape \[5\]\) is not broadcastable", arg="n")
    yield E(S(_t((3,), tp.bfloat16, device), (_t((3,), tp.bfloat16, device),)), DTypeError,
            rf"{op.name}\(\): not implemented for bfloat16 tensors \(argument 'x' is "
            r"bfloat16; expected float32, float64", arg="x")
    yield E(S(_t((3,), tp.int64, device), (_t((3,), tp.float16, device),)), DTypeError,
            rf"{op.name}\(\): not implemented for float16 tensors \(argument 'n' is "
            r"float16; expected float32, float64", arg="n")
    yield E(S(_t((3,), tp.float16, device), (2,)), DTypeError,
            rf"{op.name}\(\): not implemented for float16 tensors \(argument 'x'", arg="x")


# float32 (also the result of integer inputs): the recurrence's rounding grows with n (a
# uint8 n of -1 is 255)
POLYNOMIAL_TOL = {d: (1e-5, 1e-4) for d in DTYPES if d is not tp.float64}


def _polynomial_entries(name):
    f, ref = getattr(tp.special, name), getattr(torch.special, name)
    return [
        OpInfo(f"special_{name}", overloads=(f"special_{name}", f"special_{name}.n_scalar"),
               op=f, ref=ref, dtypes=DTYPES, sample_inputs_func=_polynomial_samples,
               error_inputs_func=_polynomial_errors, supports_autograd=False,
               tolerances=POLYNOMIAL_TOL),
        OpInfo(f"special_{name}", "x_scalar", overloads=(f"special_{name}.x_scalar",),
               op=_swapped(f), ref=_swapped(ref), method=False, dtypes=DTYPES,
               sample_inputs_func=_x_scalar_samples, supports_autograd=False,
               tolerances=POLYNOMIAL_TOL),
    ]


# ---- zeta -------------------------------------------------------------------------------
def _zeta_samples(op, device, dtype, requires_grad):
    """x in (1, 5), q in (0.5, 4): the series converges and q is away from the poles at
    q = 0, -1, ...; the domain's edges (x == 1, x < 1, q a non-positive integer, q < 0
    with a non-integer x); the Scalar overloads. Only q (`other`) requires grad: PyTorch
    has no derivative in x."""
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_floating_point

    def x(shape, layout="contiguous"):
        return make_tensor(shape, dtype, device, rng=rng, low=1.2 if dtype.is_floating_point
                           else 2, high=5, layout=layout)

    def q(shape, layout="contiguous"):
        return make_tensor(shape, dtype, device, rng=rng, low=0.5 if dtype.is_floating_point
                           else 1, high=4, layout=layout, requires_grad=grad)

    yield S(x((3, 4)), (q((3, 4)),), name="same shape")
    yield S(x((3, 4), "transposed"), (q((4,), "strided"),), name="broadcast, non-contiguous")
    yield S(x(()), (q((2, 3)),), name="0-dim self")
    yield S(x((0, 3)), (q((3,)),), name="empty")
    if dtype.is_floating_point:
        xs = tp.tensor([1.0, 0.5, 2.0, 2.5, 3.0, 2.0], dtype=dtype, device=device)
        qs = tp.tensor([1.0, 1.0, 0.0, -1.5, -1.5, -2.0], dtype=dtype, device=device)
        yield S(xs, (qs,), name="edges of the domain", grad=False)
    yield S(x((4,)), (1.5,), name="other a Python float (other_scalar)")
    yield S(x((4,)), (2,), name="other a Python int (other_scalar)")


def _zeta_self_scalar_samples(op, device, dtype, requires_grad):
    """`zeta(number, other)`: the sample's input is `other` (see _swapped), which
    requires grad."""
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_floating_point
    low = 0.5 if dtype.is_floating_point else 1
    for x in (3, 2.5):
        yield S(make_tensor((4,), dtype, device, rng=rng, low=low, high=4, requires_grad=grad),
                (x,), name=f"self = {x!r}")
    yield S(make_tensor((2, 3), dtype, device, rng=rng, low=low, high=4, layout="transposed",
                        requires_grad=grad), (1.5,), name="non-contiguous other")


def _zeta_errors(op, device):
    yield E(S(_t((3, 4), device=device), (_t((5,), device=device),)), ShapeError,
            r"special_zeta\(\): argument 'other' \(shape \[5\]\) is not broadcastable",
            arg="other")
    yield E(S(_t((3,), tp.float16, device), (_t((3,), tp.float16, device),)), DTypeError,
            r"special_zeta\(\): not implemented for float16 tensors \(argument 'self' is "
            r"float16; expected float32, float64", arg="self")


ZETA = [
    OpInfo("special_zeta", overloads=("special_zeta", "special_zeta.other_scalar"),
           op=tp.special.zeta, ref=torch.special.zeta, dtypes=DTYPES,
           sample_inputs_func=_zeta_samples, error_inputs_func=_zeta_errors),
    OpInfo("special_zeta", "self_scalar", overloads=("special_zeta.self_scalar",),
           op=_swapped(tp.special.zeta), ref=_swapped(torch.special.zeta), method=False,
           dtypes=DTYPES, sample_inputs_func=_zeta_self_scalar_samples),
]

op_db = [_unary_entry(*entry) for entry in UNARY] + \
    [e for name in POLYNOMIALS for e in _polynomial_entries(name)] + ZETA
