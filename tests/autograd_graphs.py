"""Helpers shared by the autograd tests that look at a graph's nodes: the fields a node
class declares, and a do-nothing hook on every node (which sends each node through the
engine's general path)."""

# Fields whose values differ between two nodes by construction.
PER_NODE = {"__weakref__", "_seq", "_output_meta", "_edges"}


def node_slots(cls):
    """Every `__slots__` name of `cls` and its bases."""
    names = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return names


def hook_every_node(loss):
    """A pre-hook that does nothing on every node above the leaves: each then runs
    through `_Task.evaluate`, the general path."""
    stack, seen = [loss.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen or type(fn).__name__ == "AccumulateGrad":
            continue
        seen.add(fn)
        fn.register_prehook(lambda grads: None)
        stack.extend(child for child, _ in fn.next_functions)
