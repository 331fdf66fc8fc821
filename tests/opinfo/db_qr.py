"""Database entries: QR, Householder reflections and least squares (linalg_qr, qr, geqrf,
linalg_householder_product, orgqr, ormqr, linalg_lstsq).

QR's gauge: LAPACK's QR is unique once geqrf has chosen its reflectors (R's diagonal
keeps the signs geqrf leaves), and NumPy, which TensorPlay calls, and PyTorch both run
geqrf and orgqr, so Q and R compare directly, with no gauge-invariant function between.
"""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, LinAlgError, ShapeError
from opinfo.core import ErrorInput as E, make_tensor, OpInfo, rng_for, SampleInput as S
from opinfo.db_linalg import LAPACK_DTYPES, LAPACK_TOL, LAYOUTS
from opinfo.reduction_common import grad_for, t_

QR_SHAPES = [(3, 3), (5, 3), (3, 5), (2, 4, 3), (2, 3, 4), (1, 2, 2), (0, 3, 3), (3, 0),
             (0, 2)]


def _differentiable(shape, complete):
    """linalg_qr has no derivative for mode 'r', nor for the complete QR of a tall matrix
    (tests/test_linalg_qr.py checks PyTorch's errors for both)."""
    return not complete or shape[-2] <= shape[-1]


def _linalg_qr_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for k, shape in enumerate(QR_SHAPES):
        for kwargs in ({}, {"mode": "complete"}, {"mode": "r"}):
            mode = kwargs.get("mode", "reduced")
            if grad and (mode == "r" or not _differentiable(shape, mode == "complete")):
                continue
            A = make_tensor(shape, dtype, device, rng=rng, layout=LAYOUTS[k % 3],
                            requires_grad=grad)
            yield S(A, (), kwargs, name=f"{list(shape)} {kwargs}")


def _qr_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for k, shape in enumerate(QR_SHAPES):
        for some in (True, False):
            if grad and not _differentiable(shape, not some):
                continue
            A = make_tensor(shape, dtype, device, rng=rng, layout=LAYOUTS[k % 3],
                            requires_grad=grad)
            yield S(A, (some,), name=f"{list(shape)} some={some}")


def _geqrf_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for k, shape in enumerate(QR_SHAPES):
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=LAYOUTS[k % 3]),
                name=str(list(shape)))


def _errors_qr(op, device, arg="A"):
    yield E(S(t_((3,), device=device)), ShapeError, rf"{op.name}\(\): the input tensor "
            rf"'{arg}' must have at least 2 dimensions", arg=arg)
    yield E(S(t_((3, 3), tp.int64, device=device)), DTypeError, r"expected a floating point "
            rf"tensor as input \('{arg}'\), but got int64", arg=arg)
    if op.name == "linalg_qr":
        yield E(S(t_((3, 3), device=device), (), {"mode": "full"}), ArgumentError,
                r"linalg_qr\(\): received unrecognized 'mode' 'full'", arg="mode")


# ---- the Householder products ----------------------------------------------------------
def _compact(shape, dtype, device, rng, layout):
    """geqrf's factorization of a random matrix (the reflectors and taus QR makes), laid
    out as `layout` says."""
    x = make_tensor(shape, dtype, device, rng=rng)
    a, tau = tp.geqrf(x)
    if layout == "contiguous":
        a = a.contiguous()
    return a.detach(), tau.detach()


