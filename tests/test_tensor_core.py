"""The tensor core against PyTorch: creation, memory sharing with NumPy and DLPack,
conversion to Python, repr, basic indexing, and the typed errors of bad calls.

(The ops themselves are tested by the operator database, tests/test_ops.py.)
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import (
    ArgumentError, DeviceError, DimError, DTypeError, ShapeError, TensorPlayError,
)
from opinfo.core import ALL_DTYPES, TORCH_DTYPE, TP_DTYPE, assert_close, to_torch


def same(t, expected):
    """`t` has PyTorch's shape, dtype and values (expected is a torch tensor)."""
    assert_close(t, expected)


def raises_typed(error_type, op, arg=None):
    """pytest.raises for a TensorPlay error whose message names `op` (and `arg`)."""
    class _Check:
        def __enter__(self):
            self.ctx = pytest.raises(error_type)
            self.info = self.ctx.__enter__()
            return self.info

        def __exit__(self, *exc):
            suppressed = self.ctx.__exit__(*exc)
            e = self.info.value
            assert isinstance(e, TensorPlayError), f"{type(e).__name__}: {e}"
            assert f"{op}(" in str(e), f"the message does not name {op}(): {e}"
            if arg is not None:
                assert f"'{arg}'" in str(e) and e.arg == arg, \
                    f"the error does not name argument '{arg}': {e} (arg={e.arg!r})"
            return suppressed
    return _Check()


# ---- creation from data ---------------------------------------------------------------
DATA = [
    [1.0, 2.0], [1, 2, 3], [True, False], [1, 2.5], [[1, 2], [3, 4]], 3, 2.5, True, [],
    [[1.5], [2.5]], np.float64(2.5), np.int32(7), [np.int32(1), np.int32(2)],
]


@pytest.mark.parametrize("data", DATA, ids=repr)
def test_tensor_infers_dtype_like_torch(data):
    same(tp.tensor(data), torch.tensor(data))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_tensor_with_dtype(dtype):
    same(tp.tensor([[0, 1], [2, 3]], dtype=dtype),
         torch.tensor([[0, 1], [2, 3]], dtype=TORCH_DTYPE[dtype]))


def test_tensor_from_arrays_and_tensors_copies():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = tp.tensor(a)
    assert t.dtype is tp.int32
    a[0, 0] = 100
    assert t[0, 0].item() == 0, "tensor() copies its data"
    u = tp.tensor(t)
    u[0, 0] = 5
    assert t[0, 0].item() == 0
    same(tp.tensor([tp.tensor(1.0), tp.tensor(2.0)]), torch.tensor([1.0, 2.0]))
    assert tp.tensor([1.0], requires_grad=True).requires_grad


def test_tensor_bad_data():
    with raises_typed(ShapeError, "tensor", "data"):
        tp.tensor([[1, 2], [3]])
    with raises_typed(ArgumentError, "tensor", "data"):
        tp.tensor("abc")


def test_default_dtype_follows_set_default_dtype():
    tp.set_default_dtype(tp.float64)
    try:
        assert tp.tensor([1.5]).dtype is tp.float64
        assert tp.zeros(2).dtype is tp.float64
        assert tp.tensor([1]).dtype is tp.int64
    finally:
        tp.set_default_dtype(tp.float32)
    assert tp.tensor([1.5]).dtype is tp.float32


# ---- sharing memory with NumPy --------------------------------------------------------
NUMPY_VIEWS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.T,
    "step slice": lambda a: a[:, ::2],
    "offset slice": lambda a: a[1:, 1:],
    "0-dim view": lambda a: a[1, 2, ...],
}


