"""The Triton kernels for batched small matrices (triton_kernels/linalg.py): Cholesky, and
Gauss-Jordan LU for inv, solve and slogdet, one program per matrix in registers.

On `cuda` they must give what the CPU (LAPACK) gives: values, PyTorch's layout, LAPACK's
info, and the same errors naming the same batch element, over batched, empty,
transposed-in-memory, singular and not-positive-definite inputs. A matrix larger than
SMALL_N goes to the host fallback, and explain() says which one ran.

Shapes stay small (n <= 8, batch <= 3): in the interpreter every program is Python."""
import logging

import numpy as np
import pytest

from triton_util import CUDA

import tensorplay as tp
from triton_kernels.linalg import SMALL_N

RNG = np.random.default_rng(28)
TOL = {tp.float32: dict(rtol=1e-4, atol=1e-5), tp.float64: dict(rtol=1e-10, atol=1e-12)}


def matrix(*shape, dtype=tp.float64):
    """Well-conditioned matrices (a dominant diagonal), not symmetric."""
    n = shape[-1]
    return tp.tensor(RNG.standard_normal(shape) + n * np.eye(n), dtype=dtype)


def spd(*shape, dtype=tp.float64):
    a = RNG.standard_normal(shape)
    return tp.tensor(a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1]), dtype=dtype)


def explained(fn, *args):
    """fn on cuda copies of args, with the text of explain()."""
    with tp.dispatch.explain(file=False) as ex:
        out = fn(*[a.cuda() for a in args])
    return out, ex.text


def assert_same(on_cuda, on_cpu, dtype, where=None):
    """Same values (only at `where`, a mask over the batch, if given), dtype and strides."""
    assert on_cuda.device == CUDA
    assert on_cuda.dtype is on_cpu.dtype
    assert on_cuda.shape == on_cpu.shape
    assert on_cuda.stride() == on_cpu.stride()
    got, want = on_cuda.cpu().numpy(), on_cpu.numpy()
    if where is not None:
        got, want = got[where], want[where]
    np.testing.assert_allclose(got, want, **TOL[dtype])


def raised(fn, *args):
    with pytest.raises(tp.errors.TensorPlayError) as e:
        fn(*args)
    return type(e.value), str(e.value)


# ---- Cholesky ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_equals_the_cpus(dtype, upper):
    a = spd(3, 5, 5, dtype=dtype)
    on_cpu = tp.linalg.cholesky_ex(a, upper=upper)
    (factor, info), text = explained(lambda x: tp.linalg.cholesky_ex(x, upper=upper), a)
    assert "kernel    triton_kernels.linalg.linalg_cholesky_ex\n" in text + "\n"
    assert "cholesky (registers)" in text
    assert_same(factor, on_cpu.L, dtype)
    assert info.dtype is tp.int32 and info.cpu().tolist() == [0, 0, 0]


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_reads_one_triangle(upper):
    """LAPACK reads only the lower (upper) triangle: garbage in the other one is ignored.
    The input is also transposed in memory (column-major)."""
    a = spd(2, 4, 4).numpy()
    garbage = np.triu(RNG.standard_normal((2, 4, 4)), 1)
    a = np.tril(a) + garbage if not upper else np.triu(a) + np.swapaxes(garbage, -1, -2)
    t = tp.tensor(np.swapaxes(a, -1, -2).copy()).mT          # strides (16, 1, 4)
    assert not t.is_contiguous()
    on_cpu = tp.linalg.cholesky(t, upper=upper)
    assert_same(tp.linalg.cholesky(t.cuda(), upper=upper), on_cpu, tp.float64)


