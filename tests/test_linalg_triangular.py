"""The triangular factorizations and solves beyond the operator database
(tests/opinfo/db_triangular.py holds their values, gradients and errors): LAPACK's info and
pivots as PyTorch gives them, the batch element an error names, the named tuples,
P L U == A, the LDL^T ops' missing derivative, and vmap against a loop."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, LinAlgError, TensorPlayError

# matrix 1 is singular (its second pivot is exactly zero), matrix 2 is all zeros
SINGULAR_BATCH = np.array([[[2.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [2.0, 4.0]],
                           [[0.0, 0.0], [0.0, 0.0]]])


def well_conditioned(*shape, seed=0):
    rng = np.random.default_rng(seed)
    m, n = shape[-2:]
    return rng.standard_normal(shape) + min(m, n) * np.eye(m, n)


def test_lu_factor_ex_reports_getrfs_info_and_pivots_as_pytorch():
    LU, pivots, info = tp.linalg.lu_factor_ex(tp.tensor(SINGULAR_BATCH))
    expected = torch.linalg.lu_factor_ex(torch.tensor(SINGULAR_BATCH))
    assert pivots.dtype is tp.int32 and info.dtype is tp.int32
    assert info.tolist() == expected.info.tolist() == [0, 2, 1]
    assert pivots.tolist() == expected.pivots.tolist()
    np.testing.assert_allclose(LU.numpy(), expected.LU.numpy())


@pytest.mark.parametrize("shape", [(5, 5), (3, 4, 4), (4, 6), (2, 6, 3)])
def test_pivots_are_lapacks_one_based_row_swaps_equal_to_pytorchs(shape):
    """Random matrices (no ties between candidate pivots): LAPACK's choice is unique, so
    TensorPlay's (SciPy's LAPACK) and PyTorch's pivots are equal; SciPy's own are 0-based."""
    a = np.random.default_rng(1).standard_normal(shape)
    LU, pivots = tp.linalg.lu_factor(tp.tensor(a))
    expected = torch.linalg.lu_factor(torch.tensor(a))
    assert pivots.tolist() == expected.pivots.tolist()
    assert pivots.numpy().min() >= 1 and tuple(pivots.shape) == shape[:-2] + (min(shape[-2:]),)
    np.testing.assert_allclose(LU.numpy(), expected.LU.numpy(), atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5), (2, 5, 3), (0, 3, 3)])
def test_lu_unpack_round_trip_P_L_U_is_A(shape):
    a = np.random.default_rng(2).standard_normal(shape)
    LU, pivots = tp.linalg.lu_factor(tp.tensor(a))
    P, L, U = tp.lu_unpack(LU, pivots)
    np.testing.assert_allclose((P @ L @ U).numpy(), a, atol=1e-12)
    k = min(shape[-2:])
    assert tuple(L.shape) == shape[:-1] + (k,) and tuple(U.shape) == shape[:-2] + (k, shape[-1])
    # P is a permutation matrix
    assert set(np.unique(P.numpy())) <= {0.0, 1.0}
    # and linalg.lu gives the same three, by name
    out = tp.linalg.lu(tp.tensor(a))
    for name, mine in zip("PLU", (P, L, U)):
        np.testing.assert_allclose(getattr(out, name).numpy(), mine.numpy())


def test_named_tuples_have_pytorchs_field_names():
    a = tp.tensor(well_conditioned(3, 3))
    assert tp.linalg.lu_factor_ex(a)._fields == ("LU", "pivots", "info")
    assert tp.linalg.lu_factor(a)._fields == ("LU", "pivots")
    assert tp.linalg.lu(a)._fields == ("P", "L", "U")
    assert tp.linalg.ldl_factor_ex(a + a.mT)._fields == ("LD", "pivots", "info")
    assert tp.linalg.solve_ex(a, a)._fields == ("result", "info")
    assert tp.triangular_solve(a, a)._fields == ("solution", "cloned_coefficient")
    assert a.triangular_solve(a).solution.shape == a.shape


def test_errors_name_the_batch_element_and_the_zero_pivot():
    with pytest.raises(LinAlgError, match=r"^linalg_lu_factor\(\): \(Batch element 1\): "
                       r"U\[2,2\] is zero and using it on lu_solve would result in a division "
                       r"by zero") as e:
        tp.linalg.lu_factor(tp.tensor(SINGULAR_BATCH))
    assert e.value.op == "linalg_lu_factor"
    with pytest.raises(LinAlgError, match=r"linalg_lu_factor_ex\(\): \(Batch element 2\): "
                       r"U\[1,1\] is zero"):
        tp.linalg.lu_factor_ex(tp.tensor(SINGULAR_BATCH[[0, 0, 2]]), check_errors=True)
    with pytest.raises(LinAlgError, match=r"linalg_solve_ex\(\): \(Batch element 1\): The "
                       r"solver failed because the input matrix is singular"):
        tp.linalg.solve_ex(tp.tensor(SINGULAR_BATCH), tp.ones((3, 2, 1), dtype=tp.float64),
                           check_errors=True)
    # linalg.lu factors a singular matrix (U has the zero), as PyTorch's does
    P, L, U = tp.linalg.lu(tp.tensor(SINGULAR_BATCH))
    np.testing.assert_allclose((P @ L @ U).numpy(), SINGULAR_BATCH)


def test_pivot_false_is_refused_on_the_cpu_as_pytorch():
    a = well_conditioned(3, 3)
    for fn in (tp.linalg.lu_factor, tp.linalg.lu_factor_ex, tp.linalg.lu):
        with pytest.raises(ArgumentError, match=r"LU without pivoting is not implemented on "
                           r"the CPU"):
            fn(tp.tensor(a), pivot=False)
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        torch.linalg.lu_factor(torch.tensor(a), pivot=False)


def test_solve_ex_info_is_per_matrix_of_A_and_its_result_is_getrs_output():
    x, info = tp.linalg.solve_ex(tp.tensor(SINGULAR_BATCH), tp.ones((3, 2, 1), dtype=tp.float64))
    tx, tinfo = torch.linalg.solve_ex(torch.tensor(SINGULAR_BATCH), torch.ones(3, 2, 1,
                                                                              dtype=torch.float64))
    assert info.tolist() == tinfo.tolist() == [0, 2, 1]
    np.testing.assert_allclose(x.numpy()[0], tx.numpy()[0])
    # A's batch, not the broadcast one (PyTorch factors A before broadcasting)
    _, info = tp.linalg.solve_ex(tp.tensor(well_conditioned(3, 3)), tp.ones((2, 3, 1),
                                                                           dtype=tp.float64))
    assert tuple(info.shape) == ()


def test_ldl_factor_equals_lapacks_and_solves():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 5))
    sym = x + np.swapaxes(x, -1, -2)
    LD, pivots, info = tp.linalg.ldl_factor_ex(tp.tensor(sym))
    expected = torch.linalg.ldl_factor_ex(torch.tensor(sym))
    assert pivots.tolist() == expected.pivots.tolist()        # negative: a 2x2 block
    assert info.tolist() == [0, 0, 0]
    np.testing.assert_allclose(LD.numpy(), expected.LD.numpy(), atol=1e-12)
    b = rng.standard_normal((3, 5, 2))
    X = tp.linalg.ldl_solve(LD, pivots, tp.tensor(b))
    np.testing.assert_allclose(sym @ X.numpy(), b, atol=1e-10)


def test_ldl_has_no_derivative_as_in_pytorch():
    x = np.random.default_rng(4).standard_normal((3, 3))
    A = tp.tensor(x + x.T, requires_grad=True)
    LD = tp.linalg.ldl_factor(A).LD
    with pytest.raises(TensorPlayError, match="linalg_ldl_factor_ex"):
        LD.sum().backward()
    tA = torch.tensor(x + x.T, requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not "
                       "implemented"):
        torch.linalg.ldl_factor(tA).LD.sum().backward()


def test_triangular_solves_read_only_their_triangle():
    a = well_conditioned(4, 4)
    b = np.random.default_rng(5).standard_normal((4, 2))
    for upper in (True, False):
        noisy = a + (np.tril(np.ones((4, 4)), -1) if upper else np.triu(np.ones((4, 4)), 1)) * 9
        x = tp.linalg.solve_triangular(tp.tensor(noisy), tp.tensor(b), upper=upper)
        tri = np.triu(a) if upper else np.tril(a)
        np.testing.assert_allclose(tri @ x.numpy(), b, atol=1e-12)


def test_cholesky_solve_and_inverse_invert_the_factored_matrix():
    a = well_conditioned(2, 3, 3)
    spd = a @ np.swapaxes(a, -1, -2)
    L = np.linalg.cholesky(spd)
    b = np.random.default_rng(6).standard_normal((2, 3, 2))
    for upper, factor in ((False, L), (True, np.swapaxes(L, -1, -2))):
        x = tp.cholesky_solve(tp.tensor(b), tp.tensor(factor), upper)
        np.testing.assert_allclose(spd @ x.numpy(), b, atol=1e-12)
        inverse = tp.tensor(factor).cholesky_inverse(upper)
        np.testing.assert_allclose(inverse.numpy(), np.linalg.inv(spd), atol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda A: tp.linalg.lu_factor_ex(A).LU,
    lambda A: tp.linalg.ldl_factor_ex(A + A.mT).LD,
    lambda A: tp.cholesky_inverse(A.tril()),
])
def test_vmap_matches_a_loop(fn):
    A = tp.tensor(well_conditioned(3, 4, 4))
    batched = tp.vmap(fn)(A)
    looped = tp.stack([fn(A[i]) for i in range(3)])
    np.testing.assert_allclose(batched.numpy(), looped.numpy(), atol=1e-12)


def test_wrong_pivots_are_refused():
    LU = tp.tensor(well_conditioned(3, 3))
    with pytest.raises(ArgumentError, match=r"lu_unpack\(\): pivots passed to lu_unpack must "
                       r"be between 1 and LU.size\(-2\) = 3"):
        tp.lu_unpack(LU, tp.tensor([0, 2, 3], dtype=tp.int32))
    with pytest.raises(TensorPlayError, match=r"'LU_pivots' is expected to be a tensor of "
                       r"int32"):
        tp.lu_unpack(LU, tp.tensor([1, 2, 3]))
