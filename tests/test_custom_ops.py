"""tp.library.custom_op: an op defined at run time is first-class.

Defined from a schema string with derivatives.yaml formulas (compiled by the code
generator, tensorplay/library/derivatives.py), or with PyTorch's decorator form; it goes
through the dispatcher (explain, profiler), runs on meta, under vmap and autocast, and a
Triton kernel launched by wrap_triton runs inside one. PyTorch is the oracle of values
and gradients."""
import io
import warnings
from typing import Optional

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay import Tensor
from tensorplay.codegen.formula import FormulaError
from tensorplay.errors import ArgumentError, AutogradError

# ---- one op from a schema and formulas, shared by the tests below -------------------
scaled_mul = tp.library.custom_op(
    "tcustom::scaled_mul(Tensor x, Tensor y, float a=2.0) -> Tensor",
    derivatives={"x": "sum_to(grad * y * a, x.sizes())",
                 "y": "sum_to(grad * x * a, y.sizes())"})
KERNEL_DTYPES = []      # the dtype each call of the cpu kernel saw


@scaled_mul.register_kernel("cpu")
def scaled_mul_cpu(x, y, a):
    KERNEL_DTYPES.append(x.dtype)
    return x * y * a


@scaled_mul.register_fake
def scaled_mul_fake(x, y, a):
    return tp.empty(tp.broadcast_shapes(x.shape, y.shape), dtype=x.dtype, device=x.device)


def _pair(*shape, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape)
    return tp.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)


def test_values_and_gradients_match_pytorch():
    (x, xt), (y, yt) = _pair(2, 3), _pair(3, seed=1)
    out = tp.ops.tcustom.scaled_mul(x, y, 1.5)
    expected = xt * yt * 1.5
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy())
    assert type(out.grad_fn).__name__ == "ScaledMulBackward0"
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
    np.testing.assert_allclose(y.grad.numpy(), yt.grad.numpy())     # summed to (3,)


def test_gradcheck_and_gradgradcheck_in_float64():
    x, _ = _pair(2, 3)
    y, _ = _pair(2, 3, seed=2)
    assert tp.autograd.gradcheck(lambda x, y: scaled_mul(x, y), (x, y))
    assert tp.autograd.gradgradcheck(lambda x, y: scaled_mul(x, y, 0.5), (x, y))


def test_the_op_and_its_default_overload_and_defaults():
    assert tp.ops.tcustom.scaled_mul is scaled_mul
    assert tp.ops.tcustom.scaled_mul.default is scaled_mul
    x = tp.ones(2)
    assert scaled_mul(x, x).tolist() == [2.0, 2.0]         # a=2.0 from the schema
    assert scaled_mul(x, y=x, a=3.0).tolist() == [3.0, 3.0]
    with pytest.raises(ArgumentError, match="'y'"):
        scaled_mul(x)
    with pytest.raises(ArgumentError, match="argument 'y' must be a Tensor"):
        scaled_mul(x, 2.0)
    with pytest.raises(AttributeError, match="has no op 'nothing'"):
        tp.ops.tcustom.nothing


def test_backward_source_is_the_generators_output():
    source = scaled_mul.backward_source()
    assert "class ScaledMulBackward0(Node):" in source
    assert "OP = 'tcustom::scaled_mul'" in source
    assert "def scaled_mul(ks, x, y, a):" in source
    assert "d_x = sum_to(grad * y * a, x_sizes)" in source
    assert "set_history(result, node)" in source


def test_a_formula_syntax_error_points_at_the_token():
    with pytest.raises(FormulaError) as info:
        tp.library.custom_op("tcustom::bad_syntax(Tensor x) -> Tensor",
                             derivatives={"x": "grad * (x +* 2)"})
    lines = str(info.value).splitlines()
    assert lines[0].endswith("unexpected token '*'")
    assert lines[1] == "x: grad * (x +* 2)"
    assert lines[2] == " " * lines[1].index("*", lines[1].index("+")) + "^"
    # nothing was defined: the name is free again
    tp.library.custom_op("tcustom::bad_syntax(Tensor x) -> Tensor", derivatives={"x": "grad"})


