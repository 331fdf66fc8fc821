"""Regressions for the last mismatches of the long fuzz profile (issue 12), one test per
root cause, each compared with PyTorch (the seed of the fuzz program that found it in
the test's docstring)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import tensorplay as tp
from tensorplay.errors import DTypeError

sys.path.insert(0, str(Path(__file__).parent))


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
