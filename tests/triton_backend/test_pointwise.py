"""Pointwise ops on `cuda` (triton_kernels/pointwise.py) against the CPU backend:
broadcasting, non-contiguous operands, type promotion, half types computed in float32,
in-place variants, scalar overloads, backward, and the generated source."""
import pytest

from triton_util import assert_same, make

import tensorplay as tp
import triton_kernels
from tensorplay.errors import DTypeError
from triton_kernels import _template, pointwise

POSITIVE = {"log", "sqrt", "pow", "xlogy"}   # ops tested on positive inputs (first arg)
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "xlogy",
          "eq", "ne", "lt", "le", "gt", "ge"]
UNARY = ["neg", "abs", "sign", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu"]
INT_OK = {"add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
          "neg", "abs", "sign", "relu", "exp", "sin", "tanh", "sigmoid"}
DIFFERENTIABLE = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "xlogy",
                  "neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu"}


def inputs(name, shapes, dtypes, seed=0):
    low = 0.25 if name in POSITIVE else -2.0
    out = []
    for i, (shape, dtype) in enumerate(zip(shapes, dtypes)):
        lo = low if i == 0 or name != "pow" else -2.0
        out.append(make(shape, dtype, low=lo if dtype.is_floating_point else 0, seed=seed + i))
    return out


def check(name, cpu_args, **tol):
    fn = getattr(tp, name)
    expected = fn(*cpu_args)
    got = fn(*[a.cuda() for a in cpu_args])
    assert_same(got, expected, **tol)


@pytest.mark.parametrize("name", BINARY)
def test_binary_broadcast_and_strides(name):
    a, b = inputs(name, [(3, 1, 5), (5, 4)], [tp.float32, tp.float32])
    check(name, [a, b.t()])                  # b.t() is a non-contiguous [4, 5] view


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16, tp.float64], ids=lambda d: d.name)
def test_binary_other_float_dtypes(name, dtype):
    check(name, inputs(name, [(2, 7), (7,)], [dtype, dtype]))


@pytest.mark.parametrize("name", sorted(INT_OK & set(BINARY)))
def test_binary_integers_promote_like_the_cpu(name):
    check(name, inputs(name, [(4, 3), (3,)], [tp.int32, tp.int64]))
    check(name, inputs(name, [(5,), (5,)], [tp.uint8, tp.int8]))


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", [tp.float32, tp.float16, tp.bfloat16], ids=lambda d: d.name)
def test_unary(name, dtype):
    (a,) = inputs(name, [(6, 5)], [dtype])
    check(name, [a[::2, 1:]])                # a strided view


@pytest.mark.parametrize("name", sorted(INT_OK & set(UNARY)))
def test_unary_integers(name):
    check(name, [make((9,), tp.int64)])


def test_special_values_match_the_cpu():
    x = tp.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 30.0, -30.0, 1e-6])
    for name in ("relu", "sign", "tanh", "sigmoid", "exp", "abs", "neg"):
        check(name, [x])
    y = tp.tensor([float("nan"), 1.0, 2.0, 0.0, 3.0, float("nan"), -1.0, 2.0])
    for name in ("maximum", "minimum", "xlogy", "eq", "lt"):
        check(name, [x, y])
    base = tp.tensor([-2.0, -2.0, 0.0, 0.0, 1.0, 4.0, -8.0, 2.5])
    expo = tp.tensor([2.0, 3.0, 0.0, -1.0, float("nan"), 0.5, 1.0 / 3.0, -2.0])
    check("pow", [base, expo])


def test_integer_pow_and_negative_exponents():
    check("pow", [make((6,), tp.int64), tp.tensor([0, 1, 2, 3, 5, 7])])
    base = tp.tensor([2, -1, -1, 1, 0, 3, -2], dtype=tp.int32)
    check("pow", [base, tp.tensor([-1, -3, -2, -5, 2, -2, 3], dtype=tp.int32)])
    with pytest.raises(DTypeError, match=r"pow\(\): Integers to negative integer powers"):
        tp.tensor([2, 3], device="cuda") ** -1


def test_bool_abs_is_refused_like_on_the_cpu():
    with pytest.raises(DTypeError, match=r"abs\(\): not implemented for bool"):
        tp.abs(tp.ones(2, dtype=tp.bool, device="cuda"))


def test_where_bool_and_mixed_dtypes():
    cond = make((3, 4), tp.bool)
    a = make((4,), tp.int64)
    b = make((3, 1), tp.float32, seed=5)
    check("where", [cond, a, b])
    check("where", [cond, b, b])
    c = cond.cuda()
    assert_same(tp.where(c, b.cuda(), 0.0), tp.where(cond, b, 0.0))
    assert_same(tp.where(c, 1.5, b.cuda()), tp.where(cond, 1.5, b))


def test_bool_inputs():
    p, q = make((5,), tp.bool), make((5,), tp.bool, seed=1)
    for name in ("eq", "ne", "lt", "ge", "add", "mul", "maximum"):
        check(name, [p, q])


