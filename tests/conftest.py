"""Test configuration shared by every test file."""
import os

import pytest

# The Triton kernels run in the interpreter on machines without a GPU; the flag must be
# set before triton_kernels is imported, so it is set here, before any test module.
os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_configure(config):
    """A run that leaves the `slow` mark out (the default `-m "not slow"`) runs the
    operator database on cuda with fewer samples an op (tests/opinfo/core.py)."""
    from opinfo import core
    if "not slow" in (config.getoption("markexpr") or ""):
        core.CUDA_SAMPLES["limit"] = 3


@pytest.fixture
def leaves():
    """A float32 leaf x of shape (2, 3) that requires grad and a plain input w of shape
    (3,), in TensorPlay and in PyTorch: (x, xt, w, wt). Used by the autograd tests
    (test_autograd_recording.py, test_autograd_leaf_edges.py)."""
    import numpy as np
    import torch

    import tensorplay as tp
    data = np.linspace(-1.0, 2.0, 6, dtype=np.float32).reshape(2, 3)
    other = np.linspace(0.5, 1.5, 3, dtype=np.float32)
    x, xt = tp.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    w, wt = tp.tensor(other), torch.tensor(other)
    return x, xt, w, wt


@pytest.fixture
def counting():
    """The dispatcher's per-op statistics switched on for one test (kernels run, choices
    rejected, fallbacks), read through the returned tp.dispatch.cache_stats; off and
    reset after. Used by the kernel selection tests (test_kernel_selection.py,
    test_nhwc_kernels.py, test_conv_winograd.py)."""
    import tensorplay as tp
    tp.dispatch.reset_stats()
    tp.dispatch.enable_stats()
    yield tp.dispatch.cache_stats
    tp.dispatch.enable_stats(False)
    tp.dispatch.reset_stats()
