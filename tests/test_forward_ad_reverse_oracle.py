"""Tangents of ops PyTorch's forward mode lacks, against J v from PyTorch's reverse mode.

test_forward_ad_ops.py compares with torch.autograd.forward_ad and skips a sample PyTorch
has no forward formula for. The ops here have one in TensorPlay all the same (index_reduce,
scatter_reduce's 'prod', embedding_bag, grid_sampler); their oracle is the Jacobian that
PyTorch's backward gives, built row by row (torch.autograd.functional.jacobian) and
applied to the tangents: J v = sum over inputs of J_input @ v_input.
"""
from __future__ import annotations

import pytest
import torch

import tensorplay as tp
import tensorplay.autograd.forward_ad as fw
from opinfo import op_db
from opinfo.core import DEFAULT_TOLERANCES, assert_close, make_tensor, rng_for, to_torch
from test_forward_ad_ops import _tp_tangents     # the sweep's own: duals in, tangents out

OPS = ("index_reduce", "scatter_reduce", "_embedding_bag", "embedding_bag",
       "embedding_bag.padding_idx", "grid_sampler_2d", "grid_sampler_3d", "grid_sampler")


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _jacobian_times(op, sample, tangents):
    """J v of the sample's first output through PyTorch's reverse mode."""
    t_input, t_args, t_kwargs = to_torch((sample.input, sample.args, sample.kwargs))
    leaves = [t for t in sample.tensors() if t.requires_grad]
    t_leaves = [to_torch(t).detach() for t in leaves]

    def call(*xs):
        it = iter(xs)

        def swap(v):
            if isinstance(v, (tuple, list)):
                return type(v)(swap(x) for x in v)
            if isinstance(v, dict):
                return {k: swap(x) for k, x in v.items()}
            return next(it) if isinstance(v, torch.Tensor) and v.requires_grad else v
        args = swap((t_input, t_args, t_kwargs))
        return _flat(op.ref(args[0], *args[1], **args[2]))[0]
    out = call(*t_leaves)
    if out.numel() == 0:      # (jacobian() cannot stack no rows)
        return torch.zeros_like(out)
    jac = torch.autograd.functional.jacobian(call, tuple(t_leaves))
    return sum((j.reshape(out.numel(), -1) @ to_torch(v).reshape(-1)).reshape(out.shape)
               for j, v in zip(jac, tangents))


@pytest.mark.parametrize("op", [op for op in op_db if op.full_name in OPS],
                         ids=lambda op: op.full_name)
def test_tangent_is_reverse_mode_jacobian_times_tangent(op):
    rng = rng_for("forward-reverse", op.full_name)
    checked = 0
    for sample in op.sample_inputs("cpu", tp.float64, requires_grad=True):
        leaves = [t for t in sample.tensors() if t.requires_grad]
        if not leaves:
            continue
        tangents = [make_tensor(t.shape, t.dtype, "cpu", rng=rng) for t in leaves]
        got = _tp_tangents(op.call, sample, tangents)[0]
        assert got is not None, f"sample {sample!r}: no tangent"
        assert_close(got, _jacobian_times(op, sample, tangents),
                     op.tolerance(tp.float64) or DEFAULT_TOLERANCES[tp.float64],
                     where=f"tangent of {sample!r}")
        checked += 1
    assert checked


@pytest.mark.parametrize("reduce, torch_reduce", [("add", "sum"), ("multiply", "prod")])
def test_scatter_with_reduce_is_scatter_reduce(reduce, torch_reduce):
    """scatter(reduce=) has no derivative in PyTorch; it is scatter_reduce keeping self,
    whose Jacobian is the oracle (src has zeros, two in one slot, for 'multiply')."""
    rng = rng_for("forward-reverse", "scatter", reduce)
    self_ = make_tensor((4, 3), tp.float64, "cpu", rng=rng)
    src = make_tensor((3, 3), tp.float64, "cpu", rng=rng)
    src[0, 1] = 0.0
    src[2, 1] = 0.0
    index = tp.tensor([[0, 1, 2], [3, 1, 2], [0, 2, 2]])
    self_t, src_t = (make_tensor(t.shape, tp.float64, "cpu", rng=rng) for t in (self_, src))
    with fw.dual_level():
        out = fw.make_dual(self_, self_t).scatter(0, index, fw.make_dual(src, src_t),
                                                  reduce=reduce)
        value_out = fw.make_dual(self_, self_t).scatter(0, index, 1.5, reduce=reduce)
        got, value_got = fw.unpack_dual(out).tangent, fw.unpack_dual(value_out).tangent
    t_index = to_torch(index)

    def ref(s, x):
        return s.scatter_reduce(0, t_index, x, torch_reduce)
    jac = torch.autograd.functional.jacobian(ref, (to_torch(self_), to_torch(src)))
    expected = sum(j.reshape(12, -1) @ to_torch(v).reshape(-1) for j, v in
                   zip(jac, (self_t, src_t))).reshape(4, 3)
    assert_close(got, expected, DEFAULT_TOLERANCES[tp.float64], where="scatter(src, reduce)")
    jac_self = torch.autograd.functional.jacobian(
        lambda s: s.scatter_reduce(0, t_index, torch.full((3, 3), 1.5, dtype=torch.float64),
                                   torch_reduce), to_torch(self_))
    assert_close(value_got, (jac_self.reshape(12, 12) @ to_torch(self_t).reshape(-1))
                 .reshape(4, 3), DEFAULT_TOLERANCES[tp.float64], where="scatter(value, reduce)")
