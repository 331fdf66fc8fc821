"""The matmul's fused epilogue on `cuda` (triton_kernels/linalg.py,
matmul_epilogue_kernel) against PyTorch: linear's bias, addmm / addmv / baddbmm's
beta * self + alpha * product, written once in the output dtype; broadcast and strided
biases, beta = 0 (self not read: NaN in it stays out), masked and aligned tiles, half
types rounded once, an empty K, gradients; and one kernel launch where there were two."""
import numpy as np
import pytest
import torch

from triton_util import CUDA, host, make

import tensorplay as tp
import tensorplay.nn.functional as NF

TORCH = {tp.float32: torch.float32, tp.float16: torch.float16, tp.bfloat16: torch.bfloat16,
         tp.float64: torch.float64}
TOL = {tp.float32: 1e-4, tp.float16: 2e-3, tp.bfloat16: 1.6e-2, tp.float64: 1e-12}


def torch_of(t):
    return torch.tensor(host(t), dtype=TORCH[t.dtype])


def check(fn, *tensors, grad=False):
    dtype = tensors[0].dtype
    ours = [t.cuda().requires_grad_(grad) for t in tensors]
    refs = [torch_of(t).requires_grad_(grad) for t in tensors]
    out = fn(tp, NF, *ours)
    ref = fn(torch, torch.nn.functional, *refs)
    assert out.device == CUDA and out.dtype is dtype and tuple(out.shape) == tuple(ref.shape)
    tol = TOL[dtype]
    np.testing.assert_allclose(host(out), ref.detach().double().numpy(), rtol=tol, atol=tol,
                               equal_nan=True)
    if grad:
        out.sum().backward()
        ref.sum().backward()
        for t, r in zip(ours, refs):
            np.testing.assert_allclose(host(t.grad), r.grad.double().numpy(), rtol=tol,
                                       atol=tol)


def triton_hops(fn):
    with tp.dispatch.explain(file=False) as ex:
        fn()
    return [line for line in ex.lines if line.strip().startswith("triton")]


@pytest.mark.parametrize("dtype", [tp.float32, tp.float16, tp.bfloat16], ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(5, 7, 3), (32, 16, 48)], ids=["masked", "aligned"])
def test_linear_adds_its_bias_in_the_epilogue(dtype, shape):
    rows, features, out_features = shape
    x = make((rows, features), dtype, seed=1)
    w = make((out_features, features), dtype, seed=2)
    b = make((out_features,), dtype, seed=3)
    check(lambda lib, F, x, w, b: F.linear(x, w, b), x, w, b)
    check(lambda lib, F, x, w: F.linear(x, w), x, w)


def test_linear_is_one_kernel_and_differentiates():
    x, w, b = make((2, 3, 5), seed=4), make((4, 5), seed=5), make((4,), seed=6)
    hops = triton_hops(lambda: NF.linear(x.cuda(), w.cuda(), b.cuda()))
    assert len(hops) == 1 and "epilogue" in hops[0]
    check(lambda lib, F, x, w, b: F.linear(x, w, b), x, w, b, grad=True)
    check(lambda lib, F, x, w, b: F.linear(x, w, b), make((5,), seed=7), w, b)   # 1-d input


@pytest.mark.parametrize("dtype", [tp.float32, tp.bfloat16], ids=lambda d: d.name)
def test_addmm_beta_alpha_and_broadcast_self(dtype):
    a, b = make((6, 4), dtype, seed=8), make((4, 5), dtype, seed=9)
    for s in (make((6, 5), dtype, seed=10), make((5,), dtype, seed=11),
              make((6, 1), dtype, seed=12), make((), dtype, seed=13)):
        check(lambda lib, F, s, a, b: lib.addmm(s, a, b, beta=0.5, alpha=-2.0), s, a, b)
    wide = make((5, 6), dtype, seed=14)
    check(lambda lib, F, s, a, b: lib.addmm(s.t(), a, b), wide, a, b)      # strided self
    check(lambda lib, F, s, a, b: lib.addmm(s, a.t(), b.t()), make((4, 4), dtype, seed=15),
          make((6, 4), dtype, seed=16), make((4, 6), dtype, seed=17))


def test_beta_zero_ignores_nan_in_self():
    a, b = make((3, 4), seed=18), make((4, 2), seed=19)
    s = tp.full((3, 2), float("nan"))
    check(lambda lib, F, s, a, b: lib.addmm(s, a, b, beta=0), s, a, b)


def test_addmv_baddbmm_and_an_empty_k():
    check(lambda lib, F, s, m, v: lib.addmv(s, m, v, beta=2.0, alpha=0.5),
          make((5,), seed=20), make((5, 3), seed=21), make((3,), seed=22))
    check(lambda lib, F, s, a, b: lib.baddbmm(s, a, b, beta=0.25, alpha=3.0),
          make((2, 3, 4), seed=23), make((2, 3, 5), seed=24), make((2, 5, 4), seed=25))
    check(lambda lib, F, s, a, b: lib.baddbmm(s, a, b), make((4,), seed=26),
          make((2, 3, 5), seed=27), make((2, 5, 4), seed=28))             # broadcast self
    check(lambda lib, F, s, a, b: lib.addmm(s, a, b, beta=3.0), make((3, 2), seed=29),
          tp.zeros((3, 0)), tp.zeros((0, 2)))                             # beta * self only
    check(lambda lib, F, s, a, b: lib.addmm(s, a, b), make((3, 2), seed=30),
          make((3, 4), seed=31), make((4, 2), seed=32), grad=True)


def test_in_place_and_integer_calls_keep_the_two_kernels():
    s = make((3, 2), seed=33).cuda()
    expected = torch_of(s.cpu()).addmm_(torch_of(make((3, 4), seed=34)),
                                        torch_of(make((4, 2), seed=35)), beta=0.5)
    a, b = make((3, 4), seed=34).cuda(), make((4, 2), seed=35).cuda()
    assert len(triton_hops(lambda: s.addmm_(a, b, beta=0.5))) == 2   # product, scaled sum
    np.testing.assert_allclose(host(s), expected.double().numpy(), rtol=1e-5, atol=1e-5)
    i = tp.addmm(tp.ones((2, 2), dtype=tp.int64, device="cuda"),
                 tp.ones((2, 3), dtype=tp.int64, device="cuda"),
                 tp.ones((3, 2), dtype=tp.int64, device="cuda"))
    assert i.dtype is tp.int64 and host(i).tolist() == [[4, 4], [4, 4]]