@pytest.mark.parametrize("layout", list(NUMPY_VIEWS), ids=str)
def test_from_numpy_shares_memory_both_ways(layout):
    a = NUMPY_VIEWS[layout](np.arange(12.0).reshape(3, 4))
    t = tp.from_numpy(a)
    assert t.dtype is tp.float64 and tuple(t.shape) == a.shape
    assert t.stride() == tuple(s // a.itemsize for s in a.strides)
    np.testing.assert_array_equal(t.numpy(), a)
    a[...] = -1.0                                  # NumPy -> TensorPlay
    np.testing.assert_array_equal(np.array(t.tolist()), np.full(a.shape, -1.0))
    t.fill_(7.0)                                   # TensorPlay -> NumPy
    np.testing.assert_array_equal(a, np.full(a.shape, 7.0))


@pytest.mark.parametrize("np_dtype", [np.bool_, np.uint8, np.int8, np.int16, np.int32,
                                      np.int64, np.float16, ml_dtypes.bfloat16, np.float32,
                                      np.float64], ids=lambda d: np.dtype(d).name)
def test_from_numpy_dtypes(np_dtype):
    a = np.ones((2, 2), dtype=np_dtype)
    t = tp.from_numpy(a)
    assert t.dtype.np == np.dtype(np_dtype)
    assert t.data_ptr() == a.__array_interface__["data"][0]


def test_from_numpy_rejects_what_torch_rejects():
    with pytest.raises(ValueError, match="negative"):
        tp.from_numpy(np.arange(4.0)[::-1])
    with pytest.raises(TypeError, match="uint16"):
        tp.from_numpy(np.ones(2, dtype=np.uint16))
    with pytest.raises(TypeError):
        tp.from_numpy([1, 2])


def test_as_tensor_shares_when_it_can():
    a = np.ones((2, 3), dtype=np.float32)
    t = tp.as_tensor(a)
    a[0, 0] = 9.0
    assert t[0, 0].item() == 9.0
    c = tp.as_tensor(a, dtype=tp.float64)          # another dtype: a copy
    a[0, 0] = 1.0
    assert c[0, 0].item() == 9.0 and c.dtype is tp.float64
    x = tp.ones(2)
    assert tp.as_tensor(x) is x
    same(tp.as_tensor([1, 2]), torch.as_tensor([1, 2]))


def test_numpy_shares_memory_and_refuses_grad():
    x = tp.tensor([[1.0, 2.0], [3.0, 4.0]])
    n = x.numpy()
    n[0, 0] = 50.0
    assert x[0, 0].item() == 50.0
    xt = x.t()
    np.testing.assert_array_equal(xt.numpy(), n.T)
    with pytest.raises(RuntimeError, match="requires grad"):
        tp.tensor([1.0], requires_grad=True).numpy()
    assert tp.tensor([1.0], requires_grad=True).detach().numpy().tolist() == [1.0]


def test_array_protocol():
    x = tp.tensor([[1, 2], [3, 4]], dtype=tp.int32)
    a = np.asarray(x)
    assert a.dtype == np.int32 and a.tolist() == [[1, 2], [3, 4]]
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert np.asarray(tp.tensor([1.0], requires_grad=True)).tolist() == [1.0]


# ---- to Python ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_item_and_tolist_like_torch(dtype):
    data = [[0, 1, 2], [3, 1, 0]]
    x, t = tp.tensor(data, dtype=dtype), torch.tensor(data, dtype=TORCH_DTYPE[dtype])
    assert x.tolist() == t.tolist()
    assert type(x[1, 1].item()) is type(t[1, 1].item())
    assert x[1, 1].item() == t[1, 1].item()
    assert x[0].tolist() == t[0].tolist()
    assert tp.tensor(3, dtype=dtype).tolist() == torch.tensor(3, dtype=TORCH_DTYPE[dtype]).tolist()


def test_item_and_tolist_of_a_cpu_tensor_dispatch_no_op():
    """A dense CPU tensor's values are read from its own array (an optimizer reads each
    parameter's step counter by item() every step); a strided view reads as laid out."""
    x = tp.arange(6.0).reshape(2, 3).t()
    element = x[1, 0]
    with tp.profiler.profile() as prof:
        values, first = x.tolist(), element.item()
    assert values == torch.arange(6.0).reshape(2, 3).t().tolist() and first == 1.0
    assert [e.name for e in prof.events] == []


def test_item_needs_one_element():
    with pytest.raises(RuntimeError, match="4 elements"):
        tp.ones(2, 2).item()
    assert tp.ones(1, 1).item() == 1.0
    assert float(tp.tensor([2.5])) == 2.5 and int(tp.tensor(3)) == 3
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(tp.ones(2))


# ---- DLPack ---------------------------------------------------------------------------
# bfloat16 is missing: NumPy (TensorPlay's CPU storage) has no DLPack code for it.
DLPACK_DTYPES = [d for d in ALL_DTYPES if d is not tp.bfloat16]


@pytest.mark.parametrize("dtype", DLPACK_DTYPES, ids=lambda d: d.name)
def test_dlpack_to_torch_shares_memory(dtype):
    x = tp.zeros(2, 3, dtype=dtype)
    t = torch.from_dlpack(x)
    assert t.dtype == TORCH_DTYPE[dtype] and t.shape == (2, 3)
    assert t.data_ptr() == x.data_ptr()
    t[0, 1] = 1
    assert x[0, 1].item() == 1
    xt = x.t()                                  # non-contiguous: strides travel too
    tt = torch.from_dlpack(xt)
    assert tt.stride() == xt.stride() and tt.data_ptr() == xt.data_ptr()


@pytest.mark.parametrize("dtype", DLPACK_DTYPES, ids=lambda d: d.name)
def test_dlpack_from_torch_shares_memory(dtype):
    t = torch.zeros(2, 3, dtype=TORCH_DTYPE[dtype])
    x = tp.from_dlpack(t)
    assert x.dtype is dtype and tuple(x.shape) == (2, 3)
    assert x.data_ptr() == t.data_ptr()
    x[1, 2] = 1
    assert t[1, 2].item() == 1
    tt = t.t()
    xt = tp.from_dlpack(tt)
    assert xt.stride() == tt.stride() and xt.data_ptr() == tt.data_ptr()


def test_dlpack_with_numpy():
    x = tp.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(x)
    a[0, 0] = 42.0
    assert x[0, 0].item() == 42.0
    b = np.arange(4, dtype=np.int16)
    y = tp.from_dlpack(b)
    y[0] = 9
    assert b[0] == 9 and y.dtype is tp.int16
    z = tp.from_dlpack(torch.from_dlpack(x))       # a round trip keeps the memory
    assert z.data_ptr() == x.data_ptr()


# ---- repr -----------------------------------------------------------------------------
REPR_CASES = [
    lambda m: m.tensor([1.0, 2.0]),
    lambda m: m.tensor([1.5, 2.25]),
    lambda m: m.tensor([1, 2, 3]),
    lambda m: m.tensor([True, False]),
    lambda m: m.tensor([1.0, 2.0], dtype=m.float64),
    lambda m: m.tensor([1, 2], dtype=m.int32),
    lambda m: m.tensor([1.0, 2.0], dtype=m.float16),
    lambda m: m.tensor([1.0, 2.0], dtype=m.bfloat16),
    lambda m: m.tensor(3.5),
    lambda m: m.tensor(3),
    lambda m: m.tensor([]),
    lambda m: m.zeros(0, 3),
    lambda m: m.zeros(0, dtype=m.int32),
    lambda m: m.tensor([[1.0, 2.0], [3.0, 4.0]]),
    lambda m: m.tensor([1e10, 1.0]),
    lambda m: m.tensor([1e-5, 1.0]),
    lambda m: m.tensor([float("nan"), float("inf"), -float("inf"), 1.0]),
    lambda m: m.tensor([-0.0, 0.0, 5.0]),
    lambda m: m.tensor([1.0, 2.0], requires_grad=True),
    lambda m: m.tensor([[1, 2], [3, 4]], dtype=m.uint8),
    lambda m: m.arange(2000),
    lambda m: m.arange(2000.0).reshape(40, 50),
    lambda m: m.arange(24).reshape(2, 3, 4),
    lambda m: m.ones(3, 40),
    lambda m: m.arange(1200.0) / 7,
    lambda m: m.tensor([1e20, -1e-20]),
]


@pytest.mark.parametrize("make", REPR_CASES, ids=[f"case{i}" for i in range(len(REPR_CASES))])
def test_repr_like_torch(make):
    assert repr(make(tp)).replace("tensorplay.", "torch.") == repr(make(torch))


@pytest.mark.parametrize("make", [
    lambda lib: lib.empty(2, 3, device="meta"),
    lambda lib: lib.empty((), dtype=lib.int64, device="meta"),
    lambda lib: lib.empty(0, dtype=lib.bool, device="meta"),
    lambda lib: lib.empty(2, device="meta", requires_grad=True),
])
def test_repr_of_meta_tensor(make):
    assert repr(make(tp)).replace("tensorplay.", "torch.") == repr(make(torch))


# ---- creation functions ---------------------------------------------------------------
FACTORIES = [
    ("zeros", (2, 3), {}), ("zeros", ((2, 3),), {"dtype": "int32"}), ("ones", (4,), {}),
    ("ones", ([2, 2],), {"dtype": "bool"}), ("full", ((2, 2), 3), {}), ("full", ((2,), 1.5), {}),
    ("full", ((2,), True), {}), ("full", ((3,), 7), {"dtype": "float16"}),
    ("arange", (5,), {}), ("arange", (1, 4), {}), ("arange", (0, 1, 0.1), {}),
    ("arange", (5, 0, -2), {}), ("arange", (2.5,), {}),
    ("arange", (0, 10, 3), {"dtype": "float64"}),
    ("linspace", (0, 1, 5), {}), ("linspace", (-1, 1, 1), {}),
    ("linspace", (0, 10, 4), {"dtype": "float64"}),
    ("eye", (3,), {}), ("eye", (2, 3), {}), ("eye", (2,), {"dtype": "int64"}),
]


@pytest.mark.parametrize("name, args, kwargs", FACTORIES,
                         ids=[f"{n}{a}{k or ''}" for n, a, k in FACTORIES])
def test_factories_like_torch(name, args, kwargs):
    same(getattr(tp, name)(*args, **{k: getattr(tp, v) for k, v in kwargs.items()}),
         getattr(torch, name)(*args, **{k: getattr(torch, v) for k, v in kwargs.items()}))


@pytest.mark.parametrize("name", ["empty_like", "zeros_like", "ones_like", "rand_like",
                                  "randn_like"])
def test_like_factories(name):
    x = tp.ones(2, 3, dtype=tp.float64)
    y = getattr(tp, name)(x)
    assert tuple(y.shape) == (2, 3) and y.dtype is tp.float64
    z = getattr(tp, name)(x, dtype=tp.float16)
    assert z.dtype is tp.float16
    same(tp.full_like(tp.ones(2, dtype=tp.int8), 7), torch.full((2,), 7, dtype=torch.int8))
    same(tp.zeros_like(x), torch.zeros(2, 3, dtype=torch.float64))


def test_empty_and_empty_strided():
    assert tuple(tp.empty(2, 3).shape) == (2, 3)
    e = tp.empty_strided((2, 3), (1, 2))
    assert e.stride() == (1, 2) and not e.is_contiguous()
    m = tp.empty(4, 5, dtype=tp.int8, device="meta")
    assert m.is_meta and m.dtype is tp.int8 and tuple(m.shape) == (4, 5)


def test_factory_errors():
    with raises_typed(ShapeError, "zeros", "size"):
        tp.zeros(-1)
    with raises_typed(ArgumentError, "arange", "step"):
        tp.arange(0, 5, 0)
    with raises_typed(ArgumentError, "arange", "step"):
        tp.arange(0, 5, -1)
    with raises_typed(DTypeError, "rand", "dtype"):
        tp.rand(2, dtype=tp.int64)
    with raises_typed(ArgumentError, "randint", "high"):
        tp.randint(5, 5, (3,))


# ---- random ---------------------------------------------------------------------------
RANDOM = [
    ("rand", lambda **kw: tp.rand(3, 4, **kw)),
    ("randn", lambda **kw: tp.randn((3, 4), **kw)),
    ("randint", lambda **kw: tp.randint(0, 10, (3, 4), **kw)),
    ("randint_high", lambda **kw: tp.randint(10, (12,), **kw)),
    ("randperm", lambda **kw: tp.randperm(12, **kw)),
]


@pytest.mark.parametrize("name, draw", RANDOM, ids=[n for n, _ in RANDOM])
def test_manual_seed_reproduces(name, draw):
    tp.manual_seed(1234)
    a = draw()
    b = draw()
    tp.manual_seed(1234)
    c = draw()
    assert a.tolist() == c.tolist()
    assert a.tolist() != b.tolist()


@pytest.mark.parametrize("name, draw", RANDOM, ids=[n for n, _ in RANDOM])
def test_generator_is_independent(name, draw):
    g = tp.Generator().manual_seed(7)
    tp.manual_seed(1)
    a = draw(generator=g)
    g.manual_seed(7)
    tp.rand(5)                                    # the default generator moves on...
    b = draw(generator=g)                         # ...g does not
    assert a.tolist() == b.tolist()
    state = g.get_state()
    c = draw(generator=g)
    g.set_state(state)
    assert draw(generator=g).tolist() == c.tolist()


def test_random_values_and_dtypes():
    tp.manual_seed(0)
    r = tp.rand(1000, dtype=tp.float64)
    assert r.dtype is tp.float64 and 0 <= r.min().item() and r.max().item() < 1
    n = tp.randn(4000)
    assert abs(n.mean().item()) < 0.1 and abs(float(((n * n).mean()).item()) - 1) < 0.1
    i = tp.randint(-3, 3, (500,), dtype=tp.int32)
    assert i.dtype is tp.int32 and i.min().item() == -3 and i.max().item() == 2
    p = tp.randperm(10)
    assert sorted(p.tolist()) == list(range(10)) and p.dtype is tp.int64
    assert tp.rand(2, 3, requires_grad=True).requires_grad


# ---- indexing -------------------------------------------------------------------------
INDICES = [
    np.s_[1:, ::2, None, ...], np.s_[0], np.s_[-1, 1], np.s_[..., 0], np.s_[None],
    np.s_[1:3], np.s_[:, None, 2], np.s_[...], np.s_[()], np.s_[0, 0, 0],
    np.s_[:, -2:, 1::2], np.s_[5:], np.s_[..., None], np.s_[None, ..., None, 1],
    np.s_[-3:-1], np.s_[:, :, :10:3], np.s_[np.int64(1)],
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_getitem_like_torch(index):
    x = tp.arange(24).reshape(2, 3, 4)
    t = torch.arange(24).reshape(2, 3, 4)
    out, expected = x[index], t[index]
    same(out, expected)
    assert out.stride() == expected.stride()
    assert out.untyped_storage() is x.untyped_storage()    # basic indexing is a view
    assert out.storage_offset() == expected.storage_offset()


def test_getitem_with_a_tensor_index():
    x = tp.arange(6).reshape(2, 3)
    same(x[tp.tensor(1)], torch.arange(6).reshape(2, 3)[torch.tensor(1)])


def test_getitem_errors():
    x = tp.arange(24).reshape(2, 3, 4)
    with raises_typed(DimError, "__getitem__", "index"):
        x[0, 0, 0, 0]
    with raises_typed(DimError, "__getitem__", "index"):
        x[..., ...]
    with raises_typed(ArgumentError, "__getitem__", "index"):
        x[1.5]
    with pytest.raises(IndexError):
        x[5]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]


def test_setitem_like_torch():
    x, t = tp.zeros(3, 4), torch.zeros(3, 4)
    for index, value in ((1, 5), (np.s_[:, 0], [1.0, 2.0, 3.0]), (np.s_[0, 1:3], 7.0),
                         (np.s_[..., -1], 2.5), (np.s_[2, ::2], [-1.0, -2.0]), ((0, 0), True)):
        if isinstance(value, list):
            x[index], t[index] = tp.tensor(value), torch.tensor(value)
        else:
            x[index], t[index] = value, value
    same(x, t)


def test_setitem_writes_through_views_and_bumps_version():
    x = tp.zeros(3, 4)
    v = x[1:]
    version = x._version
    v[0, 0] = 3.0
    assert x[1, 0].item() == 3.0
    assert x._version > version and v._version == x._version
    y = tp.zeros(3, dtype=tp.int64)
    y[0] = 2.7                                   # truncated, as torch does
    assert y.tolist() == [2, 0, 0]
    with pytest.raises(ShapeError):
        x[0] = tp.ones(3)


# ---- views share memory ---------------------------------------------------------------
def test_views_share_storage_and_version():
    x = tp.arange(12.0).reshape(3, 4)
    for v in (x.view(4, 3), x.t(), x[1], x[:, ::2], x.unsqueeze(0), x.expand(2, 3, 4),
              x.permute(1, 0), x.narrow(1, 1, 2), x.as_strided((2, 2), (1, 4)), x.detach(),
              x.flatten(), x.reshape(6, 2)):
        assert v.untyped_storage() is x.untyped_storage()
        before = x._version
        x.add_(1.0)
        assert v._version == x._version == before + 1
    y = x.t().reshape(12)                          # not viewable: a copy
    assert y.untyped_storage() is not x.untyped_storage()


# ---- bad calls ------------------------------------------------------------------------
def test_wrong_argument_type_names_op_and_argument():
    x = tp.ones(2, 3)
    with raises_typed(ArgumentError, "add"):
        tp.add(x, "a")
    with raises_typed(ArgumentError, "mm", "mat2"):
        x.mm(2)
    with raises_typed(ArgumentError, "exp", "input"):   # PyTorch names it `input`
        tp.exp([1.0])
    with raises_typed(ArgumentError, "view", "size"):
        x.view("a")
    with raises_typed(ArgumentError, "add", "alpha"):
        tp.add(x, x, alpha="a")
    with raises_typed(ArgumentError, "sum"):
        x.sum(dtype="bogus")


def test_wrong_argument_count_still_names_the_op():
    """Front doors are plain Python functions (binding by hand would cost every call
    ~0.5 us), so a wrong argument count is Python's own TypeError, which names the
    op and, for a missing argument, the argument."""
    with pytest.raises(TypeError, match=r"add\(\) missing 1 required positional argument: 'other'"):
        tp.add(tp.ones(2))
    with pytest.raises(TypeError, match=r"add\(\) takes 2 positional arguments but 3"):
        tp.add(tp.ones(2), tp.ones(2), tp.ones(2))
    with pytest.raises(TypeError, match=r"transpose\(\) missing 1 required positional "
                                        r"argument: 'dim1'"):
        tp.ones(2, 2).transpose(0)


def test_shape_errors():
    with raises_typed(ShapeError, "view", "size"):
        tp.arange(6).view(5)
    with raises_typed(ShapeError, "mm", "mat2"):
        tp.mm(tp.ones(2, 3), tp.ones(2, 3))
    with raises_typed(ShapeError, "add", "other"):
        tp.ones(2, 3) + tp.ones(4)
    with raises_typed(DimError, "sum", "dim"):
        tp.ones(2, 3).sum(dim=5)
    with raises_typed(DTypeError, "where", "condition"):
        tp.where(tp.ones(2), tp.ones(2), tp.ones(2))


def test_cuda_is_a_device_error_naming_the_op():
    x = tp.ones(2)
    if tp.cuda.is_available() or tp.cuda.is_interpreted():
        pytest.skip("the cuda device works here (a GPU, or Triton's interpreter)")
    with raises_typed(DeviceError, "to"):
        x.to("cuda")
    with raises_typed(DeviceError, "to"):
        x.cuda()
    with raises_typed(DeviceError, "zeros", "device"):
        tp.zeros(2, device="cuda")
    with raises_typed(DeviceError, "tensor", "device"):
        tp.tensor([1.0], device="cuda")
    with raises_typed(ArgumentError, "to", "device"):
        x.to("tpu")


def test_mixing_devices_is_a_device_error():
    x, m = tp.ones(2), tp.empty(2, device="meta")
    with raises_typed(DeviceError, "add", "other"):
        x + m
    with raises_typed(DeviceError, "mul", "other"):
        m * x
    with raises_typed(DeviceError, "copy_", "src"):
        x.copy_(m)
    assert (m + tp.tensor(1.0)).is_meta        # a 0-dim CPU tensor joins any device
    assert m.copy_(x).is_meta


def test_requires_grad_only_for_floating_tensors():
    with pytest.raises(RuntimeError, match="floating point"):
        tp.tensor([1, 2], requires_grad=True)
    assert not math.isnan(tp.tensor([1.0], requires_grad=True).detach().item())


def test_to_torch_bridge_keeps_strides():
    # The test bridge itself: PyTorch sees the same values and layout.
    x = tp.arange(12.0).reshape(3, 4).t()
    t = to_torch(x)
    assert t.stride() == x.stride() and t.tolist() == x.tolist()
    assert TP_DTYPE[t.dtype] is x.dtype
