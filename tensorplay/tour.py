"""The tour: `python -m tensorplay.tour` walks one call through every layer.

    1. a + b with explain(): key set, dispatch, kernel registry, kernel
    2. the same call on tensors that require grad: the autograd hop and the node
    3. backward, and the generated code that ran
"""
from __future__ import annotations

import inspect

import tensorplay as tp


def section(title):
    print()
    print(title)
    print("-" * len(title))


def main():
    section("1. a + b on the CPU: every hop of the call")
    a = tp.tensor([1.0, 2.0, 3.0])
    b = tp.tensor([10.0, 20.0, 30.0])
    with tp.dispatch.explain():
        c = a + b
    print("result:", c)

    section("2. The same op when a requires grad: the AutogradCPU hop records a node")
    a.requires_grad_()
    with tp.dispatch.explain():
        c = a * b
    print("result:", c)
    print("grad_fn:", c.grad_fn.name(), "next_functions:", c.grad_fn.next_functions)

    section("3. backward through the generated node")
    c.sum().backward()
    print("a.grad =", a.grad, "(= b, as d(a*b)/da says)")
    from tensorplay._generated import autograd_nodes
    print("\nThe node that ran, generated from derivatives.yaml:\n")
    print(inspect.getsource(autograd_nodes.MulBackward0))

    section("4. The dispatch table of add.Tensor")
    print(tp.dispatch.op("add.Tensor").dump())

    section("5. Meta tensors: shapes and dtypes, no data")
    m = tp.empty(1024, 4096, device="meta")
    w = tp.empty(4096, 10, device="meta")
    print("(1024x4096 @ 4096x10) on meta ->", (m @ w).shape)


if __name__ == "__main__":
    main()
