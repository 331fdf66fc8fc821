"""inv, slogdet, solve and cholesky on `cuda` for matrices larger than the Triton kernels
take (n > SMALL_N; test_linalg_kernels.py tests those): the `_on_host` kernels copy the
matrices to the host, run LAPACK there and copy the results back. The results equal the
CPU's (values, layout, LAPACK's info), and the fallback is visible: a log line each call,
and the kernel's name in explain()."""
import logging

import numpy as np

from triton_util import CUDA

import tensorplay as tp
from triton_kernels.linalg import SMALL_N

N = SMALL_N + 1     # one more than the Triton kernels take


def well_conditioned(*shape):
    rng = np.random.default_rng(0)
    return tp.tensor(rng.standard_normal(shape) + shape[-1] * np.eye(shape[-1]),
                     dtype=tp.float32)


def test_results_equal_the_cpus_values_and_layout():
    a = well_conditioned(2, N, N)
    b = tp.tensor(np.random.default_rng(1).standard_normal((2, N, 2)), dtype=tp.float32)
    spd = a @ a.mT
    for fn, args in [(tp.linalg.inv, (a,)), (tp.linalg.cholesky, (spd,)),
                     (tp.linalg.solve, (a.mT, b)), (lambda x: tp.linalg.slogdet(x)[1], (a,))]:
        on_cpu = fn(*args)
        on_cuda = fn(*[x.cuda() for x in args])
        assert on_cuda.device == CUDA
        assert on_cuda.stride() == on_cpu.stride()
        np.testing.assert_allclose(on_cuda.cpu().numpy(), on_cpu.numpy(), rtol=1e-6)


def test_the_ex_forms_return_lapacks_info_on_the_device():
    batch = tp.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]]).cuda()
    _, info = tp.linalg.inv_ex(batch)
    assert info.device == CUDA and info.dtype is tp.int32 and info.cpu().tolist() == [0, 2]


def test_the_host_fallback_is_logged_and_explained(caplog):
    a = well_conditioned(N, N).cuda()
    with caplog.at_level(logging.INFO, logger="tensorplay.dispatch"):
        with tp.dispatch.explain(file=False) as ex:
            tp.linalg.inv(a)
    assert "linalg_inv_ex on cuda: no Triton kernel, LAPACK on a host copy" in caplog.text
    assert "triton_kernels.linalg.linalg_inv_ex_on_host" in ex.text


def test_matrix_exp_on_cuda_equals_the_cpus_and_its_gradient_too(caplog):
    """linalg_matrix_exp's `_on_host` kernel: SciPy's expm on a host copy (a transposed,
    batched input), logged; its gradient (an exp of a block matrix) runs the same kernel."""
    x = tp.tensor(np.random.default_rng(2).standard_normal((2, 4, 4)), dtype=tp.float64).mT
    on_cpu = tp.linalg.matrix_exp(x)
    with caplog.at_level(logging.INFO, logger="tensorplay.dispatch"):
        on_cuda = x.cuda().matrix_exp()
    assert on_cuda.device == CUDA and on_cuda.stride() == on_cpu.stride()
    assert "linalg_matrix_exp on cuda: no Triton kernel" in caplog.text
    np.testing.assert_allclose(on_cuda.cpu().numpy(), on_cpu.numpy(), rtol=1e-12, atol=1e-12)
    g = tp.ones((2, 4, 4), dtype=tp.float64)
    grads = [tp.autograd.grad(tp.linalg.matrix_exp(a), a, g.to(a.device))[0]
             for a in (x.detach().requires_grad_(), x.cuda().detach().requires_grad_())]
    assert grads[1].device == CUDA
    np.testing.assert_allclose(grads[1].cpu().numpy(), grads[0].numpy(), rtol=1e-12, atol=1e-12)
