"""The tour: `python -m tensorplay.tour` (or `tensorplay tour`) follows one call,
`tp.add(a, b)` with `a` and `b` requiring grad, through every layer:

    1. forward, hop by hop: front door, key set, the autograd wrapper, the TLS change,
       the redispatch to the CPU kernel registry, the kernel
    2. backward, node by node: AddBackward0 with its derivatives.yaml formula, the
       gradients it sends along its edges, AccumulateGrad into each .grad
    3. the code that ran, with file:line: the generated front door, the generated
       autograd wrapper, the generated node, the NumPy kernel
    4. the dispatch table of add.Tensor

Every hop names its code (`file:line function`), so each step can be opened.
"""
from __future__ import annotations

import inspect

import tensorplay as tp
from tensorplay.dispatch.keys import DispatchKey
from tensorplay.dispatch.trace import code_where


def section(title):
    print()
    print(title)
    print("-" * len(title))


def show(records):
    """Each hop as explain() prints it, the code it names under it."""
    for h in records:
        print(h.line)
        if h.where:
            pad = "  " * h.depth + ("    " if h.kind in ("call", "node") else "  " + " " * 10)
            print(f"{pad}at {h.where}")


def ran(fn):
    """The Python function behind what the registry or the dispatcher calls."""
    return getattr(fn, "__wrapped__", fn)


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

    section("3. The code that ran")
    handle = tp.dispatch.op("add.Tensor")
    from tensorplay._generated import autograd_nodes, functional
    kernel = next(h for h in forward.records if h.kind == "kernel").data["kernel"]
    kernel_fn = next(c.fn for c in handle.registries[DispatchKey.CPU].candidates
                     if c.name == kernel)
    parts = [
        ("the front door (generated from ops.yaml)", functional.add),
        ("the autograd wrapper at AutogradCPU (generated from derivatives.yaml)",
         ran(handle.kernels[DispatchKey.AutogradCPU])),
        ("the backward node (generated from derivatives.yaml)", autograd_nodes.AddBackward0),
        ("the CPU kernel the registry chose", kernel_fn),
    ]
    for title, fn in parts:
        print(f"\n{title}: {code_where(fn)}\n")
        print(inspect.getsource(fn).rstrip())

    section("4. The dispatch table of add.Tensor")
    print(handle.dump())


if __name__ == "__main__":
    main()
