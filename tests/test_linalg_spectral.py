"""The SVD, eigh, det, pinv, matrix_rank and cond: what the OpInfo database cannot say.

- gradients of the vectors against PyTorch's through gauge-invariant losses, full_matrices
  with m != n included (PyTorch ignores the extra columns' gradients: it does not raise);
- PyTorch's inf/NaN for repeated singular values and eigenvalues, and its finite
  svdvals/eigvalsh gradients there (an output with no gradient is not a zero gradient);
- det of singular matrices: PyTorch's first-order gradient (0 when det is exactly 0),
  the cofactors with create_graph, and gradcheck passing exactly where PyTorch's passes;
- error wording; pinv's and matrix_rank's tolerances at their boundaries;
- layouts, named tuples, the method forms, vmap.
"""
import math

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.autograd import gradcheck, gradgradcheck
from tensorplay.errors import ArgumentError, DTypeError, LinAlgError, ShapeError


def pair(x, requires_grad=False, dtype=tp.float64):
    """The same values as a TensorPlay and a PyTorch tensor."""
    x = np.asarray(x, dtype=np.float64)
    a = tp.tensor(x, dtype=dtype, requires_grad=requires_grad)
    b = torch.tensor(x, dtype=torch.float64 if dtype is tp.float64 else torch.float32,
                     requires_grad=requires_grad)
    return a, b


def random(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def assert_same(a, b, rtol=1e-7, atol=1e-9, equal_nan=False):
    np.testing.assert_allclose(a.detach().numpy() if isinstance(a, tp.Tensor) else a,
                               b.detach().numpy(), rtol=rtol, atol=atol, equal_nan=equal_nan)


# ---- gradients through gauge-invariant losses --------------------------------------------
def _svd_loss(lib, A, full_matrices):
    U, S, Vh = lib.linalg.svd(A, full_matrices=full_matrices)
    k = S.shape[-1]
    U, Vh = U[..., :, :k], Vh[..., :k, :]
    # invariant under a sign flip of a column of U with the matching row of Vh
    return (U @ Vh).sin().sum() + (U * U).cos().sum() + (Vh ** 2).exp().sum() + S.prod()


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_vector_gradients_match_torch(shape, full_matrices):
    a, b = pair(random(*shape), requires_grad=True)
    _svd_loss(tp, a, full_matrices).backward()
    _svd_loss(torch, b, full_matrices).backward()
    assert_same(a.grad, b.grad, rtol=1e-6)


def test_svd_gradcheck_through_an_invariant_function():
    a = tp.tensor(random(2, 4, 3), requires_grad=True)
    assert gradcheck(lambda x: _svd_loss(tp, x, True), (a,))
    assert gradgradcheck(lambda x: _svd_loss(tp, x, False), (a,))


def _eigh_loss(lib, A, uplo):
    A = (A + A.mT) / 2
    L, V = lib.linalg.eigh(A, UPLO=uplo)
    return (V * V * L.unsqueeze(-2)).sin().sum() + (V @ V.mT * 2).sum() + L.exp().sum()


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_gradients_match_torch(uplo):
    a, b = pair(random(2, 4, 4), requires_grad=True)
    _eigh_loss(tp, a, uplo).backward()
    _eigh_loss(torch, b, uplo).backward()
    assert_same(a.grad, b.grad, rtol=1e-6)
    x = tp.tensor(random(3, 3), requires_grad=True)
    assert gradgradcheck(lambda t: _eigh_loss(tp, t, uplo), (x,))


def test_eigh_reads_one_triangle_and_its_gradient_is_not_projected():
    """Only the UPLO triangle is read (the other may hold anything); the gradient is
    PyTorch's, a full symmetric matrix."""
    x = random(4, 4)
    for uplo in ("L", "U"):
        a, b = pair(x, requires_grad=True)
        ta, tb = tp.linalg.eigh(a, uplo), torch.linalg.eigh(b, uplo)
        assert_same(ta.eigenvalues, tb.eigenvalues)
        (ta.eigenvalues * tp.arange(4.0, dtype=tp.float64)).sum().backward()
        (tb.eigenvalues * torch.arange(4.0, dtype=torch.float64)).sum().backward()
        assert_same(a.grad, b.grad)


# ---- repeated singular values and eigenvalues ---------------------------------------------
def test_svdvals_and_eigvalsh_have_finite_gradients_at_repeated_values():
    """PyTorch's svdvals/eigvalsh compute the vectors, but the vectors get no gradient: its
    shortcut U diag(gS) Vh. TensorPlay's engine hands zeros there, which must count as no
    gradient (the general formula divides 0 by the zero gap)."""
    for fn in ("svdvals", "eigvalsh", "cond"):
        a, b = pair(np.eye(3) * 2.0, requires_grad=True)
        getattr(tp.linalg, fn)(a).sum().backward()
        getattr(torch.linalg, fn)(b).sum().backward()
        assert np.isfinite(a.grad.numpy()).all()
        assert_same(a.grad, b.grad)


def test_a_loss_on_s_alone_from_linalg_svd_is_finite_at_repeated_values():
    a, b = pair(np.diag([2.0, 2.0, 1.0]), requires_grad=True)
    tp.linalg.svd(a).S.sum().backward()
    torch.linalg.svd(b).S.sum().backward()
    assert_same(a.grad, b.grad)


def test_vector_gradients_at_repeated_values_are_inf_or_nan_as_torchs():
    x = np.diag([2.0, 2.0, 1.0])
    a, b = pair(x, requires_grad=True)
    tp.linalg.svd(a).U.sum().backward()
    torch.linalg.svd(b).U.sum().backward()
    assert not np.isfinite(b.grad.numpy()).all()
    np.testing.assert_array_equal(np.isfinite(a.grad.numpy()), np.isfinite(b.grad.numpy()))
    a, b = pair(x, requires_grad=True)
    tp.linalg.eigh(a).eigenvectors.sum().backward()
    torch.linalg.eigh(b).eigenvectors.sum().backward()
    assert not np.isfinite(b.grad.numpy()).all()
    np.testing.assert_array_equal(np.isfinite(a.grad.numpy()), np.isfinite(b.grad.numpy()))


def test_rank_deficient_wide_svdvals_gradient_is_finite():
    """gU / S with S = 0 (m != n): only when U really has a gradient. (The loss reads the
    largest singular value: the vectors of the zero one are any basis, so a loss that
    reads it has no unique gradient.)"""
    x = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])
    a, b = pair(x, requires_grad=True)
    tp.linalg.svdvals(a)[0].backward()
    torch.linalg.svdvals(b)[0].backward()
    assert np.isfinite(a.grad.numpy()).all()
    assert_same(a.grad, b.grad)


