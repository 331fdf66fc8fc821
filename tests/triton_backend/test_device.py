"""The `cuda` device: memory, transfers, interpreter-mode visibility, device errors,
and the copies/fills every other kernel builds on (triton_kernels/copy.py)."""
import gc

import numpy as np
import pytest

from triton_util import CUDA, assert_same, host, make

import tensorplay as tp
import triton_kernels.pointwise
from tensorplay.errors import DeviceError

ALL = [tp.bool, tp.uint8, tp.int8, tp.int16, tp.int32, tp.int64, tp.float16, tp.bfloat16,
       tp.float32, tp.float64]


def test_interpreter_mode_is_honest_and_visible():
    if tp.cuda.is_interpreted():
        import torch
        assert tp.cuda.is_available() == torch.cuda.is_available()
        x = tp.ones(2, device="cuda")
        assert "triton='interpreter'" in repr(x)
        with tp.dispatch.explain(file=False) as ex:
            x + x
        assert "[interpreter]" in ex.text and "triton    add_kernel_rank1" in ex.text
    else:
        assert tp.cuda.is_available()
        assert "triton='interpreter'" not in repr(tp.ones(2, device="cuda"))


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
def test_round_trip_every_dtype(dtype):
    x = make((3, 5), dtype)
    y = x.to("cuda")
    assert y.device == CUDA and y.is_cuda and y.dtype is dtype
    back = y.cpu()
    assert back.device == tp.device("cpu")
    np.testing.assert_array_equal(host(back), host(x))


def test_transfer_spellings():
    x = make((2, 3))
    a = x.cuda(non_blocking=True)
    b = x.to(CUDA, non_blocking=True)
    c = x.to(tp.device("cuda:0"), tp.float64)
    assert a.device == b.device == c.device == CUDA and c.dtype is tp.float64
    other = tp.zeros(1, dtype=tp.float16, device="cuda")
    d = x.to(other)
    assert d.device == CUDA and d.dtype is tp.float16
    e = d.to(tp.zeros(1))                   # .to(other) back to the host, and to float32
    assert e.device == tp.device("cpu") and e.dtype is tp.float32
    assert a.to("cuda") is a                 # nothing to do: no copy
    assert a.to("cuda", copy=True) is not a


@pytest.mark.parametrize("src", [tp.bool, tp.int8, tp.int64, tp.float16, tp.float64],
                         ids=lambda d: d.name)
def test_conversions_to_and_from_bfloat16(src):
    """bfloat16 converts through float32 (as PyTorch does; the interpreter converts bf16
    correctly only to and from float32)."""
    x = make((3, 5), src, low=-50, high=50)
    assert_same(x.cuda().to(tp.bfloat16), x.to(tp.bfloat16))
    y = x.to(tp.bfloat16)
    assert_same(y.cuda().to(src), y.to(src))
    assert_same(tp.zeros(3, 5, dtype=tp.bfloat16, device="cuda").copy_(x.cuda().t().t()),
                tp.zeros(3, 5, dtype=tp.bfloat16).copy_(x))


def test_conversion_on_device_and_to_host_of_views():
    x = make((4, 6), tp.float32).cuda()
    t = x.t()                                # non-contiguous view
    assert not t.is_contiguous()
    np.testing.assert_array_equal(host(t.cpu()), host(x).T)
    h = t.to(tp.float16)
    assert h.device == CUDA and h.dtype is tp.float16
    np.testing.assert_allclose(host(h), host(x).T, rtol=1e-3)
    b = x.to(tp.bool)
    np.testing.assert_array_equal(host(b), host(x) != 0)
    assert x[1:3, ::2].cpu().tolist() == x.cpu()[1:3, ::2].tolist()


def test_creation_on_device():
    tp.manual_seed(3)
    for t in (tp.zeros(2, 3, device="cuda"), tp.ones(4, dtype=tp.int32, device="cuda"),
              tp.full((2,), 7.5, device="cuda"), tp.arange(5, device="cuda"),
              tp.randn(3, device="cuda"), tp.eye(3, device="cuda"),
              tp.empty(0, 3, device="cuda")):
        assert t.device == CUDA
    assert tp.full((3,), 2.5, dtype=tp.float64, device="cuda").tolist() == [2.5] * 3
    assert tp.zeros(2, 2, device="cuda").sum().item() == 0.0
    assert tp.arange(4, device="cuda").tolist() == [0, 1, 2, 3]


def test_memory_accounting():
    # The collector is off (not run: a full collection of the suite's heap took seconds),
    # so no tensor left in an earlier test's garbage is freed between the two readings,
    # and `del x` must give the bytes back by reference counting alone.
    gc.disable()
    try:
        before = tp.cuda.memory_allocated()
        x = tp.empty(1000, dtype=tp.float64, device="cuda")
        assert tp.cuda.memory_allocated() == before + 8000
        assert tp.cuda.max_memory_allocated() >= before + 8000
        del x
        assert tp.cuda.memory_allocated() == before
    finally:
        gc.enable()


