"""The switches at the top of a PyTorch script, checked against PyTorch: the default
device, tp.accelerator, __version__, print options, thread count, deterministic mode,
and tp.testing.assert_close (its tolerances and its messages)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tensorplay as tp


# ---- default device -----------------------------------------------------------------------
@pytest.fixture
def default_device_restored():
    yield
    tp.set_default_device(None)


def test_default_device_is_the_cpu_until_set(default_device_restored):
    assert tp.get_default_device() == tp.device("cpu")
    assert str(tp.get_default_device()) == str(torch.get_default_device())


FACTORIES = [
    lambda m: m.zeros(2), lambda m: m.ones(2, 3), lambda m: m.empty(2),
    lambda m: m.full((2,), 1.5), lambda m: m.tensor([1.0, 2.0]), lambda m: m.arange(3),
    lambda m: m.linspace(0, 1, 3), lambda m: m.eye(2), lambda m: m.rand(2),
    lambda m: m.randn(2), lambda m: m.randint(0, 3, (2,)), lambda m: m.Tensor(2, 3),
    lambda m: m.nn.Linear(2, 3).weight,
]


@pytest.mark.parametrize("make", FACTORIES)
def test_factories_allocate_on_the_default_device(make, default_device_restored):
    tp.set_default_device("cuda")
    assert make(tp).device.type == "cuda"
    assert tp.zeros(2, device="cpu").device.type == "cpu"
    tp.set_default_device(None)
    assert make(tp).device.type == "cpu"


def test_default_device_as_torch_reports_it(default_device_restored):
    tp.set_default_device("meta")
    torch.set_default_device("meta")
    try:
        assert str(tp.get_default_device()) == str(torch.get_default_device())
        assert tp.zeros(2).device.type == torch.zeros(2).device.type == "meta"
    finally:
        torch.set_default_device(None)


# ---- accelerator, version --------------------------------------------------------------
def test_accelerator_reflects_the_cuda_backend():
    available = tp.cuda.is_available()
    assert tp.accelerator.is_available() is available
    if available:
        assert tp.accelerator.current_accelerator() == tp.device("cuda")
        assert tp.accelerator.device_count() == tp.cuda.device_count() >= 1
    else:   # no GPU; the interpreter's host-memory cuda device does not count
        assert tp.accelerator.current_accelerator() is None
        assert tp.accelerator.device_count() == 0


def test_version():
    assert isinstance(tp.__version__, str)
    assert tp.__version__.count(".") >= 1
    with pytest.raises(AttributeError):
        tp._not_a_name


# ---- print options -----------------------------------------------------------------------
@pytest.fixture
def printoptions_restored():
    yield
    tp.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


VALUES = [
    np.arange(12, dtype=np.float64).reshape(3, 4) / 7,
    np.linspace(0, 1e5, 30).astype(np.float32),
    np.arange(2000, dtype=np.float32).reshape(40, 50),
    np.arange(20, dtype=np.int64),
    np.array([1e-5, 1.0, -3.5], dtype=np.float32),
    np.array([1.0, 2.0, np.inf, np.nan], dtype=np.float32),
]
OPTIONS = [dict(precision=2), dict(precision=6), dict(threshold=5), dict(edgeitems=1),
           dict(edgeitems=2, threshold=10), dict(linewidth=40), dict(sci_mode=True),
           dict(sci_mode=False), dict(profile="short"), dict(profile="full", linewidth=200),
           dict(threshold=math.inf)]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_repr_follows_printoptions_as_torch(options, printoptions_restored):
    """Same text once the names are swapped. NOTE: a suffix that would pass the line width
    goes on its own line, and `dtype=tensorplay.float64` is longer than
    `dtype=torch.float64`, so where the suffix goes is compared apart from the values."""
    tp.set_printoptions(**options)
    torch.set_printoptions(**options)
    for values in VALUES:
        ours = repr(tp.tensor(values)).replace("tensorplay.", "torch.")
        theirs = repr(torch.tensor(values))
        unwrap = ",\n" + " " * len("tensor(") + "dtype="
        assert ours.replace(unwrap, ", dtype=") == theirs.replace(unwrap, ", dtype="), \
            (options, values.dtype, values.shape)


def test_printoptions_round_trip(printoptions_restored):
    tp.set_printoptions(precision=3, sci_mode=True)
    assert tp.get_printoptions()["precision"] == 3
    assert tp.get_printoptions()["sci_mode"] is True
    tp.set_printoptions(precision=5)            # sci_mode is reset to None, as in torch
    assert tp.get_printoptions()["sci_mode"] is None
    with pytest.raises(ValueError, match="profile"):
        tp.set_printoptions(profile="tiny")


def test_a_long_suffix_goes_on_its_own_line(printoptions_restored):
    text = repr(tp.arange(30, dtype=tp.int32))
    assert text.splitlines()[-1].lstrip() == "dtype=tensorplay.int32)"


# ---- threads, determinism --------------------------------------------------------------
def test_set_num_threads_limits_numpy_blas():
    before = tp.get_num_threads()
    try:
        tp.set_num_threads(1)
        assert tp.get_num_threads() == 1
        a = tp.randn(64, 64)
        np.testing.assert_allclose(np.asarray(a @ a), np.asarray(a) @ np.asarray(a),
                                   rtol=1e-5, atol=1e-4)
    finally:
        tp.set_num_threads(before)
    assert tp.get_num_threads() == before
    for bad in (0, -2, 1.5):
        with pytest.raises(RuntimeError, match="positive integer"):
            tp.set_num_threads(bad)


def test_deterministic_flag_is_recorded_as_torch_records_it():
    assert tp.are_deterministic_algorithms_enabled() is torch.are_deterministic_algorithms_enabled()
    try:
        tp.use_deterministic_algorithms(True, warn_only=True)
        assert tp.are_deterministic_algorithms_enabled()
        assert tp.is_deterministic_algorithms_warn_only_enabled()
        tp.use_deterministic_algorithms(True)
        assert not tp.is_deterministic_algorithms_warn_only_enabled()
    finally:
        tp.use_deterministic_algorithms(False)
    assert not tp.are_deterministic_algorithms_enabled()
    with pytest.raises(TypeError):
        tp.use_deterministic_algorithms(1)


# ---- assert_close ------------------------------------------------------------------------
def _pairs(m):
    """(name, actual, expected, keywords) built with module `m` (torch or tp)."""
    return [
        ("one off", m.tensor([1.0, 2.0, 3.0]), m.tensor([1.0, 2.5, 3.0]), {}),
        ("matrix", m.tensor([[1.0, 2.0], [3.0, 4.0]]), m.tensor([[1.0, 2.0], [3.0, 4.1]]), {}),
        ("ints", m.tensor([1, 2, 3]), m.tensor([1, 4, 3]), {}),
        ("bools", m.tensor([True, False]), m.tensor([True, True]), {}),
        ("0-dim", m.tensor(1.0), m.tensor(1.5), {}),
        ("float64", m.tensor([1.0, 1.0 + 1e-6], dtype=m.float64),
         m.tensor([1.0, 1.0], dtype=m.float64), {}),
        ("float16", m.tensor([1.0, 1.01], dtype=m.float16),
         m.tensor([1.0, 1.0], dtype=m.float16), {}),
        ("within float32 tolerance", m.tensor([1.0, 0.0]), m.tensor([1.0, 1e-9]), {}),
        ("explicit tolerance", m.tensor([1.0, 1.05]), m.tensor([1.0, 1.0]),
         dict(rtol=0.1, atol=0.0)),
        ("exact", m.tensor([1.0, 1.0 + 1e-7]), m.tensor([1.0, 1.0]), dict(rtol=0, atol=0)),
        ("nan", m.tensor([float("nan")]), m.tensor([float("nan")]), {}),
        ("nan equal", m.tensor([float("nan")]), m.tensor([float("nan")]),
         dict(equal_nan=True)),
        ("inf", m.tensor([1.0, float("inf")]), m.tensor([1.0, 2.0]), {}),
        ("shape", m.ones(2), m.ones(3), {}),
        ("dtype", m.ones(2), m.ones(2, dtype=m.float64), {}),
        ("dtype unchecked", m.ones(2), m.ones(2, dtype=m.float64), dict(check_dtype=False)),
        ("floats", 1.0, 1.5, {}),
        ("ints as numbers", 1, 2, {}),
        ("sequence", [m.ones(2)], [m.ones(2) * 2], {}),
        ("nested", ([1.0, 2.0], 3), ([1.0, 2.5], 3), {}),
        ("mapping", {"a": m.ones(2)}, {"a": m.ones(2) * 2}, {}),
        ("lengths", [1, 2], [1, 2, 3], {}),
        ("custom message", m.ones(2), m.ones(2) * 2, dict(msg="custom")),
        ("tensor and list", m.ones(2), [1.0, 1.0], {}),
    ]


@pytest.mark.parametrize("index", range(len(_pairs(torch))),
                         ids=[p[0] for p in _pairs(torch)])
def test_assert_close_matches_torch(index):
    _, t_actual, t_expected, kwargs = _pairs(torch)[index]
    _, actual, expected, _ = _pairs(tp)[index]
    try:
        torch.testing.assert_close(t_actual, t_expected, **kwargs)
    except Exception as theirs:
        with pytest.raises(type(theirs)) as ours:
            tp.testing.assert_close(actual, expected, **kwargs)
        expected_text = (str(theirs).replace("torch.Size", "tensorplay.Size")
                         .replace("torch.", "tensorplay.")
                         .replace("tensorplay.Tensor'", "tensorplay._tensor.Tensor'"))
        assert str(ours.value) == expected_text
    else:
        tp.testing.assert_close(actual, expected, **kwargs)


def test_assert_close_needs_both_tolerances():
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or "
                                         "omitted, but got no atol."):
        tp.testing.assert_close(tp.ones(2), tp.ones(2), rtol=0.1)
    with pytest.raises(AssertionError, match="^Tensor-likes are not close!\n\nMismatched"):
        tp.testing.assert_close(tp.ones(2), tp.zeros(2), msg=lambda m: m)