def _householder_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    # (input's shape, how many reflectors)
    cases = [((5, 3), 3), ((5, 3), 2), ((4, 4), 4), ((4, 4), 3), ((2, 4, 3), 3),
             ((1, 3, 2), 1), ((3, 0), 0), ((3, 3), 0), ((0, 4, 3), 2)]
    for k, (shape, count) in enumerate(cases):
        a, tau = _compact(shape, dtype, device, rng, LAYOUTS[k % 2])
        # (a tensor of its own: narrowed to its full length it would stay a view of
        # geqrf's tau, and a view's in-place write regenerates it from that base, which
        # PyTorch's twin, a fresh tensor, does not have; fuzz seed 9201346)
        tau = tau.narrow(-1, 0, count).clone()
        yield S(a.requires_grad_(grad), (tau.requires_grad_(grad),),
                name=f"geqrf of {list(shape)}, {count} reflectors")
    # Any input and tau (not a QR's): the products are defined for them too.
    a = make_tensor((2, 4, 3), dtype, device, rng=rng, layout="strided", requires_grad=grad)
    tau = make_tensor((2, 2), dtype, device, rng=rng, low=-1, high=1, layout="strided",
                      requires_grad=grad)
    yield S(a, (tau,), name="random [2, 4, 3], random tau")


def _errors_householder(op, device, names=("input", "tau")):
    x, tau = names
    name = op.name

    def e(a, t, error, regex, arg):
        return E(S(a, (t,)), error, rf"{name}\(\): " + regex, arg=arg)
    yield e(t_((4,), device=device), t_((3,), device=device), ShapeError,
            rf"'{x}' must have at least 2 dimensions", x)
    yield e(t_((3, 4), device=device), t_((3,), device=device), ShapeError,
            rf"'{x}'.shape\[-2\] must be greater than or equal to '{x}'.shape\[-1\]", x)
    yield e(t_((4, 3), device=device), t_((4,), device=device), ShapeError,
            rf"'{x}'.shape\[-1\] must be greater than or equal to '{tau}'.shape\[-1\]", tau)
    yield e(t_((4, 3), device=device), t_((1, 3), device=device), ShapeError,
            rf"expected '{tau}' to have one dimension less than '{x}'", tau)
    yield e(t_((2, 4, 3), device=device), t_((3, 3), device=device), ShapeError,
            rf"expected the batch dimensions of '{tau}' to be equal", tau)
    yield e(t_((4, 3), device=device), t_((3,), tp.float64, device=device), DTypeError,
            rf"expected '{x}' and '{tau}' to have the same dtype", tau)
    yield e(t_((4, 3), tp.int64, device=device), t_((3,), tp.int64, device=device),
            DTypeError, rf"expected a floating point tensor as input \('{x}'\)", x)


def _ormqr_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    # (the factorized matrix's shape, C's shape, left)
    cases = [((5, 3), (5, 2), True), ((4, 3), (2, 4), False), ((2, 5, 3), (2, 5, 4), True),
             ((3, 4), (3, 2), True), ((2, 4, 4), (2, 3, 4), False), ((4, 3), (4, 1), True),
             ((0, 4, 3), (0, 4, 2), True)]
    for k, (shape, c_shape, left) in enumerate(cases):
        for transpose in (False, True):
            a, tau = _compact(shape, dtype, device, rng, LAYOUTS[k % 2])
            C = make_tensor(c_shape, dtype, device, rng=rng, layout=LAYOUTS[(k + 1) % 3],
                            requires_grad=grad)
            kwargs = {"left": left, "transpose": transpose}
            yield S(a.requires_grad_(grad), (tau.requires_grad_(grad), C), kwargs,
                    name=f"{list(shape)} {list(c_shape)} {kwargs}")


def _errors_ormqr(op, device):
    def e(a, tau, c, error, regex, arg, **kwargs):
        return E(S(a, (tau, c), kwargs), error, r"ormqr\(\): " + regex, arg=arg)
    yield e(t_((4,), device=device), t_((3,), device=device), t_((4, 2), device=device),
            ShapeError, r"'self' must have at least 2 dimensions", "self")
    yield e(t_((4, 3), device=device), t_((3,), device=device), t_((4,), device=device),
            ShapeError, r"'input3' must have at least 2 dimensions", "input3")
    yield e(t_((4, 3), device=device), t_((3,), device=device), t_((5, 2), device=device),
            ShapeError, r"'input3'.shape\[-2\] must be equal to 'self'.shape\[-2\]", "input3")
    yield e(t_((4, 3), device=device), t_((3,), device=device), t_((2, 5), device=device),
            ShapeError, r"'input3'.shape\[-1\] must be equal to 'self'.shape\[-2\]", "input3",
            left=False)
    yield e(t_((4, 3), device=device), t_((2,), device=device), t_((4, 2), device=device),
            ShapeError, r"'input2'.shape\[-1\] must be equal to min", "input2")
    yield e(t_((2, 4, 3), device=device), t_((2, 3), device=device),
            t_((3, 4, 2), device=device), ShapeError,
            r"expected the batch dimensions of 'input3' to be equal", "input3")
    yield e(t_((4, 3), device=device), t_((3,), device=device),
            t_((4, 2), tp.float64, device=device), DTypeError,
            r"expected 'self' and 'input3' to have the same dtype", "input3")


