"""The seam through which a running graph capture hears of what the dispatcher does not
see: a tensor's values read into Python, and a random draw by a creation function.

A capture (`tp.compile`, tensorplay/compiler/tracing.py) records the ops that reach its
dispatch mode. Two things escape it: `t.item()`, `bool(t)`, `t.tolist()`, `t.numpy()`
read values into Python, where the function may branch on them (a graph replayed later
would keep this call's branch), and `tp.randn(...)`, which is not dispatched, draws
numbers that a replay would freeze. The Tensor layer tells this module when either
happens; the capture sets `observer` while it runs. Nothing is imported here, so the
lowest layers can call it, and with no capture running a call costs one read.
"""
from __future__ import annotations

observer = None     # while a capture runs: an object with values_read(...) and random_draw(...)


def values_read(tensor, how):
    """`tensor`'s values are being read into Python by `how` ('item()', 'tolist()', ...)."""
    if observer is not None:
        observer.values_read(tensor, how)


def random_draw(op):
    """A creation function (`op`: 'randn', ...) draws from a generator."""
    if observer is not None:
        observer.random_draw(op)
