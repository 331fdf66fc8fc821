"""The global module hooks of torch.nn.modules.module (register_module_forward_hook, ...):
run for every module, before the module's own hooks, in the order PyTorch runs them."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.nn.modules import module as tp_module
from torch.nn.modules import module as torch_module


def _trace(m, mod):
    """Register every global hook kind, run a two-layer model forward and backward, and
    return what the hooks saw, in order."""
    seen = []
    handles = [
        mod.register_module_forward_pre_hook(
            lambda module, args: seen.append(("pre", type(module).__name__))),
        mod.register_module_forward_hook(
            lambda module, args, out: seen.append(("fwd", type(module).__name__,
                                                   tuple(out.shape)))),
        mod.register_module_full_backward_hook(
            lambda module, gin, gout: seen.append(("bwd", type(module).__name__,
                                                   tuple(gout[0].shape)))),
        mod.register_module_parameter_registration_hook(
            lambda module, name, p: seen.append(("param", type(module).__name__, name))),
        mod.register_module_buffer_registration_hook(
            lambda module, name, b: seen.append(("buffer", type(module).__name__, name))),
        mod.register_module_module_registration_hook(
            lambda module, name, sub: seen.append(("module", type(module).__name__, name))),
    ]
    try:
        m.manual_seed(0)
        model = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.BatchNorm1d(4))
        x = m.ones(2, 3, requires_grad=True)
        model(x).sum().backward()
    finally:
        for h in handles:
            h.remove()
    model(m.ones(2, 3))           # removed: nothing more is seen
    return seen


def test_global_hooks_see_what_torchs_see():
    assert _trace(tp, tp_module) == _trace(torch, torch_module)


def test_global_hooks_run_before_the_modules_own_and_can_replace():
    for m, mod in ((tp, tp_module), (torch, torch_module)):
        order = []
        lin = m.nn.Linear(2, 2)
        lin.register_forward_hook(lambda module, args, out: order.append("own"))
        h = mod.register_module_forward_hook(
            lambda module, args, out: (order.append("global"), out * 0)[1])
        try:
            out = lin(m.ones(1, 2))
        finally:
            h.remove()
        assert order == ["global", "own"]
        assert np.asarray(out.detach()).tolist() == [[0.0, 0.0]]


def test_registration_hook_replaces_the_registered_value():
    for m, mod in ((tp, tp_module), (torch, torch_module)):
        made = []

        def replace(module, name, p):
            if name == "bias":
                made.append(m.nn.Parameter(p.detach().clone()))
                return made[-1]
        h = mod.register_module_parameter_registration_hook(replace)
        try:
            lin = m.nn.Linear(2, 3)
        finally:
            h.remove()
        assert lin.bias is made[0] and dict(lin.named_parameters())["bias"] is made[0]


def test_always_call_forward_hook_sees_a_failing_forward():
    class Boom(tp.nn.Module):
        def forward(self, x):
            raise ValueError("boom")
    seen = []
    h = tp_module.register_module_forward_hook(
        lambda module, args, out: seen.append(out), always_call=True)
    try:
        with pytest.raises(ValueError, match="boom"):
            Boom()(tp.ones(1))
    finally:
        h.remove()
    assert seen == [None]
