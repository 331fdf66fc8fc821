"""Database entries: the scans (cumsum, cumprod), diff, cumulative_trapezoid."""
from __future__ import annotations
from functools import partial
import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError
from opinfo.core import (
    ALL_BUT_BOOL, ALL_DTYPES, COMPLEX, ErrorInput as E, FLOATING, make_tensor, OpInfo, rng_for,
    SampleInput as S,
)
from opinfo.reduction_common import grad_for, samples_dim, t_
from opinfo.samples import (
    _distinct_make, _errors_dim, _trapezoid_samples, _x, HALF_SUM_TOL, NUMERIC,
    sample_inputs_binary, sample_inputs_reduce_all, sample_inputs_unary, TOL,
)

# ---- scans -----------------------------------------------------------------------------
SCAN_CASES = [((3, 4), "contiguous", (0,)), ((3, 4), "transposed", (1,)),
              ((2, 3, 4), "strided", (-1,)), ((), "contiguous", (0,)), ((0, 3), "contiguous", (1,)),
              ((5,), "expanded", (0,))]


def _cumsum_samples(op, device, dtype, requires_grad):
    yield from samples_dim(op, device, dtype, requires_grad, SCAN_CASES)
    rng = rng_for(op.full_name, dtype, "dtype")
    # (a complex scan into a real dtype would drop the imaginary parts, with a warning)
    wide = tp.complex128 if dtype.is_complex else tp.float64
    yield S(make_tensor((3, 4), dtype, device, rng=rng), (1,), {"dtype": wide},
            name=f"dtype={wide.name}")


def _cumprod_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    yield from samples_dim(op, device, dtype, requires_grad, SCAN_CASES[:5])
    if dtype.is_differentiable:
        base = make_tensor((4, 5), tp.complex128 if dtype.is_complex else tp.float64, device,
                           rng=rng, low=0.5, high=1.5)
        for zeros, what in (([(0, 2)], "one zero"), ([(1, 1), (1, 3)], "two zeros"),
                            ([(2, 0)], "zero first"), ([(3, 4)], "zero last")):
            x = base.clone()
            for i, j in zeros:
                x[i, j] = 0.0
            yield S(x.to(dtype).requires_grad_(grad_for(dtype, requires_grad)), (1,), name=what)


def _cum_extreme_samples(op, device, dtype, requires_grad):
    yield from samples_dim(op, device, dtype, requires_grad, SCAN_CASES[:5], make=_distinct_make)
    if dtype.is_floating_point:
        x = tp.tensor([[2.0, 1.0, 1.0, float("nan"), 0.0, 3.0], [1.0, 3.0, 3.0, 2.0, 3.0, 0.5]],
                      dtype=dtype, device=device)
        yield S(x, (1,), name="ties and nan")


def _errors_cumsum_(op, device):
    yield E(S(t_((3,), device=device), (0,), {"dtype": tp.float64}), DTypeError,
            r"cumsum_\(\): argument 'dtype' \(float64\) must match", arg="dtype", inplace=True,
            torch_raises=False)


SCANS = [
    OpInfo("cumsum", overloads=("cumsum", "cumsum_"), inplace="cumsum_",
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=(tp.float32, tp.float64) + COMPLEX,
           sample_inputs_func=_cumsum_samples, error_inputs_func=_errors_cumsum_,
           tolerances=HALF_SUM_TOL),
    OpInfo("cumprod", overloads=("cumprod", "cumprod_"), inplace="cumprod_",
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=(tp.float32, tp.float64) + COMPLEX,
           sample_inputs_func=_cumprod_samples, tolerances=HALF_SUM_TOL),
    OpInfo("cummax", overloads=("cummax",), sample_inputs_func=_cum_extreme_samples,
           error_inputs_func=partial(_errors_dim, args_bad=(2,))),
    OpInfo("cummin", overloads=("cummin",), sample_inputs_func=_cum_extreme_samples),
]


# ---- diff, trapezoid ---------------------------------------------------------------------
def _diff_samples(op, device, dtype, requires_grad):
    x = _x(op, device, dtype, requires_grad, (3, 5), low=-5, high=5)
    yield S(x, name="n=1 last dim")
    yield S(_x(op, device, dtype, requires_grad, (4, 3), "transposed"), (2, 0),
            name="n=2 dim=0 transposed")
    yield S(_x(op, device, dtype, requires_grad, (6,)), (7,), name="n beyond the length")
    yield S(_x(op, device, dtype, requires_grad, (2, 3)), (0,), name="n=0")
    yield S(_x(op, device, dtype, requires_grad, (2, 3)), (1, 1),
            {"prepend": _x(op, device, dtype, requires_grad, (2, 1)),
             "append": _x(op, device, dtype, requires_grad, (2, 2))}, name="prepend, append")


def _errors_diff(op, device):
    yield E(S(t_((), device=device)), ShapeError,
            r"diff\(\): expects input to be at least one-dimensional", arg="self")