def test_cholesky_info_names_the_first_bad_minor():
    """info = the order of the first leading minor that is not positive-definite; the
    factor of a failed matrix is undefined (read info), the others' are exact."""
    good = spd(4, 4).numpy()
    bad2 = good.copy()
    bad2[1, 1] = bad2[1, 0] ** 2 / bad2[0, 0] - 1        # the 2 x 2 minor: det < 0
    bad1 = good.copy()
    bad1[0, 0] = -1.0
    a = tp.tensor(np.stack([good, bad2, bad1]))
    on_cpu = tp.linalg.cholesky_ex(a)
    factor, info = tp.linalg.cholesky_ex(a.cuda())
    assert info.cpu().tolist() == on_cpu.info.tolist() == [0, 2, 1]
    assert_same(factor, on_cpu.L, tp.float64, where=np.array([True, False, False]))
    # PyTorch's factor after a failure on a 2 x 2 matrix (potf2 stops there).
    factor, info = tp.linalg.cholesky_ex(tp.tensor([[1.0, 2.0], [2.0, 1.0]]).cuda())
    assert info.item() == 2 and factor.cpu().tolist() == [[1.0, 0.0], [2.0, -3.0]]


def test_cholesky_errors_name_the_batch_element():
    a = spd(3, 3, 3).numpy()
    a[2, 0, 0] = -1.0
    a = tp.tensor(a)
    want = raised(tp.linalg.cholesky, a)
    assert "(Batch element 2)" in want[1] and "order 1" in want[1]
    assert raised(tp.linalg.cholesky, a.cuda()) == want
    assert raised(lambda x: tp.linalg.cholesky_ex(x, check_errors=True), a.cuda()) == \
        raised(lambda x: tp.linalg.cholesky_ex(x, check_errors=True), a)


@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0), (1, 1)])
def test_cholesky_empty_and_tiny(shape):
    a = spd(*shape) if shape[-1] else tp.zeros(*shape, dtype=tp.float64)
    on_cpu = tp.linalg.cholesky_ex(a)
    factor, info = tp.linalg.cholesky_ex(a.cuda())
    assert_same(factor, on_cpu.L, tp.float64)
    assert info.shape == on_cpu.info.shape and info.cpu().tolist() == on_cpu.info.tolist()


# ---- inverse ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_inverse_equals_the_cpus(dtype):
    a = matrix(3, 6, 6, dtype=dtype)
    (inverse, info), text = explained(tp.linalg.inv_ex, a)
    assert "kernel    triton_kernels.linalg.linalg_inv_ex\n" in text + "\n"
    assert "lu (registers, identity)" in text
    assert_same(inverse, tp.linalg.inv(a), dtype)
    assert info.cpu().tolist() == [0, 0, 0]


def test_inverse_of_a_transposed_and_a_broadcast_batch():
    a = matrix(2, 5, 5)
    assert_same(tp.linalg.inv(a.cuda().mT), tp.linalg.inv(a.mT), tp.float64)
    b = matrix(1, 3, 3).expand(2, 3, 3)               # batch stride 0
    assert_same(tp.linalg.inv(b.cuda()), tp.linalg.inv(b), tp.float64)


def test_inverse_pivots_like_getrf():
    """Rows need swapping (a zero on the diagonal), and singular matrices get getrf's info:
    the first exactly-zero pivot."""
    perm = tp.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 1.0], [1.0, 5.0, 0.0]])
    singular2 = tp.tensor([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]])
    zero_column = tp.tensor([[0.0, 1.0, 0.0], [0.0, 2.0, 3.0], [0.0, 1.0, 1.0]])
    a = tp.stack([perm, singular2, zero_column])
    on_cpu = tp.linalg.inv_ex(a)
    inverse, info = tp.linalg.inv_ex(a.cuda())
    assert info.cpu().tolist() == on_cpu.info.tolist() == [0, 2, 1]
    assert_same(inverse, on_cpu.inverse, tp.float32, where=np.array([True, False, False]))
    want = raised(tp.linalg.inv, a)
    assert "(Batch element 1)" in want[1]
    assert raised(tp.linalg.inv, a.cuda()) == want


