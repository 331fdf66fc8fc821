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

# The pieces of `call_ignoring`, public for a kernel that writes it out in its own frame
# (reduction.sum): while `current_error_state()` is DEFAULT_ERROR_STATE, set an
# `Ignored`'s state with `set_error_state` and put the old one back with
# `reset_error_state(token)`. With NumPy 1.x every `Ignored.state` is None, so these
# are never reached.
DEFAULT_ERROR_STATE = current_error_state = set_error_state = reset_error_state = None
if _extobj_contextvar is not None:
    # A fresh context holds only the variable's default: NumPy's own settings, whatever
    # state the importing thread happens to be in.
    DEFAULT_ERROR_STATE = contextvars.Context().run(_extobj_contextvar.get)
    current_error_state = _extobj_contextvar.get
    set_error_state = _extobj_contextvar.set
    reset_error_state = _extobj_contextvar.reset


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
    if state is not None and current_error_state() is DEFAULT_ERROR_STATE:
        token = set_error_state(state)
        try:
            return fn(*args)
        finally:
            reset_error_state(token)
    with np.errstate(**errors.settings):
        return fn(*args)
