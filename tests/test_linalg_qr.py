"""QR, Householder reflections and least squares beyond the operator database
(tests/opinfo/db_qr.py holds their values, gradients and errors against PyTorch): what a
QR is (Q orthogonal, Q R == A, R upper triangular, LAPACK's signs), geqrf's compact form
rebuilt by householder_product and applied by ormqr, each lstsq driver's outputs against
PyTorch's (rank-deficient matrices, residuals), gradients through lstsq, and the
derivatives PyTorch refuses."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import AutogradError, LinAlgError

DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def close(actual, expected, tol=1e-10):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


# ---- QR ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4), (2, 3, 6)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_q_is_orthogonal_r_upper_triangular_and_qr_is_a(shape, mode):
    a = rand(*shape)
    Q, R = tp.linalg.qr(tp.tensor(a), mode=mode)
    q, r = Q.numpy(), R.numpy()
    eye = np.eye(q.shape[-1])
    close(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(eye, q.shape[:-2] + eye.shape))
    close(r, np.triu(r))
    close(q @ r, a)


def test_qr_has_lapacks_signs_as_pytorch_no_gauge_between():
    """R's diagonal keeps geqrf's signs (some negative): the factors equal PyTorch's
    entry by entry, not only up to the signs of Q's columns."""
    a = rand(3, 6, 4, seed=1)
    Q, R = tp.linalg.qr(tp.tensor(a))
    tQ, tR = torch.linalg.qr(torch.tensor(a))
    assert (R.numpy().diagonal(0, -2, -1) < 0).any()
    close(Q.numpy(), tQ.numpy())
    close(R.numpy(), tR.numpy())


def test_factors_have_pytorchs_layout():
    a = tp.tensor(rand(2, 5, 3))
    for mode in ("reduced", "complete", "r"):
        Q, R = tp.linalg.qr(a, mode=mode)
        tQ, tR = torch.linalg.qr(torch.tensor(a.numpy()), mode=mode)
        assert Q.shape == tuple(tQ.shape) and Q.stride() == tQ.stride()
        assert R.stride() == tR.stride()
    packed, tau = tp.geqrf(a)
    assert packed.stride() == torch.geqrf(torch.tensor(a.numpy()))[0].stride()


def test_old_qr_is_linalg_qr_with_some():
    a = tp.tensor(rand(5, 3))
    for some, mode in ((True, "reduced"), (False, "complete")):
        Q, R = tp.qr(a, some)
        Q2, R2 = tp.linalg.qr(a, mode)
        assert Q.tolist() == Q2.tolist() and R.tolist() == R2.tolist()
    Q, R = a.qr()
    assert Q.shape == (5, 3)


# ---- Householder reflections ---------------------------------------------------------------
def test_householder_product_of_geqrf_is_qs_q():
    a = tp.tensor(rand(2, 6, 4))
    packed, tau = tp.geqrf(a)
    Q, R = tp.linalg.qr(a)
    close(tp.linalg.householder_product(packed, tau).numpy(), Q.numpy())
    close(tp.orgqr(packed, tau).numpy(), Q.numpy())
    close(packed.orgqr(tau).numpy(), Q.numpy())
    close(np.triu(packed.numpy())[..., :4, :], R.numpy())


def test_householder_product_is_the_product_of_the_reflectors():
    """H_1 ... H_k, H_i = I - tau_i v_i v_i^T, v_i: 1 on the diagonal, zeros above it,
    the input's column below it, written out by hand (any tau, not only a QR's)."""
    a, tau = rand(5, 3, seed=2), rand(2, seed=3)
    q = np.eye(5)
    for i in range(2):
        v = np.concatenate([np.zeros(i), [1.0], a[i + 1:, i]])
        q = q @ (np.eye(5) - tau[i] * np.outer(v, v))
    got = tp.linalg.householder_product(tp.tensor(a), tp.tensor(tau))
    close(got.numpy(), q[:, :3])
    close(got.numpy(), torch.linalg.householder_product(torch.tensor(a), torch.tensor(tau)))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_multiplies_by_the_full_q(left, transpose):
    a = rand(5, 3, seed=4)
    packed, tau = tp.geqrf(tp.tensor(a))
    Q = tp.linalg.qr(tp.tensor(a), mode="complete")[0].numpy()
    op_q = Q.T if transpose else Q
    c = rand(5, 2, seed=5) if left else rand(2, 5, seed=5)
    got = tp.ormqr(packed, tau, tp.tensor(c), left=left, transpose=transpose)
    close(got.numpy(), op_q @ c if left else c @ op_q)