@pytest.mark.parametrize("shape", [(0, 4, 4), (3, 0, 0), (1, 1)])
def test_inverse_empty_and_tiny(shape):
    a = matrix(*shape) if shape[-1] else tp.zeros(*shape, dtype=tp.float64)
    on_cpu = tp.linalg.inv_ex(a)
    inverse, info = tp.linalg.inv_ex(a.cuda())
    assert_same(inverse, on_cpu.inverse, tp.float64)
    assert info.shape == on_cpu.info.shape and info.cpu().tolist() == on_cpu.info.tolist()


# ---- slogdet ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_slogdet_equals_the_cpus(dtype):
    a = matrix(3, 5, 5, dtype=dtype).numpy()
    a[1] = a[1][[1, 0, 2, 3, 4]]                       # one swap: a negative determinant
    a[2] *= -1                                         # 5 rows negated: negative too
    a = tp.tensor(a)
    (sign, logabsdet), text = explained(tp.linalg.slogdet, a)
    assert "kernel    triton_kernels.linalg.linalg_slogdet\n" in text + "\n"
    assert "lu (registers, none)" in text
    on_cpu = tp.linalg.slogdet(a)
    assert on_cpu.sign.tolist() == [1.0, -1.0, -1.0]
    assert_same(sign, on_cpu.sign, dtype)
    assert_same(logabsdet, on_cpu.logabsdet, dtype)


def test_slogdet_of_singular_empty_and_transposed():
    singular = tp.tensor([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [1.0, 1.0]]],
                         dtype=tp.float64)
    for a in (singular, tp.zeros(2, 0, 0), tp.zeros(0, 3, 3), matrix(2, 4, 4).mT):
        on_cpu = tp.linalg.slogdet(a)
        sign, logabsdet = tp.linalg.slogdet(a.cuda())
        assert_same(sign, on_cpu.sign, a.dtype)
        assert_same(logabsdet, on_cpu.logabsdet, a.dtype)
    assert tp.linalg.slogdet(singular.cuda()).logabsdet.cpu().tolist() == [-np.inf] * 2


# ---- solve ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
@pytest.mark.parametrize("left", [True, False])
def test_solve_equals_the_cpus(dtype, left):
    a = matrix(2, 4, 4, dtype=dtype)
    b = tp.tensor(RNG.standard_normal((2, 4, 3) if left else (2, 3, 4)), dtype=dtype)
    x, text = explained(lambda p, q: tp.linalg.solve(p, q, left=left), a, b)
    assert "kernel    triton_kernels.linalg.linalg_solve\n" in text + "\n"
    assert "lu (registers, B)" in text
    assert_same(x, tp.linalg.solve(a, b, left=left), dtype)


@pytest.mark.parametrize("a_shape, b_shape", [
    ((3, 3), (3,)),                 # a vector B
    ((2, 3, 3), (2, 3)),            # a batch of vectors
    ((2, 2, 3, 3), (2, 2, 3)),      # two batch dims of vectors: the result is copied back
    ((3, 3), (2, 3, 2)),            # A broadcast over B's batch
    ((2, 1, 3, 3), (1, 2, 3, 2)),   # both broadcast: A's batch copied densely
    ((3, 3), (3, 9)),               # 9 columns: three programs of 4 columns per matrix
])
def test_solve_broadcasts_and_vectors(a_shape, b_shape):
    a, b = matrix(*a_shape), tp.tensor(RNG.standard_normal(b_shape))
    assert_same(tp.linalg.solve(a.cuda(), b.cuda()), tp.linalg.solve(a, b), tp.float64)


def test_solve_with_a_transposed_b_and_left_false_broadcast():
    a = matrix(3, 3)
    b = tp.tensor(RNG.standard_normal((2, 4, 3))).mT      # (2, 3, 4), column-major
    assert_same(tp.linalg.solve(a.cuda(), b.cuda()), tp.linalg.solve(a, b), tp.float64)
    c = tp.tensor(RNG.standard_normal((2, 5, 3)))
    assert_same(tp.linalg.solve(a.cuda().mT, c.cuda(), left=False),
                tp.linalg.solve(a.mT, c, left=False), tp.float64)