# ---- det ---------------------------------------------------------------------------------
SINGULAR = {
    "rank 1 of 2": [[1.0, 2.0], [2.0, 4.0]],
    "rank 2 of 3": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],
    "rank 1 of 3": [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "zero": [[0.0] * 3] * 3,
}


def _passes(check, lib, x):
    try:
        return bool(check(lib.linalg.det, (x,)))
    except Exception:  # noqa: BLE001 - either library's mismatch error
        return False


@pytest.mark.parametrize("name", list(SINGULAR))
def test_det_of_a_singular_matrix_matches_torch(name):
    a, b = pair(SINGULAR[name], requires_grad=True)
    # first order, no create_graph: PyTorch's perturbed-LU solve gives 0 where det == 0
    ga, = tp.autograd.grad(tp.linalg.det(a), a)
    gb, = torch.autograd.grad(torch.linalg.det(b), b)
    assert_same(ga, gb)
    # with create_graph: the SVD formula, the true cofactor matrix
    ga, = tp.autograd.grad(tp.linalg.det(a), a, create_graph=True)
    gb, = torch.autograd.grad(torch.linalg.det(b), b, create_graph=True)
    assert_same(ga, gb, atol=1e-12)
    assert ga.requires_grad
    # gradcheck and gradgradcheck pass (or fail) exactly where PyTorch's do (at the zero
    # matrix the second derivative is NaN in both: the SVD's vectors get defined zero
    # gradients there, and the general formula divides 0 by 0)
    assert _passes(gradcheck, tp, a) == _passes(torch.autograd.gradcheck, torch, b)
    assert _passes(gradgradcheck, tp, a) == _passes(torch.autograd.gradgradcheck, torch, b)


