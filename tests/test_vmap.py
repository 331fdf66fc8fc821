"""tp.vmap against the per-example loop, for every op of the operator database, plus
nesting, pytrees, errors, randomness, in-place rules and per-example gradients.

    test_op_matches_loop[<op>]   vmap(op) over a batch of 2 examples == stacking op on
                                 each example, with in_dims 0, 1 and -1 and with only the
                                 first tensor batched (one sample per op; every sample with
                                 `-m slow`)
    test_ops_with_rules_take_no_fallback   prints tp.func.fallback_ops(); fails when an op
                                 with a batching rule ran the per-example fallback
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay.func import VmapError, fallback_ops
from tensorplay.func.batching_rules import RULES
from tensorplay.func.fallback import declined_ops
from tensorplay._generated.op_tags import OP_TAGS
from opinfo import op_db
from opinfo.core import SampleInput, tp_to_numpy

BATCH = 2


def _dtype(op):
    return tp.float32 if tp.float32 in op.dtypes else op.dtypes[0]


def _is_random(op):
    return any("random" in OP_TAGS.get(name, ()) for name in op.overloads) or \
        op.name in ("native_dropout", "dropout", "multinomial")


# ---- building batches from a sample -------------------------------------------------------
def _leaves(sample):
    return sample.tensors()


def _rebuild(sample, leaves):
    it = iter(leaves)
    return sample.map_tensors(lambda t: next(it))


def _other_example(t):
    """A second example with the same values in another order (so it stays in the op's
    domain: positive, valid indices...)."""
    if t.numel() < 2:
        return t.clone()
    return t.detach().reshape(-1).flip(0).reshape(t.shape).clone()


def _run(op, sample, leaves):
    s = _rebuild(sample, [t.clone() for t in leaves])
    return op.call(s)


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _examples(op, sample, batched):
    """Per-leaf lists of BATCH examples (unbatched leaves: the same one) and the loop's
    outputs; the second example falls back to a copy of the first when the op rejects it
    (ops whose inputs must be sorted, say)."""
    leaves = _leaves(sample)
    first = [t.detach() for t in leaves]
    second = [_other_example(t) if b else t.detach() for t, b in zip(first, batched)]
    try:
        outs = [_run(op, sample, first), _run(op, sample, second)]
    except Exception:  # noqa: BLE001 - the second example is not valid for this op
        second = first
        outs = [_run(op, sample, first), _run(op, sample, first)]
    return [first, second], outs


def _stack_at(examples, dim):
    return tp.stack([e.clone() for e in examples], dim)


def _check(op, sample, in_dim, batched):
    exs, outs = _examples(op, sample, batched)
    if not all(isinstance(o, tp.Tensor) for out in outs for o in _flat(out)):
        pytest.skip("the op returns non-tensors (vmap batches tensors only)")
    physical, in_dims = [], []
    for k, b in enumerate(batched):
        leaf = exs[0][k]
        if not b:
            physical.append(leaf.clone())
            in_dims.append(None)
            continue
        d = in_dim if leaf.dim() > 0 or in_dim == 0 else 0
        physical.append(_stack_at([e[k] for e in exs], d if d >= 0 else leaf.dim()))
        in_dims.append(d)

    def f(*leaves):
        return op.call(_rebuild(sample, list(leaves)))

    randomness = "different" if _is_random(op) else "error"
    if not all(batched) and _writes_other_arguments(op, sample):
        # PyTorch's rule: batched values may not be written into an unbatched tensor.
        with pytest.raises(VmapError, match="vmapped over|was not batched"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tp.vmap(f, in_dims=tuple(in_dims), randomness=randomness)(*physical)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = tp.vmap(f, in_dims=tuple(in_dims), randomness=randomness)(*physical)
    got = _flat(got)
    for k, g in enumerate(got):
        expected = tp.stack([_flat(o)[k].detach() for o in outs])
        where = f"{op.full_name} output {k}, in_dims={tuple(in_dims)}, sample {sample!r}"
        assert tuple(g.shape) == tuple(expected.shape), where
        assert g.dtype == expected.dtype, where
        a, e = tp_to_numpy(g.detach()), tp_to_numpy(expected)
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5, equal_nan=True,
                                       err_msg=where)
        else:
            np.testing.assert_array_equal(a, e, err_msg=where)


def _writes_other_arguments(op, sample):
    """The op writes into a tensor other than its first one (an optimizer's state): its
    version counter moves."""
    leaves = [t.clone() for t in _leaves(sample)]
    before = [t._version for t in leaves]
    op.call(_rebuild(sample, leaves))
    return any(t._version != v for t, v in list(zip(leaves, before))[1:])


def _modes(n_leaves):
    modes = [(0, None), (1, None), (-1, None)]
    if n_leaves > 1:
        modes.append((0, "first only"))
    return modes


def _batched_flags(n, mode):
    return [True] * n if mode is None else [True] + [False] * (n - 1)


CPU_OPS = [op for op in op_db]


def _op_check(op, samples):
    ran = False
    for sample in samples:
        n = len(_leaves(sample))
        if n == 0:
            continue
        for in_dim, mode in _modes(n):
            _check(op, sample, in_dim, _batched_flags(n, mode))
            ran = True
    if not ran:
        pytest.skip("no tensor inputs")


@pytest.mark.parametrize("op", CPU_OPS, ids=lambda op: op.full_name)
def test_op_matches_loop(op):
    samples = op.sample_inputs("cpu", _dtype(op))
    _op_check(op, samples[:1])


@pytest.mark.slow
@pytest.mark.parametrize("op", CPU_OPS, ids=lambda op: op.full_name)
def test_op_matches_loop_all_samples(op):
    _op_check(op, op.sample_inputs("cpu", _dtype(op)))


def test_ops_with_rules_take_no_fallback(capsys):
    """Runs after the sweep above (file order): the ops that ran per example, printed;
    an op with a batching rule may only be there when its rule handed the call over on
    purpose (NeedsFallback: an argument combination it does not cover)."""
    with capsys.disabled():
        print(f"\nvmap fallback ops ({len(fallback_ops())}): {', '.join(fallback_ops())}")
        print(f"rules that handed a call to the fallback: {', '.join(declined_ops())}")
    wrong = sorted((set(fallback_ops()) - set(declined_ops())) & set(RULES))
    assert not wrong, f"ops with a batching rule took the fallback: {wrong}"
