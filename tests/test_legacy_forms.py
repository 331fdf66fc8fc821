"""Forms old tutorials still use, checked against PyTorch: typed tensor classes
(`FloatTensor(2, 3)`, `isinstance(x, LongTensor)`, `x.type('torch.IntTensor')`),
`Variable`, `Tensor(2, 3)`, `x.data`, assigning `.grad`, and formatting a 0-dim tensor."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp

TYPE_NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
              "IntTensor", "ShortTensor", "ByteTensor", "CharTensor", "BoolTensor"]
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "uint8",
          "int8", "bool"]


def _same(ours, theirs):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(np.asarray(ours.float()), theirs.float().numpy())


@pytest.mark.parametrize("name", TYPE_NAMES)
def test_typed_constructors_match_torch(name):
    ours, theirs = getattr(tp, name), getattr(torch, name)
    _same(ours([1, 0, 2]), theirs([1, 0, 2]))
    _same(ours([[1.0], [0.0]]), theirs([[1.0], [0.0]]))
    assert tuple(ours(2, 3).shape) == tuple(theirs(2, 3).shape) == (2, 3)
    assert ours(2, 3).dtype.name == str(theirs(2, 3).dtype).removeprefix("torch.")
    assert tuple(ours(tp.Size([4])).shape) == (4,)
    assert tuple(ours().shape) == tuple(theirs().shape) == (0,)


@pytest.mark.parametrize("name,dtype", zip(TYPE_NAMES, DTYPES))
def test_isinstance_is_true_exactly_for_cpu_tensors_of_that_dtype(name, dtype):
    for other_name, other in zip(TYPE_NAMES, DTYPES):
        ours = tp.zeros(2, dtype=getattr(tp, other))
        theirs = torch.zeros(2, dtype=getattr(torch, other))
        expected = isinstance(theirs, getattr(torch, name))
        assert expected == (other == dtype)
        assert isinstance(ours, getattr(tp, name)) == expected, (name, other_name)
    assert isinstance(tp.zeros(2, dtype=getattr(tp, dtype)), tp.Tensor)


def test_cuda_typed_classes_are_cuda_only():
    x = tp.cuda.FloatTensor([1.0, 2.0])
    assert x.device.type == "cuda" and x.dtype is tp.float32
    assert isinstance(x, tp.cuda.FloatTensor) and not isinstance(x, tp.FloatTensor)
    assert not isinstance(tp.ones(2), tp.cuda.FloatTensor)
    assert x.type() == "tensorplay.cuda.FloatTensor"


def test_typed_constructor_from_a_tensor_aliases_it_and_checks_dtype():
    x = tp.ones(3)
    y = tp.FloatTensor(x)
    y[0] = 5.0
    assert x[0].item() == 5.0
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.ones(2, dtype=torch.int64))
    with pytest.raises(TypeError, match="expected a tensor of dtype float32"):
        tp.FloatTensor(tp.ones(2, dtype=tp.int64))
    with pytest.raises(TypeError):
        tp.FloatTensor([1, 2], [3])


def test_tensor_constructor_sizes_and_data():
    assert tuple(tp.Tensor(2, 3).shape) == tuple(torch.Tensor(2, 3).shape)
    assert tp.Tensor(2, 3).dtype is tp.float32
    _same(tp.Tensor([1, 2]), torch.Tensor([1, 2]))
    _same(tp.Tensor((2, 3)), torch.Tensor((2, 3)))       # a tuple is data, not sizes
    assert tuple(tp.Tensor(tp.Size([2])).shape) == tuple(torch.Tensor(torch.Size([2])).shape)
    assert tuple(tp.Tensor().shape) == tuple(torch.Tensor().shape) == (0,)
    tp.set_default_dtype(tp.float64)
    try:
        assert tp.Tensor(2).dtype is tp.float64
    finally:
        tp.set_default_dtype(tp.float32)


@pytest.mark.parametrize("name,dtype", zip(TYPE_NAMES, DTYPES))
def test_type_names_and_conversions(name, dtype):
    ours = tp.ones(2, dtype=getattr(tp, dtype))
    theirs = torch.ones(2, dtype=getattr(torch, dtype))
    assert ours.type() == theirs.type().replace("torch.", "tensorplay.")
    x, y = tp.tensor([1.5, -2.0]), torch.tensor([1.5, -2.0])
    _same(x.type(getattr(tp, name)), y.type(getattr(torch, name)))
    _same(x.type(f"torch.{name}"), y.type(f"torch.{name}"))
    _same(x.type(f"tensorplay.{name}"), y.type(f"torch.{name}"))
    _same(x.type(getattr(tp, dtype)), y.type(getattr(torch, dtype)))


def test_type_to_cuda_by_name_and_bad_names():
    x = tp.ones(2).type("torch.cuda.DoubleTensor")
    assert x.device.type == "cuda" and x.dtype is tp.float64
    assert x.type("tensorplay.FloatTensor").device.type == "cpu"
    with pytest.raises(ValueError, match="invalid type: 'foo'"):
        tp.ones(2).type("foo")
    with pytest.raises(ValueError):
        torch.ones(2).type("foo")


def test_variable_returns_a_detached_alias_with_requires_grad():
    from tensorplay.autograd import Variable
    from torch.autograd import Variable as TVariable
    for make, V in ((tp.ones, Variable), (torch.ones, TVariable)):
        x = make(2)
        v = V(x)
        assert not v.requires_grad and v.data_ptr() == x.data_ptr()
        w = V(x, requires_grad=True)
        assert w.requires_grad and w.is_leaf and not x.requires_grad
        y = make(2, requires_grad=True) * 2
        z = V(y)
        assert z.grad_fn is None and not z.requires_grad
        assert isinstance(x, V)
    w = Variable(tp.tensor([1.0, 2.0]), requires_grad=True)
    (w * w).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0]


def test_data_shares_memory_but_not_the_version_counter():
    for make in (tp.ones, torch.ones):
        x = make(2, requires_grad=True)
        d = x.data
        assert not d.requires_grad and d.data_ptr() == x.data_ptr()
        d.mul_(2)
        assert x._version == 0 and d._version == 1
        assert x.tolist() == [2.0, 2.0]
        x.data = make(3)
        assert tuple(x.shape) == (3,) and x.requires_grad


def _raises_like_torch(assign_ours, assign_theirs):
    with pytest.raises(Exception) as theirs:
        assign_theirs()
    with pytest.raises(type(theirs.value)) as ours:
        assign_ours()
    return str(ours.value), str(theirs.value)


def test_assigning_grad_is_checked_as_torch_checks_it():
    a, b = tp.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)

    def assigner(t, value):
        def go():
            t.grad = value
        return go

    ours, theirs = _raises_like_torch(assigner(a, 0.0), assigner(b, 0.0))
    assert ours == theirs == ("assigned grad expected to be a Tensor or None but got grad of "
                              "type float")
    ours, theirs = _raises_like_torch(assigner(a, tp.ones(3)), assigner(b, torch.ones(3)))
    assert ours == theirs
    ours, theirs = _raises_like_torch(assigner(a, tp.ones(2, dtype=tp.float64)),
                                      assigner(b, torch.ones(2, dtype=torch.float64)))
    assert ours.startswith("attempting to assign a gradient with dtype 'float64'")
    ours, theirs = _raises_like_torch(assigner(a, a), assigner(b, b))
    assert ours == theirs
    ours, theirs = _raises_like_torch(assigner(a, tp.ones(2, device="meta")),
                                      assigner(b, torch.ones(2, device="meta")))
    assert ours == theirs
    a.grad = tp.full((2,), 3.0)
    assert a.grad.tolist() == [3.0, 3.0]
    a.grad = None
    assert a.grad is None


@pytest.mark.parametrize("spec", ["", ".3f", "8.2e", ">10"])
@pytest.mark.parametrize("value,dtype", [(3.14159, "float32"), (-2.5, "float64"),
                                         (7, "int64"), (True, "bool")])
def test_format_of_a_0_dim_tensor_is_the_number(spec, value, dtype):
    if dtype == "bool" and spec == "8.2e":
        spec = ""
    ours = tp.tensor(value, dtype=getattr(tp, dtype))
    theirs = torch.tensor(value, dtype=getattr(torch, dtype))
    assert format(ours, spec) == format(theirs, spec)
    assert f"{ours}" == f"{theirs}"


def test_format_of_a_vector():
    assert f"{tp.tensor([1.0, 2.0])}" == f"{torch.tensor([1.0, 2.0])}".replace("torch", "tp")
    with pytest.raises(TypeError, match="unsupported format string"):
        format(tp.tensor([1.0, 2.0]), ".3f")
    with pytest.raises(TypeError, match="unsupported format string"):
        format(torch.tensor([1.0, 2.0]), ".3f")