def test_householder_gradients_match_pytorchs_formulas():
    """Composite here, formulas in PyTorch (householder_product_backward,
    ormqr_backward): the same gradients."""
    a, tau, c, w = rand(2, 5, 3, seed=6), rand(2, 3, seed=7), rand(2, 5, 4, seed=8), \
        rand(2, 5, 4, seed=9)
    ours = [tp.tensor(x, requires_grad=True) for x in (a, tau, c)]
    theirs = [torch.tensor(x, requires_grad=True) for x in (a, tau, c)]
    (tp.ormqr(*ours, transpose=True) * tp.tensor(w)).sum().backward()
    (torch.ormqr(*theirs, transpose=True) * torch.tensor(w)).sum().backward()
    for x, y in zip(ours, theirs):
        close(x.grad.numpy(), y.grad.numpy(), 1e-9)


@pytest.mark.parametrize("shapes", [((3, 0), (0,), None), ((3, 2), (0,), None),
                                    ((3, 0), (0,), (3, 4))])
@pytest.mark.parametrize("which", [0, 1])
def test_no_reflector_still_depends_on_every_input(shapes, which):
    """With tau empty (k = 0) the result is the identity's columns (householder_product)
    or C (ormqr), yet PyTorch's requires grad when the input or tau does, with zero
    gradients: the empty fast path must keep both in the graph, and C's -0.0 as it is."""
    def run(lib):
        a, tau = lib.zeros(shapes[0]), lib.zeros(shapes[1])
        (a, tau)[which].requires_grad_()
        if shapes[2] is None:
            out = lib.linalg.householder_product(a, tau)
        else:
            out = lib.ormqr(a, tau, -lib.zeros(shapes[2]))
        out.sum().backward()
        return out, (a, tau)[which].grad
    (out, grad), (expected, expected_grad) = run(tp), run(torch)
    assert out.requires_grad and expected.requires_grad
    close(out.detach().numpy(), expected.detach().numpy())
    assert (np.signbit(out.detach().numpy()) == np.signbit(expected.detach().numpy())).all()
    if expected_grad is None:       # (PyTorch leaves a zero gradient unset here)
        assert grad is None or not grad.numpy().any()
    else:
        close(grad.numpy(), expected_grad.numpy())


def test_geqrf_has_no_derivative_as_in_pytorch():
    a = tp.tensor(rand(4, 3), requires_grad=True)
    packed, tau = tp.geqrf(a)
    assert packed.requires_grad and tau.requires_grad
    with pytest.raises(NotImplementedError, match="the derivative of geqrf is not implemented"):
        packed.sum().backward()


# ---- QR's derivative ---------------------------------------------------------------------
def test_mode_r_has_no_derivative_as_in_pytorch():
    a = tp.tensor(rand(4, 3), requires_grad=True)
    Q, R = tp.linalg.qr(a, mode="r")
    assert Q.shape == (0,)
    with pytest.raises(AutogradError, match=r"linalg_qr\(\): The derivative of linalg.qr "
                       r"depends on Q, which is not computed when mode='r'"):
        R.sum().backward()


def test_complete_qr_of_a_tall_matrix_has_no_derivative_as_in_pytorch():
    a = tp.tensor(rand(5, 3), requires_grad=True)
    Q, R = tp.linalg.qr(a, mode="complete")
    with pytest.raises(AutogradError, match="not differentiable when mode='complete' and "
                       "nrows > ncols"):
        (Q.sum() + R.sum()).backward()
    b = tp.tensor(rand(3, 5), requires_grad=True)     # wide: complete == reduced
    Q, R = tp.linalg.qr(b, mode="complete")
    (Q.sum() + R.sum()).backward()
    tb = torch.tensor(b.detach().numpy(), requires_grad=True)
    tQ, tR = torch.linalg.qr(tb, mode="complete")
    (tQ.sum() + tR.sum()).backward()
    close(b.grad.numpy(), tb.grad.numpy())


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_qr_second_derivatives(shape):
    a = tp.tensor(rand(*shape, seed=10), requires_grad=True)
    assert tp.autograd.gradgradcheck(lambda x: tuple(tp.linalg.qr(x)), (a,))


