"""Complex numbers in the reductions and products, against PyTorch.

- The dtype rules: sum, prod, cumsum and mean keep a complex dtype (integers still widen
  to int64); var, std and the norms give the real dtype of a complex input; a norm's
  dtype= is complex exactly when the input is.
- The gradients PyTorch's conjugate Wirtinger convention gives (z.grad = dL/dx + i dL/dy
  for a real loss L): a product's gradient holds the other factor's conjugate, prod and
  cumprod's hold conj(self) (with zeros too), a norm's the direction sgn(z).
- A complex matmul (64 x 64, both complex dtypes) and its gradients.
- The reductions, sorts and searches PyTorch refuses for complex tensors raise a typed
  DTypeError naming the op, whose message holds PyTorch's own (read from PyTorch here),
  on the cpu and on the meta device alike.

The generic OpInfo tests (tests/test_ops.py) run the same ops' complex samples; this file
holds what they cannot say: the rules, the larger products, the refusals' wording.
"""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import DTypeError

COMPLEX = [(tp.complex64, torch.complex64), (tp.complex128, torch.complex128)]
TOL = {tp.complex64: dict(rtol=2e-5, atol=2e-5), tp.complex128: dict(rtol=1e-10, atol=1e-10)}


def _values(shape, np_dtype, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return (scale * (rng.standard_normal(shape) + 1j * rng.standard_normal(shape))).astype(
        np_dtype)


def _pair(shape, dtype, seed=0, scale=1.0, requires_grad=False):
    """The same complex values as a TensorPlay and a PyTorch leaf."""
    a = _values(shape, dtype.np, seed, scale)
    return (tp.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _close(t, ref, **tol):
    assert str(t.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], (t.dtype, ref.dtype)
    np.testing.assert_allclose(t.detach().numpy(), ref.detach().resolve_conj().numpy(), **tol)


def _backward_real_loss(out_tp, out_torch, seed=1):
    """A real loss of a (complex or real) output: sum(weights * parts), the same weights
    on both sides; the parts of a complex output through view_as_real."""
    rng = np.random.default_rng(seed)
    if out_torch.is_complex():
        w = rng.standard_normal(tuple(out_torch.shape) + (2,))
        (tp.view_as_real(out_tp) * tp.tensor(w)).sum().backward()
        (torch.view_as_real(out_torch) * torch.tensor(w)).sum().backward()
    else:
        w = rng.standard_normal(tuple(out_torch.shape))
        (out_tp * tp.tensor(w, dtype=out_tp.dtype)).sum().backward()
        (out_torch * torch.tensor(w, dtype=out_torch.dtype)).sum().backward()


# ---- dtype rules ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, tdtype", COMPLEX)
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "cumsum", "cumprod"])
def test_complex_stays_complex(name, dtype, tdtype):
    x, xt = _pair((3, 4), dtype)
    args = (1,) if name.startswith("cum") else ()
    out, ref = getattr(x, name)(*args), getattr(xt, name)(*args)
    assert out.dtype is dtype
    _close(out, ref, **TOL[dtype])


def test_integers_widen_and_take_a_complex_dtype():
    x, xt = tp.tensor([1, 2, 3]), torch.tensor([1, 2, 3])
    assert x.sum().dtype is tp.int64 and x.prod().dtype is tp.int64
    for name in ("sum", "prod", "mean"):
        out = getattr(x, name)(dtype=tp.complex64)
        _close(out, getattr(xt, name)(dtype=torch.complex64))
    _close(x.cumsum(0, dtype=tp.complex128), xt.cumsum(0, dtype=torch.complex128))


def test_mean_of_integers_names_both_kinds_it_takes():
    with pytest.raises(DTypeError, match=r"mean\(\): .*floating point or complex dtype"):
        tp.tensor([1, 2]).mean()