def test_solve_singular_names_the_batch_element():
    a = matrix(3, 3, 3).numpy()
    a[1] = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]   # rank 2: pivot 3 is 0
    a = tp.tensor(a)
    b = tp.ones(3, 3, 1, dtype=tp.float64)
    want = raised(tp.linalg.solve, a, b)
    assert "(Batch element 1)" in want[1] and "singular" in want[1]
    assert raised(tp.linalg.solve, a.cuda(), b.cuda()) == want
    # With no columns in B the factorization still runs, and still fails (as LAPACK).
    z = tp.zeros(2, 2, dtype=tp.float64)
    assert raised(tp.linalg.solve, z.cuda(), tp.zeros(2, 0, dtype=tp.float64).cuda()) == \
        raised(tp.linalg.solve, z, tp.zeros(2, 0, dtype=tp.float64))


def test_solve_empty_batches():
    for a, b in [(tp.zeros(0, 3, 3), tp.zeros(0, 3, 2)), (tp.zeros(2, 0, 0), tp.zeros(2, 0, 1))]:
        assert_same(tp.linalg.solve(a.cuda(), b.cuda()), tp.linalg.solve(a, b), tp.float32)


def test_errors_equal_the_cpus():
    """What the meta rules refuse, refused alike (the host fallback takes the other dtypes
    and its rule says why)."""
    cases = [(tp.linalg.inv, (tp.ones(2, 3),)),
             (tp.linalg.cholesky, (tp.ones(3, 3, dtype=tp.int64),)),
             (tp.linalg.slogdet, (tp.ones(3),)),
             (tp.linalg.inv, (tp.ones(2, 2, dtype=tp.float16),)),
             (tp.linalg.solve, (tp.eye(3), tp.ones(2, 4, 1))),
             (tp.linalg.solve, (tp.eye(3), tp.ones(3, 1, dtype=tp.float64))),
             (lambda a, b: tp.linalg.solve(a, b, left=False), (tp.eye(3), tp.ones(3)))]
    for fn, args in cases:
        assert raised(fn, *[x.cuda() for x in args]) == raised(fn, *args)


def test_gradients_through_the_kernels_equal_the_cpus():
    a = matrix(2, 3, 3)
    b = tp.tensor(RNG.standard_normal((2, 3, 2)))
    grads = []
    for device in ("cpu", "cuda"):
        x = a.to(device).requires_grad_()
        y = b.to(device).requires_grad_()
        loss = (tp.linalg.solve(x, y) ** 2).sum() + tp.linalg.slogdet(x).logabsdet.sum()
        grads.append([g.cpu().numpy() for g in tp.autograd.grad(loss, [x, y])])
    for got, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


# ---- which candidate runs ---------------------------------------------------------------
@pytest.mark.parametrize("op, make", [
    ("linalg_inv_ex", lambda n: (tp.linalg.inv, (matrix(n, n),))),
    ("linalg_slogdet", lambda n: (tp.linalg.slogdet, (matrix(n, n),))),
    ("linalg_solve", lambda n: (tp.linalg.solve, (matrix(n, n), tp.ones(n, 2, dtype=tp.float64)))),
    ("linalg_cholesky_ex", lambda n: (tp.linalg.cholesky, (spd(n, n),))),
])
def test_a_large_matrix_goes_to_the_logged_host_fallback(op, make, caplog):
    fn, args = make(SMALL_N + 1)
    with caplog.at_level(logging.INFO, logger="tensorplay.dispatch"):
        out, text = explained(fn, *args)
    assert f"kernel    triton_kernels.linalg.{op}_on_host" in text
    assert f"shape rule 'n <= {SMALL_N} (the matrix in registers)' not met" in text
    assert "registers" not in text.split(f"{op}_on_host")[-1]       # no Triton launch
    assert f"{op} on cuda: no Triton kernel, LAPACK on a host copy" in caplog.text
    on_cpu = fn(*args)
    out, on_cpu = (out[1], on_cpu[1]) if isinstance(on_cpu, tuple) else (out, on_cpu)
    assert_same(out, on_cpu, tp.float64)
