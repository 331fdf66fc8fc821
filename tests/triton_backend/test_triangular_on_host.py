"""The triangular factorizations and solves on `cuda` (but solve_triangular and
lu_factor_ex of small matrices, Triton kernels: test_triangular_kernels.py): the
`_on_host` kernels (triton_kernels/triangular.py) copy the matrices to the host, run
SciPy's LAPACK there and copy the results back. The results equal the CPU's (values,
layout, pivots, LAPACK's info), and the fallback is visible: a log line each call, and
the kernel's name in explain()."""
import logging

import numpy as np

from triton_util import CUDA

import tensorplay as tp


def well_conditioned(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return tp.tensor(rng.standard_normal(shape) + shape[-1] * np.eye(shape[-1]),
                     dtype=tp.float32)


def _flat(result):
    return list(result) if isinstance(result, tuple) else [result]


def test_results_equal_the_cpus_values_and_layout():
    a = well_conditioned(2, 3, 3)
    b = tp.tensor(np.random.default_rng(1).standard_normal((2, 3, 2)), dtype=tp.float32)
    LU, pivots = tp.linalg.lu_factor(a)
    sym = a + a.mT
    LD, ld_pivots = tp.linalg.ldl_factor(sym)
    cases = [
        (tp.linalg.lu_factor_ex, (a,), {}),
        (tp.linalg.lu, (a,), {}),
        (tp.lu_unpack, (LU, pivots), {}),
        (tp.linalg.lu_solve, (LU, pivots, b), {"adjoint": True}),
        (tp.linalg.lu_solve, (LU, pivots, b.mT), {"left": False}),
        (tp.linalg.solve_ex, (a, b), {}),
        (tp.linalg.solve_triangular, (a, b), {"upper": True}),
        (tp.linalg.solve_triangular, (a.mT, b.mT), {"upper": False, "left": False}),
        (tp.triangular_solve, (b, a), {"transpose": True}),
        (tp.cholesky_solve, (b, a.tril()), {}),
        (tp.cholesky_inverse, (a.triu(),), {"upper": True}),
        (tp.linalg.ldl_factor_ex, (sym,), {}),
        (tp.linalg.ldl_solve, (LD, ld_pivots, b), {}),
    ]
    for fn, args, kwargs in cases:
        on_cpu = _flat(fn(*args, **kwargs))
        on_cuda = _flat(fn(*[x.cuda() for x in args], **kwargs))
        for got, expected in zip(on_cuda, on_cpu):
            assert got.device == CUDA and got.dtype is expected.dtype
            assert got.stride() == expected.stride(), fn
            np.testing.assert_allclose(got.cpu().numpy(), expected.numpy(), rtol=1e-6,
                                       atol=1e-6)


def test_the_ex_forms_return_lapacks_info_on_the_device():
    batch = tp.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]]).cuda()
    _, pivots, info = tp.linalg.lu_factor_ex(batch)
    assert info.device == CUDA and info.dtype is tp.int32 and info.cpu().tolist() == [0, 2]
    assert pivots.dtype is tp.int32 and pivots.cpu().tolist() == [[1, 2], [2, 2]]
    _, info = tp.linalg.solve_ex(batch, tp.ones((2, 2, 1)).cuda())
    assert info.cpu().tolist() == [0, 2]


def test_the_host_fallback_is_logged_and_explained(caplog):
    # (triangular_solve: solve_triangular of a 3 x 3 matrix runs a Triton kernel, tested in
    # test_triangular_kernels.py with its own fallback.)
    a = well_conditioned(3, 3).cuda()
    with caplog.at_level(logging.INFO, logger="tensorplay.dispatch"):
        with tp.dispatch.explain(file=False) as ex:
            tp.triangular_solve(a, a, upper=True)
    assert "triangular_solve on cuda: no Triton kernel, LAPACK on a host copy" in caplog.text
    assert "triton_kernels.triangular.triangular_solve_on_host" in ex.text


def test_gradients_flow_through_the_host_fallback():
    a = well_conditioned(3, 3)
    cpu = a.detach().requires_grad_(True)
    cuda = a.cuda().detach().requires_grad_(True)
    for x in (cpu, cuda):
        P, L, U = tp.linalg.lu(x)
        (L.sum() + (U * U).sum()).backward()
    np.testing.assert_allclose(cuda.grad.cpu().numpy(), cpu.grad.numpy(), rtol=1e-5, atol=1e-5)
