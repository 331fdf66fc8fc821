"""tp.amp.custom_fwd / custom_bwd: an autograd.Function's forward under autocast (with
cast_inputs: its inputs cast, autocast off inside), and its backward under the state its
forward had, compared with PyTorch's on the same program."""
import inspect

import numpy as np
import pytest
import torch

import tensorplay as tp


def _function(m, cast_inputs):
    """The same custom matmul Function, written for torch or for tp (`m`), recording the
    dtypes and autocast state its forward and backward see."""
    seen = {}

    class MatMul(m.autograd.Function):
        @staticmethod
        @m.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, a, b):
            seen["forward"] = (str(a.dtype).split(".")[-1], str(b.dtype).split(".")[-1],
                               m.is_autocast_enabled("cpu"))
            ctx.save_for_backward(a, b)
            return a.mm(b)

        @staticmethod
        @m.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            seen["backward"] = (str(grad.dtype).split(".")[-1], m.is_autocast_enabled("cpu"))
            return grad.mm(b.t()), a.t().mm(grad)

    return MatMul, seen


def _run(m, cast_inputs, autocast):
    rng = np.random.default_rng(0)
    a = m.tensor(rng.uniform(-1, 1, (3, 4)), dtype=m.float32, requires_grad=True)
    b = m.tensor(rng.uniform(-1, 1, (4, 2)), dtype=m.float32, requires_grad=True)
    fn, seen = _function(m, cast_inputs)
    with m.autocast("cpu", enabled=autocast):
        out = fn.apply(a.bfloat16() if autocast else a, b)
    out.float().sum().backward()
    return str(out.dtype).split(".")[-1], seen, np.asarray(a.grad.double()), \
        np.asarray(b.grad.double())


@pytest.mark.parametrize("cast_inputs", [None, "float32"])
@pytest.mark.parametrize("autocast", [True, False])
def test_custom_fwd_bwd_match_torch(cast_inputs, autocast):
    ours = _run(tp, cast_inputs and tp.float32, autocast)
    theirs = _run(torch, cast_inputs and torch.float32, autocast)
    assert ours[:2] == theirs[:2]
    np.testing.assert_allclose(ours[2], theirs[2], rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(ours[3], theirs[3], rtol=2e-2, atol=2e-2)


def test_signatures_are_torchs():
    def shape(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
    for name in ("custom_fwd", "custom_bwd"):
        assert shape(getattr(tp.amp, name)) == shape(getattr(torch.amp, name))


def test_device_type_must_be_a_string():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        tp.amp.custom_fwd(lambda ctx: None, device_type=tp.device("cpu"))


def test_cuda_amp_spelling_is_deprecated():
    with pytest.warns(FutureWarning, match="torch.cuda.amp.custom_fwd"):
        tp.cuda.amp.custom_fwd(lambda ctx, x: x)
    with pytest.warns(FutureWarning, match="torch.cuda.amp.custom_bwd"):
        tp.cuda.amp.custom_bwd(lambda ctx, g: g)
