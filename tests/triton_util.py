"""Shared by the test files in tests/triton_backend/: skip without Triton, and compare a
`cuda` result with the CPU backend's."""
import numpy as np
import pytest

triton = pytest.importorskip("triton")

import tensorplay as tp  # noqa: E402

if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
    pytest.skip("no GPU and no Triton interpreter (set TENSORPLAY_TRITON_INTERPRET=1)",
                allow_module_level=True)

CUDA = tp.device("cuda")

TOLERANCES = {   # (rtol, atol) by dtype of the result
    tp.float16: (1e-2, 1e-2), tp.bfloat16: (2e-2, 2e-2),
    tp.float32: (1e-5, 1e-6), tp.float64: (1e-12, 1e-12),
}


def host(t):
    """A tensor's values as float64 (or its own integer/bool dtype) NumPy data."""
    a = np.asarray(t.detach().cpu())
    return a.astype(np.float64) if t.dtype.is_floating_point else a


def assert_same(got, expected, rtol=None, atol=None):
    """`got` (a cuda result) equals `expected` (the CPU backend's) in dtype, shape, values."""
    assert got.device == CUDA, got.device
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert tuple(got.shape) == tuple(expected.shape), (got.shape, expected.shape)
    r, a = TOLERANCES.get(expected.dtype, (0, 0))
    np.testing.assert_allclose(host(got), host(expected), rtol=rtol if rtol is not None else r,
                               atol=atol if atol is not None else a, equal_nan=True)


def make(shape, dtype=tp.float32, low=-2.0, high=2.0, seed=0):
    """A CPU tensor of `shape` with values in [low, high) (integers: a small range)."""
    rng = np.random.default_rng(seed)
    if dtype is tp.bool:
        return tp.from_numpy(rng.random(shape) < 0.5)
    if dtype.is_floating_point:
        return tp.tensor(rng.uniform(low, high, shape).astype(np.float64), dtype=dtype)
    return tp.tensor(rng.integers(int(low) - 3, int(high) + 4, shape), dtype=dtype)
