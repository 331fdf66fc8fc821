"""The CPU fixes of result layouts (tests/test_regressions_strides.py), overlapping
in-place writes (tests/test_regressions_overlap.py), bool inputs, 0-dim topk and the median
of nothing (tests/test_regressions_checks.py), where the cuda backend has its own kernels
(triton_kernels/). Compared with torch on the CPU."""
import numpy as np
import pytest
import torch

from triton_util import CUDA, host

import tensorplay as tp
from tensorplay.errors import TensorPlayError

_LAYOUT_OPS = {
    "exp": lambda m, x: x.exp(),
    "add": lambda m, x: x + x,
    "lt": lambda m, x: x < 0,
    "where": lambda m, x: m.where(x > 0, x, -x),
    "clone": lambda m, x: x.clone(),
    "clone_contiguous": lambda m, x: x.clone(memory_format=m.contiguous_format),
}


@pytest.mark.parametrize("op", list(_LAYOUT_OPS))
@pytest.mark.parametrize("perm", [(2, 1, 0), (1, 2, 0)])
def test_results_follow_the_inputs_layout(op, perm):
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 10
    want = _LAYOUT_OPS[op](torch, torch.tensor(data).permute(*perm))
    got = _LAYOUT_OPS[op](tp, tp.tensor(data, device=CUDA).permute(*perm))
    assert got.stride() == want.stride()
    np.testing.assert_allclose(host(got), want.double().numpy() if want.is_floating_point()
                               else want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("case", ["expanded", "partial", "copy_partial"])
def test_overlapping_inplace_writes_are_refused(case):
    x = tp.arange(4.0, device=CUDA)
    with pytest.raises(TensorPlayError, match="unsupported operation"):
        if case == "expanded":
            tp.zeros(1, 3, device=CUDA).expand(2, 3).add_(1)
        elif case == "partial":
            x[:3].mul_(x[1:])
        else:
            x[:3].copy_(x[1:])
    x.add_(x)                               # exactly itself: fine
    assert host(x).tolist() == [0, 2, 4, 6]


@pytest.mark.parametrize("op", ["argmax", "topk", "kthvalue", "median", "pow"])
def test_bool_inputs_are_refused(op):
    b = tp.tensor([True, False], device=CUDA)
    call = {"argmax": lambda: b.argmax(), "topk": lambda: b.topk(1),
            "kthvalue": lambda: b.kthvalue(1), "median": lambda: b.median(),
            "pow": lambda: b.pow(b)}[op]
    with pytest.raises(tp.errors.DTypeError, match="not implemented for bool"):
        call()


def test_topk_of_0dim_and_median_of_nothing():
    values, indices = tp.topk(tp.tensor(0.9, device=CUDA), 0)
    assert values.shape == () and abs(values.item() - 0.9) < 1e-7 and indices.item() == 0
    assert np.isnan(tp.median(tp.ones(0, 3, device=CUDA)).item())
    assert tp.median(tp.ones(0, dtype=tp.int64, device=CUDA)).item() == \
        torch.median(torch.ones(0, dtype=torch.int64)).item()
