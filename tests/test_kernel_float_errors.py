"""NumPy's floating-point error state around the CPU kernels (cpu_kernels/_float_errors.py).

`call_ignoring` sets NumPy's error state made once for its default settings, and falls
back to `np.errstate` under any other state (sum, mean, div, pow, the float functions).
The state it sets must be the one np.errstate sets, merged with the caller's state in
force and restored after an error; a NumPy without the error-state context variable
takes np.errstate every time.
"""
import numpy as np
import pytest

import tensorplay as tp
from cpu_kernels import _float_errors
from cpu_kernels._float_errors import Ignored, call_ignoring


def test_call_ignoring_sets_the_state_np_errstate_sets():
    for settings in ({"divide": "ignore", "invalid": "ignore"}, {"over": "ignore"},
                     {"divide": "ignore", "invalid": "ignore", "over": "ignore"}):
        with np.errstate(**settings):
            expected = np.geterr()
        assert call_ignoring(Ignored(**settings), np.geterr) == expected
    assert np.geterr() == {"divide": "warn", "over": "warn", "under": "ignore",
                           "invalid": "warn"}


def test_call_ignoring_merges_with_the_state_in_force():
    # Under the caller's own settings the cheap state would drop them: np.errstate is used.
    divide = Ignored(divide="ignore", invalid="ignore")
    with np.errstate(over="raise"):
        assert call_ignoring(divide, np.geterr)["over"] == "raise"
        with pytest.raises(FloatingPointError):
            tp.tensor([3e38], dtype=tp.float32) / tp.tensor([1e-38], dtype=tp.float32)
        assert (tp.ones(1) / tp.zeros(1)).item() == float("inf")
    with np.errstate(divide="raise"):
        assert (tp.ones(1) / tp.zeros(1)).item() == float("inf")  # div's own settings inside
    with pytest.warns(RuntimeWarning, match="overflow"):
        tp.tensor([3e38], dtype=tp.float32) / tp.tensor([1e-38], dtype=tp.float32)


def test_call_ignoring_restores_the_state_after_an_error():
    before = np.geterr()

    def fails(x):
        raise ValueError(x)

    with pytest.raises(ValueError):
        call_ignoring(Ignored(divide="ignore"), fails, 1)
    assert np.geterr() == before


def test_call_ignoring_without_a_context_variable_uses_np_errstate(monkeypatch):
    errors = Ignored(divide="ignore")
    monkeypatch.setattr(errors, "state", None)      # what a NumPy 1.x gives
    assert call_ignoring(errors, np.geterr)["divide"] == "ignore"
    assert np.geterr()["divide"] == "warn"


def test_the_default_state_is_numpys_own():
    if _float_errors._extobj_contextvar is None:
        pytest.skip("NumPy 1.x: every call takes np.errstate")
    assert _float_errors.current_error_state() is _float_errors.DEFAULT_ERROR_STATE
