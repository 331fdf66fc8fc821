"""The Triton kernels for triangular solves and LU of batched small matrices
(triton_kernels/triangular.py): substitution and getf2, one program per matrix in
registers.

On `cuda` they must give what the CPU (BLAS's trsm, LAPACK's getrf) gives: values,
PyTorch's layout (strides), LAPACK's pivots and info, and the same errors naming the
same batch element, over batched, broadcast, empty, transposed-in-memory and singular
inputs. A matrix larger than SMALL_N (or a rectangular one, for LU) goes to the host
fallback, and explain() says which one ran.

Shapes stay small (n <= 6, batch <= 4): in the interpreter every program is Python."""
import logging

import numpy as np
import pytest

from triton_util import CUDA

import tensorplay as tp
from triton_kernels.linalg import SMALL_N

RNG = np.random.default_rng(2028)
TOL = {tp.float32: dict(rtol=1e-4, atol=1e-5), tp.float64: dict(rtol=1e-10, atol=1e-12)}


def triangular(*shape, dtype=tp.float64):
    """Matrices to solve with: a dominant diagonal (either triangle is well-conditioned),
    and random numbers, not zeros, in the triangle the solve must not read."""
    n = shape[-1]
    return tp.tensor(RNG.standard_normal(shape) + n * np.eye(n), dtype=dtype)


def matrix(*shape, dtype=tp.float64):
    return tp.tensor(RNG.standard_normal(shape), dtype=dtype)


def explained(fn, *args):
    """fn on cuda copies of args, with the text of explain()."""
    with tp.dispatch.explain(file=False) as ex:
        out = fn(*[a.cuda() for a in args])
    return out, ex.text


def assert_same(on_cuda, on_cpu, dtype=tp.float64, exact=False):
    """Same values (nan and inf where the CPU has them), dtype, shape and strides."""
    assert on_cuda.device == CUDA
    assert on_cuda.dtype is on_cpu.dtype
    assert on_cuda.shape == on_cpu.shape
    assert on_cuda.stride() == on_cpu.stride()
    if exact:
        np.testing.assert_array_equal(on_cuda.cpu().numpy(), on_cpu.numpy())
    else:
        np.testing.assert_allclose(on_cuda.cpu().numpy(), on_cpu.numpy(), **TOL[dtype])


def raised(fn, *args):
    with pytest.raises(tp.errors.TensorPlayError) as e:
        fn(*args)
    return type(e.value), str(e.value)


def solve(upper, left=True, unitriangular=False):
    return lambda a, b: tp.linalg.solve_triangular(a, b, upper=upper, left=left,
                                                   unitriangular=unitriangular)


# ---- solve_triangular ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
def test_solve_triangular_equals_the_cpus(dtype, upper, left):
    a = triangular(2, 5, 5, dtype=dtype)
    b = matrix(2, 5, 3, dtype=dtype) if left else matrix(2, 3, 5, dtype=dtype)
    x, text = explained(solve(upper, left), a, b)
    assert "kernel    triton_kernels.triangular.linalg_solve_triangular\n" in text + "\n"
    assert "triangular solve (registers)" in text
    assert_same(x, solve(upper, left)(a, b), dtype)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
def test_unitriangular_ignores_the_diagonal(upper, left):
    """The diagonal is taken as ones, not read: nan there changes nothing. nan in the
    other triangle is not read either."""
    a = triangular(2, 4, 4).numpy()
    other = np.tril(np.ones((4, 4)), -1) if upper else np.triu(np.ones((4, 4)), 1)
    a = np.where(other + np.eye(4) > 0, np.nan, a)
    a = tp.tensor(a)
    b = matrix(2, 4, 2) if left else matrix(2, 2, 4)
    on_cpu = solve(upper, left, True)(a, b)
    assert np.isfinite(on_cpu.numpy()).all()
    assert_same(solve(upper, left, True)(a.cuda(), b.cuda()), on_cpu)


