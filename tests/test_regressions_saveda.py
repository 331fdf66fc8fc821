"""Regressions of issue 12's fuzzer (cluster: saved tensors of in-place ops and views):
which tensors a backward node saves decides whether a later in-place write makes backward
raise, so each test runs the same program in TensorPlay and in PyTorch and compares
"raises" (and the gradients where both run)."""
import numpy as np
import pytest
import torch

import tensorplay as tp

VALUES = [-1.0, 0.0, 2.0, float("nan"), -3.0]


def _inplace_activation(lib, name):
    """An in-place activation: TensorPlay's function, PyTorch's aten op (torch has no
    public function for most of these in-place forms)."""
    fn = getattr(tp, name) if lib is tp else getattr(torch.ops.aten, name)
    return fn


def _outcome(run):
    """'raises' when backward refuses a modified saved tensor, else the gradient."""
    try:
        return run()
    except RuntimeError as err:
        assert "modified by an inplace operation" in str(err), err
        if isinstance(err, tp.errors.TensorPlayError):
            assert isinstance(err, tp.errors.AutogradError)
        return "raises"


@pytest.mark.parametrize("name, args", [("elu_", ()), ("elu_", (1.5, 2.0, 0.5)),
                                        ("celu_", (0.5,)), ("selu_", ()),
                                        ("leaky_relu_", (0.2,)), ("leaky_relu_", (0.0,))])
@pytest.mark.parametrize("write_after", [False, True])
def test_inplace_activation_saves_its_result(name, args, write_after):
    """elu_, celu_, selu_ and leaky_relu_ save their result (PyTorch's EluBackward1,
    LeakyReluBackward1): a write into it afterwards makes backward raise; without one,
    the gradient computed from the result is PyTorch's (nan and 0 included)."""
    def run(lib):
        x = lib.tensor(VALUES, dtype=lib.float64, requires_grad=True)
        y = _inplace_activation(lib, name)(x.clone(), *args)
        if write_after:
            with lib.no_grad():
                y.mul_(1)
        y.backward(lib.ones(len(VALUES), dtype=lib.float64))
        return x.grad.tolist()

    got, want = _outcome(lambda: run(tp)), _outcome(lambda: run(torch))
    assert (got == "raises") == (want == "raises") == write_after
    if not write_after:
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("name, args", [("elu_", (-1.0,)), ("celu_", (-1.0,)),
                                        ("leaky_relu_", (-0.5,))])
def test_inplace_activation_with_negative_slope_refuses_backward(name, args):
    """The result's sign no longer tells the branch: PyTorch refuses the backward."""
    x = tp.tensor(VALUES, dtype=tp.float64, requires_grad=True)
    y = _inplace_activation(tp, name)(x.clone(), *args)
    with pytest.raises(tp.errors.AutogradError, match="negative slope"):
        y.sum().backward()
    tx = torch.tensor(VALUES, dtype=torch.float64, requires_grad=True)
    ty = _inplace_activation(torch, name)(tx.clone(), *args)
    with pytest.raises(RuntimeError, match="negative slope"):
        ty.sum().backward()


@pytest.mark.parametrize("written", ["self", "other"])
def test_kron_does_not_save_views_of_its_operands(written):
    """PyTorch's kron multiplies `_unsafe_view`s of its operands (own version counters):
    writing into an operand after kron does not make backward raise, and the gradient
    reads the written values."""
    def run(lib):
        a = lib.tensor([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], dtype=lib.float64,
                       requires_grad=True)
        b = lib.tensor([[2.0, 1.0], [-3.0, 0.25], [1.5, -0.5]], dtype=lib.float64,
                       requires_grad=True)
        y = lib.kron(a, b)
        with lib.no_grad():
            (a if written == "self" else b)[::2] = 7
        y.backward(lib.ones(tuple(y.shape), dtype=lib.float64))
        return a.grad.tolist(), b.grad.tolist()

    got, want = _outcome(lambda: run(tp)), _outcome(lambda: run(torch))
    assert got != "raises" and want != "raises"
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_unsafe_view_has_its_own_version_counter():
    x = tp.ones(2, 3)
    y = tp._generated.functional._unsafe_view(x, [3, 2])
    tx = torch.ones(2, 3)
    ty = torch.ops.aten._unsafe_view(tx, [3, 2])
    x.add_(1)
    tx.add_(1)
    assert (y._version, x._version) == (ty._version, tx._version) == (0, 1)
    assert y.tolist() == ty.tolist()      # the same memory


