"""NumPy's floating-point error handling, switched off cheaply around one NumPy call.

Where PyTorch quietly gives inf or nan (`1 / 0`, `inf + -inf`, `exp(1000)`), NumPy warns,
so kernels call NumPy inside `np.errstate(divide="ignore", ...)`. That costs about 1.5 us
(a Python object built from keywords, a new error state merged with the current one, a
context variable set and reset): more than the arithmetic on a small tensor, and a third
of a 1-element `x.sum()`.

`call_ignoring(errors, fn, *args)` is `with np.errstate(**errors.settings): fn(*args)`
for the common case made cheap: NumPy (2.x) keeps its error state in a context
variable, and while that variable holds NumPy's default state, the state `np.errstate`
would make is always the same one, so `Ignored` makes it once and the call only sets and
resets the variable (0.3 us). Any other state in force (the user's `np.seterr`,
`np.seterrcall`, an enclosing `np.errstate`) takes `np.errstate` itself, which merges the
settings with it as before; so does a NumPy without that variable (1.x).
"""
from __future__ import annotations

import contextvars

import numpy as np

try:    # NumPy >= 2: the error state lives in a context variable of the ufunc module
    from numpy._core.umath import _extobj_contextvar, _make_extobj
except ImportError:     # NumPy 1.x keeps it elsewhere: np.errstate for every call
    _extobj_contextvar = _make_extobj = None

if _extobj_contextvar is not None:
    # A fresh context holds only the variable's default: NumPy's own settings, whatever
    # state the importing thread happens to be in.
    _DEFAULT_STATE = contextvars.Context().run(_extobj_contextvar.get)
    _current_state = _extobj_contextvar.get
    _set_state = _extobj_contextvar.set
    _reset_state = _extobj_contextvar.reset


class Ignored:
    """The keyword arguments of one `np.errstate(...)`, and the state it makes from
    NumPy's default settings (None where that cannot be made ahead)."""

    __slots__ = ("settings", "state")

    def __init__(self, **settings):
        self.settings = settings
        self.state = None
        if _extobj_contextvar is not None:
            self.state = contextvars.Context().run(_make_extobj, **settings)


def call_ignoring(errors, fn, *args):
    """`fn(*args)` under `np.errstate(**errors.settings)`."""
    state = errors.state
    if state is not None and _current_state() is _DEFAULT_STATE:
        token = _set_state(state)
        try:
            return fn(*args)
        finally:
            _reset_state(token)
    with np.errstate(**errors.settings):
        return fn(*args)