@pytest.mark.parametrize("upper", [False, True])
def test_solve_triangular_with_transposed_inputs(upper):
    """A and B transposed in memory (column-major), and left=False of transposed ones."""
    a = triangular(2, 4, 4).mT                 # the other triangle, in fact
    b = matrix(2, 3, 4).mT
    assert not a.is_contiguous() and not b.is_contiguous()
    assert_same(solve(upper)(a.cuda(), b.cuda()), solve(upper)(a, b))
    assert_same(solve(upper, False)(a.cuda(), b.mT.cuda()), solve(upper, False)(a, b.mT))


@pytest.mark.parametrize("a_shape, b_shape, left", [
    ((3, 3), (2, 3, 2), True),             # A broadcast over B's batch
    ((2, 1, 3, 3), (1, 2, 3, 2), True),    # both broadcast: A's batch copied densely
    ((2, 3, 3), (3, 2), True),             # B broadcast over A's batch
    ((3, 3), (3, 9), True),                # 9 columns: three programs of 4 per matrix
    ((2, 1, 3, 3), (4, 3), False),         # left=False: B's rows are the chunked columns
])
def test_solve_triangular_broadcasts(a_shape, b_shape, left):
    for upper in (False, True):
        a = triangular(*a_shape)
        b = matrix(*b_shape)
        assert_same(solve(upper, left)(a.cuda(), b.cuda()), solve(upper, left)(a, b))


@pytest.mark.parametrize("a_shape, b_shape", [
    ((0, 3, 3), (0, 3, 2)), ((2, 0, 0), (2, 0, 3)), ((3, 3), (3, 0)), ((1, 1), (1, 2)),
    ((2, 1, 1), (2, 1, 1)),
])
def test_solve_triangular_empty_and_tiny(a_shape, b_shape):
    a, b = triangular(*a_shape), matrix(*b_shape)
    for left in (True, False):
        bb = b if left else b.mT
        assert_same(solve(True, left)(a.cuda(), bb.cuda()), solve(True, left)(a, bb))


