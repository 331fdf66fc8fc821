"""scaled_dot_product_attention on the CPU picks its kernel as PyTorch's CPU dispatch does:
the calls PyTorch gives its fused flash kernel (grad_fn ScaledDotProductFlashAttention-
ForCpuBackward0) run _scaled_dot_product_flash_attention (cpu_kernels/attention.py), the
rest the math path; explain() names the choice, tp.backends.cuda.enable_flash_sdp(False)
leaves the math path, and values and gradients equal PyTorch's either way."""
import numpy as np
import pytest
import torch

import tensorplay as tp

FLASH = "flash attention (_scaled_dot_product_flash_attention)"


def _arrays(shapes, dtype=np.float32):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _mask(kind, L, S):
    rng = np.random.default_rng(1)
    if kind == "bool":
        keep = rng.random((L, S)) > 0.3
        keep[:, 0] = True
        return keep
    return rng.standard_normal((2, 1, L, S)).astype(np.float32)


# (name, q, k, v shapes, kwargs): PyTorch 2.13 picks flash for these on the CPU...
FLASH_CASES = [
    ("4-D", (2, 4, 8, 16), (2, 4, 8, 16), (2, 4, 8, 16), {}),
    ("bool mask", (2, 4, 8, 16), (2, 4, 5, 16), (2, 4, 5, 16), {"mask": "bool"}),
    ("float mask", (2, 4, 8, 16), (2, 4, 5, 16), (2, 4, 5, 16), {"mask": "float"}),
    ("causal", (2, 2, 6, 8), (2, 2, 9, 8), (2, 2, 9, 8), {"is_causal": True}),
    ("grouped heads", (2, 4, 8, 16), (2, 2, 8, 16), (2, 2, 8, 16), {"enable_gqa": True}),
    ("scale", (1, 2, 5, 8), (1, 2, 5, 8), (1, 2, 5, 8), {"scale": 0.3}),
]
# ... and the math path for these.
MATH_CASES = [
    ("3-D", (4, 8, 16), (4, 8, 16), (4, 8, 16), {}),
    ("dropout", (2, 4, 8, 16), (2, 4, 8, 16), (2, 4, 8, 16), {"dropout_p": 0.1}),
    ("value head dim differs", (2, 4, 8, 16), (2, 4, 8, 16), (2, 4, 8, 8), {}),
    ("broadcast batch", (2, 4, 8, 16), (1, 4, 8, 16), (1, 4, 8, 16), {}),
]


def _call(lib, arrays, kwargs, dtype):
    leaves = [lib.tensor(a).to(getattr(lib, dtype)).requires_grad_() for a in arrays]
    kw = {k: v for k, v in kwargs.items() if k != "mask"}
    if "mask" in kwargs:
        kw["attn_mask"] = lib.tensor(_mask(kwargs["mask"], arrays[0].shape[-2],
                                           arrays[1].shape[-2]))
    out = lib.nn.functional.scaled_dot_product_attention(*leaves, **kw)
    return out, leaves


@pytest.mark.parametrize("name, qs, ks, vs, kwargs", FLASH_CASES + MATH_CASES,
                         ids=[c[0] for c in FLASH_CASES + MATH_CASES])
def test_the_choice_is_pytorchs(name, qs, ks, vs, kwargs):
    arrays = _arrays((qs, ks, vs))
    theirs, _ = _call(torch, arrays, kwargs, "float32")
    torch_flash = type(theirs.grad_fn).__name__.startswith("ScaledDotProductFlashAttention")
    assert torch_flash == (name in [c[0] for c in FLASH_CASES])
    with tp.dispatch.explain(file=False) as ex:
        _call(tp, arrays, kwargs, "float32")
    assert (FLASH in ex.text) == torch_flash
    assert ("math path: no flash kernel" in ex.text) != torch_flash


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, qs, ks, vs, kwargs", FLASH_CASES, ids=[c[0] for c in FLASH_CASES])
def test_flash_values_and_gradients_equal_pytorchs(name, qs, ks, vs, kwargs, dtype):
    arrays = _arrays((qs, ks, vs))
    grad = np.random.default_rng(2).standard_normal(qs[:-1] + vs[-1:]).astype(np.float32)
    results = []
    for lib in (tp, torch):
        out, leaves = _call(lib, arrays, kwargs, dtype)
        out.backward(lib.tensor(grad).to(out.dtype))
        results.append([np.asarray(t.detach().numpy()) for t in [out] + [x.grad for x in leaves]])
    tol = 1e-5 if dtype == "float32" else 1e-12
    for what, got, want in zip(("output", "grad q", "grad k", "grad v"), *results):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)


def test_turning_flash_off_leaves_the_math_path():
    arrays = _arrays(((2, 4, 8, 16),) * 3)
    tp.backends.cuda.enable_flash_sdp(False)
    try:
        with tp.dispatch.explain(file=False) as ex:
            _call(tp, arrays, {}, "float32")
    finally:
        tp.backends.cuda.enable_flash_sdp(True)
    assert "math path: no flash kernel (turned off by" in ex.text and FLASH not in ex.text


def test_a_bool_mask_is_not_saved():
    """PyTorch hands its CPU kernel a float copy of a bool mask: writing into the caller's
    mask after the call leaves backward working, in both libraries; writing into query
    makes it raise (the kernel saved it)."""
    arrays = _arrays(((1, 2, 4, 8),) * 3)
    for lib in (tp, torch):
        leaves = [lib.tensor(a).requires_grad_() for a in arrays]
        mask = lib.tensor(_mask("bool", 4, 4))
        out = lib.nn.functional.scaled_dot_product_attention(*leaves, attn_mask=mask)
        mask.fill_(True)
        out.sum().backward()
        q = leaves[0].detach().clone().requires_grad_()
        inner = q * 1
        out = lib.nn.functional.scaled_dot_product_attention(inner, *leaves[1:])
        inner.detach().add_(1)
        with pytest.raises(RuntimeError):
            out.sum().backward()
