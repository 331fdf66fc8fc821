"""Flash attention (triton_kernels/attention.py, cpu_kernels/attention.py): on `cuda`,
scaled_dot_product_attention runs _scaled_dot_product_flash_attention when the inputs
qualify, and its values and gradients equal the Composite math path's (the reference, on
the CPU with the flash kernels turned off) across dtypes, causal masks, bool and float masks, tails of odd lengths, padded
head dims, grouped heads and non-contiguous inputs; dropout's mask is drawn in the kernel
and drawn again by backward; the memory of a call grows linearly with the sequence (no
L x S buffer)."""
import numpy as np
import pytest
import torch

from triton_util import CUDA, host

import tensorplay as tp
from tensorplay.autograd import gradcheck, gradgradcheck

SDPA = tp.nn.functional.scaled_dot_product_attention
TOL = {tp.float32: 2e-5, tp.float16: 1e-2, tp.bfloat16: 3e-2}


def _rand(shape, seed, dtype=tp.float32):
    return tp.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32),
                     dtype=dtype)


# (name, query shape, key shape, value head dim, how the inputs are laid out, kwargs)
CASES = [
    ("plain", (2, 2, 5, 16), (2, 2, 7, 16), 16, "contiguous", {}),
    ("odd lengths past one block", (1, 2, 37, 8), (1, 2, 45, 8), 8, "contiguous", {}),
    ("causal, L > S", (1, 2, 21, 16), (1, 2, 13, 16), 16, "contiguous", {"is_causal": True}),
    ("causal, L < S, head dim 24", (1, 1, 19, 24), (1, 1, 35, 24), 24, "contiguous",
     {"is_causal": True}),
    ("bool mask broadcast", (2, 2, 6, 8), (2, 2, 9, 8), 8, "contiguous", {"mask": "bool"}),
    ("float mask", (2, 2, 6, 8), (2, 2, 9, 8), 8, "contiguous", {"mask": "float"}),
    ("value head dim differs, scale", (1, 2, 4, 16), (1, 2, 6, 16), 32, "contiguous",
     {"scale": 0.7}),
    ("grouped query heads", (1, 4, 5, 8), (1, 2, 6, 8), 8, "contiguous", {"enable_gqa": True}),
    ("(B, L, H, E) memory, transposed views", (2, 3, 9, 16), (2, 3, 11, 16), 16, "heads second",
     {}),
]


def _inputs(q_shape, k_shape, ev, layout, dtype):
    v_shape = k_shape[:-1] + (ev,)
    shapes = (q_shape, k_shape, v_shape)
    if layout == "heads second":   # (B, L, H, E) in memory, the view (B, H, L, E)
        return [_rand((s[0], s[2], s[1], s[3]), i, dtype).transpose(1, 2)
                for i, s in enumerate(shapes)]
    return [_rand(s, i, dtype) for i, s in enumerate(shapes)]


def _mask(kind, q_shape, k_shape):
    L, S = q_shape[2], k_shape[2]
    if kind == "bool":       # (L, S) broadcast over batch and heads; one row fully hidden
        keep = np.random.default_rng(7).random((L, S)) > 0.4
        keep[:, 0] = True
        keep[2] = False
        return tp.tensor(keep)
    return _rand((q_shape[0], 1, L, S), 8)      # float, broadcast over heads


def _run(device, q, k, v, kwargs, mask, grad_out):
    leaves = [t.to(device).detach().requires_grad_() for t in (q, k, v)]
    kw = {key: value for key, value in kwargs.items() if key != "mask"}
    out = SDPA(*leaves, attn_mask=None if mask is None else mask.to(device), **kw)
    out.backward(grad_out.to(device))
    return [out] + [t.grad for t in leaves]


# Every case in float32; the half types (tensor-core dots on a GPU, upcast in the
# interpreter) on the cases that change what the kernels compute: the rest in the slow run.
HALF_CASES = {"plain", "causal, L > S", "bool mask broadcast"}


def _case_params():
    for case in CASES:
        for dtype in (tp.float32, tp.float16, tp.bfloat16):
            marks = () if dtype is tp.float32 or case[0] in HALF_CASES else pytest.mark.slow
            yield pytest.param(*case, dtype, id=f"{case[0]}-{dtype.name}", marks=marks)