def test_det_gradcheck_passes_on_singular_matrices_of_rank_n_minus_2():
    for name in ("rank 1 of 3", "zero"):
        a = tp.tensor(SINGULAR[name], dtype=tp.float64, requires_grad=True)
        assert gradcheck(tp.linalg.det, (a,))


def test_det_second_derivative_of_a_mixed_batch_matches_torch():
    """create_graph: the singular matrices take the SVD formula, the others the solve.
    (The zero matrix's entries are left out: both libraries' are NaN there, the SVD's
    vectors of a zero matrix having no derivative.)"""
    x = np.stack([SINGULAR["rank 2 of 3"], random(3, 3), SINGULAR["zero"]])
    a, b = pair(x, requires_grad=True)
    ga, = tp.autograd.grad(tp.linalg.det(a).sum(), a, create_graph=True)
    gb, = torch.autograd.grad(torch.linalg.det(b).sum(), b, create_graph=True)
    assert_same(ga[:2], gb[:2], atol=1e-12)
    w = np.random.default_rng(1).standard_normal(x.shape)
    w[2] = 0.0
    (ga * tp.tensor(w)).sum().backward()
    (gb * torch.tensor(w)).sum().backward()
    assert_same(a.grad[:2], b.grad[:2], atol=1e-12)
    assert gradgradcheck(tp.linalg.det, (tp.tensor(x[:2], requires_grad=True),))


def test_det_values_and_method():
    x = random(2, 3, 3)
    a, b = pair(x)
    assert_same(tp.linalg.det(a), torch.linalg.det(b))
    assert_same(a.det(), b.det())
    assert_same(tp.det(a), torch.det(b))
    assert tp.linalg.det(tp.zeros((0, 0))).item() == 1.0


# ---- errors ------------------------------------------------------------------------------
def test_error_wording():
    nan = tp.tensor([[float("nan"), 1.0], [1.0, 1.0]])
    with pytest.raises(LinAlgError, match=r"^linalg_svd\(\): The algorithm failed to "
                       r"converge because the input matrix contained non-finite values\.$"):
        tp.linalg.svd(nan)
    with pytest.raises(LinAlgError, match=r"linalg_svd\(\): \(Batch element 2\): "):
        tp.linalg.svdvals(tp.stack([tp.eye(2), tp.eye(2), nan]))
    assert isinstance(LinAlgError("x"), tp.errors.TensorPlayError)
    with pytest.raises(ShapeError, match=r"linalg_eigh\(\): 'self' must be batches of square "
                       r"matrices, but they are 2 by 3 matrices"):
        tp.linalg.eigh(tp.zeros((2, 3)))
    with pytest.raises(ArgumentError, match=r"linalg_eigvalsh\(\): expected 'UPLO' to be 'L' "
                       r"or 'U', but got 'X'") as e:
        tp.linalg.eigvalsh(tp.eye(2), "X")
    assert e.value.op == "linalg_eigvalsh" and e.value.arg == "UPLO"
    with pytest.raises(DTypeError, match=r"svd\(\): expected a floating point tensor as input "
                       r"\('self'\), but got int64"):
        tp.arange(4).view(2, 2).svd()
    with pytest.raises(DTypeError, match=r"low precision dtypes are not supported"):
        tp.linalg.svd(tp.eye(2, dtype=tp.float16))
    with pytest.raises(ArgumentError, match=r"linalg_svdvals\(\): keyword argument 'driver'"):
        tp.linalg.svdvals(tp.eye(2), driver="gesvd")


def test_eigh_of_a_matrix_with_nan_does_not_raise_as_torchs():
    nan = [[float("nan"), 1.0], [1.0, 1.0]]
    a, b = pair(nan)
    tp.linalg.eigh(a)
    torch.linalg.eigh(b)


def test_the_vectors_cannot_be_differentiated_when_not_computed():
    a = tp.tensor(random(3, 3), requires_grad=True)
    _, S, _ = tp._linalg_svd(a, False, False)
    with pytest.raises(tp.errors.AutogradError, match="compute_uv=False"):
        S.sum().backward()