def test_formula_inputs_are_checked():
    with pytest.raises(ArgumentError, match="no derivative formula for 'y'"):
        tp.library.custom_op("tcustom::half(Tensor x, Tensor y) -> Tensor",
                             derivatives={"x": "grad"})
    op = tp.library.custom_op("tcustom::masked(Tensor x, Tensor mask) -> Tensor",
                              derivatives={"x": "grad * mask", "mask": "non_differentiable"})
    op.register_kernel("cpu", lambda x, mask: x * mask)
    x = tp.ones(3, requires_grad=True)
    op(x, tp.tensor([1.0, 0.0, 1.0])).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]
    index_of = tp.library.custom_op("tcustom::index_of(Tensor x) -> Tensor",
                                    derivatives={"x": "non_differentiable"})
    index_of.register_kernel("cpu", lambda x: x.sort().values)
    assert not index_of(x).requires_grad                    # as histc: no gradient at all
    assert "def index_of(ks, x):" in index_of.backward_source()
    with pytest.raises(ArgumentError, match="already defined"):
        tp.library.custom_op("tcustom::masked(Tensor x) -> Tensor")
    with pytest.raises(ArgumentError, match="the namespace 'add' is the name of an op"):
        tp.library.custom_op("add::f(Tensor x) -> Tensor")
    with pytest.raises(ArgumentError, match="must be 'namespace::name'"):
        tp.library.custom_op("nonamespace(Tensor x) -> Tensor")


def test_an_op_named_like_a_function_its_formula_calls():
    # the wrapper is named after the op (`mul`); the formula's `mul` is still tp.mul
    op = tp.library.custom_op("tcustom::mul(Tensor x, Tensor y) -> Tensor",
                              derivatives={"x": "mul(grad, y)", "y": "mul(grad, x)"})
    op.register_kernel("cpu", lambda x, y: x * y)
    x = tp.tensor([1.0, 2.0], dtype=tp.float64, requires_grad=True)
    y = tp.tensor([3.0, -1.0], dtype=tp.float64, requires_grad=True)
    assert tp.autograd.gradgradcheck(op, (x, y))


