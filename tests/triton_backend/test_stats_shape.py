"""The reduction family on `cuda` against the CPU backend: statistical reductions
(triton_kernels/reduction.py), scans (scan.py), linear algebra beyond mm
(linalg.py) and the shape ops that copy (shape.py), forward and backward."""
import pytest

from triton_util import assert_same, make

import tensorplay as tp

X = make((3, 4, 5), seed=1)
INTS = make((3, 4), tp.int64, low=-3, high=3, seed=2)
A, B, V = make((5, 7), seed=3), make((7, 3), seed=4), make((7,), seed=5)


def check(fn, *args, rtol=None, atol=None):
    def on(device):
        moved = [[t.to(device) for t in a] if isinstance(a, list) else
                 a.to(device) if isinstance(a, tp.Tensor) else a for a in args]
        out = fn(*moved)
        return out[0] if isinstance(out, tuple) else out
    assert_same(on("cuda"), on("cpu"), rtol=rtol, atol=atol)


STATS = {
    "prod": lambda t: tp.prod(t), "prod_dim": lambda t: tp.prod(t, 1, keepdim=True),
    "amax": lambda t: tp.amax(t, [0, 2]), "amin": lambda t: tp.amin(t, [1], True),
    "var": lambda t: tp.var(t, [1]), "std": lambda t: tp.std(t, correction=0),
    "norm2": lambda t: tp.norm(t, 2, [1]), "norm1": lambda t: tp.norm(t, 1),
    "norm_inf": lambda t: tp.norm(t, float("inf"), [2]), "norm3": lambda t: tp.norm(t, 3, [0]),
    "norm0": lambda t: tp.norm(t, 0, [1]),
    "logsumexp": lambda t: tp.logsumexp(t, [1]), "logsumexp_k": lambda t: tp.logsumexp(t, [0, 2], True),
}


@pytest.mark.parametrize("name", sorted(STATS))
def test_statistical_reductions(name):
    check(STATS[name], X, rtol=1e-5, atol=1e-5)


def test_half_inputs_accumulate_in_float32():
    check(lambda t: tp.var(t, [2], keepdim=True), X.half(), rtol=1e-2, atol=1e-2)
    check(lambda t: tp.logsumexp(t, [1]), X.to(tp.bfloat16))
    check(lambda t: tp.prod(t, 2), X.half(), rtol=1e-2, atol=1e-2)


def test_logic_and_counting():
    for name in ("all", "any"):
        fn = getattr(tp, name)
        check(fn, INTS)
        check(lambda t: fn(t, 1), INTS)
        check(lambda t: fn(t, 0, True), INTS.to(tp.uint8))     # uint8 in, uint8 out
        check(fn, tp.zeros(0))
    check(tp.count_nonzero, INTS)
    check(lambda t: tp.count_nonzero(t, [0]), INTS)
    check(tp.prod, INTS)


@pytest.mark.parametrize("dtype", [tp.float32, tp.int64, tp.float16], ids=lambda d: d.name)
def test_cumsum_cumprod_and_in_place(dtype):
    x = X.to(dtype) if dtype.is_floating_point else INTS
    tol = dict(rtol=1e-2, atol=1e-2) if dtype is tp.float16 else {}
    check(lambda t: tp.cumsum(t, 1), x, **tol)
    check(lambda t: tp.cumprod(t, -1), x, **tol)
    check(lambda t: t.clone().cumsum_(0), x, **tol)
    check(lambda t: tp.cumsum(t.transpose(0, 1), 0), x, **tol)


def test_long_scans_carry_across_blocks(monkeypatch):
    from triton_kernels import scan
    monkeypatch.setattr(scan, "MAX_BLOCK_N", 16)
    check(lambda t: tp.cumsum(t, 0), make((100,), seed=7), rtol=1e-5, atol=1e-5)
    check(lambda t: tp.cumprod(t, 1), make((2, 50), low=0.9, high=1.1, seed=8), rtol=1e-5)


def test_products_and_blends():
    check(tp.mv, A, V)
    check(tp.dot, V, V)
    check(lambda s, a, b: tp.addmm(s, a, b, beta=0.5, alpha=2), make((5, 3)), A, B)
    check(lambda s, a, b: tp.addmm(s, a, b, beta=0), make((3,)) * float("nan"), A, B)
    check(lambda s, a, v: tp.addmv(s, a, v, beta=2), make((5,)), A, V)
    check(tp.baddbmm, make((2, 5, 3)), make((2, 5, 7)), make((2, 7, 3)))
    check(lambda s, a, b: s.clone().addmm_(a, b), make((5, 3)), A, B)
    check(lambda a, b: tp.mv(a, b), A.half(), V.half(), rtol=1e-2, atol=1e-2)


def test_linear_forward_and_backward():
    x, w, b = make((2, 4, 7)), make((3, 7), seed=9), make((3,), seed=10)
    check(tp.linear, x, w, b, rtol=1e-5, atol=1e-5)
    check(tp.linear, x.half(), w.half(), b.half(), rtol=1e-2, atol=1e-2)
    check(lambda x, w: tp.linear(x, w), make((4, 7)), w, rtol=1e-5, atol=1e-5)

    def grads(device):
        leaves = [t.to(device).detach().requires_grad_() for t in (x, w, b)]
        tp.linear(*leaves).sum().backward()
        return [leaf.grad for leaf in leaves]

    for got, expected in zip(grads("cuda"), grads("cpu")):
        assert_same(got, expected, rtol=1e-4, atol=1e-4)


def test_triangles_and_diagonals():
    check(lambda t: tp.tril(t, 1), X)
    check(lambda t: tp.triu(t, -1), X)
    check(lambda t: t.clone().tril_(), A)
    check(lambda t: t.t().clone().triu_(2), A)
    for d in (0, 1, -2):
        check(lambda t: tp.diag(t, d), V)
        check(lambda t: tp.diag(t, d), A)


def test_shape_ops_that_copy():
    check(lambda t: tp.flip(t, [0, 2]), X)
    check(lambda t: tp.flip(t.transpose(0, 2), [1]), X)
    check(lambda ts: tp.cat(ts, 1), [make((2, 3)), make((2, 1)), make((2, 0))])
    check(lambda ts: tp.cat(ts, 0), [make((1, 3)), tp.ones(2, 3, dtype=tp.int64)])
    check(lambda t: tp.roll(t, [1, -2], [0, 2]), X)
    check(lambda t: tp.roll(t, 3), X)
    check(lambda t: t.repeat([2, 1, 3]), make((2, 3)))
    check(lambda t: t.repeat([2, 2]), make((3,)))


def test_backward_through_the_reduction_family():
    def grads(device, fn):
        leaf = X.to(device).detach().requires_grad_()
        fn(leaf).sum().backward()
        return leaf.grad

    for fn in (lambda t: tp.logsumexp(t, [1]), lambda t: tp.var(t, [2]),
               lambda t: tp.cumsum(t, 1), lambda t: tp.prod(t, 0),
               lambda t: tp.cat([t, t * 2], 1), lambda t: tp.flip(t, [1]),
               lambda t: tp.amax(t, [1])):
        assert_same(grads("cuda", fn), grads("cpu", fn), rtol=1e-4, atol=1e-5)


def test_repeat_interleave_with_a_number():
    check(lambda t: tp.repeat_interleave(t, 3, 1), make((2, 3)))
    check(lambda t: tp.repeat_interleave(t, 2), make((2, 3)))
    check(lambda t: tp.repeat_interleave(t, 0, 0), make((2, 3)))