def _sdpa_inputs(lib, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    q, k, v = (lib.tensor(rng.standard_normal(shape), dtype=lib.float64, requires_grad=True)
               for shape in ((2, 3, 4), (2, 2, 4), (2, 2, 4)))
    mask = lib.tensor([[True, False], [False, False], [True, True]])   # row 1: all masked
    return q, k, v, mask


@pytest.mark.parametrize("written", ["query", "key", "attn_mask", "value", None])
def test_sdpa_saves_what_pytorch_math_path_saves(written):
    """PyTorch's math sdpa (3-D inputs) multiplies scaled copies of query and key, and
    turns a bool mask into a float one: writing into query, key or the mask afterwards
    does not make backward raise; writing into value (saved by the last matmul) does.
    A fully masked row gets a 0 output and 0 gradients (its `_safe_softmax`)."""
    def run(lib):
        q, k, v, mask = _sdpa_inputs(lib)
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        target = {"query": q, "key": k, "value": v, "attn_mask": mask}.get(written)
        if target is not None:
            with lib.no_grad():
                target[0] = True if target.dtype == lib.bool else 7.0
        out.backward(lib.ones(tuple(out.shape), dtype=lib.float64))
        return [t.grad.tolist() for t in (q, k, v)]

    got, want = _outcome(lambda: run(tp)), _outcome(lambda: run(torch))
    assert (got == "raises") == (want == "raises") == (written == "value")
    if got != "raises":
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("write_after", [False, True])
def test_square__backward_runs_and_ignores_later_writes(write_after):
    """square_ was mul_(self, self), which saved self as `other` and then overwrote it:
    its backward always raised. PyTorch's (pow_(2)) saves a copy of the original self."""
    def run(lib):
        x = lib.tensor([2.0, -3.0, 0.5], dtype=lib.float64, requires_grad=True)
        y = x.clone().square_()
        if write_after:
            with lib.no_grad():
                y.add_(1)
        y.sum().backward()
        return x.grad.tolist()

    assert run(tp) == run(torch) == [4.0, -6.0, 1.0]


SDPA_CASES = {
    # name: (query shape, key/value shape, kwargs); 4-D ones take PyTorch's fused kernel
    "3d": ((2, 3, 4), (2, 2, 4), {}),
    "4d fused": ((1, 2, 3, 4), (1, 2, 2, 4), {}),
    "4d fused float mask": ((1, 2, 3, 4), (1, 2, 2, 4), {"attn_mask": "float"}),
    "4d fused bool mask": ((1, 2, 3, 4), (1, 2, 2, 4), {"attn_mask": "bool"}),
    "4d fused gqa": ((1, 4, 3, 4), (1, 2, 2, 4), {"enable_gqa": True}),
    "4d math (batch broadcast)": ((2, 2, 3, 4), (1, 2, 2, 4), {}),
}


@pytest.mark.parametrize("case", list(SDPA_CASES))
@pytest.mark.parametrize("written", ["query", "key", "value", "attn_mask", "output"])
def test_sdpa_write_after_call_raises_as_in_pytorch(case, written):
    q_shape, kv_shape, kwargs = SDPA_CASES[case]

    def run(lib):
        rng = np.random.default_rng(1)
        q = lib.tensor(rng.standard_normal(q_shape), dtype=lib.float64, requires_grad=True)
        k, v = (lib.tensor(rng.standard_normal(kv_shape), dtype=lib.float64,
                           requires_grad=True) for _ in range(2))
        kw = dict(kwargs)
        mask = None
        if kw.get("attn_mask") == "float":
            mask = kw["attn_mask"] = lib.zeros(q_shape[-2], kv_shape[-2], dtype=lib.float64)
        elif kw.get("attn_mask") == "bool":
            mask = kw["attn_mask"] = lib.ones(q_shape[-2], kv_shape[-2], dtype=lib.bool)
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
        target = {"query": q, "key": k, "value": v, "attn_mask": mask, "output": out}[written]
        if target is not None:
            with lib.no_grad():
                target.logical_not_() if target.dtype == lib.bool else target.add_(1)
        out.sum().backward()
        return [t.grad.tolist() for t in (q, k, v)]

    got, want = _outcome(lambda: run(tp)), _outcome(lambda: run(torch))
    assert (got == "raises") == (want == "raises")
    if got != "raises":
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
