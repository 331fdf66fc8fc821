"""A GPU training script on a machine whose `cuda` device cannot make tensors (no GPU and
not the Triton interpreter): PyTorch's GradScaler turns itself off with a warning, so
the script still runs, and so does TensorPlay's.

The test suite runs the interpreter (conftest), where `cuda` works; the machine without
it is made by answering `is_usable()` with False, and checked in a fresh process too."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay import _cuda_state

TORCH_WARNING = "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling."


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(_cuda_state, "is_usable", lambda: False)


@pytest.mark.parametrize("make", [lambda: tp.amp.GradScaler("cuda"),
                                  lambda: tp.amp.GradScaler(),
                                  lambda: tp.GradScaler("cuda", enabled=True)])
def test_grad_scaler_for_absent_cuda_disables_itself_with_torchs_warning(no_cuda, make):
    with pytest.warns(UserWarning) as record:
        scaler = make()
    assert [str(w.message) for w in record] == [TORCH_WARNING]
    assert record[0].filename == __file__          # reported at the caller's line
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0
    x = tp.ones(3, requires_grad=True)
    assert scaler.scale(x) is x                     # the loss unchanged, as PyTorch's
    assert scaler.state_dict() == {}


def test_the_old_spelling_warns_that_it_is_deprecated_too(no_cuda):
    with pytest.warns(Warning) as record:
        scaler = tp.cuda.amp.GradScaler(enabled=True)
    got = [(w.category, str(w.message)) for w in record]
    assert got == [(FutureWarning, "`torch.cuda.amp.GradScaler(args...)` is deprecated. "
                                   "Please use `torch.amp.GradScaler('cuda', args...)` "
                                   "instead."),
                   (UserWarning, TORCH_WARNING)]
    assert all(w.filename == __file__ for w in record)
    assert not scaler.is_enabled()


def test_a_training_step_with_the_disabled_scaler_is_a_plain_step(no_cuda):
    """scale -> backward -> step -> update, as a GPU script writes it: the same weights as
    an optimizer step without any scaler."""
    def run(use_scaler):
        tp.manual_seed(0)
        model = tp.nn.Linear(3, 2)
        opt = tp.optim.SGD(model.parameters(), lr=0.1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scaler = tp.amp.GradScaler("cuda", enabled=use_scaler)
        x, y = tp.randn(4, 3), tp.randn(4, 2)
        loss = tp.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return np.asarray(model.weight.detach())
    np.testing.assert_array_equal(run(True), run(False))


def test_cpu_scaler_and_usable_cuda_stay_enabled():
    assert tp.amp.GradScaler("cpu").is_enabled()
    if _cuda_state.is_usable():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert tp.amp.GradScaler("cuda").is_enabled()


def test_in_a_process_without_the_interpreter():
    """No GPU and no interpreter: torch's scaler and ours both disable themselves."""
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: cuda is usable")
    code = ("import warnings; warnings.simplefilter('always'); import tensorplay as tp; "
            "s = tp.amp.GradScaler('cuda'); x = tp.ones(2); "
            "print(s.is_enabled(), s.scale(x) is x)")
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRITON_INTERPRET", "TENSORPLAY_TRITON_INTERPRET")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert out.stdout.split() == ["False", "True"], out.stderr
    assert TORCH_WARNING in out.stderr
