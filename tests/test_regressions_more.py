"""More regression tests for silent wrong results and error gaps (issue 12), each checked
against torch."""
import numpy as np
import pytest
import torch

import tensorplay as tp


def _raises_like_torch(fn):
    """Run fn(torch) and fn(tp): both raise (tp a TensorPlay typed error) or both return
    equal results."""
    try:
        want = fn(torch)
    except Exception:          # noqa: BLE001 - torch's errors are untyped RuntimeErrors
        with pytest.raises(tp.errors.TensorPlayError):
            fn(tp)
        return None
    got = fn(tp)
    return got, want


# ---- a view made before an in-place op on its base follows the base's new history ----
def _modify_base(kind, m, base, w):
    if kind == "add_":
        base.add_(w)
    elif kind == "mul_":
        base.add_(1.0)
        base.mul_(w)
    elif kind == "copy_":
        base.copy_(w)
    elif kind == "setitem":
        base[:2] = w[1:] * 2
    elif kind == "iadd":
        base += w
    elif kind == "twice":
        base += w
        base.mul_(m.tensor(2.0))


@pytest.mark.parametrize("kind", ["add_", "mul_", "copy_", "setitem", "iadd", "twice"])
def test_view_made_before_inplace_on_base_gets_the_new_history(kind):
    def run(m):
        base = m.zeros(3)
        view = base[1:]
        w = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        _modify_base(kind, m, base, w)
        flags = (view.requires_grad, view.is_leaf, view.grad_fn is None)
        ((view * 10).sum() + w.sum()).backward()
        return flags, view.tolist(), w.grad.tolist()

    assert run(tp) == run(torch)


def test_view_of_view_and_view_with_history_follow_the_base():
    def run(m):
        w = m.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        base = w * 1
        v = base[1:].view(3, 1)       # has history (view of a tensor that requires grad)
        plain = m.zeros(4)
        pv = plain.view(2, 2)[1]      # no history until plain changes
        base.mul_(w)
        plain.copy_(w * 3)
        ((v * 10).sum() + (pv * 100).sum()).backward()
        return w.grad.tolist()

    assert run(tp) == run(torch)


def test_view_made_in_no_grad_mode_reports_and_refuses_like_torch():
    def nograd_view(m):
        w = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        base = w * 1
        with m.no_grad():
            v = base[1:]
        return base, v

    def use(m):
        base, v = nograd_view(m)
        out = (v * 10).sum()          # requires grad (through the base), no edge to w
        return v.requires_grad, v.is_leaf, out.requires_grad

    assert use(tp) == use(torch)

    def indirect(m):
        base, v = nograd_view(m)
        base.mul_(2)
        return v.grad_fn

    def direct(m):
        base, v = nograd_view(m)
        v.mul_(2)

    for fn in (indirect, direct):
        with pytest.raises(RuntimeError, match="created in no_grad mode"):
            fn(torch)
        with pytest.raises(tp.errors.TensorPlayError, match="created in no_grad mode"):
            fn(tp)


@pytest.mark.parametrize("op", ["split", "split_sizes", "chunk", "unbind", "tensor_split"])
@pytest.mark.parametrize("indirect", [False, True])
def test_inplace_on_outputs_of_multi_output_view_ops(op, indirect):
    pieces = {"split": lambda b: b.split(2), "split_sizes": lambda b: b.split([1, 3]),
              "chunk": lambda b: b.chunk(2), "unbind": lambda b: b.unbind(),
              "tensor_split": lambda b: b.tensor_split(2)}[op]

    def run(m):
        w = m.ones(4, requires_grad=True)
        base = w * 1
        first = pieces(base)[0]
        if indirect:
            base.mul_(2)
            return (first * 3).sum().item()
        first.mul_(2)
        base.sum().backward()
        return w.grad.tolist()

    result = _raises_like_torch(run)
    if result is not None:
        assert result[0] == result[1]