def test_synchronize_seed_and_device_count():
    tp.cuda.synchronize()
    tp.manual_seed(123)          # seeds the cuda generator too
    assert tp.cuda.initial_seed() == 123
    tp.cuda.manual_seed(7)
    assert tp.cuda.initial_seed() == 7
    assert tp.cuda.device_count() >= 1


def test_dlpack_and_torch_interop():
    import torch
    x = make((2, 3)).cuda()
    t = tp.cuda.as_torch(x.t())
    assert tuple(t.shape) == (3, 2) and t.stride() == (1, 3)
    np.testing.assert_array_equal(t.cpu().numpy(), host(x).T)
    y = tp.from_dlpack(x)           # shares memory (host memory under the interpreter)
    assert y.tolist() == x.tolist()
    shared = torch.from_dlpack(x)
    shared.mul_(2)
    np.testing.assert_array_equal(host(x), shared.cpu().numpy())


# ---- devices must agree -------------------------------------------------------------------
def test_mixing_devices_names_the_op_and_the_argument():
    a, b = tp.ones(3), tp.ones(3, device="cuda")
    with pytest.raises(DeviceError, match=r"add\(\): expected all tensors to be on the same "
                                          r"device, but argument 'other' is on cuda:0 and "
                                          r"argument 'self' is on cpu"):
        tp.add(a, b)
    with pytest.raises(DeviceError, match=r"mm\(\): .*argument 'mat2' is on cpu"):
        tp.mm(tp.ones(2, 2, device="cuda"), tp.ones(2, 2))
    with pytest.raises(DeviceError, match=r"where\(\): .*'condition' is on cpu"):
        tp.where(tp.ones(3) > 0, b, b)
    with pytest.raises(DeviceError, match=r"exp\(\): argument 'self' is on cpu"):
        triton_kernels.pointwise.exp(a)          # what a CUDA kernel says if one got it
    with pytest.raises(DeviceError) as info:
        b.add_(a)
    assert info.value.op == "add_" and info.value.arg == "other"


def test_cpu_number_tensors_mix_like_in_pytorch():
    b = tp.tensor([1.0, 2.0], device="cuda")
    out = b * tp.tensor(3.0)                 # a 0-dim CPU tensor is a number
    assert out.device == CUDA and out.tolist() == [3.0, 6.0]


# ---- copies and fills ------------------------------------------------------------------
def test_copy_between_devices_and_dtypes_with_broadcast():
    dst = tp.zeros(3, 4, dtype=tp.float16, device="cuda")
    dst.copy_(make((4,), tp.float64))        # host -> device, broadcast, cast
    assert_same(dst, tp.zeros(3, 4, dtype=tp.float16).copy_(make((4,), tp.float64)))
    host_dst = tp.zeros(3, 4)
    host_dst.copy_(dst)                      # device -> host
    np.testing.assert_allclose(host(host_dst), host(dst))
    view = tp.zeros(4, 3, device="cuda").t()  # write through a transposed view
    view.copy_(tp.arange(12.0, device="cuda").view(3, 4))
    assert view.tolist() == tp.arange(12.0).view(3, 4).tolist()


@pytest.mark.parametrize("dtype", [tp.bool, tp.uint8, tp.int64, tp.bfloat16, tp.float64],
                         ids=lambda d: d.name)
def test_fill_zero_clone_contiguous(dtype):
    x = tp.empty(3, 4, dtype=dtype, device="cuda")
    x.fill_(1)
    assert_same(x, tp.ones(3, 4, dtype=dtype))
    x.zero_()
    assert_same(x, tp.zeros(3, 4, dtype=dtype))
    y = make((3, 4), dtype).cuda()
    t = y.t()
    c = t.contiguous()
    assert c.is_contiguous() and c is not t
    assert_same(c, make((3, 4), dtype).t().contiguous())
    assert_same(t.clone(), make((3, 4), dtype).t().clone())


def test_fill_keeps_float64_precision_and_wraps_integers():
    x = tp.empty(2, dtype=tp.float64, device="cuda").fill_(0.1)
    assert x.tolist() == [0.1, 0.1]
    u = tp.empty(2, dtype=tp.uint8, device="cuda").fill_(-1)
    assert u.tolist() == [255, 255]


def test_empty_tensors():
    e = tp.empty(0, 4, device="cuda")
    assert (e + e).shape == (0, 4)
    assert e.sum().item() == 0.0
    assert e.cpu().shape == (0, 4)