def test_meta_runs_the_fake_kernel():
    out = scaled_mul(tp.empty(4, 1, device="meta"), tp.empty(3, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (4, 3)


def test_vmap_without_and_with_a_batching_rule():
    op = tp.library.custom_op("tcustom::vm(Tensor x, float a) -> Tensor",
                              derivatives={"x": "grad * a"})
    op.register_kernel("cpu", lambda x, a: x * a)
    xs = tp.arange(6.0).reshape(2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = tp.vmap(lambda x: op(x, 2.0))(xs)
    assert "no batching rule for tcustom::vm" in str(caught[0].message)    # the loop
    assert out.tolist() == (xs * 2).tolist()
    seen = []

    @op.register_vmap
    def vm_rule(info, in_dims, x, a):
        seen.append((info.batch_size, in_dims))
        return op(x, a), in_dims[0]

    out = tp.vmap(lambda x: op(x, 3.0), in_dims=1)(xs)
    assert seen == [(3, (1, None))]
    assert out.tolist() == (xs * 3).t().tolist()


def test_autocast_passes_inputs_unchanged_unless_registered():
    op = tp.library.custom_op("tcustom::ac(Tensor x) -> Tensor")
    seen = []

    @op.register_kernel("cpu")
    def ac_cpu(x):
        seen.append(x.dtype)
        return x.clone()

    with tp.autocast("cpu", dtype=tp.bfloat16):
        assert op(tp.ones(2)).dtype is tp.float32
    op.register_autocast("cpu", tp.bfloat16)
    with tp.autocast("cpu", dtype=tp.bfloat16):
        assert op(tp.ones(2)).dtype is tp.bfloat16
    assert op(tp.ones(2)).dtype is tp.float32               # outside autocast
    assert seen == [tp.float32, tp.bfloat16, tp.float32]
    given = tp.library.custom_op("tcustom::ac_given(Tensor x) -> Tensor",
                                 autocast={"cpu": tp.float16})
    given.register_kernel("cpu", lambda x: x.clone())
    with tp.autocast("cpu", dtype=tp.bfloat16):
        assert given(tp.ones(2)).dtype is tp.float16
        assert given(tp.ones(2, dtype=tp.int64)).dtype is tp.int64      # floating only


def test_define_and_impl_as_pytorch():
    op = tp.library.define("tcustom::plus_one", "(Tensor x) -> Tensor")
    tp.library.impl("tcustom::plus_one", "cpu", lambda x: x + 1)
    assert tp.ops.tcustom.plus_one(tp.zeros(2)).tolist() == [1.0, 1.0]
    assert op is tp.ops.tcustom.plus_one


def test_explain_shows_its_hops():
    buf = io.StringIO()
    x = tp.ones(2, requires_grad=True)
    with tp.dispatch.explain(file=buf):
        scaled_mul(x, tp.ones(2))
    text = buf.getvalue()
    assert "tcustom::scaled_mul(" in text
    assert "AutogradCPU -> generated from derivatives: ScaledMulBackward0" in text
    assert "kernel    test_custom_ops.scaled_mul_cpu" in text


def test_the_profiler_shows_the_op():
    with tp.profiler.profile() as prof:
        scaled_mul(tp.ones(2), tp.ones(2))
    event = next(e for e in prof.events if e.name == "tcustom::scaled_mul")
    assert event.kind == "op" and event.kernel == "test_custom_ops.scaled_mul_cpu"


def test_no_derivative_raises_at_backward_as_pytorch():
    op = tp.library.custom_op("tcustom::nograd(Tensor x) -> Tensor")
    op.register_kernel("cpu", lambda x: x * 2)
    x = tp.ones(2, requires_grad=True)
    out = op(x)
    assert out.requires_grad and out.grad_fn.name() == "NotImplemented"
    with pytest.raises(AutogradError, match="Trying to backward through tcustom::nograd but "
                                            "no autograd formula was registered"):
        out.sum().backward()
    assert op(tp.ones(2)).grad_fn is None           # nothing to record: no node


def test_decorator_form_infers_the_schema():
    def f(x: Tensor, ws: list[Tensor], b: Optional[Tensor] = None, n: int = 3,
          eps: float = 1e-6, flag: bool = False) -> tuple[Tensor, Tensor]:
        raise AssertionError
    assert tp.library.infer_schema(f, mutates_args=()) == (
        "(Tensor x, Tensor[] ws, Tensor? b=None, int n=3, float eps=1e-06, bool flag=False) "
        "-> (Tensor, Tensor)")
    assert tp.library.infer_schema(f, mutates_args=("x",), op_name="lib::f").startswith(
        "lib::f(Tensor(a0!) x,")

    @tp.library.custom_op("tcustom::cube", mutates_args=())
    def cube(x: Tensor) -> Tensor:
        return x * x * x

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x

    cube.register_autograd(backward, setup_context=setup_context)
    cube.register_fake(lambda x: tp.empty_like(x))
    assert cube.handle.schema.text == "tcustom::cube(Tensor x) -> Tensor"
    x = tp.tensor([1.0, 2.0], dtype=tp.float64, requires_grad=True)
    assert tp.autograd.gradcheck(cube, (x,))
    assert type(cube(x).grad_fn).__name__ == "GeneratedBackwardFor_tcustom_cube_defaultBackward"
    assert tuple(cube(tp.empty(5, device="meta")).shape) == (5,)


def test_a_tensor_list_argument_with_register_autograd_and_with_formulas():
    @tp.library.custom_op("tcustom::weighted_sum", mutates_args=())
    def weighted_sum(xs: list[Tensor], a: float) -> Tensor:
        out = xs[0] * a
        for x in xs[1:]:
            out = out + x
        return out

    flags = []

    def backward(ctx, grad):
        flags.append(ctx.needs_input_grad)
        return [grad * ctx.a] + [grad] * (ctx.n - 1), None

    def setup_context(ctx, inputs, output):
        ctx.a, ctx.n = inputs[1], len(inputs[0])

    weighted_sum.register_autograd(backward, setup_context=setup_context)
    a = tp.tensor([1.0, 2.0], dtype=tp.float64, requires_grad=True)
    b = tp.tensor([3.0, 4.0], dtype=tp.float64, requires_grad=True)
    assert tp.autograd.gradcheck(lambda a, b: weighted_sum([a, b], 3.0), (a, b))
    assert flags[0] == (True, False)                   # one flag per input of the op
    cat2 = tp.library.custom_op("tcustom::cat2(Tensor[] xs) -> Tensor",
                                derivatives={"xs": "unbind(grad.reshape([2, -1]), 0)"})
    cat2.register_kernel("cpu", lambda xs: tp.cat(xs))
    assert tp.autograd.gradcheck(lambda a, b: cat2([a, b]), (a, b))


def test_decorator_form_with_a_mutated_argument():
    @tp.library.custom_op("tcustom::fill_twos", mutates_args=("out",))
    def fill_twos(out: Tensor) -> None:
        out.fill_(2.0)

    assert fill_twos.handle.schema.text == "tcustom::fill_twos(Tensor(a0!) out) -> ()"
    t = tp.zeros(3)
    version = t._version
    assert fill_twos(t) is None
    assert t.tolist() == [2.0, 2.0, 2.0] and t._version > version
    # written in place with no derivative: the tensor's new history raises in backward
    w = tp.ones(3, requires_grad=True)
    y = w * 1
    fill_twos(y)
    assert y.grad_fn.name() == "NotImplemented"
    with pytest.raises(AutogradError, match="no autograd formula was registered"):
        y.sum().backward()
    with pytest.raises(AutogradError, match="a leaf Variable that requires grad"):
        fill_twos(w)


# ---- a Triton kernel in a custom op ---------------------------------------------------
def test_triton_op_with_wrap_triton():
    triton = pytest.importorskip("triton")
    tl = pytest.importorskip("triton.language")

    @triton.jit
    def add_scaled_kernel(x_ptr, y_ptr, out_ptr, n, a, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + a * y, mask=mask)

    @tp.library.triton_op("tcustom::add_scaled", mutates_args=())
    def add_scaled(x: Tensor, y: Tensor, a: float) -> Tensor:
        out = tp.empty_like(x)
        n = x.numel()
        tp.library.wrap_triton(add_scaled_kernel)[(triton.cdiv(n, 8),)](x, y, out, n, a,
                                                                         BLOCK=8)
        return out

    x = tp.arange(10.0, device="cuda")
    y = tp.ones(10, device="cuda")
    buf = io.StringIO()
    with tp.dispatch.explain(file=buf):
        out = add_scaled(x, y, 0.5)
    assert out.device.type == "cuda"
    assert out.cpu().tolist() == (tp.arange(10.0) + 0.5).tolist()
    assert "triton    add_scaled_kernel grid=(2,) BLOCK=8" in buf.getvalue()
    with tp.profiler.profile() as prof:
        add_scaled(x, y, 2.0)
    names = [(e.name, e.kind) for e in prof.events]
    assert ("tcustom::add_scaled", "op") in names
    assert ("triton add_scaled_kernel", "kernel") in names


def test_fused_rmsnorm_triton_kernel_and_formulas_match_pytorch():
    """The worked example: a Triton forward, formula derivatives, values and gradients
    against torch.nn.functional.rms_norm, opcheck's cuda-vs-cpu check."""
    triton = pytest.importorskip("triton")
    tl = pytest.importorskip("triton.language")

    @triton.jit
    def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n
        x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n + eps)
        tl.store(y_ptr + row * n + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=mask)

    rmsnorm = tp.library.custom_op(
        "tcustom::rmsnorm(Tensor x, Tensor w, float eps=1e-6) -> Tensor",
        derivatives={
            "x": "(grad * w - x * (grad * w * x).mean(-1, True) / (x.pow(2).mean(-1, True)"
                 " + eps)) * (x.pow(2).mean(-1, True) + eps).rsqrt()",
            "w": "sum_to(grad * x * (x.pow(2).mean(-1, True) + eps).rsqrt(), w.sizes())"})
    rmsnorm.register_kernel(
        "cpu", lambda x, w, eps: x * (x.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * w)

    @rmsnorm.register_kernel("cuda")
    def rmsnorm_cuda(x, w, eps):
        x = x.contiguous()
        y = tp.empty_like(x)
        n = x.shape[-1]
        tp.library.wrap_triton(rmsnorm_kernel)[(x.numel() // n,)](
            x, w.contiguous(), y, n, eps, BLOCK=triton.next_power_of_2(n))
        return y

    rmsnorm.register_fake(lambda x, w, eps: tp.empty_like(x))
    rng = np.random.default_rng(3)
    xs, ws = rng.standard_normal((3, 5)), rng.standard_normal(5)
    for device in ("cpu", "cuda"):
        x = tp.tensor(xs, dtype=tp.float32, device=device, requires_grad=True)
        w = tp.tensor(ws, dtype=tp.float32, device=device, requires_grad=True)
        xt = torch.tensor(xs, dtype=torch.float32, requires_grad=True)
        wt = torch.tensor(ws, dtype=torch.float32, requires_grad=True)
        out, expected = rmsnorm(x, w), torch.nn.functional.rms_norm(xt, (5,), wt, 1e-6)
        g = rng.standard_normal((3, 5))
        out.backward(tp.tensor(g, dtype=tp.float32, device=device))
        expected.backward(torch.tensor(g, dtype=torch.float32))
        for got, want in ((out, expected), (x.grad, xt.grad), (w.grad, wt.grad)):
            np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(),
                                       rtol=1e-5, atol=1e-5)
    with pytest.warns(UserWarning, match="no batching rule"):
        result = tp.library.opcheck(rmsnorm, (tp.tensor(xs), tp.tensor(ws)))
    assert set(result.values()) == {"SUCCESS"}


def test_a_dispatch_mode_sees_the_op():
    from tensorplay.utils.dispatch_mode import LoggingMode
    with LoggingMode() as mode:
        scaled_mul(tp.ones(2), tp.ones(2))
    assert mode.lines[0].endswith("= tp.ops.tcustom.scaled_mul.default($0, $1, 2.0)")