@pytest.mark.parametrize("name, q_shape, k_shape, ev, layout, kwargs, dtype", _case_params())
def test_flash_equals_the_composite(name, q_shape, k_shape, ev, layout, kwargs, dtype):
    q, k, v = _inputs(q_shape, k_shape, ev, layout, dtype)
    mask = _mask(kwargs["mask"], q_shape, k_shape) if "mask" in kwargs else None
    grad_out = _rand(q_shape[:-1] + (ev,), 9, dtype)
    with tp.dispatch.explain(file=False) as ex:
        got = _run("cuda", q, k, v, kwargs, mask, grad_out)
    assert "flash attention (_scaled_dot_product_flash_attention)" in ex.text
    tp.backends.cuda.enable_flash_sdp(False)    # the CPU would take its flash kernel too
    try:
        expected = _run("cpu", q, k, v, kwargs, mask, grad_out)   # the math path
    finally:
        tp.backends.cuda.enable_flash_sdp(True)
    for what, g, e in zip(("output", "grad query", "grad key", "grad value"), got, expected):
        assert g.device == CUDA and g.dtype == e.dtype and g.shape == e.shape, what
        np.testing.assert_allclose(host(g), host(e), rtol=TOL[dtype], atol=TOL[dtype],
                                   err_msg=what)


def test_the_math_path_stays_where_flash_does_not_apply():
    q = _rand((1, 2, 3, 4), 0)
    cases = [("dropout (PyTorch's CPU flash kernel takes none)", q, {"dropout_p": 0.5}),
             ("dtype float64", q.to(tp.float64).cuda(), {}),
             ("requires grad", q.cuda(),
              {"attn_mask": tp.zeros(3, 3, device="cuda", requires_grad=True)})]
    for reason, x, kwargs in cases + [("enable_flash_sdp(False)", q.cuda(), {})]:
        with tp.dispatch.explain(file=False) as ex:
            if reason == "enable_flash_sdp(False)":
                tp.backends.cuda.enable_flash_sdp(False)
            try:
                SDPA(x, x, x, **kwargs)
            finally:
                tp.backends.cuda.enable_flash_sdp(True)
        assert "math path: no flash kernel" in ex.text and reason in ex.text, reason
        assert "_scaled_dot_product_flash_attention(" not in ex.text


@pytest.mark.parametrize("shape_q, shape_kv", [((0, 2, 3, 8), (0, 2, 4, 8)),
                                               ((1, 2, 0, 8), (1, 2, 4, 8)),
                                               ((1, 2, 3, 8), (1, 2, 0, 8))],
                         ids=["empty batch", "no queries", "no keys"])
def test_empty(shape_q, shape_kv):
    q, k, v = _rand(shape_q, 0), _rand(shape_kv, 1), _rand(shape_kv, 2)
    grad_out = _rand(shape_q, 3)
    got = _run("cuda", q, k, v, {}, None, grad_out)
    expected = _run("cpu", q, k, v, {}, None, grad_out)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        np.testing.assert_allclose(host(g), host(e), atol=1e-6)


# (On cuda one finite difference is one interpreted launch: the slow run.)
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.slow)])
def test_gradcheck_and_gradgradcheck_of_the_output(device):
    # (double backward: the formula's composition of differentiable ops, create_graph=True)
    def inputs(seed, shape):
        return tp.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=tp.float64,
                         device=device, requires_grad=True)
    q, k, v = inputs(0, (1, 2, 2, 4)), inputs(1, (1, 1, 3, 4)), inputs(2, (1, 1, 3, 4))
    mask = tp.tensor(np.random.default_rng(3).standard_normal((2, 3)), device=device)

    def output(q, k, v):
        return tp._scaled_dot_product_flash_attention(q, k, v, attn_mask=mask)[0]

    assert gradcheck(output, (q, k, v))
    assert gradgradcheck(output, (q, k, v))


# ---- dropout -------------------------------------------------------------------------------
P = 0.3


def _flash(device, q, k, v, dropout_p, seed):
    tp.manual_seed(seed)
    return tp._scaled_dot_product_flash_attention(q.to(device), k.to(device), v.to(device),
                                                  dropout_p)[0]


