"""mm/bmm/matmul on `cuda` (triton_kernels/linalg.py) against the CPU backend, and the
second-level registry choosing between the aligned (unmasked) and the generic kernel."""
import pytest

from triton_util import assert_same, make

import tensorplay as tp
from tensorplay.errors import ShapeError
from triton_kernels import linalg

MATMUL_TOL = {tp.float32: (1e-4, 1e-4), tp.float16: (2e-2, 5e-2), tp.bfloat16: (3e-2, 2e-1),
              tp.float64: (1e-10, 1e-10)}


def check_mm(a, b, fn=tp.mm):
    rtol, atol = MATMUL_TOL[a.dtype]
    assert_same(fn(a.cuda(), b.cuda()), fn(a, b), rtol=rtol, atol=atol)


def chosen_kernels(fn):
    with tp.dispatch.explain(file=False) as ex:
        fn()
    return [line.split("kernel", 1)[1].strip() for line in ex.lines
            if line.strip().startswith("kernel ")]


@pytest.mark.parametrize("dtype", [tp.float32, tp.float16, tp.bfloat16, tp.float64],
                         ids=lambda d: d.name)
def test_irregular_shapes_take_the_masked_kernel(dtype):
    a, b = make((37, 53), dtype), make((53, 29), dtype, seed=1)
    check_mm(a, b)
    ca, cb = a.cuda(), b.cuda()
    assert chosen_kernels(lambda: tp.mm(ca, cb)) == ["triton_kernels.linalg.mm"]


@pytest.mark.parametrize("dtype", [tp.float32, tp.float16, tp.bfloat16], ids=lambda d: d.name)
def test_aligned_shapes_take_the_specialised_kernel(dtype):
    a, b = make((64, 32), dtype), make((32, 64), dtype, seed=1)
    check_mm(a, b)
    ca, cb = a.cuda(), b.cuda()
    assert chosen_kernels(lambda: tp.mm(ca, cb)) == ["triton_kernels.linalg.mm_aligned"]


def test_specialised_kernel_hands_over_when_no_block_divides():
    """48 is a multiple of 16 (the ShapeRule passes) but of no tuned block size: the
    aligned kernel raises KernelConstraintError and the generic one takes the call."""
    a, b = make((48, 48)), make((48, 48), seed=1)
    ca, cb = a.cuda(), b.cuda()
    with tp.dispatch.explain(file=False) as ex:
        out = tp.mm(ca, cb)
    assert "hand-over" in ex.text and "mm_aligned raised KernelConstraintError" in ex.text
    assert "kernel    triton_kernels.linalg.mm\n" in ex.text + "\n"
    assert_same(out, tp.mm(a, b), rtol=1e-4, atol=1e-4)


def test_transposed_and_strided_operands_need_no_copy():
    a, b = make((29, 40)), make((33, 29), seed=1)
    check_mm(a.t(), b.t())
    c = make((64, 64), seed=2)
    check_mm(c[::2, :32], c[:32, 1::2])


def test_bmm_and_matmul_rank_rules():
    a, b = make((3, 17, 9)), make((3, 9, 11), seed=1)
    check_mm(a, b, tp.bmm)
    check_mm(make((2, 32, 16)), make((2, 16, 32), seed=1), tp.bmm)   # aligned bmm
    check_mm(make((2, 1, 5, 4)), make((3, 4, 6), seed=1), tp.matmul)  # broadcast batch
    check_mm(make((4,)), make((4, 3), seed=1), tp.matmul)
    check_mm(make((5, 4)), make((4,), seed=1), tp.matmul)
    check_mm(make((4,)), make((4,), seed=1), tp.matmul)


def test_empty_and_zero_k():
    check_mm(make((0, 3)), make((3, 4)))
    check_mm(make((2, 0)), make((0, 4)))


def test_errors_name_the_op():
    with pytest.raises(ShapeError, match=r"mm\(\): 'self' and 'mat2' shapes cannot be"):
        tp.mm(tp.ones(2, 3, device="cuda"), tp.ones(2, 3, device="cuda"))


@pytest.mark.parametrize("dtype", [tp.int64, tp.int32, tp.int8, tp.uint8], ids=lambda d: d.name)
def test_integer_matmul_without_tl_dot(dtype):
    """tl.dot takes no int64: integers take the multiply-and-sum path (int8 wraps around
    exactly as the CPU's int8 matmul does)."""
    a, b = make((5, 37), dtype, low=-20, high=20), make((37, 6), dtype, low=-20, high=20)
    assert_same(tp.mm(a.cuda(), b.cuda()), tp.mm(a, b))
    x, y = make((2, 3, 9), dtype), make((2, 9, 4), dtype, seed=1)
    assert_same(tp.bmm(x.cuda(), y.cuda()), tp.bmm(x, y))


def test_backward_through_mm_and_bmm():
    a, b = make((5, 7)), make((7, 3), seed=1)

    def grads(device, fn, x, y):
        x = x.to(device).detach().requires_grad_()
        y = y.to(device).detach().requires_grad_()
        fn(x, y).sum().backward()
        return x.grad, y.grad

    for fn, x, y in ((tp.mm, a, b), (tp.matmul, make((2, 5, 7)), make((7, 3)))):
        for got, expected in zip(grads("cuda", fn, x, y), grads("cpu", fn, x, y)):
            assert_same(got, expected, rtol=1e-4, atol=1e-4)
