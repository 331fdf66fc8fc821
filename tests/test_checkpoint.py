"""tp.utils.checkpoint against PyTorch's: the same gradients as without checkpointing (and
as torch.utils.checkpoint with the same weights), in both forms (use_reentrant=True: a
Function that reruns the forward in backward; False: saved-tensor hooks), the same
dropout mask on the rerun, non-tensor and nested arguments, and a lower peak memory.
Also the saved-tensor hooks checkpointing is built on (tp.autograd.graph)."""
from __future__ import annotations

import importlib.util
import os
import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcp

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay.autograd.graph import save_on_cpu, saved_tensors_hooks
from tensorplay.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

FORMS = pytest.mark.parametrize("use_reentrant", [True, False],
                                ids=["reentrant", "hooks"])


def close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=rtol,
                               atol=atol)


def mlp_pair(depth=3, width=5):
    """The same Linear/Tanh stack in both libraries (float64, weights copied)."""
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.Tanh()]
    tm = torch.nn.Sequential(*layers).double()
    m = tp.nn.Sequential(*[tp.nn.Linear(width, width, dtype=tp.float64) if i % 2 == 0
                           else tp.nn.Tanh() for i in range(2 * depth)])
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return m, tm


def gradients(model, x, run):
    model.zero_grad()
    x.grad = None
    run().sum().backward()
    return [x.grad] + [p.grad for p in model.parameters()]


@FORMS
def test_gradients_match_plain_run_and_torch(use_reentrant):
    m, tm = mlp_pair()
    arr = np.random.default_rng(0).standard_normal((4, 5))
    x, xt = tp.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)
    plain = gradients(m, x, lambda: m(x))
    ours = gradients(m, x, lambda: checkpoint(m, x, use_reentrant=use_reentrant))
    seq = gradients(m, x, lambda: checkpoint_sequential(m, 3, x, use_reentrant=use_reentrant))
    theirs = gradients(tm, xt, lambda: tcp.checkpoint(tm, xt, use_reentrant=use_reentrant))
    for a, b, c, d in zip(plain, ours, seq, theirs):
        close(b, a)
        close(c, a)
        close(b, d)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@FORMS
def test_dropout_draws_the_same_mask_on_the_rerun(use_reentrant, device):
    """On cuda the mask comes from the Philox generator (seed, offset), a state apart
    from the CPU generator's: both are restored for the rerun."""
    masks = []

    def fn(x):
        y = F.dropout(x, 0.5, training=True)
        masks.append((y != 0).tolist())
        return y * x

    x = tp.randn(6, 8, device=device, requires_grad=True)
    tp.manual_seed(3)
    checkpoint(fn, x, use_reentrant=use_reentrant).sum().backward()
    after = tp.rand(3, device=device)    # the caller's random state moved on once
    assert len(masks) == 2 and masks[0] == masks[1]
    expected_grad = x.grad
    x.grad = None
    tp.manual_seed(3)
    fn(x).sum().backward()
    assert masks[2] == masks[0]
    close(x.grad, expected_grad)
    assert tp.rand(3, device=device).tolist() == after.tolist()


def test_preserve_rng_state_false_draws_anew():
    masks = []

    def fn(x):
        y = F.dropout(x, 0.5, training=True)
        masks.append((y != 0).tolist())
        return y

    x = tp.randn(16, 16, requires_grad=True)
    checkpoint(fn, x, use_reentrant=False, preserve_rng_state=False).sum().backward()
    assert masks[0] != masks[1]


@FORMS
def test_non_tensor_arguments(use_reentrant):
    def fn(x, scale, power, w):
        return (x * scale) ** power * w

    x, w = tp.randn(3, requires_grad=True), tp.randn(3, requires_grad=True)
    y = checkpoint(fn, x, 2.5, 3, w, use_reentrant=use_reentrant)
    y.sum().backward()
    gx, gw = x.grad, w.grad
    x.grad = w.grad = None
    fn(x, 2.5, 3, w).sum().backward()
    close(gx, x.grad)
    close(gw, w.grad)