# ---- pinv and matrix_rank tolerances --------------------------------------------------------
def _with_singular_values(s, m=4, n=3, seed=0):
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((m, m)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    k = min(m, n)
    return u[:, :k] @ np.diag(s) @ v[:, :k].T


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_matrix_rank_default_tolerance_is_eps_times_max_m_n(dtype):
    """rtol = eps * max(m, n): singular values just above and below it, relative to s_max."""
    eps = float(np.finfo(dtype.np).eps)
    for factor in (1e-3, 10.0, 1e3):
        x = _with_singular_values([1.0, 0.5, factor * eps * 4])
        a, b = pair(x, dtype=dtype)
        assert tp.linalg.matrix_rank(a).item() == torch.linalg.matrix_rank(b).item()
        assert tp.linalg.matrix_rank(a, hermitian=False).item() == \
            torch.linalg.matrix_rank(b, hermitian=False).item()


def test_tolerance_forms_agree_with_torch():
    x = _with_singular_values([3.0, 1.0, 0.3])
    a, b = pair(x)
    cases = [dict(atol=0.5), dict(rtol=0.2), dict(atol=0.5, rtol=0.5), dict(atol=2.0),
             dict(atol=0.0), dict(rtol=0.0), dict(atol=0.2, rtol=0.2)]
    for kw in cases:
        assert tp.linalg.matrix_rank(a, **kw).item() == torch.linalg.matrix_rank(b, **kw).item()
        assert_same(tp.linalg.pinv(a, **kw), torch.linalg.pinv(b, **kw))
    # a positive atol alone drops the default rtol (an atol of 0 keeps it)
    tiny = _with_singular_values([1.0, 0.5, 1e-17])
    a2, b2 = pair(tiny)
    assert tp.linalg.matrix_rank(a2, atol=1e-20).item() == 3 == \
        torch.linalg.matrix_rank(b2, atol=1e-20).item()
    assert tp.linalg.matrix_rank(a2, atol=0.0).item() == 2
    # the deprecated tol (absolute) and NumPy's rcond (relative)
    assert tp.linalg.matrix_rank(a, 0.5).item() == torch.linalg.matrix_rank(b, 0.5).item() == 2
    assert_same(tp.linalg.pinv(a, 0.2), torch.linalg.pinv(b, 0.2))
    assert_same(tp.pinverse(a, 0.2), torch.pinverse(b, 0.2))
    assert_same(a.pinverse(), b.pinverse())


def test_tensor_tolerances_broadcast_over_the_batch():
    x = np.stack([_with_singular_values([3.0, 1.0, 0.3], seed=i) for i in range(3)])
    a, b = pair(x)
    atol = [0.0, 0.5, 2.0]
    r = tp.linalg.matrix_rank(a, atol=tp.tensor(atol, dtype=tp.float64))
    assert r.tolist() == torch.linalg.matrix_rank(b, atol=torch.tensor(atol)).tolist() \
        == [3, 2, 1]
    assert r.dtype is tp.int64
    assert_same(tp.linalg.pinv(a, atol=tp.tensor(atol, dtype=tp.float64)),
                torch.linalg.pinv(b, atol=torch.tensor(atol, dtype=torch.float64)))


def test_hermitian_uses_the_absolute_eigenvalues():
    q, _ = np.linalg.qr(random(4, 4))
    x = q @ np.diag([-3.0, 2.0, -0.1, 1e-20]) @ q.T
    a, b = pair(x)
    for kw in ({}, {"atol": 0.5}, {"rtol": 0.5}):
        assert tp.linalg.matrix_rank(a, hermitian=True, **kw).item() == \
            torch.linalg.matrix_rank(b, hermitian=True, **kw).item()
        assert_same(tp.linalg.pinv(a, hermitian=True, **kw),
                    torch.linalg.pinv(b, hermitian=True, **kw), atol=1e-9)


def test_pinv_gradient_is_torchs_pinv_backward():
    """PyTorch differentiates pinv with its own formula (the Moore-Penrose inverse's
    derivative), also where a tolerance cut a singular value."""
    x = _with_singular_values([3.0, 1.0, 0.3])
    for kw in ({}, {"rtol": 0.2}, {"hermitian": True}):
        xx = x[:3] + x[:3].T if kw.get("hermitian") else x
        a, b = pair(xx, requires_grad=True)
        w = random(*tp.linalg.pinv(a.detach(), **kw).shape, seed=3)
        (tp.linalg.pinv(a, **kw) * tp.tensor(w)).sum().backward()
        (torch.linalg.pinv(b, **kw) * torch.tensor(w)).sum().backward()
        assert_same(a.grad, b.grad)
    a = tp.tensor(x, requires_grad=True)
    assert gradcheck(tp.linalg.pinv, (a,)) and gradgradcheck(tp.linalg.pinv, (a,))


# ---- cond --------------------------------------------------------------------------------
def test_cond_of_singular_and_empty_matrices():
    for x in (SINGULAR["rank 1 of 2"], SINGULAR["zero"]):
        a, b = pair(x)
        for p in (1, -1, math.inf, "fro"):        # a singular inverse is inf: so is cond
            assert_same(tp.linalg.cond(a, p), torch.linalg.cond(b, p), equal_nan=True)
    a, b = pair(SINGULAR["zero"])
    for p in (None, 2, -2, "nuc"):
        assert_same(tp.linalg.cond(a, p), torch.linalg.cond(b, p), equal_nan=True)
    assert tp.linalg.cond(tp.zeros((2, 0, 0))).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("p", [1, -1, math.inf, "fro"])
def test_cond_through_the_inverse_is_differentiable(p):
    """PyTorch's backward raises here (an in-place write into the saved inverse);
    TensorPlay's is the derivative: finite differences agree."""
    a = tp.tensor(random(3, 3) + 3 * np.eye(3), requires_grad=True)
    assert gradcheck(lambda x: tp.linalg.cond(x, p), (a,))


# ---- layouts, named tuples, methods, vmap --------------------------------------------------
def test_layouts_and_named_tuples_are_torchs():
    for shape in [(4, 3), (3, 4), (2, 3, 3), (0, 3, 2)]:
        a, b = pair(random(*shape))
        for fm in (True, False):
            r, t = tp.linalg.svd(a, full_matrices=fm), torch.linalg.svd(b, full_matrices=fm)
            assert r._fields == ("U", "S", "Vh")
            assert [x.stride() for x in r] == [x.stride() for x in t]
            assert [tuple(x.shape) for x in r] == [tuple(x.shape) for x in t]
        for kw in ({}, {"some": False}, {"compute_uv": False}):
            r, t = a.svd(**kw), b.svd(**kw)
            assert r._fields == ("U", "S", "V")
            assert [x.stride() for x in r] == [x.stride() for x in t]
            assert [tuple(x.shape) for x in r] == [tuple(x.shape) for x in t]
    r = tp.linalg.eigh(tp.eye(3))
    assert r._fields == ("eigenvalues", "eigenvectors")
    assert r.eigenvectors.stride() == torch.linalg.eigh(torch.eye(3)).eigenvectors.stride()


def test_empty_matrices():
    for shape in [(3, 0), (0, 2), (2, 0, 0)]:
        a, b = pair(np.zeros(shape))
        for r, t in zip(tp.linalg.svd(a), torch.linalg.svd(b)):
            assert_same(r, t)
        assert_same(tp.linalg.pinv(a), torch.linalg.pinv(b))
        assert tp.linalg.matrix_rank(a).tolist() == torch.linalg.matrix_rank(b).tolist()


def test_vmap_runs_the_batch_at_once():
    x = tp.tensor(random(5, 3, 3))
    sym = x + x.mT
    assert_same(tp.vmap(tp.linalg.det)(x), torch.linalg.det(torch.tensor(x.numpy())))
    assert_same(tp.vmap(tp.linalg.svdvals)(x), torch.linalg.svdvals(torch.tensor(x.numpy())))
    assert_same(tp.vmap(tp.linalg.eigvalsh)(sym),
                torch.linalg.eigvalsh(torch.tensor(sym.numpy())))
    U, S, Vh = tp.vmap(tp.linalg.svd)(x)
    assert_same((U * S.unsqueeze(-2)) @ Vh, torch.tensor(x.numpy()), atol=1e-12)
