"""QR and least squares on `cuda`: no Triton kernel yet, so linalg_qr, geqrf and lstsq's
`_on_host` kernels copy the matrices to the host, run LAPACK there and copy the results
back. The results equal the CPU's (values and layout), the Householder products (Composite)
run op by op on the device, and the fallback is visible: a log line each call, and the
kernel's name in explain()."""
import logging

import numpy as np

from triton_util import CUDA

import tensorplay as tp


def rand(*shape, seed=0, dtype=tp.float32):
    return tp.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=dtype)


def same(on_cuda, on_cpu, rtol=1e-5):
    assert on_cuda.device == CUDA
    assert on_cuda.shape == on_cpu.shape and on_cuda.dtype is on_cpu.dtype
    assert on_cuda.stride() == on_cpu.stride()
    np.testing.assert_allclose(on_cuda.cpu().numpy(), on_cpu.numpy(), rtol=rtol, atol=rtol)


def test_qr_and_geqrf_equal_the_cpus_values_and_layout():
    a = rand(2, 5, 3)
    for mode in ("reduced", "complete", "r"):
        for got, expected in zip(tp.linalg.qr(a.cuda(), mode=mode), tp.linalg.qr(a, mode=mode)):
            same(got, expected)
    packed, tau = tp.geqrf(a.cuda())
    for got, expected in zip((packed, tau), tp.geqrf(a)):
        same(got, expected)
    # the Householder products: Composite, on the device
    same(tp.linalg.householder_product(packed, tau), tp.linalg.householder_product(*tp.geqrf(a)))
    c = rand(2, 5, 2, seed=1)
    same(tp.ormqr(packed, tau, c.cuda(), transpose=True), tp.ormqr(*tp.geqrf(a), c,
                                                                   transpose=True))


def test_lstsq_equals_the_cpus_for_each_driver():
    a, b = rand(2, 6, 3, dtype=tp.float64), rand(1, 6, 2, seed=2, dtype=tp.float64)
    for driver in ("gels", "gelsy", "gelsd", "gelss"):
        got = tp.linalg.lstsq(a.cuda(), b.cuda(), driver=driver)
        expected = tp.linalg.lstsq(a, b, driver=driver)
        for x, y in zip(got, expected):
            same(x, y, rtol=1e-10)


def test_the_host_fallback_is_logged_and_explained(caplog):
    a = rand(4, 3).cuda()
    with caplog.at_level(logging.INFO, logger="tensorplay.dispatch"):
        with tp.dispatch.explain(file=False) as ex:
            tp.linalg.lstsq(a, a)
    assert "linalg_lstsq on cuda: no Triton kernel, LAPACK on a host copy" in caplog.text
    assert "triton_kernels.qr.linalg_lstsq_on_host" in ex.text