MOVED_DB_VIEWS_INPLACE_TMP = [
    OpInfo("diff", overloads=("diff",), dtypes=ALL_DTYPES, sample_inputs_func=_diff_samples,
           error_inputs_func=_errors_diff, tolerances=TOL),
    OpInfo("cumulative_trapezoid", overloads=("cumulative_trapezoid.dx",
                                              "cumulative_trapezoid.x"),
           dtypes=NUMERIC, sample_inputs_func=_trapezoid_samples, tolerances=TOL),
]

op_db = SCANS + MOVED_DB_VIEWS_INPLACE_TMP


# ---- logcumsumexp, gradient ------------------------------------------------------------------
def _logcumsumexp_samples(op, device, dtype, requires_grad):
    yield from samples_dim(op, device, dtype, requires_grad, SCAN_CASES)
    x = tp.tensor([[0.0, -float("inf"), 50.0, -50.0], [-float("inf")] * 4], dtype=dtype,
                  device=device)
    yield S(x, (1,), name="-inf and far apart", grad=False)
    if dtype.is_complex:    # the same, turned off the real axis
        yield S(x * (1 - 0.5j), (1,), name="-inf and far apart, complex", grad=False)


def _errors_logcumsumexp(op, device):
    yield E(S(t_((3,), tp.int64, device=device), (0,)), DTypeError,
            r"logcumsumexp\(\): expected a floating point or complex input", arg="self")
    yield E(S(t_((3,), device=device), (2,)), DimError,
            r"logcumsumexp\(\): Dimension out of range", arg="dim")


def _gradient_samples(op, device, dtype, requires_grad):
    def x(shape, layout="contiguous", key=""):
        return _x(op, device, dtype, requires_grad, shape, layout, key, low=-3, high=3)
    yield S(x((3, 4)), name="every dim")
    yield S(x((4, 5), "transposed"), (), {"spacing": 2.0, "dim": 1, "edge_order": 2},
            name="scalar spacing, dim, edge_order 2")
    yield S(x((3, 4, 3), "strided"), (), {"spacing": 0.5, "dim": [0, 2]},
            name="scalar spacing, dims")
    yield S(x((3, 4)), (), {"dim": [1]}, name="dims only")
    yield S(x((3, 4)), (), {"spacing": [2.0, 3], "edge_order": 2}, name="a spacing per dim")
    yield S(x((5, 3)), (), {"spacing": [0.5], "dim": [0]}, name="spacing list, dims")
    coords = tp.tensor([0.0, 1.0, 3.0, 7.0, 8.0], device=device)
    coords = coords.to(dtype) if dtype.is_floating_point else coords
    yield S(x((5, 3)), (), {"spacing": [coords], "dim": 0, "edge_order": 2},
            name="coordinates, edge_order 2")
    yield S(x((3, 5)), (), {"spacing": [coords], "dim": [1]}, name="coordinates, dims")
    yield S(x(()), name="0-dim: nothing")


def _errors_gradient(op, device):
    yield E(S(t_((3, 4), device=device), (), {"spacing": [1.0, 2.0, 3.0]}), ArgumentError,
            r"gradient\(\): expected spacing to be unspecified, a scalar, or a list of length "
            r"equal to 'self.dim\(\) = 2'", arg="spacing")
    yield E(S(t_((3, 4), device=device), (), {"spacing": [1.0, 2.0], "dim": [0]}),
            ArgumentError, r"gradient\(\): expected spacing to be unspecified, a scalar or it's "
            r"spacing and dim arguments to have the same length", arg="spacing")
    yield E(S(t_((3, 1), device=device)), ShapeError,
            r"gradient\(\): expected each dimension size to be at least edge_order\+1",
            arg="self")
    yield E(S(t_((3, 4), device=device), (), {"edge_order": 3}), ArgumentError,
            r"gradient\(\): only supports edge_order=1 and edge_order=2", arg="edge_order")
    yield E(S(t_((3, 4), tp.uint8, device=device)), DTypeError,
            r"gradient\(\): only supports dtypes float, double, long, int, short and int8",
            arg="self")


op_db += [
    OpInfo("logcumsumexp", overloads=("logcumsumexp",), dtypes=FLOATING + COMPLEX,
           grad_dtypes=(tp.float32, tp.float64) + COMPLEX,
           sample_inputs_func=_logcumsumexp_samples, error_inputs_func=_errors_logcumsumexp,
           tolerances=HALF_SUM_TOL),
    OpInfo("gradient", overloads=("gradient.scalarint", "gradient.scalararray",
                                  "gradient.array", "gradient.scalarrayint",
                                  "gradient.scalarrayarray", "gradient.tensorarrayint",
                                  "gradient.tensorarray"),
           dtypes=(tp.int8, tp.int16, tp.int32, tp.int64, tp.float32, tp.float64),
           sample_inputs_func=_gradient_samples, error_inputs_func=_errors_gradient,
           tolerances=TOL),
]