# ---- least squares -------------------------------------------------------------------------
def _both(a, b, **kwargs):
    ours = tp.linalg.lstsq(tp.tensor(a), tp.tensor(b), **kwargs)
    theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), **kwargs)
    return ours, theirs


def _same(ours, theirs, tol=1e-9):
    for name in ("solution", "residuals", "rank", "singular_values"):
        x, y = getattr(ours, name), getattr(theirs, name)
        assert x.shape == tuple(y.shape), name
        assert str(x.dtype).split(".")[-1] == str(y.dtype).split(".")[-1], name
        close(x.numpy(), y.numpy(), tol)


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("shape", [(6, 3), (3, 6), (4, 4)])
def test_each_driver_gives_pytorchs_outputs(driver, shape):
    a, b = rand(2, *shape, seed=11), rand(2, shape[0], 2, seed=12)
    ours, theirs = _both(a, b, driver=driver)
    _same(ours, theirs)
    # which outputs the driver computes
    assert (ours.rank.numel() > 0) == (driver != "gels")
    assert (ours.singular_values.numel() > 0) == (driver in ("gelsd", "gelss"))
    assert (ours.residuals.numel() > 0) == (shape[0] > shape[1] and driver != "gelsy")


def test_default_driver_is_gelsy():
    a, b = rand(6, 3), rand(6, 2)
    ours, theirs = _both(a, b)
    _same(ours, theirs)
    assert ours.residuals.numel() == 0 and ours.rank.dtype is tp.int64
    assert ours.rank.item() == 3


def test_residuals_are_the_squared_norms_of_the_residual_columns():
    a, b = rand(7, 3, seed=13), rand(7, 2, seed=14)
    x, residuals, _, _ = tp.linalg.lstsq(tp.tensor(a), tp.tensor(b), driver="gelsd")
    close(residuals.numpy(), ((a @ x.numpy() - b) ** 2).sum(0))


# PyTorch hands gelsy an uninitialized pivot array: a nonzero entry fixes that column in
# front, so on a rank-deficient or ill-conditioned matrix its rank and solution change from
# call to call (its own lstsq backward avoids gelsy for this reason). TensorPlay passes
# zeros (every column free, LAPACK's column pivoting), so gelsy is checked against the
# mathematics there, the SVD drivers against PyTorch too.
@pytest.mark.parametrize("driver", DRIVERS[1:])
def test_rank_deficient_matrices(driver):
    """A repeated column: the rank-revealing drivers find the rank, return the
    minimum-norm solution, and no residuals (not full rank)."""
    a = rand(2, 6, 3, seed=15)
    a[1, :, 2] = a[1, :, 0]
    b = rand(2, 6, 2, seed=16)
    ours = tp.linalg.lstsq(tp.tensor(a), tp.tensor(b), driver=driver, rcond=1e-8)
    assert ours.rank.tolist() == [3, 2]
    assert ours.residuals.numel() == 0
    for i in range(2):
        close(ours.solution.numpy()[i], np.linalg.pinv(a[i], rcond=1e-8) @ b[i], 1e-8)
    if driver != "gelsy":
        _same(ours, torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver,
                                       rcond=1e-8), 1e-8)


def test_rcond_sets_the_rank():
    a = np.diag([1.0, 1e-3, 1e-9])
    b = np.ones((3, 1))
    for driver in DRIVERS[1:]:
        for rcond, rank in ((None, 3), (1e-4, 2), (1e-2, 1)):
            ours = tp.linalg.lstsq(tp.tensor(a), tp.tensor(b), driver=driver, rcond=rcond)
            assert ours.rank.item() == rank
            close(ours.solution.numpy().ravel(), [1.0, 1e3, 1e9][:rank] + [0.0] * (3 - rank),
                  1e-6)
            if driver != "gelsy":
                theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver,
                                            rcond=rcond)
                assert theirs.rank.item() == rank
                close(ours.solution.numpy(), theirs.solution.numpy(), 1e-6)


