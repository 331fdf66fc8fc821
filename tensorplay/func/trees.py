"""Pytrees: nested tuples, lists and dicts of tensors, flattened to a list and rebuilt.

The transforms take and return such nests (`grad(f)((w, b), x)` returns a `(dw, db)`
pair), but they differentiate a flat list of tensors. `flatten` splits a nest into its
leaves and a `TreeSpec` (the shape of the nest); `unflatten` puts leaves back.

    flatten(((w, b), {"x": x}))  ->  [w, b, x],  TreeSpec(tuple, [tuple[*, *], dict{x: *}])

Containers are tuples, lists, dicts (in insertion order, as PyTorch's pytree) and
namedtuples; `None` is a container with no leaves (as in PyTorch); anything else is a leaf.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TreeSpec", "LEAF", "flatten", "unflatten", "tree_map"]


@dataclass(frozen=True)
class TreeSpec:
    """The shape of a nest: its container type, the keys of a dict, and one spec per child.
    A leaf is `TreeSpec(None, None, ())`."""

    kind: type | None
    keys: tuple | None
    children: tuple

    @property
    def num_leaves(self):
        if self.kind is None:
            return 1
        return sum(child.num_leaves for child in self.children)

    def __str__(self):
        if self.kind is None:
            return "*"
        if self.kind is type(None):
            return "None"
        if self.kind is dict:
            inner = ", ".join(f"{k!r}: {c}" for k, c in zip(self.keys, self.children))
            return "{" + inner + "}"
        inner = ", ".join(str(c) for c in self.children)
        if self.kind is list:
            return "[" + inner + "]"
        if self.kind is tuple:
            return "(" + inner + ("," if len(self.children) == 1 else "") + ")"
        return f"{self.kind.__name__}(" + inner + ")"


LEAF = TreeSpec(None, None, ())


def _is_namedtuple(tree):
    return isinstance(tree, tuple) and hasattr(type(tree), "_fields")


def flatten(tree):
    """(leaves, spec): the leaves in depth-first order and the shape to rebuild them."""
    leaves = []
    spec = _flatten_into(tree, leaves)
    return leaves, spec


def _flatten_into(tree, leaves):
    if tree is None:
        return TreeSpec(type(None), None, ())
    if isinstance(tree, dict):
        keys = tuple(tree)
        children = tuple(_flatten_into(tree[k], leaves) for k in keys)
        return TreeSpec(dict, keys, children)
    if isinstance(tree, (tuple, list)):
        kind = type(tree) if _is_namedtuple(tree) else (tuple if isinstance(tree, tuple) else list)
        return TreeSpec(kind, None, tuple(_flatten_into(t, leaves) for t in tree))
    leaves.append(tree)
    return LEAF


def unflatten(leaves, spec):
    """The nest of shape `spec` holding `leaves` (in the order `flatten` gave them)."""
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"unflatten(): spec {spec} has {spec.num_leaves} leaves, "
                         f"got {len(leaves)}")
    it = iter(leaves)
    return _build(spec, it)


def _build(spec, it):
    if spec.kind is None:
        return next(it)
    if spec.kind is type(None):
        return None
    children = [_build(child, it) for child in spec.children]
    if spec.kind is dict:
        return dict(zip(spec.keys, children))
    if spec.kind is tuple or spec.kind is list:
        return spec.kind(children)
    return spec.kind(*children)      # a namedtuple


def tree_map(fn, tree):
    """The same nest with `fn(leaf)` in place of every leaf."""
    leaves, spec = flatten(tree)
    return unflatten([fn(leaf) for leaf in leaves], spec)