def test_nested_structures_kwargs_and_nested_checkpoints():
    """use_reentrant=False: tensors inside a dict and a tuple, keyword arguments, a
    checkpoint inside a checkpoint, and several outputs."""
    def inner(x, *, k):
        return (x * k).sin()

    def outer(pair, params, *, k):
        a, b = pair
        h = checkpoint(inner, a * params["w"], use_reentrant=False, k=k)
        return h + b.exp(), (h * b).sum()

    arr = np.random.default_rng(1).standard_normal((3, 4))
    leaves = [tp.tensor(arr[i], requires_grad=True) for i in range(3)]
    tleaves = [torch.tensor(arr[i], requires_grad=True) for i in range(3)]
    out, total = checkpoint(outer, (leaves[0], leaves[1]), {"w": leaves[2]},
                            use_reentrant=False, k=1.5)
    (out.sum() + total).backward()
    tout, ttotal = tcp.checkpoint(
        lambda pair, params, *, k: (
            (pair[0] * params["w"] * k).sin() + pair[1].exp(),
            ((pair[0] * params["w"] * k).sin() * pair[1]).sum()),
        (tleaves[0], tleaves[1]), {"w": tleaves[2]}, use_reentrant=False, k=1.5)
    (tout.sum() + ttotal).backward()
    close(out, tout)
    for a, b in zip(leaves, tleaves):
        close(a.grad, b.grad)


def test_hooks_form_works_with_autograd_grad_and_retain_graph():
    x = tp.randn(4, requires_grad=True)
    y = checkpoint(lambda t: (t.tanh() * t).exp(), x, use_reentrant=False).sum()
    (g1,) = tp.autograd.grad(y, x, retain_graph=True)
    (g2,) = tp.autograd.grad(y, x)          # a second backward reruns the forward again
    ref = (x.tanh() * x).exp()
    (g3,) = tp.autograd.grad(ref.sum(), x)
    close(g1, g3)
    close(g2, g3)


def test_warnings_and_argument_errors():
    x = tp.randn(2, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
        checkpoint(tp.sin, x)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
        checkpoint_sequential([tp.sin, tp.cos], 2, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: k"):
        checkpoint(tp.sin, x, use_reentrant=True, k=1)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(tp.sin, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        checkpoint(tp.sin, x, use_reentrant=False, determinism_check="exact")
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad"):
        checkpoint(tp.sin, tp.randn(2), use_reentrant=True)


@pytest.mark.parametrize("rerun, message", [
    (lambda x: x.exp().exp(), "trying to save more tensors during recomputation"),
    (lambda x: x[:2].exp(), "different metadata than during the forward pass"),
    (lambda x: x + 1, "A different number of tensors was saved"),
], ids=["more", "other_shape", "fewer"])
def test_a_rerun_that_saves_differently_is_refused(rerun, message):
    calls = []

    def fn(x):
        calls.append(1)
        return x.exp() if len(calls) == 1 else rerun(x)

    x = tp.randn(3, requires_grad=True)
    y = checkpoint(fn, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match=message):
        y.sum().backward()


def test_context_fn_wraps_forward_and_rerun():
    seen = []

    class Mark:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            seen.append(self.name)

        def __exit__(self, *args):
            pass

    x = tp.randn(3, requires_grad=True)
    checkpoint(tp.exp, x, use_reentrant=False,
               context_fn=lambda: (Mark("forward"), Mark("rerun"))).sum().backward()
    assert seen == ["forward", "rerun"]


def test_saved_tensors_hooks_and_save_on_cpu():
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t.clone()

    a = tp.randn(3, requires_grad=True)
    with saved_tensors_hooks(pack, lambda t: t):
        y = (a.exp() * a).sum()              # exp saves its result, mul both factors
    y.backward()
    assert packed == [(3,), (3,), (3,)]
    close(a.grad, a.exp() * (1 + a), rtol=1e-6, atol=1e-7)
    grad = a.grad
    a.grad = None
    with save_on_cpu():
        (a.exp() * a).sum().backward()
    close(a.grad, grad)
    with saved_tensors_hooks(lambda t: t, lambda t: 1.0):
        z = a.exp().sum()
    with pytest.raises(tp.errors.AutogradError, match="unpack_hook should return a Tensor"):
        z.backward()


def _bench():
    path = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "bench_checkpoint.py")
    spec = importlib.util.spec_from_file_location("bench_checkpoint", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_checkpoint_sequential_lowers_peak_memory():
    """benchmarks/bench_checkpoint.py's TensorPlay measurement (tracemalloc's peak) on a
    small MLP: 4 segments keep 3 boundaries and one segment's activations instead of
    all 12 layers'."""
    bench = _bench()
    tp.manual_seed(0)
    model = bench.mlp(tp, 12, 64, "cpu")
    x = tp.randn(64, 64, requires_grad=True)

    def plain():
        model(x).sum().backward()

    def checkpointed():
        checkpoint_sequential(model, 4, x, use_reentrant=False).sum().backward()

    plain(), checkpointed()          # the .grad tensors exist before either is measured
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        low = bench.tp_peak_bytes(checkpointed)
    high = bench.tp_peak_bytes(plain)
    assert low < 0.75 * high, (low, high)