def test_real_input_summed_as_complex_gets_a_real_gradient():
    """cumsum(x, dtype=complex128) of a real x: x's gradient is the real part of the
    complex one (PyTorch's handle_r_to_c), in x's dtype."""
    a = np.random.default_rng(3).standard_normal((3, 4))
    x, xt = tp.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    _backward_real_loss(x.cumsum(1, dtype=tp.complex128) * (1 - 2j),
                        xt.cumsum(1, dtype=torch.complex128) * (1 - 2j))
    assert x.grad.dtype is tp.float64
    _close(x.grad, xt.grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype, tdtype", COMPLEX)
@pytest.mark.parametrize("name, args", [("var", ()), ("std", (1,)), ("var_mean", (0,))])
def test_spread_of_complex_numbers_is_real(name, args, dtype, tdtype):
    x, xt = _pair((3, 4), dtype, requires_grad=True)
    out, ref = getattr(tp, name)(x, *args), getattr(torch, name)(xt, *args)
    if isinstance(out, tuple):      # var_mean: (real var, complex mean)
        assert out[0].dtype is dtype.to_real() and out[1].dtype is dtype
        out, ref = out[0] + out[1], ref[0] + ref[1]
    else:
        assert out.dtype is dtype.to_real()
    _close(out, ref, **TOL[dtype])
    _backward_real_loss(out, ref)
    _close(x.grad, xt.grad, **TOL[dtype])


# ---- norms -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, tdtype", COMPLEX)
@pytest.mark.parametrize("ord, dim", [(2, None), (1, 1), (3, 0), (0.5, None),
                                      (float("inf"), 1), (float("-inf"), None)])
def test_vector_norm_of_complex_numbers(ord, dim, dtype, tdtype):
    """The norm of |z|: real, with the gradient sgn(z) * d norm / d|z| (PyTorch's
    norm_backward), at values with distinct magnitudes (no ties for the inf norms)."""
    x, xt = _pair((3, 4), dtype, seed=7, requires_grad=True)
    out = tp.linalg.vector_norm(x, ord, dim)
    ref = torch.linalg.vector_norm(xt, ord, dim)
    assert out.dtype is dtype.to_real()
    _close(out, ref, **TOL[dtype])
    _backward_real_loss(out, ref)
    _close(x.grad, xt.grad, **TOL[dtype])


def test_vector_norm_dtype_keeps_the_kind_of_the_input():
    x, xt = _pair((5,), tp.complex64)
    out = tp.linalg.vector_norm(x, dtype=tp.complex128)
    assert out.dtype is tp.float64
    _close(out, torch.linalg.vector_norm(xt, dtype=torch.complex128), rtol=1e-6)
    with pytest.raises(DTypeError, match=r"dtype should be complex for complex inputs") as e:
        tp.linalg.vector_norm(x, dtype=tp.float64)
    assert e.value.arg == "dtype"
    with pytest.raises(DTypeError, match=r"dtype should be real for real inputs"):
        tp.linalg.vector_norm(x.real, dtype=tp.complex64)


@pytest.mark.parametrize("call", [
    lambda m, x: m.linalg.norm(x), lambda m, x: m.linalg.matrix_norm(x),
    lambda m, x: m.linalg.matrix_norm(x, 1), lambda m, x: x.norm(p=1, dim=0),
    lambda m, x: m.dist(x, x * 0.5),
])
def test_other_norms_of_complex_numbers(call):
    x, xt = _pair((3, 4), tp.complex128, seed=11, requires_grad=True)
    out, ref = call(tp, x), call(torch, xt)
    _close(out, ref, rtol=1e-10)
    _backward_real_loss(out, ref)
    _close(x.grad, xt.grad, rtol=1e-10, atol=1e-10)


# ---- products ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, tdtype", COMPLEX)
def test_complex_matmul_64(dtype, tdtype):
    a, at = _pair((64, 64), dtype, seed=2, requires_grad=True)
    b, bt = _pair((64, 64), dtype, seed=3, requires_grad=True)
    out, ref = a @ b, at @ bt
    tol = dict(rtol=1e-4, atol=1e-4) if dtype is tp.complex64 else dict(rtol=1e-11, atol=1e-11)
    _close(out, ref, **tol)
    _backward_real_loss(out, ref)
    _close(a.grad, at.grad, **tol)      # grad @ b^H
    _close(b.grad, bt.grad, **tol)      # a^H @ grad


@pytest.mark.parametrize("call", [
    lambda m, a, b: m.dot(a[0], b[0]), lambda m, a, b: m.vdot(a[0], b[0]),
    lambda m, a, b: m.mv(a, b[0]), lambda m, a, b: m.outer(a[0], b[1]),
    lambda m, a, b: m.einsum("ij,kj->ik", a, b), lambda m, a, b: m.linalg.vecdot(a, b),
    lambda m, a, b: m.addmm(a @ b.t(), a, b.t(), beta=0.5 - 1j, alpha=2 + 1j),
    lambda m, a, b: m.nn.functional.linear(a, b), lambda m, a, b: m.kron(a, b[:2]),
    lambda m, a, b: m.bmm(a[None], b.t()[None]), lambda m, a, b: m.trace(a[:, :3]),
])
def test_products_conjugate_the_other_factor(call):
    a, at = _pair((3, 4), tp.complex128, seed=4, requires_grad=True)
    b, bt = _pair((3, 4), tp.complex128, seed=5, requires_grad=True)
    out, ref = call(tp, a, b), call(torch, at, bt)
    _close(out, ref, rtol=1e-10, atol=1e-12)
    _backward_real_loss(out, ref)
    for x, xt in ((a, at), (b, bt)):
        if xt.grad is None:      # (trace reads a only)
            assert x.grad is None
        else:
            _close(x.grad, xt.grad, rtol=1e-10, atol=1e-12)


def test_real_factor_of_a_complex_product_gets_a_real_gradient():
    z, zt = _pair((3, 4), tp.complex64, requires_grad=True)
    w_values = np.random.default_rng(9).standard_normal((4, 2)).astype(np.float32)
    w, wt = tp.tensor(w_values, requires_grad=True), torch.tensor(w_values, requires_grad=True)
    out, ref = z @ w.to(tp.complex64), zt @ wt.to(torch.complex64)
    _backward_real_loss(out, ref)
    assert w.grad.dtype is tp.float32
    _close(w.grad, wt.grad, rtol=2e-5, atol=2e-5)
    _close(z.grad, zt.grad, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name, dim", [("prod", None), ("prod", 1), ("cumprod", 1)])
def test_products_with_zeros(name, dim):
    """prod and cumprod of complex numbers with zeros: the gradient is the conjugate of
    the product of the others (no division by zero)."""
    x, xt = _pair((2, 4), tp.complex128, seed=6)
    for t in (x, xt):
        t[0, 1] = 0
        t[1, 0] = 0
        t[1, 2] = 0
        t.requires_grad_(True)
    args = () if dim is None else (dim,)
    out, ref = getattr(x, name)(*args), getattr(xt, name)(*args)
    _close(out, ref, rtol=1e-12)
    _backward_real_loss(out, ref)
    _close(x.grad, xt.grad, rtol=1e-10, atol=1e-12)


def _written(m):
    x = m.zeros(3, 4, dtype=m.complex64)
    x[0] = 1 + 2j
    x[1, 1:3] = m.tensor([3 - 1j, 2j])
    x[:, 0] = m.tensor([1.0, 2.0, 3.0])      # real values into complex memory
    x[x.real == 0] += 0.5j
    return x


def test_complex_values_written_by_indexing():
    """x[0] = 1+2j and friends write complex values; the gradient flows to the written
    tensor and around the overwritten part."""
    _close(_written(tp), _written(torch))
    base, base_t = _pair((3, 4), tp.complex128, requires_grad=True)
    row, row_t = _pair((4,), tp.complex128, seed=8, requires_grad=True)
    y, yt = base.clone(), base_t.clone()
    y[1] = row
    yt[1] = row_t
    _backward_real_loss(y * (2 - 1j), yt * (2 - 1j))
    _close(base.grad, base_t.grad)
    _close(row.grad, row_t.grad)


# ---- refusals ---------------------------------------------------------------------------
def _idx(m):
    return m.tensor([[0, 1, 2, 0]])


REFUSED = {     # name: the call, made with tp and with torch on a complex [3, 4] x
    "max": lambda m, x: x.max(), "max.dim": lambda m, x: x.max(1),
    "min": lambda m, x: x.min(), "min.dim": lambda m, x: x.min(0),
    "amax": lambda m, x: x.amax(1), "amin": lambda m, x: x.amin(),
    "aminmax": lambda m, x: m.aminmax(x), "argmax": lambda m, x: x.argmax(),
    "argmin": lambda m, x: x.argmin(1),
    "sort": lambda m, x: x.sort(), "argsort": lambda m, x: x.argsort(),
    "msort": lambda m, x: m.msort(x), "topk": lambda m, x: x.topk(2),
    "median": lambda m, x: x.median(), "median.dim": lambda m, x: x.median(1),
    "nanmedian": lambda m, x: x.nanmedian(), "kthvalue": lambda m, x: x.kthvalue(2),
    "mode": lambda m, x: x.mode(), "cummax": lambda m, x: x.cummax(1),
    "cummin": lambda m, x: x.cummin(0),
    "nansum": lambda m, x: x.nansum(), "nanmean": lambda m, x: x.nanmean(1),
    "unique": lambda m, x: m.unique(x), "unique_consecutive": lambda m, x: m.unique_consecutive(x),
    "unique_dim": lambda m, x: m.unique(x, dim=0),
    "searchsorted": lambda m, x: m.searchsorted(x, x),
    "bucketize": lambda m, x: m.bucketize(x, x.real[0]),
    "bincount": lambda m, x: m.bincount(x[0]), "isin": lambda m, x: m.isin(x, x),
    "scatter_reduce.amax": lambda m, x: x.scatter_reduce(0, _idx(m), x[:1], "amax"),
    "index_reduce.amin": lambda m, x: x.index_reduce(0, m.tensor([0]), x[:1], "amin"),
}
WITH_META = {"max", "max.dim", "min", "amax", "argmax", "sort", "topk", "median", "median.dim",
             "kthvalue", "mode", "cummax", "unique_dim"}


def _torch_message(call, x):
    with pytest.raises(Exception) as info:
        call(torch, x)
    return str(info.value).strip()


@pytest.mark.parametrize("dtype, tdtype", COMPLEX)
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_for_complex_with_pytorchs_message(name, dtype, tdtype):
    x, xt = _pair((3, 4), dtype)
    expected = _torch_message(REFUSED[name], xt)
    with pytest.raises(DTypeError) as info:
        REFUSED[name](tp, x)
    message = str(info.value)
    op = name.split(".")[0]
    assert message.startswith(f"{op}("), message
    assert expected.removeprefix(f"{op}(): ") in message, (expected, message)
    if name in WITH_META:      # the shape rule refuses a meta tensor alike
        with pytest.raises(DTypeError) as meta_info:
            REFUSED[name](tp, tp.empty(3, 4, dtype=dtype, device="meta"))
        assert expected.removeprefix(f"{op}(): ") in str(meta_info.value)


def test_refusals_leave_real_and_complex_weights_alone():
    """bincount takes complex weights (only the counted values must be integers);
    scatter_reduce and index_reduce take complex numbers for sum, prod and mean."""
    w, wt = _pair((3,), tp.complex64)
    _close(tp.bincount(tp.tensor([0, 1, 1]), w), torch.bincount(torch.tensor([0, 1, 1]), wt))
    x, xt = _pair((3, 4), tp.complex128)
    for reduce in ("sum", "prod"):
        _close(x.scatter_reduce(0, _idx(tp), x[:1], reduce),
               xt.scatter_reduce(0, _idx(torch), xt[:1], reduce))
    _close(x.index_reduce(0, tp.tensor([0]), x[:1], "prod"),
           xt.index_reduce(0, torch.tensor([0]), xt[:1], "prod"))
