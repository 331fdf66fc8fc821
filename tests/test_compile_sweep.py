"""Every entry of the operator database (tests/opinfo) through tp.compile: the compiled
call gives eager's values, and its compiled backward eager's gradients.

Each sample runs three times on fresh copies: eagerly, compiled (the first call
captures, and returns the capture run's own result), and compiled again (the replay of
the lowered graph, which is what this test is about), random ones under the same seed
(a random op is a node that draws anew on each replay). Random creation functions, ops
whose result is a Python value and ops with a data-dependent output size graph-break:
they must still match eager.

The default run takes the first sample of each entry in float32 on the cpu, and a small
set of entries on cuda (the Triton interpreter costs about 0.5 ms a program); the `slow`
form runs every sample of every entry in float32 and float64 on each device.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from opinfo import op_db
from opinfo.core import assert_close, available_devices, make_tensor, to_torch

DEVICES = available_devices()

# Entries whose compiled call cannot equal the eager one, with the reason (none at
# present: the ops that cannot be compiled graph-break and match eager).
EXCLUDED = {}

# The reduced cuda run: one entry per kind of kernel (pointwise, reduction, matmul,
# views, normalization, a joint backward through each).
CUDA_SUBSET = ("add", "mul", "exp", "tanh", "sigmoid", "sum", "mean", "amax", "mm",
               "softmax", "transpose", "linear", "relu", "where")


def _dtype(op, wanted=tp.float32):
    return wanted if wanted in op.dtypes else op.dtypes[0]


def _params():
    out = []
    for op in op_db:
        marks = [pytest.mark.skip(reason=EXCLUDED[op.full_name])] \
            if op.full_name in EXCLUDED else []
        for device in DEVICES:
            subset = device == "cpu" or op.name in CUDA_SUBSET
            out.append(pytest.param(device, op, False, id=f"{device}-{op.full_name}",
                                    marks=marks + ([] if subset else [pytest.mark.slow])))
            out.append(pytest.param(device, op, True, id=f"{device}-{op.full_name}-all",
                                    marks=marks + [pytest.mark.slow]))
    return out


def _fresh(sample):
    """A copy of the sample's tensors (an op may write into its input): the whole
    storage copied and viewed as the tensor was (as_strided reaches past the view)."""
    def copy(t):
        with tp.no_grad():
            n = t.untyped_storage().nbytes // t.element_size()
            whole = t.detach().as_strided((n,), (1,), 0).clone()
            c = whole.as_strided(tuple(t.shape), t.stride(), t.storage_offset())
        return c.requires_grad_() if t.requires_grad else c
    return sample.map_tensors(copy)


def _flat(x):
    if isinstance(x, (tuple, list)):
        return [b for a in x for b in _flat(a)]
    return [x]


def _call(op, sample, fn, seed):
    tp.manual_seed(seed)
    return fn(sample.input, sample.args, sample.kwargs)


def _check_values(op, dtype, expected, got, where):
    e, g = _flat(expected), _flat(got)
    assert len(e) == len(g), f"{where}: {len(g)} outputs, eager {len(e)}"
    for i, (a, b) in enumerate(zip(g, e)):
        if isinstance(b, tp.Tensor):
            assert isinstance(a, tp.Tensor), f"{where}: output {i} is not a tensor"
            assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape), \
                f"{where}: output {i}: {a.dtype}{list(a.shape)}, eager {b.dtype}{list(b.shape)}"
            assert_close(a.detach(), to_torch(b.detach()), op.tolerance(dtype),
                         where=f"{where}: output {i}")
        else:
            assert a == b or (a != a and b != b), f"{where}: output {i}: {a!r} vs {b!r}"


def _grads(sample, out, rng_seed, device):
    leaves = [t for t in sample.tensors() if t.requires_grad]
    outs = [o for o in _flat(out) if isinstance(o, tp.Tensor) and o.requires_grad]
    if not leaves or not outs:
        return None
    outs = [tp.view_as_real(o) if o.is_complex() else o for o in outs]
    rng = np.random.default_rng(rng_seed)
    loss = sum((o * make_tensor(o.shape, o.dtype, device, rng=rng)).sum() for o in outs)
    return tp.autograd.grad(loss, leaves, allow_unused=True)


def _run(op, device, dtype, samples):
    fn = op.op

    def call(inp, args, kwargs):
        return fn(inp, *args, **kwargs)

    for k, sample in enumerate(samples):
        compiled = tp.compile(call)
        try:
            expected = _call(op, _fresh(sample), call, k)
        except tp.errors.TensorPlayError as e:     # (sum(int, dtype=...) with grad)
            with pytest.raises(type(e)):
                _call(op, _fresh(sample), compiled, k)
            continue
        _call(op, _fresh(sample), compiled, k)                 # capture
        s = _fresh(sample)
        got = _call(op, s, compiled, k)                        # replay
        where = f"{op.full_name} sample {k} ({sample!r})"
        _check_values(op, dtype, expected, got, where)
        if not op.supports_autograd or not dtype.is_floating_point:
            continue
        e_sample = _fresh(sample)
        try:
            e_grads = _grads(e_sample, _call(op, e_sample, call, k), k, device)
        except tp.errors.TensorPlayError as e:     # no derivative: compiled raises it too
            g_sample = _fresh(sample)
            with pytest.raises(type(e)):
                _grads(g_sample, _call(op, g_sample, compiled, k), k, device)
            continue
        if e_grads is None:
            continue
        g_sample = _fresh(sample)
        _call(op, _fresh(sample), compiled, k)                 # capture (joint)
        g_grads = _grads(g_sample, _call(op, g_sample, compiled, k), k, device)
        for i, (a, b) in enumerate(zip(g_grads, e_grads)):
            assert (a is None) == (b is None), f"{where}: gradient {i} is {a}, eager {b}"
            if a is not None:
                assert_close(a, to_torch(b), op.tolerance(dtype),
                             where=f"{where}: gradient {i}")
        tp.compiler.reset()


@pytest.mark.parametrize("device, op, full", _params())
def test_compiled_matches_eager(device, op, full):
    dtypes = [d for d in (tp.float32, tp.float64) if d in op.dtypes] if full else [_dtype(op)]
    for dtype in dtypes or [op.dtypes[0]]:
        samples = op.sample_inputs(device, dtype, requires_grad=dtype.is_floating_point)
        _run(op, device, dtype, samples if full else samples[:1])
