"""Hostile inputs: sizes too large or negative, indices out of range, malformed YAML.

Each class fails early with a typed error that names the op and the argument, never
with NumPy's MemoryError, a crash of the Triton interpreter or silently wrong values.
PyTorch is the oracle for *whether* a call fails (and for the values where a negative
index wraps); the words are ours.
"""
from __future__ import annotations

import os
import tracemalloc

import numpy as np
import pytest
import torch

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay import _alloc_limit
from tensorplay.codegen import main as cg
from tensorplay.codegen.formula import FormulaError
from tensorplay.codegen.yaml_loader import CodegenError
from tensorplay.errors import (AllocationError, ArgumentError, DimError, ShapeError,
                               TensorPlayError)

DEVICES = ["cpu"]
if tp.cuda.is_available() or tp.cuda.is_interpreted():
    DEVICES.append("cuda")

LIMIT = 2 ** 24   # bytes: low enough that a "huge" request is cheap to build in a test


@pytest.fixture
def small_limit():
    _alloc_limit.set_max_bytes(LIMIT)
    yield LIMIT
    _alloc_limit.set_max_bytes(None)


def _typed(call, kind=TensorPlayError):
    """Run `call`, expect a typed error of `kind` that names its op; return it."""
    with pytest.raises(kind) as info:
        call()
    assert info.value.op, f"{type(info.value).__name__} without an op: {info.value}"
    return info.value


