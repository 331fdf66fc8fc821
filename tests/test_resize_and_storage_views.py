"""What the operator database cannot express about resizing and storage views:
resize_ growing the storage (the data moves, the old elements stay), the deprecated
out-of-place resize / resize_as, get_device and const_data_ptr, the empty-list errors of
column_stack and dstack, and as_strided_scatter's gradient on a non-contiguous self
(where PyTorch asserts, checked against the same composition written with PyTorch views)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, ShapeError


# ---- resize_ ------------------------------------------------------------------------------
def test_resize_grows_the_storage_keeping_the_old_elements():
    x = tp.arange(4.0)
    assert x.resize_(2) is x and x.untyped_storage().nbytes == 16   # shrinking keeps it
    x.resize_(2, 3)
    assert tuple(x.shape) == (2, 3) and x.stride() == (3, 1)
    assert x.untyped_storage().nbytes == 24
    np.testing.assert_array_equal(x.reshape(-1)[:4].numpy(), [0, 1, 2, 3])
    assert x._version == 2


def test_resize_of_a_view_counts_from_its_offset():
    base = tp.arange(6.0)
    v = base[4:]
    v.resize_(3)
    assert v.storage_offset() == 4 and v.untyped_storage().nbytes == 7 * 4
    np.testing.assert_array_equal(v[:2].numpy(), [4, 5])


def test_resize_same_sizes_keeps_strides_and_version():
    x = tp.arange(6.0).reshape(2, 3).t()
    x.resize_(3, 2)
    assert x.stride() == (1, 3) and x._version == 0
    x.resize_(3, 2, memory_format=tp.contiguous_format)
    assert x.stride() == (2, 1)


def test_resize_channels_last_and_meta():
    t = torch.ones(1).resize_(2, 3, 4, 5, memory_format=torch.channels_last)
    x = tp.ones(1).resize_(2, 3, 4, 5, memory_format=tp.channels_last)
    assert x.stride() == t.stride()
    m = tp.empty(3, device="meta").resize_(7)
    assert tuple(m.shape) == (7,)


def test_resize_refuses_a_tensor_that_requires_grad():
    x = tp.ones(3, requires_grad=True)
    for call in (lambda: x.resize_(4), lambda: x.resize_as_(tp.ones(4))):
        with pytest.raises(ArgumentError, match="cannot resize a tensor that requires grad"):
            call()
    assert torch.ones(3, requires_grad=True).requires_grad   # (PyTorch raises the same)


def test_resize_as_function():
    x = tp.zeros(3)
    assert tp.resize_as_(x, tp.ones(2, 2)) is x and tuple(x.shape) == (2, 2)


# ---- the deprecated out-of-place forms ------------------------------------------------------
def test_resize_and_resize_as_warn_and_keep_the_gradient():
    x = tp.arange(6.0).requires_grad_()
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.resize(2, 3)
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        z = x.resize_as(tp.ones(3, 2))
    assert tuple(y.shape) == (2, 3) and tuple(z.shape) == (3, 2)
    assert y.data_ptr() == x.data_ptr()   # a view, as PyTorch's
    (y * tp.arange(6.0).reshape(2, 3)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(6.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ShapeError, match=r"resize\(\): requested resize to \[4\]"):
            x.resize(4)
        assert tuple(x.resize((3, 2)).shape) == (3, 2)


# ---- get_device, const_data_ptr -------------------------------------------------------------
def test_get_device_and_const_data_ptr():
    x = tp.ones(3)
    assert tp.get_device(x) == x.get_device() == torch.get_device(torch.ones(3)) == -1
    assert x[1:].const_data_ptr() == x[1:].data_ptr()
    if tp.cuda.is_available() or tp.cuda.is_interpreted():
        assert tp.get_device(tp.ones(2, device="cuda")) == 0


# ---- what the database's samples (a first tensor, then a list) cannot say --------------------
@pytest.mark.xfail(strict=True, reason="an empty Tensor[] has no dispatch key: the front "
                   "door raises NoKernelError before the Composite's check runs (cat, stack, "
                   "hstack alike: keyset_list in the generated front doors)")
@pytest.mark.parametrize("name", ["column_stack", "dstack"])
def test_stacks_refuse_an_empty_list(name):
    with pytest.raises(ArgumentError, match=rf"{name}\(\): expects a non-empty list of tensors "
                                            rf"\(argument 'tensors'\)") as info:
        getattr(tp, name)([])
    assert info.value.op == name and info.value.arg == "tensors"
    with pytest.raises(RuntimeError):
        getattr(torch, name)([])


def test_as_strided_scatter_gradient_of_a_transposed_self():
    rng = np.random.default_rng(0)
    x0, s0, g0 = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal((3, 4))
    x, s = tp.tensor(x0).requires_grad_(), tp.tensor(s0).requires_grad_()
    out = tp.as_strided_scatter(x.t(), s, (3,), (5,), 0)
    (out * tp.tensor(g0)).sum().backward()
    tx, ts = torch.tensor(x0, requires_grad=True), torch.tensor(s0, requires_grad=True)
    ref = tx.t().clone()                    # keeps the transposed strides, as the op does
    ref.as_strided((3,), (5,), 0).copy_(ts)
    (ref * torch.tensor(g0)).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy())


# ---- as_strided_ ----------------------------------------------------------------------------
def test_as_strided__gradient_reads_the_geometry_before_the_call():
    rng = np.random.default_rng(1)
    x0, g0 = rng.standard_normal((3, 4)), rng.standard_normal((2, 2))
    x, tx = tp.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
    y, ty = x * 2, tx * 2
    assert y.as_strided_((2, 2), (1, 4), 5) is y
    ty.as_strided_((2, 2), (1, 4), 5)
    assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__ == "AsStridedBackward1"
    (y * tp.tensor(g0)).sum().backward()
    (ty * torch.tensor(g0)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