def _dropped_weights(device, q, k, seed):
    """The weights after dropout, P * keep / (1 - p), read out of the kernel itself: with
    value = the identity, out = weights @ I. The mask depends on (B, H, L, S) only."""
    B, H, S = k.shape[0], k.shape[1], k.shape[2]
    eye = tp.eye(S).expand(B, H, S, S).contiguous()
    return host(_flash(device, q, k, eye, P, seed))


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_dropout_mask_is_drawn_once_and_drawn_again_by_backward(device):
    q, k, v = _rand((2, 2, 24, 16), 0), _rand((2, 2, 32, 16), 1), _rand((2, 2, 32, 16), 2)
    weights = _dropped_weights(device, q, k, seed=5)
    plain = host(_flash(device, q, k, tp.eye(32).expand(2, 2, 32, 32).contiguous(), 0.0, 5))
    kept = weights != 0
    # Kept weights are the softmax's scaled by 1 / (1 - p); about p of them dropped.
    np.testing.assert_allclose(weights[kept], plain[kept] / (1 - P), rtol=1e-5)
    assert abs(1 - kept.mean() - P) < 0.05, kept.mean()
    # The same seed draws the same mask; another seed another one.
    assert np.array_equal(_dropped_weights(device, q, k, seed=5), weights)
    assert not np.array_equal(_dropped_weights(device, q, k, seed=6), weights)

    # Backward regenerates the mask: its gradients are those of (weights with this mask) @ v.
    leaves = [t.to(device).requires_grad_() for t in (q, k, v)]
    tp.manual_seed(5)
    out = tp._scaled_dot_product_flash_attention(*leaves, P)[0]
    grad_out = _rand(tuple(out.shape), 3)
    out.backward(grad_out.to(device))
    tq, tk, tv = (torch.tensor(host(t), requires_grad=True) for t in (q, k, v))
    keep = torch.tensor(kept / (1 - P))
    expected = (torch.softmax(tq @ tk.transpose(-2, -1) / 4.0, -1) * keep) @ tv
    expected.backward(torch.tensor(host(grad_out)))
    np.testing.assert_allclose(host(out), expected.detach().numpy(), rtol=1e-5, atol=1e-5)
    for leaf, ref in zip(leaves, (tq, tk, tv)):
        np.testing.assert_allclose(host(leaf.grad), ref.grad.numpy(), rtol=1e-4, atol=1e-5)


# ---- memory --------------------------------------------------------------------------------
def _peak_bytes_of_a_call(length, head_dim=16, flash=True):
    """The most `cuda` memory held at once during forward and backward of one SDPA call,
    above what its inputs and gradient already hold (the allocator's own accounting,
    tp.cuda.max_memory_allocated, which counts under the interpreter too)."""
    q, k, v = (_rand((1, 1, length, head_dim), i).cuda().requires_grad_() for i in range(3))
    grad_out = _rand((1, 1, length, head_dim), 3).cuda()
    tp.backends.cuda.enable_flash_sdp(flash)
    try:
        tp.cuda.reset_peak_memory_stats()
        before = tp.cuda.memory_allocated()
        SDPA(q, k, v, is_causal=True).backward(grad_out)
    finally:
        tp.backends.cuda.enable_flash_sdp(True)
    return tp.cuda.max_memory_allocated() - before


def test_memory_grows_linearly_with_the_sequence():
    small, large = _peak_bytes_of_a_call(256), _peak_bytes_of_a_call(512)
    # One float32 L x S matrix at L = S = 512 is 1 MiB, at 256 256 KiB; the whole call
    # stays below the smaller: the output, the logsumexp, the gradients, O(L * head dim)
    # (80 KiB and 160 KiB when written).
    assert large < 256 * 256 * 4, large
    assert large <= 2.1 * small, (small, large)
    # The measure sees an L x S buffer: the math path holds several (1.1 MiB at 256;
    # checked at 128, where the interpreter runs it faster).
    assert _peak_bytes_of_a_call(128, flash=False) > 128 * 128 * 4


def test_forward_mode_tangent_equals_the_composite():
    import tensorplay.autograd.forward_ad as fw
    primals = [_rand(s, i) for i, s in enumerate(((1, 2, 3, 8), (1, 2, 5, 8), (1, 2, 5, 8)))]
    tangents = [_rand(tuple(p.shape), 10 + i) for i, p in enumerate(primals)]

    def tangent(device):
        with fw.dual_level():
            duals = [fw.make_dual(p.to(device), t.to(device))
                     for p, t in zip(primals, tangents)]
            return host(fw.unpack_dual(SDPA(*duals, is_causal=True)).tangent)

    np.testing.assert_allclose(tangent("cuda"), tangent("cpu"), rtol=1e-5, atol=1e-5)
