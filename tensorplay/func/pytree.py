"""Pytrees: nested tuples, lists and dicts of leaves, flattened and rebuilt.

vmap takes and returns pytrees of tensors, and `in_dims` / `out_dims` are pytrees whose
structure is a *prefix* of the arguments' (an int for a whole tuple means: this dim for
every tensor in it). `None` is an empty node, as in torch.utils._pytree: it has no
leaves, so `in_dims` never has to mention it.

    tree_flatten(((a, b), {"k": c}, None)) -> ([a, b, c], spec)
    broadcast_prefix((0, {"k": None}), ((a, b), {"k": c})) -> [0, 0, None]
"""
from __future__ import annotations

LEAF = "leaf"


def _children(node):
    if isinstance(node, (tuple, list)):
        return list(node)
    if isinstance(node, dict):
        return [node[k] for k in node]
    return None


def tree_flatten(tree):
    """(leaves, spec): the leaves in order, and what `tree_unflatten` needs to rebuild."""
    leaves = []
    spec = _flatten(tree, leaves)
    return leaves, spec


def _flatten(node, leaves):
    if node is None:
        return ("none",)
    if isinstance(node, dict):
        return ("dict", tuple(node), tuple(_flatten(node[k], leaves) for k in node))
    if isinstance(node, (tuple, list)):
        kind = node.__class__ if isinstance(node, tuple) and hasattr(node, "_fields") \
            else type(node)
        return ("seq", kind, tuple(_flatten(c, leaves) for c in node))
    leaves.append(node)
    return (LEAF,)


def tree_unflatten(leaves, spec):
    it = iter(leaves)
    return _build(spec, it)


def _build(spec, it):
    kind = spec[0]
    if kind == LEAF:
        return next(it)
    if kind == "none":
        return None
    if kind == "dict":
        return {k: _build(s, it) for k, s in zip(spec[1], spec[2])}
    seq_type, children = spec[1], [_build(s, it) for s in spec[2]]
    if hasattr(seq_type, "_fields"):            # a namedtuple
        return seq_type(*children)
    return seq_type(children)


def broadcast_prefix(prefix, tree):
    """One entry of `prefix` per leaf of `tree` (a leaf of `prefix` covers a whole subtree).
    Raises ValueError naming the mismatch."""
    out = []
    _broadcast(prefix, tree, out, "")
    return out


def _broadcast(prefix, node, out, where):
    children = _children(prefix) if not isinstance(prefix, (int, type(None))) else None
    if children is None:
        out.extend([prefix] * len(tree_flatten(node)[0]))
        return
    if node is None:
        return
    if isinstance(prefix, dict):
        if not isinstance(node, dict) or set(prefix) != set(node):
            raise ValueError(f"at {where or 'the top'}: expected a dict with keys "
                             f"{sorted(map(str, node)) if isinstance(node, dict) else '?'}, "
                             f"got {'a dict with keys ' + str(sorted(map(str, prefix)))}")
        for k in node:
            _broadcast(prefix[k], node[k], out, f"{where}[{k!r}]")
        return
    if not isinstance(node, (tuple, list)) or len(node) != len(prefix):
        what = f"a {type(node).__name__}" + (f" of length {len(node)}"
                                              if isinstance(node, (tuple, list)) else "")
        raise ValueError(f"at {where or 'the top'}: the dims are a {type(prefix).__name__} "
                         f"of length {len(prefix)} but the value is {what}")
    for i, (p, c) in enumerate(zip(prefix, node)):
        _broadcast(p, c, out, f"{where}[{i}]")