def test_scalar_overloads_and_operators():
    x = make((3, 4))
    cx = x.cuda()
    for f in (lambda t: t + 2, lambda t: 2 - t, lambda t: t * 0.5, lambda t: t / 3,
              lambda t: t ** 2, lambda t: t > 0.5, lambda t: -t, lambda t: abs(t),
              lambda t: 1 / (t + 3), lambda t: t.add(1, alpha=2), lambda t: t.sub(t, alpha=3)):
        assert_same(f(cx), f(x))
    i = make((5,), tp.int32)
    assert_same(i.cuda() + 2.5, i + 2.5)          # int tensor + float number -> float32
    h = make((5,), tp.float16)
    assert_same(h.cuda() + 2.5, h + 2.5)          # stays float16


# ---- in place ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["add_", "sub_", "mul_", "div_"])
def test_inplace_on_a_transposed_view_with_promotion(name):
    base_cpu = make((4, 3), tp.float16)
    other = make((3, 1), tp.float32, seed=2)      # float32 result cast back into float16
    base = base_cpu.cuda()
    view, view_cpu = base.t(), base_cpu.t()
    version = view._version
    out = getattr(view, name)(other.cuda())
    getattr(view_cpu, name)(other)
    assert out is view and view._version == version + 1
    assert_same(base, base_cpu)


def test_inplace_relu_and_scalar_forms():
    x_cpu = make((7,))
    x = x_cpu.cuda()
    x.relu_()
    x.mul_(3).add_(1, alpha=0.5)
    x_cpu.relu_()
    x_cpu.mul_(3).add_(1, alpha=0.5)
    assert_same(x, x_cpu)


def test_inplace_refuses_a_result_it_cannot_hold():
    i = tp.ones(3, dtype=tp.int64, device="cuda")
    with pytest.raises(DTypeError, match=r"add_\(\): result type float32 can't be cast"):
        i.add_(tp.ones(3, device="cuda"))
    with pytest.raises(tp.errors.ShapeError):
        tp.ones(3, device="cuda").add_(tp.ones(2, 3, device="cuda"))


# ---- autograd (the wrappers are backend-independent; the kernels here run both ways) ------
@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_backward_matches_the_cpu(name):
    arity = 2 if name in BINARY else 1
    args = inputs(name, [(3, 4), (4,)][:arity], [tp.float32] * arity, seed=3)
    grad = make((3, 4), seed=9)

    def grads(device):
        leaves = [a.to(device).detach().requires_grad_() for a in args]
        out = getattr(tp, name)(*leaves)
        (out * grad.to(device)).sum().backward()
        return [leaf.grad for leaf in leaves]

    for got, expected in zip(grads("cuda"), grads("cpu")):
        assert_same(got, expected, rtol=1e-4, atol=1e-5)


def test_where_backward():
    cond = make((3, 4), tp.bool)
    a, b = make((3, 4)), make((4,), seed=1)

    def grads(device):
        x = a.to(device).requires_grad_()
        y = b.to(device).requires_grad_()
        tp.where(cond.to(device), x, y).sum().backward()
        return x.grad, y.grad

    for got, expected in zip(grads("cuda"), grads("cpu")):
        assert_same(got, expected)


# ---- the generated source ----------------------------------------------------------------
def test_generated_source_is_viewable_and_cached():
    text = triton_kernels.source("add")
    assert "@triton.jit" in text and "result = x + y * alpha" in text
    assert "def add_kernel_rank1(" in text and "i0 = index" in text
    rank3 = tp.cuda.source("sigmoid", rank=3)
    assert "i2 = rest % size2" in rank3 and "tl.sigmoid(x)" in rank3
    first = _template.kernel("add", "x + y * alpha", 2, 1, ("alpha",))
    assert _template.kernel("add", "x + y * alpha", 2, 1, ("alpha",)) is first


def test_every_pointwise_kernel_has_an_expression():
    for name in BINARY + UNARY + ["where", "copy"]:
        assert name in pointwise.EXPRESSIONS


def test_coalescing_keeps_broadcast_dims_apart():
    from triton_kernels._launch import coalesce
    shape, strides = coalesce((4, 5, 6), [[30, 6, 1], [30, 6, 1], [0, 0, 1]])
    assert shape == [20, 6] and strides == [[6, 1], [6, 1], [0, 1]]
    shape, strides = coalesce((4, 5, 6), [[30, 6, 1], [30, 6, 1]])
    assert shape == [120] and strides == [[1], [1]]
    assert coalesce((), [[], []]) == ([1], [[0], [0]])


def test_large_rank_and_size_one_dims():
    a = make((2, 1, 3, 1, 2, 2))
    b = make((2, 1, 3), seed=4)
    check("mul", [a.permute([5, 4, 3, 2, 1, 0]), b.permute([2, 1, 0])])


def test_dtype_of_results_over_a_grid():
    for x_dtype, y_dtype in [(tp.int32, tp.float16), (tp.uint8, tp.int8),
                             (tp.bool, tp.int64), (tp.bfloat16, tp.float16)]:
        x, y = make((3,), x_dtype), make((3,), y_dtype, seed=1)
        check("add", [x, y])
        check("div", [x, y + 5])
