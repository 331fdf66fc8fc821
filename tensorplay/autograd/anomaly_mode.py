"""Anomaly detection: find the forward op whose backward went wrong.

When it is on, every backward node records the Python stack of the forward call that
created it (that costs time: debugging only), and the engine checks what each node
returns. A NaN, or an exception inside a backward formula, is reported together with
that forward stack, so the error points at the line of user code, not at the engine.

Like PyTorch's, the switch is global (not per thread): anomaly detection is a
debugging session setting.
"""
from __future__ import annotations

import functools
import traceback
import warnings

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


class _AnomalyState:
    def __init__(self):
        # Instance attributes, not class ones: every recorded op reads `enabled`, and
        # CPython reads an instance's own value with a specialized instruction, a class
        # attribute through the type each time (dispatch/trace.py's `observers` too).
        self.enabled = False
        self.check_nan = True


anomaly_state = _AnomalyState()


def is_anomaly_enabled():
    return anomaly_state.enabled


def is_anomaly_check_nan_enabled():
    return anomaly_state.check_nan


def forward_stack():
    """The current stack as text, minus the autograd frames that record it."""
    frames = traceback.format_stack()
    return "".join(f for f in frames if "tensorplay/autograd/" not in f
                   and "tensorplay/_generated/" not in f)


def report_forward_stack(node):
    """Print where `node` was created (PyTorch prints this as a warning too)."""
    trace = getattr(node, "_anomaly_trace", None)
    if trace is None:
        return
    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused "
                  f"the error:\n{trace}", stacklevel=2)


class set_detect_anomaly:
    """`set_detect_anomaly(True)` turns detection on now; used with `with`, the previous
    setting comes back at the end of the block."""

    def __init__(self, mode, check_nan=True):
        self.prev = (anomaly_state.enabled, anomaly_state.check_nan)
        anomaly_state.enabled = bool(mode)
        anomaly_state.check_nan = bool(check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        anomaly_state.enabled, anomaly_state.check_nan = self.prev
        return False


class detect_anomaly:
    """Context manager and decorator that turns anomaly detection on."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        self._saved = []

    def __enter__(self):
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the "
                      "runtime and should only be enabled for debugging.", stacklevel=2)
        self._saved.append((anomaly_state.enabled, anomaly_state.check_nan))
        anomaly_state.enabled = True
        anomaly_state.check_nan = self.check_nan
        return self

    def __exit__(self, *exc):
        anomaly_state.enabled, anomaly_state.check_nan = self._saved.pop()
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return func(*args, **kwargs)
        return wrapper
