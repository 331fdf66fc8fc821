"""Helpers shared by the autograd tests that look at a graph's nodes: a do-nothing hook
on every node (a hooked pass must compute what an unhooked one does)."""


def hook_every_node(loss):
    """A pre-hook that does nothing on every node above the leaves (each node's hooks
    then run in `_Task.evaluate`)."""
    stack, seen = [loss.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen or type(fn).__name__ == "AccumulateGrad":
            continue
        seen.add(fn)
        fn.register_prehook(lambda grads: None)
        stack.extend(child for child, _ in fn.next_functions)
