"""Each op's backward saves (and so version-checks) the tensors PyTorch's saves.

`tests/saved_tensors.py` observes it from outside: it bumps the version of one input or
output at a time and sees whether backward raises, in both libraries. The default run
checks the first sample of the ops whose saved tensors were once wrong (and the rules
they broke); `pytest -m slow` sweeps every sample of every database op (about a minute).

Known differences (composite ops whose decomposition differs from PyTorch's, the
in-place ops and views, and ops whose database reference is not a PyTorch op) are
listed in KNOWN, each with its reason; the sweep fails on any other, and marks the known
ones xfail(strict), so an entry that gets fixed must leave the list.
"""
from __future__ import annotations

import pytest

from opinfo import op_db
from saved_tensors import op_differences

# ops.yaml op -> why it still saves other tensors than PyTorch's. Shrink-only.
KNOWN = {
    # In-place variants: another helper's cluster (saved outputs of in-place activations).
    # (as_strided and unfold left this list: their backward saves the input's geometry.)
    "elu.inplace": "in-place", "celu.inplace": "in-place", "selu.inplace": "in-place",
    "leaky_relu.inplace": "in-place",
    # Decompositions unlike PyTorch's: PyTorch's kron reshapes with _unsafe_view (an
    # alias that shares the data but not the version counter: its backward then reads
    # the changed values, unchecked) and the flash kernel of scaled_dot_product_attention
    # is another composition; ours save through other nodes. (einsum left this list: its
    # save rule replays PyTorch's composition, tensorplay/autograd/einsum_saves.py; and
    # matmul: it folds a vector or matrix times a stack as PyTorch's does.)
    "kron": "decomposition",
    "scaled_dot_product_attention": "decomposition",
    # The fused cross entropy's backward op: its reference is a composition.
    "_cross_entropy_backward": "reference",
    # The reference is not a PyTorch op of the same signature (TensorPlay's extensions:
    # n-d nll_loss_forward, _fused_rms_norm's and silu_backward's references).
    "nll_loss_forward": "reference",
    "_fused_rms_norm": "reference", "silu_backward": "reference",
    # Flash attention: the reference is the math composition (PyTorch's flash op is
    # cuda-only), saving q, k, v, out and logsumexp as PyTorch's CPU kernel does; ours
    # also saves the rng state (philox seed and offset), as PyTorch's cuda kernel does.
    "_scaled_dot_product_flash_attention": "reference",
}

# The ops each fixed rule covers, checked on their first samples in the default run.
FIXED = ["einsum", "mul", "pow", "pow.scalar", "float_power.scalar", "lerp.tensor", "addcdiv", "topk",
         "sort", "msort", "cumsum", "gather", "take", "masked_select", "index_add",
         "index_copy", "repeat_interleave", "repeat_interleave.tensor", "take_along_dim",
         "mse_loss", "huber_loss", "smooth_l1_loss", "avg_pool2d_backward",
         "adaptive_avg_pool2d_backward", "batch_norm", "group_norm", "std_mean", "var_mean",
         "dist", "pairwise_distance", "sinc", "xlog1py", "prelu", "threshold_backward",
         "gelu_backward", "_log_softmax_backward_data", "linalg_vector_norm", "cov",
         "scaled_dot_product_attention", "cross_entropy_loss", "_cross_entropy_forward",
         "pad", "_pad_nd", "native_group_norm", "as_strided", "unfold", "copysign",
         "nextafter", "adaptive_avg_pool1d", "matmul", "linalg_matmul"]


def _ops(names):
    found = [op for op in op_db if op.full_name in names]
    assert {op.full_name for op in found} == set(names), \
        f"not in the database: {sorted(set(names) - {op.full_name for op in found})}"
    return found


@pytest.mark.parametrize("op", _ops(FIXED), ids=lambda op: op.full_name)
def test_saved_tensors_match_torch(op):
    differences = op_differences(op, max_samples=1)
    assert not differences, "\n".join(map(str, differences))


def _known(op):
    reason = KNOWN.get(op.full_name, KNOWN.get(op.name))
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


@pytest.mark.slow
@pytest.mark.parametrize("op", [pytest.param(op, id=op.full_name, marks=_known(op))
                                for op in op_db])
def test_saved_tensors_match_torch_every_op(op):
    differences = op_differences(op)
    assert not differences, "\n".join(map(str, differences))
