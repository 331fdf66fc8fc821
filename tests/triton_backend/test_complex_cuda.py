"""Complex tensors on the `cuda` device, against PyTorch on the CPU. Triton has no complex
type: a complex tensor reaches the kernels as its (re, im) float pairs. Checked here:
allocation, transfers and copies (the copy kernel on the pairs), the pointwise template's
complex form, sum/mean of the pairs, mm/bmm as real products of the parts, and the
logged host fallback that runs the CPU kernel of every other op (explain() shows it)."""
import itertools
import logging
import warnings

import numpy as np
import pytest
import torch

from triton_util import CUDA

import tensorplay as tp
from tensorplay.dispatch.dispatcher import OpSchema, dispatcher
from tensorplay.errors import DTypeError

COMPLEX = (tp.complex64, tp.complex128)
TORCH = {tp.complex64: torch.complex64, tp.complex128: torch.complex128,
         tp.float32: torch.float32, tp.float64: torch.float64}
TOL = {tp.complex64: 2e-5, tp.complex128: 1e-12, tp.float32: 2e-5, tp.float64: 1e-12}


def numbers(shape, dtype=tp.complex64, seed=0):
    """(a cuda tensor, the same values as a torch CPU tensor); complex or real."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2, 2, shape)
    if dtype.is_complex:
        a = a + 1j * rng.uniform(-2, 2, shape)
    a = a.astype(dtype.np)
    return tp.tensor(a).to(CUDA), torch.tensor(a)


def assert_matches(got, expected, tol=None):
    """`got` (a cuda tensor) equals the torch tensor `expected` in dtype, shape, values."""
    assert got.device == CUDA
    assert TORCH[got.dtype] == expected.dtype, (got.dtype, expected.dtype)
    assert tuple(got.shape) == tuple(expected.shape)
    tol = TOL[got.dtype] if tol is None else tol
    np.testing.assert_allclose(np.asarray(got.cpu()), expected.numpy(), rtol=tol, atol=tol)


def kernels_run(fn):
    """(the result of fn(), the explain() text of the call)."""
    with tp.dispatch.explain(file=False) as ex:
        out = fn()
    return out, ex.text


# ---- allocation, transfers, copies ----------------------------------------------------------
@pytest.mark.parametrize("dtype", COMPLEX)
def test_factories_make_complex_cuda_tensors(dtype):
    assert_matches(tp.zeros(2, 3, dtype=dtype, device="cuda"),
                   torch.zeros(2, 3, dtype=TORCH[dtype]))
    assert_matches(tp.ones(4, dtype=dtype, device="cuda"), torch.ones(4, dtype=TORCH[dtype]))
    assert_matches(tp.full((3,), 1.5 - 2j, dtype=dtype, device="cuda"),
                   torch.full((3,), 1.5 - 2j, dtype=TORCH[dtype]))
    empty = tp.empty(2, 2, dtype=dtype, device="cuda")
    assert empty.dtype is dtype and empty.device == CUDA


def test_transfers_repr_and_the_torch_view():
    z, Z = numbers((2, 3))
    back = z.cpu()
    assert back.dtype is tp.complex64 and back.device.type == "cpu"
    np.testing.assert_array_equal(np.asarray(back), Z.numpy())
    assert "device='cuda:0'" in repr(z) and "j" in repr(z)
    assert torch.equal(tp.cuda.as_torch(z), Z)
    assert torch.equal(torch.from_dlpack(z), Z)
    np.testing.assert_array_equal(np.asarray(z.t().cpu()), Z.t().numpy())   # strided
    assert tp.view_as_real(z).dtype is tp.float32          # views are device-independent
    assert_matches(z.imag, Z.imag)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_clone_contiguous_and_copy_are_copies_of_the_pairs(dtype):
    z, Z = numbers((3, 4), dtype)
    out, text = kernels_run(lambda: z.t().contiguous())
    assert_matches(out, Z.t().contiguous())
    assert out.is_contiguous() and "copy_kernel" in text and "complex on host" not in text
    assert_matches(z.clone(), Z)
    target = tp.zeros(4, 3, dtype=dtype, device="cuda")
    target.copy_(z.t())
    assert_matches(target, Z.t())
    row, R = numbers((4,), dtype, seed=1)
    target = tp.zeros(3, 4, dtype=dtype, device="cuda")
    target.copy_(row)                                          # broadcast
    assert_matches(target, R.expand(3, 4))


def test_copies_between_real_and_complex_and_between_widths():
    x, X = numbers((5,), tp.float32)
    z = tp.zeros(5, dtype=tp.complex64, device="cuda")
    z.copy_(x)                                     # real into complex: 0 imaginary parts
    assert_matches(z, X.to(torch.complex64))
    w, W = numbers((5,), tp.complex64)
    assert_matches(w.to(tp.complex128), W.to(torch.complex128))
    assert_matches(x.to(tp.complex64), X.to(torch.complex64))
    real = tp.zeros(5, device="cuda")
    real.copy_(w)                                  # complex into real: the real parts
    assert_matches(real, W.real)


def test_fill_and_zero():
    z, Z = numbers((2, 3))
    assert_matches(z.fill_(3 - 4j), Z.fill_(3 - 4j))
    assert_matches(z.zero_(), Z.zero_())
    z, Z = numbers((2, 3))
    z.imag.fill_(7)                                # a write through the float view
    Z.imag.fill_(7)
    assert_matches(z, Z)


# ---- the pointwise template's complex form ----------------------------------------------------
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
UNARY = {"neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "log": torch.log,
         "sqrt": torch.sqrt, "reciprocal": torch.reciprocal, "sin": torch.sin,
         "cos": torch.cos, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "angle": torch.angle}


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_ops_run_their_complex_kernel(op, dtype):
    (a, A), (b, B) = numbers((3, 4), dtype), numbers((4,), dtype, seed=1)   # broadcast
    out, text = kernels_run(lambda: getattr(tp, op)(a, b))
    assert_matches(out, BINARY[op](A, B))
    assert f"{op}_complex_cc_kernel" in text and "complex on host" not in text


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_ops_run_their_complex_kernel(op, dtype):
    z, Z = numbers((2, 5), dtype)
    out, text = kernels_run(lambda: getattr(tp, op)(z.t()))    # strided
    assert_matches(out, UNARY[op](Z.t()))
    assert f"{op}_complex_c_kernel" in text and "complex on host" not in text


SPECIAL = [0.0, -0.0, 1.0, -1.5, float("inf"), -float("inf"), float("nan"), 1e-30, 1e30, 25.0,
           -25.0]


@pytest.mark.parametrize("dtype", COMPLEX)
def test_infinities_nans_and_zeros_match_pytorch(dtype):
    """Every pair of special parts (C99 Annex G's cases); the signs of zeros are not
    compared (PyTorch's own kernels differ among themselves there)."""
    Z = torch.tensor([complex(a, b) for a, b in itertools.product(SPECIAL, SPECIAL)],
                     dtype=TORCH[dtype])
    z = tp.tensor(Z.numpy()).to(CUDA)
    W = Z.roll(7)
    w = tp.tensor(W.numpy()).to(CUDA)
    cases = [(op, getattr(tp, op)(z), fn(Z)) for op, fn in UNARY.items()]
    cases += [(op, getattr(tp, op)(z, w), fn(Z, W)) for op, fn in BINARY.items()]
    for op, got, expected in cases:
        np.testing.assert_allclose(np.asarray(got.cpu()), expected.numpy(), rtol=2e-6,
                                   equal_nan=True, err_msg=op)


def test_abs_is_real_and_log_and_sqrt_take_the_principal_branch():
    values = [-1 + 0j, -1 - 0j, -4 + 1e-30j, 0j, 2j, -2j, 1e30 + 1e30j, 1e-30 - 1e-30j]
    for dtype in COMPLEX:
        Z = torch.tensor(values, dtype=TORCH[dtype])
        z = tp.tensor(Z.numpy()).to(CUDA)
        assert tp.abs(z).dtype is dtype.to_real()
        assert_matches(tp.abs(z), Z.abs())
        assert_matches(tp.sqrt(z), Z.sqrt())
        assert_matches(tp.log(z[:-2]), Z[:-2].log())     # log of 0 is -inf + 0j, below


def test_tanh_and_sigmoid_far_from_the_origin():
    values = [30 + 1j, -30 + 2j, 1e-4 - 1e-4j, 5 + 100j, -40 - 0.5j]
    for dtype in COMPLEX:
        Z = torch.tensor(values, dtype=TORCH[dtype])
        z = tp.tensor(Z.numpy()).to(CUDA)
        assert_matches(tp.tanh(z), Z.tanh())
        assert_matches(tp.sigmoid(z), Z.sigmoid())


def test_real_and_complex_operands_mix():
    (z, Z), (x, X) = numbers((3, 4)), numbers((3, 4), tp.float64, seed=1)
    out, text = kernels_run(lambda: x * z)
    assert_matches(out, X * Z)          # float64 * complex64 is complex128, as in PyTorch
    assert "mul_complex_rc_kernel" in text
    assert_matches(z / x, Z / X)
    assert_matches(z - 2, Z - 2)


def test_where_picks_complex_numbers():
    (z, Z), (w, W) = numbers((3, 4)), numbers((4,), seed=1)
    x, X = numbers((3, 4), tp.float64, seed=2)
    out, text = kernels_run(lambda: tp.where(x > 0, z, w))
    assert_matches(out, torch.where(X > 0, Z, W))
    assert "where_complex_rcc_kernel" in text
    assert_matches(tp.where(x > 0, x, z), torch.where(X > 0, X, Z))    # complex128


def test_complex_scalars_and_alpha():
    z, Z = numbers((4,))
    w, W = numbers((4,), seed=1)
    assert_matches(z * (2 - 1j), Z * (2 - 1j))
    assert_matches(1j * z, 1j * Z)
    assert_matches(z + 0.5j, Z + 0.5j)
    assert_matches(tp.add(z, w, alpha=2j), torch.add(Z, W, alpha=2j))
    assert_matches(tp.sub(z, w, alpha=1 - 1j), torch.sub(Z, W, alpha=1 - 1j))
    x, X = numbers((4,), tp.float32, seed=2)
    assert_matches(x * 1j, X * 1j)


def test_in_place_forms_write_through_self():
    z, Z = numbers((3, 4))
    w, W = numbers((4,), seed=1)
    for name in ("add_", "sub_", "mul_", "div_"):
        getattr(z, name)(w)
        getattr(Z, name)(W)
    assert_matches(z, Z)
    for name in ("exp_", "neg_", "sqrt_", "reciprocal_"):
        getattr(z, name)()
        getattr(Z, name)()
    assert_matches(z, Z, tol=1e-4)


def test_a_complex_result_is_refused_by_a_real_tensor_in_place():
    x = tp.ones(3, device="cuda")
    z, _ = numbers((3,))
    with pytest.raises(DTypeError, match=r"add_\(\).*complex64.*float32"):
        x.add_(z)


def test_conj_and_the_parts():
    z, Z = numbers((2, 3))
    out, text = kernels_run(lambda: z.conj())
    assert_matches(out, Z.conj().resolve_conj())
    assert "complex on host" not in text
    assert_matches(tp.complex(z.real, z.imag), Z)


# ---- reductions and products ------------------------------------------------------------
@pytest.mark.parametrize("dtype", COMPLEX)
def test_sum_and_mean_reduce_the_pairs(dtype):
    z, Z = numbers((3, 4, 5), dtype)
    out, text = kernels_run(lambda: z.sum())
    assert_matches(out, Z.sum(), tol=1e-4 if dtype is tp.complex64 else 1e-12)
    assert "complex on host" not in text
    assert "sum.dim_IntList(float" in text and "reduce_sum" in text      # of the pairs
    assert_matches(z.sum(1), Z.sum(1))
    assert_matches(z.sum((-1, 0), keepdim=True), Z.sum((-1, 0), keepdim=True))
    assert_matches(z.transpose(0, 2).sum(0), Z.transpose(0, 2).sum(0))
    assert_matches(z.mean(), Z.mean())
    assert_matches(z.mean(-1, keepdim=True), Z.mean(-1, keepdim=True))
    assert_matches(z[0, 0, 0].sum(), Z[0, 0, 0].sum())          # a 0-dim tensor


def test_sum_into_another_dtype():
    x, X = numbers((3, 4), tp.float32)
    assert_matches(x.sum(1, dtype=tp.complex64), X.sum(1, dtype=torch.complex64))
    z, Z = numbers((3, 4))
    assert_matches(z.sum(0, dtype=tp.complex128), Z.sum(0, dtype=torch.complex128), tol=1e-6)
    with warnings.catch_warnings():       # PyTorch warns that the cast discards the
        warnings.simplefilter("ignore")   # imaginary parts, once a process
        expected = Z.sum(1, dtype=torch.float64)
    assert_matches(z.sum(1, dtype=tp.float64), expected, tol=1e-6)
    assert_matches(z.mean(dtype=tp.float64), Z.real.double().mean(), tol=1e-6)
    out = z.sum(1, dtype=tp.int32)
    assert out.dtype is tp.int32 and out.device == CUDA


@pytest.mark.parametrize("dtype", COMPLEX)
def test_mm_and_bmm_are_real_products_of_the_parts(dtype):
    (a, A), (b, B) = numbers((3, 5), dtype), numbers((5, 4), dtype, seed=1)
    out, text = kernels_run(lambda: a @ b)
    tol = 1e-4 if dtype is tp.complex64 else 1e-12
    assert_matches(out, A @ B, tol)
    assert text.count("matmul (masked)") == 4 and "complex on host" not in text
    assert_matches(a.t() @ b[:3], A.t() @ B[:3], tol)                   # strided operands
    (a, A), (b, B) = numbers((2, 3, 4), dtype), numbers((2, 4, 2), dtype, seed=1)
    assert_matches(tp.bmm(a, b), torch.bmm(A, B), tol)
    assert_matches(tp.matmul(a, b[0]), torch.matmul(A, B[0]), tol)


def test_shape_ops_copy_the_pairs():
    (z, Z), (w, W) = numbers((2, 3)), numbers((2, 2), seed=1)
    x, X = numbers((2, 1), tp.float32, seed=2)
    out, text = kernels_run(lambda: tp.cat([z, w, x], 1))        # a real input promoted
    assert_matches(out, torch.cat([Z, W, X], 1))
    assert "complex on host" not in text
    assert_matches(tp.flip(z, [0, 1]), torch.flip(Z, [0, 1]))
    assert_matches(tp.roll(z, 1, 1), torch.roll(Z, 1, 1))
    assert_matches(z.repeat(2, 1, 2), Z.repeat(2, 1, 2))
    assert_matches(z.repeat_interleave(2, 0), Z.repeat_interleave(2, 0))
    assert_matches(tp.stack([z, w[:, :1].expand(2, 3)]), torch.stack([Z, W[:, :1].expand(2, 3)]))


# ---- every other op: the CPU kernel on host copies, logged ----------------------------------
def test_an_op_without_a_complex_form_runs_on_a_host_copy_and_says_so(caplog):
    z, Z = numbers((2, 3))
    index = tp.tensor([2, 0]).to(CUDA)
    with caplog.at_level(logging.INFO, logger="tensorplay.dispatch"):
        out, text = kernels_run(lambda: tp.index_select(z, 1, index))
    assert_matches(out, torch.index_select(Z, 1, torch.tensor([2, 0])))
    assert "rejected, no complex form" in text
    assert "fallback  complex on host" in text
    assert "cpu_kernels.indexing.index_select" in text
    assert "index_select on CUDA: complex on host" in caplog.text


def test_the_host_fallback_writes_an_in_place_result_back():
    z, Z = numbers((2, 3))
    mask = tp.tensor([[True, False, True], [False, False, True]]).to(CUDA)
    z.masked_fill_(mask, 5 - 1j)
    Z.masked_fill_(torch.tensor(np.asarray(mask.cpu())), 5 - 1j)
    assert_matches(z, Z)


def test_the_host_fallback_takes_a_complex_dtype_argument():
    x, X = numbers((4,), tp.float32)
    out, text = kernels_run(lambda: x.cumsum(0, dtype=tp.complex64))
    assert_matches(out, X.cumsum(0, dtype=torch.complex64))
    assert "complex on host" in text


_counter = itertools.count()


def test_a_cuda_kernel_receives_complex_only_when_it_declares_takes_complex():
    name = f"test.complex{next(_counter)}"
    op = dispatcher.define(OpSchema(name, f"{name}(Tensor self) -> Tensor", ("self",), (0,)))
    tp.library.Library("CPU", "TestComplex").impl(op.name, lambda self: "cpu", name="cpu")
    tp.library.Library("CUDA", "TestComplex").impl(op.name, lambda self: "triton",
                                                   name="triton")
    z, _ = numbers((2,))
    x, _ = numbers((2,), tp.float32)
    assert op.call(x._impl.key_set(), x) == "triton"
    assert op.call(z._impl.key_set(), z) == "cpu"
    tp.library.Library("CUDA", "TestComplex").impl(op.name, lambda self: "triton complex",
                                                   name="triton", takes_complex=True)
    assert op.call(z._impl.key_set(), z) == "triton complex"
