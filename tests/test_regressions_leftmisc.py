"""Regressions for the last mismatches of the long fuzz profile (issue 12), one test per
root cause, each compared with PyTorch (the seed of the fuzz program that found it in
the test's docstring)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import DTypeError

sys.path.insert(0, str(Path(__file__).parent))
from opinfo.db_nn_layers_nll import _ref_fused_ce_backward  # noqa: E402


def _tp(t):
    """The TensorPlay twin of a torch tensor (same dtype and values, contiguous)."""
    name = str(t.dtype).split(".")[1]
    return tp.tensor(t.detach().float().numpy()).to(getattr(tp, name))


def _strided_half(dtype, seed):
    """A (2, 3, 2, 2) float16/bfloat16 input with stride 2 in the last dim, in both libraries."""
    g = torch.Generator().manual_seed(seed)
    big = torch.randn(2, 3, 2, 4, generator=g).to(dtype)
    name = str(dtype).split(".")[1]
    tp_big = tp.tensor(big.float().numpy()).to(getattr(tp, name))
    return big[..., ::2], tp_big[..., ::2]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_batch_norm_non_contiguous_half_rounds_every_step(dtype):
    """Seed 11701: PyTorch's loop for a non-contiguous half input with half parameters runs
    on c10::Half values, rounding after each -, *, +, and eval's rstd comes from tensor ops
    on running_var; rounding once gave outputs one ulp off, which a following batch norm's
    float32 running statistics then showed."""
    for seed in range(5):
        th_x, tp_x = _strided_half(dtype, seed)
        assert tp_x.stride() == th_x.stride()
        g = torch.Generator().manual_seed(100 + seed)
        params = [torch.randn(3, generator=g) for _ in range(4)]
        params[3] = params[3].abs() + 0.1
        params = [p.to(dtype) for p in params]
        expected = torch.native_batch_norm(th_x, *params, False, 0.1, 1e-5)[0]
        got = tp.native_batch_norm(tp_x, *[_tp(p) for p in params], False, 0.1, 1e-5)[0]
        np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())


def test_cross_entropy_backward_ignored_row_is_zero_for_nan_grad():
    """Seeds 22454, 47684: an ignored row's gradient is 0 even for a NaN grad_output, as in
    PyTorch's cross_entropy backward (nll_loss_backward never writes it); the opinfo
    reference had 0 * NaN."""
    x = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([0, -100, 2, 3])
    nan = torch.tensor(float("nan"), dtype=torch.float64)
    torch.nn.functional.cross_entropy(x, target, reduction="sum").backward(nan)
    probs = torch.softmax(x.detach(), 1)
    reference = _ref_fused_ce_backward(nan, probs, target, None, "sum", -100,
                                       torch.tensor(3.0, dtype=torch.float64))
    got = tp._cross_entropy_backward(_tp(nan), _tp(probs), tp.tensor([0, -100, 2, 3]), None,
                                     "sum", -100, tp.tensor(3.0, dtype=tp.float64))
    np.testing.assert_array_equal(got.numpy(), x.grad.numpy())
    np.testing.assert_array_equal(reference.numpy(), x.grad.numpy())


def test_sdpa_refuses_mixed_dtypes():
    """Seed 88234: query, key and value of different dtypes, or a mask that is not bool,
    float32 or query's dtype, are refused (PyTorch's validate_sdpa_input)."""
    cases = [((tp.bfloat16, tp.float16, tp.float16), None, "key"),
             ((tp.float16, tp.float16, tp.float32), None, "value"),
             ((tp.float32,) * 3, tp.int64, "attn_mask"),
             ((tp.float64,) * 3, tp.float16, "attn_mask")]
    for dtypes, mask_dtype, arg in cases:
        th = [torch.ones(2, 4, 2, dtype=getattr(torch, d.name)) for d in dtypes]
        th_mask = None if mask_dtype is None else torch.zeros(4, 4, dtype=getattr(
            torch, mask_dtype.name))
        with pytest.raises(RuntimeError):
            torch.nn.functional.scaled_dot_product_attention(*th, attn_mask=th_mask)
        q, k, v = (tp.ones(2, 4, 2, dtype=d) for d in dtypes)
        mask = None if mask_dtype is None else tp.zeros(4, 4, dtype=mask_dtype)
        with pytest.raises(DTypeError) as info:
            tp.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        assert info.value.arg == arg
    # float32 and query's own dtype are accepted as masks
    q = tp.ones(2, 4, 2, dtype=tp.float16)
    for mask_dtype in (tp.float32, tp.float16, tp.bool):
        tp.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=tp.ones(
            4, 4, dtype=mask_dtype))


def test_prelu_weight_grad_ignores_nan_at_positive_inputs():
    """Seed 88443: the weight's gradient takes grad * self only where self <= 0; a NaN
    grad where self > 0 (cos_ of prelu(inf)) must not reach it (NaN * 0)."""
    grads = []
    for lib in (torch, tp):
        x = lib.tensor([[float("inf"), -2.0]], requires_grad=True)
        w = lib.tensor([0.25, 0.5], requires_grad=True)
        y = lib.prelu(x, w)
        (y * lib.tensor([[float("nan"), 3.0]])).sum().backward()
        grads.append((x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)