def test_a_zero_on_the_diagonal_gives_infs_as_trsm():
    """No singularity check (BLAS's trsm has none): inf and nan, where the CPU has them."""
    a = tp.tensor([[[1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.0, 1.0, 1.0]],
                   [[0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]])
    b = tp.tensor([[1.0, 2.0], [1.0, 2.0], [1.0, 0.0]]).expand(2, 3, 2)
    on_cpu = solve(False)(a, b)
    assert np.isinf(on_cpu.numpy()).any() and np.isnan(on_cpu.numpy()).any()
    assert_same(solve(False)(a.cuda(), b.cuda()), on_cpu, tp.float32)


def test_solve_triangular_errors_equal_the_cpus():
    """What the meta rule refuses, refused alike (other dtypes go to the host fallback,
    whose rule and routines say why)."""
    eye = tp.eye(3)
    cases = [(solve(True), (eye, tp.ones(3))),
             (solve(True), (eye, tp.ones(2, 1))),
             (solve(True, False), (eye, tp.ones(3, 1))),
             (solve(True), (tp.ones(2, 3), tp.ones(2, 1))),
             (solve(True), (tp.ones(2, 3, 3), tp.ones(3, 3, 1)))]
    for fn, args in cases:
        assert raised(fn, *[x.cuda() for x in args]) == raised(fn, *args)
    # B of another dtype is cast to A's on both (PyTorch copies B into A's dtype)
    b64 = tp.ones(3, 1, dtype=tp.float64)
    assert_same(solve(True)(eye.cuda(), b64.cuda()), solve(True)(eye, b64), tp.float32)


def test_solve_triangular_gradients_equal_the_cpus():
    a0, b0 = triangular(2, 3, 3), matrix(3, 2)
    grads = []
    for device in ("cpu", "cuda"):
        a = a0.to(device).requires_grad_()
        b = b0.to(device).requires_grad_()
        x = tp.linalg.solve_triangular(a, b, upper=False)
        y = tp.linalg.solve_triangular(a, b.mT, upper=True, left=False, unitriangular=True)
        loss = (x ** 2).sum() + (y * y).sum()
        grads.append([g.cpu().numpy() for g in tp.autograd.grad(loss, [a, b])])
    for got, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


# ---- lu_factor_ex -------------------------------------------------------------------------
def assert_same_lu(on_cuda, on_cpu, dtype=tp.float64):
    assert_same(on_cuda[0], on_cpu.LU, dtype)
    for got, want in ((on_cuda[1], on_cpu.pivots), (on_cuda[2], on_cpu.info)):
        assert got.dtype is tp.int32 and got.shape == want.shape
        assert got.cpu().tolist() == want.tolist()


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_lu_factor_equals_the_cpus(dtype):
    a = matrix(3, 6, 6, dtype=dtype)
    out, text = explained(tp.linalg.lu_factor_ex, a)
    assert "kernel    triton_kernels.triangular.linalg_lu_factor_ex\n" in text + "\n"
    assert "lu factor (registers)" in text
    on_cpu = tp.linalg.lu_factor_ex(a)
    assert_same_lu(out, on_cpu, dtype)
    assert on_cpu.LU.stride() == (36, 1, 6)          # column-major, as LAPACK writes it


def test_lu_factor_of_transposed_broadcast_and_batched_inputs():
    for a in (matrix(2, 4, 4).mT,                     # column-major input
              matrix(1, 3, 3).expand(2, 3, 3),        # batch stride 0
              matrix(2, 2, 3, 3),                     # two batch dims
              matrix(3, 2, 4, 4).permute(1, 0, 2, 3)):  # batch dims that do not merge
        assert_same_lu(tp.linalg.lu_factor_ex(a.cuda()), tp.linalg.lu_factor_ex(a))


def test_lu_factor_pivots_like_getrf():
    """Rows need swapping (a zero on the diagonal, ties of |A[p, j]|: the first wins),
    and singular matrices get getrf's info, the first exactly-zero pivot, the
    elimination going on past it."""
    perm = [[0.0, 1.0, 2.0, 1.0], [3.0, 0.0, 1.0, 2.0], [1.0, 5.0, 0.0, 1.0],
            [-3.0, 1.0, 1.0, 0.0]]
    singular2 = [[1.0, 2.0, 0.0, 1.0], [2.0, 4.0, 0.0, 1.0], [0.0, 0.0, 1.0, 2.0],
                 [1.0, 2.0, 3.0, 4.0]]
    zero_column = [[0.0, 1.0, 0.0, 1.0], [0.0, 2.0, 3.0, 1.0], [0.0, 1.0, 1.0, 2.0],
                   [0.0, 3.0, 1.0, 1.0]]
    zeros = [[0.0] * 4] * 4
    a = tp.tensor([perm, singular2, zero_column, zeros], dtype=tp.float64)
    on_cpu = tp.linalg.lu_factor_ex(a)
    assert on_cpu.info.tolist() == [0, 2, 1, 1]
    assert_same_lu(tp.linalg.lu_factor_ex(a.cuda()), on_cpu)


@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0), (1, 1), (3, 1, 1)])
def test_lu_factor_empty_and_tiny(shape):
    a = matrix(*shape).numpy()
    if shape == (3, 1, 1):
        a[1] = 0.0                                    # info 1 for the second
    a = tp.tensor(a)
    assert_same_lu(tp.linalg.lu_factor_ex(a.cuda()), tp.linalg.lu_factor_ex(a))


def test_lu_factor_errors_name_the_batch_element():
    a = matrix(3, 3, 3).numpy()
    a[1] = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]   # rank 2: U[3, 3] is 0
    a[2, :, 0] = 0.0                                               # U[1, 1] is 0
    a = tp.tensor(a)
    check = lambda x: tp.linalg.lu_factor_ex(x, check_errors=True)   # noqa: E731
    want = raised(check, a)
    assert "(Batch element 1)" in want[1] and "U[3,3] is zero" in want[1]
    assert raised(check, a.cuda()) == want
    assert raised(tp.linalg.lu_factor, a.cuda()) == raised(tp.linalg.lu_factor, a)