# ---- sizes --------------------------------------------------------------------------
HUGE = 2 ** 23   # elements: 32 MiB of float32, over LIMIT
# (name, call(device, n)) each making a result of at least n elements from small inputs
SIZED = [
    ("empty", lambda d, n: tp.empty(n, device=d)),
    ("zeros", lambda d, n: tp.zeros(2, n, device=d)),
    ("ones", lambda d, n: tp.ones(n, device=d)),
    ("full", lambda d, n: tp.full((n,), 1.5, device=d)),
    ("rand", lambda d, n: tp.rand(n, device=d)),
    ("randn", lambda d, n: tp.randn(n, device=d)),
    ("randint", lambda d, n: tp.randint(0, 9, (n,), device=d)),
    ("randperm", lambda d, n: tp.randperm(n, device=d)),
    ("arange", lambda d, n: tp.arange(n, device=d)),
    ("linspace", lambda d, n: tp.linspace(0, 1, n, device=d)),
    ("logspace", lambda d, n: tp.logspace(0, 1, n, device=d)),
    ("eye", lambda d, n: tp.eye(n, device=d)),
    ("empty_strided", lambda d, n: tp.empty_strided((n,), (1,), device=d)),
    ("new_empty", lambda d, n: tp.ones(2, device=d).new_empty((n,))),
    ("new_zeros", lambda d, n: tp.ones(2, device=d).new_zeros((n,))),
    ("new_ones", lambda d, n: tp.ones(2, device=d).new_ones((n,))),
    ("new_full", lambda d, n: tp.ones(2, device=d).new_full((n,), 2.0)),
    ("expand+contiguous", lambda d, n: tp.ones(3, device=d).expand(n, 3).contiguous()),
    ("repeat", lambda d, n: tp.ones(3, device=d).repeat(n)),
    ("tile", lambda d, n: tp.ones(3, device=d).tile((n, 1))),
    ("pad", lambda d, n: F.pad(tp.ones(1, 1, 3, device=d), (n, 0))),
    ("upsample", lambda d, n: F.interpolate(tp.ones(1, 1, 2, 2, device=d), size=(2, n))),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, call", SIZED, ids=[n for n, _ in SIZED])
def test_a_result_over_the_limit_fails_before_allocating(small_limit, device, name, call):
    call(device, 4)   # the same call with a small size works
    tracemalloc.start()
    try:
        err = _typed(lambda: call(device, HUGE), AllocationError)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(err, MemoryError)
    assert f"expected at most {LIMIT} bytes" in str(err) and f"'{err.arg}'" in str(err)
    assert peak < LIMIT // 4, f"{name} allocated {peak} bytes before refusing"


@pytest.mark.parametrize("name, tp_call, torch_call", [
    ("empty", lambda: tp.empty(2 ** 62, 4), lambda: torch.empty(2 ** 62, 4)),
    ("zeros", lambda: tp.zeros(2 ** 40, 2 ** 40), lambda: torch.zeros(2 ** 40, 2 ** 40)),
    ("ones", lambda: tp.ones(2 ** 31, 2 ** 31), lambda: torch.ones(2 ** 31, 2 ** 31)),
    ("arange", lambda: tp.arange(2 ** 62), lambda: torch.arange(2 ** 62)),
    ("empty_strided", lambda: tp.empty_strided((2 ** 62,), (4,)),
     lambda: torch.empty_strided((2 ** 62,), (4,))),
    ("meta", lambda: tp.empty(2 ** 62, 4, device="meta"),
     lambda: torch.empty(2 ** 62, 4, device="meta")),
])
def test_a_size_that_overflows_int64_fails_as_in_torch(name, tp_call, torch_call):
    with pytest.raises(RuntimeError, match="overflow"):
        torch_call()
    err = _typed(tp_call, AllocationError)
    assert "overflowed" in str(err)


def test_meta_tensors_are_not_held_to_the_memory_limit(small_limit):
    assert tp.empty(2 ** 40, device="meta").shape == (2 ** 40,)   # as torch allows
    assert torch.empty(2 ** 40, device="meta").shape == (2 ** 40,)


def test_the_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("TP_MAX_ALLOC_BYTES", "1000")
    _alloc_limit.set_max_bytes(None)
    try:
        assert _alloc_limit.max_bytes() == 1000
        tp.empty(250)
        _typed(lambda: tp.empty(251), AllocationError)
    finally:
        monkeypatch.delenv("TP_MAX_ALLOC_BYTES")
        _alloc_limit.set_max_bytes(None)
    assert _alloc_limit.max_bytes() > 1000


NEGATIVE = [
    ("empty", lambda m: m.empty(2, -1)),
    ("zeros", lambda m: m.zeros(-3)),
    ("full", lambda m: m.full((-3,), 1.0)),
    ("rand", lambda m: m.rand(-2)),
    ("randn", lambda m: m.randn(2, -2)),
    ("randint", lambda m: m.randint(0, 3, (-1,))),
    ("randperm", lambda m: m.randperm(-1)),
    ("linspace", lambda m: m.linspace(0, 1, -1)),
    ("logspace", lambda m: m.logspace(0, 1, -1)),
    ("eye", lambda m: m.eye(-1)),
    ("eye m", lambda m: m.eye(2, -1)),
    ("empty_strided size", lambda m: m.empty_strided((-2,), (1,))),
    ("empty_strided stride", lambda m: m.empty_strided((2,), (-1,))),
    ("new_zeros", lambda m: m.ones(2).new_zeros((-1,))),
    ("view", lambda m: m.ones(4).view(-2, 2)),
    ("reshape", lambda m: m.ones(4).reshape(-1, -1)),
    ("expand", lambda m: m.ones(3).expand(-2, 3)),
    ("repeat", lambda m: m.ones(3).repeat(-1)),
    ("as_strided size", lambda m: m.ones(4).as_strided((-1,), (1,))),
    ("as_strided stride", lambda m: m.ones(4).as_strided((2,), (-1,))),
    ("as_strided offset", lambda m: m.ones(4).as_strided((2,), (1,), -1)),
    ("as_strided reach", lambda m: m.ones(3).as_strided((10,), (1,))),
    ("as_strided reach by offset", lambda m: m.ones(3).as_strided((2,), (1,), 2)),
    ("as_strided reach by stride", lambda m: m.ones(6).as_strided((2, 2), (4, 2))),
    ("arange inf", lambda m: m.arange(0, float("inf"))),
    ("arange nan", lambda m: m.arange(float("nan"))),
]


@pytest.mark.parametrize("name, call", NEGATIVE, ids=[n for n, _ in NEGATIVE])
def test_negative_sizes_and_reach_past_storage_fail_as_in_torch(name, call):
    with pytest.raises(RuntimeError):
        call(torch)
    _typed(lambda: call(tp), (ShapeError, ArgumentError, DimError))


@pytest.mark.parametrize("name, call", [
    ("empty", lambda m: m.empty(2.5)),
    ("zeros", lambda m: m.zeros(2, 1.0)),
    ("linspace", lambda m: m.linspace(0, 1, 2.5)),
    ("eye", lambda m: m.eye(2.5)),
    ("randperm", lambda m: m.randperm(3.0)),
])
def test_a_float_size_is_refused_not_truncated(name, call):
    with pytest.raises(TypeError):
        call(torch)
    err = _typed(lambda: call(tp), ArgumentError)
    assert "must be an int, but got float" in str(err)


def test_sizes_may_be_given_in_every_integer_form():
    for size in [(2, 3), [2, 3], tp.Size([2, 3]), tp.tensor([2, 3]), np.array([2, 3])]:
        assert tp.zeros(size).shape == (2, 3)
    assert tp.zeros(np.int64(4)).shape == (4,)
    assert tp.zeros(tp.tensor(3)).shape == torch.zeros(torch.tensor(3)).shape


def test_as_strided_within_its_storage_still_works():
    base = np.arange(6.0)
    for size, stride, offset in [((2, 2), (3, 1), 1), ((3,), (2,), 1), ((2 ** 20,), (0,), 5),
                                 ((0, 7), (100, 100), 6)]:
        got = tp.tensor(base).as_strided(size, stride, offset)
        expected = torch.tensor(base).as_strided(size, stride, offset)
        np.testing.assert_array_equal(got[..., :4].numpy(), expected[..., :4].numpy())
        assert tuple(got.shape) == tuple(expected.shape)


# ---- indices ------------------------------------------------------------------------
X = np.arange(12.0).reshape(3, 4)


def _index_calls(m, x, i):
    """(name, call) pairs for module `m` (tp or torch), tensor x of shape (3, 4) and the
    index-tensor maker `i`, each with an index out of range."""
    ones14 = m.ones(1, 4, dtype=x.dtype, device=x.device)
    one11 = m.ones(1, 1, dtype=x.dtype, device=x.device)
    one = m.tensor(1.0, dtype=x.dtype, device=x.device)

    def setitem(key):
        y = x.clone()
        y[key] = 1.0
        return y
    fm = F if m is tp else torch.nn.functional
    return [
        ("getitem int", lambda: x[3]),
        ("getitem negative int", lambda: x[-4]),
        ("getitem second dim", lambda: x[0, 4]),
        ("getitem tensor", lambda: x[i(0, 3)]),
        ("getitem negative tensor", lambda: x[i(-4)]),
        ("getitem list", lambda: x[[0, 5]]),
        ("getitem bool mask shape", lambda: x[m.tensor([True, False], device=x.device)]),
        ("getitem too many", lambda: x[0, 0, 0]),
        ("setitem int", lambda: setitem(3)),
        ("setitem tensor", lambda: setitem(i(5))),
        ("setitem negative tensor", lambda: setitem((i(0), i(-5)))),
        ("index_select", lambda: x.index_select(0, i(3))),
        ("index_select negative", lambda: x.index_select(1, i(-1))),
        ("gather", lambda: x.gather(1, i(4).view(1, 1))),
        ("gather negative", lambda: x.gather(0, i(-1).view(1, 1))),
        ("scatter", lambda: x.scatter(1, i(4).view(1, 1), 1.0)),
        ("scatter_", lambda: x.clone().scatter_(1, i(4).view(1, 1), one11)),
        ("scatter_add", lambda: x.scatter_add(0, i(3).view(1, 1), one11)),
        ("scatter_reduce", lambda: x.scatter_reduce(1, i(-1).view(1, 1), one11, "sum")),
        ("index_add", lambda: x.index_add(0, i(3), ones14)),
        ("index_copy", lambda: x.index_copy(0, i(-1), ones14)),
        ("index_fill", lambda: x.index_fill(0, i(3), 1.0)),
        ("index_put", lambda: x.index_put((i(3),), one)),
        ("index_put accumulate", lambda: x.index_put((i(0), i(4)), one, accumulate=True)),
        ("take", lambda: x.take(i(12))),
        ("take negative", lambda: x.take(i(-13))),
        ("take_along_dim", lambda: m.take_along_dim(x, i(4).view(1, 1), 1)),
        ("embedding", lambda: fm.embedding(i(3), x)),
        ("embedding negative", lambda: fm.embedding(i(-1), x)),
        ("narrow", lambda: x.narrow(0, 2, 2)),
        ("narrow start", lambda: x.narrow(1, 5, 0)),
        ("select", lambda: x.select(1, 4)),
        ("select dim", lambda: x.select(2, 0)),
        ("unbind dim", lambda: x.unbind(-3)),
        ("nll_loss", lambda: fm.nll_loss(x, i(0, 4, 1))),
        ("nll_loss negative", lambda: fm.nll_loss(x, i(0, -2, 1))),
        ("cross_entropy", lambda: fm.cross_entropy(x, i(0, 4, 1))),
        ("one_hot", lambda: fm.one_hot(i(0, 4), 3)),
        ("one_hot negative", lambda: fm.one_hot(i(0, -1), 3)),
        ("multi_margin_loss", lambda: fm.multi_margin_loss(x, i(0, 4, 1))),
        ("max_unpool1d", lambda: fm.max_unpool1d(x.view(1, 3, 4), i(0, 1, 2, 99).view(1, 1, 4)
                                                  .expand(1, 3, 4).contiguous(), 2)),
    ]


def _maker(m, device):
    return lambda *v: m.tensor(list(v), device=device)


_NAMES = [name for name, _ in _index_calls(tp, tp.tensor(X), _maker(tp, "cpu"))]
# torch 2.x's CPU take_along_dim reads past the row for an index of 4 in a dim of size 4
# (it returns x[i + 1, 0]) instead of raising: we raise.
TORCH_READS_GARBAGE = {"take_along_dim"}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("k", range(len(_NAMES)), ids=_NAMES)
def test_an_index_out_of_range_raises_a_typed_error(device, k):
    name, torch_call = _index_calls(torch, torch.tensor(X), _maker(torch, "cpu"))[k]
    if name not in TORCH_READS_GARBAGE:
        with pytest.raises((IndexError, RuntimeError, ValueError)):
            torch_call()
    x = tp.tensor(X, device=device)
    _, call = _index_calls(tp, x, _maker(tp, device))[k]
    err = _typed(call, (DimError, ShapeError, ArgumentError))
    assert isinstance(err, (IndexError, ValueError, TypeError)), type(err)
    np.testing.assert_array_equal(x.cpu().numpy(), X)   # nothing written on the way


@pytest.mark.parametrize("device", DEVICES)
def test_failed_inplace_index_writes_leave_self_unchanged(device):
    i = _maker(tp, device)
    calls = [
        lambda x: x.scatter_(0, i(0, 3).view(1, 2), 1.0),
        lambda x: x.index_add_(1, i(0, 4), tp.ones(3, 2, dtype=tp.float64, device=device)),
        lambda x: x.index_put_((i(1, -4),), tp.tensor(0.0, dtype=tp.float64, device=device)),
        lambda x: x.index_fill_(0, i(2, 3), 0.0),
        lambda x: x.index_copy_(0, i(1, 3), tp.ones(2, 4, dtype=tp.float64, device=device)),
    ]
    for call in calls:
        x = tp.tensor(X, device=device)
        _typed(lambda: call(x), DimError)
        np.testing.assert_array_equal(x.cpu().numpy(), X)


@pytest.mark.parametrize("device", DEVICES)
def test_negative_indices_wrap_where_torch_wraps(device):
    def calls(m, x, i):
        return [
            lambda: x[-1],
            lambda: x[-3, -4],
            lambda: x[i(-1, 0, -3)],
            lambda: x[:, i(-4, -1)],
            lambda: x.take(i(-12, -1)),
            lambda: x.narrow(1, -2, 2),
            lambda: x.select(-1, -2),
            lambda: x.index_put((i(-1), i(-2)), m.tensor(100.0, dtype=x.dtype, device=x.device)),
            lambda: m.take_along_dim(x, i(0, 1).view(1, 2), -1),
        ]
    expected = [c() for c in calls(torch, torch.tensor(X), _maker(torch, "cpu"))]
    got = [c() for c in calls(tp, tp.tensor(X, device=device), _maker(tp, device))]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g.cpu().numpy(), e.numpy())


