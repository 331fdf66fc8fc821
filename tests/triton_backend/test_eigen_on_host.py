"""svd, eigh and det on `cuda`: no Triton kernel yet, so the `_on_host` kernels copy the
matrices to the host, run LAPACK there and copy the results back. The results equal the
CPU's (values, and LAPACK's column-major layout of the vectors), errors are the CPU's, and
the fallback is visible: a log line each call, and the kernel's name in explain()."""
import logging

import numpy as np
import pytest

from triton_util import CUDA

import tensorplay as tp


def matrices(*shape):
    return tp.tensor(np.random.default_rng(0).standard_normal(shape), dtype=tp.float32)


def test_results_equal_the_cpus_values_and_layout():
    a = matrices(2, 4, 3)
    sym = a[..., :3, :] + a[..., :3, :].mT
    cases = [(lambda x: tp.linalg.svd(x), a), (lambda x: tp.linalg.svd(x, False), a.mT),
             (tp.linalg.svdvals, a), (tp.linalg.eigh, sym),
             (lambda x: tp.linalg.eigh(x, "U"), sym), (tp.linalg.eigvalsh, sym),
             (tp.linalg.det, sym), (tp.linalg.pinv, a), (tp.linalg.matrix_rank, a),
             (tp.linalg.cond, sym)]
    for fn, x in cases:
        on_cpu, on_cuda = fn(x), fn(x.cuda())
        for c, g in zip(on_cpu if isinstance(on_cpu, tuple) else (on_cpu,),
                        on_cuda if isinstance(on_cuda, tuple) else (on_cuda,)):
            assert g.device == CUDA
            assert g.stride() == c.stride() and g.dtype is c.dtype
            # the same LAPACK routine on the same host values: the same vectors, signs too
            np.testing.assert_allclose(g.cpu().numpy(), c.numpy(), rtol=1e-5, atol=1e-6)


def test_gradients_equal_the_cpus():
    a = matrices(3, 3)
    grads = []
    for device in ("cpu", "cuda"):
        x = a.detach().clone().to(device).requires_grad_(True)
        U, S, Vh = tp.linalg.svd(x)
        ((U @ Vh) * S.sum() + tp.linalg.det(x)).sum().backward()
        grads.append(x.grad.cpu().numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)


def test_a_nonfinite_matrix_raises_on_cuda_as_on_the_cpu():
    bad = tp.tensor([[[1.0, 0.0], [0.0, 1.0]], [[float("nan"), 1.0], [1.0, 1.0]]]).cuda()
    with pytest.raises(tp.linalg.LinAlgError, match=r"linalg_svd\(\): \(Batch element 1\): "
                       r"The algorithm failed to converge because the input matrix "
                       r"contained non-finite values"):
        tp.linalg.svd(bad)


def test_the_host_fallback_is_logged_and_explained(caplog):
    a = matrices(3, 3).cuda()
    with caplog.at_level(logging.INFO, logger="tensorplay.dispatch"):
        with tp.dispatch.explain(file=False) as ex:
            tp.linalg.svd(a)
            tp.linalg.eigh(a)
            tp.linalg.det(a)
    for op in ("_linalg_svd", "_linalg_eigh", "linalg_det"):
        assert f"{op} on cuda: no Triton kernel, LAPACK on a host copy" in caplog.text
    for kernel in ("linalg_svd_on_host", "linalg_eigh_on_host", "linalg_det_on_host"):
        assert f"triton_kernels.eigen.{kernel}" in ex.text