def test_lu_factor_refuses_what_the_cpu_refuses():
    no_pivot = lambda x: tp.linalg.lu_factor_ex(x, pivot=False)       # noqa: E731
    for fn, a in [(no_pivot, tp.eye(3)), (tp.linalg.lu_factor_ex, tp.ones(3)),
                  (tp.linalg.lu_factor_ex, tp.ones(3, 3, dtype=tp.int64)),
                  (tp.linalg.lu_factor_ex, tp.ones(2, 2, dtype=tp.float16))]:
        assert raised(fn, a.cuda()) == raised(fn, a)


def test_lu_gradients_through_the_kernel_equal_the_cpus():
    a = matrix(2, 3, 3)
    b = matrix(3, 3)
    grads = []
    for device in ("cpu", "cuda"):
        x = a.to(device).requires_grad_()
        y = b.to(device).requires_grad_()
        LU, pivots, _ = tp.linalg.lu_factor_ex(x)
        P, L, U = tp.linalg.lu(y)
        loss = (LU ** 2).sum() + (L * U).sum()
        grads.append([g.cpu().numpy() for g in tp.autograd.grad(loss, [x, y])])
    for got, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


# ---- which candidate runs -------------------------------------------------------------------
@pytest.mark.parametrize("op, fn, shapes, rule", [
    ("linalg_solve_triangular", solve(True), [(SMALL_N + 1,) * 2, (SMALL_N + 1, 2)],
     f"n <= {SMALL_N} (the matrix in registers)"),
    ("linalg_lu_factor_ex", tp.linalg.lu_factor_ex, [(SMALL_N + 1,) * 2],
     f"square, n <= {SMALL_N} (the matrix in registers)"),
    ("linalg_lu_factor_ex", tp.linalg.lu_factor_ex, [(2, 4, 3)],
     f"square, n <= {SMALL_N} (the matrix in registers)"),
    ("linalg_lu_factor_ex", tp.linalg.lu_factor_ex, [(3, 5)],
     f"square, n <= {SMALL_N} (the matrix in registers)"),
])
def test_large_or_rectangular_matrices_go_to_the_logged_host_fallback(op, fn, shapes, rule,
                                                                      caplog):
    args = [matrix(*s) + 40 * tp.eye(*s[-2:], dtype=tp.float64) for s in shapes]
    with caplog.at_level(logging.INFO, logger="tensorplay.dispatch"):
        out, text = explained(fn, *args)
    assert f"kernel    triton_kernels.triangular.{op}_on_host" in text
    # (The selection is cached by the rules' answers: a second such call hits the cache.)
    assert f"shape rule '{rule}' not met" in text or \
        "cache     hit (float64; shape rules [False])" in text
    assert "registers" not in text.split(f"{op}_on_host")[-1]       # no Triton launch
    assert f"{op} on cuda: no Triton kernel, LAPACK on a host copy" in caplog.text
    on_cpu = fn(*args)
    if isinstance(on_cpu, tuple):
        assert_same_lu(out, on_cpu)
    else:
        assert_same(out, on_cpu)


def test_the_host_guards_hand_over_to_the_fallback(monkeypatch):
    """What the kernels cannot take (Triton checks no bounds) is refused on the host, with
    KernelConstraintError: called directly, the kernel raises it; through dispatch, the
    host fallback takes the call."""
    from triton_kernels import triangular as module
    with pytest.raises(tp.errors.KernelConstraintError, match="not square"):
        module.linalg_lu_factor_ex(matrix(4, 3).cuda(), True, False)
    with pytest.raises(tp.errors.KernelConstraintError, match="n = 33"):
        module.linalg_solve_triangular(matrix(33, 33).cuda(), matrix(33, 1).cuda(), True,
                                       True, False)
    monkeypatch.setattr(module, "MAX_CHUNKS", 2)          # 9 columns: 3 chunks of 4
    a, b = triangular(3, 3), matrix(3, 9)
    x, text = explained(solve(True), a, b)
    assert "kernel    triton_kernels.triangular.linalg_solve_triangular_on_host" in text
    assert_same(x, solve(True)(a, b))