# ---- least squares ---------------------------------------------------------------------
DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _rank_deficient(shape, dtype, device, rng, requires_grad):
    """A tall matrix whose last column repeats its first (rank n - 1)."""
    x = make_tensor(shape, dtype, device, rng=rng)
    x = tp.cat([x.narrow(-1, 0, shape[-1] - 1), x.narrow(-1, 0, 1)], -1)
    return x.detach().requires_grad_(requires_grad)


def _lstsq_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    cases = [((5, 3), (5, 2), {})]
    cases += [(a, b, {"driver": d}) for a, b in (((5, 3), (5, 2)), ((3, 5), (3, 2)),
                                                 ((4, 4), (4, 1))) for d in DRIVERS]
    cases += [((2, 5, 3), (2, 5), {}),                         # a batch of vectors
              ((5, 3), (5,), {"driver": "gelsd"}),             # one vector
              ((2, 1, 5, 3), (1, 3, 5, 2), {"driver": "gelsd"}),  # batch dims broadcast
              ((1, 5, 3), (2, 5, 2), {"driver": "gels"}),
              ((1, 3, 5), (2, 3, 2), {"driver": "gelss"}),
              ((5, 3), (5, 2), {"rcond": 1e-3, "driver": "gelsy"}),
              ((0, 5, 3), (0, 5, 2), {"driver": "gelsd"}), ((5, 0), (5, 2), {"driver": "gelsd"}),
              ((0, 3), (0, 2), {"driver": "gelss"})]
    for k, (a, b, kwargs) in enumerate(cases):
        A = make_tensor(a, dtype, device, rng=rng, layout=LAYOUTS[k % 3], requires_grad=grad)
        B = make_tensor(b, dtype, device, rng=rng, layout=LAYOUTS[(k + 1) % 3],
                        requires_grad=grad)
        yield S(A, (B,), kwargs, name=f"{list(a)} {list(b)} {kwargs}")
    # Rank-deficient: the SVD drivers find rank n - 1 (an rcond well above the rounding in
    # both dtypes) and give no residuals, which the shape rule cannot know (meta=False);
    # pinv is not smooth there (grad=False for finite differences). Not gelsy: PyTorch
    # hands it an uninitialized pivot array, so its rank here changes from call to call
    # (tests/test_linalg_qr.py checks TensorPlay's gelsy against the mathematics).
    for driver in ("gelsd", "gelss"):
        A = _rank_deficient((5, 3), dtype, device, rng, grad)
        B = make_tensor((5, 2), dtype, device, rng=rng, requires_grad=grad)
        kwargs = {"rcond": 1e-4, "driver": driver}
        yield S(A, (B,), kwargs, name=f"rank-deficient [5, 3] {kwargs}", meta=False,
                grad=False)


