"""tp.linalg's inverses, determinants, solves and factorizations beyond the operator
database (tests/opinfo/db_linalg.py holds their values, gradients and errors): LAPACK's
info in the `_ex` forms, the batch element an error names, PyTorch's result layout, vmap
against a loop, and what explain() shows."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import LinAlgError


def well_conditioned(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + shape[-1] * np.eye(shape[-1])


def positive_definite(*shape, seed=0):
    a = well_conditioned(*shape, seed=seed)
    return a @ np.swapaxes(a, -1, -2)


SINGULAR_BATCH = np.array([[[2.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [2.0, 4.0]],
                           [[0.0, 0.0], [0.0, 0.0]]])
NOT_PD_BATCH = np.array([[[4.0, 2.0], [2.0, 3.0]], [[1.0, 2.0], [2.0, 1.0]],
                         [[-1.0, 0.0], [0.0, 1.0]]])


def test_inv_ex_reports_lapacks_info_per_matrix_as_pytorch():
    inverse, info = tp.linalg.inv_ex(tp.tensor(SINGULAR_BATCH))
    expected = torch.linalg.inv_ex(torch.tensor(SINGULAR_BATCH))
    assert info.dtype is tp.int32
    assert info.tolist() == expected.info.tolist() == [0, 2, 1]
    np.testing.assert_allclose(inverse.numpy()[0], expected.inverse.numpy()[0])


def test_cholesky_ex_reports_the_first_leading_minor_that_is_not_positive_definite():
    for upper in (False, True):
        L, info = tp.linalg.cholesky_ex(tp.tensor(NOT_PD_BATCH), upper=upper)
        expected = torch.linalg.cholesky_ex(torch.tensor(NOT_PD_BATCH), upper=upper)
        assert info.tolist() == expected.info.tolist() == [0, 2, 1]
        np.testing.assert_allclose(L.numpy()[0], expected.L.numpy()[0])


def test_errors_name_the_batch_element_and_the_pivot():
    with pytest.raises(LinAlgError, match=r"linalg_inv_ex\(\): \(Batch element 1\): The "
                       r"diagonal element 2 is zero"):
        tp.linalg.inv(tp.tensor(SINGULAR_BATCH))
    with pytest.raises(LinAlgError, match=r"\(Batch element 1\): .*the leading minor of "
                       r"order 2 is not positive-definite"):
        tp.linalg.cholesky(tp.tensor(NOT_PD_BATCH))
    with pytest.raises(LinAlgError, match=r"linalg_solve\(\): \(Batch element 1\): The solver "
                       r"failed because the input matrix is singular"):
        tp.linalg.solve(tp.tensor(SINGULAR_BATCH), tp.ones(3, 2, dtype=tp.float64))
    # the LinAlgError is tp.linalg's, a RuntimeError as PyTorch's
    assert tp.linalg.LinAlgError is LinAlgError and issubclass(LinAlgError, RuntimeError)


@pytest.mark.parametrize("call", [
    lambda m, a, b: m.linalg.inv(a),
    lambda m, a, b: m.linalg.cholesky(a @ a.mT),
    lambda m, a, b: m.linalg.cholesky(a @ a.mT, upper=True),
    lambda m, a, b: m.linalg.solve(a, b),
    lambda m, a, b: m.linalg.solve(a, b.mT, left=False),
    lambda m, a, b: m.linalg.solve(a, b[..., 0]),
    lambda m, a, b: m.linalg.solve(a, b[0, :, 0]),
    lambda m, a, b: m.linalg.solve(a[0], b[0, :, 0]),
], ids=["inv", "cholesky", "cholesky upper", "solve", "solve left=False", "solve vectors",
        "solve one vector, batched A", "solve one vector"])
def test_results_are_laid_out_as_pytorchs(call):
    """LAPACK writes column-major matrices; PyTorch returns them so (a later .contiguous()
    copies where PyTorch's would)."""
    a, b = well_conditioned(2, 3, 3), np.random.default_rng(1).standard_normal((2, 3, 2))
    ours = call(tp, tp.tensor(a), tp.tensor(b))
    theirs = call(torch, torch.tensor(a), torch.tensor(b))
    assert ours.stride() == theirs.stride()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


def test_vmap_runs_each_op_once_for_the_batch_and_matches_a_loop():
    a = tp.tensor(well_conditioned(4, 3, 3))
    b = tp.tensor(np.random.default_rng(2).standard_normal((4, 3)))
    m = tp.tensor(np.random.default_rng(3).standard_normal((4, 3, 2)))
    spd = a @ a.mT
    cases = [
        (tp.linalg.inv, (a,), (0,)),
        (lambda x: tp.linalg.slogdet(x)[1], (a,), (0,)),
        (tp.linalg.cholesky, (spd,), (0,)),
        (tp.logdet, (spd,), (0,)),
        (tp.linalg.solve, (a, b), (0, 0)),
        (tp.linalg.solve, (a[0], b), (None, 0)),   # a vector per example, one A
        (tp.linalg.solve, (a, b[0]), (0, None)),
        (tp.linalg.solve, (a, m[0]), (0, None)),   # a matrix right-hand side
        (tp.linalg.solve, (a[0], m), (None, 0)),
    ]
    for fn, args, dims in cases:
        batched = tp.vmap(fn, in_dims=dims)(*args)
        looped = tp.stack([fn(*[x if d is None else x[i] for x, d in zip(args, dims)])
                           for i in range(4)])
        np.testing.assert_allclose(batched.numpy(), looped.numpy(), rtol=1e-12, atol=1e-12)


def test_per_example_gradients_of_a_log_determinant_under_vmap():
    """grad(logdet) = A^-T for each example, through the batching rule of slogdet."""
    a = tp.tensor(positive_definite(3, 3, 3))
    grads = tp.func.vmap(tp.func.grad(tp.logdet))(a)
    np.testing.assert_allclose(grads.numpy(), np.linalg.inv(a.numpy()).transpose(0, 2, 1),
                               rtol=1e-10)


def test_explain_shows_the_lapack_kernel_and_the_backward_formula():
    a = tp.tensor(well_conditioned(3, 3), requires_grad=True)
    with tp.dispatch.explain(file=False) as ex:
        tp.linalg.inv(a).sum().backward()
    assert "cpu_kernels.linalg.linalg_inv_ex" in ex.text
    assert "LinalgInvExBackward0" in ex.text