def test_gels_refuses_a_rank_deficient_matrix_naming_the_batch_element():
    a = rand(3, 5, 3, seed=17)
    a[2, :, 1] = 0.0
    with pytest.raises(LinAlgError, match=r"linalg_lstsq\(\): \(Batch element 2\): The least "
                       r"squares solution could not be computed because the input matrix "
                       r"does not have full rank \(error code: 2\)"):
        tp.linalg.lstsq(tp.tensor(a), tp.tensor(rand(3, 5, 1)), driver="gels")


@pytest.mark.parametrize("a_shape, b_shape", [((2, 1, 5, 3), (1, 4, 5, 2)),
                                              ((1, 5, 3), (3, 5, 2)), ((3, 5, 3), (1, 5, 1))])
def test_batch_dims_broadcast_rank_and_singular_values_keep_as_batch(a_shape, b_shape):
    a, b = rand(*a_shape, seed=18), rand(*b_shape, seed=19)
    for driver in DRIVERS:
        ours, theirs = _both(a, b, driver=driver)
        _same(ours, theirs)


def test_vector_b_as_pytorch_reads_it():
    """B is a vector when it is 1-D or a batch of vectors of shape A.shape[:-1]; any other
    B with one dim less than A is refused (PyTorch's result there depends on its kernel's
    batch handling)."""
    a = rand(2, 5, 3)
    for b in (rand(2, 5), rand(5, seed=1)[None].repeat(2, 0)):
        ours, theirs = _both(a, b, driver="gelsd")
        _same(ours, theirs)
        assert ours.solution.shape == (2, 3) and ours.residuals.shape == (2, 1)
    ours, theirs = _both(a[0], rand(5), driver="gels")
    _same(ours, theirs)
    with pytest.raises(tp.errors.ShapeError, match=r"'b' with one dimension less than "
                       r"'self' must be a batch of vectors"):
        tp.linalg.lstsq(tp.tensor(a), tp.tensor(rand(5, 2)))


@pytest.mark.parametrize("shape, driver", [((6, 3), "gelsd"), ((6, 3), "gels"),
                                           ((3, 6), "gelsy"), ((4, 4), "gelss")])
def test_gradients_through_lstsq_match_pytorch(shape, driver):
    a, b = rand(2, *shape, seed=20), rand(2, shape[0], 2, seed=21)
    ours = [tp.tensor(x, requires_grad=True) for x in (a, b)]
    theirs = [torch.tensor(x, requires_grad=True) for x in (a, b)]
    x, res, _, _ = tp.linalg.lstsq(*ours, driver=driver)
    tx, tres, _, _ = torch.linalg.lstsq(*theirs, driver=driver)
    w = rand(*x.shape, seed=22)
    loss = (x * tp.tensor(w)).sum() + (3 * res).sum()
    tloss = (tx * torch.tensor(w)).sum() + (3 * tres).sum()
    loss.backward()
    tloss.backward()
    for mine, torch_one in zip(ours, theirs):
        close(mine.grad.numpy(), torch_one.grad.numpy(), 1e-8)


def test_lstsq_gradient_with_broadcast_batches_sums_to_each_input():
    a, b = rand(1, 6, 3, seed=23), rand(3, 6, 2, seed=24)
    ours = [tp.tensor(x, requires_grad=True) for x in (a, b)]
    theirs = [torch.tensor(x, requires_grad=True) for x in (a, b)]
    tp.linalg.lstsq(*ours, driver="gelsd").solution.sum().backward()
    torch.linalg.lstsq(*theirs, driver="gelsd").solution.sum().backward()
    assert ours[0].grad.shape == (1, 6, 3)
    for mine, torch_one in zip(ours, theirs):
        close(mine.grad.numpy(), torch_one.grad.numpy(), 1e-8)


def test_lstsq_second_derivatives():
    a = tp.tensor(rand(5, 3, seed=25), requires_grad=True)
    b = tp.tensor(rand(5, 2, seed=26), requires_grad=True)
    assert tp.autograd.gradgradcheck(
        lambda x, y: tuple(tp.linalg.lstsq(x, y, driver="gelsd")[:2]), (a, b))