# ---- malformed ops.yaml / derivatives.yaml --------------------------------------------
GOOD_OP = "- func: relu(Tensor self) -> Tensor\n  dispatch: {CPU: pointwise.relu}\n"
RELU = "- name: relu(Tensor self) -> Tensor\n"


@pytest.mark.parametrize("ops, derivatives, kind, message", [
    (GOOD_OP + "- variants: method\n", "", CodegenError,
     "ops.yaml:3: entry has no 'func' key (the operator's schema)"),
    (GOOD_OP + "- func: foo(Tensor self -> Tensor\n", "", CodegenError,
     "ops.yaml:3: in 'foo(...)': unbalanced brackets: '(' at column 4 is never closed"),
    (GOOD_OP + "- func: foo(Tensor self) => Tensor\n", "", CodegenError,
     "ops.yaml:3: in 'foo(...)': missing ' -> ' and a return type after the argument list"),
    (GOOD_OP + "- func: foo(Tensor self) -> Tensor\n  dispatch: {CUDAA: x}\n", "", CodegenError,
     "ops.yaml:4: unknown dispatch key 'CUDAA' (did you mean 'CUDA'?)"),
    (GOOD_OP + "- func: foo(Tensor self) -> Tensor\n  tags: [pointwize]\n", "", CodegenError,
     "ops.yaml:4: unknown tag 'pointwize' (did you mean 'pointwise'?)"),
    (GOOD_OP + "- func: foo(Tensor self) -> Tensor\n  tags: [fast]\n", "", CodegenError,
     "ops.yaml:4: unknown tag 'fast' (expected one of: pointwise, reduction, view, inplace, "
     "random, non_differentiable)"),
    (GOOD_OP + "- func: relu(Tensor self) -> Tensor\n", "", CodegenError,
     "ops.yaml:3: duplicate operator 'relu' (first at ops.yaml:1)"),
    (GOOD_OP + "- func: foo(Tensor self) -> Tensor\n\tdispatch: {}\n", "", CodegenError,
     "ops.yaml:4: invalid YAML: found character '\\t' that cannot start any token"),
    (GOOD_OP, RELU + "  other: grad\n", CodegenError,
     "derivatives.yaml:2: unknown key 'other': not an argument of 'relu' (expected one of: "
     "self, name, output_differentiability, non_differentiable, saved_if, materialize_grads)"),
    (GOOD_OP, RELU + "  self: grad * (result + 1\n", FormulaError,
     "derivatives.yaml:2:16: unclosed '('"),
    (GOOD_OP, RELU + "  self: grad * result) + 1\n", FormulaError,
     "derivatives.yaml:2:22: unexpected ')' after a complete expression"),
    (GOOD_OP, RELU + "  self: grad $ 2\n", FormulaError,
     "derivatives.yaml:2:14: unknown character '$'"),
    (GOOD_OP, RELU + "  self: \n", CodegenError,
     "derivatives.yaml:2: the formula for 'self' must be a string, got None"),
    (GOOD_OP, RELU + "  self: grad\n" + RELU + "  self: grad\n", CodegenError,
     "derivatives.yaml:3: duplicate derivative for 'relu' (first at derivatives.yaml:1)"),
    (GOOD_OP, "- self: grad\n", CodegenError,
     "derivatives.yaml:1: entry has no 'name' key (the operator's schema)"),
    (GOOD_OP, "- name: relux(Tensor self) -> Tensor\n  self: grad\n", CodegenError,
     "derivatives.yaml:1: derivative for unknown op 'relux'"),
], ids=["missing func", "unbalanced schema", "bad arrow", "unknown dispatch key",
        "misspelt tag", "unknown tag", "duplicate overload", "tab", "formula for unknown arg",
        "unclosed paren", "extra paren", "bad character", "empty formula",
        "duplicate derivative", "missing name", "unknown op"])
def test_malformed_yaml_stops_codegen_at_file_and_line(tmp_path, ops, derivatives, kind,
                                                       message):
    (tmp_path / "ops.yaml").write_text(ops)
    (tmp_path / "derivatives.yaml").write_text(derivatives or "[]\n")
    with pytest.raises(kind) as info:
        cg.load_context(str(tmp_path / "ops.yaml"), str(tmp_path / "derivatives.yaml"),
                        str(tmp_path / "out"))
    assert str(info.value).splitlines()[0] == message
    assert not os.path.exists(tmp_path / "out")   # nothing written from a bad file


def test_out_of_device_memory_is_the_typed_error(monkeypatch):
    """A request under the limit that the device cannot serve (a real GPU's memory is
    smaller than the host's) raises AllocationError, not PyTorch's OutOfMemoryError."""
    if "cuda" not in DEVICES:
        pytest.skip("no cuda device and no Triton interpreter")
    tp.ones(1, device="cuda")   # the device is up before torch.empty is replaced

    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 GiB")
    monkeypatch.setattr(torch, "empty", out_of_memory)
    err = _typed(lambda: tp.empty(2 ** 20, device="cuda"), AllocationError)
    assert "CUDA out of memory" in str(err) and isinstance(err, MemoryError)
