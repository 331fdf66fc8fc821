"""The tour: `python -m tensorplay.tour` (or `tensorplay tour`) follows one call,
`tp.add(a, b)` with `a` and `b` requiring grad, through every layer:

    1. forward, hop by hop: front door, key set, the autograd wrapper, the TLS change,
       the run below autograd to the CPU kernel
    2. backward, node by node: AddBackward0 with its derivatives.yaml formula, the
       formula helpers it calls (sum_to), the gradients it sends along its edges,
       AccumulateGrad into each .grad
    3. the same run in explain()'s compact form: one line per call, `key -> what ran`
    4. the code that ran, step by step in ARCHITECTURE.md's order (its steps 1-13), with
       file:line: the source of the generated front door, autograd wrapper and node and
       of the NumPy kernel; where the dispatcher, the node's constructor, the result,
       the history, the engine, the checks and the formula helpers are
    5. the dispatch table of add.Tensor

Every hop names its code (`file:line function`), so each step can be opened.
"""
from __future__ import annotations

import inspect

import tensorplay as tp
from tensorplay._impl import TensorImpl
from tensorplay.autograd import engine
from tensorplay.dispatch.dispatcher import OperatorHandle, below_autograd
from tensorplay.dispatch.keys import DispatchKey
from tensorplay.dispatch.hops import code_where


def section(title):
    print()
    print(title)
    print("-" * len(title))


def show(records):
    """Each hop as explain() prints it, the code it names under it."""
    for h in records:
        print(h.line)
        if h.where:
            opens = h.kind in ("call", "node", "helper")
            pad = "  " * h.depth + ("    " if opens else "  " + " " * 10)
            print(f"{pad}at {h.where}")


def ran(fn):
    """The Python function behind what the registry or the dispatcher calls."""
    return getattr(fn, "__wrapped__", fn)


def path(handle, kernel_fn):
    """ARCHITECTURE.md's path of `tp.add(a, b)` and its backward: (step, name, the code,
    show its source)."""
    from tensorplay._generated import autograd_nodes, functional
    from tensorplay.autograd import grad_validation, node, recording
    from tensorplay.autograd.formulas import sum_to
    from cpu_kernels import _common
    return [
        (1, "front door", functional.add, True),
        (2, "dispatcher", OperatorHandle.call, False),
        (3, "autograd wrapper", ran(handle.kernels[DispatchKey.AutogradCPU]), True),
        (4, "backward node", node.Node.__init__, False),
        (2, "dispatcher", below_autograd, False),
        (5, "CPU kernel", kernel_fn, True),
        (6, "the result", _common.out, False),
        (7, "its TensorImpl", TensorImpl.__init__, False),
        (8, "history", recording.set_history, False),
        (9, "Tensor.backward", tp.Tensor.backward, False),
        (10, "engine", engine.run_backward, False),
        (11, "backward nodes", autograd_nodes.AddBackward0, True),
        (12, "checks", grad_validation.validate_outputs, False),
        (13, "formula helpers", sum_to, False),
        (4, "AccumulateGrad", node.AccumulateGrad, False),
    ]


def main():
    a = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = tp.tensor([10.0, 20.0, 30.0], requires_grad=True)

    section("1. Forward: c = tp.add(a, b), a and b requiring grad, hop by hop")
    with tp.dispatch.explain(records=True) as forward:
        c = tp.add(a, b)
    show(forward.records)
    print(f"\nc = {c}\nc.grad_fn = {c.grad_fn.name()}, its edges (next_functions) = "
          f"{[(fn.name(), nr) for fn, nr in c.grad_fn.next_functions]}")

    section("2. Backward: c.backward(tp.ones(3)), node by node")
    with tp.dispatch.explain(records=True) as backward:
        c.backward(tp.ones(3))
    show(backward.records)
    print(f"\na.grad = {a.grad}\nb.grad = {b.grad}   (d(a + b)/da = d(a + b)/db = 1)")

    section("3. The same run, compact: one line per call, key -> what ran")
    print(forward.compact())
    print(backward.compact())

    section("4. The code that ran, step by step (ARCHITECTURE.md's path)")
    handle = tp.dispatch.op("add.Tensor")
    kernel = next(h for h in forward.records if h.kind == "kernel").data["kernel"]
    kernel_fn = next(c.fn for c in handle.registries[DispatchKey.CPU].candidates
                     if c.name == kernel)
    for step, name, fn, source in path(handle, kernel_fn):
        print(f"\n{step:<2} {name:<17} {code_where(fn)}")
        if source:
            print()
            print(inspect.getsource(fn).rstrip())

    section("5. The dispatch table of add.Tensor")
    print(handle.dump())


if __name__ == "__main__":
    main()