def _errors_lstsq(op, device):
    def e(a, b, error, regex, arg, **kwargs):
        return E(S(a, (b,), kwargs), error, r"linalg_lstsq\(\): " + regex, arg=arg)
    yield e(t_((3,), device=device), t_((3,), device=device), ShapeError,
            r"the input tensor 'self' must have at least 2 dimensions", "self")
    yield e(t_((2, 5, 3), device=device), t_((5,), device=device), ShapeError,
            r"'self'.dim\(\) must be greater or equal to 'b'.dim\(\)", "b")
    yield e(t_((5, 3), device=device), t_((4, 2), device=device), ShapeError,
            r"'self'.size\(-2\) should match 'b'.size\(-2\)", "b")
    yield e(t_((4, 5, 3), device=device), t_((3, 5, 2), device=device), ShapeError,
            r"argument 'b' \(shape \[3\]\) is not broadcastable", "b")
    yield e(t_((5, 3), device=device), t_((5, 2), tp.float64, device=device), DTypeError,
            r"expected 'self' and 'b' to have the same dtype", "b")
    yield e(t_((5, 3), tp.int64, device=device), t_((5, 2), tp.int64, device=device),
            DTypeError, r"expected a floating point tensor as input \('self'\)", "self")
    yield e(t_((5, 3), device=device), t_((5, 2), device=device), ArgumentError,
            r"parameter 'driver' should be one of \(gels, gelsy, gelsd, gelss\)", "driver",
            driver="gelsx")
    # gels needs full rank: a zero column leaves R an exact zero on its diagonal
    a = make_tensor((2, 5, 3), tp.float64, device, rng=rng_for("lstsq", "gels"))
    a = a * tp.tensor([1.0, 0.0, 1.0], dtype=tp.float64, device=device)
    a = tp.stack([make_tensor((5, 3), tp.float64, device, rng=rng_for("lstsq", 1)), a[1]])
    yield E(S(a, (t_((2, 5, 2), tp.float64, device=device),), {"driver": "gels"}),
            LinAlgError, r"linalg_lstsq\(\): \(Batch element 1\): The least squares solution "
            r"could not be computed because the input matrix does not have full rank "
            r"\(error code: 2\)", meta=False)


op_db = [
    OpInfo("linalg_qr", op=tp.linalg.qr, ref=torch.linalg.qr, overloads=("linalg_qr",),
           dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL, sample_inputs_func=_linalg_qr_samples,
           error_inputs_func=_errors_qr),
    OpInfo("qr", overloads=("qr",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=_qr_samples,
           error_inputs_func=lambda op, device: _errors_qr(op, device, "self")),
    # No derivative in PyTorch either (a backward through geqrf raises: test_linalg_qr.py)
    OpInfo("geqrf", overloads=("geqrf",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           supports_autograd=False, sample_inputs_func=_geqrf_samples,
           error_inputs_func=lambda op, device: _errors_qr(op, device, "self")),
    OpInfo("linalg_householder_product", op=tp.linalg.householder_product,
           ref=torch.linalg.householder_product, overloads=("linalg_householder_product",),
           dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=_householder_samples, error_inputs_func=_errors_householder),
    OpInfo("orgqr", overloads=("orgqr",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=_householder_samples,
           error_inputs_func=lambda op, device: _errors_householder(op, device,
                                                                    ("self", "input2"))),
    OpInfo("ormqr", overloads=("ormqr",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=_ormqr_samples, error_inputs_func=_errors_ormqr),
    # The singular values are not differentiable (PyTorch's output_differentiability),
    # so finite differences run on the grad_oriented entry below, as in PyTorch's OpInfo.
    OpInfo("linalg_lstsq", op=tp.linalg.lstsq, ref=torch.linalg.lstsq,
           overloads=("linalg_lstsq",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           gradcheck=False, sample_inputs_func=_lstsq_samples,
           error_inputs_func=_errors_lstsq),
    OpInfo("linalg_lstsq", "grad_oriented",
           op=lambda A, B, **kw: tuple(tp.linalg.lstsq(A, B, **kw)[:2]),
           ref=lambda A, B, **kw: tuple(torch.linalg.lstsq(A, B, **kw)[:2]), method=False,
           overloads=("linalg_lstsq",), dtypes=LAPACK_DTYPES, tolerances=LAPACK_TOL,
           sample_inputs_func=_lstsq_samples),
]
