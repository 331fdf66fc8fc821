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
    # (The in-place activations, kron, scaled_dot_product_attention and nll_loss_forward
    # left this list: they save what PyTorch's save now.)
    # The fused cross entropy's backward op: its reference is a composition.
    "_cross_entropy_backward": "reference",
    # The reference is not a PyTorch op of the same signature (TensorPlay's extensions:
    # _fused_rms_norm's and silu_backward's references).
    "_fused_rms_norm": "reference", "silu_backward": "reference",
    # Flash attention: the reference is the math composition (PyTorch's flash op is
    # cuda-only), saving q, k, v, out and logsumexp as PyTorch's CPU kernel does; ours
    # also saves the rng state (philox seed and offset), as PyTorch's cuda kernel does.
    "_scaled_dot_product_flash_attention": "reference",
    # PyTorch's backward saves a tensor TensorPlay's formula does not read (their
    # gradients agree): an in-place change after the call makes only PyTorch's backward
    # raise (the fuzzer's KNOWN "missing error ... modified by an inplace operation").
    # Mostly on empty inputs, where TensorPlay's backward returns early; conv_tbc and
    # embedding_bag are composites whose pieces save less; linalg_cond saves its result.
    "cholesky": "saves less", "combinations": "saves less", "conv_tbc": "saves less",
    "_embedding_bag": "saves less", "embedding_bag": "saves less",
    "linalg_cond": "saves less", "linalg_householder_product": "saves less",
    "orgqr": "saves less", "ormqr": "saves less", "put": "saves less",
    "triangular_solve": "saves less",
    # Both libraries refuse the probe, with other messages: no derivative for igamma's,
    # igammac's and zeta's first input in either; lu_unpack's empty pivots (tril against
    # triu in the message); PyTorch's probe of the RNNs' flat weights (an in-place bump
    # of an unbind output, which PyTorch refuses); as_strided_scatter's strided sample,
    # whose PyTorch twin refuses its own storage (setStorage).
    "igamma": "both refuse", "igammac": "both refuse", "special_zeta": "both refuse",
    "lu_unpack": "both refuse", "lstm": "both refuse", "gru": "both refuse",
    "rnn_tanh": "both refuse", "rnn_relu": "both refuse", "as_strided_scatter": "both refuse",
    # (an overload that matches where its op's name does not: zeta of a number self has
    # no first input to refuse)
    "special_zeta.self_scalar": None,
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
